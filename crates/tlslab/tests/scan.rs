//! `tlslab scan` against real servers: nginx configured as Mozilla's 5.7 profiles (Debian's
//! nginx on its OpenSSL), and the lab server (rustls). No mocks: every assertion is about
//! what a real server answered.

mod support;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

/// A server child (nginx or the lab server), killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(server: &Server, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", server.port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the server did not listen: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn nginx_binary() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
}

/// A lab chain (leaf and intermediate), its key and its root, made by `tlslab pki`.
struct LabChain {
    chain: String,
    key: String,
    root: String,
}

/// The lab chain of `profile` (`ecdsa-p256`, `rsa-2048`).
fn lab_chain(profile: &str) -> LabChain {
    let paths = stdout(&tlslab(&["pki", "--cert", profile, "--chain", "2"]));
    let path_of = |name: &str| {
        paths
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {paths}"))
            .to_string()
    };
    LabChain {
        chain: path_of("chain"),
        key: path_of("key"),
        root: path_of("root"),
    }
}

/// nginx with `tls` (the ssl_* lines of a Mozilla profile) in the foreground on a free port.
fn start_nginx(binary: &Path, name: &str, tls: &str) -> Server {
    let dir = scratch(name);
    let LabChain { chain, key, .. } = lab_chain("ecdsa-p256");
    let port = closed_port();
    let dir_text = dir.display();
    let config = format!(
        "daemon off; master_process off; worker_processes 1; pid {dir_text}/nginx.pid;
error_log {dir_text}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir_text}/body; proxy_temp_path {dir_text}/proxy;
  fastcgi_temp_path {dir_text}/fastcgi; uwsgi_temp_path {dir_text}/uwsgi; scgi_temp_path {dir_text}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {chain};
    ssl_certificate_key {key};
    {tls}
    add_header Strict-Transport-Security \"max-age=63072000\" always;
    location / {{ return 200 \"ok\\n\"; }}
  }}
}}
"
    );
    let config_path = dir.join("nginx.conf");
    std::fs::write(&config_path, config).unwrap();
    let child = Command::new(binary)
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
    let server = Server { child, port };
    wait_for(&server, &dir.join("error.log"));
    server
}

/// Mozilla's intermediate 5.7 for nginx (ssl-config.mozilla.org), with an ECDSA certificate.
const INTERMEDIATE_5_7: &str = "ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ecdh_curve X25519:prime256v1:secp384r1;
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305;
    ssl_prefer_server_ciphers off;";

/// Mozilla's modern 5.7 for nginx: TLS 1.3 only.
const MODERN_5_7: &str = "ssl_protocols TLSv1.3;
    ssl_ecdh_curve X25519:prime256v1:secp384r1;
    ssl_prefer_server_ciphers off;";

/// `tlslab scan --json` of one target; its one report.
fn scan_json(port: u16) -> Value {
    scan_json_with(port, &[])
}

/// `tlslab scan --json` of one target with `extra` arguments; its one report.
fn scan_json_with(port: u16, extra: &[&str]) -> Value {
    let target = format!("127.0.0.1:{port}");
    let mut args = vec!["scan", &target, "--sni", "localhost", "--json"];
    args.extend_from_slice(extra);
    let text = tlslab_succeeds(&args);
    let reports: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{text}"));
    assert_eq!(reports.as_array().map(Vec::len), Some(1), "{reports}");
    reports[0].clone()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|item| item.as_str().unwrap().to_string())
        .collect()
}

