//! `tlslab scan` against real servers: nginx and haproxy configured as Mozilla's 5.7 and 6.0
//! levels from the guideline files the scan ships (Debian's builds on its OpenSSL 3.0, and
//! nginx 1.28.3 on OpenSSL 4.0.3 built by `scripts/nginx`, which has ML-KEM), and the lab
//! server (rustls). No mocks: every assertion is about what a real server answered.

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

/// nginx 1.28.3 on OpenSSL 4.0.3 (ML-KEM), from `scripts/nginx`: built once per machine
/// (about a minute on 2 cores; .ci/run builds it before the tests), its path at once after.
/// `Err` says why it cannot be built here: the script exits 3 when a tool it needs (a C
/// compiler, make, perl for OpenSSL) is missing. Any other failure fails the test.
fn nginx_on_openssl_4() -> Result<PathBuf, String> {
    let script = format!("{}/../../scripts/nginx", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(&script)
        .output()
        .unwrap_or_else(|error| panic!("{script} does not run: {error}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    match output.status.code() {
        Some(0) => Ok(PathBuf::from(
            String::from_utf8_lossy(&output.stdout).trim(),
        )),
        Some(3) => Err(stderr.trim().to_string()),
        _ => panic!("scripts/nginx failed: {stderr}"),
    }
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

/// nginx with `tls` (the ssl_* lines of a Mozilla profile) in the foreground on a free port,
/// with the lab ECDSA P-256 chain.
fn start_nginx(binary: &Path, name: &str, tls: &str) -> Server {
    start_nginx_with(binary, name, tls, &lab_chain("ecdsa-p256"))
}

fn start_nginx_with(binary: &Path, name: &str, tls: &str, lab: &LabChain) -> Server {
    start_nginx_beside(binary, name, tls, lab, "")
}

/// nginx as [`start_nginx_with`], with `beside` (more `server` blocks) in its `http` block.
fn start_nginx_beside(
    binary: &Path,
    name: &str,
    tls: &str,
    lab: &LabChain,
    beside: &str,
) -> Server {
    let dir = scratch(name);
    let LabChain { chain, key, .. } = lab;
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
    location / {{ }}
  }}
  {beside}
}}
"
    );
    let config_path = dir.join("nginx.conf");
    std::fs::write(&config_path, config).unwrap();
    // The answer is a static file (`root` defaults to `html` under the `-p` prefix): `return`
    // belongs to the rewrite module, which needs PCRE and is left out of scripts/nginx.
    std::fs::create_dir_all(dir.join("html")).unwrap();
    std::fs::write(dir.join("html/index.html"), "ok\n").unwrap();
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

/// One level of a Mozilla guideline as shipped in `tlslab-scan/data/mozilla/`: the servers
/// below are configured from the same file the scan judges by, so "matches" is checked
/// against Mozilla's data, not against a copy typed into the test.
struct Level {
    guideline: &'static str,
    level: &'static str,
    /// OpenSSL's names: `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3`.
    versions: Vec<String>,
    ciphers_openssl: Vec<String>,
    ciphers_iana: Vec<String>,
    ciphersuites: Vec<String>,
    /// The level's groups (OpenSSL's names), in its order; see [`Level::configurable_curves`].
    curves: Vec<String>,
    server_order: bool,
}

/// The OpenSSL a server is built with, which decides what of a level it can be configured
/// with.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Library {
    /// Debian 12's OpenSSL 3.0 (its nginx and haproxy): no ML-KEM.
    Debian,
    /// OpenSSL 4.0.3 (`scripts/nginx`): every group of the guidelines.
    OpenSsl4,
}

fn mozilla_level(guideline: &'static str, level: &'static str) -> Level {
    let path = format!(
        "{}/../tlslab-scan/data/mozilla/server-side-tls-{guideline}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let data: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let profile = &data["configurations"][level];
    Level {
        guideline,
        level,
        versions: strings(&profile["tls_versions"]),
        ciphers_openssl: strings(&profile["ciphers"]["openssl"]),
        ciphers_iana: strings(&profile["ciphers"]["iana"]),
        ciphersuites: strings(&profile["ciphersuites"]),
        curves: strings(&profile["tls_curves"]),
        server_order: profile["server_preferred_order"].as_bool().unwrap(),
    }
}

impl Level {
    /// The cipher string; OpenSSL 3 refuses TLS 1.0 and 1.1 handshakes (SHA-1 signatures)
    /// above security level 0, which Mozilla's generator also sets for the old level.
    fn cipher_string(&self) -> String {
        let mut ciphers = self.ciphers_openssl.join(":");
        if self.versions.iter().any(|v| v == "TLSv1" || v == "TLSv1.1") {
            ciphers.push_str(":@SECLEVEL=0");
        }
        ciphers
    }

    /// The TLS 1.2 (or older) suites a server with `key` (`ECDSA` or `RSA`) can negotiate
    /// in `version` (`TLS 1.2`): the level's list, in its order.
    fn expected_suites(&self, version: &str, key: &str) -> Vec<String> {
        let authenticated_by = |suite: &str| {
            if key == "ECDSA" {
                suite.contains("_ECDSA_")
            } else {
                suite.contains("_RSA_")
            }
        };
        // GCM, ChaCha20 and the SHA-256/384 MACs came with TLS 1.2.
        let tls12_only = |suite: &str| !suite.ends_with("_SHA");
        // What the servers' OpenSSL can enable at all (Debian's has no 3DES in TLS).
        let available = self.library_suites();
        self.ciphers_iana
            .iter()
            .filter(|suite| available.contains(suite))
            .filter(|suite| authenticated_by(suite))
            .filter(|suite| version == "TLS 1.2" || !tls12_only(suite))
            .cloned()
            .collect()
    }

    /// The level's suites the local OpenSSL lacks, comma-separated; `None` when it has all.
    fn unavailable_suites(&self) -> Option<String> {
        let available = self.library_suites();
        let missing: Vec<&str> = self
            .ciphers_iana
            .iter()
            .filter(|suite| !available.contains(suite))
            .map(String::as_str)
            .collect();
        (!missing.is_empty()).then(|| missing.join(", "))
    }

    /// What the servers' OpenSSL enables for the level's cipher string (IANA names).
    fn library_suites(&self) -> Vec<String> {
        let output = Command::new("openssl")
            .args(["ciphers", "-stdname", &self.cipher_string()])
            .output()
            .expect("openssl runs (apt-get install openssl; .ci/run does)");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.split_whitespace().next().map(String::from))
            .collect()
    }

    /// The level's groups that `library` can configure, in the level's order: Debian's
    /// OpenSSL 3.0 has no ML-KEM, so 6.0's X25519MLKEM768 is left out there (and the scan
    /// must ask for it).
    fn configurable_curves(&self, library: Library) -> Vec<String> {
        self.curves
            .iter()
            .filter(|curve| library == Library::OpenSsl4 || !curve.contains("MLKEM"))
            .cloned()
            .collect()
    }

    fn scan_versions(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .versions
            .iter()
            .map(|v| match v.as_str() {
                "TLSv1" => "TLS 1.0".to_string(),
                other => other.replace("TLSv", "TLS "),
            })
            .collect();
        names.reverse();
        names
    }

    /// The groups a server on `library` negotiates in `version` (`TLS 1.3`, `TLS 1.2`), as
    /// tlslab names them: the hybrid ML-KEM groups exist in TLS 1.3 only.
    fn scan_groups(&self, library: Library, version: &str) -> Vec<String> {
        self.configurable_curves(library)
            .iter()
            .filter(|curve| version == "TLS 1.3" || !curve.contains("MLKEM"))
            .map(|curve| match curve.as_str() {
                "X25519" => "x25519".to_string(),
                "prime256v1" => "secp256r1".to_string(),
                "X25519MLKEM768" => "x25519mlkem768".to_string(),
                other => other.to_string(),
            })
            .collect()
    }
}

