//! Load shapes end to end: an open loop (`--arrival-rate`) against a real lab server that
//! stalls once, beside a closed loop against the same stall; ramps; `--duration`; the
//! `--bandwidth` rename.

mod support;

use std::process::Stdio;
use std::time::Duration;

use support::*;

/// The lab server, which the test can stall with SIGSTOP.
impl LabServer {
    /// Stops the server for `stall`, `after` from now, on a thread of its own.
    fn stall_later(&self, after: Duration, stall: Duration) -> std::thread::JoinHandle<()> {
        let pid = self.child.id() as libc::pid_t;
        std::thread::spawn(move || {
            std::thread::sleep(after);
            // SAFETY: kill has no memory preconditions; the pid is our own child's.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            std::thread::sleep(stall);
            unsafe { libc::kill(pid, libc::SIGCONT) };
        })
    }
}

/// Successful measured samples, and those of them whose `column` is at least `millis`.
fn slow(db: &std::path::Path, column: &str, millis: i64) -> (i64, i64) {
    let all = count_samples(db, "s.outcome = 'ok' AND s.warmup = 0");
    let slow = count_samples(
        db,
        &format!(
            "s.outcome = 'ok' AND s.warmup = 0 AND s.\"{column}\" >= {}",
            millis * 1_000_000
        ),
    );
    (all, slow)
}

#[test]
fn an_open_loop_shows_a_stall_that_a_closed_loop_hides() {
    let dir = scratch("load-stall");
    let server = LabServer::start();
    let target = format!("127.0.0.1:{}", server.port);
    let stall = Duration::from_millis(500);

    // Open loop: 200 handshakes a second for 3 s, 50 agents sharing the schedule; the server
    // stops for 500 ms a second in. Every attempt scheduled during the stall waits for it.
    let open = Run::new(&dir, "open")
        .args("--tls 1.3 --insecure --arrival-rate 200/s -c 50 -n 600 --block 600 --warmup 0 --verbose")
        .option("--target", &target);
    let stalling = server.stall_later(Duration::from_secs(1), stall);
    let finished = open.succeeds();
    stalling.join().unwrap();
    let (measured, waited) = slow(&finished.db, "latency", 250);
    assert_eq!(measured, 600, "{}", finished.stderr);
    // A 500 ms stall at 200/s holds up 100 scheduled starts; the first half of them wait
    // 250 ms or more. Lower bounds only: a loaded machine can only add waiting.
    assert!(waited >= 25, "{waited} of {measured} waited 250 ms or more");
    let longest: i64 = value(&finished.db, "SELECT MAX(latency) FROM samples");
    assert!(longest >= 400_000_000, "longest latency {longest} ns");
    let delayed = count_samples(&finished.db, "s.schedule_delay > 100000000");
    assert!(delayed > 0, "no start waited for a busy agent");
    assert!(
        finished
            .summary
            .contains("latency    from intended start: p50"),
        "{}",
        finished.summary
    );
    assert!(
        finished.summary.contains("200/s asked"),
        "{}",
        finished.summary
    );

    // Closed loop: 4 agents, each starting its next handshake when its last one ends, against
    // the same stall; the run is interrupted after it. Only the attempts in flight see the
    // stall: the rest were simply not started, and nothing records that they were late.
    let closed = Run::new(&dir, "closed")
        .args("--tls 1.3 --insecure -c 4 -n 1000000 --warmup 0")
        .option("--target", &target);
    let mut child = closed.command().stdout(Stdio::null()).spawn().unwrap();
    let stalling = server.stall_later(Duration::from_secs(1), stall);
    stalling.join().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill has no memory preconditions; the pid is our own child's.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let (handshakes, stalled) = slow(closed.db(), "handshake", 250);
    assert!(handshakes > 100, "{handshakes} handshakes");
    assert!(stalled >= 1, "no closed-loop handshake saw the stall");
    assert_eq!(
        count_samples(closed.db(), "s.latency IS NOT NULL"),
        0,
        "a closed loop has no intended start"
    );
    // The open loop's share of attempts that saw the stall is many times the closed loop's.
    let open_share = waited as f64 / measured as f64;
    let closed_share = stalled as f64 / handshakes as f64;
    assert!(
        open_share >= 2.0 * closed_share,
        "open {waited}/{measured}, closed {stalled}/{handshakes}"
    );
}

