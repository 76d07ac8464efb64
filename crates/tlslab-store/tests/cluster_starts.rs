//! The throw-away PostgreSQL harness (`tests/cluster/mod.rs`) against the real server: what
//! the store's tests and the binary's end-to-end tests rely on it for (a password-protected
//! role owning its database, fresh databases, a crash and a restart on the same port, TLS
//! with a lab certificate, and nothing left behind).

mod cluster;

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cluster::Cluster;
use postgres::error::SqlState;
use postgres::{Client, NoTls};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::CertificateDer;
use tokio_postgres_rustls::MakeRustlsConnect;

#[test]
fn connects_with_the_password_as_a_role_that_owns_its_database() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    assert_eq!(
        cluster.url(),
        format!(
            "postgres://tlslab:{}@127.0.0.1:{}/tlslab",
            cluster.password(),
            cluster.port()
        )
    );
    assert_eq!(cluster.host(), "127.0.0.1");
    let mut client = Client::connect(&cluster.url(), NoTls).expect("connects with the password");
    let row = client
        .query_one(
            "SELECT current_user::text, rolsuper, pg_get_userbyid(datdba)::text, \
                    inet_server_port(), ssl
             FROM pg_roles, pg_database, pg_stat_ssl
             WHERE rolname = current_user AND datname = current_database()
               AND pg_stat_ssl.pid = pg_backend_pid()",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "tlslab");
    assert!(!row.get::<_, bool>(1), "tlslab is not a superuser");
    assert_eq!(
        row.get::<_, String>(2),
        "tlslab",
        "tlslab owns its database"
    );
    assert_eq!(row.get::<_, i32>(3), i32::from(cluster.port()));
    assert!(!row.get::<_, bool>(4), "no TLS without a certificate");
    // The owner can make tables (what the store's migrations do).
    client
        .batch_execute("CREATE TABLE runs (id bigint PRIMARY KEY); INSERT INTO runs VALUES (1);")
        .unwrap();
    // Settings the harness promises: fsync left on, room for a few dozen clients.
    let fsync: String = client.query_one("SHOW fsync", &[]).unwrap().get(0);
    assert_eq!(fsync, "on");
    let connections: String = client
        .query_one("SHOW max_connections", &[])
        .unwrap()
        .get(0);
    assert!(connections.parse::<u32>().unwrap() >= 50, "{connections}");
    assert!(cluster.log().contains("ready to accept connections"));
}

#[test]
fn refuses_a_connection_without_the_password_or_with_a_wrong_one() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    assert_eq!(
        cluster.url_without_password(),
        format!("postgres://tlslab@127.0.0.1:{}/tlslab", cluster.port())
    );
    // The server asks for a password (trust would let this in) and the client has none.
    let error = Client::connect(&cluster.url_without_password(), NoTls)
        .err()
        .expect("refused without a password");
    assert!(
        format!("{error:?}").contains("password missing"),
        "{error:?}"
    );

    let wrong = cluster
        .url()
        .replace(cluster.password(), "not-the-password");
    let error = Client::connect(&wrong, NoTls)
        .err()
        .expect("refused with a wrong password");
    assert_eq!(error.code(), Some(&SqlState::INVALID_PASSWORD), "{error}");

    // The unix socket asks the tlslab role for its password too.
    let socket = format!(
        "host={} port={} user=tlslab dbname=tlslab",
        cluster.socket_directory().display(),
        cluster.port()
    );
    let error = Client::connect(&socket, NoTls)
        .err()
        .expect("refused on the socket without a password");
    assert!(
        format!("{error:?}").contains("password missing"),
        "{error:?}"
    );
    assert_eq!(
        cluster.socket_url(),
        format!(
            "postgres://tlslab:{}@/tlslab?host={}&port={}",
            cluster.password(),
            cluster.socket_directory().display(),
            cluster.port()
        )
    );
    let mut client = Client::connect(&cluster.socket_url(), NoTls).expect("connects on the socket");
    let address: Option<String> = client
        .query_one("SELECT inet_client_addr()::text", &[])
        .unwrap()
        .get(0);
    assert_eq!(address, None, "a unix socket has no client address");
}

#[test]
fn create_database_gives_each_test_a_fresh_database_of_its_own() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let first = cluster.create_database("first_test");
    let second = cluster.create_database("second_test");
    assert_eq!(
        first,
        format!(
            "postgres://tlslab:{}@127.0.0.1:{}/first_test",
            cluster.password(),
            cluster.port()
        )
    );
    let mut client = Client::connect(&first, NoTls).unwrap();
    let owner: String = client
        .query_one(
            "SELECT pg_get_userbyid(datdba)::text FROM pg_database \
             WHERE datname = current_database()",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(owner, "tlslab");
    client
        .batch_execute("CREATE TABLE samples (id bigint)")
        .unwrap();
    let mut other = Client::connect(&second, NoTls).unwrap();
    let tables: i64 = other
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename = 'samples'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        tables, 0,
        "the second database does not see the first's table"
    );
}

