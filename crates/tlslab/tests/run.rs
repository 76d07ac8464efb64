//! End-to-end: `tlslab run` against the embedded lab server, read back from the store.

mod support;

use support::*;
use tlslab_core::{Event, Phase};

#[test]
fn two_versions_record_every_phase_in_order_and_export_matches() {
    let dir = scratch("versions");
    let run = Run::new(&dir, "r")
        .args("--tls 1.2,1.3 -n 300 -c 4 --json")
        .succeeds();
    let summary = run.json();
    assert_eq!(summary["configs"].as_array().unwrap().len(), 2);
    for config in summary["configs"].as_array().unwrap() {
        assert_eq!(config["ok"], 300, "{config}");
        assert!(config["server_cpu_per_handshake_ms"].as_f64().unwrap() > 0.0);
        assert!(config["handshake_ms"]["median"].as_f64().unwrap() > 0.0);
    }

    let db = run.db;
    let ok = count(
        &db,
        "SELECT COUNT(*) FROM samples WHERE warmup = 0 AND outcome = 'ok'",
    );
    assert_eq!(ok, 600);
    let connection = open(&db);
    let events: Vec<String> = Event::ALL
        .iter()
        .map(|e| format!("s.\"{}\"", e.name()))
        .collect();
    let phases: Vec<String> = Phase::PARTS
        .iter()
        .map(|p| format!("s.\"{}\"", p.name()))
        .collect();
    let mut statement = connection
        .prepare(&format!(
            "SELECT c.version, s.version, s.handshake, {}, {} FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.warmup = 0",
            events.join(", "),
            phases.join(", ")
        ))
        .unwrap();
    let mut rows = statement.query([]).unwrap();
    let mut server_finish = std::collections::HashMap::<String, Vec<i64>>::new();
    while let Some(row) = rows.next().unwrap() {
        let requested: String = row.get(0).unwrap();
        let negotiated: String = row.get(1).unwrap();
        assert_eq!(requested, negotiated);
        let handshake: i64 = row.get(2).unwrap();
        let observed: Vec<Option<i64>> = (0..Event::ALL.len())
            .map(|i| row.get(3 + i).unwrap())
            .collect();
        // Every event but resolved (the name was resolved once, before the run), the
        // client's signature (no mutual TLS), server_accepted (the lab server sends nothing
        // unasked after a fresh handshake, and TLS 1.2's Finished is its acceptance) and
        // first_byte and response_done (no request was made) is observed, in DESIGN order.
        let at = |event: Event| observed[event as usize];
        assert_eq!(at(Event::Start), Some(0));
        for event in Event::ALL {
            let absent = matches!(
                event,
                Event::Resolved
                    | Event::ClientSignStart
                    | Event::ClientSignEnd
                    | Event::ServerAccepted
                    | Event::FirstByte
                    | Event::ResponseDone
            );
            assert_eq!(at(event).is_none(), absent, "{event:?}: {observed:?}");
        }
        let times: Vec<i64> = observed.iter().flatten().copied().collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "events out of order: {times:?}"
        );
        // dns is NULL: no attempt made a lookup of its own.
        let parts: Vec<i64> = (0..Phase::PARTS.len())
            .map(|i| {
                row.get::<_, Option<i64>>(3 + Event::ALL.len() + i)
                    .unwrap()
                    .unwrap_or(0)
            })
            .collect();
        assert!(
            (parts.iter().sum::<i64>() - handshake).abs() <= 1_000,
            "{parts:?} vs {handshake}"
        );
        let server_finish_part = Phase::PARTS
            .iter()
            .position(|&phase| phase == Phase::ServerFinish)
            .unwrap();
        server_finish
            .entry(negotiated)
            .or_default()
            .push(parts[server_finish_part]);
    }
    // TLS 1.2's extra round trip: the client waits for the server's Finished after its own.
    let tls12 = median(server_finish.remove("1.2").unwrap());
    let tls13 = median(server_finish.remove("1.3").unwrap());
    assert!(
        tls12 > tls13 * 5 && tls12 > 10_000,
        "server_finish 1.2 {tls12} ns vs 1.3 {tls13} ns"
    );

    for (format, extension) in [("csv", "csv"), ("jsonl", "jsonl")] {
        let file = dir.join(format!("export.{extension}"));
        tlslab_succeeds(&[
            "export",
            db.to_str().unwrap(),
            "--format",
            format,
            "-o",
            file.to_str().unwrap(),
        ]);
        let text = std::fs::read_to_string(&file).unwrap();
        let total = count(&db, "SELECT COUNT(*) FROM samples");
        let rows = text.lines().count() as i64 - i64::from(format == "csv");
        assert_eq!(rows, total, "{format}");
        if format == "csv" {
            let header = text.lines().next().unwrap();
            for field in [
                "config",
                "round",
                "agent",
                "warmup",
                "outcome",
                "error",
                "version",
                "suite",
                "group",
                "signature_scheme",
                "resumed",
                "bytes_sent",
                "bytes_received",
                "start",
                "tcp_connected",
                "server_hello_received",
                "handshake_done",
                "server_response",
                "cert_validation",
                "handshake",
                "ttfb",
            ] {
                assert!(
                    header.split(',').any(|f| f == field),
                    "{field} missing from {header}"
                );
            }
        } else {
            let first: serde_json::Value =
                serde_json::from_str(text.lines().next().unwrap()).unwrap();
            assert_eq!(first["start"], 0);
            assert!(first["config"].as_str().unwrap().starts_with("tls1."));
            assert!(first["warmup"].is_boolean());
        }
    }
}

