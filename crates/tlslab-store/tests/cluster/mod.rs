//! A real, throw-away PostgreSQL cluster for tests: `initdb` in a fresh temporary directory,
//! `pg_ctl start` on a free port of 127.0.0.1, a password-protected role `tlslab` owning a
//! database `tlslab`, and everything stopped and removed when the [`Cluster`] is dropped (a
//! panicking test included).
//!
//! It lives in `tests/cluster/` so that Cargo does not build it as a test of its own; the
//! store's integration tests include it with `mod cluster;` and the binary's end-to-end tests
//! through `crates/tlslab/tests/support/mod.rs`. It uses only the standard library and the
//! server's own programs (`initdb`, `pg_ctl`, `psql`), so neither includer needs a dependency
//! for it, and it tests against the server users run rather than a stand-in.
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The role the tests connect as: not a superuser, owner of its database.
const USER: &str = "tlslab";
/// The database created for [`USER`] with every cluster.
const DATABASE: &str = "tlslab";
/// The superuser `initdb` makes; the harness alone uses it, over the unix socket.
const SUPERUSER: &str = "postgres";
/// The server listens on this address only.
const HOST: &str = "127.0.0.1";
/// Directories this harness makes start with this, followed by the test process's id.
const DIRECTORY_PREFIX: &str = "tlslab-postgres-";
/// How many times startup picks another port when the free one it chose was taken meanwhile
/// (another test may bind it between our probe and the server's bind).
const PORT_ATTEMPTS: usize = 5;

/// A running PostgreSQL cluster of its own, in a temporary directory, for one test.
///
/// ```ignore
/// let Some(cluster) = Cluster::start() else { return };
/// let client = postgres::Client::connect(&cluster.url(), postgres::NoTls)?;
/// ```
pub struct Cluster {
    /// The temporary directory: the data directory, the server's log, its unix socket and
    /// (with TLS) its certificate and key.
    directory: PathBuf,
    programs: Programs,
    /// The unprivileged user the server runs as when the tests run as root.
    server_user: Option<ServerUser>,
    port: u16,
    password: String,
}

impl Cluster {
    /// Starts a cluster that takes the `tlslab` role with its password (scram-sha-256) over
    /// TCP on 127.0.0.1 and over its unix socket; without TLS, as it has no certificate
    /// ([`Cluster::start_with_tls`] has one).
    ///
    /// Returns `None`, printing `skipped: <why>` to stderr, only when PostgreSQL's server
    /// programs are not installed (and `TLSLAB_REQUIRE_POSTGRESQL` is unset, as it is
    /// outside CI). Any other failure to start panics with the server's log.
    pub fn start() -> Option<Cluster> {
        Cluster::start_configured(None)
    }

    /// Starts a cluster that serves `certificate_pem_path` (the server's certificate, chain
    /// included if the file has one) and `key_pem_path` over TLS, and accepts TCP
    /// connections only over TLS (`hostssl` in pg_hba.conf: a plain connection finds no
    /// entry and is refused). Both files are copied into the cluster's directory, the key
    /// with mode 0600 and owned by the server's user, as PostgreSQL requires.
    ///
    /// Returns `None` as [`Cluster::start`] does.
    pub fn start_with_tls(
        certificate_pem_path: impl AsRef<Path>,
        key_pem_path: impl AsRef<Path>,
    ) -> Option<Cluster> {
        Cluster::start_configured(Some(Tls {
            certificate: certificate_pem_path.as_ref().to_owned(),
            key: key_pem_path.as_ref().to_owned(),
        }))
    }

