//! End-to-end against a real nginx (Debian package) serving a lab certificate.

mod support;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

fn nginx_binary() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
}

/// An nginx child serving TLS 1.2 and 1.3 on a free loopback port; killed on drop.
struct Nginx {
    child: Child,
    port: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An nginx configuration in `dir` serving TLS 1.2 and 1.3 on `listen`, in the foreground.
fn nginx_config(dir: &Path, listen: &str, chain: &str, key: &str) -> PathBuf {
    let dir_text = dir.display();
    let config = format!(
        "daemon off; master_process off; worker_processes 1; pid {dir_text}/nginx.pid;
error_log {dir_text}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  # A kept connection closes after 10 requests: keep-alive clients must open another.
  keepalive_requests 10;
  client_body_temp_path {dir_text}/body; proxy_temp_path {dir_text}/proxy;
  fastcgi_temp_path {dir_text}/fastcgi; uwsgi_temp_path {dir_text}/uwsgi; scgi_temp_path {dir_text}/scgi;
  server {{
    listen {listen} ssl http2;
    ssl_certificate {chain};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:tlslab:1m;
    ssl_session_tickets on;
    ssl_early_data on;
    location / {{ return 200 \"ok\\n\"; }}
  }}
}}
"
    );
    let config_path = dir.join("nginx.conf");
    std::fs::write(&config_path, config).unwrap();
    config_path
}

fn start_nginx(binary: &Path, dir: &Path, chain: &str, key: &str) -> Nginx {
    let port = closed_port();
    let config_path = nginx_config(dir, &format!("127.0.0.1:{port}"), chain, key);
    let child = Command::new(binary)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&config_path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nginx starts");
    let nginx = Nginx { child, port };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nginx did not listen: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    nginx
}

/// The paths `tlslab pki` prints for a lab chain of `chain` certificates of profile `cert`,
/// by name (`chain`, `key`, `root`).
fn lab_paths(cert: &str, chain: &str) -> impl Fn(&str) -> String {
    let paths = stdout(&tlslab(&["pki", "--cert", cert, "--chain", chain]));
    move |name: &str| {
        paths
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {paths}"))
            .to_string()
    }
}

/// A run against the server at `target`, for the lab name `localhost`, trusting `root`.
fn against(dir: &Path, name: &str, target: &str, root: &str) -> Run {
    Run::new(dir, name)
        .option("--target", target)
        .args("--sni localhost")
        .option("--ca", root)
}

#[test]
fn nginx_serves_tls12_and_tls13_through_target() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx");
    let path_of = lab_paths("ecdsa-p256", "2");
    let nginx = start_nginx(&binary, &dir, &path_of("chain"), &path_of("key"));
    let target = format!("127.0.0.1:{}", nginx.port);
    let run = against(&dir, "nginx", &target, &path_of("root"))
        .args("--tls 1.2,1.3 --client-backend rustls,openssl -n 50 -c 2 --json")
        .succeeds();
    let summary = run.json();
    // Both clients, both versions.
    assert_eq!(summary["configs"].as_array().unwrap().len(), 4, "{summary}");
    for config in summary["configs"].as_array().unwrap() {
        assert_eq!(config["ok"], 50, "{config}");
        // An external target has no server CPU figure: tlslab does not guess.
        assert!(config["server_cpu_per_handshake_ms"].is_null());
    }
    let mismatched = count_samples(&run.db, "s.version != c.version OR s.cert_verify_start IS NULL OR s.\"group\" IS NOT 'x25519' OR c.server_backend IS NOT NULL");
    assert_eq!(mismatched, 0);
    let openssl = count_samples(&run.db, "c.client_backend = 'openssl' AND s.outcome = 'ok' AND s.server_hello_received IS NOT NULL AND s.client_finished_sent IS NOT NULL");
    assert!(
        openssl >= 100,
        "the OpenSSL client's samples carry its events: {openssl}"
    );

    // The wrong trust anchor is a certificate error, not a crash.
    let other_root = lab_paths("ed25519", "1")("root");
    let summary = against(&dir, "untrusted", &target, &other_root)
        .args("-n 5 --warmup 0 --json")
        .fails(1, "certificate")
        .json();
    assert_eq!(
        summary["configs"][0]["errors"]["certificate"], 5,
        "{summary}"
    );
}

