//! End-to-end: `tlslab pcap` on real captures that tcpdump makes of real active runs on
//! loopback. Every handshake the run made is found, with the same negotiated version, suite,
//! group and resumption as the run's own samples, and events in the phase model's order.
//!
//! Needs tcpdump and the right to capture (root or CAP_NET_RAW); without them the tests
//! print why and skip. Captures serialise on one lock: every test of this file captures all
//! of loopback's TCP, so two at once would see each other's handshakes.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use support::*;

static CAPTURING: Mutex<()> = Mutex::new(());

/// Starts tcpdump and waits until it captures; `None` (with the reason printed) where it
/// cannot run.
fn tcpdump(dir: &Path, name: &str) -> Option<Tcpdump> {
    tcpdump_in(None, "lo", dir, name, "tcp or udp")
}

/// An active run made while tcpdump captured, and the capture read by `tlslab pcap` with
/// `reading` as further arguments: (active store, passive store).
fn captured_run(
    dir: &Path,
    name: &str,
    arguments: &str,
    reading: &[&str],
) -> Option<(PathBuf, PathBuf)> {
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let capture = tcpdump(dir, name)?;
    let active = Run::new(dir, name).args(arguments).succeeds().db;
    let file = capture.stop();
    let passive = dir.join(format!("{name}-passive.db"));
    let filter = servers_filter(&active);
    let mut command = vec![
        "pcap",
        file.to_str().unwrap(),
        "--filter",
        &filter,
        "--out",
        passive.to_str().unwrap(),
    ];
    command.extend(reading);
    tlslab_succeeds(&command);
    Some((active, passive))
}

/// A BPF filter (tcpdump's syntax) that passes the packets of the lab servers of the run
/// stored in `active`, TCP and UDP: a loopback capture read through it leaves out whatever
/// else (other tests, other processes) used `lo` meanwhile, so its handshakes can be
/// counted exactly.
fn servers_filter(active: &Path) -> String {
    let addresses = rows::<(String,)>(active, "SELECT DISTINCT address FROM configs", []);
    let ports: Vec<String> = addresses
        .iter()
        .map(|(address,)| {
            let (_, port) = address.rsplit_once(':').unwrap();
            format!("port {port}")
        })
        .collect();
    assert!(!ports.is_empty(), "the run stored its lab server's address");
    ports.join(" or ")
}

/// `tlslab pcap` of `capture` into `<dir>/passive.db`, through `filter` when given.
fn read_capture(capture: &Path, dir: &Path, filter: Option<&str>) -> PathBuf {
    let passive = dir.join("passive.db");
    let mut command = vec!["pcap", capture.to_str().unwrap()];
    if let Some(filter) = filter {
        command.extend(["--filter", filter]);
    }
    command.extend(["--out", passive.to_str().unwrap()]);
    tlslab_succeeds(&command);
    passive
}

/// Successful handshakes by what they negotiated.
fn negotiated(db: &Path, columns: &str) -> Vec<(String, i64)> {
    rows::<(String, i64)>(
        db,
        &format!(
            "SELECT {columns}, COUNT(*) FROM samples WHERE outcome = 'ok' AND warmup = 0 \
             GROUP BY 1 ORDER BY 1"
        ),
        [],
    )
}

#[test]
fn every_handshake_of_a_run_is_found_with_what_it_negotiated() {
    let dir = scratch("pcap-versions");
    let Some((active, passive)) = captured_run(
        &dir,
        "versions",
        "--tls 1.2,1.3 --backend rustls,openssl -n 8 --warmup 0",
        &[],
    ) else {
        return;
    };
    assert_eq!(count_samples(&active, "s.outcome = 'ok'"), 32);
    let key = "version || ' ' || suite || ' ' || \"group\"";
    assert_eq!(negotiated(&passive, key), negotiated(&active, key));
    // TLS 1.2 signs in the clear; TLS 1.3's CertificateVerify is encrypted.
    let signed = "version || ' ' || COALESCE(signature_scheme, '-')";
    let tls12 = |db: &Path| {
        negotiated(db, signed)
            .into_iter()
            .filter(|(key, _)| key.starts_with("1.2"))
            .collect::<Vec<_>>()
    };
    assert_eq!(tls12(&passive), tls12(&active));
    assert_eq!(
        count_samples(&passive, "s.signature_scheme IS NULL AND s.version = '1.3'"),
        16
    );

    // Where and when: both ends on loopback, every event in the model's order, the TCP
    // handshake before the TLS one, nothing that a capture cannot see.
    assert_eq!(count_samples(&passive, "s.vantage = 'local'"), 32);
    let ordered = "s.start = 0 AND s.tcp_connected >= s.start \
        AND s.client_hello_sent >= s.tcp_connected \
        AND s.server_hello_received >= s.client_hello_sent \
        AND s.server_flight_received >= s.server_hello_received \
        AND s.client_finished_sent >= s.server_flight_received \
        AND s.handshake_done >= s.client_finished_sent AND s.handshake_done > 0";
    assert_eq!(count_samples(&passive, ordered), 32);
    assert_eq!(
        count_samples(
            &passive,
            "s.cert_verify_start IS NULL AND s.network_rtt_ns > 0"
        ),
        32
    );
    // The same ClientHello sizes as the clients wrote.
    assert_eq!(
        negotiated(&passive, "version || ' ' || client_hello_bytes"),
        negotiated(&active, "version || ' ' || client_hello_bytes")
    );

    // compare, report and export work on it unchanged.
    let passive = passive.to_str().unwrap();
    let comparison = tlslab_succeeds(&["compare", passive]);
    assert!(comparison.contains("Mann-Whitney"), "{comparison}");
    let csv = tlslab_succeeds(&["export", passive]);
    assert_eq!(csv.lines().count(), 33);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains(",vantage,client,server,"));
    let report = dir.join("versions.md");
    tlslab_succeeds(&["report", passive, "-o", report.to_str().unwrap()]);
}

