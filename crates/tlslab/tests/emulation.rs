//! Emulated networks end to end: real handshakes through the tun emulator (and netem where the
//! kernel has it), loss, the relay, cleanup after `kill -9`, and the error without privileges.
//!
//! These need root (CAP_NET_ADMIN) for namespaces and TUN devices; CI runs as root. Without
//! it, each test says so and returns.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// TLS 1.3 and 1.2 at an emulated RTT of 100 ms: two and three round trips.
fn round_trips_at_100ms(emulator: &str) {
    let dir = scratch(&format!("rtt-{emulator}"));
    let finished = Run::new(&dir, "rtt")
        .args("--rtt 100ms --tls 1.2,1.3 -n 12 --warmup 1")
        .option("--emulator", emulator)
        .args("--json")
        .succeeds();
    let db = &finished.db;
    let tls13 = median(phase_ms(db, "%tls1.3%", "handshake"));
    let tls12 = median(phase_ms(db, "%tls1.2%", "handshake"));
    // Lower bounds are physics; the upper bounds leave room for a loaded 2-core machine.
    assert!((200.0..260.0).contains(&tls13), "TLS 1.3 median {tls13} ms");
    assert!((300.0..380.0).contains(&tls12), "TLS 1.2 median {tls12} ms");
    let (emulators, rtt): (String, i64) = row(
        db,
        "SELECT group_concat(DISTINCT emulator), max(rtt_ns) FROM configs",
    );
    assert_eq!((emulators.as_str(), rtt), (emulator, 100_000_000));
    // The TCP connect is one measured round trip.
    let fastest_connect: i64 = value(
        db,
        "SELECT min(tcp_connect) FROM samples WHERE outcome = 'ok'",
    );
    assert!(fastest_connect >= 100_000_000, "{fastest_connect} ns");
    // Issue 3's expectation, which loopback cannot show: TLS 1.2 is slower, p < 0.001.
    let summary = finished.json();
    let comparison = &summary["comparisons"]["comparisons"][0];
    assert!(comparison["other"].as_str().unwrap().contains("tls1.3"));
    assert!(comparison["mann_whitney_p"].as_f64().unwrap() < 0.001);
    assert!(comparison["verdict"].as_str().unwrap().contains("faster"));
    for config in summary["configs"].as_array().unwrap() {
        assert_eq!(
            config["network"]["physics"],
            serde_json::Value::Null,
            "{config}"
        );
    }
    // Twelve handshakes are flagged as few (that is what the test can afford at 100 ms);
    // nothing else may be said against them, the physics check least of all.
    let others: Vec<&serde_json::Value> = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|warning| {
            !warning
                .as_str()
                .unwrap()
                .contains("only 12 successful attempts")
        })
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

#[test]
fn tun_emulator_adds_two_and_three_round_trips() {
    require_emulation!();
    round_trips_at_100ms("tun");
}

