//! How tlslab connects to PostgreSQL as its users do with psql: URLs completed by libpq's
//! environment variables and password file, the TLS modes, redaction of passwords, and the
//! errors a user branches on.

use std::collections::HashMap;
use std::error::Error as _;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tlslab_store::postgres::connection::*;

/// Environment variables, by name.
type Variables<'a> = &'a [(&'a str, &'a str)];

/// An environment of these variables only.
fn environment(variables: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let variables: HashMap<String, String> = variables
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    move |name| variables.get(name).cloned()
}

fn settings(url: &str, variables: &[(&str, &str)]) -> Settings {
    Settings::from_url_and_environment(url, &environment(variables))
        .unwrap_or_else(|error| panic!("{url}: {error}: {:?}", error.source()))
}

fn refusal(url: &str, variables: &[(&str, &str)]) -> ConnectError {
    match Settings::from_url_and_environment(url, &environment(variables)) {
        Ok(settings) => panic!("{url} was taken: {settings}"),
        Err(error) => error,
    }
}

/// The error and all its causes, one line each, as the terminal shows them.
fn whole_message(error: &ConnectError) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        text.push_str("\ncaused by: ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

/// Each endpoint as `host:port` (a socket directory as its path).
fn endpoints(settings: &Settings) -> Vec<String> {
    settings
        .endpoints()
        .iter()
        .map(|endpoint| match endpoint.host() {
            Host::Tcp(name) => format!("{name}:{}", endpoint.port()),
            Host::Unix(directory) => format!("{}:{}", directory.display(), endpoint.port()),
        })
        .collect()
}

/// A directory of its own under the system's temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "tlslab-connection-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }

    /// Writes `contents` to `name` with permission bits `mode`.
    fn file(&self, name: &str, contents: &str, mode: u32) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, contents).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn text(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn urls_and_the_environment_give_libpq_s_settings() {
    // (url, environment, endpoints, user, database, sslmode)
    type Case<'a> = (
        &'a str,
        Variables<'a>,
        &'a [&'a str],
        &'a str,
        &'a str,
        SslMode,
    );
    let cases: &[Case] = &[
        (
            "postgres://alice:pw@db.example:6543/results",
            &[
                ("PGHOST", "ignored"),
                ("PGPORT", "1"),
                ("PGUSER", "ignored"),
            ],
            &["db.example:6543"],
            "alice",
            "results",
            SslMode::Prefer,
        ),
        // No port in the URL: PGPORT gives it (tokio-postgres alone would say 5432).
        (
            "postgresql://alice@db.example/results",
            &[("PGPORT", "5433")],
            &["db.example:5433"],
            "alice",
            "results",
            SslMode::Prefer,
        ),
        (
            "postgres://db.example:5432/results",
            &[("PGPORT", "5433"), ("PGUSER", "alice")],
            &["db.example:5432"],
            "alice",
            "results",
            SslMode::Prefer,
        ),
        // Everything from the environment.
        (
            "postgres://",
            &[
                ("PGHOST", "db2.example"),
                ("PGPORT", "7000"),
                ("PGUSER", "bob"),
                ("PGDATABASE", "lab"),
                ("PGSSLMODE", "require"),
            ],
            &["db2.example:7000"],
            "bob",
            "lab",
            SslMode::Require,
        ),
        // The database defaults to the user.
        (
            "postgres://frank@db.example",
            &[],
            &["db.example:5432"],
            "frank",
            "frank",
            SslMode::Prefer,
        ),
        (
            "postgres://[::1]:5433/db?user=u",
            &[],
            &["::1:5433"],
            "u",
            "db",
            SslMode::Prefer,
        ),
        (
            "postgres://[2001:db8::7]/db?user=u",
            &[("PGPORT", "6000")],
            &["2001:db8::7:6000"],
            "u",
            "db",
            SslMode::Prefer,
        ),
        // A socket directory, percent-encoded in the host, or in the query, or in PGHOST.
        (
            "postgres://%2Fvar%2Frun%2Fpostgresql/db?user=dave",
            &[],
            &["/var/run/postgresql:5432"],
            "dave",
            "db",
            SslMode::Prefer,
        ),
        (
            "postgres:///db?host=/tmp/pg&port=6000&user=eve",
            &[("PGHOST", "ignored")],
            &["/tmp/pg:6000"],
            "eve",
            "db",
            SslMode::Prefer,
        ),
        (
            "postgres:///db",
            &[("PGHOST", "/srv/pg"), ("PGUSER", "eve")],
            &["/srv/pg:5432"],
            "eve",
            "db",
            SslMode::Prefer,
        ),
        // Several hosts, each with its port, one port for all, or lists in the query.
        (
            "postgres://h1:5001,h2:5002/db?user=u",
            &[],
            &["h1:5001", "h2:5002"],
            "u",
            "db",
            SslMode::Prefer,
        ),
        (
            "postgres://h1,h2/db?user=u",
            &[("PGPORT", "7000")],
            &["h1:7000", "h2:7000"],
            "u",
            "db",
            SslMode::Prefer,
        ),
        (
            "postgres:///db?host=a,/run/pg&port=1,2&user=u",
            &[],
            &["a:1", "/run/pg:2"],
            "u",
            "db",
            SslMode::Prefer,
        ),
        (
            "postgres:///db?user=u",
            &[("PGHOST", "a,b"), ("PGPORT", "1,")],
            &["a:1", "b:5432"],
            "u",
            "db",
            SslMode::Prefer,
        ),
        // Percent-decoding of every part.
        (
            "postgres://J%C3%BCrgen:p%40ss@h/res%2Fults%20one",
            &[],
            &["h:5432"],
            "Jürgen",
            "res/ults one",
            SslMode::Prefer,
        ),
        // The query overrides the URL's own parts, the last of a repeated one counts.
        (
            "postgres://alice@h1/db1?user=bob&dbname=db2&host=h3&host=h4",
            &[],
            &["h4:5432"],
            "bob",
            "db2",
            SslMode::Prefer,
        ),
        // sslmode: the URL over PGSSLMODE; sslrootcert=system makes verify-full the default.
        (
            "postgres://h/db?user=u&sslmode=verify-full&sslrootcert=/ca.pem",
            &[("PGSSLMODE", "disable")],
            &["h:5432"],
            "u",
            "db",
            SslMode::VerifyFull,
        ),
        (
            "postgres://h/db?user=u&sslrootcert=system",
            &[],
            &["h:5432"],
            "u",
            "db",
            SslMode::VerifyFull,
        ),
        (
            "postgres://h/db?user=u",
            &[("PGSSLMODE", "verify-ca")],
            &["h:5432"],
            "u",
            "db",
            SslMode::VerifyCa,
        ),
        (
            "postgres://h/db?user=u&sslmode=allow",
            &[],
            &["h:5432"],
            "u",
            "db",
            SslMode::Allow,
        ),
        (
            "postgres://h/db?user=u&sslmode=disable",
            &[],
            &["h:5432"],
            "u",
            "db",
            SslMode::Disable,
        ),
        // An empty value is no value.
        (
            "postgres://@h/?user=&dbname=&host=&port=",
            &[("PGUSER", "zoe"), ("PGDATABASE", "zdb"), ("PGPORT", "6")],
            &["h:6"],
            "zoe",
            "zdb",
            SslMode::Prefer,
        ),
        // An '@' after the host is not the end of credentials (tokio-postgres alone would
        // take it for that).
        (
            "postgres://h/db@x?application_name=me@work&user=u",
            &[],
            &["h:5432"],
            "u",
            "db@x",
            SslMode::Prefer,
        ),
    ];
    for (url, variables, expected_endpoints, user, dbname, ssl_mode) in cases {
        let settings = settings(url, variables);
        assert_eq!(endpoints(&settings), *expected_endpoints, "{url}");
        assert_eq!(settings.user(), *user, "{url}");
        assert_eq!(settings.dbname(), *dbname, "{url}");
        assert_eq!(settings.ssl_mode(), *ssl_mode, "{url}");
    }
}

