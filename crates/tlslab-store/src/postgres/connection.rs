//! Reaching a PostgreSQL database the way its users already reach it with `psql`: a
//! `postgres://` URL, completed by libpq's environment variables (`PGHOST`, `PGPORT`,
//! `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGAPPNAME`,
//! `PGCONNECT_TIMEOUT`) and its password file (`PGPASSFILE`, by default `~/.pgpass`), with
//! TLS to the database over rustls as `sslmode` and `sslrootcert` ask (the `tls` module).
//!
//! tokio-postgres parses the URL (credentials, `[v6]` and comma-separated hosts, ports,
//! percent-decoding, query values) and is used for that. What it lacks is what this module
//! adds by hand, because no crate does it for the Rust client: libpq's layering of the
//! environment and the password file under the URL, libpq's defaults (a Unix socket, the OS
//! user), `sslmode=allow|verify-ca|verify-full` and `sslrootcert` (tokio-postgres knows only
//! `disable`, `prefer` and `require`, and never checks a certificate itself), and libpq's
//! retries between an encrypted and a plain connection.
//!
//! A password never leaves this module in a message: [`Settings`] shows `***` in its place
//! (`Display` and `Debug`), [`ConnectError`]'s messages name hosts and users only, and
//! [`redact_url`] takes passwords out of any text the store keeps or prints.

use std::error::Error as StdError;
use std::fmt::{self, Write as _};
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use postgres::config::SslMode as ClientSslMode;
use postgres::error::SqlState;
use postgres::NoTls;
use tokio_postgres_rustls::MakeRustlsConnect;

// A file of its own, found next to this one however this module is reached.
#[path = "tls.rs"]
mod tls;

/// The port PostgreSQL listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 5432;

/// Where libpq looks for the server's Unix socket when no host is given: Debian's build
/// (`/var/run/postgresql`), then upstream's (`/tmp`). A password file names either as
/// `localhost`, as libpq does for its own default directory.
pub const DEFAULT_SOCKET_DIRECTORIES: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// The URL query parameters tlslab reads; any other is refused by name.
pub const QUERY_PARAMETERS: [&str; 9] = [
    "host",
    "port",
    "user",
    "password",
    "dbname",
    "application_name",
    "connect_timeout",
    "sslmode",
    "sslrootcert",
];

/// libpq parameters that tlslab knows but does not support, so that refusing one says so
/// rather than calling it unknown.
const UNSUPPORTED_PARAMETERS: [&str; 33] = [
    "hostaddr",
    "passfile",
    "options",
    "client_encoding",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "target_session_attrs",
    "load_balance_hosts",
    "channel_binding",
    "require_auth",
    "replication",
    "service",
    "requirepeer",
    "requiressl",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "sslcompression",
    "sslnegotiation",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "gssencmode",
    "gsslib",
    "gssdelegation",
    "krbsrvname",
];

/// How much TLS the connection to the database has, as libpq's `sslmode` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// A plain connection first; TLS only when the server refuses the plain one.
    Allow,
    /// TLS when the server offers it; a plain connection when it does not, or when the TLS
    /// connection fails or is refused (libpq's default).
    Prefer,
    /// TLS or no connection. The certificate is not checked, unless a root certificate is
    /// given (`sslrootcert`, or libpq's `~/.postgresql/root.crt`): then it is checked as
    /// [`SslMode::VerifyCa`] does, as libpq does.
    Require,
    /// TLS, with the server's certificate chain checked against the root certificate, and
    /// not the host name.
    VerifyCa,
    /// TLS, with the chain and the host name checked.
    VerifyFull,
}

impl SslMode {
    /// The mode libpq spells `text`, if any.
    pub fn parse(text: &str) -> Option<SslMode> {
        Some(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// libpq's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// The certificates the server's certificate must chain to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootCertificate {
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
    /// The operating system's trusted roots (`sslrootcert=system`).
    System,
}

impl fmt::Display for RootCertificate {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootCertificate::File(path) => write!(formatter, "{}", path.display()),
            RootCertificate::System => formatter.write_str("system"),
        }
    }
}

/// Where a server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// A host name or IP address, reached over TCP.
    Tcp(String),
    /// The directory holding the server's Unix socket (`.s.PGSQL.<port>`).
    Unix(PathBuf),
}

impl Host {
    /// A host as libpq reads one: a directory when it starts with `/`, a name otherwise.
    fn parse(text: &str) -> Host {
        if text.starts_with('/') {
            Host::Unix(PathBuf::from(text))
        } else {
            Host::Tcp(text.to_string())
        }
    }

    /// The host a password file's first field is compared with: libpq writes its default
    /// socket directory as `localhost` there.
    fn password_file_name(&self) -> String {
        match self {
            Host::Tcp(name) => name.clone(),
            Host::Unix(directory) => {
                if DEFAULT_SOCKET_DIRECTORIES
                    .iter()
                    .any(|default| directory == Path::new(default))
                {
                    "localhost".to_string()
                } else {
                    directory.to_string_lossy().into_owned()
                }
            }
        }
    }
}

/// Where a password came from (never the password itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PasswordSource {
    /// The URL, as `user:password@` or `?password=`.
    Url,
    /// `PGPASSWORD`.
    Environment,
    /// A line of this password file (`PGPASSFILE`, or `~/.pgpass`).
    File(PathBuf),
}

#[derive(Clone)]
struct Password {
    bytes: Vec<u8>,
    source: PasswordSource,
}

