//! End-to-end against a real nginx (Debian package) serving a lab certificate.

mod common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

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

/// The paths `tlslab pki` prints for an ECDSA P-256 lab chain of `chain` certificates, by
/// name (`chain`, `key`, `root`).
fn lab_paths(chain: &str) -> impl Fn(&str) -> String {
    let paths = stdout(&tlslab(&["pki", "--cert", "ecdsa-p256", "--chain", chain]));
    move |name: &str| {
        paths
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {paths}"))
            .to_string()
    }
}

#[test]
fn nginx_serves_tls12_and_tls13_through_target() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx");
    let path_of = lab_paths("2");
    let nginx = start_nginx(&binary, &dir, &path_of("chain"), &path_of("key"));
    let target = format!("127.0.0.1:{}", nginx.port);
    let db = dir.join("nginx.db");
    let output = tlslab(&[
        "run",
        "--target",
        &target,
        "--sni",
        "localhost",
        "--ca",
        &path_of("root"),
        "--tls",
        "1.2,1.3",
        "--client-backend",
        "rustls,openssl",
        "-n",
        "50",
        "-c",
        "2",
        "--json",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    // Both clients, both versions.
    assert_eq!(summary["configs"].as_array().unwrap().len(), 4, "{summary}");
    for config in summary["configs"].as_array().unwrap() {
        assert_eq!(config["ok"], 50, "{config}");
        // An external target has no server CPU figure: tlslab does not guess.
        assert!(config["server_cpu_per_handshake_ms"].is_null());
    }
    let connection = open(&db);
    let mismatched: i64 = connection
        .query_row("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.version != c.version OR s.cert_verify_start IS NULL OR s.\"group\" IS NOT 'x25519' OR c.server_backend IS NOT NULL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mismatched, 0);
    let openssl: i64 = connection
        .query_row("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.client_backend = 'openssl' AND s.outcome = 'ok' AND s.server_hello_received IS NOT NULL AND s.client_finished_sent IS NOT NULL", [], |r| r.get(0))
        .unwrap();
    assert!(
        openssl >= 100,
        "the OpenSSL client's samples carry its events: {openssl}"
    );

    // The wrong trust anchor is a certificate error, not a crash.
    let other_root = stdout(&tlslab(&["pki", "--cert", "ed25519", "--chain", "1"]));
    let other_root = other_root
        .lines()
        .find_map(|l| l.strip_prefix("root "))
        .unwrap()
        .to_string();
    let output = tlslab(&[
        "run",
        "--target",
        &target,
        "--sni",
        "localhost",
        "--ca",
        &other_root,
        "-n",
        "5",
        "--warmup",
        "0",
        "--json",
        "--out",
        dir.join("untrusted.db").to_str().unwrap(),
    ]);
    assert_user_error(&output, 1, "certificate");
    let summary: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        summary["configs"][0]["errors"]["certificate"], 5,
        "{summary}"
    );
}

#[test]
fn both_http_versions_resumption_and_early_data_work_against_nginx() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let dir = scratch("nginx-sessions");
    let path_of = lab_paths("1");
    let nginx = start_nginx(&binary, &dir, &path_of("chain"), &path_of("key"));
    let target = format!("127.0.0.1:{}", nginx.port);
    let db = dir.join("sessions.db");
    let output = tlslab(&[
        "run",
        "--target",
        &target,
        "--sni",
        "localhost",
        "--ca",
        &path_of("root"),
        "--tls",
        "1.2,1.3",
        "--http",
        "1.1,2",
        "--resume",
        "off,tickets,session-id",
        "--client-backend",
        "rustls,openssl",
        "-n",
        "20",
        "--warmup",
        "0",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let connection = open(&db);
    // nginx answers "ok\n" to every request, over the protocol ALPN chose.
    let wrong: i64 = connection
        .query_row(
            "SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.http_status IS NOT 200 OR s.response_bytes IS NOT 3 OR s.alpn IS NOT (CASE c.http WHEN '2' THEN 'h2' ELSE 'http/1.1' END) OR s.first_byte IS NULL",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(wrong, 0);
    // 8 resuming Configs × 2 clients × 1 agent: every handshake after the agent's first
    // resumes.
    let resumed: i64 = connection
        .query_row(
            "SELECT COUNT(*) FROM samples WHERE resumed = 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(resumed, 2 * 8 * 19);

    // 0-RTT: nginx (OpenSSL) accepts the request as early data.
    let early = dir.join("early.db");
    let output = tlslab(&[
        "run",
        "--target",
        &target,
        "--sni",
        "localhost",
        "--ca",
        &path_of("root"),
        "--resume",
        "tickets",
        "--early-data",
        "300",
        "--client-backend",
        "rustls,openssl",
        "-n",
        "20",
        "--warmup",
        "0",
        "--quiet",
        "--out",
        early.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (accepted, attempted): (i64, i64) = open(&early)
        .query_row(
            "SELECT COALESCE(SUM(early_data_accepted = 1), 0), COUNT(early_data_accepted) FROM samples WHERE http_status = 200",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!((accepted, attempted), (2 * 19, 2 * 19));
}

#[test]
fn nginx_behind_an_emulated_network_through_server_cmd() {
    let Some(binary) = nginx_binary() else {
        eprintln!("skipping: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    if let Some(reason) = emulation_unavailable() {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let dir = scratch("nginx-emulated");
    let path_of = lab_paths("1");
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
    let db = dir.join("emulated.db");
    let output = tlslab(&[
        "run",
        "--rtt",
        "20ms",
        "--server-cmd",
        &command,
        "--target",
        &format!("127.0.0.1:{port}"),
        "--sni",
        "localhost",
        "--ca",
        &path_of("root"),
        "-n",
        "10",
        "--warmup",
        "1",
        "--quiet",
        "--json",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
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