#[test]
fn the_smaller_parameters_come_from_the_url_then_the_environment() {
    let url = "postgres://u:p%40ss@h/db?application_name=lab%20one&connect_timeout=7&sslmode=require&sslrootcert=%2Fetc%2Fca.pem";
    let given = settings(url, &[("PGAPPNAME", "other"), ("PGCONNECT_TIMEOUT", "9")]);
    assert_eq!(given.application_name(), Some("lab one"));
    assert_eq!(given.connect_timeout(), Some(Duration::from_secs(7)));
    assert_eq!(
        given.root_certificate(),
        Some(&RootCertificate::File("/etc/ca.pem".into()))
    );
    assert_eq!(given.endpoints()[0].password(), Some(&b"p@ss"[..]));
    assert_eq!(
        given.endpoints()[0].password_source(),
        Some(&PasswordSource::Url)
    );

    let from_environment = settings(
        "postgres://u@h/db",
        &[
            ("PGAPPNAME", "nightly"),
            ("PGCONNECT_TIMEOUT", "9"),
            ("PGSSLROOTCERT", "system"),
            ("PGPASSWORD", "from-environment"),
        ],
    );
    assert_eq!(from_environment.application_name(), Some("nightly"));
    assert_eq!(
        from_environment.connect_timeout(),
        Some(Duration::from_secs(9))
    );
    assert_eq!(
        from_environment.root_certificate(),
        Some(&RootCertificate::System)
    );
    assert_eq!(from_environment.ssl_mode(), SslMode::VerifyFull);
    assert_eq!(
        from_environment.endpoints()[0].password(),
        Some(&b"from-environment"[..])
    );
    assert_eq!(
        from_environment.endpoints()[0].password_source(),
        Some(&PasswordSource::Environment)
    );

    // connect_timeout=0 in the URL is "wait as long as it takes", over PGCONNECT_TIMEOUT.
    let forever = settings(
        "postgres://u@h/db?connect_timeout=0",
        &[("PGCONNECT_TIMEOUT", "9")],
    );
    assert_eq!(forever.connect_timeout(), None);
    // ?password= counts as the URL's password.
    let query_password = settings("postgres://u@h/db?password=q", &[("PGPASSWORD", "e")]);
    assert_eq!(query_password.endpoints()[0].password(), Some(&b"q"[..]));
}

