//! `tlslab load` end to end, against the real lab web server: HTTPS beside plain HTTP,
//! keep-alive, ab's layout, and what TLS costs a request at an emulated round trip.

mod support;

use std::path::Path;

use support::*;

/// `tlslab load` with `args`, its store at `<dir>/<name>.db`; returns the store and stdout.
fn load(dir: &Path, name: &str, args: &[&str]) -> (std::path::PathBuf, String) {
    let db = dir.join(format!("{name}.db"));
    let mut line = vec!["load", "--out", db.to_str().unwrap()];
    line.extend_from_slice(args);
    let output = tlslab_succeeds(&line);
    (db, output)
}

/// The median of a stored column over the successful measured samples of Configs whose
/// label is `LIKE label`.
fn median_of(db: &Path, column: &str, label: &str) -> i64 {
    median(values_of(db, column, label, Samples::Measured))
}

#[test]
fn https_and_plain_http_side_by_side_with_the_increase_at_each_concurrency() {
    let dir = scratch("load-schemes");
    let (db, output) = load(
        &dir,
        "schemes",
        &["--scheme", "http,https", "-c", "1,4", "-n", "200"],
    );
    // Four Configs, 200 measured requests each, all answered 200.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM configs"), 4);
    assert_eq!(
        count_samples(
            &db,
            "s.warmup = 0 AND s.outcome = 'ok' AND s.http_status = 200"
        ),
        800
    );
    // One increase line per concurrency, with its interval and test.
    for concurrency in ["c1", "c4"] {
        let line = output
            .lines()
            .find(|line| line.contains(&format!("'http {concurrency} h1 keepalive'")))
            .unwrap_or_else(|| panic!("no increase for {concurrency}: {output}"));
        assert!(line.contains("% ["), "{line}");
        assert!(line.contains("Mann-Whitney"), "{line}");
    }
    // Plain HTTP shakes no hands; HTTPS does, once per connection; keep-alive reuses them.
    assert_eq!(
        count_samples(
            &db,
            "c.scheme = 'http' AND (s.client_hello_sent IS NOT NULL OR s.handshake_done IS NOT NULL)"
        ),
        0
    );
    let opened = count_samples(&db, "c.scheme = 'https' AND s.connection_request = 1");
    let handshakes = count_samples(
        &db,
        "c.scheme = 'https' AND s.connection_request = 1 AND s.handshake_done IS NOT NULL",
    );
    assert!(
        opened > 0 && handshakes == opened,
        "{handshakes} of {opened}"
    );
    assert_eq!(
        count_samples(
            &db,
            "s.connection_request > 1 AND (s.client_hello_sent IS NOT NULL OR s.tcp_connected IS NOT NULL)"
        ),
        0,
        "a request on a kept connection has no connect or handshake events"
    );
    // c4: four agents, four connections, carrying every request (warm-up included).
    let connections = count(
        &db,
        "SELECT COUNT(DISTINCT s.connection) FROM samples s JOIN configs c ON c.id = s.config_id WHERE c.label = 'http c4 h1 keepalive'",
    );
    assert_eq!(connections, 4);
    assert!(
        count_samples(&db, "s.response_wire_bytes > s.response_bytes") >= 800,
        "the bytes on the wire include the response's headers"
    );
    // The lab server's `Server` field, stored on each connection's first request only.
    let software = format!("tlslab/{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        count_samples(&db, &format!("s.server_software = '{software}'")),
        count_samples(&db, "s.connection_request = 1"),
    );
    assert_eq!(
        count_samples(
            &db,
            "s.server_software IS NOT NULL AND s.connection_request > 1"
        ),
        0
    );
    assert!(
        output.contains(&format!("  server     {software} at 127.0.0.1:")),
        "{output}"
    );
    let (_, json) = load(&dir, "json", &["-n", "20", "-c", "2", "--json"]);
    assert!(
        json.contains(&format!("\"server_software\": \"{software}\"")),
        "{json}"
    );
    // The reports carry the same figures.
    let markdown = dir.join("schemes.md");
    tlslab_succeeds(&[
        "report",
        db.to_str().unwrap(),
        "-o",
        markdown.to_str().unwrap(),
    ]);
    let markdown = std::fs::read_to_string(markdown).unwrap();
    for section in ["## Requests under load", "## HTTPS against plain HTTP"] {
        assert!(markdown.contains(section), "{section}: {markdown}");
    }
    let increases = &markdown[markdown.find("## HTTPS against plain HTTP").unwrap()..];
    let rows = increases
        .lines()
        .take_while(|line| !line.starts_with("## Median"))
        .filter(|line| line.starts_with("| tls1.3"))
        .count();
    assert_eq!(rows, 2, "one increase per concurrency: {increases}");
    let html = dir.join("schemes.html");
    tlslab_succeeds(&["report", db.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("<h2 id=\"schemes\">HTTPS against plain HTTP</h2>"));
    // Requests per second and request time against concurrency, HTTP and HTTPS as two lines.
    let figure = &html[html
        .find("<figure id=\"requests\"")
        .expect("the requests chart")..];
    let figure = &figure[..figure.find("</figure>").unwrap()];
    for text in [
        "requests per second",
        "request time, ms",
        "\nhttp\n",
        "\ntls1.3 ",
    ] {
        assert!(figure.contains(text), "{text} missing from the chart");
    }
    // compare reads a load store by its requests' time (most requests have no handshake).
    let compared = tlslab_succeeds(&["compare", db.to_str().unwrap(), "--by", "scheme"]);
    assert!(compared.starts_with("total by scheme"), "{compared}");
    assert!(compared.contains("https vs http: ratio"), "{compared}");
    assert_eq!(compared.matches("concurrency=").count(), 2, "{compared}");
    let plain = tlslab_succeeds(&["compare", db.to_str().unwrap()]);
    // After the words every Config shares, said once as in the run's summary.
    assert!(
        plain
            .lines()
            .find(|line| !line.starts_with("all: "))
            .is_some_and(|line| line.starts_with("total: each config against baseline")),
        "{plain}"
    );
}

#[test]
fn the_ab_layout_reads_with_the_study_scripts_grep_lines() {
    let dir = scratch("load-ab");
    let (_, output) = load(
        &dir,
        "ab",
        &[
            "--keep-alive",
            "off,on",
            "-n",
            "300",
            "-c",
            "3",
            "--format",
            "ab",
        ],
    );
    let field = |name: &str| -> Vec<String> {
        output
            .lines()
            .filter(|line| line.starts_with(name))
            .map(|line| line[name.len()..].trim().to_string())
            .collect()
    };
    assert_eq!(field("Complete requests:"), vec!["300", "300"]);
    assert_eq!(field("Failed requests:"), vec!["0", "0"]);
    assert_eq!(field("Concurrency Level:"), vec!["3", "3"]);
    assert_eq!(field("Keep-Alive requests:"), vec!["300"]);
    // The lab server's `Server` field, from a connection's first response: with keep-alive
    // that is a warm-up request's.
    let software = format!("tlslab/{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(field("Server Software:"), vec![software.clone(), software]);
    for rate in field("Requests per second:") {
        // As the study's script read it: `grep "Requests per second" | awk '{print $4}'`.
        let number: f64 = rate.split_whitespace().next().unwrap().parse().unwrap();
        assert!(number > 0.0, "{rate}");
        assert!(rate.ends_with("[#/sec] (mean)"), "{rate}");
    }
    for taken in field("Time taken for tests:") {
        assert!(taken.ends_with(" seconds"), "{taken}");
    }
    assert_eq!(field("Time per request:").len(), 4);
    assert_eq!(field("Document Length:"), vec!["1024 bytes", "1024 bytes"]);
    assert_eq!(
        output.matches("Percentage of the requests served").count(),
        2
    );
    assert_eq!(output.matches("(longest request)").count(), 2);
}

#[test]
fn http3_keeps_one_quic_connection_per_agent() {
    let dir = scratch("load-h3");
    let (db, output) = load(
        &dir,
        "h3",
        &["--http", "3", "--transport", "quic", "-n", "300", "-c", "3"],
    );
    assert!(
        output.contains("keepalive"),
        "keep-alive by default:\n{output}"
    );
    // Every measured request answered 200, each on a stream of a kept connection.
    assert_eq!(
        count_samples(
            &db,
            "s.warmup = 0 AND s.outcome = 'ok' AND s.http_status = 200"
        ),
        300
    );
    assert_eq!(count_samples(&db, "s.outcome != 'ok'"), 0);
    // Three agents, three QUIC connections (warm-up included), each opened by one handshake
    // that is stored with the request that opened it.
    assert_eq!(
        count(&db, "SELECT COUNT(DISTINCT connection) FROM samples"),
        3
    );
    assert_eq!(count_samples(&db, "s.connection IS NULL"), 0);
    assert_eq!(count_samples(&db, "s.handshake_done IS NOT NULL"), 3);
    assert_eq!(
        count_samples(
            &db,
            "s.connection_request = 1 AND s.handshake_done IS NOT NULL"
        ),
        3
    );
    // A request on a kept connection shakes no hands but times its own stream.
    assert_eq!(
        count_samples(
            &db,
            "s.connection_request > 1 AND (s.client_hello_sent IS NOT NULL OR s.handshake_done IS NOT NULL)"
        ),
        0
    );
    assert_eq!(
        count_samples(
            &db,
            "s.first_byte IS NULL OR s.response_done IS NULL OR s.response_done < s.first_byte"
        ),
        0
    );
    // The datagrams it read carried the response: more bytes than its body.
    assert_eq!(
        count_samples(&db, "NOT (s.response_wire_bytes > s.response_bytes)"),
        0
    );
    let requests = count(&db, "SELECT MAX(connection_request) FROM samples");
    assert!(
        requests > 10,
        "connections carried {requests} requests at most"
    );
}

#[test]
fn urls_and_bad_urls() {
    let dir = scratch("load-urls");
    let output = tlslab(&["load", "ftp://example.com/"]);
    assert_user_error(&output, 2, "not http or https");
    let output = tlslab(&["load", "--keep-alive", "on", "--resume", "tickets"]);
    assert_user_error(&output, 2, "no next handshake to resume");
    // A URL is a target: the lab server of another process, by its plain address.
    let port = closed_port();
    let output = tlslab(&[
        "load",
        &format!("http://127.0.0.1:{port}/r/10"),
        "-n",
        "5",
        "--warmup",
        "0",
        "--out",
        dir.join("refused.db").to_str().unwrap(),
        "--quiet",
    ]);
    // Nothing listens there: every request is refused, stored and counted.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        count_samples(&dir.join("refused.db"), "s.error = 'refused'"),
        5
    );
}

#[test]
fn at_a_round_trip_of_20_ms_https_costs_a_round_trip_per_connection_and_keep_alive_hides_it() {
    require_emulation!();
    let dir = scratch("load-rtt");
    let (db, _) = load(
        &dir,
        "rtt",
        &[
            "--scheme",
            "http,https",
            "--keep-alive",
            "off,on",
            "--rtt",
            "20ms",
            "-n",
            "30",
            "-c",
            "2",
            "--warmup",
            "0",
        ],
    );
    let http = median_of(&db, "total", "http c2 h1 rtt20ms");
    let https = median_of(&db, "total", "tls1.3 % c2 h1 rtt20ms");
    // TLS 1.3 adds one round trip to every new connection: a lower bound, which any load
    // on the machine can only raise.
    assert!(
        https - http >= 20_000_000,
        "HTTPS {https} ns against HTTP {http} ns"
    );
    let kept_http = median_of(&db, "total", "http c2 h1 keepalive rtt20ms");
    let kept_https = median_of(&db, "total", "tls1.3 % c2 h1 keepalive rtt20ms");
    // With keep-alive, 28 of 30 requests reuse a connection: the median request pays no
    // handshake, so the gap is below the round trip that separates new connections.
    assert!(
        kept_https - kept_http < https - http,
        "kept: {kept_https} against {kept_http}; new: {https} against {http}"
    );
    assert_eq!(
        count_samples(&db, "c.keep_alive = 1 AND s.connection_request > 1"),
        56
    );
}

#[test]
fn a_page_over_six_http1_connections_and_over_one_http2_connection_at_50_ms() {
    require_emulation!();
    let dir = scratch("load-page");
    let (db, output) = load(
        &dir,
        "page",
        &[
            "--page",
            "40:2KB",
            "--http",
            "1.1,2",
            "--scheme",
            "https,http",
            "--rtt",
            "50ms",
            "-n",
            "5",
            "-c",
            "1",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(
        count_samples(
            &db,
            "s.outcome = 'ok' AND s.response_bytes = 1024 + 40 * 2000"
        ),
        20,
        "every page whole: the document and its 40 resources"
    );
    // Connect, the document and one round of resources: at least four round trips over
    // HTTPS (the handshake's), three over plain HTTP, whatever the protocol.
    for (label, floor_ms) in [
        ("tls1.3 % h1 page rtt50ms", 200),
        ("tls1.3 % h2 page rtt50ms", 200),
        ("http c1 h1 page rtt50ms", 150),
        ("http c1 h2 page rtt50ms", 150),
    ] {
        let fastest = values_of(&db, "total", label, Samples::Measured)
            .into_iter()
            .min()
            .unwrap_or_else(|| panic!("no page for {label}"));
        assert!(fastest >= floor_ms * 1_000_000, "{label}: {fastest} ns");
    }
    // Forty small resources: six HTTP/1.1 connections need about seven rounds of requests,
    // one HTTP/2 connection asks for all of them at once.
    for scheme in ["tls1.3 %", "http c1"] {
        let http1 = median_of(&db, "total", &format!("{scheme} h1 page rtt50ms"));
        let http2 = median_of(&db, "total", &format!("{scheme} h2 page rtt50ms"));
        assert!(
            http2 < http1,
            "{scheme}: HTTP/2 {http2} ns, HTTP/1.1 {http1} ns"
        );
    }
    assert!(
        output.contains("HTTPS against plain HTTP"),
        "the study's page load comparison: {output}"
    );
}

#[test]
fn a_page_from_a_har_file_or_a_description_file() {
    let dir = scratch("load-page-file");
    // What a browser's network panel saves: the document, then its resources; a second page
    // in the same file is not part of the first.
    let har = dir.join("site.har");
    std::fs::write(
        &har,
        r#"{"log": {"version": "1.2", "pages": [{"id": "page_1"}, {"id": "page_2"}],
          "entries": [
            {"pageref": "page_1", "response": {"status": 200, "bodySize": 15000}},
            {"pageref": "page_1", "response": {"status": 200, "bodySize": 3000}},
            {"pageref": "page_1", "response": {"status": 200, "bodySize": 3000}},
            {"pageref": "page_1", "response": {"status": 200, "bodySize": -1, "content": {"size": 800}}},
            {"pageref": "page_2", "response": {"status": 200, "bodySize": 123456}}
          ]}}"#,
    )
    .unwrap();
    let (db, _) = load(
        &dir,
        "har",
        &[
            "--page",
            &format!("@{}", har.display()),
            "-n",
            "3",
            "-c",
            "1",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(
        value::<String>(&db, "SELECT page FROM configs"),
        "2:3000,1:800",
        "the page as stored: the first page's resources after its document"
    );
    assert_eq!(
        count_samples(
            &db,
            "s.outcome = 'ok' AND s.response_bytes = 1024 + 2 * 3000 + 800"
        ),
        3,
        "every page whole"
    );

    let lines = dir.join("page.txt");
    std::fs::write(&lines, "# two sizes\n3:1KB\n2KB\n").unwrap();
    let (db, _) = load(
        &dir,
        "lines",
        &[
            "--page",
            &format!("@{}", lines.display()),
            "-n",
            "2",
            "-c",
            "1",
        ],
    );
    assert_eq!(
        value::<String>(&db, "SELECT page FROM configs"),
        "3:1000,1:2000"
    );

    let missing = dir.join("missing.har");
    let output = tlslab(&["load", "--page", &format!("@{}", missing.display())]);
    assert_user_error(&output, 2, "cannot read page description");
    std::fs::write(dir.join("empty.txt"), "# nothing\n").unwrap();
    let output = tlslab(&[
        "load",
        "--page",
        &format!("@{}", dir.join("empty.txt").display()),
    ]);
    assert_user_error(&output, 2, "no resources");
}

#[test]
fn http2_keeps_one_connection_per_agent_and_each_request_is_a_stream() {
    let dir = scratch("load-http2");
    let (db, _) = load(
        &dir,
        "h2",
        &[
            "--http",
            "2",
            "--scheme",
            "https,http",
            "-n",
            "60",
            "-c",
            "3",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM configs WHERE keep_alive = 1 AND http = '2'"
        ),
        2,
        "tlslab load keeps HTTP/2 connections by default"
    );
    for scheme in ["https", "http"] {
        let scheme = format!("c.scheme = '{scheme}'");
        assert_eq!(
            count_samples(
                &db,
                &format!(
                    "{scheme} AND s.outcome = 'ok' AND s.http_status = 200 AND s.first_byte IS NOT NULL \
                     AND s.response_wire_bytes > 0"
                )
            ),
            60,
            "{scheme}: every request answered, its bytes on the wire counted"
        );
        // Three agents, three connections; every other request a new stream on one of them.
        assert_eq!(
            count_samples(&db, &format!("{scheme} AND s.connection_request = 1")),
            3,
            "{scheme}"
        );
        assert_eq!(
            count(
                &db,
                &format!(
                    "SELECT COUNT(DISTINCT s.connection) FROM samples s JOIN configs c \
                     ON c.id = s.config_id WHERE {scheme}"
                )
            ),
            3,
            "{scheme}"
        );
    }
    // Only the requests that opened a connection carry a handshake.
    assert_eq!(
        count_samples(
            &db,
            "c.scheme = 'https' AND s.connection_request > 1 AND s.handshake_done IS NOT NULL"
        ),
        0
    );
    assert_eq!(
        count_samples(
            &db,
            "c.scheme = 'https' AND s.connection_request = 1 AND s.handshake_done IS NOT NULL"
        ),
        3
    );
}

#[test]
fn the_printed_figures_are_those_of_the_stored_file() {
    // The summaries after a run read the values its writer kept, not the file: they must be
    // exactly what reading the file gives (`tlslab report` later, or another machine).
    let dir = scratch("load-kept");
    let (db, json) = load(
        &dir,
        "load",
        &["--scheme", "http,https", "-c", "1,3", "-n", "150", "--json"],
    );
    let printed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let store = tlslab_store::Store::open(&db).unwrap();
    let read = tlslab_report::load::LoadSummary::from_store(&store).unwrap();
    same_json(&printed, &serde_json::to_value(&read).unwrap(), "");
    assert_eq!(printed["configs"].as_array().unwrap().len(), 4);
    assert_eq!(printed["increases"].as_array().unwrap().len(), 2);
    // The readers' index, built while the summaries were read, is there when tlslab exits,
    // in a file that is one self-contained store.
    let index = "SELECT COUNT(*) FROM sqlite_master WHERE name = 'samples_by_config'";
    assert_eq!(count(&db, index), 1);
    assert!(!dir.join("load.db-wal").exists());
    // An open loop's schedule and latency too.
    let (db, json) = load(
        &dir,
        "open",
        &[
            "--arrival-rate",
            "300/s",
            "--duration",
            "1s",
            "-c",
            "4",
            "--json",
        ],
    );
    let printed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let store = tlslab_store::Store::open(&db).unwrap();
    let read = tlslab_report::load::LoadSummary::from_store(&store).unwrap();
    same_json(&printed, &serde_json::to_value(&read).unwrap(), "");
    assert!(
        printed["configs"][0]["open_loop"]["latency_ms"]["p50"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    let db = dir.join("run.db");
    let output = tlslab_succeeds(&[
        "run",
        "--tls",
        "1.2,1.3",
        "-n",
        "60",
        "-c",
        "2",
        "--json",
        "--out",
        db.to_str().unwrap(),
    ]);
    let printed: serde_json::Value = serde_json::from_str(&output).unwrap();
    let store = tlslab_store::Store::open(&db).unwrap();
    let read = tlslab_report::RunSummary::from_store(&store).unwrap();
    same_json(&printed, &serde_json::to_value(&read).unwrap(), "");
    assert!(
        printed["configs"][0]["handshake_ms"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

/// Asserts two JSON values are equal, naming the first place they differ.
fn same_json(left: &serde_json::Value, right: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
            for key in keys {
                same_json(&l[key.as_str()], &r[key.as_str()], &format!("{at}.{key}"));
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (index, (l, r)) in l.iter().zip(r).enumerate() {
                same_json(l, r, &format!("{at}[{index}]"));
            }
        }
        // serde_json reads a printed float back to within an ulp (exactly only with its
        // float_roundtrip feature).
        (Value::Number(l), Value::Number(r)) if l.is_f64() || r.is_f64() => {
            let (l, r) = (l.as_f64().unwrap(), r.as_f64().unwrap());
            assert!(
                (l - r).abs() <= 1e-12 * l.abs().max(r.abs()),
                "at {at}: {l} != {r}"
            );
        }
        _ => assert_eq!(left, right, "at {at}"),
    }
}