#[test]
fn resumed_handshakes_are_told_apart_by_what_the_server_answered() {
    let dir = scratch("pcap-resumption");
    let Some((active, passive)) = captured_run(
        &dir,
        "resumption",
        "--tls 1.2,1.3 --resume tickets,session-id --skip-invalid -n 8 --warmup 0",
        &[],
    ) else {
        return;
    };
    let resumed = "version || ' ' || COALESCE(resumed, '-')";
    let only_resumed = |db: &Path| {
        negotiated(db, resumed)
            .into_iter()
            .filter(|(key, _)| key.ends_with(" 1"))
            .collect::<Vec<_>>()
    };
    let found = only_resumed(&passive);
    assert!(!found.is_empty(), "no resumed handshake found");
    assert_eq!(found, only_resumed(&active));
    assert!(
        count(
            &passive,
            "SELECT COUNT(*) FROM configs WHERE label LIKE '%resumed%' AND resumption != 'off'"
        ) >= 2
    );
}

#[test]
fn a_run_writes_a_private_key_log_that_decrypts_its_tls13_handshakes() {
    let dir = scratch("pcap-keylog");
    let keys = dir.join("keys.log");
    let keys = keys.to_str().unwrap();
    let Some((active, passive)) = captured_run(
        &dir,
        "keylog",
        &format!(
            "--tls 1.3 --backend rustls,openssl --http 1.1 --resume tickets --early-data 100 \
             -n 6 --warmup 0 --keylog {keys}"
        ),
        &["--keylog", keys],
    ) else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(keys).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "the key log is readable by its owner alone"
    );
    // What only the encrypted messages say: the signature (CertificateVerify), ALPN and
    // 0-RTT acceptance (EncryptedExtensions), the first response byte.
    let decrypted = "COALESCE(signature_scheme, '-') || ' ' || alpn || ' ' \
        || COALESCE(early_data_accepted, '-') || ' ' || (first_byte IS NOT NULL)";
    let found = negotiated(&passive, decrypted);
    assert!(
        found.iter().any(|(key, _)| key.ends_with(" 1 1")),
        "0-RTT accepted and its response found: {found:?}"
    );
    assert_eq!(found, negotiated(&active, decrypted));
    // With keys, the server's flight ends with its Finished and the client's Finished is a
    // message: both in order after the ServerHello.
    assert_eq!(
        count_samples(
            &passive,
            "s.server_flight_received >= s.server_hello_received \
             AND s.client_finished_sent >= s.server_flight_received"
        ),
        12
    );
}

#[test]
fn an_encrypted_client_hello_is_seen_as_offered_and_with_keys_as_accepted() {
    let dir = scratch("pcap-ech");
    let keys = dir.join("keys.log");
    let keys = keys.to_str().unwrap();
    let Some((active, passive)) = captured_run(
        &dir,
        "ech",
        &format!("--tls 1.3 --backend openssl --ech on,off -n 4 --warmup 0 --keylog {keys}"),
        &[],
    ) else {
        return;
    };
    assert_eq!(count_samples(&active, "s.ech = 'accepted'"), 4);
    // Without keys a capture knows only that ECH was offered: its Config says so, and the
    // samples leave acceptance open; those without it are certainly not offered.
    assert_eq!(count_samples(&passive, "c.ech = 'on' AND s.ech IS NULL"), 4);
    assert_eq!(
        count_samples(&passive, "c.ech = 'off' AND s.ech = 'not_offered'"),
        4
    );
    // With the run's key log: the secrets that open an accepted handshake's server flight
    // are named by the inner ClientHello's random, which no packet shows, so acceptance is
    // told apart from rejection. Each sample (found by its client port) says what the run's
    // own sample says.
    let file = dir.join("ech.pcap");
    let decrypted = dir.join("ech-decrypted.db");
    tlslab_succeeds(&[
        "pcap",
        file.to_str().unwrap(),
        "--filter",
        &servers_filter(&active),
        "--keylog",
        keys,
        "--out",
        decrypted.to_str().unwrap(),
    ]);
    let status = |db: &Path| {
        rows::<(String, String)>(
            db,
            "SELECT client, ech FROM samples WHERE outcome = 'ok' ORDER BY client",
            [],
        )
    };
    let statuses = status(&active);
    assert_eq!(statuses.len(), 8);
    assert_eq!(status(&decrypted), statuses);
    // Decrypted, an accepted handshake is timed to its Finished like any other.
    assert_eq!(
        count_samples(
            &decrypted,
            "s.ech = 'accepted' AND s.signature_scheme IS NOT NULL"
        ),
        4
    );
}

#[test]
fn quic_handshakes_are_read_from_their_initial_packets() {
    let dir = scratch("pcap-quic");
    let Some((active, passive)) = captured_run(
        &dir,
        "quic",
        "--transport quic --tls 1.3 --group x25519,x25519mlkem768 --resume off,tickets \
         -n 6 --warmup 0",
        &[],
    ) else {
        return;
    };
    let quic = "c.transport = 'quic'";
    assert_eq!(count_samples(&active, quic), 24);
    assert_eq!(
        count_samples(&passive, &format!("{quic} AND s.outcome = 'ok'")),
        24
    );
    // The ClientHello and ServerHello come from the Initial packets' CRYPTO frames; an
    // x25519mlkem768 ClientHello fills two Initial datagrams (1,200 bytes each), and is put
    // back together from both.
    let key = "version || ' ' || suite || ' ' || \"group\" || ' ' || client_hello_bytes";
    assert_eq!(negotiated(&passive, key), negotiated(&active, key));
    assert_eq!(
        count_samples(
            &passive,
            "s.\"group\" = 'x25519mlkem768' AND s.client_hello_bytes = 2400"
        ),
        12
    );
    // What each ClientHello offered: the hybrid's key share is 1,216 bytes (ML-KEM-768's
    // 1,184-byte key and X25519's 32).
    assert_eq!(
        count_samples(
            &passive,
            "s.offered_key_shares = 'x25519mlkem768:1216' AND s.offered_versions = '1.3' \
             AND s.offered_alpn = 'h3'"
        ),
        12
    );
    let resumed = |db: &Path| {
        negotiated(db, "\"group\" || ' ' || COALESCE(resumed, '-')")
            .into_iter()
            .filter(|(key, _)| key.ends_with(" 1"))
            .collect::<Vec<_>>()
    };
    assert!(
        !resumed(&passive).is_empty(),
        "resumed QUIC handshakes found"
    );
    assert_eq!(resumed(&passive), resumed(&active));
    // Each handshake's events in the phase model's order: the server's Handshake packets
    // end its flight, the client's Finished is its first Handshake packet that can hold one.
    assert_eq!(
        count_samples(
            &passive,
            "s.server_hello_received >= s.client_hello_sent \
             AND s.server_flight_received >= s.server_hello_received \
             AND s.client_finished_sent >= s.server_flight_received \
             AND s.handshake_done >= s.client_finished_sent"
        ),
        24
    );
    assert_eq!(
        count(
            &passive,
            "SELECT COUNT(*) FROM configs WHERE transport = 'quic' AND label LIKE '% quic %'"
        ),
        4
    );
    // A QUIC run checks itself against its packets too: its sockets are matched by port.
    if can_capture() {
        let _capturing = CAPTURING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let capture = dir.join("crosscheck.pcap");
        let finished = Run::new(&dir, "crosscheck")
            .args("--transport quic --tls 1.3 -n 10 --warmup 0")
            .option("--capture", capture.to_str().unwrap())
            .succeeds();
        assert!(
            finished.summary.contains("10 of 10 handshakes found"),
            "{}",
            finished.summary
        );
    }
}