#[test]
fn what_is_left_out_is_libpq_s_default() {
    let home = Scratch::new();
    let settings = settings("postgres://", &[("HOME", home.text())]);
    let os_user = whoami::username().unwrap();
    assert_eq!(settings.user(), os_user);
    assert_eq!(settings.dbname(), os_user);
    assert_eq!(settings.port(), 5432);
    assert_eq!(settings.ssl_mode(), SslMode::Prefer);
    assert_eq!(settings.root_certificate(), None);
    assert_eq!(settings.connect_timeout(), None);
    assert_eq!(settings.endpoints()[0].password(), None);
    // The server's socket where libpq's builds put it, if it is there; localhost if not.
    let socket = DEFAULT_SOCKET_DIRECTORIES
        .iter()
        .find(|directory| Path::new(directory).join(".s.PGSQL.5432").exists());
    match socket {
        Some(directory) => assert_eq!(settings.host(), &Host::Unix(directory.into())),
        None => assert_eq!(settings.host(), &Host::Tcp("localhost".into())),
    }

    // libpq's default root certificate, when there, makes require check the chain.
    let root = home.file(".postgresql/root.crt", "not read until connecting", 0o644);
    let with_root = Settings::from_url_and_environment(
        "postgres://u@h/db?sslmode=require",
        &environment(&[("HOME", home.text())]),
    )
    .unwrap();
    assert_eq!(
        with_root.root_certificate(),
        Some(&RootCertificate::File(root))
    );
    // ... and is not written into the settings' URL, which would then say it was asked for.
    assert!(!with_root.to_string().contains("sslrootcert"));
}

#[test]
fn bad_urls_are_refused_saying_what_is_wrong_and_never_the_password() {
    // (url, environment, what the message must say)
    let cases: &[(&str, Variables, &str)] = &[
        ("mysql://u:SECRET@h/db", &[], "postgres://"),
        ("u:SECRET@h/db", &[], "postgres://"),
        (
            "postgres://u:SECRET@h/db?sslcert=/x.pem",
            &[],
            "does not support the libpq parameter `sslcert`",
        ),
        (
            "postgres://u:SECRET@h/db?colour=blue",
            &[],
            "unknown query parameter `colour`",
        ),
        // A name that is not a plain word is not echoed (it may be a misplaced password).
        (
            "postgres://u@h/db?SECRET%3F=1",
            &[],
            "unknown query parameter `(a value that is not a plain word)`",
        ),
        (
            "postgres://u:SECRET@h/db?sslmode=verify-everything",
            &[],
            "sslmode=verify-everything is not an sslmode",
        ),
        (
            "postgres://u:SECRET@h/db",
            &[("PGSSLMODE", "bogus")],
            "PGSSLMODE=bogus is not an sslmode",
        ),
        (
            "postgres://u:SECRET@h:notaport/db",
            &[],
            "invalid value for option `port`",
        ),
        (
            "postgres://u:SECRET@h/db?port=x",
            &[],
            "invalid value for option `port`",
        ),
        (
            "postgres://u:SECRET@h/db?connect_timeout=soon",
            &[],
            "invalid value for option `connect_timeout`",
        ),
        ("postgres://u:SEC@RET@h/db", &[], "more than one '@'"),
        ("postgres://u:SECRET @h/db", &[], "space"),
        ("postgres://u:SECRET@h/db?sslmode", &[], "no '='"),
        (
            "postgres://u:SECRET@h/db?host=a,b&port=1,2,3",
            &[],
            "3 ports for 2 hosts",
        ),
        (
            "postgres://u:SECRET@h/db?sslrootcert=system&sslmode=require",
            &[],
            "sslrootcert=system needs sslmode=verify-full",
        ),
        (
            "postgres://u:SECRET@h/db",
            &[("PGSSLROOTCERT", "system"), ("PGSSLMODE", "verify-ca")],
            "sslrootcert=system needs sslmode=verify-full",
        ),
        ("postgres://u:SECRET@h/db", &[("PGPORT", "abc")], "PGPORT"),
        ("postgres://u:SECRET@/db", &[("PGPORT", "70000")], "PGPORT"),
        (
            "postgres://u:SECRET@h/db",
            &[("PGCONNECT_TIMEOUT", "soon")],
            "PGCONNECT_TIMEOUT",
        ),
        (
            "postgres://u:SECRET@[::1/db",
            &[],
            "invalid value for option `host`",
        ),
    ];
    for (url, variables, says) in cases {
        let error = refusal(url, variables);
        assert!(
            matches!(error, ConnectError::InvalidUrl { .. }),
            "{url}: {error:?}"
        );
        let message = whole_message(&error);
        assert!(message.contains(says), "{url}: {message}");
        assert!(!message.contains("SECRET"), "{url}: {message}");
        assert!(!format!("{error:?}").contains("SECRET"), "{url}: {error:?}");
        assert!(error.hint().contains("postgres://USER"), "{url}");
    }
}

