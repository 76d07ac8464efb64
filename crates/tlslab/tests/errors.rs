//! End-to-end: bad input and failing peers give clear errors and lose no sample.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use support::*;

#[test]
fn configuration_mistakes_exit_2_with_error_and_hint() {
    let dir = scratch("mistakes");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "tls = [\"1.3\"]\nhandshakess = 10\n").unwrap();
    assert_user_error(&tlslab(&["run", bad.to_str().unwrap()]), 2, "handshakess");
    assert_user_error(&tlslab(&["run", "missing.toml"]), 2, "missing.toml");
    assert_user_error(
        &tlslab(&["run", "--tls", "1.2", "--group", "x25519mlkem768"]),
        2,
        "only in TLS 1.3",
    );
    assert_user_error(&tlslab(&["run", "--cert", "rsa1024"]), 2, "ecdsa-p256");
    assert_user_error(&tlslab(&["run", "--chain", "6"]), 2, "1 to 5");
    assert_user_error(&tlslab(&["run", "--timeout", "soon"]), 2, "soon");
    assert_user_error(&tlslab(&["run", "--target", "nohost"]), 2, "host:port");
    assert_user_error(&tlslab(&["export", "nothing.db"]), 2, "nothing.db");
    // A store path that exists is not overwritten.
    let taken = Run::new(&dir, "taken").args("-n 1");
    std::fs::write(taken.db(), "keep me").unwrap();
    let taken = taken.fails(2, "the file exists and is not a tlslab results store");
    assert_eq!(std::fs::read_to_string(&taken.db).unwrap(), "keep me");
}

#[test]
fn a_closed_port_stores_every_attempt_as_refused_and_exits_1() {
    let dir = scratch("refused");
    let refused = Run::new(&dir, "refused")
        .option("--target", format!("127.0.0.1:{}", closed_port()))
        .args("-n 20 --warmup 2")
        .fails(1, "refused");
    let (total, refused_count): (i64, i64) = row(
        &refused.db,
        "SELECT COUNT(*), SUM(error = 'refused') FROM samples",
    );
    assert_eq!((total, refused_count), (22, 22));
    assert!(
        refused.summary.contains("20 refused"),
        "{}",
        refused.summary
    );
}

/// A server that answers every connection with `reply` (or nothing) and hangs on.
fn fake_server(reply: &'static [u8]) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer);
                if !reply.is_empty() {
                    let _ = stream.write_all(reply);
                }
                std::thread::sleep(Duration::from_secs(3));
            });
        }
    });
    port
}

/// A run against the fake server on `port`, every handshake measured (no warm-up).
fn against_fake_server(dir: &std::path::Path, name: &str, port: u16) -> Run {
    Run::new(dir, name)
        .option("--target", format!("127.0.0.1:{port}"))
        .args("--sni localhost --warmup 0")
}

#[test]
fn a_server_that_is_not_tls_is_classified_and_the_run_goes_on() {
    let dir = scratch("garbage");
    let port = fake_server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    let summary = against_fake_server(&dir, "garbage", port)
        .args("-n 10 --json")
        .fails(1, "not_tls")
        .json();
    assert_eq!(summary["configs"][0]["errors"]["not_tls"], 10, "{summary}");
}

#[test]
fn a_silent_server_times_out_per_attempt() {
    let dir = scratch("silent");
    let port = fake_server(b"");
    let silent = against_fake_server(&dir, "silent", port)
        .args("-n 3 --timeout 300ms --json")
        .fails(1, "timeout");
    let (timeouts, with_connect): (i64, i64) = row(
        &silent.db,
        "SELECT SUM(error = 'timeout'), SUM(tcp_connected IS NOT NULL AND client_hello_sent IS NOT NULL) FROM samples",
    );
    // The partial timeline of a timed-out attempt is kept.
    assert_eq!((timeouts, with_connect), (3, 3));
    // Tolerating failures turns the exit code to 0.
    against_fake_server(&dir, "tolerant", port)
        .args("-n 2 --timeout 200ms --max-error-rate 1")
        .succeeds();
}

#[test]
fn an_interrupted_run_keeps_every_sample_and_is_marked_incomplete() {
    // Ctrl-C and SIGTERM (what a service manager or `kill` sends) are the same request.
    for signal in ["INT", "TERM"] {
        interrupt_with(signal);
    }
}