/// The lines of nginx's server block for `level`, on `library`.
fn nginx_tls(level: &Level, library: Library, dhparam: Option<&Path>) -> String {
    let mut tls = format!(
        "ssl_protocols {};\n    ssl_ecdh_curve {};\n    ssl_conf_command Ciphersuites {};\n    ssl_prefer_server_ciphers {};\n",
        level.versions.join(" "),
        level.configurable_curves(library).join(":"),
        level.ciphersuites.join(":"),
        if level.server_order { "on" } else { "off" }
    );
    if !level.ciphers_openssl.is_empty() {
        tls.push_str(&format!("    ssl_ciphers {};\n", level.cipher_string()));
    }
    if let Some(dhparam) = dhparam {
        tls.push_str(&format!("    ssl_dhparam {};\n", dhparam.display()));
    }
    tls
}

/// RFC 7919's ffdhe2048 as a PEM DH parameters file (what Mozilla's old and intermediate
/// levels ask nginx to load).
fn ffdhe2048_file(dir: &Path) -> PathBuf {
    ffdhe_file(dir, "ffdhe2048")
}

/// One of RFC 7919's groups (`ffdhe8192`) as a PEM DH parameters file, written by `openssl
/// genpkey`, which prints the named group's fixed parameters: nothing is generated.
fn ffdhe_file(dir: &Path, group: &str) -> PathBuf {
    let path = dir.join(format!("{group}.pem"));
    let output = Command::new("openssl")
        .args([
            "genpkey",
            "-genparam",
            "-algorithm",
            "DH",
            "-pkeyopt",
            &format!("group:{group}"),
            "-out",
        ])
        .arg(&path)
        .output()
        .expect("openssl runs (apt-get install openssl; .ci/run does)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    path
}

fn haproxy_binary() -> Option<PathBuf> {
    ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
}

/// haproxy (HTTP mode, `return 200` and HSTS) in the foreground on a free port, configured
/// as Mozilla's generator configures it for `level`.
fn start_haproxy(
    binary: &Path,
    name: &str,
    level: &Level,
    lab: &LabChain,
    dhparam: Option<&Path>,
) -> Server {
    let dir = scratch(name);
    // haproxy takes the chain and its key from one file.
    let combined = dir.join("chain-and-key.pem");
    let mut pem = std::fs::read_to_string(&lab.chain).unwrap();
    pem.push_str(&std::fs::read_to_string(&lab.key).unwrap());
    std::fs::write(&combined, pem).unwrap();
    let haproxy_version = |v: &str| match v {
        "TLSv1" => "TLSv1.0".to_string(),
        other => other.to_string(),
    };
    let oldest = level.versions.first().map(|v| haproxy_version(v)).unwrap();
    let newest = level.versions.last().map(|v| haproxy_version(v)).unwrap();
    let mut global = format!(
        "global\n  ssl-default-bind-ciphersuites {}\n  ssl-default-bind-options ssl-min-ver {oldest} ssl-max-ver {newest} no-tls-tickets{}\n",
        level.ciphersuites.join(":"),
        if level.server_order { "" } else { " prefer-client-ciphers" }
    );
    if !level.ciphers_openssl.is_empty() {
        global.push_str(&format!(
            "  ssl-default-bind-ciphers {}\n",
            level.cipher_string()
        ));
    }
    if let Some(dhparam) = dhparam {
        global.push_str(&format!("  ssl-dh-param-file {}\n", dhparam.display()));
    }
    let port = closed_port();
    let config = format!(
        "{global}
defaults
  mode http
  timeout connect 5s
  timeout client 10s
  timeout server 10s
frontend tls
  bind 127.0.0.1:{port} ssl crt {} alpn h2,http/1.1 curves {}
  http-after-response set-header Strict-Transport-Security \"max-age=63072000\"
  http-request return status 200 content-type text/plain string ok
",
        combined.display(),
        level.configurable_curves(Library::Debian).join(":")
    );
    let config_path = dir.join("haproxy.cfg");
    std::fs::write(&config_path, config).unwrap();
    let log = dir.join("haproxy.log");
    let child = Command::new(binary)
        .arg("-db")
        .arg("-f")
        .arg(&config_path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("haproxy starts");
    let server = Server { child, port };
    wait_for(&server, &log);
    server
}

/// Mozilla's levels the must-show names, each with the certificate it is served with: the
/// old level's DHE-RSA and RSA suites need an RSA key (and its DHE the ffdhe2048 file).
const LEVELS: [(&str, &str, &str); 5] = [
    ("5.7", "old", "rsa-2048"),
    ("5.7", "intermediate", "ecdsa-p256"),
    ("5.7", "modern", "ecdsa-p256"),
    ("6.0", "intermediate", "ecdsa-p256"),
    ("6.0", "modern", "ecdsa-p256"),
];

/// Starts a server as each of [`LEVELS`] (`start` knows which software) and checks the scan.
fn every_level(software: &str, start: impl Fn(&str, &Level, &LabChain, &Path) -> Server) {
    let dhparam = ffdhe2048_file(&scratch(&format!("scan-{software}-dhparam")));
    for (guideline, name, certificate) in LEVELS {
        let level = mozilla_level(guideline, name);
        let lab = lab_chain(certificate);
        let server = start(
            &format!("scan-{software}-{guideline}-{name}"),
            &level,
            &lab,
            &dhparam,
        );
        let report = scan_json(server.port);
        let key = if certificate.starts_with("rsa") {
            "RSA"
        } else {
            "ECDSA"
        };
        assert_configured_as(&report, &level, key, software == "haproxy", Library::Debian);
        assert_eq!(
            strings(&report["alpn"]),
            ["h2", "http/1.1"],
            "{software} {guideline} {name}"
        );
        assert_eq!(report["certificates"]["hsts"], "max-age=63072000");
        assert!(
            report["probe_errors"].as_array().unwrap().is_empty(),
            "{software} {guideline} {name}: {}",
            report["probe_errors"]
        );
    }
}

#[test]
fn nginx_as_every_mozilla_level() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    every_level("nginx", |name, level, lab, dhparam| {
        let dhparam = (level.level == "old").then_some(dhparam);
        start_nginx_with(
            &binary,
            name,
            &nginx_tls(level, Library::Debian, dhparam),
            lab,
        )
    });
}

/// The must-show's "matches" for Mozilla's 6.0 levels, on a server that can be configured
/// with all of them: nginx on OpenSSL 4.0.3, X25519MLKEM768 first as the levels order it.
#[test]
fn nginx_on_openssl_4_matches_mozilla_6_0() {
    let binary = match nginx_on_openssl_4() {
        Ok(binary) => binary,
        Err(why) => {
            eprintln!("SKIPPED: scripts/nginx cannot build nginx on OpenSSL 4 here: {why}");
            return;
        }
    };
    for level in ["intermediate", "modern"] {
        let level = mozilla_level("6.0", level);
        let name = format!("scan-nginx-openssl-4-6.0-{}", level.level);
        let tls = nginx_tls(&level, Library::OpenSsl4, None);
        let server = start_nginx_with(&binary, &name, &tls, &lab_chain("ecdsa-p256"));
        let report = scan_json(server.port);
        assert_configured_as(&report, &level, "ECDSA", false, Library::OpenSsl4);
        let what = format!("6.0 {}", level.level);
        // Spelled out, so a change to the guideline file or the helpers above shows here.
        let (tls13, order) = suites(&report, "TLS 1.3");
        assert_eq!(
            tls13,
            [
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256"
            ],
            "{what}"
        );
        assert_ne!(order, "server", "{what}");
        assert_eq!(
            strings(&report["groups_tls13"]["groups"]),
            ["x25519mlkem768", "x25519", "secp256r1", "secp384r1"],
            "{what}: {report}"
        );
        if level.level == "intermediate" {
            assert_eq!(versions(&report), ["TLS 1.3", "TLS 1.2"], "{what}");
            let (mut tls12, _) = suites(&report, "TLS 1.2");
            tls12.sort();
            assert_eq!(
                tls12,
                [
                    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
                ],
                "{what}"
            );
            assert_eq!(
                strings(&report["groups_tls12"]["groups"]),
                ["x25519", "secp256r1", "secp384r1"],
                "{what}"
            );
        } else {
            assert_eq!(versions(&report), ["TLS 1.3"], "{what}");
            assert!(report["groups_tls12"].is_null(), "{what}");
        }
        let verdict = mozilla(&report, "6.0", level.level);
        assert_eq!(verdict["matches"], true, "{what}: {verdict}");
        assert!(strings(&verdict["changes"]).is_empty(), "{what}: {verdict}");
        assert_eq!(strings(&report["alpn"]), ["h2", "http/1.1"], "{what}");
        assert_eq!(report["certificates"]["hsts"], "max-age=63072000");
        assert!(
            report["probe_errors"].as_array().unwrap().is_empty(),
            "{what}: {}",
            report["probe_errors"]
        );
    }
}

#[test]
fn haproxy_as_every_mozilla_level() {
    let Some(binary) = haproxy_binary() else {
        eprintln!("SKIPPED: haproxy is not installed (apt-get install haproxy; .ci/run does)");
        return;
    };
    every_level("haproxy", |name, level, lab, dhparam| {
        let dhparam = (level.level == "old").then_some(dhparam);
        start_haproxy(&binary, name, level, lab, dhparam)
    });
}

/// What a scan of a server on `library` configured as `level` with a `key` certificate
/// must find.
fn assert_configured_as(
    report: &Value,
    level: &Level,
    key: &str,
    chacha_priority: bool,
    library: Library,
) {
    let what = format!("{} {}", level.guideline, level.level);
    assert_eq!(versions(report), level.scan_versions(), "{what}: {report}");
    for version in level.scan_versions() {
        let (found, order) = suites(report, &version);
        let mut expected = if version == "TLS 1.3" {
            level.ciphersuites.clone()
        } else {
            level.expected_suites(&version, key)
        };
        if level.server_order {
            // haproxy lets a client that lists ChaCha20 first have it (OpenSSL's
            // PRIORITIZE_CHACHA). The scan's order check lists the server's last choice
            // first, so it sees this (and says mixed) when ChaCha20 is that last choice.
            let chacha = expected
                .last()
                .is_some_and(|suite| suite.contains("CHACHA20"));
            let wanted = if chacha_priority && chacha {
                "mixed"
            } else {
                "server"
            };
            assert_eq!(order, wanted, "{what} {version}");
        } else {
            // The server follows the client, who offered by code point: compare the sets.
            assert_ne!(order, "server", "{what} {version}");
            let mut sorted = found.clone();
            sorted.sort();
            expected.sort();
            assert_eq!(sorted, expected, "{what} {version}");
            continue;
        }
        assert_eq!(found, expected, "{what} {version}");
    }
    for (version, groups) in [("TLSv1.3", "groups_tls13"), ("TLSv1.2", "groups_tls12")] {
        if level.versions.iter().any(|v| v == version) {
            let scan_version = version.replace("TLSv", "TLS ");
            assert_eq!(
                strings(&report[groups]["groups"]),
                level.scan_groups(library, &scan_version),
                "{what} {version}"
            );
        }
    }
    let verdict = mozilla(report, level.guideline, level.level);
    if level.guideline == "6.0" && library == Library::Debian {
        // Debian's OpenSSL 3.0 has no ML-KEM: the one change left is the hybrid group.
        assert_eq!(
            strings(&verdict["changes"]),
            ["add groups x25519mlkem768"],
            "{what}: {verdict}"
        );
    } else if let Some(missing) = level.unavailable_suites() {
        // A suite the level lists but the servers' OpenSSL cannot enable (Debian's has no
        // 3DES): the server does not offer it, and the scan says so for each version.
        let expected: Vec<String> = level
            .scan_versions()
            .iter()
            .filter(|version| *version != "TLS 1.3")
            .map(|version| format!("{version}: add suites {missing}"))
            .collect();
        assert_eq!(strings(&verdict["changes"]), expected, "{what}: {verdict}");
    } else {
        assert_eq!(verdict["matches"], true, "{what}: {verdict}");
    }
    // Every other level of the same guideline lists what to change.
    for other in ["old", "intermediate", "modern"] {
        if other != level.level && !(level.guideline == "6.0" && other == "old") {
            let verdict = mozilla(report, level.guideline, other);
            assert_eq!(verdict["matches"], false, "{what} as {other}");
            assert!(!strings(&verdict["changes"]).is_empty());
        }
    }
}

#[test]
fn nginx_as_mozilla_old_5_7_with_ffdhe2048() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let level = mozilla_level("5.7", "old");
    let dhparam = ffdhe2048_file(&scratch("scan-old-dhparam"));
    let tls = nginx_tls(&level, Library::Debian, Some(&dhparam));
    let nginx = start_nginx_with(&binary, "scan-old", &tls, &lab_chain("rsa-2048"));
    let report = scan_json(nginx.port);
    assert_configured_as(&report, &level, "RSA", false, Library::Debian);
    // Each DHE suite's group, read from its ServerKeyExchange and named by its prime.
    let dhe = report["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|version| version["version"] == "TLS 1.2")
        .map(|version| version["dhe"].as_array().unwrap().clone())
        .unwrap();
    let dhe_suites: Vec<String> = level
        .expected_suites("TLS 1.2", "RSA")
        .into_iter()
        .filter(|suite| suite.starts_with("TLS_DHE_"))
        .collect();
    assert_eq!(dhe.len(), dhe_suites.len(), "{dhe:?}");
    for (parameters, suite) in dhe.iter().zip(&dhe_suites) {
        assert_eq!(parameters["suite"], suite.as_str());
        assert_eq!(parameters["bits"], 2048);
        assert_eq!(parameters["group"], "ffdhe2048");
    }
    // The grade weighs the measured 2048 bits (90), and the old level's TLS 1.0 caps it
    // (at C with 3DES, which Debian's OpenSSL no longer has).
    let grade = &report["grade"];
    assert_eq!(grade["key_exchange_score"], 90, "{grade}");
    let triple_des = level
        .expected_suites("TLS 1.2", "RSA")
        .iter()
        .any(|suite| suite.contains("3DES"));
    let reasons = strings(&grade["reasons"]);
    assert_eq!(
        grade["letter_if_trusted"],
        if triple_des { "C" } else { "B" },
        "{grade}"
    );
    assert_eq!(
        reasons.iter().any(|r| r.starts_with("C: 3DES")),
        triple_des,
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.starts_with("B: TLS 1.0 or 1.1")),
        "{reasons:?}"
    );
    assert!(!strings(&grade["notes"])
        .iter()
        .any(|n| n.contains("assumed")));
    // The cost table: OpenSSL times the legacy suites tlslab knows (DHE with the server's
    // ffdhe2048, CBC), the rest say why they were not timed.
    let rows = report["timing"]["rows"].as_array().unwrap();
    let row = |version: &str, suite: &str| {
        rows.iter()
            .find(|row| row["version"] == version && row["suite"] == suite)
            .unwrap_or_else(|| panic!("no {version} {suite} in {rows:?}"))
    };
    // Polite by default: the table's handshakes per choice shrink to keep it within 400
    // connections.
    let timing = &report["timing"];
    let timed = rows.iter().filter(|row| row["not_timed"].is_null()).count() as u64;
    let per_choice = timing["handshakes_per_choice"].as_u64().unwrap();
    assert_eq!(
        timing["connections"].as_u64().unwrap(),
        timed * (per_choice + 1)
    );
    assert!(
        timed * (per_choice + 1) <= 400,
        "{timed} choices × {per_choice}"
    );
    let dhe = row("TLS 1.2", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256");
    assert_eq!(dhe["group"], "ffdhe2048", "{dhe}");
    assert_eq!(dhe["backend"], "openssl", "{dhe}");
    assert!(dhe["median_handshake_ms"].as_f64().unwrap() > 0.0, "{dhe}");
    let cbc = row("TLS 1.2", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA");
    assert_eq!(cbc["backend"], "openssl", "{cbc}");
    assert!(cbc["handshakes"].as_u64().unwrap() > 0, "{cbc}");
    let gcm = rows
        .iter()
        .find(|row| row["suite"] == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
        .unwrap();
    assert_eq!(gcm["backend"], "rustls", "{gcm}");
    let tls10 = row("TLS 1.0", "*");
    assert!(
        tls10["not_timed"]
            .as_str()
            .unwrap()
            .contains("TLS 1.2 and 1.3"),
        "{tls10}"
    );
    let unknown = row("TLS 1.2", "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384");
    assert!(
        unknown["not_timed"]
            .as_str()
            .unwrap()
            .contains("do not offer"),
        "{unknown}"
    );
    let text = tlslab_succeeds(&[
        "scan",
        &format!("127.0.0.1:{}", nginx.port),
        "--sni",
        "localhost",
    ]);
    assert!(
        text.contains("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256  DH 2048 bits (ffdhe2048)"),
        "{text}"
    );
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

/// A ServerHello record whose extensions length (64) runs past the record's end (5 bytes
/// follow): TLS 1.2, suite TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, renegotiation_info. A
/// parser that reads an overlong optional field as absent sees a plain TLS 1.2 hello.
fn malformed_server_hello() -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend_from_slice(&[7; 32]); // random
    body.extend_from_slice(&[0, 0xc0, 0x2f, 0]); // no session id, the suite, no compression
    body.extend_from_slice(&[0, 64]); // the extensions length: 64 bytes
    body.extend_from_slice(&[0xff, 0x01, 0, 1, 0]); // the 5 that follow
    let mut message = vec![2, 0, 0, body.len() as u8];
    message.extend_from_slice(&body);
    let mut record = vec![22, 3, 3, 0, message.len() as u8];
    record.extend_from_slice(&message);
    record
}

/// A TCP server in this process: for each connection that sends a ClientHello, `malformed`
/// (given the hello's bytes and how many hellos came before) says whether to answer with
/// [`malformed_server_hello`]; otherwise the connection is relayed to `upstream` (a real TLS
/// server), when there is one. Returns its port and the count of malformed answers sent.
fn malformed_server(
    upstream: Option<u16>,
    malformed: impl Fn(&[u8], usize) -> bool + Send + 'static,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sent = std::sync::Arc::new(AtomicU64::new(0));
    let counted = sent.clone();
    std::thread::spawn(move || {
        let mut hellos = 0;
        for mut client in listener.incoming().flatten() {
            let mut hello = vec![0u8; 64 * 1024];
            let _ = client.set_read_timeout(Some(Duration::from_secs(5)));
            let read = match client.read(&mut hello) {
                Ok(0) | Err(_) => continue,
                Ok(read) => read,
            };
            hello.truncate(read);
            let answer_malformed = malformed(&hello, hellos);
            hellos += 1;
            match upstream {
                Some(upstream) if !answer_malformed => {
                    let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                        continue;
                    };
                    let _ = server.write_all(&hello);
                    let (mut server_reader, mut client_writer) =
                        (server.try_clone().unwrap(), client.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut server_reader, &mut client_writer);
                        let _ = client_writer.shutdown(std::net::Shutdown::Write);
                    });
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut client, &mut server);
                        let _ = server.shutdown(std::net::Shutdown::Write);
                    });
                }
                _ => {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let _ = client.write_all(&malformed_server_hello());
                    // Closed once the client has read the answer and hung up.
                    std::thread::spawn(move || {
                        let mut rest = [0u8; 4096];
                        while matches!(client.read(&mut rest), Ok(read) if read > 0) {}
                    });
                }
            }
        }
    });
    (port, sent)
}