#[test]
fn password_file_lines_match_as_libpq_s() {
    let file = concat!(
        "# db.example:5432:*:alice:commented\n",
        "\n",
        "db.example:5432:results:alice:first\r\n",
        "*:*:*:alice:wild\n",
        "h\\:with\\:colons:5432:*:bob:colon\\:ed\\\\pass\n",
        "localhost:5433:*:*:socket\n",
        "db*:5432:*:carol:not-a-glob\n",
        "\\*:5432:*:carol:literal-star\n",
        "db.example:5432:*:dave:ends:at-the-colon\n",
        "db.example:5432:*:erin:\n",
        "db.example:5432:*:erin:second-erin\n",
    );
    let contents = file.as_bytes();
    let lookup = |host, port, dbname, user| {
        password_file_entry(contents, host, port, dbname, user)
            .map(|password| String::from_utf8(password).unwrap())
    };
    // The first line that matches wins; a comment never does; a CR before the newline is
    // not part of the password.
    assert_eq!(
        lookup("db.example", 5432, "results", "alice").as_deref(),
        Some("first")
    );
    assert_eq!(
        lookup("db.example", 5432, "other", "alice").as_deref(),
        Some("wild")
    );
    assert_eq!(
        lookup("elsewhere", 1, "any", "alice").as_deref(),
        Some("wild")
    );
    // \: and \\ in any field, the password included.
    assert_eq!(
        lookup("h:with:colons", 5432, "db", "bob").as_deref(),
        Some("colon:ed\\pass")
    );
    assert_eq!(lookup("h:with", 5432, "db", "bob"), None);
    assert_eq!(
        lookup("localhost", 5433, "db", "anyone").as_deref(),
        Some("socket")
    );
    assert_eq!(lookup("localhost", 5432, "db", "anyone"), None);
    // '*' is a wildcard only as a whole field; "\*" is a star.
    assert_eq!(lookup("dbx", 5432, "db", "carol"), None);
    assert_eq!(
        lookup("*", 5432, "db", "carol").as_deref(),
        Some("literal-star")
    );
    // The password ends at the next unescaped ':'.
    assert_eq!(
        lookup("db.example", 5432, "db", "dave").as_deref(),
        Some("ends")
    );
    // The first matching line gives the password even when it is empty, which is none: a
    // later line is not looked at.
    assert_eq!(lookup("db.example", 5432, "db", "erin"), None);
    assert_eq!(lookup("nowhere", 5432, "db", "zed"), None);
}

#[test]
fn each_host_takes_its_password_from_the_password_file() {
    let scratch = Scratch::new();
    let file = scratch.file(
        "passwords",
        concat!(
            "h1:5432:db:u:one\n",
            "h2:6000:db:u:two\n",
            "localhost:5432:db:u:socket\n",
            "/srv/pg:5432:db:u:directory\n",
        ),
        0o600,
    );
    let file_text = file.to_str().unwrap();
    let settings = settings(
        "postgres://u@h1,h2:6000,h3/db",
        &[("PGPASSFILE", file_text)],
    );
    let passwords: Vec<_> = settings
        .endpoints()
        .iter()
        .map(|endpoint| endpoint.password().map(<[u8]>::to_vec))
        .collect();
    assert_eq!(
        passwords,
        [Some(b"one".to_vec()), Some(b"two".to_vec()), None]
    );
    assert_eq!(
        settings.endpoints()[0].password_source(),
        Some(&PasswordSource::File(file.clone()))
    );
    assert!(settings.warnings().is_empty(), "{:?}", settings.warnings());

    // libpq's default socket directory is "localhost" in the file; another is its path.
    for (directory, expected) in [
        ("/var/run/postgresql", "socket"),
        ("/tmp", "socket"),
        ("/srv/pg", "directory"),
    ] {
        let settings = Settings::from_url_and_environment(
            &format!("postgres:///db?user=u&host={directory}"),
            &environment(&[("PGPASSFILE", file_text)]),
        )
        .unwrap();
        assert_eq!(
            settings.endpoints()[0].password(),
            Some(expected.as_bytes()),
            "{directory}"
        );
    }

    // Without PGPASSFILE, $HOME/.pgpass.
    scratch.file(".pgpass", "*:*:*:u:from-home\n", 0o600);
    let settings = self::settings("postgres://u@h/db", &[("HOME", scratch.text())]);
    assert_eq!(settings.endpoints()[0].password(), Some(&b"from-home"[..]));
    assert_eq!(
        settings.endpoints()[0].password_source(),
        Some(&PasswordSource::File(scratch.path().join(".pgpass")))
    );
}