fn versions(report: &Value) -> Vec<String> {
    report["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|version| version["version"].as_str().unwrap().to_string())
        .collect()
}

fn suites(report: &Value, version: &str) -> (Vec<String>, String) {
    let found = report["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|candidate| candidate["version"] == version)
        .unwrap_or_else(|| panic!("no {version} in {report}"));
    (
        strings(&found["suites"]),
        found["order"].as_str().unwrap().to_string(),
    )
}

fn mozilla<'a>(report: &'a Value, guideline: &str, level: &str) -> &'a Value {
    report["mozilla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|result| result["guideline"] == guideline && result["level"] == level)
        .unwrap_or_else(|| panic!("no {guideline} {level} in {report}"))
}

#[test]
fn nginx_as_mozilla_intermediate_and_modern_5_7() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let nginx = start_nginx(&binary, "scan-intermediate", INTERMEDIATE_5_7);
    let report = scan_json(nginx.port);
    assert_eq!(versions(&report), ["TLS 1.3", "TLS 1.2"], "{report}");
    // The RSA and DHE suites of the profile cannot be negotiated with an ECDSA key; the
    // server follows the client, who offered them by code point.
    assert_eq!(
        suites(&report, "TLS 1.2"),
        (
            vec![
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_string(),
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384".into(),
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256".into(),
            ],
            "client".into()
        )
    );
    assert_eq!(
        suites(&report, "TLS 1.3"),
        (
            vec![
                "TLS_AES_128_GCM_SHA256".to_string(),
                "TLS_AES_256_GCM_SHA384".into(),
                "TLS_CHACHA20_POLY1305_SHA256".into(),
            ],
            "client".into()
        )
    );
    assert_eq!(
        strings(&report["groups_tls13"]["groups"]),
        ["x25519", "secp256r1", "secp384r1"]
    );
    assert_eq!(
        strings(&report["groups_tls12"]["groups"]),
        ["x25519", "secp256r1", "secp384r1"]
    );
    assert_eq!(strings(&report["alpn"]), ["h2", "http/1.1"]);
    let intermediate = mozilla(&report, "5.7", "intermediate");
    assert_eq!(intermediate["matches"], true, "{intermediate}");
    // The lab certificate's 20 years are the issuer's business, reported apart.
    assert!(intermediate["certificate_notes"][0]
        .as_str()
        .unwrap()
        .contains("lifespan"));
    let modern = mozilla(&report, "5.7", "modern");
    assert_eq!(modern["matches"], false);
    assert_eq!(strings(&modern["changes"]), ["disable TLS 1.2"]);
    // 6.0 wants X25519MLKEM768, which nginx's OpenSSL 3.0 lacks.
    let six = mozilla(&report, "6.0", "intermediate");
    assert!(strings(&six["changes"]).contains(&"add groups x25519mlkem768".to_string()));
    let certificates = &report["certificates"];
    assert_eq!(certificates["chain"].as_array().unwrap().len(), 2);
    assert_eq!(certificates["chain"][0]["key"], "ECDSA P-256");
    assert_eq!(certificates["name_matches"], true);
    assert_eq!(certificates["chain_in_order"], true);
    assert_eq!(certificates["hsts"], "max-age=63072000");
    // A lab root no system trusts: T, and A+ once trust is set aside (HSTS two years).
    assert_eq!(report["grade"]["letter"], "T");
    assert_eq!(report["grade"]["letter_if_trusted"], "A+");
    assert!(strings(&report["grade"]["reasons"])
        .iter()
        .any(|reason| reason.starts_with("T: the chain is not trusted by the system roots")));
    // The same server judged by the lab root (--ca): trusted, and the grade is its own.
    let root = lab_chain("ecdsa-p256").root;
    let trusted = scan_json_with(nginx.port, &["--ca", &root]);
    assert_eq!(trusted["certificates"]["trusted"], true, "{trusted}");
    assert_eq!(
        trusted["certificates"]["trusted_by"],
        format!("--ca {root}").as_str()
    );
    assert_eq!(trusted["grade"]["letter"], "A+", "{}", trusted["grade"]);
    let connections = report["connections"].as_u64().unwrap();
    assert!(
        (10..=60).contains(&connections),
        "{connections} connections"
    );
    drop(nginx);

    let nginx = start_nginx(&binary, "scan-modern", MODERN_5_7);
    let report = scan_json(nginx.port);
    assert_eq!(versions(&report), ["TLS 1.3"], "{report}");
    assert!(report["groups_tls12"].is_null());
    // TLS 1.3 encrypts the ALPN choice: found by completed rustls handshakes.
    assert_eq!(strings(&report["alpn"]), ["h2", "http/1.1"], "{report}");
    assert_eq!(
        strings(&report["groups_tls13"]["groups"]),
        ["x25519", "secp256r1", "secp384r1"]
    );
    let modern = mozilla(&report, "5.7", "modern");
    assert_eq!(modern["matches"], true, "{modern}");
    // A TLS 1.3-only server's chain comes from the rustls handshake.
    assert_eq!(report["certificates"]["source"], "TLS 1.3 (rustls)");
    assert_eq!(report["certificates"]["chain"].as_array().unwrap().len(), 2);
    let intermediate = mozilla(&report, "5.7", "intermediate");
    assert_eq!(strings(&intermediate["changes"]), ["enable TLS 1.2"]);
}

