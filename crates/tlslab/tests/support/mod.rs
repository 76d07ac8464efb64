//! What the end-to-end tests share: running the real binary (`tlslab`, [`Run`]), reading the
//! real store ([`count`], [`values_of`], [`phase_ms`], ...), and the one [`median`] they all
//! read.
//!
//! It lives in `tests/support/` so that Cargo does not also build it as a test of its own.
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rusqlite::types::FromSql;
use rusqlite::{Params, Row};

/// A throw-away PostgreSQL cluster of the test's own, shared with the store's tests.
#[path = "../../../tlslab-store/tests/cluster/mod.rs"]
pub mod cluster;
// Only the test files that use a PostgreSQL store name it.
#[allow(unused_imports)]
pub use cluster::Cluster;

/// tcpdump started and stopped as the tests need it, shared with the workflow's tests.
pub mod namespace;
pub mod tcpdump;
// Only the test files that capture name it.
#[allow(unused_imports)]
pub use tcpdump::{tcpdump_in, Tcpdump};

/// A single-node Slurm cluster started by the test (munge, slurmctld, slurmd), for the job
/// array script in `deploy/slurm/`.
pub mod slurm;

/// A fresh directory under Cargo's per-test scratch space.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The PKI cache shared by every test (keys are slow to make, so tests share them).
pub fn pki_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("pki")
}

/// The path of a file in the workspace's `examples/`.
pub fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The tlslab binary with `args`, on the shared PKI cache.
pub fn command<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tlslab"));
    command
        .args(args)
        .env("TLSLAB_PKI_DIR", pki_dir())
        .env("NO_COLOR", "1")
        // Whole lines whatever the shell that started the tests exported (a test that
        // wants a width sets it).
        .env_remove("COLUMNS")
        // The store each test names, not the one the developer's shell points at.
        .env_remove("TLSLAB_STORE");
    command
}

/// Runs tlslab to its end with `variables` set (`TLSLAB_STORE`, `PGPASSWORD`, ...).
pub fn tlslab_with(args: &[&str], variables: &[(&str, &str)]) -> Output {
    let output = command(args)
        .envs(variables.iter().copied())
        .output()
        .expect("the tlslab binary runs");
    assert!(
        !stderr(&output).contains("panicked"),
        "tlslab panicked: {}",
        stderr(&output)
    );
    output
}