#[test]
fn a_key_log_opens_quic_handshake_packets_in_every_suite() {
    let dir = scratch("pcap-quic-keylog");
    let keys = dir.join("keys.log");
    let keys = keys.to_str().unwrap();
    let Some((active, passive)) = captured_run(
        &dir,
        "quic-keylog",
        &format!(
            "--transport quic --tls 1.3 --suite aes128gcm,aes256gcm,chacha20 --http 3 \
             --resume tickets --early-data 100 -n 4 --warmup 0 --keylog {keys}"
        ),
        &["--keylog", keys],
    ) else {
        return;
    };
    // What only the Handshake packets say: the signature (CertificateVerify), ALPN and 0-RTT
    // acceptance (EncryptedExtensions), under each suite's packet and header protection.
    let decrypted = "suite || ' ' || COALESCE(signature_scheme, '-') || ' ' || alpn || ' ' \
        || COALESCE(early_data_accepted, '-')";
    let found = negotiated(&passive, decrypted);
    assert_eq!(found, negotiated(&active, decrypted));
    assert_eq!(
        found
            .iter()
            .filter(|(key, _)| key.ends_with(" h3 1"))
            .count(),
        3,
        "0-RTT accepted in each suite: {found:?}"
    );
    // Both Finished messages are read: the flight ends with the server's, the handshake
    // with the client's.
    assert_eq!(
        count_samples(
            &passive,
            "s.server_flight_received >= s.server_hello_received \
             AND s.client_finished_sent >= s.server_flight_received \
             AND s.signature_scheme IS NOT NULL"
        ),
        3
    );
    assert_eq!(count_samples(&passive, "s.outcome = 'ok'"), 12);
    // The 1-RTT packets, opened with the traffic secrets: the first byte of the HTTP/3
    // response (the server's first STREAM frame on a request stream) for every full
    // handshake, after the ClientHello.
    assert_eq!(
        count_samples(
            &passive,
            "s.early_data_accepted IS NULL AND s.first_byte >= s.client_hello_sent"
        ),
        3
    );
    assert_eq!(
        count_samples(&passive, "s.first_byte < s.client_hello_sent"),
        0
    );
}

#[test]
fn a_hello_retry_request_is_seen_by_the_run_and_in_its_packets() {
    let dir = scratch("pcap-hello-retry");
    let Some((active, passive)) = captured_run(
        &dir,
        "hello-retry",
        "--tls 1.3 --hello-retry off,on --transport tcp,quic -n 4 --warmup 0",
        &[],
    ) else {
        return;
    };
    // The client's first key share is for another group than the Config's, so the lab server
    // asks again: every `hrr` handshake, over TCP and QUIC, and no other.
    assert_eq!(count_samples(&active, "c.hello_retry = 1"), 8);
    assert_eq!(count_samples(&passive, "s.hello_retry = 1"), 8);
    assert_eq!(count_samples(&passive, "s.hello_retry = 0"), 8);
    // The wrong guess is in the ClientHello: the Config's group listed first, the share for
    // the other one.
    assert_eq!(
        count_samples(
            &passive,
            "s.offered_groups = 'x25519,secp256r1' AND s.offered_key_shares = 'secp256r1:65'"
        ),
        8
    );
    assert_eq!(
        count(
            &passive,
            "SELECT COUNT(*) FROM configs WHERE label LIKE '% hrr%' AND hello_retry = 1"
        ),
        2
    );
    // Over TCP the rustls client says so too, and both still negotiate the Config's group.
    let key = "(SELECT transport FROM configs WHERE id = config_id) || ' ' || \"group\" || ' ' \
        || COALESCE(hello_retry, '-')";
    let tcp = |db: &Path| {
        negotiated(db, key)
            .into_iter()
            .filter(|(key, _)| key.starts_with("tcp"))
            .collect::<Vec<_>>()
    };
    assert_eq!(tcp(&passive), tcp(&active));
    assert_eq!(count_samples(&passive, "s.\"group\" = 'x25519'"), 16);
}

#[test]
fn captures_that_are_not_captures_are_usage_errors() {
    let dir = scratch("pcap-errors");
    let garbage = dir.join("garbage.pcap");
    std::fs::write(&garbage, b"this is not a capture at all, just text\n").unwrap();
    let out = dir.join("out.db");
    let output = tlslab(&[
        "pcap",
        garbage.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_user_error(&output, 2, "not a pcap or pcapng");
    let output = tlslab(&["pcap", dir.join("missing.pcap").to_str().unwrap()]);
    assert_user_error(&output, 2, "no such capture file");
}

/// Whether this process may open packet sockets (root); prints why not.
fn can_capture() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        println!("skipped: live capture needs root or CAP_NET_RAW");
    }
    root
}

