//! End to end: QUIC, HTTP requests, session resumption, 0-RTT with its replay probe, and the
//! certificate cache, against the real lab server; the RTT tests on the emulated link.

mod common;

use common::*;

fn median(mut values: Vec<f64>) -> f64 {
    assert!(!values.is_empty(), "no values");
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A phase of one Config's successful measured samples, in ms.
fn phase_ms(db: &std::path::Path, label_like: &str, phase: &str) -> Vec<f64> {
    let connection = open(db);
    let mut statement = connection
        .prepare(&format!(
            "SELECT s.\"{phase}\" FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.label LIKE ?1 AND s.warmup = 0 AND s.outcome = 'ok' AND s.\"{phase}\" IS NOT NULL"
        ))
        .unwrap();
    statement
        .query_map([label_like], |row| row.get::<_, i64>(0))
        .unwrap()
        .map(|value| value.unwrap() as f64 / 1e6)
        .collect()
}

fn count(db: &std::path::Path, sql: &str) -> i64 {
    open(db).query_row(sql, [], |row| row.get(0)).unwrap()
}

#[test]
fn quic_handshakes_with_http3_record_every_phase_and_the_path() {
    let dir = scratch("quic-h3");
    let db = dir.join("quic.db");
    let output = tlslab(&[
        "run",
        "--transport",
        "quic",
        "--http",
        "3",
        "--body",
        "3000",
        "-n",
        "60",
        "-c",
        "2",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE outcome = 'ok'"),
        count(&db, "SELECT COUNT(*) FROM samples"),
        "every QUIC attempt succeeds on loopback: {}",
        stdout(&output)
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE alpn IS NOT 'h3' OR version IS NOT '1.3' OR http_status IS NOT 200 OR response_bytes IS NOT 3000"),
        0
    );
    // QUIC has no TCP connect; every other event of the phase model is there, in order.
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM samples WHERE tcp_connected IS NOT NULL"
        ),
        0
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE warmup = 0 AND NOT (client_hello_sent <= server_hello_received AND server_hello_received <= server_flight_received AND server_flight_received <= cert_verify_start AND cert_verify_start <= cert_verify_end AND cert_verify_end <= client_finished_sent AND client_finished_sent <= handshake_done AND handshake_done <= first_byte AND first_byte <= response_done)"),
        0,
        "events out of order"
    );
    // The additive phases partition the handshake.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE warmup = 0 AND client_hello_build + server_response + server_flight + cert_validation + client_finish + server_finish != handshake"),
        0
    );
    // Initial datagrams are padded to at least 1,200 bytes; quinn's path statistics are kept.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE client_hello_bytes < 1200 OR quic_rtt_ns IS NULL OR datagrams_sent < 2 OR datagrams_received < 2 OR packets_sent < 2 OR packets_lost IS NULL OR server_flight_bytes IS NULL"),
        0
    );
    let summary = stdout(&output);
    assert!(summary.contains("ttfb"), "{summary}");
}

#[test]
fn http_requests_over_tcp_return_the_lab_body_with_alpn() {
    let dir = scratch("http-tcp");
    let db = dir.join("http.db");
    let output = tlslab(&[
        "run",
        "--http",
        "1.1,2",
        "--tls",
        "1.2,1.3",
        "--body",
        "70000",
        "-n",
        "30",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let connection = open(&db);
    let mut statement = connection
        .prepare("SELECT c.http, s.alpn, COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.outcome = 'ok' AND s.http_status = 200 AND s.response_bytes = 70000 AND s.first_byte > s.handshake_done AND s.response_done >= s.first_byte GROUP BY 1, 2 ORDER BY 1")
        .unwrap();
    let rows: Vec<(String, String, i64)> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Two versions × (30 measured + 20 warm-up) each.
    assert_eq!(
        rows,
        [
            ("1.1".to_string(), "http/1.1".to_string(), 100),
            ("2".to_string(), "h2".to_string(), 100)
        ]
    );
    // Handshake byte counts stop at the handshake: the 70 kB body is not in them.
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM samples WHERE bytes_received > 20000"
        ),
        0
    );
}