#[test]
fn survives_an_immediate_stop_and_starts_again_on_the_same_port_and_data() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let port = cluster.port();
    let mut client = Client::connect(&cluster.url(), NoTls).unwrap();
    client
        .batch_execute("CREATE TABLE kept (value text); INSERT INTO kept VALUES ('committed');")
        .unwrap();

    cluster.stop_immediately();
    assert!(
        client.query_one("SELECT 1", &[]).is_err(),
        "the open connection is gone"
    );
    assert!(
        Client::connect(&cluster.url(), NoTls).is_err(),
        "nothing listens while stopped"
    );

    cluster.start_again();
    assert_eq!(cluster.port(), port);
    let mut client = Client::connect(&cluster.url(), NoTls).expect("connects again");
    let value: String = client
        .query_one("SELECT value FROM kept", &[])
        .unwrap()
        .get(0);
    assert_eq!(value, "committed", "committed rows survive the crash");
    assert!(cluster
        .log()
        .contains("received immediate shutdown request"));
}

#[test]
fn dropping_stops_the_server_and_removes_its_directory_even_after_a_panic() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let (directory, port) = (cluster.socket_directory().to_owned(), cluster.port());
    drop(cluster);
    assert_gone(&directory, port);

    let (sender, receiver) = std::sync::mpsc::channel();
    let test = std::thread::spawn(move || {
        let cluster = Cluster::start().unwrap();
        sender
            .send((cluster.socket_directory().to_owned(), cluster.port()))
            .unwrap();
        panic!("a failing test, on purpose");
    });
    assert!(test.join().is_err(), "the thread panicked");
    let (directory, port) = receiver.recv().unwrap();
    assert_gone(&directory, port);
}

fn assert_gone(directory: &Path, port: u16) {
    assert!(!directory.exists(), "{} removed", directory.display());
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens on {port}"
    );
}

#[test]
fn tls_cluster_serves_the_lab_certificate_and_refuses_plain_connections() {
    let lab = LabCertificates::make("tls_cluster", &["localhost", "127.0.0.1"]);
    let Some(cluster) = Cluster::start_with_tls(&lab.server_certificate, &lab.server_key) else {
        return;
    };
    let tls_url = format!("{}?sslmode=require", cluster.url());
    let mut client = Client::connect(&tls_url, connector(&lab.authority))
        .expect("connects over TLS, the server's certificate verified by the lab's CA");
    let row = client
        .query_one(
            "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0));
    assert!(row.get::<_, String>(1).starts_with("TLSv1."));
    // By name too, as sslmode=verify-full checks it.
    let by_name = format!(
        "postgres://tlslab:{}@localhost:{}/tlslab?sslmode=require",
        cluster.password(),
        cluster.port()
    );
    Client::connect(&by_name, connector(&lab.authority)).expect("connects to localhost");

    // Another CA does not vouch for the server: the certificate really is the one given.
    let stranger = LabCertificates::make("tls_stranger", &["localhost"]);
    let error = Client::connect(&tls_url, connector(&stranger.authority))
        .err()
        .expect("refused by a client trusting another CA");
    assert!(format!("{error:?}").contains("UnknownIssuer"), "{error:?}");

    // Plain TCP finds no pg_hba.conf line (hostssl only).
    let plain = format!("{}?sslmode=disable", cluster.url());
    let error = Client::connect(&plain, NoTls)
        .err()
        .expect("plain TCP refused");
    assert_eq!(
        error.code(),
        Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION),
        "{error}"
    );
    let message = error.as_db_error().unwrap().message();
    assert!(message.contains("no encryption"), "{message}");
}

/// A client's TLS: rustls on aws-lc-rs, trusting only `authority`.
fn connector(authority: &CertificateDer<'static>) -> MakeRustlsConnect {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(authority.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    MakeRustlsConnect::new(config)
}

/// A lab CA and a server certificate it signed, made at run time (never committed), with the
/// server's files under Cargo's per-test scratch space.
struct LabCertificates {
    authority: CertificateDer<'static>,
    server_certificate: PathBuf,
    server_key: PathBuf,
}

impl LabCertificates {
    fn make(name: &str, server_names: &[&str]) -> LabCertificates {
        let mut authority = CertificateParams::new(Vec::<String>::new()).unwrap();
        authority.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        authority
            .distinguished_name
            .push(DnType::CommonName, format!("tlslab test CA {name}"));
        authority.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let authority = CertifiedIssuer::self_signed(authority, KeyPair::generate().unwrap())
            .expect("the lab CA");

        let server_names: Vec<String> = server_names.iter().map(|n| n.to_string()).collect();
        let mut server = CertificateParams::new(server_names).unwrap();
        server
            .distinguished_name
            .push(DnType::CommonName, "tlslab test database");
        let server_key = KeyPair::generate().unwrap();
        let server = server.signed_by(&server_key, &authority).unwrap();

        let directory = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("cluster_starts")
            .join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let server_certificate = directory.join("server.crt");
        let key_path = directory.join("server.key");
        std::fs::write(&server_certificate, server.pem()).unwrap();
        let mut key_file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&key_path)
            .unwrap();
        key_file
            .write_all(server_key.serialize_pem().as_bytes())
            .unwrap();
        LabCertificates {
            authority: authority.der().clone(),
            server_certificate,
            server_key: key_path,
        }
    }
}