    fn start_configured(tls: Option<Tls>) -> Option<Cluster> {
        let programs = match Programs::find() {
            Ok(programs) => programs,
            Err(why) => {
                // CI installs PostgreSQL and sets this, so that its tests cannot skip there.
                assert!(
                    std::env::var_os("TLSLAB_REQUIRE_POSTGRESQL").is_none(),
                    "TLSLAB_REQUIRE_POSTGRESQL is set but {why}"
                );
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let server_user = ServerUser::for_this_process();
        remove_abandoned_clusters(&programs, server_user.as_ref());
        let directory = make_directory();
        // From here on, a panic drops the cluster, which stops whatever started and removes
        // the directory.
        let mut cluster = Cluster {
            directory,
            programs,
            server_user,
            port: 0,
            password: random_hex(),
        };
        cluster.give_to_server_user(&cluster.directory);
        cluster.initialize(tls.as_ref());
        cluster.start_on_free_port();
        cluster.create_role_and_database();
        Some(cluster)
    }

    /// `postgres://tlslab:PASSWORD@127.0.0.1:PORT/tlslab`: the whole connection, password
    /// included.
    pub fn url(&self) -> String {
        self.url_of(DATABASE)
    }

    /// `postgres://tlslab@127.0.0.1:PORT/tlslab`: for tests that give the password another
    /// way (`PGPASSWORD`, a pgpass file) or check that one is required.
    pub fn url_without_password(&self) -> String {
        format!("postgres://{USER}@{HOST}:{}/{DATABASE}", self.port)
    }

    /// `postgres://tlslab:PASSWORD@/tlslab?host=SOCKET_DIRECTORY&port=PORT`: the same
    /// database over the server's unix socket, which a process in another network namespace
    /// (a capture agent on its own veth) reaches where it cannot reach this 127.0.0.1.
    pub fn socket_url(&self) -> String {
        format!(
            "postgres://{USER}:{}@/{DATABASE}?host={}&port={}",
            self.password,
            percent_encoded(&self.directory),
            self.port
        )
    }

    /// The `tlslab` role's password (random for each cluster; hexadecimal, so it needs no
    /// escaping in a URL or a pgpass line).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The role the URLs connect as: `tlslab`.
    pub fn user(&self) -> &'static str {
        USER
    }

    /// The TCP port the server listens on (kept across [`Cluster::start_again`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address the server listens on: `127.0.0.1`.
    pub fn host(&self) -> &'static str {
        HOST
    }

    /// The directory holding the server's unix socket (`.s.PGSQL.PORT`), for tests of
    /// `host=/path` connections; the `tlslab` role needs its password there too. It is also
    /// the cluster's whole temporary directory, gone once the cluster is dropped.
    pub fn socket_directory(&self) -> &Path {
        &self.directory
    }