#[test]
fn keep_alive_load_opens_a_new_connection_when_nginx_closes_one() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx-load");
    let path_of = lab_paths("ecdsa-p256", "1");
    let nginx = start_nginx(&binary, &dir, &path_of("chain"), &path_of("key"));
    let db = dir.join("load.db");
    let url = format!("https://127.0.0.1:{}/", nginx.port);
    let root = path_of("root");
    tlslab_succeeds(&[
        "load",
        &url,
        "--sni",
        "localhost",
        "--ca",
        &root,
        "--client-backend",
        "rustls,openssl",
        "-n",
        "100",
        "-c",
        "2",
        "--warmup",
        "0",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    // nginx ends each connection after 10 requests; every request still got its answer.
    assert_eq!(
        count_samples(&db, "s.outcome = 'ok' AND s.http_status = 200"),
        200
    );
    for backend in ["rustls", "openssl"] {
        let connections = count(
            &db,
            &format!(
                "SELECT COUNT(DISTINCT s.connection) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.client_backend = '{backend}'"
            ),
        );
        assert!(connections >= 10, "{backend}: {connections} connections");
        let most = count(
            &db,
            &format!(
                "SELECT MAX(s.connection_request) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.client_backend = '{backend}'"
            ),
        );
        assert_eq!(most, 10, "{backend}");
    }
}

#[test]
fn both_http_versions_resumption_and_early_data_work_against_nginx() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx-sessions");
    let path_of = lab_paths("ecdsa-p256", "1");
    let nginx = start_nginx(&binary, &dir, &path_of("chain"), &path_of("key"));
    let target = format!("127.0.0.1:{}", nginx.port);
    let Finished { db, .. } = against(&dir, "sessions", &target, &path_of("root"))
        .args("--tls 1.2,1.3 --http 1.1,2 --resume off,tickets,session-id")
        .args("--client-backend rustls,openssl -n 20 --warmup 0")
        .succeeds();
    // nginx answers "ok\n" to every request, over the protocol ALPN chose.
    let wrong = count_samples(
        &db,
        "s.http_status IS NOT 200 OR s.response_bytes IS NOT 3 OR s.alpn IS NOT (CASE c.http WHEN '2' THEN 'h2' ELSE 'http/1.1' END) OR s.first_byte IS NULL",
    );
    assert_eq!(wrong, 0);
    // 8 resuming Configs × 2 clients × 1 agent: every handshake after the agent's first
    // resumes.
    let resumed = count(&db, "SELECT COUNT(*) FROM samples WHERE resumed = 1");
    assert_eq!(resumed, 2 * 8 * 19);

    // 0-RTT: nginx (OpenSSL) accepts the request as early data.
    let Finished { db: early, .. } = against(&dir, "early", &target, &path_of("root"))
        .args("--resume tickets --early-data 300 --client-backend rustls,openssl")
        .args("-n 20 --warmup 0")
        .succeeds();
    let (accepted, attempted): (i64, i64) = row(
        &early,
        "SELECT COALESCE(SUM(early_data_accepted = 1), 0), COUNT(early_data_accepted) FROM samples WHERE http_status = 200",
    );
    assert_eq!((accepted, attempted), (2 * 19, 2 * 19));
}

#[test]
fn nginx_behind_an_emulated_network_through_server_cmd() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    require_emulation!();
    let dir = scratch("nginx-emulated");
    let path_of = lab_paths("ecdsa-p256", "1");
    let port = closed_port();
    // nginx runs inside the server namespace and listens on all of that namespace's addresses.
    let config = nginx_config(&dir, &port.to_string(), &path_of("chain"), &path_of("key"));
    let command = format!(
        "exec {} -e {} -p {} -c {}",
        binary.display(),
        dir.join("error.log").display(),
        dir.display(),
        config.display()
    );
    let summary = against(
        &dir,
        "emulated",
        &format!("127.0.0.1:{port}"),
        &path_of("root"),
    )
    .args("--rtt 20ms")
    .option("--server-cmd", command)
    .args("-n 10 --warmup 1 --json")
    .succeeds()
    .json();
    let config = &summary["configs"][0];
    assert_eq!(config["ok"], 10, "{config}");
    // TCP connect plus one TLS 1.3 round trip, each 20 ms.
    let median = config["handshake_ms"]["median"].as_f64().unwrap();
    assert!(median >= 40.0, "median {median} ms");
    assert_eq!(
        config["network"]["physics"],
        serde_json::Value::Null,
        "{config}"
    );
    // The run stopped the server it started.
    let pid = std::fs::read_to_string(dir.join("nginx.pid")).unwrap_or_default();
    if let Ok(pid) = pid.trim().parse::<u32>() {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "nginx {pid} still runs"
        );
    }
}

