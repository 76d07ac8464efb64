//! End to end: QUIC, HTTP requests, session resumption, 0-RTT with its replay probe, and the
//! certificate cache, against the real lab server; the RTT tests on the emulated link.

mod support;

use support::*;

#[test]
fn quic_handshakes_with_http3_record_every_phase_and_the_path() {
    let dir = scratch("quic-h3");
    let Finished { db, summary, .. } = Run::new(&dir, "quic")
        .args("--transport quic --http 3 --body 3000 -n 60 -c 2 --verbose")
        .succeeds();
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM samples WHERE outcome = 'ok'"),
        count(&db, "SELECT COUNT(*) FROM samples"),
        "every QUIC attempt succeeds on loopback: {summary}"
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
    assert!(summary.contains("ttfb"), "{summary}");
}

#[test]
fn http_requests_over_tcp_return_the_lab_body_with_alpn() {
    let dir = scratch("http-tcp");
    let Finished { db, .. } = Run::new(&dir, "http")
        .args("--http 1.1,2 --tls 1.2,1.3 --body 70000 -n 30")
        .succeeds();
    let answered: Vec<(String, String, i64)> = rows(
        &db,
        "SELECT c.http, s.alpn, COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.outcome = 'ok' AND s.http_status = 200 AND s.response_bytes = 70000 AND s.first_byte > s.handshake_done AND s.response_done >= s.first_byte GROUP BY 1, 2 ORDER BY 1",
        [],
    );
    // Two versions × (30 measured + 20 warm-up) each.
    assert_eq!(
        answered,
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
    let Finished { db, .. } = Run::new(&dir, "resume")
        .args("--tls 1.2,1.3 --resume tickets,session-id --transport tcp -n 40 -c 2 --warmup 0")
        .succeeds();
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
    let Finished { db: quic, .. } = Run::new(&dir, "quic")
        .args("--transport quic --resume -n 30 --warmup 0")
        .succeeds();
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
    // A body larger than the 16 KiB rustls buffers: the 0-RTT answer follows the server's
    // flight at once and must be drained while the handshake is still running.
    let Finished { db, summary, .. } = Run::new(&dir, "0rtt")
        .args("--transport tcp,quic --resume tickets --early-data 600 --body 40000")
        .args("--replay -n 100 -c 2 --verbose")
        .succeeds();
    for transport in ["tcp", "quic"] {
        let attempts = count_samples(&db, &format!("c.transport = '{transport}' AND s.warmup = 0 AND s.early_data_accepted IS NOT NULL"));
        let accepted = count_samples(
            &db,
            &format!("c.transport = '{transport}' AND s.warmup = 0 AND s.early_data_accepted = 1"),
        );
        assert!(
            attempts >= 98,
            "{transport}: only {attempts} 0-RTT attempts"
        );
        assert!(
            accepted * 100 >= attempts * 99,
            "{transport}: early data accepted on {accepted} of {attempts}"
        );
        let (sent, rejected, replay_accepted): (i64, i64, i64) = row(
            &db,
            &format!("SELECT r.sent, r.rejected, r.accepted FROM replays r JOIN configs c ON c.id = r.config_id WHERE c.transport = '{transport}'"),
        );
        assert!(sent >= 50, "{transport}: {sent} replays sent");
        assert_eq!(rejected, sent, "{transport}: every replay is refused");
        assert_eq!(replay_accepted, 0, "{transport}");
        let short = count_samples(
            &db,
            &format!("c.transport = '{transport}' AND s.response_bytes IS NOT 40000"),
        );
        assert_eq!(short, 0, "{transport}: every 0-RTT answer arrives whole");
    }
    assert!(
        summary.contains("rejected as replays, 0 accepted"),
        "{summary}"
    );
    assert!(summary.contains("early data accepted"), "{summary}");
}

#[test]
fn the_certificate_cache_skips_chain_verification() {
    let dir = scratch("cert-cache");
    let Finished { db, summary, .. } = Run::new(&dir, "cache")
        .args("--cert-cache off,on --cert rsa2048 --chain 3 -n 100")
        .succeeds();
    let off = median(phase_ms(&db, "%chain3 c1", "cert_validation"));
    let on = median(phase_ms(&db, "%certcache", "cert_validation"));
    assert!(
        on < off,
        "cached validation {on} ms is not below full validation {off} ms"
    );
    assert!(
        summary.contains("gains over the full handshake") && summary.contains("certificate cache"),
        "{summary}"
    );
}

#[test]
fn impossible_session_combinations_are_usage_errors() {
    for (args, mentions) in [
        ("--transport quic --tls 1.2", "QUIC carries TLS 1.3 only"),
        ("--http 3", "HTTP/3 needs QUIC"),
        ("--early-data 100", "needs a resumed session"),
        ("--replay", "sends no early data"),
        ("--transport sctp", "valid: tcp, quic"),
        ("--resume sometimes", "valid: off, tickets, session-id"),
        ("--path index.html --http 1.1", "does not start with /"),
    ] {
        let mut full = vec!["run", "-n", "5"];
        full.extend(args.split_whitespace());
        let output = tlslab(&full);
        assert_user_error(&output, 2, mentions);
    }
}

/// At an emulated RTT of 50 ms: QUIC saves TCP's round trip, and 0-RTT saves the request's.
#[test]
fn at_rtt_50ms_quic_saves_one_round_trip_and_0rtt_another() {
    require_emulation!();
    let dir = scratch("quic-rtt");
    let Finished { db, summary, .. } = Run::new(&dir, "rtt")
        .args("--transport tcp,quic --rtt 50ms -n 40 -c 4 --warmup 4")
        .succeeds();
    let tcp = median(phase_ms(&db, "%c4 rtt50ms", "handshake"));
    let quic = median(phase_ms(&db, "%quic%", "handshake"));
    assert!(quic >= 50.0, "QUIC cannot finish within one RTT: {quic} ms");
    assert!(tcp >= 100.0, "TCP + TLS 1.3 needs two RTTs: {tcp} ms");
    let saved = tcp - quic;
    assert!(
        (40.0..=60.0).contains(&saved),
        "QUIC should save one RTT: TCP {tcp} ms, QUIC {quic} ms"
    );
    assert!(!summary.contains("physics check FAILED"), "{summary}");

    // 0-RTT against a resumed 1-RTT request on the same transport.
    for transport in ["quic", "tcp"] {
        let http = if transport == "quic" { "3" } else { "1.1" };
        let Finished { db, summary, .. } = Run::new(&dir, &format!("0rtt-{transport}"))
            .option("--transport", transport)
            .args("--resume tickets --early-data 0,600")
            .option("--http", http)
            .args("--rtt 50ms -n 40 -c 4 --verbose")
            .succeeds();
        let resumed = median(phase_ms(&db, "%tickets rtt50ms", "ttfb"));
        let early = median(phase_ms(&db, "%0rtt rtt50ms", "ttfb"));
        let saved = resumed - early;
        assert!(
            (40.0..=60.0).contains(&saved),
            "{transport}: 0-RTT should save one RTT of time to first byte: resumed {resumed} ms, 0-RTT {early} ms"
        );
        assert!(summary.contains("early data accepted"), "{summary}");
    }
}

/// The tcp-vs-quic example's 10 kB response at an emulated RTT of 30 ms: the lab server's
/// QUIC sends it whole in the round trip that brings its first byte, as TCP's initial window
/// does. With quinn's defaults (a 12,000-byte window and a path MTU probe in it) it came as
/// 11 kB of datagrams and the rest a round trip later. The client counts the server's flights
/// from the datagrams its socket received; a larger body shows the count is no constant.
#[test]
fn a_10kb_quic_response_arrives_in_the_round_trip_of_its_first_byte() {
    require_emulation!();
    let dir = scratch("quic-window");
    let flights = |db: &std::path::Path| -> Vec<(i64, i64, i64)> {
        rows(
            db,
            "SELECT response_round_trips, response_first_flight_bytes, response_later_datagrams \
             FROM samples WHERE warmup = 0 AND outcome = 'ok' AND response_round_trips IS NOT NULL",
            [],
        )
    };
    let Finished { db, summary, .. } = Run::new(&dir, "window")
        .args("--transport quic --http 3 --body 10000 --rtt 30ms -n 10 --warmup 1 --verbose")
        .succeeds();
    let measured = flights(&db);
    assert_eq!(
        measured.len(),
        10,
        "every response's flights counted: {summary}"
    );
    for (round_trips, first_bytes, later_datagrams) in measured {
        assert_eq!(
            (round_trips, later_datagrams),
            (1, 0),
            "the 10 kB response needed a later flight: {summary}"
        );
        assert!(first_bytes >= 10_000, "{first_bytes} bytes carried 10 kB");
    }
    assert!(
        summary.contains("flights    response in 1 round trip (10 of 10) from first byte to last"),
        "{summary}"
    );

    // 40 kB is past any initial window: the rest follows the client's acknowledgements.
    let Finished { db, summary, .. } = Run::new(&dir, "window-40k")
        .args("--transport quic --http 3 --body 40000 --rtt 30ms -n 4 --warmup 1")
        .succeeds();
    let measured = flights(&db);
    assert_eq!(measured.len(), 4, "{summary}");
    for (round_trips, first_bytes, later_datagrams) in measured {
        assert!(round_trips >= 2 && later_datagrams > 0, "{summary}");
        assert!(first_bytes < 40_000, "{first_bytes} bytes in one flight");
    }
}

/// The session-techniques example prints each technique's gain with a 95% interval.
#[test]
fn the_session_techniques_example_prints_each_gain_with_its_interval() {
    require_emulation!();
    let dir = scratch("session-techniques");
    let Finished { summary, .. } = Run::new(&dir, "techniques")
        .arg(example("session-techniques.toml"))
        .args("-n 40 --warmup 2")
        .succeeds();
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