    /// The server's log so far (empty if it has written none).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Creates a fresh database `name` owned by `tlslab`, for a test that wants one of its
    /// own, and returns its URL (password included). `name` must be a plain lower-case SQL
    /// identifier (letters, digits, `_`), which needs no quoting.
    pub fn create_database(&self, name: &str) -> String {
        let plain = !name.is_empty()
            && name.len() <= 63
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        assert!(
            plain,
            "create_database({name:?}): a name of lower-case letters, digits and _"
        );
        self.run_sql(&format!("CREATE DATABASE {name} OWNER {USER};"));
        self.url_of(name)
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`): clients lose
    /// their connections mid-statement and the next start recovers from the WAL.
    pub fn stop_immediately(&self) {
        let output = self.run_as_server(self.pg_ctl(&["stop", "-m", "immediate"]));
        self.expect_success("pg_ctl stop -m immediate", &output);
    }

    /// Starts the server again on the same port and data after [`Cluster::stop_immediately`].
    pub fn start_again(&self) {
        let output = self.start_server();
        self.expect_success("pg_ctl start (again)", &output);
    }

    fn url_of(&self, database: &str) -> String {
        format!(
            "postgres://{USER}:{}@{HOST}:{}/{database}",
            self.password, self.port
        )
    }

    fn data_directory(&self) -> PathBuf {
        self.directory.join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.directory.join("server.log")
    }

    /// `initdb`, then this harness's settings and pg_hba.conf, and the TLS files if any.
    fn initialize(&self, tls: Option<&Tls>) {
        let mut initdb = Command::new(&self.programs.initdb);
        initdb
            .arg("--pgdata")
            .arg(self.data_directory())
            .args(["--username", SUPERUSER])
            // Only the superuser, only over the socket in our mode-0700 directory, without a
            // password; pg_hba.conf below sets everything else.
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            // The C locale exists everywhere (a container may have no other), and UTF-8 is
            // what the store writes.
            .args(["--locale=C", "--encoding=UTF8", "--no-instructions"])
            // initdb's own flush of the files it wrote, which only a crash of the whole
            // machine would need and which takes seconds on a busy disk; the server's fsync
            // stays on.
            .arg("--no-sync");
        let output = self.run_as_server(initdb);
        self.expect_success("initdb", &output);

        let data = self.data_directory();
        let mut hba = format!(
            "# Written by the tlslab test harness (crates/tlslab-store/tests/cluster).\n\
             local all {SUPERUSER} trust\n\
             local all all scram-sha-256\n"
        );
        let mut settings = format!(
            "# Written by the tlslab test harness (crates/tlslab-store/tests/cluster).\n\
             listen_addresses = '{HOST}'\n\
             unix_socket_directories = '{}'\n\
             # Light: a few dozen clients, small shared buffers. fsync and\n\
             # synchronous_commit stay at their defaults (the benchmarks measure with them).\n\
             max_connections = 64\n\
             shared_buffers = 16MB\n\
             password_encryption = 'scram-sha-256'\n",
            quoted(&self.directory)
        );
        match tls {
            None => hba.push_str(&format!("host all all {HOST}/32 scram-sha-256\n")),
            Some(tls) => {
                // hostssl only: a plain TCP connection matches no line and is refused.
                hba.push_str(&format!("hostssl all all {HOST}/32 scram-sha-256\n"));
                let certificate = self.directory.join("server.crt");
                let key = self.directory.join("server.key");
                copy(&tls.certificate, &certificate, 0o644);
                copy(&tls.key, &key, 0o600);
                self.give_to_server_user(&certificate);
                self.give_to_server_user(&key);
                settings.push_str(&format!(
                    "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
                    quoted(&certificate),
                    quoted(&key)
                ));
            }
        }
        self.write_server_file(&data.join("pg_hba.conf"), &hba);
        self.write_server_file(&data.join("tlslab.conf"), &settings);
        let mut main = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .expect("initdb wrote postgresql.conf");
        // port.conf is written as the server starts (a new port if the first was taken).
        writeln!(main, "include 'tlslab.conf'\ninclude 'port.conf'").unwrap();
    }

    /// Picks a free port and starts the server on it, picking another when the server
    /// could not bind the one chosen (taken between the probe and the server's bind).
    fn start_on_free_port(&mut self) {
        for attempt in 1..=PORT_ATTEMPTS {
            self.port = free_port();
            self.write_server_file(
                &self.data_directory().join("port.conf"),
                &format!("port = {}\n", self.port),
            );
            let logged = self.log().len();
            let output = self.start_server();
            if output.status.success() {
                return;
            }
            let taken = self
                .log()
                .get(logged..)
                .is_some_and(|attempt| attempt.contains("could not bind"));
            if !taken || attempt == PORT_ATTEMPTS {
                self.expect_success("pg_ctl start", &output);
            }
        }
    }

    fn start_server(&self) -> Output {
        let mut command = self.pg_ctl(&["start", "--wait", "--timeout=60", "--silent"]);
        command.arg("--log").arg(self.log_path());
        self.run_as_server(command)
    }

    fn create_role_and_database(&self) {
        // The password goes to psql's standard input, not its command line, which other
        // users of the machine can read.
        self.run_sql(&format!(
            "CREATE ROLE {USER} LOGIN PASSWORD '{}';\nCREATE DATABASE {DATABASE} OWNER {USER};\n",
            self.password
        ));
    }

    /// Runs `sql` as the superuser over the unix socket, one statement per transaction
    /// (CREATE DATABASE refuses to run inside one).
    fn run_sql(&self, sql: &str) {
        let mut psql = Command::new(&self.programs.psql);
        psql.args(["--no-psqlrc", "--quiet", "--set", "ON_ERROR_STOP=1"])
            .arg("--host")
            .arg(&self.directory)
            .args(["--port", &self.port.to_string()])
            .args([
                "--username",
                SUPERUSER,
                "--dbname",
                "postgres",
                "--file",
                "-",
            ]);
        let mut command = self.as_server_user(psql);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("psql starts");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(sql.as_bytes())
            .expect("psql reads its statements");
        let output = child.wait_with_output().unwrap();
        // The statement may hold the password: name the step, not the SQL.
        self.expect_success("psql (creating a role or database)", &output);
    }

    fn pg_ctl(&self, arguments: &[&str]) -> Command {
        let mut command = Command::new(&self.programs.pg_ctl);
        command
            .args(arguments)
            .arg("--pgdata")
            .arg(self.data_directory());
        command
    }

    /// `command` as the server's user, in the cluster's directory (the test's own may be
    /// closed to that user), without the test's PG* variables (they would redirect psql).
    fn as_server_user(&self, command: Command) -> Command {
        let mut wrapped = match &self.server_user {
            None => command,
            Some(user) => user.wrap(&command),
        };
        wrapped.current_dir(&self.directory).env("LC_ALL", "C");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("PG") {
                wrapped.env_remove(name);
            }
        }
        wrapped
    }

    fn run_as_server(&self, command: Command) -> Output {
        let mut command = self.as_server_user(command);
        let program = format!("{:?}", command.get_program());
        command
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("{program} could not run: {error}"))
    }

    /// Panics with what `step` printed and the server log's last lines unless it succeeded.
    fn expect_success(&self, step: &str, output: &Output) {
        if output.status.success() {
            return;
        }
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        panic!(
            "PostgreSQL test cluster in {}: {step} failed ({})\nstdout:\n{}\nstderr:\n{}\n\
             server log (last lines):\n{tail}",
            self.directory.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
    }

    /// Writes a file into the data directory that the server's user owns.
    fn write_server_file(&self, path: &Path, contents: &str) {
        std::fs::write(path, contents)
            .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
        self.give_to_server_user(path);
    }

    fn give_to_server_user(&self, path: &Path) {
        if let Some(user) = &self.server_user {
            std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid)).unwrap_or_else(
                |error| panic!("chown {} to {}: {error}", path.display(), user.name),
            );
        }
    }
}

impl Drop for Cluster {
    /// Stops the server at once (if it runs) and removes the directory; errors are ignored,
    /// as a panic here would abort a test that is already failing.
    fn drop(&mut self) {
        if self.data_directory().join("postmaster.pid").exists() {
            let _ = self.run_as_server(self.pg_ctl(&["stop", "-m", "immediate"]));
        }
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

/// The server's certificate and key, as the test gave them.
struct Tls {
    certificate: PathBuf,
    key: PathBuf,
}

/// The server's programs, all from one installation.
struct Programs {
    initdb: PathBuf,
    pg_ctl: PathBuf,
    psql: PathBuf,
}

impl Programs {
    /// Looks for `initdb` and `pg_ctl` on PATH, then in Debian's `/usr/lib/postgresql/*/bin`
    /// (newest version first; Debian puts neither on PATH). A link on PATH is followed to
    /// its real directory (this machine's `/usr/local/bin/initdb` links to Debian's
    /// `/usr/lib/postgresql/15/bin/initdb`), and all three programs are taken from that one
    /// directory, so that `initdb`, `pg_ctl` and the `postgres` they run are one version.
    fn find() -> Result<Programs, String> {
        let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect())
            .unwrap_or_default();
        let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let version = entry.file_name().to_str()?.parse().ok()?;
                Some((version, entry.path().join("bin")))
            })
            .collect();
        debian.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
        candidates.extend(debian.into_iter().map(|(_, bin)| bin));
        for directory in candidates {
            let Ok(initdb) = directory.join("initdb").canonicalize() else {
                continue;
            };
            let bin = initdb.parent().unwrap();
            let pg_ctl = bin.join("pg_ctl");
            if !is_executable(&pg_ctl) || !is_executable(&bin.join("postgres")) {
                continue;
            }
            // psql comes with the client package, which Debian's server package depends on.
            let psql = [bin.join("psql"), directory.join("psql")]
                .into_iter()
                .find(|psql| is_executable(psql))
                .ok_or_else(|| format!("no psql beside {}", initdb.display()))?;
            return Ok(Programs {
                initdb,
                pg_ctl,
                psql,
            });
        }
        Err(
            "PostgreSQL's server programs (initdb, pg_ctl, postgres) are not installed: \
             not on PATH nor in /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)"
                .into(),
        )
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.mode() & 0o111 != 0)
}

/// The user the server runs as when the tests run as root: PostgreSQL refuses to run as
/// root, so `initdb`, `pg_ctl` (and the server it starts) and `psql` run as `postgres`.
struct ServerUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl ServerUser {
    /// `None` unless this process is root (the server then runs as the test's own user).
    fn for_this_process() -> Option<ServerUser> {
        // /proc/self belongs to the process's effective user.
        let root = std::fs::metadata("/proc/self")
            .map(|metadata| metadata.uid() == 0)
            .unwrap_or_else(|_| id(&["-u"]).as_deref() == Some("0"));
        if !root {
            return None;
        }
        let name = SUPERUSER.to_string();
        let (Some(uid), Some(gid)) = (id(&["-u", &name]), id(&["-g", &name])) else {
            panic!(
                "the tests run as root, which PostgreSQL refuses, and there is no `{name}` user \
                 to run it as (Debian's postgresql package makes one; or run the tests as \
                 another user)"
            );
        };
        Some(ServerUser {
            name,
            uid: uid.parse().unwrap(),
            gid: gid.parse().unwrap(),
        })
    }

    /// `command` run as this user: with `setpriv` (no PAM session, so nothing to configure),
    /// else `runuser`, both from util-linux.
    fn wrap(&self, command: &Command) -> Command {
        let mut wrapped = if Path::new("/usr/bin/setpriv").exists() {
            let mut setpriv = Command::new("/usr/bin/setpriv");
            setpriv
                .arg(format!("--reuid={}", self.uid))
                .arg(format!("--regid={}", self.gid))
                .arg("--init-groups")
                .arg("--");
            setpriv
        } else {
            let mut runuser = Command::new("runuser");
            runuser.args(["-u", &self.name, "--"]);
            runuser
        };
        wrapped.arg(command.get_program()).args(command.get_args());
        for (name, value) in command.get_envs() {
            match value {
                Some(value) => wrapped.env(name, value),
                None => wrapped.env_remove(name),
            };
        }
        wrapped
    }
}

/// `id ARGUMENTS`' answer, if it gave one.
fn id(arguments: &[&str]) -> Option<String> {
    let output = Command::new("id").args(arguments).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A new directory `tlslab-postgres-PID-N` in the system's temporary directory (short, as
/// the server's socket path must stay under 108 bytes, and open to the server's user, which
/// a checkout under /root is not), mode 0700.
fn make_directory() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let base = std::env::temp_dir();
    loop {
        let directory = base.join(format!(
            "{DIRECTORY_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::create_dir(&directory) {
            Ok(()) => {
                std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o700))
                    .unwrap();
                return directory;
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => panic!("creating {}: {error}", directory.display()),
        }
    }
}

/// Stops and removes the clusters of test processes that ended without dropping them (killed,
/// or interrupted with Ctrl-C: `pg_ctl` starts the server in a session of its own, so it
/// outlives them). A directory's process id tells whether its test still runs.
fn remove_abandoned_clusters(programs: &Programs, server_user: Option<&ServerUser>) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIRECTORY_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest
            .split('-')
            .next()
            .filter(|pid| pid.parse::<u32>().is_ok())
        else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let data = entry.path().join("data");
        if data.join("postmaster.pid").exists() {
            let mut stop = Command::new(&programs.pg_ctl);
            stop.args(["stop", "-m", "immediate", "--silent", "--pgdata"])
                .arg(&data);
            let mut stop = match server_user {
                None => stop,
                Some(user) => user.wrap(&stop),
            };
            let _ = stop
                .current_dir("/")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

/// A port on 127.0.0.1 that was free a moment ago (the kernel picks it).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// 32 random hexadecimal digits, from the standard library's randomly keyed hasher (a test
/// password needs no more).
fn random_hex() -> String {
    (0..2)
        .map(|_| format!("{:016x}", RandomState::new().build_hasher().finish()))
        .collect()
}

/// `path` as a URL's query value: bytes other than letters, digits, `/`, `-`, `.`, `_` and
/// `~` percent-encoded (a temporary directory rarely has any).
fn percent_encoded(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str()
        .as_bytes()
        .iter()
        .map(|&byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// `path` inside single quotes for postgresql.conf.
fn quoted(path: &Path) -> String {
    path.display().to_string().replace('\'', "''")
}

/// Copies a file the test gave into the cluster's directory with `mode`.
fn copy(from: &Path, to: &Path, mode: u32) {
    std::fs::copy(from, to)
        .unwrap_or_else(|error| panic!("copying {} to {}: {error}", from.display(), to.display()));
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode)).unwrap();
}