#[test]
fn resumption_modes_resume_every_handshake_after_each_agents_first() {
    let dir = scratch("resumption-modes");
    let db = dir.join("resume.db");
    let output = tlslab(&[
        "run",
        "--tls",
        "1.2,1.3",
        "--resume",
        "tickets,session-id",
        "--transport",
        "tcp",
        "-n",
        "40",
        "-c",
        "2",
        "--warmup",
        "0",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // 4 Configs × 2 agents: only each agent's first handshake is full.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE resumed = 0"),
        8
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE resumed = 1"),
        4 * 40 - 8
    );
    assert_eq!(
        count(&db, "SELECT COUNT(DISTINCT resumption) FROM configs"),
        2
    );
    let quic = dir.join("quic.db");
    let output = tlslab(&[
        "run",
        "--transport",
        "quic",
        "--resume",
        "-n",
        "30",
        "--warmup",
        "0",
        "--quiet",
        "--out",
        quic.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        count(&quic, "SELECT COUNT(*) FROM samples WHERE resumed = 1"),
        29
    );
    assert_eq!(
        count(
            &quic,
            "SELECT COUNT(*) FROM samples WHERE resumed = 1 AND cert_verify_start IS NOT NULL"
        ),
        0
    );
}

#[test]
fn zero_rtt_is_accepted_and_every_replay_is_rejected() {
    let dir = scratch("zero-rtt");
    let db = dir.join("0rtt.db");
    let output = tlslab(&[
        "run",
        "--transport",
        "tcp,quic",
        "--resume",
        "tickets",
        "--early-data",
        "600",
        // A body larger than the 16 KiB rustls buffers: the 0-RTT answer follows the server's
        // flight at once and must be drained while the handshake is still running.
        "--body",
        "40000",
        "--replay",
        "-n",
        "100",
        "-c",
        "2",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for transport in ["tcp", "quic"] {
        let attempts = count(&db, &format!("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.transport = '{transport}' AND s.warmup = 0 AND s.early_data_accepted IS NOT NULL"));
        let accepted = count(&db, &format!("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.transport = '{transport}' AND s.warmup = 0 AND s.early_data_accepted = 1"));
        assert!(
            attempts >= 98,
            "{transport}: only {attempts} 0-RTT attempts"
        );
        assert!(
            accepted * 100 >= attempts * 99,
            "{transport}: early data accepted on {accepted} of {attempts}"
        );
        let (sent, rejected, replay_accepted): (i64, i64, i64) = open(&db)
            .query_row(
                &format!("SELECT r.sent, r.rejected, r.accepted FROM replays r JOIN configs c ON c.id = r.config_id WHERE c.transport = '{transport}'"),
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap();
        assert!(sent >= 50, "{transport}: {sent} replays sent");
        assert_eq!(rejected, sent, "{transport}: every replay is refused");
        assert_eq!(replay_accepted, 0, "{transport}");
        let short = count(&db, &format!("SELECT COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.transport = '{transport}' AND s.response_bytes IS NOT 40000"));
        assert_eq!(short, 0, "{transport}: every 0-RTT answer arrives whole");
    }
    let summary = stdout(&output);
    assert!(
        summary.contains("rejected as replays, 0 accepted"),
        "{summary}"
    );
    assert!(summary.contains("early data accepted"), "{summary}");
}

#[test]
fn the_certificate_cache_skips_chain_verification() {
    let dir = scratch("cert-cache");
    let db = dir.join("cache.db");
    let output = tlslab(&[
        "run",
        "--cert-cache",
        "off,on",
        "--cert",
        "rsa2048",
        "--chain",
        "3",
        "-n",
        "100",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let off = median(phase_ms(&db, "%chain3 c1", "cert_validation"));
    let on = median(phase_ms(&db, "%certcache", "cert_validation"));
    assert!(
        on < off,
        "cached validation {on} ms is not below full validation {off} ms"
    );
    let summary = stdout(&output);
    assert!(
        summary.contains("gains over the full handshake") && summary.contains("certificate cache"),
        "{summary}"
    );
}

#[test]
fn impossible_session_combinations_are_usage_errors() {
    for (args, mentions) in [
        (
            vec!["--transport", "quic", "--tls", "1.2"],
            "QUIC carries TLS 1.3 only",
        ),
        (vec!["--http", "3"], "HTTP/3 needs QUIC"),
        (vec!["--early-data", "100"], "needs a resumed session"),
        (vec!["--replay"], "sends no early data"),
        (vec!["--transport", "sctp"], "valid: tcp, quic"),
        (
            vec!["--resume", "sometimes"],
            "valid: off, tickets, session-id",
        ),
        (
            vec!["--path", "index.html", "--http", "1.1"],
            "does not start with /",
        ),
    ] {
        let mut full = vec!["run", "-n", "5"];
        full.extend(args);
        let output = tlslab(&full);
        assert_user_error(&output, 2, mentions);
    }
}

/// At an emulated RTT of 50 ms: QUIC saves TCP's round trip, and 0-RTT saves the request's.
#[test]
fn at_rtt_50ms_quic_saves_one_round_trip_and_0rtt_another() {
    if let Some(reason) = emulation_unavailable() {
        println!("SKIPPED: {reason}");
        return;
    }
    let dir = scratch("quic-rtt");
    let db = dir.join("rtt.db");
    let output = tlslab(&[
        "run",
        "--transport",
        "tcp,quic",
        "--rtt",
        "50ms",
        "-n",
        "40",
        "-c",
        "4",
        "--warmup",
        "4",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tcp = median(phase_ms(&db, "%c4 rtt50ms", "handshake"));
    let quic = median(phase_ms(&db, "%quic%", "handshake"));
    assert!(quic >= 50.0, "QUIC cannot finish within one RTT: {quic} ms");
    assert!(tcp >= 100.0, "TCP + TLS 1.3 needs two RTTs: {tcp} ms");
    let saved = tcp - quic;
    assert!(
        (40.0..=60.0).contains(&saved),
        "QUIC should save one RTT: TCP {tcp} ms, QUIC {quic} ms"
    );
    assert!(
        !stdout(&output).contains("physics check FAILED"),
        "{}",
        stdout(&output)
    );

    // 0-RTT against a resumed 1-RTT request on the same transport.
    for transport in ["quic", "tcp"] {
        let db = dir.join(format!("0rtt-{transport}.db"));
        let output = tlslab(&[
            "run",
            "--transport",
            transport,
            "--resume",
            "tickets",
            "--early-data",
            "0,600",
            "--http",
            if transport == "quic" { "3" } else { "1.1" },
            "--rtt",
            "50ms",
            "-n",
            "40",
            "-c",
            "4",
            "--quiet",
            "--out",
            db.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let resumed = median(phase_ms(&db, "%tickets rtt50ms", "ttfb"));
        let early = median(phase_ms(&db, "%0rtt rtt50ms", "ttfb"));
        let saved = resumed - early;
        assert!(
            (40.0..=60.0).contains(&saved),
            "{transport}: 0-RTT should save one RTT of time to first byte: resumed {resumed} ms, 0-RTT {early} ms"
        );
        let summary = stdout(&output);
        assert!(summary.contains("early data accepted"), "{summary}");
    }
}

/// The session-techniques example prints each technique's gain with a 95% interval.
#[test]
fn the_session_techniques_example_prints_each_gain_with_its_interval() {
    if let Some(reason) = emulation_unavailable() {
        println!("SKIPPED: {reason}");
        return;
    }
    let dir = scratch("session-techniques");
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/session-techniques.toml"
    );
    let output = tlslab(&[
        "run",
        example,
        "-n",
        "40",
        "--warmup",
        "2",
        "--quiet",
        "--out",
        dir.join("techniques.db").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = stdout(&output);
    let gains: Vec<&str> = summary
        .lines()
        .skip_while(|line| !line.starts_with("gains over the full handshake"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .collect();
    assert_eq!(gains.len(), 3, "{summary}");
    for technique in [
        "certificate cache",
        "resumption (tickets)",
        "0-RTT (tickets)",
    ] {
        let line = gains
            .iter()
            .find(|line| line.trim_start().starts_with(technique))
            .unwrap_or_else(|| panic!("no gain for {technique}: {summary}"));
        assert!(
            line.contains("% [") && line.contains("%] of ttfb"),
            "no interval: {line}"
        );
    }
    // 0-RTT saves one of the full request's three round trips: about a third.
    let zero_rtt = gains.iter().find(|l| l.contains("0-RTT")).unwrap();
    let percent: f64 = zero_rtt
        .split('%')
        .next()
        .and_then(|head| head.split_whitespace().last())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no percentage in {zero_rtt}"));
    assert!(percent > 25.0, "{zero_rtt}");
}