/// The stored signature scheme each profile's key signs handshakes with.
fn expected_scheme(cert: &str) -> &'static str {
    match cert {
        "ecdsa-p256" => "ECDSA_NISTP256_SHA256",
        "ecdsa-p384" => "ECDSA_NISTP384_SHA384",
        "ed25519" => "ED25519",
        _ => "RSA_PSS_SHA512",
    }
}

#[test]
fn every_suite_group_certificate_and_chain_negotiates_what_was_asked() {
    let dir = scratch("matrix");
    let Finished { db, .. } = Run::new(&dir, "matrix")
        .args("--tls 1.2,1.3 --suite aes128gcm,aes256gcm,chacha20")
        .args("--group x25519,secp256r1,secp384r1,x25519mlkem768,secp256r1mlkem768,mlkem768")
        .args("--cert rsa2048,rsa3072,rsa4096,ecdsa-p256,ecdsa-p384,ed25519 --chain 1,2,3,4,5")
        .args("-n 2 --warmup 0 --skip-invalid")
        .succeeds();
    // TLS 1.3: 3 suites × 6 groups; TLS 1.2: 3 suites × 3 classical groups; × 6 certs × 5 chains.
    let configs = count(&db, "SELECT COUNT(*) FROM configs");
    assert_eq!(configs, (18 + 9) * 30);
    let connection = open(&db);
    let mut statement = connection
        .prepare(
            "SELECT c.label, c.version, c.suite, c.\"group\", c.cert, c.chain, s.outcome, s.suite, s.\"group\", s.signature_scheme, s.bytes_received
             FROM samples s JOIN configs c ON c.id = s.config_id",
        )
        .unwrap();
    let mut rows = statement.query([]).unwrap();
    let mut seen = 0;
    let mut received_by_chain = std::collections::BTreeMap::<i64, Vec<i64>>::new();
    while let Some(row) = rows.next().unwrap() {
        let label: String = row.get(0).unwrap();
        let version: String = row.get(1).unwrap();
        let cipher: String = row.get(2).unwrap();
        let group: String = row.get(3).unwrap();
        let cert: String = row.get(4).unwrap();
        let chain: i64 = row.get(5).unwrap();
        let outcome: String = row.get(6).unwrap();
        assert_eq!(outcome, "ok", "{label}");
        let version: tlslab_core::TlsVersion = version.parse().unwrap();
        let profile: tlslab_core::CertProfile = cert.parse().unwrap();
        let expected_suite = tlslab_core::dimension::iana_suite_name(
            cipher.parse().unwrap(),
            version,
            profile.key_kind().tls12_authentication().unwrap(),
        );
        assert_eq!(row.get::<_, String>(7).unwrap(), expected_suite, "{label}");
        assert_eq!(row.get::<_, String>(8).unwrap(), group, "{label}");
        assert_eq!(
            row.get::<_, String>(9).unwrap(),
            expected_scheme(&cert),
            "{label}"
        );
        if cert == "ecdsa-p256" && version == tlslab_core::TlsVersion::Tls13 {
            received_by_chain
                .entry(chain)
                .or_default()
                .push(row.get(10).unwrap());
        }
        seen += 1;
    }
    assert_eq!(seen, configs * 2);
    // Each extra certificate in the chain arrives on the wire.
    let mean = |values: &Vec<i64>| values.iter().sum::<i64>() / values.len() as i64;
    let means: Vec<i64> = received_by_chain.values().map(mean).collect();
    assert!(means.windows(2).all(|w| w[1] > w[0] + 200), "{means:?}");
}