/// One server to try: libpq tries a URL's hosts in order, each with its own port and its
/// own line of the password file.
#[derive(Clone)]
pub struct Endpoint {
    host: Host,
    port: u16,
    password: Option<Password>,
}

impl Endpoint {
    /// Where the server listens.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Its port (for a Unix socket, the number in the socket's name).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The password sent to this server if it asks for one. Never print it.
    pub fn password(&self) -> Option<&[u8]> {
        self.password
            .as_ref()
            .map(|password| password.bytes.as_slice())
    }

    /// Where that password came from.
    pub fn password_source(&self) -> Option<&PasswordSource> {
        self.password.as_ref().map(|password| &password.source)
    }
}

/// `db.example:5432`, `[2001:db8::1]:5432`, or the socket's path as libpq shows it.
impl fmt::Display for Endpoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Tcp(name) if name.contains(':') => write!(formatter, "[{name}]:{}", self.port),
            Host::Tcp(name) => write!(formatter, "{name}:{}", self.port),
            Host::Unix(directory) => write!(
                formatter,
                "{}",
                directory.join(format!(".s.PGSQL.{}", self.port)).display()
            ),
        }
    }
}

/// Without the password: only where it came from.
impl fmt::Debug for Endpoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Endpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("password_source", &self.password_source())
            .finish()
    }
}

/// Everything needed to connect to one PostgreSQL database: a URL completed by the
/// environment and the password file, as libpq completes it.
///
/// `Display` gives it back as a URL with `***` for a password given in the URL or
/// `PGPASSWORD` (a password from the password file is not shown at all), fit for a log line
/// or a report; parsing that text again gives the same settings apart from the password.
#[derive(Clone, Debug)]
pub struct Settings {
    endpoints: Vec<Endpoint>,
    user: String,
    dbname: String,
    ssl_mode: SslMode,
    root_certificate: Option<RootCertificate>,
    /// Whether the root certificate was asked for (URL or `PGSSLROOTCERT`), not libpq's
    /// `~/.postgresql/root.crt` found by default.
    root_certificate_given: bool,
    application_name: Option<String>,
    connect_timeout: Option<Duration>,
    warnings: Vec<String>,
}

/// What one URL says, before the environment completes it.
#[derive(Default)]
struct UrlParts {
    user: Option<String>,
    password: Option<Vec<u8>>,
    dbname: Option<String>,
    hosts: Vec<Host>,
    /// Empty when the URL names no port.
    ports: Vec<u16>,
    application_name: Option<String>,
    /// `Some(None)` for `connect_timeout=0` (wait as long as it takes).
    connect_timeout: Option<Option<Duration>>,
    ssl_mode: Option<String>,
    root_certificate: Option<String>,
}

impl Settings {
    /// The settings `url` and the process's environment give, as libpq reads them.
    pub fn from_url(url: &str) -> Result<Settings, ConnectError> {
        Settings::from_url_and_environment(url, &|name| std::env::var(name).ok())
    }