fn interrupt_with(signal: &str) {
    let dir = scratch(&format!("interrupt-{signal}"));
    let run = Run::new(&dir, "interrupted").args("-n 1000000");
    let child = run
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the store exists and samples are being taken (WAL mode keeps the main
    // file small until a checkpoint, so its size says little).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !run.db().exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never created its store"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_user_error(&output, 130, "interrupted");
    let (complete, attempted, stored): (bool, i64, i64) = row(
        run.db(),
        "SELECT complete, attempted, (SELECT COUNT(*) FROM samples) FROM runs",
    );
    assert!(!complete);
    assert!(stored > 0 && stored < 1_000_020);
    assert_eq!(stored, attempted);
}

#[test]
fn a_broken_threshold_exits_4_and_names_the_config_and_what_it_measured() {
    let dir = scratch("thresholds");
    // No handshake takes a microsecond: both Configs break it.
    let broken = Run::new(&dir, "broken")
        .args("--tls 1.2,1.3 -n 10 --warmup 0")
        .option("--threshold", "p99<1us")
        .option("--threshold", "errors<1%")
        .output();
    assert_eq!(broken.status.code(), Some(4), "{}", stderr(&broken));
    let text = stderr(&broken);
    for version in ["tls1.2", "tls1.3"] {
        assert!(
            text.contains(&format!("error: threshold 'p99<1us' broken by '{version} ")),
            "{text}"
        );
    }
    assert!(!text.contains("errors<1%"), "no error was made: {text}");
    assert!(
        text.contains("hint: 2 of 2 Configs broke a threshold"),
        "{text}"
    );
    // Generous limits hold, also from an experiment file, and a scoped one only where it
    // applies.
    let experiment = dir.join("thresholds.toml");
    std::fs::write(
        &experiment,
        "tls = [\"1.2\", \"1.3\"]\nhandshakes = 10\nwarmup = 0\n\
         thresholds = [\"p99<10s\", \"errors<=0%\", \"rate>1/s\", \"tls1.2: server_response.max<10s\"]\n",
    )
    .unwrap();
    Run::new(&dir, "kept")
        .arg(experiment.to_str().unwrap())
        .succeeds();
    let scoped = Run::new(&dir, "scoped")
        .args("--tls 1.2,1.3 -n 10 --warmup 0")
        .option("--threshold", "tls1.3: median<1us")
        .output();
    assert_eq!(scoped.status.code(), Some(4));
    assert!(
        !stderr(&scoped).contains("by 'tls1.2"),
        "{}",
        stderr(&scoped)
    );
}

/// An error's `error:` line, one `caused by:` line or more (its source chain), then its
/// `hint:`, in that order, with the exit code; `causes` are found in the `caused by:` lines in
/// the order given, each on a line of its own.
fn assert_cause_chain(output: &std::process::Output, code: i32, error: &str, causes: &[&str]) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(code), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = |prefix: &str| lines.iter().position(|line| line.starts_with(prefix));
    let (Some(first), Some(caused), Some(hint)) = (at("error: "), at("caused by: "), at("hint: "))
    else {
        panic!("no error, caused by and hint lines: {text}");
    };
    assert!(first < caused && caused < hint, "{text}");
    assert!(lines[first].contains(error), "'{error}' not in: {text}");
    assert!(
        lines[caused..hint]
            .iter()
            .all(|line| line.starts_with("caused by: ")),
        "{text}"
    );
    let mut next = caused;
    for cause in causes {
        let Some(found) = (next..hint).find(|&line| lines[line].contains(cause)) else {
            panic!("'{cause}' not in a caused by line after line {next}: {text}");
        };
        next = found + 1;
    }
    assert!(lines[hint].len() > "hint: ".len(), "an empty hint: {text}");
}

#[test]
fn an_error_from_deep_inside_prints_its_cause_chain_and_exit_code() {
    let dir = scratch("cause-chain");
    // The store's directory is a regular file: the machine's problem, exit 3, with the
    // system's own words (its errno) as the cause.
    std::fs::write(dir.join("file"), "a regular file").unwrap();
    let store = dir.join("file").join("x.db");
    let output = tlslab(&["run", "-n", "1", "--out", store.to_str().unwrap()]);
    assert_cause_chain(
        &output,
        3,
        "cannot create the results store",
        &["(os error "],
    );
    // A CA file that is not PEM: the user's input, exit 2, and no store is left behind.
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, "not a certificate\n").unwrap();
    let never = dir.join("never.db");
    let target = format!("127.0.0.1:{}", closed_port());
    let run_with_ca = |ca: &std::path::Path| {
        tlslab(&[
            "run",
            "-n",
            "1",
            "--target",
            &target,
            "--ca",
            ca.to_str().unwrap(),
            "--out",
            never.to_str().unwrap(),
        ])
    };
    assert_cause_chain(&run_with_ca(&ca), 2, "cannot use --ca", &["is not PEM"]);
    assert!(!never.exists());
    // A PEM section that does not decode: the PEM parser's own reading is the deepest cause,
    // under the PKI crate's.
    let broken = dir.join("broken.pem");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    assert_cause_chain(
        &run_with_ca(&broken),
        2,
        "cannot use --ca",
        &["is not valid PEM", "base64"],
    );
    assert!(!never.exists());
    // An experiment file that cannot be read: the user's input, exit 2, and the system's
    // reason under it.
    let missing = dir.join("missing.toml");
    let output = tlslab(&["run", missing.to_str().unwrap()]);
    assert_cause_chain(
        &output,
        2,
        "cannot read experiment file",
        &["No such file or directory"],
    );
    // The same file given to the scanner: its reading is the cause.
    let output = tlslab(&["scan", &target, "--ca", ca.to_str().unwrap()]);
    assert_cause_chain(&output, 2, "cannot use --ca", &["no CERTIFICATE"]);
}