#[test]
fn a_given_password_is_used_before_the_password_file() {
    let scratch = Scratch::new();
    scratch.file(".pgpass", "*:*:*:*:from-file\n", 0o600);
    let home = [("HOME", scratch.text())];
    let url = settings(
        "postgres://u:from-url@h/db",
        &[home[0], ("PGPASSWORD", "e")],
    );
    assert_eq!(url.endpoints()[0].password(), Some(&b"from-url"[..]));
    let variable = settings("postgres://u@h/db", &[home[0], ("PGPASSWORD", "from-env")]);
    assert_eq!(variable.endpoints()[0].password(), Some(&b"from-env"[..]));
    let file = settings("postgres://u@h/db", &home);
    assert_eq!(file.endpoints()[0].password(), Some(&b"from-file"[..]));
}

#[test]
fn a_password_file_others_may_read_is_ignored_with_libpq_s_warning() {
    let scratch = Scratch::new();
    for mode in [0o640, 0o604, 0o660, 0o700, 0o610] {
        let file = scratch.file("passwords", "*:*:*:*:exposed\n", mode);
        let settings = settings(
            "postgres://u@h/db",
            &[("PGPASSFILE", file.to_str().unwrap())],
        );
        let has_others = mode & 0o077 != 0;
        assert_eq!(
            settings.endpoints()[0].password().is_none(),
            has_others,
            "mode {mode:o}"
        );
        if has_others {
            assert_eq!(settings.warnings().len(), 1, "mode {mode:o}");
            assert!(
                settings.warnings()[0].contains("has group or world access"),
                "{:?}",
                settings.warnings()
            );
            assert!(!settings.warnings()[0].contains("exposed"));
        } else {
            assert!(settings.warnings().is_empty(), "mode {mode:o}");
        }
    }

    // Not a plain file: a warning; not there at all: silence, as libpq.
    let directory = settings("postgres://u@h/db", &[("PGPASSFILE", scratch.text())]);
    assert!(directory.warnings()[0].contains("not a plain file"));
    let missing = settings(
        "postgres://u@h/db",
        &[("PGPASSFILE", scratch.path().join("none").to_str().unwrap())],
    );
    assert!(missing.warnings().is_empty());
    assert_eq!(missing.endpoints()[0].password(), None);

    // A file in the way of the path: the file cannot be there, and the user is told so.
    let blocker = scratch.file("blocker", "", 0o600);
    let error = refusal(
        "postgres://u@h/db",
        &[("PGPASSFILE", blocker.join("pgpass").to_str().unwrap())],
    );
    assert!(
        matches!(&error, ConnectError::PasswordFile { path, .. } if *path == blocker.join("pgpass")),
        "{error:?}"
    );
    assert!(error.hint().contains("PGPASSFILE"));
}

#[test]
fn redaction_removes_every_form_of_password() {
    let cases = [
        (
            "postgres://alice:s3cret@db.example:5432/tlslab",
            "postgres://alice:***@db.example:5432/tlslab",
        ),
        (
            "postgresql://alice:s3cret@[::1]/db?sslmode=require",
            "postgresql://alice:***@[::1]/db?sslmode=require",
        ),
        (
            "--store=postgres://alice:p%40ss@h/db",
            "--store=postgres://alice:***@h/db",
        ),
        // Characters a password should have had encoded are hidden all the same.
        ("postgres://alice:p@ss@h/db", "postgres://alice:***@h/db"),
        ("postgres://alice:pa/ss@h/db", "postgres://alice:***@h/db"),
        ("postgres://alice:pa?ss@h/db", "postgres://alice:***@h/db"),
        (
            "postgres://h/db?user=alice&password=s3cret&sslmode=require",
            "postgres://h/db?user=alice&password=***&sslmode=require",
        ),
        (
            "postgres://h/db?PASSWORD=s3cret",
            "postgres://h/db?PASSWORD=***",
        ),
        ("PGPASSWORD=s3cret PGHOST=db", "PGPASSWORD=*** PGHOST=db"),
        ("PGPASSWORD=a&b;c,d", "PGPASSWORD=***"),
        (
            "host=db password='s 3 \\' cret' user=alice",
            "host=db password='***' user=alice",
        ),
        (
            r#"{"store":"postgres://a:b@h/db","env":"PGPASSWORD=x"}"#,
            r#"{"store":"postgres://a:***@h/db","env":"PGPASSWORD=***"}"#,
        ),
        (
            "copy postgres://a:one@h1/db to postgresql://b:two@h2/db",
            "copy postgres://a:***@h1/db to postgresql://b:***@h2/db",
        ),
        (
            "influx https://user:token@metrics.example/write",
            "influx https://user:***@metrics.example/write",
        ),
        (
            "héllo postgres://ü:päss@h/db ✓",
            "héllo postgres://ü:***@h/db ✓",
        ),
        // Nothing to hide: unchanged.
        (
            "postgres://alice@h:5432/db?application_name=bob@corp",
            "postgres://alice@h:5432/db?application_name=bob@corp",
        ),
        ("postgres://h:5432/db", "postgres://h:5432/db"),
        ("postgres://alice:@h/db", "postgres://alice:@h/db"),
        ("password=", "password="),
        ("no url here: a:b@c", "no url here: a:b@c"),
        ("", ""),
    ];
    for (text, expected) in cases {
        assert_eq!(redact_url(text), expected, "{text}");
        // And once redacted, it stays as it is.
        assert_eq!(redact_url(expected), expected, "{expected}");
    }
}