#[test]
fn netem_emulator_adds_the_same_round_trips_where_the_kernel_has_netem() {
    require_emulation!();
    let dir = scratch("netem-probe");
    let output = Run::new(&dir, "probe")
        .args("--rtt 10ms -n 2 --emulator netem")
        .output();
    if output.status.code() == Some(3) {
        // The kernel lacks netem: the run must say so and name what works instead.
        let text = stderr(&output);
        assert!(text.contains("netem"), "{text}");
        assert!(text.contains("tun") || text.contains("relay"), "{text}");
        eprintln!("SKIPPED: this kernel has no netem qdisc; the tun emulator test covers it");
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    round_trips_at_100ms("netem");
}

#[test]
fn one_percent_loss_raises_the_tail_and_loses_no_sample() {
    require_emulation!();
    let dir = scratch("loss");
    let Finished { db, .. } = Run::new(&dir, "loss")
        .args("--rtt 10ms --loss 0,1% -n 200 -c 4 --warmup 0 --max-error-rate 0.05")
        .succeeds();
    let (stored, attempted): (i64, i64) = row(
        &db,
        "SELECT (SELECT count(*) FROM samples), (SELECT sum(attempted) FROM trials)",
    );
    assert_eq!((stored, attempted), (400, 400));
    let p99 = |loss: f64| -> i64 {
        let mut values: Vec<i64> = column(
            &db,
            "SELECT s.handshake FROM samples s JOIN configs c ON c.id = s.config_id
             WHERE s.outcome = 'ok' AND c.loss = ?1",
            [loss],
        );
        values.sort_unstable();
        values[values.len() * 99 / 100]
    };
    // A lost packet costs a retransmission timeout (≥ 200 ms in Linux TCP), far beyond the
    // 20 ms two-round-trip handshake; at 1% per packet some of 200 handshakes lose one.
    let (clean, lossy) = (p99(0.0), p99(0.01));
    assert!(lossy > clean + 100_000_000, "p99 {clean} ns vs {lossy} ns");
}

#[test]
fn relay_emulator_delays_data_and_says_it_is_lower_fidelity() {
    // The relay needs no privileges, so this runs everywhere.
    let dir = scratch("relay");
    let Finished { db, summary, .. } = Run::new(&dir, "relay")
        .args("--rtt 40ms --tls 1.3 -n 8 --warmup 1 --emulator relay --verbose")
        .succeeds();
    // The relay answers TCP locally, so TLS 1.3 waits one emulated round trip.
    let handshake = median(phase_ms(&db, "%tls1.3%", "handshake"));
    assert!((40.0..100.0).contains(&handshake), "median {handshake} ms");
    assert!(summary.contains("relay emulator"), "{summary}");
    let network: String = value(&db, "SELECT environment FROM runs");
    assert!(network.contains("lower fidelity"), "{network}");
    // The relay cannot drop packets: asking for loss is a usage error, not a silent no-op.
    Run::new(&dir, "lossy")
        .args("--rtt 40ms --loss 1% --emulator relay -n 2")
        .fails(2, "relay");
}

#[test]
fn a_shorter_rtt_does_not_inherit_the_previous_trials_delay() {
    require_emulation!();
    let dir = scratch("rtt-switch");
    // Block size 1: measured trials switch between the two profiles in shuffled order. One
    // warm-up handshake each absorbs the processes' first-handshake cost (about 100 ms of
    // one-time initialisation in client and server), which is not the link's doing.
    let Finished { db, .. } = Run::new(&dir, "switch")
        .args("--rtt 10ms,150ms -n 6 --warmup 1 --block 1")
        .succeeds();
    let slowest_connect: i64 = value(
        &db,
        "SELECT max(s.tcp_connect) FROM samples s JOIN configs c ON c.id = s.config_id
         WHERE c.rtt_ns = 10000000 AND s.warmup = 0",
    );
    // Held behind the 150 ms profile's last packets, a connect would take 75 ms or more.
    assert!(slowest_connect < 40_000_000, "{slowest_connect} ns");
    // With RTT varying, the report draws latency against it.
    let html = dir.join("switch.html");
    tlslab_succeeds(&["report", db.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("<figure id=\"rtt\""), "no RTT chart");
}

#[test]
fn a_saturated_emulated_link_is_named_the_limit_and_a_wide_one_is_not() {
    require_emulation!();
    let dir = scratch("link-limit");
    // Eight agents of about 1 KB of server flight each through 1 Mbit/s: the link carries its
    // bandwidth's worth and the handshakes queue for it; at 1 Gbit/s it is nearly idle. The
    // tun emulator counts what its forwarder carries (netem's queue is the kernel's). TLS
    // 1.2: after a TLS 1.3 handshake each agent waits a handshake's time for the silent lab
    // server's acceptance, and with the handshake inflated by the queue, so is the wait, so
    // a closed loop of them keeps the link about half busy however many agents it has.
    let run = Run::new(&dir, "link")
        .args("--emulator tun --bandwidth 1mbit,1gbit --tls 1.2 -c 8 -n 200 --warmup 0")
        .succeeds();
    let db = &run.db;
    let (bytes, drops): (i64, i64) = row(
        db,
        "SELECT SUM(t.link_bytes_to_client), SUM(t.link_queue_drops) FROM trials t
         JOIN configs c ON c.id = t.config_id WHERE c.rate_bps = 1000000",
    );
    // 200 handshakes' server flights: a few hundred bytes each at least.
    assert!(bytes > 200 * 300, "{bytes} bytes toward the client");
    assert!(drops >= 0);
    let summary = &run.summary;
    // Named as the limit, or (mostly queue) warned about as the link's queue.
    let narrow = summary
        .lines()
        .filter(|line| {
            line.contains("rate1mbit") || line.starts_with("warning:") || line.starts_with("limit:")
        })
        .any(|line| line.contains("rate1mbit") && line.contains("emulated link"));
    assert!(narrow, "the 1 Mbit/s link is not named:\n{summary}");
    assert!(
        !summary
            .lines()
            .any(|line| line.contains("rate1gbit") && line.contains("emulated link")),
        "{summary}"
    );
    // Its queue explains the slow connects: no physics warning about them.
    assert!(!summary.contains("TCP connect"), "{summary}");

    // The report's table says it per Config.
    let markdown = dir.join("link.md");
    tlslab_succeeds(&[
        "report",
        db.to_str().unwrap(),
        "-o",
        markdown.to_str().unwrap(),
    ]);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    let row_of = |label: &str| {
        markdown
            .lines()
            .find(|line| line.starts_with("| ") && line.contains(&format!(" {label} |")))
            .unwrap_or_else(|| panic!("no row for {label}:\n{markdown}"))
            .to_string()
    };
    assert!(
        row_of("rate1mbit").contains("| link"),
        "{}",
        row_of("rate1mbit")
    );
    assert!(
        !row_of("rate1gbit").contains("| link"),
        "{}",
        row_of("rate1gbit")
    );
}

fn namespaces_of(pid: u32) -> Vec<String> {
    let output = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with(&format!("tlslab-{pid}-")))
        .map(String::from)
        .collect()
}

#[test]
fn the_next_run_removes_what_a_killed_run_left() {
    require_emulation!();
    let dir = scratch("killed");
    let mut child = Run::new(&dir, "killed")
        .args("--rtt 50ms -n 10000")
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    while namespaces_of(pid).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the run never built its namespaces"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: no cleanup runs
    child.wait().unwrap();
    assert_eq!(namespaces_of(pid).len(), 2, "kill -9 leaves the namespaces");
    let next = Run::new(&dir, "next")
        .args("--rtt 1ms -n 2 --warmup 0")
        .succeeds();
    assert!(
        next.stderr.contains(&format!("tlslab-{pid}-")),
        "{}",
        next.stderr
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

#[test]
fn without_privileges_tun_is_refused_with_the_alternatives() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        eprintln!("SKIPPED: needs root and setpriv to run tlslab as an unprivileged user");
        return;
    }
    let dir = scratch("unprivileged");
    let pki = dir.join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    // Let the unprivileged user use the scratch directory and reach the binary.
    let _ = Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(&dir)
        .status();
    let output = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "run",
            "--rtt",
            "10ms",
            "--emulator",
            "tun",
            "-n",
            "2",
            "--quiet",
        ])
        .arg("--pki-dir")
        .arg(&pki)
        .arg("--out")
        .arg(dir.join("denied.db"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    if text.contains("Permission denied") && text.contains("exec") {
        eprintln!("SKIPPED: the unprivileged user cannot execute the test binary here: {text}");
        return;
    }
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(text.contains("hint: "), "{text}");
    assert!(
        text.contains("relay"),
        "the hint names the unprivileged alternative: {text}"
    );
}

#[test]
fn a_config_whose_handshakes_all_fail_leaves_the_others_compared() {
    require_emulation!();
    let dir = scratch("comparison-without-a-failed-config");
    // At 99.99% loss no handshake gets through; the summary must still compare the two
    // Configs that have samples, and say which it left out.
    let summary = Run::new(&dir, "all-fail")
        .args("--loss 0%,99.99% --tls 1.2,1.3 -n 4 --warmup 0 --timeout 300ms")
        .args("--max-error-rate 1 --json")
        .succeeds()
        .json();
    let comparisons = summary["comparisons"]["comparisons"]
        .as_array()
        .unwrap_or_else(|| panic!("no comparison: {summary}"));
    assert_eq!(comparisons.len(), 1, "{summary}");
    let compared = [
        summary["comparisons"]["baseline"].as_str().unwrap(),
        comparisons[0]["other"].as_str().unwrap(),
    ];
    assert!(
        compared.iter().all(|label| label.ends_with("loss0%")),
        "{summary}"
    );
    let warnings = summary["warnings"].to_string();
    assert!(
        warnings.contains("left out of the comparison") && warnings.contains("loss99.99%"),
        "{summary}"
    );
}