#[test]
fn a_run_checks_its_own_timestamps_against_its_packets() {
    if !can_capture() {
        return;
    }
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = scratch("pcap-crosscheck");
    let capture = dir.join("run.pcap");
    let finished = Run::new(&dir, "crosscheck")
        .args("--tls 1.2,1.3 --backend rustls,openssl -n 10 --warmup 0")
        .option("--capture", capture.to_str().unwrap())
        .succeeds();
    let summary = &finished.summary;
    assert!(
        summary.contains("40 of 40 handshakes found"),
        "every handshake matched by its client port: {summary}"
    );
    // Each event both sides see, with its median difference: the run's clock sits on the
    // wall clock once, so a wrong start would show as seconds here. (The figures measured
    // here are in the README; a timing bound tighter than this belongs in a benchmark.)
    for event in [
        "tcp_connected",
        "client_hello_sent",
        "server_hello_received",
        "handshake_done",
    ] {
        let line = summary
            .lines()
            .find(|line| line.trim_start().starts_with(&format!("{event} ")))
            .unwrap_or_else(|| panic!("no {event} line: {summary}"));
        let median: f64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(median < 100_000.0, "{event}: {median} µs apart: {summary}");
    }
    // The start is no wire event: said apart, as the time before the SYN.
    assert!(summary.contains("start precedes its SYN by "), "{summary}");
    // Every sample knows its client port; the capture is a pcap any tool reads.
    assert_eq!(
        count_samples(&finished.db, "s.client LIKE '127.0.0.1:%'"),
        40
    );
    let passive = read_capture(&capture, &dir, Some(&servers_filter(&finished.db)));
    assert_eq!(count_samples(&passive, "s.outcome = 'ok'"), 40);
}

#[test]
fn a_capture_in_the_client_namespace_sees_the_emulated_round_trip() {
    require_emulation!();
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = scratch("pcap-emulated");
    let capture = dir.join("emulated.pcap");
    let active = Run::new(&dir, "emulated")
        .args("--tls 1.2,1.3 --group x25519,mlkem1024 --skip-invalid --rtt 50ms -n 5 --warmup 0")
        .option("--capture", capture.to_str().unwrap())
        .succeeds()
        .db;
    let passive = read_capture(&capture, &dir, None);
    assert_eq!(count_samples(&passive, "s.outcome = 'ok'"), 15);
    // Seen from the client: the SYN exchange takes the round trip, and so does every
    // ServerHello (a lower bound: physics allows no less).
    assert_eq!(count_samples(&passive, "s.vantage = 'client'"), 15);
    assert_eq!(
        count_samples(
            &passive,
            "s.network_rtt_ns >= 50000000 AND s.server_response >= 50000000"
        ),
        15
    );
    // An ML-KEM-1024 ClientHello is longer than one segment of a 1,500-byte link (1,448
    // bytes): it is put back together from its packets, and the group read from the
    // ServerHello. (x25519mlkem768's, 1,400 bytes, still fits one.)
    let key = "version || ' ' || \"group\" || ' ' || client_hello_bytes";
    assert_eq!(negotiated(&passive, key), negotiated(&active, key));
    assert_eq!(
        count_samples(
            &passive,
            "s.\"group\" = 'mlkem1024' AND s.client_hello_bytes > 1448"
        ),
        5
    );
}