#[test]
fn settings_show_no_password_and_read_back_as_themselves() {
    let scratch = Scratch::new();
    let file = scratch.file("passwords", "*:*:*:*:FILESECRET\n", 0o600);
    let cases: [(&str, Variables, &str); 4] = [
        (
            "postgres://alice:URLSECRET@db.example:6543/results?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=lab%201&connect_timeout=5",
            &[],
            "postgres://alice:***@db.example:6543/results?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=lab%201&connect_timeout=5",
        ),
        (
            "postgres://alice@[::1],%2Fvar%2Frun%2Fpostgresql:5433/db",
            &[("PGPASSWORD", "ENVSECRET")],
            "postgres://alice:***@[::1]:5432,%2Fvar%2Frun%2Fpostgresql:5433/db?sslmode=prefer",
        ),
        (
            "postgres://alice@h/db?password=QUERYSECRET",
            &[],
            "postgres://alice:***@h:5432/db?sslmode=prefer",
        ),
        // A password from the file is not shown at all.
        (
            "postgres://alice@h/db",
            &[("PGPASSFILE", file.to_str().unwrap())],
            "postgres://alice@h:5432/db?sslmode=prefer",
        ),
    ];
    for (url, variables, shown) in cases {
        let settings = settings(url, variables);
        assert!(settings.endpoints()[0].password().is_some(), "{url}");
        let text = settings.to_string();
        assert_eq!(text, shown);
        let debug = format!("{settings:?}");
        assert!(!debug.contains("SECRET"), "{debug}");
        // The shown URL reads back as the same settings, but for the password.
        let again = self::settings(&text, &[]);
        assert_eq!(endpoints(&again), endpoints(&settings));
        assert_eq!(again.user(), settings.user());
        assert_eq!(again.dbname(), settings.dbname());
        assert_eq!(again.ssl_mode(), settings.ssl_mode());
        assert_eq!(again.application_name(), settings.application_name());
        assert_eq!(again.connect_timeout(), settings.connect_timeout());
        let shown_password = text.contains(":***@").then_some(&b"***"[..]);
        assert_eq!(again.endpoints()[0].password(), shown_password);
    }
}

#[test]
fn a_server_that_is_not_there_is_unreachable_and_the_message_keeps_the_password() {
    // A port nothing listens on: the kernel refuses the connection.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for mode in ["disable", "prefer", "require", "allow"] {
        let url = format!("postgres://alice:SECRET@127.0.0.1:{port}/db?sslmode={mode}");
        let settings = settings(&url, &[]);
        let error = settings.connect().err().expect("nothing listens there");
        assert!(
            matches!(&error, ConnectError::Unreachable { endpoint, .. } if *endpoint == format!("127.0.0.1:{port}")),
            "{mode}: {error:?}"
        );
        let message = whole_message(&error);
        assert!(!message.contains("SECRET"), "{message}");
        assert!(!format!("{error:?}").contains("SECRET"), "{error:?}");
        assert!(error.hint().contains("pg_isready"));
    }
}

#[test]
fn root_certificates_are_read_before_anything_is_sent() {
    let scratch = Scratch::new();
    // A host that cannot be resolved: had anything been sent, the error would say so.
    let cases = [
        (
            "postgres://u@db.invalid/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem".to_string(),
            "cannot be read",
        ),
        (
            format!(
                "postgres://u@db.invalid/db?sslmode=verify-ca&sslrootcert={}",
                scratch.file("empty.pem", "", 0o644).display()
            ),
            "holds no PEM certificate",
        ),
        (
            format!(
                "postgres://u@db.invalid/db?sslmode=require&sslrootcert={}",
                scratch
                    .file(
                        "broken.pem",
                        "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
                        0o644
                    )
                    .display()
            ),
            "is not a PEM file",
        ),
        (
            "postgres://u@db.invalid/db?sslmode=verify-ca".to_string(),
            "sslmode=verify-ca checks the server's certificate against a root certificate",
        ),
        (
            "postgres://u@db.invalid/db?sslmode=verify-full".to_string(),
            "sslmode=verify-full checks",
        ),
    ];
    for (url, says) in cases {
        // HOME without ~/.postgresql/root.crt.
        let settings = settings(&url, &[("HOME", scratch.text())]);
        for error in [
            settings.tls_config().expect_err("no usable root"),
            settings.connect().err().expect("no usable root"),
        ] {
            assert!(
                matches!(error, ConnectError::RootCertificate { .. }),
                "{url}: {error:?}"
            );
            let message = whole_message(&error);
            assert!(message.contains(says), "{url}: {message}");
            assert!(error.hint().contains("sslrootcert"));
        }
    }
    // Without TLS nothing is read, and over a Unix socket there is no TLS.
    let plain = settings(
        "postgres://u@db.invalid/db?sslmode=disable&sslrootcert=/nonexistent/ca.pem",
        &[],
    );
    assert!(plain.tls_config().unwrap().is_none());
    let socket = settings(
        &format!(
            "postgres://u@{}/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
            scratch.text().replace('/', "%2F")
        ),
        &[],
    );
    let error = socket
        .connect()
        .err()
        .expect("no server in the scratch directory");
    assert!(
        matches!(error, ConnectError::Unreachable { .. }),
        "{error:?}"
    );
}

