//! The lab server as a web server, checked with the tools people load web servers with: ab,
//! h2load, wrk, curl and h2spec (against nginx too), on both TLS backends and the plain-text
//! port.
//!
//! A missing tool skips its test with the reason printed; with TLSLAB_REQUIRE_HTTP_TOOLS=1
//! (as .ci/run sets) it fails instead. Every tool runs under a timeout, so a server that
//! leaves a client hanging fails the test rather than blocking it.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::*;

const BACKENDS: [&str; 2] = ["rustls", "openssl"];

/// The body of `/` on the servers these tests start.
const BODY: u64 = 1000;

/// Longer than any of these tools needs on a loaded 2-core machine; reached only by a hang.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A tool's path: on the PATH, or where `go install` puts h2spec.
fn find_tool(name: &str) -> Option<PathBuf> {
    let mut directories: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    if let Some(gobin) = std::env::var_os("GOBIN") {
        directories.push(gobin.into());
    }
    if let Some(home) = std::env::var_os("HOME") {
        directories.push(Path::new(&home).join("go/bin"));
    }
    // nginx, for a PATH without the sbin directories.
    directories.push("/usr/sbin".into());
    directories
        .into_iter()
        .map(|directory| directory.join(name))
        .find(|path| path.is_file())
}

/// The tool, or `None` after saying why the test skips; a failure instead when
/// TLSLAB_REQUIRE_HTTP_TOOLS=1.
fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = find_tool(name);
    if found.is_none() {
        let reason = format!("{name} is not installed ({package}; .ci/run installs it)");
        assert!(
            std::env::var("TLSLAB_REQUIRE_HTTP_TOOLS").as_deref() != Ok("1"),
            "TLSLAB_REQUIRE_HTTP_TOOLS=1 but {reason}"
        );
        eprintln!("SKIPPED: {reason}");
    }
    found
}

