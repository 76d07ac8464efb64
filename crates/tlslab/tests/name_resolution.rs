//! Name resolution end to end, against a real lab server started by `tlslab serve`:
//! `--dns per-attempt` times each attempt's lookup as the `dns` phase, `--resolve` pins a
//! name that does not resolve, an IPv6 target, and bad `--resolve` values.

mod support;

use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// A lab server of its own (`tlslab serve`) on `ip`, killed on drop.
struct Server {
    child: Child,
    address: SocketAddr,
}

impl Server {
    /// `None` when nothing can listen on `ip` here (no IPv6 loopback).
    fn start(ip: IpAddr) -> Option<Server> {
        let port = std::net::TcpListener::bind((ip, 0))
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let address = SocketAddr::new(ip, port);
        let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args(["serve", "--listen", &address.to_string()])
            .env("TLSLAB_PKI_DIR", pki_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(address).is_err() {
            assert!(Instant::now() < deadline, "the lab server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Server { child, address })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address `localhost` resolves to first here: where tlslab connects for it.
fn localhost() -> IpAddr {
    ("localhost", 0)
        .to_socket_addrs()
        .expect("localhost resolves")
        .next()
        .expect("localhost has an address")
        .ip()
}

/// Samples whose additive phases do not add up to the handshake (dns included).
const PARTS_MISMATCH: &str = "s.dns + s.tcp_connect + s.client_hello_build + s.server_response \
     + s.server_flight + COALESCE(s.cert_validation, 0) + COALESCE(s.client_signing, 0) \
     + s.client_finish + s.server_finish != s.handshake";

fn name_resolution(db: &std::path::Path) -> serde_json::Value {
    let environment: String = value(db, "SELECT environment FROM runs");
    let environment: serde_json::Value = serde_json::from_str(&environment).unwrap();
    environment["name_resolution"].clone()
}

#[test]
fn per_attempt_lookups_of_localhost_are_the_dns_phase_and_the_phases_still_add_up() {
    let dir = scratch("dns-per-attempt");
    let server = Server::start(localhost()).expect("localhost's address listens");
    let target = format!("localhost:{}", server.address.port());
    let run = Run::new(&dir, "per-attempt")
        .args("--insecure --dns per-attempt -n 60 -c 2 --warmup 0")
        .option("--target", &target)
        .succeeds();
    let all = count_samples(&run.db, "1");
    assert_eq!(all, 60);
    assert_eq!(count_samples(&run.db, "s.outcome = 'ok'"), all);
    // Every sample made its own lookup: resolved after start, before the connect.
    assert_eq!(
        count_samples(
            &run.db,
            "s.dns IS NOT NULL AND s.resolved = s.dns AND s.resolved <= s.tcp_connected"
        ),
        all
    );
    assert_eq!(count_samples(&run.db, PARTS_MISMATCH), 0);
    let family = if server.address.is_ipv4() {
        "ipv4"
    } else {
        "ipv6"
    };
    assert_eq!(
        count_samples(
            &run.db,
            &format!(
                "s.address_family = '{family}' AND s.server = '{}'",
                server.address
            )
        ),
        all
    );
    let resolution = name_resolution(&run.db);
    assert_eq!(resolution[0]["name"], target.as_str(), "{resolution}");
    assert_eq!(resolution[0]["mode"], "per-attempt");
    assert_eq!(resolution[0]["used"], server.address.to_string());
    assert!(
        resolution[0]["resolver"]
            .as_str()
            .is_some_and(|resolver| resolver.starts_with("getaddrinfo")),
        "{resolution}"
    );
    // The summary lists the new phase with the others.
    let summary = Run::new(&dir, "per-attempt-json")
        .args("--insecure --dns per-attempt -n 10 --warmup 0 --json")
        .option("--target", &target)
        .succeeds()
        .json();
    let text = summary.to_string();
    assert!(text.contains("\"dns\""), "{text}");
}

#[test]
fn the_lab_server_is_looked_up_as_localhost() {
    let dir = scratch("dns-lab");
    // The lab server listens on 127.0.0.1: where localhost leads first elsewhere, the run
    // says so before it starts rather than failing every attempt.
    let run = Run::new(&dir, "lab").args("--dns per-attempt -n 20 --warmup 0");
    let output = run.output();
    let resolves_to_lab = ("localhost", 0)
        .to_socket_addrs()
        .is_ok_and(|mut addresses| {
            addresses.any(|address| address.ip().is_loopback() && address.is_ipv4())
        });
    if !resolves_to_lab {
        assert_user_error(&output, 3, "localhost");
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        count_samples(run.db(), "s.outcome = 'ok' AND s.dns IS NOT NULL"),
        20
    );
    assert_eq!(count_samples(run.db(), PARTS_MISMATCH), 0);
    assert_eq!(name_resolution(run.db())[0]["mode"], "per-attempt");
}

#[test]
fn a_pinned_name_is_not_looked_up() {
    let dir = scratch("dns-resolve");
    let server = Server::start(IpAddr::from([127, 0, 0, 1])).unwrap();
    let port = server.address.port();
    let target = format!("tlslab-test.invalid:{port}");
    let pin = format!("tlslab-test.invalid:{port}:127.0.0.1");
    // The name does not resolve: without the pin the run cannot start (exit 3, the name
    // service's answer, as `tlslab scan` gives for it).
    Run::new(&dir, "unpinned")
        .args("--insecure -n 5 --warmup 0")
        .option("--target", &target)
        .fails(3, "--resolve");
    let once = Run::new(&dir, "pinned")
        .args("--insecure -n 20 --warmup 0")
        .option("--target", &target)
        .option("--resolve", &pin)
        .succeeds();
    assert_eq!(
        count_samples(&once.db, "s.outcome = 'ok' AND s.dns IS NULL"),
        20
    );
    let resolution = name_resolution(&once.db);
    assert_eq!(resolution[0]["mode"], "once");
    assert!(
        resolution[0]["resolver"]
            .as_str()
            .is_some_and(|resolver| resolver.starts_with("--resolve")),
        "{resolution}"
    );
    // Per attempt, the pin answers each lookup (as curl's time_namelookup with --resolve).
    let per_attempt = Run::new(&dir, "pinned-per-attempt")
        .args("--insecure --dns per-attempt -n 20 --warmup 0")
        .option("--target", &target)
        .option("--resolve", &pin)
        .succeeds();
    assert_eq!(
        count_samples(
            &per_attempt.db,
            "s.outcome = 'ok' AND s.dns IS NOT NULL AND s.address_family = 'ipv4'"
        ),
        20
    );
    assert_eq!(count_samples(&per_attempt.db, PARTS_MISMATCH), 0);
}

#[test]
fn an_address_that_refuses_falls_back_to_the_next_one() {
    // A server on 127.0.0.1 only, reached under a name whose first address is ::1, where
    // nothing listens (or, without IPv6 loopback, nothing can): every attempt goes on to
    // 127.0.0.1, and each sample says which address and family it used.
    let dir = scratch("dns-fallback");
    let server = Server::start(IpAddr::from([127, 0, 0, 1])).unwrap();
    let port = server.address.port();
    let target = format!("localhost:{port}");
    let used = format!("127.0.0.1:{port}");
    let all_over_ipv4 = |db: &std::path::Path| {
        assert_eq!(
            count_samples(
                db,
                &format!("s.outcome = 'ok' AND s.address_family = 'ipv4' AND s.server = '{used}'")
            ),
            20
        );
        assert_eq!(
            count_samples(
                db,
                PARTS_MISMATCH
                    .replace("s.dns", "COALESCE(s.dns, 0)")
                    .as_str()
            ),
            0
        );
    };
    // The order given by a pin, so the machine's own resolver does not matter.
    let pin = format!("localhost:{port}:[::1],127.0.0.1");
    for (name, mode) in [("pinned", "once"), ("pinned-per-attempt", "per-attempt")] {
        let run = Run::new(&dir, name)
            .args("--insecure -n 20 --warmup 0")
            .option("--dns", mode)
            .option("--target", &target)
            .option("--resolve", &pin)
            .succeeds();
        all_over_ipv4(&run.db);
        // The environment keeps the resolver's preference; the samples what was used.
        assert_eq!(
            name_resolution(&run.db)[0]["used"],
            format!("[::1]:{port}"),
            "{name}"
        );
    }
    // The machine's resolver, when it answers ::1 first for localhost.
    let addresses: Vec<SocketAddr> = ("localhost", port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default();
    if !(addresses.first().is_some_and(SocketAddr::is_ipv6) && addresses.contains(&server.address))
    {
        eprintln!(
            "skipping the unpinned half: localhost resolves to {addresses:?} here, not ::1 first \
             and then 127.0.0.1"
        );
        return;
    }
    let run = Run::new(&dir, "resolved")
        .args("--insecure -n 20 --warmup 0")
        .option("--target", &target)
        .succeeds();
    all_over_ipv4(&run.db);
}

#[test]
fn an_ipv6_target_is_reached_and_its_family_stored() {
    let Some(server) = Server::start("::1".parse().unwrap()) else {
        eprintln!("SKIPPED: no IPv6 loopback here (cannot listen on [::1])");
        return;
    };
    let dir = scratch("dns-ipv6");
    let target = server.address.to_string();
    assert!(target.starts_with("[::1]:"), "{target}");
    for (name, mode) in [("once", "once"), ("per-attempt", "per-attempt")] {
        let run = Run::new(&dir, name)
            .args("--insecure -n 20 --warmup 0")
            .option("--dns", mode)
            .option("--target", &target)
            .succeeds();
        assert_eq!(
            count_samples(
                &run.db,
                &format!(
                    "s.outcome = 'ok' AND s.address_family = 'ipv6' AND s.server = '{target}' AND s.client LIKE '[::1]:%'"
                )
            ),
            20
        );
        let resolution = name_resolution(&run.db);
        assert_eq!(resolution[0]["resolver"], "none: an address literal");
    }
}

#[test]
fn bad_resolve_values_exit_2_with_a_hint() {
    let dir = scratch("dns-bad");
    for (value, mentions) in [
        ("example.com:443", "HOST:PORT:ADDRESS"),
        ("example.com:443:::1", "in brackets"),
        ("example.com:443:localhost", "not an IP address"),
        ("example.com:https:127.0.0.1", "not a port"),
        (
            "example.com:8443:127.0.0.1",
            "does not answer for the target",
        ),
    ] {
        Run::new(&dir, "bad")
            .option("--target", "example.com:443")
            .option("--resolve", value)
            .fails(2, mentions);
    }
    Run::new(&dir, "bad")
        .option("--resolve", "localhost:443:127.0.0.1")
        .fails(2, "external targets only");
    Run::new(&dir, "bad")
        .option("--dns", "sometimes")
        .fails(2, "per-attempt");
    Run::new(&dir, "bad")
        .args("--dns per-attempt --rtt 10ms")
        .fails(2, "emulated link");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "target = \"example.com:443\"\nresolve = [\"example.com\"]\n",
    )
    .unwrap();
    Run::new(&dir, "bad")
        .arg(file.to_str().unwrap())
        .fails(2, "HOST:PORT:ADDRESS");
}