// Against a real PostgreSQL: a throw-away cluster of its own for each test (tests/cluster),
// skipped only where PostgreSQL's server programs are not installed.

mod cluster;

use cluster::Cluster;

/// A lab CA and the database's certificate, signed by it for `names`, as PEM files.
struct Lab {
    authority: PathBuf,
    certificate: PathBuf,
    key: PathBuf,
}

impl Lab {
    fn make(scratch: &Scratch, name: &str, names: &[&str]) -> Lab {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
            KeyUsagePurpose,
        };
        let mut authority = CertificateParams::new(Vec::<String>::new()).unwrap();
        authority.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        authority.distinguished_name.push(
            DnType::CommonName,
            format!("tlslab connection test CA {name}"),
        );
        authority.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let authority =
            CertifiedIssuer::self_signed(authority, KeyPair::generate().unwrap()).unwrap();
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let mut certificate = CertificateParams::new(names).unwrap();
        certificate
            .distinguished_name
            .push(DnType::CommonName, "tlslab connection test database");
        let key = KeyPair::generate().unwrap();
        let certificate = certificate.signed_by(&key, &authority).unwrap();
        Lab {
            authority: scratch.file(&format!("{name}-ca.pem"), &authority.pem(), 0o644),
            certificate: scratch.file(&format!("{name}.crt"), &certificate.pem(), 0o644),
            key: scratch.file(&format!("{name}.key"), &key.serialize_pem(), 0o600),
        }
    }
}