/// A `tlslab serve` child: its TLS and plain-text addresses, from the control channel's first
/// line. It exits when its stdin closes; killed on drop.
struct Lab {
    child: Child,
    _input: ChildStdin,
    tls: SocketAddr,
    plain: SocketAddr,
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Lab {
    fn start(backend: &str) -> Lab {
        Lab::start_with(Command::new(env!("CARGO_BIN_EXE_tlslab")), backend)
    }

    /// The lab server in network namespace `namespace`.
    fn start_in(namespace: &Namespace, backend: &str) -> Lab {
        let mut command = namespace.command();
        command.arg(env!("CARGO_BIN_EXE_tlslab"));
        Lab::start_with(command, backend)
    }

    /// Starts `command` (tlslab, or what runs it) with the arguments of `tlslab serve`.
    fn start_with(mut command: Command, backend: &str) -> Lab {
        let mut child = command
            .args(["serve", "--control", "--listen", "127.0.0.1:0"])
            .args(["--backend", backend, "--body", &BODY.to_string()])
            .env("TLSLAB_PKI_DIR", pki_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("tlslab serve starts");
        let input = child.stdin.take().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("the {backend} lab server did not start: {line:?}"));
        let address = |name: &str| -> SocketAddr {
            ready[name]
                .as_str()
                .unwrap_or_else(|| panic!("no {name} in {ready}"))
                .parse()
                .unwrap()
        };
        let (tls, plain) = (address("listening"), address("plain"));
        assert_ne!(tls, plain);
        Lab {
            child,
            _input: input,
            tls,
            plain,
        }
    }

    fn https(&self, path: &str) -> String {
        format!("https://{}{path}", self.tls)
    }

    fn http(&self, path: &str) -> String {
        format!("http://{}{path}", self.plain)
    }
}

/// Runs `command` to its end, failing the test if it takes longer than [`TIMEOUT`] (a hang).
fn run(command: &mut Command) -> Output {
    let described = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{described} does not start: {error}"));
    // Both pipes are drained on threads of their own, so a chatty tool never blocks.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{described} hung: still running after {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Both streams of a tool that must have succeeded.
fn succeeded(command: &mut Command) -> String {
    let output = run(command);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{command:?} failed:\n{text}");
    text
}

/// The number after `label` on the line that starts with it (after spaces).
fn number_after(text: &str, label: &str) -> u64 {
    text.lines()
        .find_map(|line| line.trim_start().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no '{label}' in:\n{text}"))
}

#[test]
fn ab_keeps_every_connection_alive_over_tls_and_plain_text() {
    let Some(ab) = tool("ab", "apt-get install apache2-utils") else {
        return;
    };
    for backend in BACKENDS {
        let lab = Lab::start(backend);
        for url in [lab.https("/"), lab.http("/")] {
            let text = succeeded(Command::new(&ab).args(["-k", "-n", "2000", "-c", "20", &url]));
            let context = format!("{backend} {url}:\n{text}");
            assert_eq!(number_after(&text, "Complete requests:"), 2000, "{context}");
            assert_eq!(number_after(&text, "Failed requests:"), 0, "{context}");
            assert!(!text.contains("Non-2xx"), "{context}");
            // Keep-alive: every request after each connection's first reused it.
            assert_eq!(
                number_after(&text, "Keep-Alive requests:"),
                2000,
                "{context}"
            );
            assert_eq!(number_after(&text, "Document Length:"), BODY, "{context}");
        }
    }
    // `tlslab load --format ab` prints every field ab prints, so scripts that read ab read
    // tlslab, and the server's software as ab read it from the lab server's `Server` field.
    let lab = Lab::start("rustls");
    let url = lab.https("/");
    let fields = |text: &str| -> BTreeMap<String, String> {
        text.lines()
            .filter(|line| !line.starts_with(' '))
            .filter_map(|line| line.split_once(":  "))
            .map(|(key, value)| (key.to_string(), value.trim().to_string()))
            .collect()
    };
    let keys = |text: &str| -> BTreeSet<String> { fields(text).into_keys().collect() };
    let ab_text = succeeded(Command::new(&ab).args(["-k", "-n", "200", "-c", "2", &url]));
    let theirs = keys(&ab_text);
    let our_text = succeeded(
        Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args([
                "load",
                &url,
                "--insecure",
                "-n",
                "200",
                "-c",
                "2",
                "--format",
                "ab",
            ])
            .arg("--out")
            .arg(scratch("ab-layout").join("load.db"))
            .env("TLSLAB_PKI_DIR", pki_dir()),
    );
    let ours = keys(&our_text);
    let missing: Vec<&String> = theirs.difference(&ours).collect();
    assert!(
        missing.is_empty(),
        "ab prints {missing:?}, tlslab does not; ab: {theirs:?}, tlslab: {ours:?}"
    );
    for key in ["SSL/TLS Protocol", "Server Temp Key", "TLS Server Name"] {
        assert!(ours.contains(key), "{key}: {ours:?}");
    }
    let software = |text: &str| fields(text).get("Server Software").cloned();
    let expected = format!("tlslab/{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        software(&ab_text).as_deref(),
        Some(expected.as_str()),
        "{ab_text}"
    );
    assert_eq!(software(&our_text), software(&ab_text), "{our_text}");
}

/// h2load's "requests: N total, N started, N done, N succeeded, N failed, N errored" line.
fn assert_h2load_all_succeeded(text: &str, requests: u64, context: &str) {
    let line = text
        .lines()
        .find(|line| line.starts_with("requests:"))
        .unwrap_or_else(|| panic!("no requests line ({context}):\n{text}"));
    let count = |what: &str| -> u64 {
        line.split(',')
            .find_map(|part| part.trim().strip_suffix(what))
            .and_then(|number| {
                number
                    .trim()
                    .trim_start_matches("requests:")
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no '{what}' in {line}"))
    };
    assert_eq!(count(" succeeded"), requests, "{context}: {line}");
    assert_eq!(count(" errored"), 0, "{context}: {line}");
    assert_eq!(count(" failed"), 0, "{context}: {line}");
}

#[test]
fn h2load_over_http1_http2_and_h2c_gets_every_answer() {
    let Some(h2load) = tool("h2load", "apt-get install nghttp2-client") else {
        return;
    };
    for backend in BACKENDS {
        let lab = Lab::start(backend);
        let https = lab.https("/");
        let http = lab.http("/");
        let runs: [(&str, Vec<&str>); 3] = [
            // HTTP/1.1 keep-alive: each of the 10 clients sends its next request on the same
            // connection (this hung before the lab server used hyper).
            (
                "h1",
                vec!["--h1", "-n", "2000", "-c", "10", "-m", "1", &https],
            ),
            ("h2", vec!["-n", "2000", "-c", "10", "-m", "10", &https]),
            // h2c with prior knowledge on the plain-text port.
            ("h2c", vec!["-n", "2000", "-c", "10", "-m", "10", &http]),
        ];
        for (name, args) in runs {
            let text = succeeded(Command::new(&h2load).args(&args));
            let context = format!("{backend} {name}");
            assert_h2load_all_succeeded(&text, 2000, &context);
            let protocol = if name == "h1" { "http/1.1" } else { "h2" };
            assert!(
                text.contains(&format!("Application protocol: {protocol}")),
                "{context}:\n{text}"
            );
        }
    }
}

#[test]
fn wrk_over_tls_gets_only_successful_answers() {
    let Some(wrk) = tool("wrk", "apt-get install wrk") else {
        return;
    };
    for backend in BACKENDS {
        let lab = Lab::start(backend);
        let text = succeeded(Command::new(&wrk).args(["-t2", "-c20", "-d2s", &lab.https("/")]));
        let requests = text
            .lines()
            .find_map(|line| line.trim().split_once(" requests in "))
            .and_then(|(count, _)| count.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{backend}: no request count in:\n{text}"));
        assert!(requests > 0, "{backend}:\n{text}");
        assert!(!text.contains("Socket errors"), "{backend}:\n{text}");
        assert!(!text.contains("Non-2xx"), "{backend}:\n{text}");
    }
}

/// curl's `-w` line per URL: status, connections opened, bytes downloaded.
fn curl_transfers(curl: &Path, args: &[&str]) -> Vec<(u16, u64, u64)> {
    let text = succeeded(
        Command::new(curl)
            .args([
                "-sS",
                "-k",
                "-w",
                "%{http_code} %{num_connects} %{size_download}\\n",
            ])
            .args(args),
    );
    text.lines()
        .map(|line| {
            let fields: Vec<u64> = line
                .split_whitespace()
                .map(|field| field.parse().unwrap())
                .collect();
            (fields[0] as u16, fields[1], fields[2])
        })
        .collect()
}

/// `curl --http1.0` offers ALPN `http/1.0` alone: both lab servers select it (rustls refused
/// the handshake with `no_application_protocol`; OpenSSL selected nothing) and hyper's
/// HTTP/1 answers with HTTP/1.0.
#[test]
fn curl_http1_0_over_tls_negotiates_http1_0_and_gets_the_page() {
    let Some(curl) = tool("curl", "apt-get install curl") else {
        return;
    };
    for backend in BACKENDS {
        let lab = Lab::start(backend);
        let output = run(Command::new(&curl)
            .args(["-sS", "-k", "-v", "--http1.0", "-o", "/dev/null"])
            .args(["-w", "%{http_code} %{size_download}\\n"])
            .arg(lab.https("/")));
        let (answer, verbose) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        let context = format!("{backend}:\n{answer}{verbose}");
        assert!(output.status.success(), "{context}");
        assert_eq!(answer.trim(), format!("200 {BODY}"), "{context}");
        assert!(verbose.contains("< HTTP/1.0 200 OK"), "{context}");
        // "ALPN: server accepted http/1.0" (curl 7.88), "ALPN, server accepted to use
        // http/1.0" (older).
        assert!(
            verbose.lines().any(|line| line.contains("ALPN")
                && line.contains("server accepted")
                && line.contains("http/1.0")),
            "{context}"
        );
    }
}

/// A network namespace of its own, with its loopback up, removed on drop: its counters
/// (`/proc/PID/net/netstat` of a process inside) count only what happens in it.
struct Namespace {
    name: String,
}

impl Namespace {
    /// The namespace, or `None` after saying why it cannot be made here.
    fn create(purpose: &str) -> Option<Namespace> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIPPED: not root: a network namespace needs CAP_SYS_ADMIN");
            return None;
        }
        let name = format!("tlslab-{purpose}-{}", std::process::id());
        let added = Command::new("ip").args(["netns", "add", &name]).output();
        if !added.as_ref().is_ok_and(|output| output.status.success()) {
            eprintln!("SKIPPED: `ip netns add` does not work here (install iproute2): {added:?}");
            return None;
        }
        let namespace = Namespace { name };
        let up = namespace
            .command()
            .args(["ip", "link", "set", "lo", "up"])
            .status()
            .unwrap();
        assert!(up.success(), "cannot bring up the namespace's loopback");
        Some(namespace)
    }

    /// `ip netns exec NAME`, for the program and arguments to add.
    fn command(&self) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name]);
        command
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
    }
}

/// How many ACKs the kernel has sent on its delayed-ACK timer in the network namespace of
/// process `pid` (`TcpExt: DelayedACKs`), or `None` where it does not say.
fn delayed_acks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/netstat")).ok()?;
    let mut lines = text.lines().filter(|line| line.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let at = names
        .split_whitespace()
        .position(|name| name == "DelayedACKs")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

/// ApacheBench without keep-alive over TLS 1.3: ab leaves Nagle on, writes its Finished, then
/// its request, which the kernel holds until the Finished is acknowledged. The lab servers send
/// nothing after the client's Finished (no tickets by default), so before they acknowledged it
/// themselves the ACK came from the server kernel's delayed-ACK timer, 40 ms later, once per
/// connection. Observed without timing: the namespace's count of ACKs sent by that timer,
/// which is one per connection without the fix (20 of 20 here) and none with it.
#[test]
fn ab_without_keep_alive_waits_for_no_delayed_ack_after_its_finished() {
    let Some(ab) = tool("ab", "apt-get install apache2-utils") else {
        return;
    };
    let Some(namespace) = Namespace::create("ack") else {
        return;
    };
    const CONNECTIONS: u64 = 20;
    for backend in BACKENDS {
        let lab = Lab::start_in(&namespace, backend);
        let Some(before) = delayed_acks(lab.child.id()) else {
            eprintln!("SKIPPED: this kernel does not count delayed ACKs in /proc/net/netstat");
            return;
        };
        let text = succeeded(namespace.command().arg(&ab).args([
            "-n",
            &CONNECTIONS.to_string(),
            "-c",
            "1",
            &lab.https("/"),
        ]));
        let after = delayed_acks(lab.child.id()).unwrap();
        let context = format!("{backend}:\n{text}");
        assert_eq!(
            number_after(&text, "Complete requests:"),
            CONNECTIONS,
            "{context}"
        );
        assert_eq!(number_after(&text, "Failed requests:"), 0, "{context}");
        assert!(text.contains("TLSv1.3"), "{context}");
        // Not a strict zero: a server descheduled for 40 ms between reading a Finished and
        // acknowledging it (a very busy machine) leaves that one to the timer. The stall made
        // one per connection.
        let timer_acks = after - before;
        assert!(
            timer_acks < CONNECTIONS / 2,
            "{backend}: {timer_acks} delayed ACKs for {CONNECTIONS} connections, each a 40 ms \
             stall of a client with Nagle on\n{text}"
        );
    }
}

#[test]
fn curl_reuses_one_connection_and_the_site_answers_each_path() {
    let Some(curl) = tool("curl", "apt-get install curl") else {
        return;
    };
    for backend in BACKENDS {
        let lab = Lab::start(backend);
        for (name, version, root, sized) in [
            ("TLS", "--http1.1", lab.https("/"), lab.https("/r/12345")),
            ("TLS", "--http2", lab.https("/"), lab.https("/r/12345")),
            // Not h2c: Debian 12's curl 7.88 breaks its second request on a reused
            // prior-knowledge connection, nginx's too ("Error in the HTTP2 framing layer");
            // h2load covers h2c.
            ("plain", "--http1.1", lab.http("/"), lab.http("/r/12345")),
        ] {
            let context = format!("{backend} {name} {version}");
            let transfers = curl_transfers(
                &curl,
                &[version, "-o", "/dev/null", "-o", "/dev/null", &root, &sized],
            );
            assert_eq!(
                transfers,
                [(200, 1, BODY), (200, 0, 12345)],
                "{context}: two answers, one connection"
            );
        }
        let transfers = curl_transfers(
            &curl,
            &[
                "-o",
                "/dev/null",
                "-o",
                "/dev/null",
                "-o",
                "/dev/null",
                &lab.https("/nope"),
                &lab.https("/r/999999999999"),
                &lab.https("/r/30KB"),
            ],
        );
        let statuses: Vec<u16> = transfers.iter().map(|transfer| transfer.0).collect();
        assert_eq!(statuses, [404, 413, 400], "{backend}");
        // HEAD: the length of the body it would send, and no body.
        let head = succeeded(Command::new(&curl).args(["-sS", "-k", "-I", &lab.https("/r/5000")]));
        assert!(head.contains("content-length: 5000"), "{backend}:\n{head}");
        assert!(
            head.contains("content-type: application/octet-stream"),
            "{backend}:\n{head}"
        );
    }
}

/// An nginx child serving HTTP/2 over TLS with a lab certificate; killed on drop.
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

fn start_nginx(binary: &Path, dir: &Path) -> Nginx {
    let paths = stdout(&tlslab(&["pki", "--cert", "ecdsa-p256", "--chain", "1"]));
    let path_of = |name: &str| {
        paths
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {paths}"))
            .to_string()
    };
    let (chain, key) = (path_of("chain"), path_of("key"));
    let port = closed_port();
    let d = dir.display();
    let config = format!(
        "daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {chain};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.2 TLSv1.3;
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
        .arg(dir)
        .arg("-c")
        .arg(&config_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
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

/// h2spec over TLS against `port`: the tests it passed and how many it ran, from its JUnit
/// report.
fn h2spec_passed(h2spec: &Path, port: u16, report: &Path) -> (BTreeSet<String>, usize) {
    // h2spec exits non-zero when any test fails; the report says which.
    let output = run(Command::new(h2spec)
        .args(["-t", "-k", "-h", "127.0.0.1", "-p", &port.to_string()])
        .arg("-j")
        .arg(report));
    let xml = std::fs::read_to_string(report).unwrap_or_else(|_| {
        panic!(
            "h2spec wrote no report: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let attribute = |element: &str, name: &str| -> String {
        let start = element
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("no {name} in {element}"))
            + name.len()
            + 2;
        element[start..][..element[start..].find('"').unwrap()].to_string()
    };
    let mut passed = BTreeSet::new();
    let mut total = 0;
    let mut previous_package = String::new();
    let mut index = 0;
    for case in xml.split("<testcase ").skip(1) {
        total += 1;
        // A test case's own content ends where the next one or its suite does.
        let case = case.split("</testcase>").next().unwrap();
        // Descriptions repeat within a section: a test is its section, its place there and
        // its description (both reports come from the same h2spec, in the same order).
        let package = attribute(case, "package");
        index = if package == previous_package {
            index + 1
        } else {
            1
        };
        previous_package.clone_from(&package);
        if case.contains("<failure") || case.contains("<error") || case.contains("<skipped") {
            continue;
        }
        passed.insert(format!(
            "{package}/{index} {}",
            attribute(case, "classname")
        ));
    }
    assert!(total > 100, "h2spec ran {total} tests:\n{xml}");
    (passed, total)
}

#[test]
fn h2spec_passes_the_lab_server_wherever_it_passes_nginx() {
    let Some(h2spec) = tool(
        "h2spec",
        "go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible",
    ) else {
        return;
    };
    let Some(nginx_binary) = tool("nginx", "apt-get install nginx-light") else {
        return;
    };
    let dir = scratch("h2spec");
    let nginx = start_nginx(&nginx_binary, &dir);
    let (nginx_passed, total) = h2spec_passed(&h2spec, nginx.port, &dir.join("nginx.xml"));
    drop(nginx);
    eprintln!("h2spec: nginx passes {} of {total}", nginx_passed.len());
    for backend in BACKENDS {
        let lab = Lab::start(backend);
        let (passed, total) =
            h2spec_passed(&h2spec, lab.tls.port(), &dir.join(format!("{backend}.xml")));
        eprintln!(
            "h2spec: the {backend} lab server passes {} of {total}",
            passed.len()
        );
        let missing: Vec<&String> = nginx_passed.difference(&passed).collect();
        assert!(
            missing.is_empty(),
            "the {backend} lab server fails what nginx passes: {missing:#?}"
        );
    }
}