#[test]
fn resumed_handshakes_follow_each_agents_first_and_skip_the_certificate() {
    let dir = scratch("resume");
    let Finished { db, .. } = Run::new(&dir, "resume")
        .args("--tls 1.2,1.3 --resume -n 200 -c 8 --warmup 0")
        .succeeds();
    for config in 0..2 {
        let attempts: Vec<(i64, bool, i64)> = rows(
            &db,
            "SELECT agent, resumed, handshake FROM samples WHERE config_id = ?1 ORDER BY started_at_ns",
            [config],
        );
        assert_eq!(attempts.len(), 200);
        let mut seen_agents = std::collections::HashSet::new();
        let (mut full, mut resumed) = (Vec::new(), Vec::new());
        for (agent, was_resumed, handshake) in attempts {
            let first = seen_agents.insert(agent);
            assert_eq!(was_resumed, !first, "config {config} agent {agent}");
            if was_resumed {
                resumed.push(handshake)
            } else {
                full.push(handshake)
            }
        }
        assert_eq!(full.len(), 8);
        assert_eq!(resumed.len(), 192);
        // Which is faster on loopback depends on the machine's load (a resumed TLS 1.3
        // handshake saves only a signature check): what cannot vary is that no certificate
        // crosses the wire, so the resumed server flight is the smaller one.
        let flight = |resumed: bool| -> i64 {
            value(&db, &format!("SELECT MAX(server_flight_bytes) FROM samples WHERE config_id = {config} AND resumed = {}", i64::from(resumed)))
        };
        assert!(flight(true) < flight(false), "config {config}");
        // A resumed handshake verifies no certificate.
        let verified = count(&db, &format!("SELECT COUNT(*) FROM samples WHERE config_id = {config} AND resumed = 1 AND cert_verify_start IS NOT NULL"));
        assert_eq!(verified, 0);
    }
}

#[test]
fn two_thousand_concurrent_agents_complete_without_errors() {
    let dir = scratch("agents");
    let summary = Run::new(&dir, "agents")
        .args("-c 2000 -n 4000 --warmup 0 --json")
        .succeeds()
        .json();
    assert_eq!(summary["configs"][0]["ok"], 4000, "{summary}");
    assert!(
        summary["configs"][0]["client_peak_rss_bytes"]
            .as_i64()
            .unwrap()
            > 0
    );
}

#[test]
fn an_experiment_file_and_its_dump_are_equivalent_to_flags() {
    let dir = scratch("file");
    let dump = tlslab_succeeds(&[
        "run",
        "--tls",
        "1.2,1.3",
        "--group",
        "secp256r1",
        "-n",
        "20",
        "--seed",
        "7",
        "--dump-experiment",
    ]);
    let file = dir.join("experiment.toml");
    std::fs::write(&file, dump).unwrap();
    let summary = Run::new(&dir, "file")
        .arg(file.to_str().unwrap())
        .args("--json")
        .succeeds()
        .json();
    let labels: Vec<&str> = summary["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "tls1.2 aes128gcm secp256r1 ecdsa-p256 chain1 c1",
            "tls1.3 aes128gcm secp256r1 ecdsa-p256 chain1 c1"
        ]
    );
    assert_eq!(summary["seed"], 7);
}