#[test]
fn a_live_capture_stores_exactly_the_handshakes_of_a_run_and_stops_on_ctrl_c() {
    if !can_capture() {
        return;
    }
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = scratch("pcap-live");
    let live = dir.join("live.db");
    let packets = dir.join("live.pcap");
    // A lab server on a port known beforehand, and a capture of its packets alone: other
    // tests' handshakes on `lo` at the same time would change the counts.
    let server = LabServer::start();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["capture", "-i", "lo", "--out", live.to_str().unwrap()])
        .args(["--filter", &format!("tcp port {}", server.port)])
        // The packets too, in files of about 20 kB each.
        .args(["--write", packets.to_str().unwrap(), "--rotate", "20kB"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It says so once its socket is open.
    let mut stderr = BufReader::new(agent.stderr.take().unwrap()).lines();
    let first = stderr.next().unwrap().unwrap();
    assert!(first.contains("capturing TLS handshakes on lo"), "{first}");
    let active = Run::new(&dir, "active")
        .args("--tls 1.2,1.3 --insecure -n 15 --warmup 0")
        .option("--target", format!("127.0.0.1:{}", server.port))
        .succeeds()
        .db;
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-INT", &agent.id().to_string()])
        .status();
    let output = agent.wait_with_output().unwrap();
    assert!(output.status.success(), "Ctrl-C is how a capture ends");
    let ok = "s.outcome = 'ok'";
    assert_eq!(count_samples(&live, ok), count_samples(&active, ok));
    assert_eq!(count_samples(&live, ok), 30);
    let key = "version || ' ' || suite || ' ' || \"group\"";
    assert_eq!(negotiated(&live, key), negotiated(&active, key));
    // Read back as one capture, the rotated files hold every handshake, some of them
    // spanning two files.
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path().to_str().unwrap().to_string())
        .filter(|path| path.contains("live-0") && path.ends_with(".pcap"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let read = dir.join("read.db");
    let mut command = vec!["pcap", "--out", read.to_str().unwrap()];
    command.extend(files.iter().map(String::as_str));
    tlslab_succeeds(&command);
    assert_eq!(negotiated(&read, key), negotiated(&active, key));
}

#[test]
fn every_handshake_survives_loss_and_the_retransmissions_are_counted() {
    require_emulation!();
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = scratch("pcap-loss");
    let capture = dir.join("loss.pcap");
    let active = Run::new(&dir, "loss")
        .args(
            "--tls 1.3 --rtt 2ms --jitter 1ms --loss 1% -n 1200 -c 8 --warmup 0 --max-error-rate 1",
        )
        .option("--capture", capture.to_str().unwrap())
        .succeeds()
        .db;
    let passive = read_capture(&capture, &dir, None);
    let ok = "s.outcome = 'ok'";
    assert_eq!(count_samples(&passive, ok), count_samples(&active, ok));
    let retransmitted: i64 = value(&passive, "SELECT SUM(retransmissions) FROM samples");
    // The capture sees the client's retransmissions (the server's lost segments never
    // reached it): 400 handshakes retransmitted 3 to 8 segments here, so 1,200 make none
    // at all unlikely (about once in 10,000 runs).
    assert!(retransmitted > 0, "1% loss retransmits some segments");
}

/// A GET over plain HTTP/1.0 (no chunked answer to undo) from the test itself: the body.
fn http_get(address: &str, path_and_query: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path_and_query} HTTP/1.0\r\nHost: {address}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    body.to_string()
}

/// A real InfluxDB 1.x (Debian's `influxdb`) on free loopback ports, in a scratch directory.
struct Influxd {
    child: Child,
    address: String,
}

impl Influxd {
    /// Starts it and waits until it answers; `None` (with the reason) where it is absent.
    fn start(dir: &Path) -> Option<Influxd> {
        let free = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .to_string()
        };
        let address = free();
        let config = dir.join("influxdb.conf");
        let data = dir.join("influxdb");
        std::fs::write(
            &config,
            format!(
                "reporting-disabled = true\nbind-address = \"{rpc}\"\n\
                 [meta]\n  dir = \"{data}/meta\"\n\
                 [data]\n  dir = \"{data}/data\"\n  wal-dir = \"{data}/wal\"\n  query-log-enabled = false\n\
                 [http]\n  bind-address = \"{address}\"\n  log-enabled = false\n\
                 [monitor]\n  store-enabled = false\n",
                rpc = free(),
                data = data.display()
            ),
        )
        .unwrap();
        let child = match Command::new("influxd")
            .arg("run")
            .arg("-config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(error) => {
                println!("skipped: influxd does not run here ({error}); .ci/run installs it");
                return None;
            }
        };
        let influxd = Influxd { child, address };
        // Ready when /ping answers 204 (the port opens before the databases can be used).
        let ready = || {
            use std::io::{Read, Write};
            let mut stream = std::net::TcpStream::connect(&influxd.address).ok()?;
            write!(stream, "GET /ping HTTP/1.0\r\n\r\n").ok()?;
            let mut answer = String::new();
            stream.read_to_string(&mut answer).ok()?;
            answer
                .split_whitespace()
                .nth(1)
                .filter(|status| *status == "204")
                .map(drop)
        };
        for _ in 0..100 {
            if ready().is_some() {
                return Some(influxd);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!(
            "influxd did not answer /ping on {} within 10 s",
            influxd.address
        );
    }

    /// An InfluxQL query's JSON answer.
    fn query(&self, database: &str, statement: &str) -> serde_json::Value {
        let encoded: String = statement
            .bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' => (byte as char).to_string(),
                _ => format!("%{byte:02X}"),
            })
            .collect();
        let body = http_get(&self.address, &format!("/query?db={database}&q={encoded}"));
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for Influxd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_live_capture_tells_prometheus_and_influxdb_what_it_stores() {
    if !can_capture() {
        return;
    }
    let dir = scratch("pcap-telemetry");
    let Some(influxd) = Influxd::start(&dir) else {
        return;
    };
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let live = dir.join("live.db");
    let packets = dir.join("live.pcap");
    // The database does not exist yet: the agent creates it, as Telegraf does.
    let influx = format!("http://{}/write?db=tlslab", influxd.address);
    // Only the handshakes of a lab server of its own are captured: other tests' on `lo`
    // would change the counts.
    let server = LabServer::start();
    let filter = format!("tcp port {}", server.port);
    let mut agent = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "capture",
            "-i",
            "lo",
            "--filter",
            &filter,
            "--metrics",
            "127.0.0.1:0",
            "--influx",
        ])
        .arg(&influx)
        .arg("--out")
        .arg(&live)
        .arg("--write")
        .arg(&packets)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(agent.stderr.take().unwrap()).lines();
    let capturing = stderr.next().unwrap().unwrap();
    assert!(
        capturing.contains("capturing TLS handshakes on lo"),
        "{capturing}"
    );
    let serving = stderr.next().unwrap().unwrap();
    let metrics = serving
        .strip_prefix("serving metrics at http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{serving}"))
        .to_string();
    Run::new(&dir, "active")
        .args("--tls 1.2,1.3 --insecure -n 15 --warmup 0")
        .option("--target", format!("127.0.0.1:{}", server.port))
        .succeeds();
    // Handshakes counted by what they negotiated: (version suite group, count).
    let scrape = || -> Vec<(String, i64)> {
        let text = http_get(&metrics, "/metrics");
        let mut counts: Vec<(String, i64)> = text
            .lines()
            .filter_map(|line| line.strip_prefix("tlslab_handshakes_total{"))
            .filter(|line| line.contains("outcome=\"ok\""))
            .map(|line| {
                let (labels, count) = line.split_once("} ").unwrap();
                let label = |name: &str| {
                    labels
                        .split(',')
                        .find_map(|pair| pair.strip_prefix(&format!("{name}=\"")))
                        .unwrap()
                        .trim_end_matches('"')
                        .to_string()
                };
                let key = format!("{} {} {}", label("version"), label("suite"), label("group"));
                (key, count.trim().parse().unwrap())
            })
            .collect();
        counts.sort();
        counts
    };
    // The agent stores each handshake once its connection closes (or idles out).
    let mut seen = scrape();
    for _ in 0..50 {
        if seen.iter().map(|(_, count)| count).sum::<i64>() >= 30 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        seen = scrape();
    }
    let _ = Command::new("kill")
        .args(["-INT", &agent.id().to_string()])
        .status();
    let rest: Vec<String> = stderr.map_while(Result::ok).collect();
    assert!(agent.wait().unwrap().success());
    assert!(
        rest.iter()
            .any(|line| line == "InfluxDB: 30 points written"),
        "{rest:?}"
    );
    let stored = negotiated(&live, "version || ' ' || suite || ' ' || \"group\"");
    assert_eq!(stored.iter().map(|(_, count)| count).sum::<i64>(), 30);
    assert_eq!(seen, stored, "Prometheus counts what the store holds");
    // InfluxDB has one point per stored handshake, with the same tags and the phases.
    let answer = influxd.query(
        "tlslab",
        "SELECT count(handshake_us) FROM tlslab_handshake WHERE outcome = 'ok' \
         GROUP BY version, suite, \"group\"",
    );
    let mut points: Vec<(String, i64)> = answer["results"][0]["series"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|series| {
            let tags = &series["tags"];
            (
                format!(
                    "{} {} {}",
                    tags["version"].as_str().unwrap(),
                    tags["suite"].as_str().unwrap(),
                    tags["group"].as_str().unwrap()
                ),
                series["values"][0][1].as_i64().unwrap(),
            )
        })
        .collect();
    points.sort();
    assert_eq!(points, stored, "InfluxDB holds what the store holds");
    // The same packets read afterwards land in InfluxDB at the same capture times.
    let imported = dir.join("imported.db");
    let read = tlslab_succeeds(&[
        "pcap",
        packets.to_str().unwrap(),
        "--out",
        imported.to_str().unwrap(),
        "--influx",
        &format!("http://{}/write?db=imported", influxd.address),
    ]);
    let times = |database: &str| {
        influxd.query(
            database,
            "SELECT handshake_us FROM tlslab_handshake WHERE outcome = 'ok'",
        )["results"][0]["series"][0]["values"]
            .clone()
    };
    assert_eq!(times("imported"), times("tlslab"), "{read}");
    assert_eq!(times("imported").as_array().map(Vec::len), Some(30));
}