/// Runs tlslab to its end; a panic in it fails the test whatever the exit code.
pub fn tlslab(args: &[&str]) -> Output {
    let output = command(args).output().expect("the tlslab binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "tlslab panicked: {stderr}");
    output
}

/// Runs tlslab, asserts that it exits 0, and returns its stdout.
pub fn tlslab_succeeds(args: &[&str]) -> String {
    assert_success(&tlslab(args))
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts exit code 0 (showing both streams otherwise) and returns stdout.
pub fn assert_success(output: &Output) -> String {
    let text = stdout(output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{text}\nstderr:\n{}",
        stderr(output)
    );
    text
}

/// Asserts the user-facing error shape: an `error:` line, a `hint:` line, the exit code.
pub fn assert_user_error(output: &Output, code: i32, mentions: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {text}");
    assert!(text.starts_with("error: "), "no error line: {text}");
    assert!(text.contains("\nhint: "), "no hint line: {text}");
    assert!(text.contains(mentions), "'{mentions}' not in: {text}");
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Why network emulation (namespaces, TUN devices) cannot run here, or `None` when it can.
pub fn emulation_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: namespaces and TUN devices need CAP_NET_ADMIN".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    let probe = Command::new("ip").args(["netns", "list"]).output();
    if !probe.is_ok_and(|output| output.status.success()) {
        return Some("`ip netns` does not work (install iproute2)".into());
    }
    None
}

/// Returns from the test, saying why, where network emulation cannot run.
// Unused in the files whose tests need no emulation, like the rest of this module.
#[allow(unused_macros)]
macro_rules! require_emulation {
    () => {
        if let Some(reason) = $crate::support::emulation_unavailable() {
            eprintln!("SKIPPED: {reason}");
            return;
        }
    };
}
#[allow(unused_imports)]
pub(crate) use require_emulation;

/// `tlslab run` writing its store to `<dir>/<name>.db`, on the shared PKI cache.
///
/// Runs print their whole summary (no `--quiet`), which tests read; tlslab draws the
/// progress line only when stderr is a terminal, and a test's never is.
pub struct Run {
    db: PathBuf,
    /// `--store` instead of `--out db` (a database's URL, or a path).
    store: Option<String>,
    args: Vec<String>,
}

/// A run that ended: where its store is and what it printed.
pub struct Finished {
    pub db: PathBuf,
    /// Stdout: the run summary (JSON with `--json`).
    pub summary: String,
    pub stderr: String,
}

impl Run {
    pub fn new(dir: &Path, name: &str) -> Run {
        Run {
            db: dir.join(format!("{name}.db")),
            store: None,
            args: Vec::new(),
        }
    }

    /// Writes into `store` (with `--store`) instead of `<dir>/<name>.db`.
    pub fn store(mut self, store: &StoreUnderTest) -> Run {
        self.store = Some(store.location.clone());
        self
    }

    /// Arguments as typed on a command line, split at white space (there is no quoting:
    /// a value with a space in it goes through [`Run::arg`]).
    pub fn args(mut self, line: &str) -> Run {
        self.args.extend(line.split_whitespace().map(String::from));
        self
    }

    /// One argument, taken whole.
    pub fn arg(mut self, value: impl Into<String>) -> Run {
        self.args.push(value.into());
        self
    }

    /// An option and its value, each taken whole.
    pub fn option(self, name: &str, value: impl Into<String>) -> Run {
        self.arg(name).arg(value)
    }

    /// Where the run writes its store.
    pub fn db(&self) -> &Path {
        &self.db
    }

    fn command_line(&self) -> Vec<&str> {
        let db = self.db.to_str().expect("a UTF-8 scratch path");
        let mut line = match &self.store {
            Some(store) => vec!["run", "--store", store],
            None => vec!["run", "--out", db],
        };
        line.extend(self.args.iter().map(String::as_str));
        line
    }

    /// The command, not started: for a test that interrupts the run.
    pub fn command(&self) -> Command {
        command(self.command_line())
    }

    /// Runs to the end and returns whatever came of it: for runs whose exit code the test
    /// judges itself.
    pub fn output(&self) -> Output {
        tlslab(&self.command_line())
    }

    /// Runs to the end and asserts exit code 0.
    pub fn succeeds(self) -> Finished {
        let output = self.output();
        assert_success(&output);
        self.finished(&output)
    }

    /// Runs to the end and asserts a user-facing error (see [`assert_user_error`]).
    pub fn fails(self, code: i32, mentions: &str) -> Finished {
        let output = self.output();
        assert_user_error(&output, code, mentions);
        self.finished(&output)
    }

    fn finished(self, output: &Output) -> Finished {
        Finished {
            db: self.db,
            summary: stdout(output),
            stderr: stderr(output),
        }
    }
}

impl Finished {
    /// The summary of a `--json` run.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.summary)
            .unwrap_or_else(|error| panic!("not a JSON summary ({error}): {}", self.summary))
    }
}

/// A results store a test writes and reads, of either kind: each test that takes its stores
/// from [`stores`] runs once against a SQLite file and once against a PostgreSQL database.
pub struct StoreUnderTest {
    /// `sqlite` or `postgres`, for the test's messages.
    pub kind: &'static str,
    /// What `--store` and the readers' RESULTS take: the file's path, or the database's URL
    /// (its password in it).
    pub location: String,
    /// The cluster the database lives in, running while the store is used.
    cluster: Option<Cluster>,
}

impl StoreUnderTest {
    /// The file, for checks only SQL on a SQLite file makes; `None` for a database.
    pub fn path(&self) -> Option<&Path> {
        (self.kind == "sqlite").then(|| Path::new(&self.location))
    }

    /// The password in the location (a database's), which must never appear anywhere.
    pub fn password(&self) -> Option<&str> {
        self.cluster.as_ref().map(Cluster::password)
    }

    /// Everything the store holds, as text to search: the file's bytes (and its write-ahead
    /// log's), or `pg_dump` of the database (its schema and every row).
    pub fn dump(&self) -> String {
        if let Some(path) = self.path() {
            let mut bytes = std::fs::read(path).unwrap();
            bytes.extend(std::fs::read(format!("{}-wal", path.display())).unwrap_or_default());
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        pg_dump(&self.location)
    }
}

/// The database at `url`, its schema and every row, as `pg_dump` writes it.
pub fn pg_dump(url: &str) -> String {
    let output = Command::new("pg_dump")
        .args(["--no-owner", "--dbname", url])
        .output()
        .expect("pg_dump runs (Debian: postgresql-client)");
    assert!(output.status.success(), "pg_dump: {}", stderr(&output));
    stdout(&output)
}

/// Where the same test keeps its results, once each: a new SQLite file `<dir>/<name>.db`,
/// and a new database `<name>` of a throw-away PostgreSQL cluster where PostgreSQL is
/// installed (else the SQLite store alone, saying why: [`Cluster::start`]). `name` is a
/// lower-case SQL name (letters, digits, `_`).
pub fn stores(dir: &Path, name: &str) -> Vec<StoreUnderTest> {
    let mut stores = vec![StoreUnderTest {
        kind: "sqlite",
        location: dir.join(format!("{name}.db")).display().to_string(),
        cluster: None,
    }];
    if let Some(cluster) = Cluster::start() {
        stores.push(StoreUnderTest {
            kind: "postgres",
            location: cluster.create_database(name),
            cluster: Some(cluster),
        });
    }
    stores
}

/// The store, read-only.
pub fn open(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// The one row of `sql`, as a tuple: `let (a, b): (i64, String) = row(db, "SELECT ...")`.
pub fn row<T>(db: &Path, sql: &str) -> T
where
    T: for<'a> TryFrom<&'a Row<'a>, Error = rusqlite::Error>,
{
    open(db)
        .query_row(sql, [], |row| T::try_from(row))
        .unwrap_or_else(|error| panic!("{error}: {sql}"))
}

/// Every row of `sql`, as tuples.
pub fn rows<T>(db: &Path, sql: &str, params: impl Params) -> Vec<T>
where
    T: for<'a> TryFrom<&'a Row<'a>, Error = rusqlite::Error>,
{
    let connection = open(db);
    let mut statement = connection
        .prepare(sql)
        .unwrap_or_else(|error| panic!("{error}: {sql}"));
    statement
        .query_map(params, |row| T::try_from(row))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The first column of every row of `sql`.
pub fn column<T: FromSql>(db: &Path, sql: &str, params: impl Params) -> Vec<T> {
    rows(db, sql, params)
        .into_iter()
        .map(|(value,)| value)
        .collect()
}

/// The one value `sql` selects.
pub fn value<T: FromSql>(db: &Path, sql: &str) -> T {
    row::<(T,)>(db, sql).0
}

/// The number `sql` selects (a `SELECT COUNT(*) ...`).
pub fn count(db: &Path, sql: &str) -> i64 {
    value(db, sql)
}

/// Samples `s` joined with their Configs `c`, for conditions on both.
const SAMPLES_AND_CONFIGS: &str = "samples s JOIN configs c ON c.id = s.config_id";

/// How many samples meet `condition`, which names the sample `s` and its Config `c`.
pub fn count_samples(db: &Path, condition: &str) -> i64 {
    count(
        db,
        &format!("SELECT COUNT(*) FROM {SAMPLES_AND_CONFIGS} WHERE {condition}"),
    )
}

/// Which samples [`values_of`] reads.
#[derive(Clone, Copy)]
pub enum Samples {
    /// Warm-up samples too.
    All,
    /// The measured ones only (`warmup = 0`).
    Measured,
}

/// The integer `column` of the successful samples that have it, of the Configs whose label
/// is `LIKE label_like`.
pub fn values_of(db: &Path, column_name: &str, label_like: &str, samples: Samples) -> Vec<i64> {
    let measured = match samples {
        Samples::All => "",
        Samples::Measured => " AND s.warmup = 0",
    };
    column(
        db,
        &format!(
            "SELECT s.\"{column_name}\" FROM {SAMPLES_AND_CONFIGS} WHERE c.label LIKE ?1{measured} AND s.outcome = 'ok' AND s.\"{column_name}\" IS NOT NULL"
        ),
        [label_like],
    )
}

/// A phase (or event) of the successful measured samples of the Configs whose label is
/// `LIKE label_like`, in ms.
pub fn phase_ms(db: &Path, label_like: &str, phase: &str) -> Vec<f64> {
    values_of(db, phase, label_like, Samples::Measured)
        .into_iter()
        .map(|nanoseconds| nanoseconds as f64 / 1e6)
        .collect()
}

/// The median as every test reads it: the middle value, the upper one of an even count.
pub fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
    assert!(!values.is_empty(), "the median of no values");
    values.sort_by(|a, b| a.partial_cmp(b).expect("values without NaN"));
    values[values.len() / 2]
}

/// A lab server of its own (`tlslab serve`) on a port known beforehand, killed on drop.
pub struct LabServer {
    pub child: std::process::Child,
    pub port: u16,
}

/// `ip netns exec NAMESPACE tlslab ARGS...`, on the shared PKI cache.
pub fn tlslab_in(namespace: &str, args: &[&str]) -> Command {
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", namespace, env!("CARGO_BIN_EXE_tlslab")])
        .args(args)
        .env("TLSLAB_PKI_DIR", pki_dir())
        .env("NO_COLOR", "1");
    command
}

impl LabServer {
    pub fn start() -> LabServer {
        LabServer::listening_on("127.0.0.1")
    }

    /// A lab server on a free port of `host` (`0.0.0.0` for every address of this
    /// namespace), once it answers on 127.0.0.1.
    pub fn listening_on(host: &str) -> LabServer {
        let port = closed_port();
        let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args(["serve", "--listen", &format!("{host}:{port}")])
            .env("TLSLAB_PKI_DIR", pki_dir())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the lab server did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        LabServer { child, port }
    }
}

impl Drop for LabServer {
    fn drop(&mut self) {
        // SIGKILL ends a stopped server too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the run writing `db` has committed at least `samples` samples (it is
/// measuring), for a test that interrupts it there; fails after a minute.
pub fn wait_for_samples(db: &Path, samples: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let measuring = db.exists()
            && rusqlite::Connection::open_with_flags(
                db,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .and_then(|connection| {
                connection.query_row("SELECT COUNT(*) FROM samples", [], |row| {
                    row.get::<_, i64>(0)
                })
            })
            .is_ok_and(|stored| stored >= samples);
        if measuring {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run never took {samples} samples"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `psql` over `url`: one line per row, fields split by `|`.
pub fn psql(url: &str, sql: &str) -> Vec<String> {
    let output = Command::new("psql")
        .args(["--no-psqlrc", "-At", "--dbname", url, "-c", sql])
        .output()
        .expect("psql runs (Debian: postgresql-client)");
    assert!(output.status.success(), "psql: {}", stderr(&output));
    stdout(&output).lines().map(str::to_string).collect()
}