#[test]
fn a_self_signed_certificate_made_with_openssl_req_is_trusted_by_both_clients() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx-self-signed");
    // The study's command, the way most labs make a server certificate: CA flag set
    // (OpenSSL's default for `req -x509`), a subject and no subjectAltName.
    let self_signed = |name: &str| {
        let (cert, key) = (
            dir.join(format!("{name}.pem")),
            dir.join(format!("{name}.key")),
        );
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:4096", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .args(["-sha256", "-days", "3650", "-nodes"])
            .args(["-subj", "/C=DE/O=Lab/CN=localhost"])
            .stderr(Stdio::null())
            .status();
        made.is_ok_and(|status| status.success()).then(|| {
            (
                cert.to_str().unwrap().to_string(),
                key.to_str().unwrap().to_string(),
            )
        })
    };
    let (Some((cert, key)), Some((other, _))) = (self_signed("cert"), self_signed("other")) else {
        eprintln!("skipping: the openssl command is not installed (.ci/run installs it)");
        return;
    };
    let nginx = start_nginx(&binary, &dir, &cert, &key);
    let target = format!("127.0.0.1:{}", nginx.port);
    let against = |name: &str, arguments: &str| {
        Run::new(&dir, name)
            .option("--target", &target)
            .args("--warmup 0 --client-backend rustls,openssl --verbose")
            .args(arguments)
    };
    let run = against("self-signed", "--sni localhost --tls 1.2,1.3 -n 5")
        .option("--ca", &cert)
        .succeeds();
    // The summary says what each Config trusted.
    assert_eq!(run.summary.matches("  trust      CA file\n").count(), 4);
    // Trusted as that exact certificate by both clients, the chain still timed as
    // validation and the handshake signature checked.
    assert_eq!(
        count_samples(
            &run.db,
            "s.outcome = 'ok' AND s.cert_verify_end >= s.cert_verify_start"
        ),
        20
    );
    // It still has to name the server.
    let summary = against("wrong-name", "--sni elsewhere.test --tls 1.3 -n 2")
        .option("--ca", &cert)
        .fails(1, "certificate")
        .summary;
    assert!(summary.contains("NotValidForName"), "{summary}");
    assert!(summary.contains("hostname mismatch"), "{summary}");
    // Another self-signed certificate in --ca: refused, saying what the server sent.
    let summary = against("other-certificate", "--sni localhost --tls 1.3 -n 2")
        .option("--ca", &other)
        .fails(1, "certificate")
        .summary;
    assert_eq!(
        summary
            .matches("the server sent 'C=DE, O=Lab, CN=localhost'")
            .count(),
        2,
        "{summary}"
    );
    // --pin: the right key passes (with --insecure, alone); a wrong one is refused by both.
    let pin = stdout(&tlslab(&["pki", "--pin-of", &cert]));
    let pin = pin.trim();
    assert!(pin.starts_with("sha256//"), "{pin}");
    let run = against("pinned", "--sni localhost --tls 1.2,1.3 -n 3")
        .option("--ca", &cert)
        .option("--pin", pin)
        .succeeds();
    assert_eq!(count_samples(&run.db, "s.outcome = 'ok'"), 12);
    assert_eq!(
        run.summary.matches("  trust      CA file + pin\n").count(),
        4
    );
    let run = against(
        "pinned-insecure",
        "--sni localhost --tls 1.3 -n 2 --insecure",
    )
    .option("--pin", pin)
    .succeeds();
    assert_eq!(
        run.summary.matches("  trust      insecure + pin\n").count(),
        2
    );
    let wrong = format!("sha256//{}=", "A".repeat(43));
    let summary = against("wrong-pin", "--sni localhost --tls 1.3 -n 2")
        .option("--ca", &cert)
        .option("--pin", &wrong)
        .fails(1, "certificate")
        .summary;
    assert_eq!(
        summary.matches("public key is not pinned").count(),
        2,
        "{summary}"
    );
}