/// `tlslab capture -i lo --filter FILTER` into `db` (with `more` arguments), once its
/// socket is open.
fn filtered_agent(db: &Path, filter: &str, more: &[&str]) -> Child {
    let mut agent = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["capture", "-i", "lo", "--filter", filter, "--out"])
        .arg(db)
        .args(more)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(agent.stderr.take().unwrap()).lines();
    let first = stderr.next().unwrap().unwrap();
    assert!(first.contains("capturing TLS handshakes on lo"), "{first}");
    std::thread::spawn(move || stderr.for_each(drop));
    agent
}

#[test]
fn a_filter_keeps_one_servers_handshakes_live_and_in_files_alike() {
    if !can_capture() {
        return;
    }
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = scratch("pcap-filter");
    let (first, second) = (LabServer::start(), LabServer::start());
    let Some(unfiltered) = tcpdump(&dir, "unfiltered") else {
        return;
    };
    // One agent per server: each port is the other's excluded port.
    let first_live = dir.join("first-live.db");
    let second_live = dir.join("second-live.db");
    let first_filter = format!("tcp port {}", first.port);
    let second_filter = format!("tcp port {}", second.port);
    let first_agent = filtered_agent(&first_live, &first_filter, &[]);
    let second_agent = filtered_agent(&second_live, &second_filter, &[]);
    // Different counts, so that a filter that let both through, or the wrong one, shows.
    let runs = [(&first, 6, "first"), (&second, 4, "second")].map(|(server, n, name)| {
        Run::new(&dir, name)
            .args(&format!("--tls 1.2,1.3 --insecure -n {n} --warmup 0"))
            .option("--target", format!("127.0.0.1:{}", server.port))
            .succeeds()
            .db
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    for agent in [first_agent, second_agent] {
        let _ = Command::new("kill")
            .args(["-INT", &agent.id().to_string()])
            .status();
        let output = agent.wait_with_output().unwrap();
        assert!(output.status.success(), "Ctrl-C is how a capture ends");
    }
    let file = unfiltered.stop();
    let ok = "s.outcome = 'ok'";
    let successes = runs.each_ref().map(|db| count_samples(db, ok));
    assert_eq!(successes, [12, 8]);
    // Live, the kernel kept each server's packets alone.
    let key = "version || ' ' || suite || ' ' || \"group\"";
    for (live, active, server) in [
        (&first_live, &runs[0], &first),
        (&second_live, &runs[1], &second),
    ] {
        assert_eq!(count_samples(live, ok), count_samples(active, ok));
        assert_eq!(
            count_samples(live, &format!("s.server NOT LIKE '%:{}'", server.port)),
            0
        );
        assert_eq!(negotiated(live, key), negotiated(active, key));
    }
    // The same filters on tcpdump's file (Ethernet frames, compiled for that link type)
    // keep the same handshakes.
    for (filter, expected) in [
        (&first_filter, successes[0]),
        (&second_filter, successes[1]),
    ] {
        let read = dir.join(format!("read-{}.db", filter.replace(' ', "-")));
        tlslab_succeeds(&[
            "pcap",
            file.to_str().unwrap(),
            "--filter",
            filter,
            "--out",
            read.to_str().unwrap(),
        ]);
        assert_eq!(count_samples(&read, ok), expected, "{filter}");
    }
}

/// The TCP connections tshark numbers in `capture` (its `tcp.stream` values, as
/// `tshark -r FILE -T fields -e tcp.stream | sort -u | wc -l` counts them).
fn tshark_streams(capture: &Path) -> u64 {
    let output = Command::new("tshark")
        .arg("-r")
        .arg(capture)
        .args(["-T", "fields", "-e", "tcp.stream"])
        .output()
        .expect("tshark runs");
    assert!(
        output.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let streams: std::collections::BTreeSet<&str> =
        text.lines().filter(|line| !line.is_empty()).collect();
    streams.len() as u64
}

/// Whether tshark runs here; prints why not.
fn tshark_runs() -> bool {
    match Command::new("tshark").arg("--version").output() {
        Ok(output) if output.status.success() => true,
        Ok(_) | Err(_) => {
            println!("skipped: tshark does not run here; .ci/run installs it");
            false
        }
    }
}

/// The same traffic counted three ways: tshark on tcpdump's file, `tlslab pcap` on the
/// same file, and `tlslab capture` live beside it; each the `capture` part of its JSON
/// summary, with the passive store.
struct Counted {
    tshark: u64,
    pcap: serde_json::Value,
    pcap_db: PathBuf,
    live: serde_json::Value,
}

impl Counted {
    /// Asserts that the three counts are `connections`, each of them a stored handshake.
    fn agree(&self, connections: u64) {
        let (pcap, live) = (&self.pcap, &self.live);
        assert_eq!(self.tshark, connections, "tshark's tcp.stream count");
        assert_eq!(pcap["tcp_connections"], connections, "pcap: {pcap}");
        assert_eq!(live["tcp_connections"], connections, "capture: {live}");
        for counts in [pcap, live] {
            assert_eq!(counts["handshakes"], connections, "{counts}");
            assert_eq!(counts["not_tls"], 0, "{counts}");
            assert_eq!(counts["unfinished"], 0, "{counts}");
        }
    }
}

/// Whether the counts can be compared here: capturing needs root, and tshark must run.
fn can_count() -> bool {
    can_capture() && tshark_runs()
}

/// Runs `traffic` (files in `dir`) while tcpdump and `tlslab capture` keep the packets of
/// server port `port` alone, and counts them three ways; `None` (with the reason printed)
/// where tcpdump cannot run. The server is started, and its readiness probed, before.
fn counted(dir: &Path, port: u16, traffic: impl FnOnce()) -> Option<Counted> {
    let _capturing = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let filter = format!("tcp port {port}");
    let tcpdump = tcpdump_in(None, "lo", dir, "counted", &filter)?;
    let live_db = dir.join("live.db");
    let agent = filtered_agent(&live_db, &filter, &["--json"]);
    traffic();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-INT", &agent.id().to_string()])
        .status();
    let output = agent.wait_with_output().unwrap();
    assert!(output.status.success(), "Ctrl-C is how a capture ends");
    let live: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let file = tcpdump.stop();
    let pcap_db = dir.join("pcap.db");
    let pcap = tlslab_succeeds(&[
        "pcap",
        file.to_str().unwrap(),
        "--json",
        "--out",
        pcap_db.to_str().unwrap(),
    ]);
    let pcap: serde_json::Value = serde_json::from_str(&pcap).unwrap();
    Some(Counted {
        tshark: tshark_streams(&file),
        pcap: pcap["capture"].clone(),
        pcap_db,
        live: live["capture"].clone(),
    })
}

/// `openssl s_server` on a port of its own, with a certificate made for it in `dir`: it
/// sends its session tickets and close_notify after the client's, so they cross the
/// client's FIN. Killed on drop.
fn openssl_server(dir: &Path) -> (Stopped, u16) {
    let (key, certificate) = (dir.join("key.pem"), dir.join("certificate.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args([
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=lab",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&certificate)
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let port = closed_port();
    let server = Command::new("openssl")
        .args([
            "s_server",
            "-quiet",
            "-accept",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("-cert")
        .arg(&certificate)
        .arg("-key")
        .arg(&key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl runs");
    let server = Stopped(server);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "openssl s_server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (server, port)
}

/// One `openssl s_client` session to `port`, from `bind` when given, closed as it closes
/// at the end of its input: close_notify and a FIN, while the server's tickets and its
/// own close_notify may still be on their way.
fn openssl_session(port: u16, bind: Option<u16>) {
    let mut command = Command::new("openssl");
    command.args(["s_client", "-connect", &format!("127.0.0.1:{port}")]);
    if let Some(bind) = bind {
        command.args(["-bind", &format!("127.0.0.1:{bind}")]);
    }
    let output = command
        .args(["-quiet", "-no_ign_eof"])
        .stdin(Stdio::null())
        .output()
        .expect("openssl runs");
    assert!(
        output.status.success(),
        "openssl s_client: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_graceful_openssl_session_and_its_reused_port_count_as_tshark_counts() {
    if Command::new("openssl").arg("version").output().is_err() {
        println!("skipped: openssl does not run here");
        return;
    }
    if !can_count() {
        return;
    }
    // A client port in TIME_WAIT is taken again only where the kernel allows it (Linux's
    // default, 2, allows it on loopback).
    let reuse = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse")
        .is_ok_and(|value| value.trim() != "0");
    if !reuse {
        println!("skipped in part: net.ipv4.tcp_tw_reuse is 0, so no port is reused");
    }
    let dir = scratch("count-openssl");
    let (_server, port) = openssl_server(&dir);
    let bind = closed_port();
    let Some(counted) = counted(&dir, port, || {
        openssl_session(port, None);
        if reuse {
            // The same client port twice: the client closes first (TIME_WAIT), and the
            // second session's SYN opens a new connection on the same four numbers.
            openssl_session(port, Some(bind));
            openssl_session(port, Some(bind));
        }
    }) else {
        return;
    };
    counted.agree(if reuse { 3 } else { 1 });
    if reuse {
        assert_eq!(
            count_samples(
                &counted.pcap_db,
                &format!("s.client = '127.0.0.1:{bind}' AND s.outcome = 'ok'")
            ),
            2
        );
    }
}

#[test]
fn graceful_and_reset_closes_of_a_run_count_as_tshark_counts() {
    if !can_count() {
        return;
    }
    let dir = scratch("count-runs");
    let server = LabServer::start();
    let port = server.port;
    let Some(counted) = counted(&dir, port, || {
        for close in ["graceful", "reset"] {
            Run::new(&dir, close)
                .args(&format!(
                    "--tls 1.2,1.3 --insecure -n 10 --warmup 0 --close {close}"
                ))
                .option("--target", format!("127.0.0.1:{port}"))
                .succeeds();
        }
        // And an openssl client's graceful close, as the lab server meets it.
        if Command::new("openssl").arg("version").output().is_ok() {
            openssl_session(port, None);
        }
    }) else {
        return;
    };
    let openssl = u64::from(Command::new("openssl").arg("version").output().is_ok());
    counted.agree(40 + openssl);
}

#[test]
fn a_filter_that_does_not_compile_is_a_usage_error() {
    let dir = scratch("pcap-bad-filter");
    let out = dir.join("never.db");
    let out = out.to_str().unwrap();
    // Checked before the capture opens (no right to capture is needed to be told) and
    // before any file is read.
    let output = tlslab(&["capture", "-i", "lo", "--filter", "tcp port", "--out", out]);
    assert_user_error(&output, 2, "syntax error");
    let capture = dir.join("any.pcap");
    let capture = capture.to_str().unwrap();
    let output = tlslab(&["pcap", capture, "--filter", "tcp port", "--out", out]);
    assert_user_error(&output, 2, "syntax error");
    // Link-layer terms: a live capture never sees a link header, so neither path takes them.
    let ether = "ether host 00:11:22:33:44:55";
    let output = tlslab(&["pcap", capture, "--filter", ether, "--out", out]);
    assert_user_error(&output, 2, "link-layer");
    let output = tlslab(&["capture", "-i", "lo", "--filter", ether, "--out", out]);
    assert_user_error(&output, 2, "link-layer");
    assert!(!dir.join("never.db").exists());
}

/// A child process killed (and waited for) when the test ends, however it ends.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_capture_at_the_server_leaves_the_clients_events_null() {
    use tlslab_emulation::{choose, EmulatorChoice, Network, NetworkProfile};
    require_emulation!();
    let dir = scratch("pcap-server-side");
    let network = Network::create(choose(EmulatorChoice::Auto).unwrap(), "pcapsrv").unwrap();
    // Long enough that a debug build's handshake work, even on a busy machine (tens of
    // milliseconds), is a small part of each gap the vantage is read from.
    let rtt = std::time::Duration::from_millis(200);
    network
        .set_profile(&NetworkProfile {
            rtt,
            jitter: std::time::Duration::ZERO,
            loss: 0.0,
            rate_bits_per_second: None,
        })
        .unwrap();
    let Some((client, server)) = network.namespace_names() else {
        println!("skipped: the relay emulator has no namespaces to capture in");
        return;
    };
    // A lab server inside the server namespace, on a namespace of its own: any port is free.
    let target = format!("{}:8443", network.server_ip());
    let _lab = Stopped(
        tlslab_in(server, &["serve", "--listen", &target])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let Some(at_server) = tcpdump_in(Some(server), "any", &dir, "server", "tcp or udp") else {
        return;
    };
    let Some(at_client) = tcpdump_in(Some(client), "any", &dir, "client", "tcp or udp") else {
        return;
    };
    let active = dir.join("active.db");
    // The run retries connecting while the server starts: wait for it from the client side.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !Command::new("ip")
        .args(["netns", "exec", client, "bash", "-c"])
        .arg(format!("exec 3<>/dev/tcp/{}/8443", network.server_ip()))
        .status()
        .unwrap()
        .success()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the lab server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Five handshakes per Config from the client's namespace into `db`.
    let run = |options: &[&str], db: &Path| {
        let output = tlslab_in(client, &["run", "--target", &target, "--insecure"])
            .args(options)
            .args(["-n", "5", "--warmup", "0", "--out", db.to_str().unwrap()])
            .output()
            .unwrap();
        assert_success(&output);
    };
    run(&["--tls", "1.2,1.3"], &active);
    // QUIC has no SYN exchange: the vantage comes from the handshake's own gaps.
    let quic = dir.join("quic.db");
    run(&["--transport", "quic"], &quic);
    let (server_file, client_file) = (at_server.stop(), at_client.stop());
    let read = |file: &Path, name: &str| {
        let db = dir.join(format!("{name}.db"));
        tlslab_succeeds(&[
            "pcap",
            file.to_str().unwrap(),
            "--out",
            db.to_str().unwrap(),
        ]);
        db
    };
    let (server_db, client_db) = (
        read(&server_file, "at-server"),
        read(&client_file, "at-client"),
    );
    let ok = "s.outcome = 'ok'";
    assert_eq!(count_samples(&quic, ok), 5);
    // At each end, a QUIC handshake's gaps tell where it was seen: the server answers the
    // ClientHello at once and waits a round trip for the client's Finished; the client
    // waits a round trip for the ServerHello. Only the client's capture has its events.
    let quic_at = |db: &Path, vantage: &str, condition: &str| {
        count_samples(
            db,
            &format!("c.transport = 'quic' AND s.outcome = 'ok' AND s.vantage = '{vantage}' AND {condition}"),
        )
    };
    let rtt_ns = rtt.as_nanos() as i64;
    // On failure, where the samples were placed.
    let vantages = |db: &Path| {
        rows::<(String, i64)>(
            db,
            "SELECT vantage, COUNT(*) FROM samples GROUP BY 1 ORDER BY 1",
            [],
        )
    };
    assert_eq!(
        quic_at(
            &server_db,
            "server",
            "s.handshake IS NULL AND s.client_hello_sent IS NULL"
        ),
        5,
        "{:?}",
        vantages(&server_db)
    );
    assert_eq!(
        quic_at(
            &client_db,
            "client",
            &format!("s.server_response >= {rtt_ns}")
        ),
        5,
        "{:?}",
        vantages(&client_db)
    );
    // Told where the capture was, tlslab takes the user's word over the gaps.
    let told = dir.join("told.db");
    tlslab_succeeds(&[
        "pcap",
        server_file.to_str().unwrap(),
        "--vantage",
        "client",
        "--out",
        told.to_str().unwrap(),
    ]);
    assert_eq!(
        count_samples(
            &told,
            "s.outcome = 'ok' AND s.vantage = 'client' AND s.client_hello_sent IS NOT NULL"
        ),
        15
    );
    let tcp = "c.transport = 'tcp'";
    // The probe connections above are not TLS; every handshake of the run is found at both
    // ends, with what it negotiated.
    assert_eq!(count_samples(&active, ok), 10);
    let key = "version || ' ' || suite || ' ' || \"group\"";
    let tcp_negotiated = |db: &Path| {
        rows::<(String, i64)>(
            db,
            "SELECT s.version || ' ' || s.suite || ' ' || s.\"group\", COUNT(*) \
             FROM samples s JOIN configs c ON c.id = s.config_id \
             WHERE s.outcome = 'ok' AND s.warmup = 0 AND c.transport = 'tcp' GROUP BY 1 ORDER BY 1",
            [],
        )
    };
    for db in [&server_db, &client_db] {
        assert_eq!(tcp_negotiated(db), negotiated(&active, key));
    }
    // At the server, the round trip is the SYN-ACK's wait for the ACK; no event of the
    // client's is seen, so each is NULL, and so is each phase between them.
    assert_eq!(
        count_samples(
            &server_db,
            &format!("{tcp} AND s.vantage = 'server' AND s.network_rtt_ns >= {rtt_ns}")
        ),
        10
    );
    let events = [
        "start",
        "tcp_connected",
        "client_hello_sent",
        "server_hello_received",
        "server_flight_received",
        "client_finished_sent",
        "handshake_done",
        "server_response",
        "handshake",
    ];
    for event in events {
        assert_eq!(
            count_samples(&server_db, &format!("s.{event} IS NOT NULL")),
            0,
            "{event} at the server"
        );
    }
    // At the client, every one of them is filled, the wire's round trip included.
    assert_eq!(
        count_samples(
            &client_db,
            &format!("{tcp} AND s.vantage = 'client' AND s.server_response >= {rtt_ns}")
        ),
        10
    );
    for event in events {
        assert_eq!(
            count_samples(
                &client_db,
                &format!("{ok} AND {tcp} AND s.{event} IS NOT NULL")
            ),
            10,
            "{event} at the client"
        );
    }
}