#[test]
fn an_experiment_with_three_config_tables_runs_exactly_three_configs() {
    let dir = scratch("explicit-configs");
    let finished = Run::new(&dir, "explicit")
        .arg(example("explicit-configs.toml"))
        .args("-n 5 --warmup 0")
        .succeeds();
    let labels: Vec<String> = column(&finished.db, "SELECT label FROM configs ORDER BY id", []);
    assert_eq!(
        labels,
        [
            "ecdhe-rsa aes128gcm",
            "ecdhe-ecdsa aes256gcm",
            "tls1.3 chacha20 ed25519"
        ]
    );
    // Each measured what its table said.
    assert_eq!(
        count_samples(
            &finished.db,
            "s.outcome = 'ok' AND ((c.label LIKE 'ecdhe-rsa%' AND s.version = '1.2' AND c.cert = 'rsa2048') \
             OR (c.label LIKE 'ecdhe-ecdsa%' AND s.suite LIKE '%AES_256_GCM%') \
             OR (c.label LIKE 'tls1.3%' AND s.suite = 'TLS13_CHACHA20_POLY1305_SHA256' AND s.signature_scheme = 'ED25519'))"
        ),
        15
    );

    // Next to the crossed matrix a flag describes: its two Configs first, then the three.
    let union = Run::new(&dir, "union")
        .arg(example("explicit-configs.toml"))
        .args("--tls 1.2,1.3 -n 5 --warmup 0")
        .succeeds();
    let labels: Vec<String> = column(&union.db, "SELECT label FROM configs ORDER BY id", []);
    assert_eq!(labels.len(), 5, "{labels:?}");
    assert!(labels[0].starts_with("tls1.2 aes128gcm"), "{labels:?}");
    assert!(labels[1].starts_with("tls1.3 aes128gcm"), "{labels:?}");
    assert_eq!(
        labels[2..],
        [
            "ecdhe-rsa aes128gcm",
            "ecdhe-ecdsa aes256gcm",
            "tls1.3 chacha20 ed25519"
        ]
    );
    assert_eq!(count_samples(&union.db, "s.outcome = 'ok'"), 25);
    // A file that turns the matrix off refuses the flag rather than ignore it.
    let off = dir.join("tables-alone.toml");
    std::fs::write(&off, "matrix = false\n[[config]]\ncert = \"rsa2048\"\n").unwrap();
    Run::new(&dir, "refused")
        .arg(off.to_str().unwrap())
        .args("--tls 1.2 -n 5")
        .fails(2, "matrix = false");
}