/// A certificate for `localhost` valid from `dates.0` to `dates.1` (OpenSSL's
/// YYYYMMDDHHMMSSZ) with `extension`, issued by the lab chain's intermediate with
/// `openssl ca` (OpenSSL 3.0's `req` and `x509` cannot set past or future dates):
/// `(certificate with the intermediate after it, key)` paths.
fn issued_by_intermediate(
    dir: &Path,
    path_of: &impl Fn(&str) -> String,
    name: &str,
    dates: (&str, &str),
    extension: &str,
) -> (String, String) {
    let chain = std::fs::read_to_string(path_of("chain")).unwrap();
    let marker = "-----END CERTIFICATE-----";
    let end = chain.find(marker).unwrap() + marker.len();
    let intermediate = chain[end..].trim_start();
    let intermediate_key = Path::new(&path_of("key")).with_file_name("intermediate1.key");
    let ca = dir.join("ca");
    std::fs::create_dir_all(&ca).unwrap();
    if !ca.join("ca.cnf").exists() {
        std::fs::write(ca.join("intermediate.pem"), intermediate).unwrap();
        std::fs::write(ca.join("index.txt"), "").unwrap();
        std::fs::write(ca.join("serial"), "01\n").unwrap();
        // The extensions of the request are the certificate's: `ca` adds none of its own.
        std::fs::write(
            ca.join("ca.cnf"),
            "[ca]\ndefault_ca = lab\n[lab]\ndatabase = index.txt\nnew_certs_dir = .\n\
             serial = serial\ndefault_md = sha256\npolicy = anything\ncopy_extensions = copy\n\
             unique_subject = no\n[anything]\ncommonName = supplied\n",
        )
        .unwrap();
    }
    let (key, request, certificate) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
    );
    let requested = openssl_in(
        &ca,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/O=tlslab/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-addext",
            extension,
            "-keyout",
            &key,
            "-out",
            &request,
        ],
    );
    let signed = requested
        && openssl_in(
            &ca,
            &[
                "ca",
                "-batch",
                "-notext",
                "-config",
                "ca.cnf",
                "-cert",
                "intermediate.pem",
                "-keyfile",
                intermediate_key.to_str().unwrap(),
                "-startdate",
                dates.0,
                "-enddate",
                dates.1,
                "-in",
                &request,
                "-out",
                &certificate,
            ],
        );
    assert!(signed, "openssl ca could not issue {name}");
    // nginx sends the file's certificates in order: the server's, then its issuer.
    let leaf = std::fs::read_to_string(ca.join(&certificate)).unwrap();
    let served = ca.join(format!("{name}-chain.pem"));
    std::fs::write(&served, format!("{leaf}{intermediate}")).unwrap();
    (
        served.display().to_string(),
        ca.join(key).display().to_string(),
    )
}

/// A TLS-terminating proxy that gives up: it accepts each connection, reads the ClientHello
/// and resets the connection (SO_LINGER 0, then close). Returns its port.
fn resetting_proxy() -> u16 {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut hello = [0u8; 4096];
            let _ = stream.read(&mut hello);
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: a live socket, and a linger struct of the size given.
            unsafe {
                libc::setsockopt(
                    stream.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
            // Dropped with linger 0: the kernel sends RST instead of FIN.
        }
    });
    port
}

/// nginx with one server per way a real server commonly fails a client, on free ports:
/// (name, port).
fn misconfigured_nginx(binary: &Path, dir: &Path) -> (Nginx, Vec<(&'static str, u16)>) {
    let path_of = lab_paths("ecdsa-p256", "2");
    // The lab chain's leaf alone: the intermediate is missing.
    let chain = std::fs::read_to_string(path_of("chain")).unwrap();
    let end = chain.find("-----END CERTIFICATE-----").unwrap() + "-----END CERTIFICATE-----".len();
    let leaf = dir.join("leaf-only.pem");
    std::fs::write(&leaf, format!("{}\n", &chain[..end])).unwrap();
    let (full, key) = (path_of("chain"), path_of("key"));
    let leaf = leaf.display();
    let ports: Vec<(&'static str, u16)> = [
        "tls12-only",
        "plain-http",
        "chacha-only",
        "leaf-only",
        "self-signed",
        "secp384r1-only",
        "expired",
        "not-yet-valid",
        "ca-as-leaf",
    ]
    .into_iter()
    .map(|name| (name, closed_port()))
    .collect();
    let port = |name: &str| ports.iter().find(|(n, _)| *n == name).unwrap().1;
    let self_signed = dir.join("self-signed.pem");
    let self_signed_key = dir.join("self-signed.key");
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "30", "-subj", "/CN=localhost", "-keyout"])
        .arg(&self_signed_key)
        .arg("-out")
        .arg(&self_signed)
        .stderr(Stdio::null())
        .status();
    assert!(made.is_ok_and(|status| status.success()), "openssl req");
    // Certificates for localhost issued by the lab chain's intermediate (so --ca root
    // trusts their issuer) with the dates and flags each case needs.
    let issued = |name: &str, dates: (&str, &str), extension: &str| {
        issued_by_intermediate(dir, &path_of, name, dates, extension)
    };
    let (expired, expired_key) = issued(
        "expired",
        ("20200101000000Z", "20210101000000Z"),
        "basicConstraints=critical,CA:FALSE",
    );
    let (future, future_key) = issued(
        "not-yet-valid",
        ("20990101000000Z", "21000101000000Z"),
        "basicConstraints=critical,CA:FALSE",
    );
    // A CA certificate (basicConstraints CA:TRUE) that names the server, served as its own.
    let (ca_leaf, ca_leaf_key) = issued(
        "ca-as-leaf",
        ("20250101000000Z", "20450101000000Z"),
        "basicConstraints=critical,CA:TRUE",
    );
    let dir_text = dir.display();
    let server = |name: &str, tls: &str| {
        format!(
            "server {{ listen 127.0.0.1:{} {tls} location / {{ return 200 \"ok\\n\"; }} }}\n",
            port(name)
        )
    };
    let config = format!(
        "daemon off; master_process off; worker_processes 1; pid {dir_text}/nginx.pid;
error_log {dir_text}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir_text}/body; proxy_temp_path {dir_text}/proxy;
  fastcgi_temp_path {dir_text}/fastcgi; uwsgi_temp_path {dir_text}/uwsgi; scgi_temp_path {dir_text}/scgi;
  {}{}{}{}{}{}{}{}{}}}