#[test]
fn a_ramp_is_a_sweep_of_steps_for_a_duration_with_a_knee_line() {
    let dir = scratch("load-ramp");
    let finished = Run::new(&dir, "ramp")
        .args("--tls 1.3 --arrival-rate 20/s..60/s:3 --duration 3s -c 8 --warmup 0")
        .succeeds();
    // Three steps share 3 s: a second each, so 20, 40 and 60 handshakes.
    for (rate, expected) in [("20/s", 20), ("40/s", 40), ("60/s", 60)] {
        let measured = count_samples(
            &finished.db,
            &format!("c.label LIKE '% {rate}' AND s.warmup = 0"),
        );
        assert_eq!(measured, expected, "{rate}");
        let asked: f64 = value(
            &finished.db,
            &format!("SELECT arrival_rate FROM configs WHERE label LIKE '% {rate}'"),
        );
        assert_eq!(format!("{asked}/s"), rate);
    }
    assert!(
        finished
            .summary
            .contains("knee (p99 latency from intended start against arrival rate):"),
        "{}",
        finished.summary
    );
    let export = tlslab_succeeds(&["export", finished.db.to_str().unwrap()]);
    let header = export.lines().next().unwrap();
    for column in ["arrival_rate", "schedule_delay", "latency"] {
        assert!(header.split(',').any(|name| name == column), "{header}");
    }
    // The report draws the ramp: achieved rate and latency against the asked rate.
    let html = dir.join("ramp.html");
    let charts = dir.join("charts");
    tlslab_succeeds(&[
        "report",
        finished.db.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--png",
        charts.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(html).unwrap();
    let figure = &html[html
        .find("<figure id=\"arrival-rate\"")
        .expect("the arrival-rate chart")..];
    let figure = &figure[..figure.find("</figure>").unwrap()];
    for text in [
        "achieved = asked",
        "latency from intended start",
        "20",
        "60",
    ] {
        assert!(figure.contains(text), "{text} missing from the chart");
    }
    assert!(charts.join("arrival-rate.png").exists());
}

#[test]
fn a_closed_loop_runs_for_its_duration() {
    let dir = scratch("load-closed-duration");
    let finished = Run::new(&dir, "closed")
        .args("--tls 1.2,1.3 --duration 1s -c 2 --warmup 2")
        .succeeds();
    for version in ["1.2", "1.3"] {
        let measured = count_samples(
            &finished.db,
            &format!("c.version = '{version}' AND s.warmup = 0 AND s.outcome = 'ok'"),
        );
        assert!(measured > 10, "{version}: {measured}");
        // Ten blocks of 100 ms each: the measured trials took at least the second asked.
        let trial_ns: i64 = value(
            &finished.db,
            &format!(
                "SELECT SUM(t.duration_ns) FROM trials t JOIN configs c ON c.id = t.config_id WHERE c.version = '{version}' AND t.warmup = 0"
            ),
        );
        assert!(trial_ns >= 1_000_000_000, "{version}: {trial_ns} ns");
        assert_eq!(
            count(
                &finished.db,
                &format!("SELECT COUNT(*) FROM trials t JOIN configs c ON c.id = t.config_id WHERE c.version = '{version}' AND t.warmup = 0")
            ),
            10
        );
    }
}

#[test]
fn the_old_bandwidth_flag_still_works_with_a_warning() {
    let output = tlslab(&["run", "--rate", "0", "-n", "1"]);
    assert_user_error(&output, 2, "--bandwidth");
    let output = tlslab(&["run", "--rate", "100mbit", "--dump-experiment"]);
    assert!(
        stderr(&output).contains("warning: --rate is now --bandwidth"),
        "{}",
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("bandwidth = [\"100mbit\"]"),
        "{}",
        stdout(&output)
    );
    let output = tlslab(&["run", "--duration", "0s", "-n", "1"]);
    assert_user_error(&output, 2, "--duration 0");
    let output = tlslab(&["run", "--arrival-rate", "500", "-n", "1"]);
    assert_user_error(&output, 2, "500/s");
}