    /// The settings `url` gives, completed from `environment` (a variable's value by name)
    /// where the URL is silent, as libpq completes a connection string: the URL first, then
    /// `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`,
    /// `PGSSLROOTCERT`, `PGAPPNAME` and `PGCONNECT_TIMEOUT`, then libpq's defaults (the
    /// server's Unix socket in [`DEFAULT_SOCKET_DIRECTORIES`] if one is there, else
    /// `localhost`; port 5432; the OS user; a database named as the user; `sslmode=prefer`).
    /// Without a password, each host's is looked up in the password file (`PGPASSFILE`, or
    /// `$HOME/.pgpass`). An empty value counts as none, as in libpq.
    ///
    /// Files are read here (the password file; the root certificate only when connecting),
    /// nothing is sent anywhere.
    pub fn from_url_and_environment(
        url: &str,
        environment: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConnectError> {
        let parts = parse_url(url)?;
        let environment = |name: &str| environment(name).filter(|value| !value.is_empty());

        let user = match parts.user.or_else(|| environment("PGUSER")) {
            Some(user) => user,
            None => whoami::username().map_err(|error| ConnectError::InvalidUrl {
                reason: "it names no user, PGUSER is not set, and the OS user cannot be looked up"
                    .into(),
                source: Some(Box::new(error)),
            })?,
        };
        let given_password = match parts.password {
            Some(bytes) => Some(Password {
                bytes,
                source: PasswordSource::Url,
            }),
            None => environment("PGPASSWORD").map(|password| Password {
                bytes: password.into_bytes(),
                source: PasswordSource::Environment,
            }),
        };
        let dbname = parts
            .dbname
            .or_else(|| environment("PGDATABASE"))
            .unwrap_or_else(|| user.clone());

        let (hosts, ports) = hosts_and_ports(parts.hosts, parts.ports, &environment)?;

        let (root_certificate, root_certificate_given, ssl_mode) =
            tls_settings(parts.root_certificate, parts.ssl_mode, &environment)?;

        let application_name = parts.application_name.or_else(|| environment("PGAPPNAME"));
        let connect_timeout = connect_timeout(parts.connect_timeout, &environment)?;

        let mut warnings = Vec::new();
        let password_file = match &given_password {
            Some(_) => None,
            None => match environment("PGPASSFILE")
                .map(PathBuf::from)
                .or_else(|| environment("HOME").map(|home| Path::new(&home).join(".pgpass")))
            {
                Some(path) => {
                    read_password_file(&path, &mut warnings)?.map(|contents| (path, contents))
                }
                None => None,
            },
        };
        let endpoints = hosts
            .into_iter()
            .zip(ports)
            .map(|(host, port)| {
                let password = given_password.clone().or_else(|| {
                    let (path, contents) = password_file.as_ref()?;
                    let bytes = password_file_entry(
                        contents,
                        &host.password_file_name(),
                        port,
                        &dbname,
                        &user,
                    )?;
                    Some(Password {
                        bytes,
                        source: PasswordSource::File(path.clone()),
                    })
                });
                Endpoint {
                    host,
                    port,
                    password,
                }
            })
            .collect();

        Ok(Settings {
            endpoints,
            user,
            dbname,
            ssl_mode,
            root_certificate,
            root_certificate_given,
            application_name,
            connect_timeout,
            warnings,
        })
    }

    /// The servers to try, in order (at least one).
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// The first server's host.
    pub fn host(&self) -> &Host {
        &self.endpoints[0].host
    }

    /// The first server's port.
    pub fn port(&self) -> u16 {
        self.endpoints[0].port
    }

    /// The PostgreSQL user (role) to log in as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The database.
    pub fn dbname(&self) -> &str {
        &self.dbname
    }

    /// How much TLS.
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// The roots the server's certificate is checked against, if any: the one asked for,
    /// or libpq's `~/.postgresql/root.crt` when it exists.
    pub fn root_certificate(&self) -> Option<&RootCertificate> {
        self.root_certificate.as_ref()
    }

    /// The name the server shows for this session in `pg_stat_activity`.
    pub fn application_name(&self) -> Option<&str> {
        self.application_name.as_deref()
    }

    /// How long to wait for each server's socket to connect (`None`: as long as the system
    /// does). Like tokio-postgres, and unlike libpq, it does not bound the login after that.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// What libpq would have printed as a `WARNING` while reading the settings (a password
    /// file ignored because others may read it), for the caller to show.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The rustls configuration for the TLS this mode asks for (`None` for
    /// `sslmode=disable`), with the root certificate read now: a missing or unreadable one
    /// is [`ConnectError::RootCertificate`] before anything is sent.
    pub fn tls_config(&self) -> Result<Option<rustls::ClientConfig>, ConnectError> {
        if self.ssl_mode == SslMode::Disable {
            return Ok(None);
        }
        tls::client_config(self.ssl_mode, self.root_certificate.as_ref()).map(Some)
    }

    /// Connects to the first server that lets tlslab in, trying them in order as libpq
    /// does, and returns the error of the last one tried when none does. Over TCP the TLS
    /// follows `sslmode`, with libpq's second tries: `allow` tries TLS after the server
    /// refuses a plain connection, `prefer` tries a plain connection after TLS fails or is
    /// refused. A Unix socket is never encrypted, whatever `sslmode` says (libpq's rule:
    /// the server does not offer TLS there).
    pub fn connect(&self) -> Result<postgres::Client, ConnectError> {
        let needs_tls = self
            .endpoints
            .iter()
            .any(|endpoint| matches!(endpoint.host, Host::Tcp(_)));
        let tls = if needs_tls { self.tls_config()? } else { None };
        let mut failure = None;
        for endpoint in &self.endpoints {
            match self.connect_to(endpoint, tls.as_ref()) {
                Ok(client) => return Ok(client),
                Err(error) => failure = Some(error),
            }
        }
        Err(failure.unwrap_or_else(|| invalid("it names no host")))
    }

    fn connect_to(
        &self,
        endpoint: &Endpoint,
        tls: Option<&rustls::ClientConfig>,
    ) -> Result<postgres::Client, ConnectError> {
        let mut config = postgres::Config::new();
        config
            .user(&self.user)
            .dbname(&self.dbname)
            .port(endpoint.port);
        match &endpoint.host {
            Host::Tcp(name) => config.host(name),
            Host::Unix(directory) => config.host_path(directory),
        };
        if let Some(password) = endpoint.password() {
            config.password(password);
        }
        if let Some(name) = &self.application_name {
            config.application_name(name);
        }
        if let Some(timeout) = self.connect_timeout {
            config.connect_timeout(timeout);
        }
        let plain = || {
            let mut config = config.clone();
            config.ssl_mode(ClientSslMode::Disable);
            config.connect(NoTls)
        };
        let encrypted = |mode: ClientSslMode, tls: &rustls::ClientConfig| {
            let mut config = config.clone();
            config.ssl_mode(mode);
            config.connect(MakeRustlsConnect::new(tls.clone()))
        };
        let result = match (&endpoint.host, tls, self.ssl_mode) {
            (Host::Unix(_), _, _) | (_, None, _) | (_, _, SslMode::Disable) => plain(),
            // libpq: a plain connection the server refuses is tried again with TLS, and the
            // second answer is the one to report.
            (_, Some(tls), SslMode::Allow) => plain().or_else(|refused| {
                if refused.as_db_error().is_some() {
                    encrypted(ClientSslMode::Require, tls)
                } else {
                    Err(refused)
                }
            }),
            // libpq: TLS that fails or is refused is tried again without; if that fails too,
            // the encrypted attempt's error is the one that says what went wrong.
            (_, Some(tls), SslMode::Prefer) => {
                encrypted(ClientSslMode::Prefer, tls).or_else(|refused| {
                    if refused.as_db_error().is_some() || is_tls_failure(&refused) {
                        plain().map_err(|_| refused)
                    } else {
                        Err(refused)
                    }
                })
            }
            (_, Some(tls), _) => encrypted(ClientSslMode::Require, tls),
        };
        result.map_err(|error| self.classify(endpoint, error))
    }

    /// Sorts the client's error into what the user can act on. tokio-postgres keeps its
    /// error kinds private; its `Display` is the kind's fixed text, so that text is matched
    /// where no public accessor tells (the tests against a real server hold it).
    fn classify(&self, endpoint: &Endpoint, error: postgres::Error) -> ConnectError {
        let endpoint_text = endpoint.to_string();
        if let Some(code) = error.code() {
            if *code == SqlState::INVALID_PASSWORD
                || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            {
                return ConnectError::Authentication {
                    endpoint: endpoint_text,
                    user: self.user.clone(),
                    source: error,
                };
            }
            // A server starting up or shutting down is not there yet, or any more.
            if *code == SqlState::CANNOT_CONNECT_NOW
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
            {
                return ConnectError::Unreachable {
                    endpoint: endpoint_text,
                    source: error,
                };
            }
            return ConnectError::Other {
                endpoint: endpoint_text,
                source: Box::new(error),
            };
        }
        if is_tls_failure(&error) {
            return ConnectError::Tls {
                endpoint: endpoint_text,
                mode: self.ssl_mode,
                source: error,
            };
        }
        let kind = error.to_string();
        let cause = error.source().map(ToString::to_string).unwrap_or_default();
        if kind == "authentication error" || cause == "password missing" {
            return ConnectError::Authentication {
                endpoint: endpoint_text,
                user: self.user.clone(),
                source: error,
            };
        }
        if error.is_closed()
            || kind == "error connecting to server"
            || kind == "error communicating with the server"
            || kind == "timeout waiting for server"
        {
            return ConnectError::Unreachable {
                endpoint: endpoint_text,
                source: error,
            };
        }
        ConnectError::Other {
            endpoint: endpoint_text,
            source: Box::new(error),
        }
    }
}

/// Whether the error is the TLS handshake's (or the server's refusal to start one): a
/// rustls error anywhere in its causes, or tokio-postgres's TLS kind.
fn is_tls_failure(error: &postgres::Error) -> bool {
    let mut next: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(cause) = next {
        if cause.is::<rustls::Error>() {
            return true;
        }
        // tokio-rustls wraps rustls's error in an io::Error, whose `source` skips it.
        if let Some(inner) = cause
            .downcast_ref::<io::Error>()
            .and_then(|io_error| io_error.get_ref())
        {
            if inner.is::<rustls::Error>() {
                return true;
            }
        }
        next = cause.source();
    }
    error.to_string() == "error performing TLS handshake"
}

/// The hosts and a port for each, from the URL or else `PGHOST` and `PGPORT`, paired as
/// libpq pairs them: one port for every host, or one port each.
fn hosts_and_ports(
    hosts: Vec<Host>,
    ports: Vec<u16>,
    environment: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<Host>, Vec<u16>), ConnectError> {
    let ports = if ports.is_empty() {
        match environment("PGPORT") {
            Some(text) => parse_ports(&text).ok_or_else(|| {
                invalid("PGPORT is not a port number (or a comma-separated list of them)")
            })?,
            None => Vec::new(),
        }
    } else {
        ports
    };
    let first_port = ports.first().copied().unwrap_or(DEFAULT_PORT);
    let hosts = if hosts.is_empty() {
        match environment("PGHOST") {
            Some(text) => host_list(&text, first_port),
            None => vec![default_host(first_port)],
        }
    } else {
        hosts
    };
    // libpq pairs them: one port for every host, or one port each.
    let ports = match ports.len() {
        0 => vec![DEFAULT_PORT; hosts.len()],
        1 => vec![ports[0]; hosts.len()],
        count if count == hosts.len() => ports,
        count => {
            return Err(invalid(format!(
                "{count} ports for {} hosts: give one port for all, or one for each host",
                hosts.len()
            )))
        }
    };

    Ok((hosts, ports))
}

/// The root certificate (and whether it was given rather than found at libpq's default
/// place) and the sslmode, from the URL or else `PGSSLROOTCERT` and `PGSSLMODE`.
fn tls_settings(
    root_certificate: Option<String>,
    ssl_mode: Option<String>,
    environment: &dyn Fn(&str) -> Option<String>,
) -> Result<(Option<RootCertificate>, bool, SslMode), ConnectError> {
    let (root_certificate, root_certificate_given) =
        match root_certificate.or_else(|| environment("PGSSLROOTCERT")) {
            Some(text) if text == "system" => (Some(RootCertificate::System), true),
            Some(text) => (Some(RootCertificate::File(PathBuf::from(text))), true),
            // libpq's default root certificate counts only when it is there.
            None => (
                environment("HOME")
                    .map(|home| Path::new(&home).join(".postgresql/root.crt"))
                    .filter(|path| path.is_file())
                    .map(RootCertificate::File),
                false,
            ),
        };
    let ssl_mode = match ssl_mode
        .map(|text| ("sslmode", text))
        .or_else(|| environment("PGSSLMODE").map(|text| ("PGSSLMODE", text)))
    {
        Some((name, text)) => SslMode::parse(&text).ok_or_else(|| {
            invalid(format!(
                "{name}={} is not an sslmode: give disable, allow, prefer, require, verify-ca or verify-full",
                shown(&text)
            ))
        })?,
        // As libpq 16: the system's roots vouch for host names, so the name is checked.
        None if root_certificate == Some(RootCertificate::System) => SslMode::VerifyFull,
        None => SslMode::Prefer,
    };
    if root_certificate == Some(RootCertificate::System) && ssl_mode != SslMode::VerifyFull {
        return Err(invalid(format!(
            "sslrootcert=system needs sslmode=verify-full, not {ssl_mode}: any CA the system trusts can vouch for some name, so the host name must be checked"
        )));
    }

    Ok((root_certificate, root_certificate_given, ssl_mode))
}

/// The connect timeout, from the URL or else `PGCONNECT_TIMEOUT` (none: wait as long as it
/// takes).
fn connect_timeout(
    given: Option<Option<Duration>>,
    environment: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Duration>, ConnectError> {
    let connect_timeout = match given {
        Some(timeout) => timeout,
        None => match environment("PGCONNECT_TIMEOUT") {
            Some(text) => {
                let seconds: i64 = text
                    .trim()
                    .parse()
                    .map_err(|_| invalid("PGCONNECT_TIMEOUT is not a whole number of seconds"))?;
                u64::try_from(seconds)
                    .ok()
                    .filter(|&seconds| seconds > 0)
                    .map(Duration::from_secs)
            }
            None => None,
        },
    };

    Ok(connect_timeout)
}

/// The URL's parts, read by tokio-postgres, with the two parameters it does not know
/// (`sslmode` beyond `require`, and `sslrootcert`) and the host list read here.
fn parse_url(url: &str) -> Result<UrlParts, ConnectError> {
    let rest = url
        .strip_prefix("postgresql://")
        .or_else(|| url.strip_prefix("postgres://"))
        .ok_or_else(|| invalid("it does not start with postgres:// or postgresql://"))?;
    // Refused rather than guessed at: an unencoded space would end the URL in a command
    // line, and the password's tail would escape redaction.
    if rest
        .chars()
        .any(|character| character.is_whitespace() || character.is_control())
    {
        return Err(invalid(
            "it holds a space or a control character: percent-encode it (a space is %20)",
        ));
    }
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.split_once('/') {
        Some((authority, path)) => (authority, Some(path)),
        None => (before_query, None),
    };
    if authority.matches('@').count() > 1 {
        return Err(invalid(
            "more than one '@' before the host: write an '@' in a user name or password as %40",
        ));
    }

    // The credentials, hosts, ports and database, by tokio-postgres. It takes everything
    // up to the first '@' anywhere as the credentials, and libpq only what precedes the
    // host: an '@' after the host (in the database name) is given to it encoded.
    let mut head = format!("postgres://{authority}");
    if let Some(path) = path {
        head.push('/');
        head.push_str(&path.replace('@', "%40"));
    }
    let config = read_config(&head)?;
    let mut parts = UrlParts {
        user: config.get_user().map(str::to_string),
        password: config.get_password().map(<[u8]>::to_vec),
        dbname: config.get_dbname().map(str::to_string),
        hosts: config
            .get_hosts()
            .iter()
            .map(|host| match host {
                postgres::config::Host::Tcp(name) => Host::Tcp(name.clone()),
                postgres::config::Host::Unix(directory) => Host::Unix(directory.clone()),
            })
            .collect(),
        ..UrlParts::default()
    };
    // tokio-postgres gives every host a port, 5432 when none is written; libpq leaves the
    // ports unset then, so that PGPORT applies.
    let host_part = authority
        .split_once('@')
        .map_or(authority, |(_, hosts)| hosts);
    let ports_written = host_part
        .split(',')
        .any(|host| match host.strip_prefix('[') {
            Some(bracketed) => bracketed
                .split_once(']')
                .is_some_and(|(_, after)| after.starts_with(':')),
            None => host.contains(':'),
        });
    if ports_written {
        parts.ports = config.get_ports().to_vec();
    }

    read_query(query, &mut parts)?;

    // An empty value is no value, as in libpq.
    parts.user = parts.user.filter(|user| !user.is_empty());
    parts.password = parts.password.filter(|password| !password.is_empty());
    parts.dbname = parts.dbname.filter(|dbname| !dbname.is_empty());
    parts.application_name = parts.application_name.filter(|name| !name.is_empty());
    parts.ssl_mode = parts.ssl_mode.filter(|mode| !mode.is_empty());
    parts.root_certificate = parts.root_certificate.filter(|root| !root.is_empty());
    Ok(parts)
}

/// The URL's query into `parts`: each name checked, the last of a repeated one kept (libpq's
/// rule), then read by tokio-postgres, but for the parameters it does not take.
fn read_query(query: Option<&str>, parts: &mut UrlParts) -> Result<(), ConnectError> {
    let mut forwarded: Vec<(&str, &str)> = Vec::new();
    for parameter in query.unwrap_or_default().split('&') {
        if parameter.is_empty() {
            continue;
        }
        let Some((name, value)) = parameter.split_once('=') else {
            return Err(invalid(
                "a query parameter has no '=': write each as name=value",
            ));
        };
        if !QUERY_PARAMETERS.contains(&name) {
            let reason = if UNSUPPORTED_PARAMETERS.contains(&name) {
                format!("tlslab does not support the libpq parameter `{name}`")
            } else {
                format!("unknown query parameter `{}`", shown(name))
            };
            return Err(invalid(format!(
                "{reason} (it reads {})",
                QUERY_PARAMETERS.join(", ")
            )));
        }
        forwarded.retain(|(earlier, _)| *earlier != name);
        forwarded.push((name, value));
    }
    let mut rest_of_query = Vec::new();
    for (name, value) in forwarded {
        match name {
            // A parameter that is there with no value counts as not there.
            _ if value.is_empty() => {}
            "sslmode" => parts.ssl_mode = Some(decode(value)?),
            "sslrootcert" => parts.root_certificate = Some(decode(value)?),
            // tokio-postgres takes a query's `host` whole; libpq splits it at commas.
            "host" => parts.hosts = host_list(&decode(value)?, DEFAULT_PORT),
            _ => {
                if name == "connect_timeout" {
                    // Given, even as 0 ("wait as long as it takes"): PGCONNECT_TIMEOUT is not
                    // looked at.
                    parts.connect_timeout = Some(None);
                }
                // An '@' in a value would otherwise be taken for the end of credentials.
                rest_of_query.push(format!("{name}={}", value.replace('@', "%40")));
            }
        }
    }
    let config = read_config(&format!("postgres://?{}", rest_of_query.join("&")))?;
    if let Some(user) = config.get_user() {
        parts.user = Some(user.to_string());
    }
    if let Some(password) = config.get_password() {
        parts.password = Some(password.to_vec());
    }
    if let Some(dbname) = config.get_dbname() {
        parts.dbname = Some(dbname.to_string());
    }
    if !config.get_ports().is_empty() {
        parts.ports = config.get_ports().to_vec();
    }
    parts.application_name = config.get_application_name().map(str::to_string);
    if let Some(timeout) = config.get_connect_timeout() {
        parts.connect_timeout = Some(Some(*timeout));
    }

    Ok(())
}

fn read_config(url: &str) -> Result<postgres::Config, ConnectError> {
    url.parse().map_err(|error| ConnectError::InvalidUrl {
        reason: "a part of it cannot be read".into(),
        source: Some(Box::new(error)),
    })
}

/// One query value percent-decoded by tokio-postgres's own decoder (which it does not
/// export: a URL whose only parameter is `application_name` reaches it), rather than by a
/// second decoder written here.
fn decode(value: &str) -> Result<String, ConnectError> {
    let config = read_config(&format!(
        "postgres://?application_name={}",
        value.replace('@', "%40")
    ))?;
    Ok(config
        .get_application_name()
        .unwrap_or_default()
        .to_string())
}

/// A comma-separated list of hosts (`PGHOST`, a query's `host`), as libpq reads it: an
/// empty entry is the default host.
fn host_list(text: &str, port: u16) -> Vec<Host> {
    text.split(',')
        .map(|host| {
            if host.is_empty() {
                default_host(port)
            } else {
                Host::parse(host)
            }
        })
        .collect()
}

/// A comma-separated list of ports (`PGPORT`); an empty entry is 5432, as in libpq.
fn parse_ports(text: &str) -> Option<Vec<u16>> {
    text.split(',')
        .map(|port| {
            if port.trim().is_empty() {
                Some(DEFAULT_PORT)
            } else {
                port.trim().parse().ok()
            }
        })
        .collect()
}

/// libpq's default host: the Unix socket directory its build knows (Debian's, then
/// upstream's) when the server's socket is there, `localhost` otherwise, so that a server
/// that is down is reported where a user would look for it.
fn default_host(port: u16) -> Host {
    DEFAULT_SOCKET_DIRECTORIES
        .iter()
        .map(Path::new)
        .find(|directory| directory.join(format!(".s.PGSQL.{port}")).exists())
        .map_or_else(
            || Host::Tcp("localhost".to_string()),
            |directory| Host::Unix(directory.to_path_buf()),
        )
}

/// The password file's contents, or nothing where libpq would use nothing: no such file
/// (silently), not a plain file, or readable by the group or others (with a warning, as
/// libpq prints one). A file that is there but cannot be read is an error, which libpq
/// steps over: the login would fail later for a reason the user could not see.
fn read_password_file(
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<u8>>, ConnectError> {
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(ConnectError::PasswordFile {
                path: path.to_path_buf(),
                source: error,
            })
        }
    };
    if !metadata.is_file() {
        warnings.push(format!(
            "password file {} is not a plain file; it is ignored",
            path.display()
        ));
        return Ok(None);
    }
    if metadata.permissions().mode() & 0o077 != 0 {
        warnings.push(format!(
            "password file {} has group or world access; permissions should be u=rw (0600) or less; it is ignored",
            path.display()
        ));
        return Ok(None);
    }
    fs::read(path)
        .map(Some)
        .map_err(|error| ConnectError::PasswordFile {
            path: path.to_path_buf(),
            source: error,
        })
}

/// The password of the first line of a password file (libpq's format,
/// `hostname:port:database:username:password`) that matches, as libpq's
/// `passwordFromFile` finds it: `#` starts a comment line, a field of just `*` matches
/// anything, `\:` and `\\` stand for `:` and `\` in any field, and the password ends at the
/// next unescaped `:`. `host` is `localhost` for the default socket directory. An empty
/// password counts as none.
pub fn password_file_entry(
    contents: &[u8],
    host: &str,
    port: u16,
    dbname: &str,
    user: &str,
) -> Option<Vec<u8>> {
    let port = port.to_string();
    let wanted = [
        host.as_bytes(),
        port.as_bytes(),
        dbname.as_bytes(),
        user.as_bytes(),
    ];
    let rest = contents.split(|&byte| byte == b'\n').find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b'#' {
            return None;
        }
        wanted
            .iter()
            .try_fold(line, |rest, field| matching_field(rest, field))
    })?;
    let mut password = Vec::new();
    let mut index = 0;
    while let Some(&byte) = rest.get(index) {
        if byte == b':' {
            break;
        }
        if byte == b'\\' && index + 1 < rest.len() {
            index += 1;
        }
        password.push(rest[index]);
        index += 1;
    }
    (!password.is_empty()).then_some(password)
}