",
        server(
            "tls12-only",
            &format!("ssl; ssl_certificate {full}; ssl_certificate_key {key}; ssl_protocols TLSv1.2;")
        ),
        server("plain-http", ";"),
        server(
            "chacha-only",
            &format!(
                "ssl; ssl_certificate {full}; ssl_certificate_key {key}; ssl_protocols TLSv1.2; \
                 ssl_ciphers ECDHE-ECDSA-CHACHA20-POLY1305;"
            )
        ),
        server(
            "leaf-only",
            &format!(
                "ssl; ssl_certificate {leaf}; ssl_certificate_key {key}; \
                 ssl_protocols TLSv1.2 TLSv1.3;"
            )
        ),
        server(
            "self-signed",
            &format!(
                "ssl; ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.2 TLSv1.3;",
                self_signed.display(),
                self_signed_key.display()
            )
        ),
        // The client offers x25519 alone in TLS 1.3; this server takes P-384 only.
        server(
            "secp384r1-only",
            &format!(
                "ssl; ssl_certificate {full}; ssl_certificate_key {key}; \
                 ssl_protocols TLSv1.3; ssl_ecdh_curve secp384r1;"
            )
        ),
        server(
            "expired",
            &format!(
                "ssl; ssl_certificate {expired}; ssl_certificate_key {expired_key}; \
                 ssl_protocols TLSv1.2 TLSv1.3;"
            )
        ),
        server(
            "not-yet-valid",
            &format!(
                "ssl; ssl_certificate {future}; ssl_certificate_key {future_key}; \
                 ssl_protocols TLSv1.2 TLSv1.3;"
            )
        ),
        server(
            "ca-as-leaf",
            &format!(
                "ssl; ssl_certificate {ca_leaf}; ssl_certificate_key {ca_leaf_key}; \
                 ssl_protocols TLSv1.2 TLSv1.3;"
            )
        ),
    );
    let config_path = dir.join("nginx.conf");
    std::fs::write(&config_path, config).unwrap();
    let child = Command::new(binary)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&config_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    let nginx = Nginx {
        child,
        port: port("plain-http"),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    for (_, port) in &ports {
        while TcpStream::connect(("127.0.0.1", *port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    (nginx, ports)
}

#[test]
fn failures_are_explained_in_the_servers_terms() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx-diagnoses");
    let (_nginx, ports) = misconfigured_nginx(&binary, &dir);
    let root = lab_paths("ecdsa-p256", "2")("root");
    // (server, flags, what the hint must say), for both clients.
    // (server, flags, the class stored, what the hint must say), for both clients.
    let cases: [(&str, &str, &str, &[&str]); 10] = [
        (
            "tls12-only",
            "--tls 1.3",
            "alert",
            &["does not enable TLS 1.3"],
        ),
        (
            "plain-http",
            "--tls 1.3",
            "not_tls",
            &["does not speak TLS"],
        ),
        (
            "chacha-only",
            "--tls 1.2 --suite aes128gcm",
            "alert",
            &["shares no cipher suite", "ssl_ciphers"],
        ),
        (
            "leaf-only",
            "--tls 1.3",
            "certificate",
            // The missing intermediate, by name.
            &[
                "incomplete chain",
                "'O=tlslab, CN=tlslab intermediate 1 (ecdsa-p256)'",
            ],
        ),
        (
            "self-signed",
            "--tls 1.3 --no-ca",
            "certificate",
            &["self-signed"],
        ),
        (
            "tls12-only",
            "--tls 1.2 --sni elsewhere.test",
            "certificate",
            &["does not name", "it names localhost, 127.0.0.1, ::1"],
        ),
        (
            "secp384r1-only",
            "--tls 1.3 --group x25519",
            "alert",
            &[
                "no key-exchange group",
                "the group x25519",
                "ssl_ecdh_curve",
            ],
        ),
        (
            "expired",
            "--tls 1.3",
            "certificate",
            &[
                "expired on 2021-01-01 00:00:00 UTC",
                "this machine's clock read 20",
            ],
        ),
        (
            "not-yet-valid",
            "--tls 1.2",
            "certificate",
            &[
                "not valid before 2099-01-01 00:00:00 UTC",
                "this machine's clock read 20",
            ],
        ),
        (
            "proxy-reset",
            "--tls 1.3",
            "reset",
            &["reset the connection", "proxy"],
        ),
    ];
    let proxy = resetting_proxy();
    for (server, flags, class, causes) in cases {
        let port = ports
            .iter()
            .find(|(name, _)| *name == server)
            .map_or(proxy, |(_, port)| *port);
        let mut run = Run::new(&dir, &format!("{server}-{}", flags.replace([' ', '.'], "")))
            .option("--target", format!("127.0.0.1:{port}"))
            .args("--client-backend rustls,openssl -n 2 --warmup 0 --verbose")
            .args(&flags.replace("--no-ca", ""));
        if !flags.contains("--sni") {
            run = run.args("--sni localhost");
        }
        if !flags.contains("--no-ca") {
            run = run.option("--ca", &root);
        }
        // Exit 1 (the run finished, failures above --max-error-rate), the hint on stderr.
        let finished = run.fails(1, causes[0]);
        // Each client's failure explained, each explanation naming the cause.
        let whys: Vec<&str> = finished
            .summary
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("why: "))
            .collect();
        assert_eq!(whys.len(), 2, "{server}: {}", finished.summary);
        for cause in causes {
            assert!(
                whys.iter().all(|why| why.contains(cause)),
                "{server}: '{cause}' not in every why: line: {}",
                finished.summary
            );
            assert!(
                finished.stderr.contains(cause),
                "{server}: {}",
                finished.stderr
            );
        }
        assert_eq!(
            count_samples(
                &finished.db,
                &format!("s.outcome = 'error' AND s.error = '{class}'")
            ),
            4,
            "{server}: {}",
            finished.summary
        );
    }

    // A CA certificate (CA:TRUE) served as the server's own: rustls refuses it as an end
    // entity, OpenSSL (and curl) accept it.
    let port = ports
        .iter()
        .find(|(name, _)| *name == "ca-as-leaf")
        .unwrap()
        .1;
    let finished = against(&dir, "ca-as-leaf", &format!("127.0.0.1:{port}"), &root)
        .args("--client-backend rustls,openssl -n 2 --warmup 0 --tls 1.3")
        .fails(1, "is a CA certificate");
    assert_eq!(
        finished
            .summary
            .matches("why: the server's certificate is a CA certificate")
            .count(),
        1,
        "{}",
        finished.summary
    );
    assert!(finished.summary.contains("--pin"), "{}", finished.summary);
    assert_eq!(
        count_samples(
            &finished.db,
            "(c.client_backend = 'rustls' AND s.error = 'certificate') \
             OR (c.client_backend = 'openssl' AND s.outcome = 'ok')"
        ),
        4,
        "{}",
        finished.summary
    );
}

/// Runs the openssl command line in `dir`; false when it is missing or fails.
fn openssl_in(dir: &Path, arguments: &[&str]) -> bool {
    Command::new("openssl")
        .current_dir(dir)
        .args(arguments)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A client CA and client certificates it issued, one per key type, in `dir` (made here, not
/// committed): `(certificate, key)` paths by name, each key in another PEM form.
fn client_certificates(dir: &Path) -> Option<Vec<(&'static str, String, String)>> {
    let made = openssl_in(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "30",
            "-subj",
            "/CN=tlslab test client CA",
            "-keyout",
            "client-ca.key",
            "-out",
            "client-ca.pem",
        ],
    );
    if !made {
        return None;
    }
    let issue = |name: &str, key: &[&str]| {
        let mut arguments = vec![
            "req",
            "-x509",
            "-CA",
            "client-ca.pem",
            "-CAkey",
            "client-ca.key",
            "-newkey",
        ];
        arguments.extend_from_slice(key);
        let (key_file, cert_file) = (format!("{name}.pkcs8.key"), format!("{name}.pem"));
        arguments.extend_from_slice(&[
            "-nodes",
            "-days",
            "30",
            "-subj",
            "/CN=tlslab client",
            "-addext",
            "extendedKeyUsage=clientAuth",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
            "-keyout",
            &key_file,
            "-out",
            &cert_file,
        ]);
        openssl_in(dir, &arguments)
    };
    let path = |file: &str| dir.join(file).display().to_string();
    let ready = issue("ecdsa", &["ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
        && issue("rsa", &["rsa:2048"])
        && issue("ed25519", &["ed25519"])
        // SEC1 (EC PRIVATE KEY) and PKCS#1 (RSA PRIVATE KEY), as older tools write keys.
        && openssl_in(dir, &["ec", "-in", "ecdsa.pkcs8.key", "-out", "ecdsa.sec1.key"])
        && openssl_in(
            dir,
            &["rsa", "-in", "rsa.pkcs8.key", "-traditional", "-out", "rsa.pkcs1.key"],
        );
    ready.then(|| {
        vec![
            ("ecdsa", path("ecdsa.pem"), path("ecdsa.sec1.key")),
            ("rsa", path("rsa.pem"), path("rsa.pkcs1.key")),
            ("ed25519", path("ed25519.pem"), path("ed25519.pkcs8.key")),
        ]
    })
}

#[test]
fn nginx_that_requires_client_certificates_accepts_tlslabs_and_a_run_without_one_is_told_why() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx-mtls");
    let Some(clients) = client_certificates(&dir) else {
        eprintln!("skipping: the openssl command (3.0 or later) is not installed");
        return;
    };
    let path_of = lab_paths("ecdsa-p256", "2");
    let (chain, key, root) = (path_of("chain"), path_of("key"), path_of("root"));
    let (verify, require) = (closed_port(), closed_port());
    let dir_text = dir.display();
    // `ssl_verify_client on` alone completes the handshake without a certificate and answers
    // the request with 400; `VerifyMode Require` makes OpenSSL refuse the handshake itself,
    // as servers that require client certificates at the TLS layer do.
    let server = |port: u16, extra: &str| {
        format!(
            "server {{ listen 127.0.0.1:{port} ssl; ssl_certificate {chain}; \
             ssl_certificate_key {key}; ssl_protocols TLSv1.2 TLSv1.3; ssl_verify_client on; \
             ssl_client_certificate {dir_text}/client-ca.pem; {extra} \
             location / {{ return 200 \"ok\\n\"; }} }}\n"
        )
    };
    let config = format!(
        "daemon off; master_process off; worker_processes 1; pid {dir_text}/nginx.pid;
error_log {dir_text}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  log_format verified '$ssl_protocol $ssl_client_verify $status';
  access_log {dir_text}/access.log verified;
  client_body_temp_path {dir_text}/body; proxy_temp_path {dir_text}/proxy;
  fastcgi_temp_path {dir_text}/fastcgi; uwsgi_temp_path {dir_text}/uwsgi; scgi_temp_path {dir_text}/scgi;
  {}{}}}
",
        server(verify, ""),
        server(require, "ssl_conf_command VerifyMode Require;"),
    );
    let config_path = dir.join("nginx.conf");
    std::fs::write(&config_path, config).unwrap();
    let child = Command::new(&binary)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(&config_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    let _nginx = Nginx {
        child,
        port: verify,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in [verify, require] {
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let run = |name: &str, port: u16, arguments: &str| {
        against(&dir, name, &format!("127.0.0.1:{port}"), &root)
            .args("--client-backend rustls,openssl --tls 1.2,1.3 --warmup 0 --http 1.1 --verbose")
            .args(arguments)
    };

    // Every attempt presents the certificate, nginx verifies it and serves the request.
    let (_, cert, key) = &clients[0];
    let finished = run("ecdsa", verify, "-n 20")
        .option("--client-cert", cert)
        .option("--client-key", key)
        .succeeds();
    assert_eq!(
        count_samples(&finished.db, "s.outcome = 'ok' AND s.http_status = 200"),
        80
    );
    assert_eq!(
        finished
            .summary
            .matches("  trust      CA file + client certificate\n")
            .count(),
        4,
        "{}",
        finished.summary
    );
    // RSA (PKCS#1) and Ed25519 (PKCS#8) keys as well, on both clients.
    for (name, cert, key) in &clients[1..] {
        let finished = run(name, require, "-n 2")
            .option("--client-cert", cert)
            .option("--client-key", key)
            .succeeds();
        assert_eq!(
            count_samples(&finished.db, "s.outcome = 'ok' AND s.http_status = 200"),
            8,
            "{name}"
        );
    }
    let log = std::fs::read_to_string(dir.join("access.log")).unwrap();
    assert_eq!(log.lines().count(), 80 + 2 * 8, "{log}");
    assert!(
        log.lines().all(|line| line.ends_with(" SUCCESS 200")),
        "{log}"
    );

    // Without one, `ssl_verify_client on` alone lets the handshake complete and answers each
    // request 400: every attempt fails as a refused client certificate, with the fix, and
    // keeps the status.
    let finished = run("unverified", verify, "-n 2").fails(1, "client certificate");
    assert_eq!(
        count_samples(
            &finished.db,
            "s.outcome = 'error' AND s.error = 'alert' AND s.http_status = 400 \
             AND s.client_certificate = 'asked-none-sent' \
             AND s.error_detail LIKE 'HTTP 400 after a CertificateRequest%none was sent'"
        ),
        8
    );
    assert_eq!(
        finished
            .summary
            .matches("why: the server requires a client certificate and none was sent: pass --client-cert FILE --client-key FILE")
            .count(),
        4,
        "{}",
        finished.summary
    );

    // Without one: TLS 1.2 servers answer handshake_failure, TLS 1.3 ones certificate_required
    // after the client's Finished (read with the response); both clients say why.
    let finished = run("without", require, "-n 2").fails(1, "client certificate");
    assert_eq!(
        finished
            .summary
            .matches("why: the server requires a client certificate and none was sent: pass --client-cert FILE --client-key FILE")
            .count(),
        4,
        "{}",
        finished.summary
    );
    assert_eq!(
        count_samples(
            &finished.db,
            "s.outcome = 'error' AND s.error = 'alert' \
             AND s.error_detail LIKE '%asked for a client certificate and none was sent'"
        ),
        8
    );
}

/// The processes that hold a file under `dir` open (nginx's master and workers all hold
/// its error log): found by the files they hold, so nginx servers of other tests and
/// other users on the machine are not counted.
fn processes_holding(dir: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        let Ok(files) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = files
            .flatten()
            .filter_map(|file| std::fs::read_link(file.path()).ok())
            .any(|target| target.starts_with(dir));
        if holds {
            found.push(pid);
        }
    }
    found
}

/// Kills whatever still holds files in its directory when dropped: a failing test leaves
/// no daemon behind.
struct Leftovers<'a>(&'a Path);

impl Drop for Leftovers<'_> {
    fn drop(&mut self) {
        for pid in processes_holding(self.0) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

#[test]
fn a_server_cmd_that_daemonises_is_stopped_with_its_workers_after_the_run() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx-daemon");
    let _leftovers = Leftovers(&dir);
    let path_of = lab_paths("ecdsa-p256", "1");
    let port = closed_port();
    // No `daemon off;`: nginx forks, its child calls setsid (leaving the process group
    // tlslab started) and the command returns, as most nginx configurations do.
    let dir_text = dir.display();
    let config = dir.join("daemon.conf");
    std::fs::write(
        &config,
        format!(
            "worker_processes 2; pid {dir_text}/nginx.pid;
error_log {dir_text}/error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {dir_text}/body; proxy_temp_path {dir_text}/proxy;
  fastcgi_temp_path {dir_text}/fastcgi; uwsgi_temp_path {dir_text}/uwsgi; scgi_temp_path {dir_text}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {};
    ssl_certificate_key {};
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {{ return 200 \"ok\\n\"; }}
  }}
}}
",
            path_of("chain"),
            path_of("key")
        ),
    )
    .unwrap();
    let command = format!(
        "{} -e {dir_text}/error.log -p {dir_text} -c {}",
        binary.display(),
        config.display()
    );
    let finished = against(
        &dir,
        "daemon",
        &format!("127.0.0.1:{port}"),
        &path_of("root"),
    )
    .option("--server-cmd", command)
    .args("-n 10 --warmup 0 --json")
    .succeeds();
    assert_eq!(
        finished.json()["configs"][0]["ok"],
        10,
        "{}",
        finished.summary
    );
    assert!(
        finished
            .stderr
            .contains("left its server running in the background"),
        "{}",
        finished.stderr
    );
    // Neither the master nor a worker outlives the run: tlslab returns once they are gone.
    let left = processes_holding(&dir);
    assert!(
        left.is_empty(),
        "nginx processes {left:?} still run after the run"
    );
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}