#[test]
fn nginx_server_order_is_found_exactly() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let tls = "ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ecdh_curve secp384r1:X25519:prime256v1;
    ssl_ciphers ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES128-GCM-SHA256;
    ssl_conf_command Ciphersuites TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256;
    ssl_prefer_server_ciphers on;";
    let nginx = start_nginx(&binary, "scan-server-order", tls);
    let report = scan_json(nginx.port);
    assert_eq!(
        suites(&report, "TLS 1.2"),
        (
            vec![
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256".to_string(),
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384".into(),
                "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA".into(),
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into(),
            ],
            "server".into()
        ),
        "{report}"
    );
    assert_eq!(
        suites(&report, "TLS 1.3"),
        (
            vec![
                "TLS_CHACHA20_POLY1305_SHA256".to_string(),
                "TLS_AES_128_GCM_SHA256".into(),
            ],
            "server".into()
        )
    );
    assert_eq!(
        strings(&report["groups_tls13"]["groups"]),
        ["secp384r1", "x25519", "secp256r1"]
    );
    assert_eq!(report["groups_tls13"]["order"], "server");
    let intermediate = mozilla(&report, "5.7", "intermediate");
    // The profile's third TLS 1.3 suite is missing, and the CBC suite is not in it.
    assert_eq!(
        strings(&intermediate["changes"]),
        [
            "TLS 1.3: add suites TLS_AES_256_GCM_SHA384",
            "TLS 1.2: remove suites TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"
        ]
    );
}

#[test]
fn the_lab_server_offers_post_quantum_groups() {
    let port = closed_port();
    let listen = format!("127.0.0.1:{port}");
    let dir = scratch("scan-lab");
    let log = dir.join("serve.log");
    let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["serve", "--listen", &listen])
        .env("TLSLAB_PKI_DIR", pki_dir())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("the lab server starts");
    let server = Server { child, port };
    wait_for(&server, &log);
    let report = scan_json(server.port);
    assert_eq!(versions(&report), ["TLS 1.3", "TLS 1.2"], "{report}");
    let groups = strings(&report["groups_tls13"]["groups"]);
    assert!(groups.contains(&"x25519mlkem768".to_string()), "{groups:?}");
    assert!(groups.contains(&"x25519".to_string()), "{groups:?}");
    assert!(report["grade"]["notes"][0]
        .as_str()
        .unwrap()
        .contains("not weighed by the guide (offered: yes)"));
    assert!(report["probe_errors"].as_array().unwrap().is_empty());
}

#[test]
fn a_closed_port_is_an_environment_error() {
    let target = format!("127.0.0.1:{}", closed_port());
    let output = tlslab(&["scan", &target, "--timeout", "2s"]);
    assert_user_error(&output, 3, "connection refused");
    let output = tlslab(&["scan", "127.0.0.1:notaport"]);
    assert_user_error(&output, 2, "HOST[:PORT]");
    // A --ca file without a certificate would make every server untrusted: refused first.
    let dir = scratch("scan-bad-ca");
    let not_pem = dir.join("not.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let output = tlslab(&["scan", &target, "--ca", not_pem.to_str().unwrap()]);
    assert_user_error(&output, 2, "no CERTIFICATE in it");
    let output = tlslab(&["scan", &target, "--ca", "/nonexistent/root.pem"]);
    assert_user_error(&output, 2, "--ca /nonexistent/root.pem");
}

#[test]
fn a_plain_text_port_is_not_tls() {
    // A server that answers every connection with an HTTP error, as a plain port does.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
            );
        }
    });
    let output = tlslab(&["scan", &format!("127.0.0.1:{port}")]);
    assert_user_error(&output, 3, "does not speak TLS");
}