/// The line after its first field, if that field matches `wanted` (libpq's
/// `pwdfMatchesString`).
fn matching_field<'a>(line: &'a [u8], wanted: &[u8]) -> Option<&'a [u8]> {
    if let Some(rest) = line.strip_prefix(b"*:") {
        return Some(rest);
    }
    let mut index = 0;
    let mut matched = 0;
    loop {
        let mut byte = *line.get(index)?;
        let mut escaped = false;
        if byte == b'\\' {
            index += 1;
            byte = *line.get(index)?;
            escaped = true;
        }
        if byte == b':' && !escaped {
            return (matched == wanted.len()).then(|| &line[index + 1..]);
        }
        if wanted.get(matched) != Some(&byte) {
            return None;
        }
        index += 1;
        matched += 1;
    }
}

/// The settings as a URL, with `***` for a password from the URL or `PGPASSWORD`.
impl fmt::Display for Settings {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.url(self.password_given()))
    }
}

impl Settings {
    /// Whether a password was given in the URL or `PGPASSWORD` (rather than found in the
    /// password file, or none).
    pub fn password_given(&self) -> bool {
        self.endpoints.iter().any(|endpoint| {
            matches!(
                endpoint.password_source(),
                Some(PasswordSource::Url | PasswordSource::Environment)
            )
        })
    }