#[test]
fn a_saturated_lab_server_is_diagnosed_as_the_limit_and_an_idle_one_is_not() {
    let dir = scratch("bottleneck");
    // RSA-4096 signatures at 16 agents keep every core of the lab server busy.
    let busy = Run::new(&dir, "busy")
        .args("--cert rsa4096 -c 16 -n 1500 --warmup 50")
        .succeeds();
    // Said without --verbose, on one line of its own: as the limit, or as the queue its CPU
    // made of the latency.
    assert!(
        busy.summary.lines().any(|line| {
            (line.starts_with("limit: ") && line.contains("the lab server (its CPU"))
                || (line.starts_with("warning: ")
                    && line.contains("queueing at the lab server (its CPU was the limit)"))
        }),
        "{}",
        busy.summary
    );
    assert!(
        busy.stderr.contains("was queueing at the lab server") || busy.summary.contains("queueing")
    );
    // One agent and ECDSA: neither side is the limit.
    let idle = Run::new(&dir, "idle")
        .args("--cert ecdsa-p256 -c 1 -n 200 --warmup 10 --json")
        .succeeds();
    let summary = idle.json();
    assert_eq!(
        summary["configs"][0]["bottleneck"]["limit"], "none",
        "{summary}"
    );
    // The report carries the diagnosis too.
    let report = dir.join("busy.md");
    tlslab_succeeds(&[
        "report",
        busy.db.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    let markdown = std::fs::read_to_string(&report).unwrap();
    assert!(markdown.contains("| server ("), "{markdown}");
}

#[test]
fn with_columns_80_the_summary_fits_80_columns() {
    let dir = scratch("columns");
    let four = "--tls 1.2,1.3 --group x25519,secp256r1 -n 20 --warmup 0";
    let fitted = |name: &str, extra: &str| {
        let output = Run::new(&dir, name)
            .args(four)
            .args(extra)
            .command()
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let summary = stdout(&output);
        let longest = summary
            .lines()
            .map(|line| line.chars().count())
            .max()
            .unwrap();
        assert!(longest <= 80, "a line of {longest} characters:\n{summary}");
        summary
    };
    // The default summary: the shared words once, then one row per Config of 20 handshakes.
    let summary = fitted("four", "");
    assert!(
        summary.starts_with("all: aes128gcm ecdsa-p256 chain1 c1\nhandshake "),
        "{summary}"
    );
    for name in [
        "tls1.2 x25519",
        "tls1.2 secp256r1",
        "tls1.3 x25519",
        "tls1.3 secp256r1",
    ] {
        assert!(
            summary
                .lines()
                .any(|line| line.starts_with(name) && line.split_whitespace().nth(2) == Some("20")),
            "no row for {name}:\n{summary}"
        );
    }
    // Nothing is lost in the fitting of the details either: the four Configs and their
    // statistics are there.
    let verbose = fitted("four-verbose", "--verbose");
    assert_eq!(
        verbose.matches("  outcomes   20 ok of 20 attempts").count(),
        4,
        "{verbose}"
    );
    // Piped without COLUMNS, lines stay whole for tools that read them.
    let whole = Run::new(&dir, "piped")
        .args(four)
        .args("--verbose")
        .succeeds();
    assert!(whole.summary.lines().any(|line| line.chars().count() > 80));
}

/// Measured samples whose additive phases do not add up to the handshake exactly.
const PARTS_MISMATCH: &str = "SELECT COUNT(*) FROM samples WHERE warmup = 0 AND \
     COALESCE(dns, 0) + COALESCE(tcp_connect, 0) + client_hello_build + server_response \
     + server_flight + COALESCE(cert_validation, 0) + client_finish + server_finish != handshake";

#[test]
fn insecure_handshakes_leave_cert_validation_unmeasured_and_the_phases_add_up() {
    let dir = scratch("insecure");
    for (name, matrix) in [
        ("tcp", "--tls 1.2,1.3 --backend rustls,openssl"),
        ("quic", "--transport quic"),
    ] {
        let run = Run::new(&dir, name)
            .args(matrix)
            .args("--insecure -n 20 --warmup 0 --verbose")
            .succeeds();
        let db = &run.db;
        assert!(count(db, "SELECT COUNT(*) FROM samples WHERE outcome = 'ok'") > 0);
        // Nothing was validated: no event, no phase, on any backend or transport.
        assert_eq!(
            count(
                db,
                "SELECT COUNT(*) FROM samples WHERE cert_validation IS NOT NULL \
                 OR cert_verify_start IS NOT NULL OR cert_verify_end IS NOT NULL"
            ),
            0,
            "{name}"
        );
        // The client still reacted to the server's flight: that moment is kept.
        assert_eq!(
            count(
                db,
                "SELECT COUNT(*) FROM samples WHERE warmup = 0 AND (server_flight_received IS NULL \
                 OR client_finish IS NULL)"
            ),
            0,
            "{name}"
        );
        assert_eq!(count(db, PARTS_MISMATCH), 0, "{name}");
        assert!(
            !run.summary.contains("cert_validation 0"),
            "{}",
            run.summary
        );
        assert!(
            run.summary.contains("cert_validation is not measured"),
            "{}",
            run.summary
        );
    }
    // Verified, the same handshakes do have it, and still add up.
    let verified = Run::new(&dir, "verified")
        .args("--tls 1.2,1.3 --backend rustls,openssl -n 10 --warmup 0")
        .succeeds();
    assert_eq!(
        count(
            &verified.db,
            "SELECT COUNT(*) FROM samples WHERE cert_validation IS NULL OR cert_validation <= 0"
        ),
        0
    );
    assert_eq!(count(&verified.db, PARTS_MISMATCH), 0);
}

#[test]
fn quiet_prints_one_result_line_and_keeps_warnings_errors_and_json() {
    let dir = scratch("quiet");
    let db = dir.join("quiet.db");
    let html = dir.join("quiet.html");
    let _ = std::fs::remove_file(&html);
    // --insecure makes a warning; --report a file the line names.
    let run = Run::new(&dir, "quiet")
        .args("--quiet --insecure --report --tls 1.2,1.3 -n 20 --warmup 0")
        .succeeds();
    let lines: Vec<&str> = run.summary.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stdout:\n{}", run.summary);
    assert!(
        lines[0].starts_with("40 attempts, 0 errors in "),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains(&format!("results: {}", db.display()))
            && lines[0].ends_with(&format!("report: {}", html.display())),
        "{}",
        lines[0]
    );
    assert!(html.exists(), "the report was written");
    assert!(
        run.stderr
            .contains("warning: certificate verification was OFF"),
        "the warning still goes to stderr: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("handshake "),
        "no table: {}",
        run.stderr
    );

    // Without --quiet the same line ends the summary, after the table.
    let loud = Run::new(&dir, "loud")
        .args("--tls 1.2,1.3 -n 20 --warmup 0")
        .succeeds();
    assert!(loud.summary.lines().count() > 3, "{}", loud.summary);
    assert!(loud
        .summary
        .lines()
        .last()
        .unwrap()
        .starts_with("40 attempts, 0 errors in "));

    // --json is output a script asked for: --quiet keeps it.
    let json = Run::new(&dir, "json")
        .args("--quiet --json -n 10 --warmup 0")
        .succeeds();
    assert_eq!(json.json()["configs"].as_array().unwrap().len(), 1);

    // A broken threshold still says which and exits 4, with the line on stdout.
    let output = Run::new(&dir, "threshold")
        .args("-q -n 10 --warmup 0 --threshold p99<1us")
        .output();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("error: threshold 'p99<1us'"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output).lines().count(), 1, "{}", stdout(&output));
}

#[test]
fn a_crossed_matrix_is_answered_per_dimension_never_across_two() {
    let dir = scratch("crossed");
    let crossed = "--tls 1.2,1.3 -c 1,4 --warmup 0";
    let finished = Run::new(&dir, "crossed")
        .args(crossed)
        .args("-n 100")
        .succeeds();
    let summary = &finished.summary;
    assert!(
        summary.starts_with("all: aes128gcm x25519 ecdsa-p256 chain1\n"),
        "{summary}"
    );
    let names = ["tls1.2 c1", "tls1.2 c4", "tls1.3 c1", "tls1.3 c4"];
    for name in names {
        assert_eq!(
            summary
                .lines()
                .filter(|line| line.starts_with(name))
                .count(),
            1,
            "one row for {name}:\n{summary}"
        );
    }
    // One pooled answer per dimension, each across its two strata.
    for answer in ["  tls 1.3 vs 1.2: ", "  concurrency 4 vs 1: "] {
        let line = summary
            .lines()
            .find(|line| line.starts_with(answer))
            .unwrap_or_else(|| panic!("no '{answer}' line:\n{summary}"));
        assert!(line.contains(", 2 strata)"), "{line}");
    }
    // No line sets two Configs against each other: no baseline comparison, and no line
    // names two of them.
    assert!(!summary.contains("against"), "{summary}");
    for line in summary.lines() {
        let named = names.iter().filter(|name| line.contains(*name)).count();
        assert!(named <= 1, "a line compares Configs: {line}");
    }
    // The details stay behind --verbose.
    assert!(!summary.contains("  phases "), "{summary}");

    let verbose = Run::new(&dir, "crossed-verbose")
        .args(crossed)
        .args("-n 20 --verbose")
        .succeeds()
        .summary;
    assert_eq!(verbose.matches("\n  phases     ").count(), 4, "{verbose}");
    // The strata of each dimension, each a contrast that changes that dimension alone.
    assert!(
        verbose.contains("handshake by tls: each value against 1.2")
            && verbose.contains("handshake by concurrency: each value against 1"),
        "{verbose}"
    );
    assert_eq!(
        verbose
            .matches("  per stratum (Holm across all 2):")
            .count(),
        2
    );

    // The JSON carries the factorial comparisons beside everything it carried before.
    let json = Run::new(&dir, "crossed-json")
        .args(crossed)
        .args("-n 20 --json")
        .succeeds()
        .json();
    assert_eq!(
        json["dimensions"],
        serde_json::json!(["tls", "concurrency"])
    );
    let factorials = json["factorials"].as_array().unwrap();
    assert_eq!(factorials.len(), 2, "{json}");
    assert_eq!(factorials[0]["by"], "tls");
    assert_eq!(factorials[0]["contrasts"].as_array().unwrap().len(), 2);
    assert_eq!(factorials[1]["pooled"][0]["strata"], 2);
    assert_eq!(
        json["comparisons"]["comparisons"].as_array().unwrap().len(),
        3
    );
    for config in json["configs"].as_array().unwrap() {
        let handshake = &config["handshake_ms"];
        assert!(
            handshake["p999"].as_f64().unwrap() >= handshake["p99"].as_f64().unwrap(),
            "{config}"
        );
    }
}