/// The session's user and whether it is encrypted, as the server sees them.
fn session(client: &mut postgres::Client) -> (String, bool) {
    let row = client
        .query_one(
            "SELECT current_user::text, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn a_real_server_lets_the_right_password_in_and_says_why_it_refuses_others() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let scratch = Scratch::new();
    // A home of its own: no ~/.pgpass, no ~/.postgresql/root.crt.
    let home = ("HOME", scratch.text());
    let port = cluster.port();
    let password = cluster.password();

    // The password from the URL, PGPASSWORD, and the password file; prefer falls back to a
    // plain connection, as this server has no certificate.
    let mut client = settings(&cluster.url(), &[home]).connect().unwrap();
    assert_eq!(session(&mut client), ("tlslab".to_string(), false));
    let from_environment = settings(
        &cluster.url_without_password(),
        &[home, ("PGPASSWORD", password)],
    );
    from_environment.connect().unwrap();
    let file = scratch.file(
        "pgpass",
        &format!("# the test cluster\n127.0.0.1:{port}:tlslab:tlslab:{password}\n"),
        0o600,
    );
    let from_file = settings(
        &cluster.url_without_password(),
        &[home, ("PGPASSFILE", file.to_str().unwrap())],
    );
    assert_eq!(
        from_file.endpoints()[0].password_source(),
        Some(&PasswordSource::File(file))
    );
    from_file.connect().unwrap();
    for mode in ["disable", "allow"] {
        let url = format!("{}?sslmode={mode}", cluster.url());
        let mut client = settings(&url, &[home]).connect().unwrap();
        assert_eq!(session(&mut client), ("tlslab".to_string(), false));
    }
    // A Unix socket has no TLS, whatever sslmode says, and needs no root certificate.
    let socket = format!(
        "{}&sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        cluster.socket_url()
    );
    let mut client = settings(&socket, &[home]).connect().unwrap();
    assert_eq!(session(&mut client), ("tlslab".to_string(), false));

    // Refusals: a wrong password, none at all, a role that does not exist.
    let wrong = cluster.url().replace(password, "WRONGSECRET");
    let nobody = format!("postgres://nobody:WRONGSECRET@127.0.0.1:{port}/tlslab");
    for (url, says) in [
        (wrong.as_str(), "password authentication failed"),
        (cluster.url_without_password().as_str(), "password missing"),
        (nobody.as_str(), "password authentication failed"),
    ] {
        let error = settings(url, &[home]).connect().err().expect(url);
        assert!(
            matches!(&error, ConnectError::Authentication { endpoint, .. } if *endpoint == format!("127.0.0.1:{port}")),
            "{url}: {error:?}"
        );
        let message = whole_message(&error);
        assert!(message.contains(says), "{message}");
        assert!(!message.contains("SECRET"), "{message}");
        assert!(!message.contains(password), "{message}");
        assert!(error.hint().contains("pg_hba.conf"));
    }

    // A database that does not exist: another refusal, with the server's words.
    let elsewhere = format!("postgres://tlslab:{password}@127.0.0.1:{port}/nowhere");
    let error = settings(&elsewhere, &[home]).connect().err().unwrap();
    assert!(matches!(error, ConnectError::Other { .. }), "{error:?}");
    let message = whole_message(&error);
    assert!(message.contains("\"nowhere\" does not exist"), "{message}");
    assert!(!message.contains(password), "{message}");

    // TLS demanded of a server without it.
    let require = format!("{}?sslmode=require", cluster.url());
    let error = settings(&require, &[home]).connect().err().unwrap();
    assert!(
        matches!(
            error,
            ConnectError::Tls {
                mode: SslMode::Require,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        whole_message(&error).contains("server does not support TLS"),
        "{}",
        whole_message(&error)
    );
    assert!(error.hint().contains("ssl = on"));
}

#[test]
fn tls_to_a_real_server_checks_its_certificate_as_sslmode_says() {
    let scratch = Scratch::new();
    let lab = Lab::make(&scratch, "lab", &["127.0.0.1"]);
    let stranger = Lab::make(&scratch, "stranger", &["127.0.0.1"]);
    // This cluster takes TCP connections over TLS only (hostssl).
    let Some(cluster) = Cluster::start_with_tls(&lab.certificate, &lab.key) else {
        return;
    };
    let home = ("HOME", scratch.text());
    let password = cluster.password();
    let url = |host: &str, mode: &str, root: Option<&Path>| {
        let mut url = format!(
            "postgres://tlslab:{password}@{host}:{}/tlslab?sslmode={mode}",
            cluster.port()
        );
        if let Some(root) = root {
            url.push_str(&format!("&sslrootcert={}", root.display()));
        }
        url
    };
    let connects = |url: &str| {
        let mut client = settings(url, &[home])
            .connect()
            .unwrap_or_else(|error| panic!("{url}: {}", whole_message(&error)));
        assert_eq!(session(&mut client), ("tlslab".to_string(), true), "{url}");
    };
    let refused = |url: &str| {
        let error = settings(url, &[home]).connect().err().expect(url);
        let message = whole_message(&error);
        assert!(!message.contains(password), "{message}");
        (error, message)
    };

    // verify-full: the right root and the certificate's own name.
    connects(&url("127.0.0.1", "verify-full", Some(&lab.authority)));
    // A root that did not sign it.
    let (error, message) = refused(&url("127.0.0.1", "verify-full", Some(&stranger.authority)));
    assert!(
        matches!(
            error,
            ConnectError::Tls {
                mode: SslMode::VerifyFull,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(message.contains("UnknownIssuer"), "{message}");
    assert!(error.hint().contains("sslrootcert"));
    // A name the certificate does not have: verify-full refuses, verify-ca does not look.
    let (error, message) = refused(&url("localhost", "verify-full", Some(&lab.authority)));
    assert!(matches!(error, ConnectError::Tls { .. }), "{error:?}");
    assert!(message.contains("not valid for name"), "{message}");
    connects(&url("localhost", "verify-ca", Some(&lab.authority)));
    let (error, _) = refused(&url("localhost", "verify-ca", Some(&stranger.authority)));
    assert!(matches!(error, ConnectError::Tls { .. }), "{error:?}");

    // require: encrypted without a root; with one, checked as verify-ca (libpq's rule).
    connects(&url("127.0.0.1", "require", None));
    connects(&url("localhost", "require", Some(&lab.authority)));
    let (error, _) = refused(&url("127.0.0.1", "require", Some(&stranger.authority)));
    assert!(
        matches!(
            error,
            ConnectError::Tls {
                mode: SslMode::Require,
                ..
            }
        ),
        "{error:?}"
    );
    // libpq's ~/.postgresql/root.crt counts as one given.
    let home_with_root = Scratch::new();
    std::fs::create_dir_all(home_with_root.path().join(".postgresql")).unwrap();
    std::fs::copy(
        &stranger.authority,
        home_with_root.path().join(".postgresql/root.crt"),
    )
    .unwrap();
    let error = settings(
        &url("127.0.0.1", "require", None),
        &[("HOME", home_with_root.text())],
    )
    .connect()
    .err()
    .unwrap();
    assert!(matches!(error, ConnectError::Tls { .. }), "{error:?}");

    // prefer: the failed TLS is tried again plain, which this server refuses; the TLS
    // error is the one that says why.
    let (error, _) = refused(&url("127.0.0.1", "prefer", Some(&stranger.authority)));
    assert!(
        matches!(
            error,
            ConnectError::Tls {
                mode: SslMode::Prefer,
                ..
            }
        ),
        "{error:?}"
    );
    connects(&url("127.0.0.1", "prefer", None));
    // disable: no pg_hba.conf line for a plain connection; allow: refused plain, then TLS.
    let (error, message) = refused(&url("127.0.0.1", "disable", None));
    assert!(
        matches!(error, ConnectError::Authentication { .. }),
        "{error:?}"
    );
    assert!(message.contains("no encryption"), "{message}");
    connects(&url("127.0.0.1", "allow", None));
}