    /// The settings as a URL with no password at all, to be typed again as it is (the
    /// password then comes from `PGPASSWORD` or the password file, as for psql).
    pub fn url_without_password(&self) -> String {
        self.url(false)
    }

    /// The settings as a URL, `***` in the password's place when `mark_password`.
    fn url(&self, mark_password: bool) -> String {
        let mut text = String::from("postgres://");
        encode(&self.user, &mut text);
        if mark_password {
            text.push_str(":***");
        }
        text.push('@');
        for (index, endpoint) in self.endpoints.iter().enumerate() {
            if index > 0 {
                text.push(',');
            }
            match &endpoint.host {
                Host::Tcp(name) if name.contains(':') => {
                    let _ = write!(text, "[{name}]");
                }
                Host::Tcp(name) => encode(name, &mut text),
                Host::Unix(directory) => encode(&directory.to_string_lossy(), &mut text),
            }
            let _ = write!(text, ":{}", endpoint.port);
        }
        text.push('/');
        encode(&self.dbname, &mut text);
        let _ = write!(text, "?sslmode={}", self.ssl_mode);
        if let (Some(root), true) = (&self.root_certificate, self.root_certificate_given) {
            text.push_str("&sslrootcert=");
            encode(&root.to_string(), &mut text);
        }
        if let Some(name) = &self.application_name {
            text.push_str("&application_name=");
            encode(name, &mut text);
        }
        if let Some(timeout) = self.connect_timeout {
            let _ = write!(text, "&connect_timeout={}", timeout.as_secs());
        }
        text
    }
}