/// `run` calls such a server not_tls; the scan says its answers are malformed, grades
/// nothing and exits 3, as for a server that does not speak TLS at all.
#[test]
fn a_server_hello_whose_extensions_run_past_its_end_is_an_error_not_a_grade() {
    let (port, sent) = malformed_server(None, |_, _| true);
    let target = format!("127.0.0.1:{port}");
    let output = tlslab(&["scan", &target, "--sni", "localhost", "--no-timing"]);
    assert_user_error(
        &output,
        3,
        "answered every ClientHello with a malformed handshake",
    );
    let error = stderr(&output);
    assert!(
        error.contains("extensions length (64 bytes) runs past its end (5 left)"),
        "{error}"
    );
    assert!(!stdout(&output).contains("grade"), "{}", stdout(&output));
    // One answer per version asked.
    assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 5);
    let dir = scratch("scan-malformed-run");
    let summary = Run::new(&dir, "malformed")
        .option("--target", &target)
        .args("--sni localhost --warmup 0 -n 2 --json")
        .fails(1, "not_tls")
        .json();
    assert_eq!(summary["configs"][0]["errors"]["not_tls"], 2, "{summary}");
}

/// A server that answers the version probes (relayed to the lab server) and then only
/// malformed ServerHellos: every later probe is an error, counted and listed, none is read
/// as "not supported", and the scan is not graded (exit 1, as `run`'s for failed attempts).
#[test]
fn probes_answered_malformed_after_valid_ones_are_errors_not_refusals() {
    let lab = LabServer::start();
    // The first five ClientHellos are the five version probes (all run before any other).
    let (port, sent) = malformed_server(Some(lab.port), |_, before| before >= 5);
    let target = format!("127.0.0.1:{port}");
    let output = tlslab(&[
        "scan",
        &target,
        "--sni",
        "localhost",
        "--no-timing",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let error = stderr(&output);
    assert!(
        error.contains("error: ") && error.contains("hint: "),
        "{error}"
    );
    assert!(
        error.contains("got a malformed answer, so it is not graded"),
        "{error}"
    );
    let reports: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let report = &reports[0];
    let malformed = sent.load(std::sync::atomic::Ordering::SeqCst);
    assert!(malformed >= 6, "{malformed}: {report}");
    assert_eq!(report["malformed_answers"], malformed, "{report}");
    let errors = strings(&report["probe_errors"]);
    assert_eq!(errors.len() as u64, malformed, "{errors:?}");
    assert!(
        errors
            .iter()
            .all(|error| error.contains("malformed answer")),
        "{errors:?}"
    );
    // What the valid answers showed stands; what came after is unknown, not refused.
    assert_eq!(versions(report), ["TLS 1.3", "TLS 1.2"], "{report}");
    assert_eq!(
        report["versions_unknown"],
        serde_json::json!([]),
        "{report}"
    );
    for version in report["versions"].as_array().unwrap() {
        assert_eq!(version["complete"], false, "{version}");
        assert_eq!(version["order"], "unknown", "{version}");
    }
    assert_eq!(report["groups_tls13"]["complete"], false, "{report}");
    assert_eq!(report["groups_tls12"]["complete"], false, "{report}");
    assert_eq!(report["alpn"], Value::Null, "{report}");
    assert_eq!(report["grade"]["letter"], "-", "{report}");
    assert_eq!(report["mozilla"], serde_json::json!([]), "{report}");

    // The same, for a person: errors shown, nothing called refused or none.
    let (port, _) = malformed_server(Some(lab.port), |_, before| before >= 5);
    let output = tlslab(&[
        "scan",
        &format!("127.0.0.1:{port}"),
        "--sni",
        "localhost",
        "--no-timing",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("0 suites found before a probe failed"),
        "{text}"
    );
    assert!(
        text.contains("ALPN         unknown (an ALPN probe failed)"),
        "{text}"
    );
    assert!(text.contains("grade        none: not graded:"), "{text}");
    assert!(
        text.contains("groups TLS 1.3 unknown: a probe failed"),
        "{text}"
    );
    assert!(!text.contains("none found"), "{text}");
    assert!(
        text.contains(
            "TLS 1.3 suites: malformed answer: a ServerHello whose extensions length (64 bytes) runs past its end (5 left)"
        ),
        "{text}"
    );
}

/// Versions whose probes get malformed answers are neither supported nor refused.
#[test]
fn a_version_answered_malformed_is_unknown_not_refused() {
    let lab = LabServer::start();
    // TLS 1.0 and 1.1 ClientHellos (client_version 0x0301, 0x0302) get the malformed answer;
    // the rest reach the lab server (which speaks TLS 1.2 and 1.3).
    let (port, sent) = malformed_server(Some(lab.port), |hello, _| {
        matches!(hello.get(9..11), Some([3, 1] | [3, 2]))
    });
    let target = format!("127.0.0.1:{port}");
    let output = tlslab(&[
        "scan",
        &target,
        "--sni",
        "localhost",
        "--no-timing",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let reports: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let report = &reports[0];
    assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(versions(report), ["TLS 1.3", "TLS 1.2"], "{report}");
    assert_eq!(
        strings(&report["versions_unknown"]),
        ["TLS 1.0", "TLS 1.1"],
        "{report}"
    );
    assert_eq!(report["malformed_answers"], 2, "{report}");
    assert_eq!(report["grade"]["letter"], "-", "{report}");
    let output = tlslab(&["scan", &target, "--sni", "localhost", "--no-timing"]);
    let text = stdout(&output);
    assert!(
        text.contains("(refused: SSL 3.0)   (unknown, the probe failed: TLS 1.1, TLS 1.0)"),
        "{text}"
    );
}

/// `openssl`: OpenSSL 4's from `scripts/openssl` when it built its programs, else the
/// system's (OpenSSL 3.0 also has RFC 7919's groups in TLS 1.3).
fn openssl_binary() -> PathBuf {
    let built = PathBuf::from("/root/.cache/tlslab/openssl-4.0.3/bin/openssl");
    if built.is_file() {
        built
    } else {
        PathBuf::from("openssl")
    }
}

/// testssl.sh finds ffdhe2048 to ffdhe8192 on a server that has them all in TLS 1.3; so must
/// the scan, and it names the prime a TLS 1.2 DHE suite uses, ffdhe8192 included.
#[test]
fn openssl_s_server_with_every_ffdhe_group_shows_them_all() {
    let dir = scratch("scan-ffdhe");
    let lab = lab_chain("rsa-2048");
    let port = closed_port();
    let log = dir.join("s_server.log");
    let child = Command::new(openssl_binary())
        .args(["s_server", "-accept", &format!("127.0.0.1:{port}")])
        .args(["-cert", &lab.chain, "-key", &lab.key])
        .args([
            "-groups",
            "ffdhe2048:ffdhe3072:ffdhe4096:ffdhe6144:ffdhe8192",
        ])
        .arg("-dhparam")
        .arg(ffdhe_file(&dir, "ffdhe8192"))
        .args(["-cipher", "DHE-RSA-AES256-GCM-SHA384", "-www", "-quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("openssl runs (apt-get install openssl; .ci/run does)");
    let server = Server { child, port };
    wait_for(&server, &log);
    let report = scan_json_with(server.port, &["--no-timing"]);
    let mut groups = strings(&report["groups_tls13"]["groups"]);
    groups.sort();
    assert_eq!(
        groups,
        [
            "ffdhe2048",
            "ffdhe3072",
            "ffdhe4096",
            "ffdhe6144",
            "ffdhe8192"
        ],
        "{report}"
    );
    assert_eq!(report["groups_tls13"]["complete"], true, "{report}");
    let tls12 = report["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|version| version["version"] == "TLS 1.2")
        .unwrap_or_else(|| panic!("no TLS 1.2: {report}"));
    assert_eq!(
        tls12["dhe"],
        serde_json::json!([{
            "suite": "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
            "bits": 8192,
            "group": "ffdhe8192"
        }]),
        "{report}"
    );
}

/// A lab server whose only certificate is ML-DSA-65 answers only a ClientHello that offers
/// ML-DSA: the scan finds its version, suites and groups, and reads the chain.
#[test]
fn a_post_quantum_only_lab_server_scans() {
    let port = closed_port();
    let dir = scratch("scan-mldsa");
    let log = dir.join("serve.log");
    let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--backend", "openssl", "--cert", "mldsa65"])
        .env("TLSLAB_PKI_DIR", pki_dir())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("the lab server starts");
    let server = Server { child, port };
    wait_for(&server, &log);
    let report = scan_json_with(server.port, &["--no-timing"]);
    assert_eq!(versions(&report), ["TLS 1.3"], "{report}");
    let (suites, _) = suites(&report, "TLS 1.3");
    assert!(
        suites.contains(&"TLS_AES_128_GCM_SHA256".to_string()),
        "{suites:?}"
    );
    let groups = strings(&report["groups_tls13"]["groups"]);
    assert!(groups.contains(&"x25519mlkem768".to_string()), "{groups:?}");
    let leaf = &report["certificates"]["chain"][0];
    assert!(leaf["key"].as_str().unwrap().contains("ML-DSA"), "{leaf}");
    assert!(
        report["probe_errors"].as_array().unwrap().is_empty(),
        "{report}"
    );
    assert_ne!(report["grade"]["letter"], "-", "{report}");
}

#[test]
fn nginx_preferring_static_rsa_cbc_gets_a_minus() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    // TLS 1.2 only, the server's favourite without forward secrecy or AEAD, ECDHE GCM second.
    let tls = "ssl_protocols TLSv1.2;
    ssl_ciphers AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256;
    ssl_prefer_server_ciphers on;";
    let lab = lab_chain("rsa-2048");
    let nginx = start_nginx_with(&binary, "scan-a-minus", tls, &lab);
    let report = scan_json_with(nginx.port, &["--ca", &lab.root]);
    assert_eq!(report["secure_renegotiation"], true, "{report}");
    let grade = &report["grade"];
    assert_eq!(grade["letter"], "A-", "{grade}");
    let reasons = strings(&grade["reasons"]);
    assert_eq!(
        reasons,
        [
            "A-: no forward secrecy with modern clients: in TLS 1.2 the server prefers TLS_RSA_WITH_AES_128_CBC_SHA",
            "A-: no AEAD with modern clients: in TLS 1.2 the server prefers TLS_RSA_WITH_AES_128_CBC_SHA",
        ],
        "{grade}"
    );
}

/// Mozilla's intermediate level recommends an ECDSA and an RSA certificate: nginx with both
/// (two `ssl_certificate` lines) is reported with both chains, each its own key, from TLS
/// 1.2 suites for each key type; a TLS 1.3-only one from signature schemes for each.
#[test]
fn nginx_with_ecdsa_and_rsa_certificates_reports_both_chains() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let ecdsa = lab_chain("ecdsa-p256");
    let rsa = lab_chain("rsa-2048");
    // Both roots as --ca: each chain is judged by its own.
    let anchors = scratch("scan-dual-anchors").join("roots.pem");
    let roots = [&ecdsa.root, &rsa.root]
        .iter()
        .map(|root| std::fs::read_to_string(root).unwrap())
        .collect::<String>();
    std::fs::write(&anchors, roots).unwrap();
    let anchors = anchors.display().to_string();
    let second = format!(
        "ssl_certificate {}; ssl_certificate_key {};",
        rsa.chain, rsa.key
    );
    let status_port = closed_port();
    let beside =
        format!("server {{ listen 127.0.0.1:{status_port}; location /status {{ stub_status; }} }}");

    for (name, level) in [
        ("scan-dual-intermediate", INTERMEDIATE_5_7),
        ("scan-dual-modern", MODERN_5_7),
    ] {
        let tls = format!("{level}\n    {second}");
        let nginx = start_nginx_beside(&binary, name, &tls, &ecdsa, &beside);
        let before = accepted_connections(status_port);
        let report = scan_json_with(nginx.port, &["--no-timing", "--ca", &anchors]);
        let made = accepted_connections(status_port) - before - 1;
        let certificates = &report["certificates"];
        let others = certificates["others"].as_array().unwrap();
        assert_eq!(others.len(), 1, "{name}: {certificates}");
        let other = &others[0];
        let leaf = &certificates["chain"][0];
        let other_leaf = &other["chain"][0];
        // Whichever a default client gets first, the other is the other key type.
        let mut keys = [
            leaf["key"].as_str().unwrap(),
            other_leaf["key"].as_str().unwrap(),
        ];
        keys.sort();
        assert_eq!(keys, ["ECDSA P-256", "RSA 2048"], "{name}: {certificates}");
        assert_eq!(
            other["elicited_by"],
            other_leaf["key"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap(),
            "{name}: {other}"
        );
        // Each chain its own: the same name, issued by its own key type's intermediate.
        for chain_leaf in [leaf, other_leaf] {
            assert_eq!(chain_leaf["subject"], "O=tlslab, CN=localhost", "{name}");
            let (issuer, signature) = if chain_leaf["key"] == "RSA 2048" {
                ("(rsa2048)", "sha256WithRSAEncryption")
            } else {
                ("(ecdsa-p256)", "ecdsa-with-SHA256")
            };
            assert!(
                chain_leaf["issuer"].as_str().unwrap().ends_with(issuer),
                "{name}: {chain_leaf}"
            );
            assert_eq!(chain_leaf["signature"], signature, "{name}: {chain_leaf}");
        }
        let bits = |leaf: &Value| leaf["key_bits"].as_u64().unwrap();
        let mut sizes = [bits(leaf), bits(other_leaf)];
        sizes.sort();
        assert_eq!(sizes, [256, 2048], "{name}");
        assert_eq!(
            other["chain"].as_array().unwrap().len(),
            2,
            "{name}: {other}"
        );
        assert_eq!(other["name_matches"], true, "{name}: {other}");
        assert_eq!(other["chain_in_order"], true, "{name}: {other}");
        assert_eq!(other["trusted"], true, "{name}: {other}");
        assert_eq!(certificates["trusted"], true, "{name}: {certificates}");
        assert_eq!(
            report["grade"]["letter"], "A+",
            "{name}: {}",
            report["grade"]
        );
        // Every connection the scan made reached nginx (counted by it), and they stay few.
        assert_eq!(made, report["connections"].as_u64().unwrap(), "{name}");
        eprintln!("{name}: {made} connections");
        assert!(made <= 60, "{name}: {made} connections");

        // The terminal report: one line for the other chain.
        let target = format!("127.0.0.1:{}", nginx.port);
        let text = tlslab_succeeds(&[
            "scan",
            &target,
            "--sni",
            "localhost",
            "--no-timing",
            "--ca",
            &anchors,
        ]);
        let also = format!(
            "also for {} clients: O=tlslab, CN=localhost  {}",
            other["elicited_by"].as_str().unwrap(),
            other_leaf["key"].as_str().unwrap()
        );
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| line.contains("also for"))
            .collect();
        assert_eq!(lines.len(), 1, "{name}: {text}");
        assert!(lines[0].contains(&also), "{name}: {text}");
        assert!(
            lines[0].ends_with("names localhost: yes; trusted: yes"),
            "{name}: {text}"
        );

        // Judged by the first chain's root alone, the other chain is untrusted: T, as SSL
        // Labs grades a server by its worse certificate.
        let first_root = if leaf["key"] == "RSA 2048" {
            &rsa.root
        } else {
            &ecdsa.root
        };
        let one_root = scan_json_with(nginx.port, &["--no-timing", "--ca", first_root]);
        assert_eq!(one_root["certificates"]["trusted"], true, "{name}");
        let grade = &one_root["grade"];
        assert_eq!(grade["letter"], "T", "{name}: {grade}");
        let expected = format!(
            "T: the {} certificate's chain is not trusted",
            other["elicited_by"].as_str().unwrap()
        );
        assert!(
            strings(&grade["reasons"])
                .iter()
                .any(|reason| reason.starts_with(&expected)),
            "{name}: {grade}"
        );
    }
}

/// nginx's count of accepted connections (`stub_status`'s "accepts"), read over plain HTTP
/// from its status port; the reading's own connection is counted in it.
fn accepted_connections(status_port: u16) -> u64 {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", status_port)).unwrap();
    stream
        .write_all(b"GET /status HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    // "server accepts handled requests\n 12 12 12"
    let after = text
        .split("requests")
        .nth(1)
        .unwrap_or_else(|| panic!("no stub_status in {text}"));
    after
        .split_whitespace()
        .next()
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no accepts count in {text}"))
}

#[test]
fn the_cost_table_times_every_choice_of_mozilla_intermediate() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let status_port = closed_port();
    let beside =
        format!("server {{ listen 127.0.0.1:{status_port}; location /status {{ stub_status; }} }}");
    let lab = lab_chain("ecdsa-p256");
    let nginx = start_nginx_beside(
        &binary,
        "scan-cost-intermediate",
        INTERMEDIATE_5_7,
        &lab,
        &beside,
    );

    // --no-timing: the scan's probes and nothing else reach the server.
    let before = accepted_connections(status_port);
    let report = scan_json_with(nginx.port, &["--no-timing"]);
    let made = accepted_connections(status_port) - before - 1;
    assert!(report["timing"].is_null(), "{}", report["timing"]);
    assert_eq!(made, report["connections"].as_u64().unwrap());

    // Timed (against the lab root, so the chain is verified as a client would): every
    // version × suite × group the scan found has a row, each with its handshakes.
    let before = accepted_connections(status_port);
    let report = scan_json_with(nginx.port, &["--timing-handshakes", "5", "--ca", &lab.root]);
    let made = accepted_connections(status_port) - before - 1;
    let timing = &report["timing"];
    assert_eq!(timing["handshakes_per_choice"], 5, "{timing}");
    assert_eq!(timing["certificate"], "ECDSA P-256");
    assert_eq!(timing["verified"], true);
    assert!(timing["error"].is_null(), "{timing}");
    let rows = timing["rows"].as_array().unwrap();
    // 3 TLS 1.3 suites × 3 groups, and the 3 ECDSA suites of TLS 1.2 × 3 curves.
    assert_eq!(rows.len(), 18, "{timing}");
    for row in rows {
        assert!(row["not_timed"].is_null(), "{row}");
        assert_eq!(row["handshakes"], 5, "{row}");
        assert_eq!(row["errors"], 0, "{row}");
        assert!(row["median_handshake_ms"].as_f64().unwrap() > 0.0, "{row}");
        let response = row["median_server_response_ms"].as_f64().unwrap();
        assert!(response > 0.0, "{row}");
        // The response is one phase of the handshake.
        assert!(
            response <= row["median_handshake_ms"].as_f64().unwrap(),
            "{row}"
        );
    }
    let combination = |version: &str, suite: &str, group: &str| {
        rows.iter()
            .any(|row| row["version"] == version && row["suite"] == suite && row["group"] == group)
    };
    assert!(combination(
        "TLS 1.3",
        "TLS_CHACHA20_POLY1305_SHA256",
        "secp384r1"
    ));
    assert!(combination(
        "TLS 1.2",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "x25519"
    ));
    // Each timed choice: five measured handshakes and one warm-up, and no more.
    let timed = timing["connections"].as_u64().unwrap();
    assert_eq!(timed, 18 * 6, "{timing}");
    assert_eq!(made, report["connections"].as_u64().unwrap() + timed);

    // --delay spaces a choice's handshakes: 18 choices of 2 handshakes 50 ms apart cannot
    // take less than 18 × 50 ms (a lower bound the schedule guarantees, not a speed).
    let report = scan_json_with(
        nginx.port,
        &["--timing-handshakes", "2", "--delay", "50ms", "--no-timing"],
    );
    assert!(report["timing"].is_null());
    let report = scan_json_with(nginx.port, &["--timing-handshakes", "2", "--delay", "50ms"]);
    let seconds = report["timing"]["seconds"].as_f64().unwrap();
    assert!(seconds >= 18.0 * 0.05, "{seconds} s");

    // The terminal report shows the table.
    let target = format!("127.0.0.1:{}", nginx.port);
    let text = tlslab_succeeds(&[
        "scan",
        &target,
        "--sni",
        "localhost",
        "--timing-handshakes",
        "2",
    ]);
    assert!(
        text.contains("cost         2 handshakes per choice"),
        "{text}"
    );
    assert!(text.contains("not verified"), "{text}");
    let line = text
        .lines()
        .find(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            words.starts_with(&[
                "TLS",
                "1.3",
                "TLS_AES_256_GCM_SHA384",
                "x25519",
                "rustls",
                "2",
            ])
        })
        .unwrap_or_else(|| panic!("no cost row in {text}"));
    assert!(line.trim_end().ends_with(" ms"), "{line}");
}

#[test]
fn scans_are_stored_beside_runs_and_reported() {
    let Some(binary) = nginx_binary() else {
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light; .ci/run does)");
        return;
    };
    let nginx = start_nginx(&binary, "scan-store", INTERMEDIATE_5_7);
    let target = format!("127.0.0.1:{}", nginx.port);
    let dir = scratch("scan-store-files");

    // A run's store as tlslab wrote it before scans were stored (schema 12).
    let results = dir.join("r.db");
    let results_text = results.to_str().unwrap();
    tlslab_succeeds(&[
        "run",
        "--target",
        &target,
        "--sni",
        "localhost",
        "--insecure",
        "--handshakes",
        "5",
        "--warmup",
        "0",
        "--out",
        results_text,
        "--quiet",
    ]);
    {
        let connection = rusqlite::Connection::open(&results).unwrap();
        connection
            .execute_batch("DROP TABLE scans; PRAGMA user_version = 12")
            .unwrap();
    }
    let scan_args = |extra: &[&str]| {
        let mut args = vec!["scan", &target, "--sni", "localhost", "--out", results_text];
        args.extend_from_slice(extra);
        tlslab_succeeds(&args);
    };
    scan_args(&["--timing-handshakes", "2"]);
    let version: i64 = value(&results, "PRAGMA user_version");
    assert_eq!(version, 17);
    scan_args(&["--no-timing"]);
    assert_eq!(count(&results, "SELECT count(*) FROM scans"), 2);
    assert_eq!(count(&results, "SELECT count(*) FROM runs"), 1);
    let grades: Vec<String> = column(&results, "SELECT grade FROM scans ORDER BY id", []);
    assert_eq!(grades, ["T", "T"]);
    let stored: String = value(&results, "SELECT report FROM scans ORDER BY id LIMIT 1");
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["timing"]["rows"].as_array().unwrap().len(), 18);

    // The run's report gains a scan section per scan.
    let markdown = dir.join("r.md");
    tlslab_succeeds(&["report", results_text, "-o", markdown.to_str().unwrap()]);
    let text = std::fs::read_to_string(&markdown).unwrap();
    assert!(text.contains("## Summary"), "{text}");
    let scans = text
        .split("## Scans")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        scans
            .matches(&format!("### {target} (SNI localhost), "))
            .count(),
        2,
        "{scans}"
    );
    for expected in [
        "| versions | TLS 1.3, TLS 1.2 |",
        "| TLS 1.3 groups | x25519, secp256r1, secp384r1 (",
        "| certificate | O=tlslab, CN=localhost, ECDSA P-256, ecdsa-with-SHA256,",
        "| grade | T (score ",
        "- T: the chain is not trusted by the system roots",
        "| 5.7 | intermediate | matches |",
        "| 5.7 | modern | disable TLS 1.2 |",
        "2 handshakes per choice after 1 warm-up",
        "| TLS 1.3 | TLS_AES_128_GCM_SHA256 | x25519 | rustls | 2 | ",
    ] {
        assert!(scans.contains(expected), "'{expected}' not in {scans}");
    }
    // Only the timed scan has a cost table.
    assert_eq!(
        scans.matches("#### Cost of each choice").count(),
        1,
        "{scans}"
    );

    // tlslab export --scans: one JSON line per scan, the scan's --json object inside.
    let exported = tlslab_succeeds(&["export", results_text, "--scans"]);
    let lines: Vec<Value> = exported
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{exported}");
    assert_eq!(lines[0]["target"], target.as_str());
    assert_eq!(lines[0]["scan"]["grade"]["letter"], "T");
    assert_eq!(lines[0]["scan"]["timing"]["handshakes_per_choice"], 2);
    assert!(lines[1]["scan"]["timing"].is_null());

    // A store of scans alone: an HTML report of them.
    let alone = dir.join("scans.db");
    tlslab_succeeds(&[
        "scan",
        &target,
        "--sni",
        "localhost",
        "--timing-handshakes",
        "2",
        "--out",
        alone.to_str().unwrap(),
    ]);
    let html = dir.join("scans.html");
    tlslab_succeeds(&[
        "report",
        alone.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2 id=\"scans\">Scans</h2>"), "{page}");
    assert!(page.contains("<h4>Cost of each choice</h4>"), "{page}");
    assert!(
        page.contains(
            "<td>TLS 1.2</td><td class=\"text\">TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256</td>"
        ),
        "{page}"
    );

    // --out onto a file that is not a store: refused before any connection.
    let text_file = dir.join("notes.txt");
    std::fs::write(&text_file, "notes").unwrap();
    let output = tlslab(&["scan", &target, "--out", text_file.to_str().unwrap()]);
    assert_user_error(&output, 2, "not a tlslab results store");
    assert_eq!(std::fs::read_to_string(&text_file).unwrap(), "notes");
}