/// Percent-encodes all but RFC 3986's unreserved characters.
fn encode(text: &str, out: &mut String) {
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
}

/// `text` with every password in it replaced by `***`: the password of any URL's
/// `user:password@` (`postgres://alice:***@db/tlslab`, and any other scheme's), and the
/// value of any `…password=` (a URL's `?password=`, `PGPASSWORD=` in an environment
/// record, `password='…'` in a libpq connection string). For command lines, environment
/// records, log lines and error messages before they are stored or shown; give it each
/// command-line argument on its own, not the line joined.
///
/// It errs towards hiding: a URL's user information is taken to end at the last `@` of the
/// URL (an unencoded `@` in a password is still hidden), so an `@` in a query value after a
/// `user:` with a port can hide more than the password.
pub fn redact_url(text: &str) -> String {
    redact_password_parameters(&redact_user_information(text))
}

fn redact_user_information(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find("://") {
        let start = found + "://".len();
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let end = after
            .find(|character: char| {
                character.is_whitespace() || matches!(character, '"' | '\'' | '`' | '<' | '>')
            })
            .unwrap_or(after.len());
        let url = &after[..end];
        let before_query = &url[..url.find('?').unwrap_or(url.len())];
        let at = before_query.rfind('@').or_else(|| url.rfind('@'));
        match at.and_then(|at| url[..at].find(':').map(|colon| (colon, at))) {
            Some((colon, at)) if colon + 1 < at => {
                out.push_str(&url[..=colon]);
                out.push_str("***");
                out.push_str(&url[at..]);
            }
            _ => out.push_str(url),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn redact_password_parameters(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = lower[search..].find(KEY) {
        let key = search + found;
        let value = key + KEY.len();
        // In a URL's query (the name follows '?' or '&'), '&' ends the value.
        let name_start = lower[..key]
            .rfind(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
            .map_or(0, |index| index + 1);
        let in_query = matches!(lower[..name_start].chars().last(), Some('?' | '&'));
        let rest = &text[value..];
        let (start, end) = match rest.chars().next() {
            Some(quote @ ('\'' | '"')) => {
                let mut escaped = false;
                let close = rest[1..]
                    .char_indices()
                    .find(|&(_, character)| {
                        let closes = character == quote && !escaped;
                        escaped = character == '\\' && !escaped;
                        closes
                    })
                    .map_or(rest.len(), |(index, _)| index + 1);
                (1, close)
            }
            _ => (
                0,
                rest.find(|character: char| {
                    character.is_whitespace()
                        || matches!(character, '"' | '\'' | '`')
                        || (in_query && matches!(character, '&' | '#'))
                })
                .unwrap_or(rest.len()),
            ),
        };
        if end > start {
            out.push_str(&text[copied..value + start]);
            out.push_str("***");
            copied = value + end;
        }
        search = value + end.max(start);
    }
    out.push_str(&text[copied..]);
    out
}

/// `text` if it is a plain word, so that an error may name it without risk of echoing a
/// password typed in the wrong place.
fn shown(text: &str) -> &str {
    let plain = !text.is_empty()
        && text.len() <= 40
        && text
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || matches!(character, '_' | '-'));
    if plain {
        text
    } else {
        "(a value that is not a plain word)"
    }
}

fn invalid(reason: impl Into<String>) -> ConnectError {
    ConnectError::InvalidUrl {
        reason: reason.into(),
        source: None,
    }
}

/// Why tlslab could not connect to a PostgreSQL database. Each variant keeps what failed
/// underneath as its [`source`](std::error::Error::source); none of the messages holds a
/// password. [`ConnectError::hint`] says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL, or a `PG…` variable completing it, cannot be read.
    #[error("invalid PostgreSQL URL: {reason}")]
    InvalidUrl {
        /// What is wrong with it (never the URL itself).
        reason: String,
        /// What the parser said, if it was tokio-postgres's.
        #[source]
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
    /// The password file is there and cannot be read.
    #[error("cannot read the password file {}", path.display())]
    PasswordFile {
        /// The file (`PGPASSFILE`, or `~/.pgpass`).
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The root certificate that TLS needs is missing or unusable.
    #[error("root certificate {location}: {reason}")]
    RootCertificate {
        /// The file, or `system`.
        location: String,
        /// What is wrong.
        reason: String,
        /// What failed underneath.
        #[source]
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
    /// No server answers there: refused, unreachable, timed out, or starting or stopping.
    #[error("cannot reach PostgreSQL at {endpoint}")]
    Unreachable {
        /// The server tried last (`host:port`, or the socket's path).
        endpoint: String,
        /// What the client said.
        #[source]
        source: postgres::Error,
    },
    /// The server refused the user: a wrong or missing password, no such role, or no
    /// `pg_hba.conf` line that lets it in.
    #[error("PostgreSQL at {endpoint} did not let user \"{user}\" in")]
    Authentication {
        /// The server.
        endpoint: String,
        /// The user that was refused.
        user: String,
        /// What the server said.
        #[source]
        source: postgres::Error,
    },
    /// The TLS handshake failed (a certificate refused, or a server without TLS).
    #[error("TLS to PostgreSQL at {endpoint} failed (sslmode={mode})")]
    Tls {
        /// The server.
        endpoint: String,
        /// The mode that asked for TLS.
        mode: SslMode,
        /// What rustls or the client said.
        #[source]
        source: postgres::Error,
    },
    /// Anything else: a database that does not exist, too many connections, a setup error.
    #[error("PostgreSQL at {endpoint} refused the connection")]
    Other {
        /// The server (or what was being set up).
        endpoint: String,
        /// What failed.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
}

impl ConnectError {
    /// What the user can do about it, in words.
    pub fn hint(&self) -> String {
        match self {
            ConnectError::InvalidUrl { .. } => "write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=verify-full&sslrootcert=CA.pem, percent-encoding any ':', '@', '/' or space inside a part; anything left out comes from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE and ~/.pgpass, as for psql".into(),
            ConnectError::PasswordFile { path, .. } => format!(
                "make {} a file you may read and no one else may (chmod 600), or point PGPASSFILE at another",
                path.display()
            ),
            ConnectError::RootCertificate { .. } => "give sslrootcert a PEM file holding the CA certificate that signed the server's certificate, or sslrootcert=system for the system's roots; sslmode=require encrypts without checking the certificate".into(),
            ConnectError::Unreachable { .. } => "check that PostgreSQL runs and listens there (pg_isready -h HOST -p PORT), the host and port in the URL (or PGHOST and PGPORT), and any firewall between; connect_timeout=SECONDS bounds the wait".into(),
            ConnectError::Authentication { .. } => "check the user and its password (in the URL, PGPASSWORD or ~/.pgpass) and that the server's pg_hba.conf lets this user in to this database from this host".into(),
            ConnectError::Tls { mode: SslMode::VerifyFull, .. } => "the server's certificate must be signed by a CA in sslrootcert and name the host as the URL writes it; sslmode=verify-ca checks the CA only".into(),
            ConnectError::Tls { mode: SslMode::VerifyCa, .. } => "the server's certificate must be signed by a CA in sslrootcert (the PEM file given, or ~/.postgresql/root.crt)".into(),
            ConnectError::Tls { .. } => "the server must have ssl = on (postgresql.conf) for sslmode=require; with a root certificate given, its certificate must also be signed by that CA; sslmode=prefer falls back to an unencrypted connection".into(),
            ConnectError::Other { .. } => "the server's message above says what it refused (a database that does not exist: create it with createdb, or name another in the URL)".into(),
        }
    }
}
