//! `tlslab report` end to end: a real run becomes an HTML report that a real browser (Debian's
//! headless Chromium) loads without errors and draws, a Markdown report, and PNG charts.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// A real run varying version and concurrency, so every chart kind applies, with its report.
fn report_of_a_run(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let run = Run::new(&dir, "results")
        .args("--tls 1.2,1.3 -c 1,4 -n 80 --warmup 4 --report")
        .succeeds();
    let html = dir.join("results.html");
    assert!(
        run.stderr.contains("report: "),
        "run --report says where the report is: {}",
        run.stderr
    );
    assert!(html.exists());
    (run.db, html)
}

/// In report order; `interaction` because the run crosses version and concurrency.
const CHART_IDS: [&str; 9] = [
    "phases",
    "median-ci",
    "ecdf",
    "tail",
    "box-plot",
    "rounds",
    "concurrency",
    "interaction",
    "cpu-per-handshake",
];

#[test]
fn html_report_is_self_contained_and_holds_every_section() {
    let (_, html) = report_of_a_run("report-html");
    let text = std::fs::read_to_string(&html).unwrap();
    for id in CHART_IDS {
        assert!(
            text.contains(&format!("<figure id=\"{id}\"")),
            "chart {id} missing"
        );
    }
    for section in [
        "id=\"summary\"",
        "id=\"by-dimension\"",
        "id=\"comparisons\"",
        "id=\"phases\"",
        "id=\"errors\"",
        "id=\"experiment\"",
        "id=\"environment\"",
        "Kruskal-Wallis",
        "rank-biserial",
        "tls1.2 aes128gcm x25519 ecdsa-p256 chain1 c4",
    ] {
        assert!(text.contains(section), "{section} missing");
    }
    // Nothing outside the file: no script, stylesheet, image, font or frame source, no CSS
    // url() or @import. The only address is the SVG namespace name, which is never fetched.
    let lower = text.to_lowercase();
    for reference in [
        "src=", "href=", "url(", "@import", "<link", "<script", "<img", "<iframe",
    ] {
        assert!(
            !lower.contains(reference),
            "the report references '{reference}'"
        );
    }
    // (The experiment's `http` key is a word, not an address.)
    let addresses = lower.matches("http://").count() + lower.matches("https://").count();
    let namespaces = lower
        .matches("xmlns=\"http://www.w3.org/2000/svg\"")
        .count();
    assert_eq!(
        addresses, namespaces,
        "an address other than the SVG namespace"
    );
    // Charts hold data, not just axes: the ECDF draws one curve per Config.
    let ecdf = &text[text.find("<figure id=\"ecdf\"").unwrap()..];
    let ecdf = &ecdf[..ecdf.find("</figure>").unwrap()];
    assert!(
        ecdf.matches("<polyline").count() >= 4,
        "ECDF curves missing"
    );
    // The tail chart: a curve per Config and the 1% level where curves cross their p99 (80
    // samples a Config put 0.1% below the chart's floor).
    let tail = &text[text.find("<figure id=\"tail\"").unwrap()..];
    let tail = &tail[..tail.find("</figure>").unwrap()];
    assert!(
        tail.matches("<polyline").count() >= 4,
        "tail curves missing"
    );
    let texts: Vec<&str> = tail
        .split("</text>")
        .filter_map(|part| part.rsplit_once('>'))
        .map(|(_, text)| text.trim())
        .collect();
    assert!(
        texts.contains(&"p99"),
        "the p99 level is not labelled: {texts:?}"
    );
    assert!(!texts.contains(&"p99.9"), "p99.9 drawn below the floor");
}

/// The horizontal strokes of `colour` in an SVG figure that lie on the y of `guide`'s dashes.
fn strokes_on_the_guide(figure: &str, colour: &str, guide: &str) -> usize {
    let lines: Vec<(String, Vec<(i64, i64)>)> = figure
        .split("<polyline")
        .skip(1)
        .filter_map(|element| {
            let stroke = element.split("stroke=\"").nth(1)?.split('"').next()?;
            let points = element.split("points=\"").nth(1)?.split('"').next()?;
            let points = points
                .split_whitespace()
                .filter_map(|pair| {
                    let (x, y) = pair.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            Some((stroke.to_string(), points))
        })
        .collect();
    let Some(level) = lines
        .iter()
        .find(|(stroke, _)| stroke == guide)
        .and_then(|(_, points)| points.first().map(|point| point.1))
    else {
        return 0;
    };
    lines
        .iter()
        .filter(|(stroke, points)| {
            stroke == colour
                && points.len() == 2
                && points.iter().all(|point| point.1 == level)
                && points[0].0 < points[1].0
        })
        .count()
}

#[test]
fn the_tail_chart_bars_the_p99_interval_once_the_sample_allows_one() {
    // The order-statistic interval of p99 needs about 300 handshakes: 400 have one, drawn
    // along the dashed 1% line in the Config's colour; 80 (the other tests' runs) do not.
    let dir = scratch("report-tail");
    let run = Run::new(&dir, "tail")
        .args("--tls 1.3 -n 400 --warmup 2")
        .succeeds();
    let html = dir.join("tail.html");
    tlslab_succeeds(&[
        "report",
        run.db.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&html).unwrap();
    let tail = &text[text.find("<figure id=\"tail\"").unwrap()..];
    let tail = &tail[..tail.find("</figure>").unwrap()];
    assert_eq!(
        strokes_on_the_guide(tail, "#1F77B4", "#969696"),
        1,
        "{tail}"
    );
    let (_, small) = report_of_a_run("report-tail-small");
    let text = std::fs::read_to_string(&small).unwrap();
    let tail = &text[text.find("<figure id=\"tail\"").unwrap()..];
    let tail = &tail[..tail.find("</figure>").unwrap()];
    assert_eq!(strokes_on_the_guide(tail, "#1F77B4", "#969696"), 0);
}

#[test]
fn markdown_report_renders_as_tables_and_links_png_charts() {
    let (results, _) = report_of_a_run("report-markdown");
    let dir = results.parent().unwrap();
    let markdown = dir.join("report.md");
    let charts = dir.join("charts");
    tlslab_succeeds(&[
        "report",
        results.to_str().unwrap(),
        "-o",
        markdown.to_str().unwrap(),
        "--png",
        charts.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&markdown).unwrap();
    // Every table: a heading row, a rule row of ---/---: cells, and rows of the same width.
    let lines: Vec<&str> = text.lines().collect();
    let mut tables = 0;
    for (index, line) in lines.iter().enumerate() {
        if !line.starts_with("| ---") {
            continue;
        }
        tables += 1;
        let columns = lines[index - 1].matches(" | ").count();
        assert_eq!(line.matches(" | ").count(), columns, "{line}");
        let mut row = index + 1;
        while row < lines.len() && lines[row].starts_with('|') {
            assert_eq!(
                lines[row].replace("\\|", "").matches(" | ").count(),
                columns,
                "ragged row: {}",
                lines[row]
            );
            row += 1;
        }
        assert!(row > index + 1, "a table without rows");
    }
    assert!(
        tables >= 5,
        "summary, by dimension, comparisons, phases, environment: {text}"
    );
    // The answers the summary gives, one row per dimension's value.
    let by_dimension = &text[text
        .find("## By dimension")
        .expect("the by-dimension table")..];
    assert!(
        by_dimension.contains("| tls | 1.3 vs 1.2 |"),
        "{by_dimension}"
    );
    assert!(
        by_dimension.contains("| concurrency | 4 vs 1 |"),
        "{by_dimension}"
    );
    for id in CHART_IDS {
        assert!(
            text.contains(&format!("](charts/{id}.png)")),
            "no link to {id}"
        );
        let png = charts.join(format!("{id}.png"));
        let (width, height, pixels) = decode_png(&png);
        assert!(width >= 1000 && height >= 300, "{id}: {width}×{height}");
        let coloured = pixels
            .chunks(3)
            .filter(|p| p[0].abs_diff(p[1]) > 40 || p[1].abs_diff(p[2]) > 40)
            .count();
        assert!(coloured > 2_000, "{id} has almost no coloured pixels");
    }
}

#[test]
fn reports_carry_the_time_to_first_byte_and_the_technique_gains_of_the_summary() {
    let dir = scratch("report-techniques");
    // examples/session-techniques.toml's matrix on loopback (its 50 ms RTT needs root): a
    // full handshake, the certificate cache, tickets, tickets with 0-RTT, each with a GET.
    let run = Run::new(&dir, "techniques")
        .args("--tls 1.3 --cert rsa2048 --chain 2 --http 1.1 --resume off,tickets")
        .args("--early-data 0,1024 --cert-cache off,on --skip-invalid -c 4 -n 40 --warmup 2")
        .succeeds();
    // The summary's gains: `  resumption (tickets)   40.7% [36.5%, 44.0%] of ttfb (...)`.
    let gains: Vec<(String, String)> = run
        .summary
        .lines()
        .skip_while(|line| !line.starts_with("gains over the full handshake"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .map(|line| {
            let (technique, rest) = line.trim().split_once("  ").unwrap();
            let rest = rest.trim_start();
            let gain = rest.split(" of ").next().unwrap();
            let (point, interval) = gain.split_once(" [").unwrap();
            let (low, high) = interval.trim_end_matches(']').split_once(", ").unwrap();
            (technique.to_string(), format!("{point} ({low} to {high})"))
        })
        .collect();
    let techniques: Vec<&str> = gains
        .iter()
        .map(|(technique, _)| technique.as_str())
        .collect();
    assert_eq!(
        techniques,
        [
            "certificate cache",
            "resumption (tickets)",
            "0-RTT (tickets)"
        ],
        "{}",
        run.summary
    );
    let db = run.db.to_str().unwrap();
    let markdown = dir.join("techniques.md");
    let html = dir.join("techniques.html");
    tlslab_succeeds(&["report", db, "-o", markdown.to_str().unwrap()]);
    tlslab_succeeds(&["report", db, "-o", html.to_str().unwrap()]);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    let html = std::fs::read_to_string(&html).unwrap();
    // A heading may go on to name its metric (`## Session techniques: ttfb`).
    let section = |heading: &str| -> Vec<String> {
        markdown
            .split(&format!("\n## {heading}"))
            .nth(1)
            .unwrap_or_else(|| panic!("no {heading} section:\n{markdown}"))
            .split("\n## ")
            .next()
            .unwrap()
            .lines()
            .filter(|line| line.starts_with("| ") && !line.starts_with("| ---"))
            .skip(1)
            .map(String::from)
            .collect()
    };
    // Every Config sent a request: four rows of time to first byte, each of 40 measured.
    let ttfb = section("Time to first byte");
    assert_eq!(ttfb.len(), 4, "{ttfb:?}");
    assert!(ttfb.iter().all(|row| row.contains(" | 40 | ")), "{ttfb:?}");
    // Each technique with the summary's gain and interval, in the report as on the terminal.
    let rows = section("Session techniques");
    assert_eq!(rows.len(), 3, "{rows:?}");
    for ((technique, gain), row) in gains.iter().zip(&rows) {
        assert!(row.starts_with(&format!("| {technique} | ")), "{row}");
        assert!(row.contains(" | ttfb | "), "{row}");
        assert!(
            row.contains(&format!(" | {gain} | ")),
            "{gain} not in {row}"
        );
        assert!(
            html.contains(gain.as_str()),
            "{gain} not in the HTML report"
        );
    }
    for id in ["id=\"ttfb\"", "id=\"techniques\""] {
        assert!(html.contains(id), "{id} missing from the HTML report");
    }
}

#[test]
fn reports_of_bad_input_say_what_and_how() {
    let dir = scratch("report-errors");
    let missing = dir.join("missing.db");
    let output = tlslab(&["report", missing.to_str().unwrap()]);
    assert_user_error(&output, 2, "missing.db");
    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, "not a database").unwrap();
    let output = tlslab(&["report", garbage.to_str().unwrap()]);
    assert_user_error(&output, 2, "garbage.db");
    assert!(!dir.join("garbage.html").exists());
}

#[test]
fn a_version_1_store_is_upgraded_when_opened() {
    let (results, _) = report_of_a_run("report-upgrade");
    {
        // Make it what tlslab wrote before network emulation: no network or session columns,
        // no response timings, version 1.
        let connection = rusqlite::Connection::open(&results).unwrap();
        for column in [
            "rtt_ns",
            "jitter_ns",
            "loss",
            "rate_bps",
            "emulator",
            "transport",
            "http",
            "resumption",
            "early_data_bytes",
            "cert_cache",
            "path",
            "client_backend",
            "server_backend",
            "ech",
            "hello_retry",
            "trust",
            "arrival_rate",
            "keep_alive",
            "scheme",
            "page",
            "mtls",
            "client_cert_profile",
        ] {
            connection
                .execute_batch(&format!("ALTER TABLE configs DROP COLUMN {column}"))
                .unwrap();
        }
        for column in [
            "response_done",
            "total",
            "early_data_accepted",
            "quic_rtt_ns",
            "ech",
            "capture",
            "vantage",
            "client",
            "server",
            "captured_at_unix_ns",
            "network_rtt_ns",
            "retransmissions",
            "missing_bytes",
            "hello_retry",
            "schedule_delay",
            "latency",
            "connection",
            "connection_request",
            "response_wire_bytes",
            "resolved",
            "dns",
            "address_family",
            "client_certificate",
            "server_software",
            "response_round_trips",
            "response_first_flight_datagrams",
            "response_first_flight_bytes",
            "response_later_datagrams",
            "response_later_bytes",
            "wire_clock",
        ] {
            connection
                .execute_batch(&format!("ALTER TABLE samples DROP COLUMN {column}"))
                .unwrap();
        }
        for column in ["source", "source_detail"] {
            connection
                .execute_batch(&format!("ALTER TABLE runs DROP COLUMN {column}"))
                .unwrap();
        }
        connection.execute_batch("DROP TABLE replays").unwrap();
        connection.execute_batch("DROP TABLE scans").unwrap();
        connection.execute_batch("PRAGMA user_version = 1").unwrap();
    }
    let html = results.with_file_name("upgraded.html");
    tlslab_succeeds(&[
        "report",
        results.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let version: i64 = value(&results, "PRAGMA user_version");
    let loopback = count(
        &results,
        "SELECT count(*) FROM configs WHERE rtt_ns IS NULL",
    );
    assert_eq!((version, loopback), (17, 4));
    // Schema 13's scans table is there, empty.
    assert_eq!(count(&results, "SELECT count(*) FROM scans"), 0);
    // Schema 14's server_accepted is there, empty for the old samples.
    assert_eq!(
        count(
            &results,
            "SELECT count(*) FROM samples WHERE server_accepted IS NOT NULL"
        ),
        0
    );
    let active = count(
        &results,
        "SELECT count(*) FROM runs WHERE source = 'active'",
    );
    assert_eq!(active, 1, "an old run reads as an active run");
    let tcp = count(
        &results,
        "SELECT count(*) FROM configs WHERE transport = 'tcp' AND resumption = 'off'",
    );
    assert_eq!(tcp, 4, "old Configs read as TCP without resumption");
    let rustls = count(
        &results,
        "SELECT count(*) FROM configs WHERE client_backend = 'rustls' AND server_backend = 'rustls' AND ech = 'off'",
    );
    assert_eq!(
        rustls, 4,
        "old lab Configs read as rustls on both sides, without ECH"
    );
}

#[test]
fn a_schema_6_store_is_upgraded_when_opened() {
    let (results, _) = report_of_a_run("report-upgrade-6");
    {
        // What tlslab wrote before open loops: no schedule columns, version 6.
        let connection = rusqlite::Connection::open(&results).unwrap();
        for column in [
            "arrival_rate",
            "keep_alive",
            "scheme",
            "page",
            "mtls",
            "client_cert_profile",
        ] {
            connection
                .execute_batch(&format!("ALTER TABLE configs DROP COLUMN {column}"))
                .unwrap();
        }
        for column in [
            "schedule_delay",
            "latency",
            "connection",
            "connection_request",
            "response_wire_bytes",
            "resolved",
            "dns",
            "address_family",
            "client_certificate",
            "server_software",
            "wire_clock",
        ] {
            connection
                .execute_batch(&format!("ALTER TABLE samples DROP COLUMN {column}"))
                .unwrap();
        }
        connection.execute_batch("PRAGMA user_version = 6").unwrap();
    }
    let export = tlslab_succeeds(&["export", results.to_str().unwrap(), "--format", "csv"]);
    assert!(export.contains("latency"), "{export}");
    let version: i64 = value(&results, "PRAGMA user_version");
    assert_eq!(version, 17);
    let closed = count(
        &results,
        "SELECT count(*) FROM configs WHERE arrival_rate IS NULL",
    );
    assert_eq!(closed, 4, "old Configs read as closed loops");
    let https = count(
        &results,
        "SELECT count(*) FROM configs WHERE scheme = 'https' AND keep_alive = 0",
    );
    assert_eq!(https, 4, "old Configs read as HTTPS without keep-alive");
}

#[test]
fn a_schema_7_store_is_upgraded_when_opened() {
    let (results, _) = report_of_a_run("report-upgrade-7");
    {
        // What tlslab wrote before per-attempt lookups: no resolved event, dns phase or
        // address family, version 7.
        let connection = rusqlite::Connection::open(&results).unwrap();
        for column in [
            "resolved",
            "dns",
            "address_family",
            "client_certificate",
            "server_software",
            "wire_clock",
        ] {
            connection
                .execute_batch(&format!("ALTER TABLE samples DROP COLUMN {column}"))
                .unwrap();
        }
        for column in ["mtls", "client_cert_profile"] {
            connection
                .execute_batch(&format!("ALTER TABLE configs DROP COLUMN {column}"))
                .unwrap();
        }
        connection.execute_batch("PRAGMA user_version = 7").unwrap();
    }
    let export = tlslab_succeeds(&["export", results.to_str().unwrap(), "--format", "csv"]);
    let header = export.lines().next().unwrap_or_default();
    assert!(
        header.contains(",dns,") && header.contains("address_family"),
        "{header}"
    );
    let version: i64 = value(&results, "PRAGMA user_version");
    assert_eq!(version, 17);
    let unresolved = count(
        &results,
        "SELECT count(*) FROM samples WHERE dns IS NULL AND resolved IS NULL AND address_family IS NULL",
    );
    let all = count(&results, "SELECT count(*) FROM samples");
    assert_eq!(unresolved, all, "old samples made no lookup of their own");
}

#[test]
fn a_schema_8_store_is_upgraded_when_opened() {
    let (results, _) = report_of_a_run("report-upgrade-8");
    {
        // What tlslab wrote before mutual TLS with the lab server: no client_certificate on
        // samples, no mtls or client_cert_profile on configs, version 8.
        let connection = rusqlite::Connection::open(&results).unwrap();
        for column in ["client_certificate", "server_software", "wire_clock"] {
            connection
                .execute_batch(&format!("ALTER TABLE samples DROP COLUMN {column}"))
                .unwrap();
        }
        for column in ["mtls", "client_cert_profile"] {
            connection
                .execute_batch(&format!("ALTER TABLE configs DROP COLUMN {column}"))
                .unwrap();
        }
        connection.execute_batch("PRAGMA user_version = 8").unwrap();
    }
    let export = tlslab_succeeds(&["export", results.to_str().unwrap(), "--format", "csv"]);
    let header = export.lines().next().unwrap_or_default();
    assert!(
        header.contains(",client_certificate,mtls,client_cert_profile,client_certificate_bytes,server_software,"),
        "{header}"
    );
    let version: i64 = value(&results, "PRAGMA user_version");
    assert_eq!(version, 17);
    let without = count(
        &results,
        "SELECT count(*) FROM configs WHERE mtls = 0 AND client_cert_profile IS NULL",
    );
    assert_eq!(without, 4, "old Configs read as without mutual TLS");
    let unknown = count(
        &results,
        "SELECT count(*) FROM samples WHERE client_certificate IS NULL",
    );
    let all = count(&results, "SELECT count(*) FROM samples");
    assert_eq!(
        unknown, all,
        "old samples did not record client authentication"
    );
}

#[test]
fn a_schema_9_store_gains_the_links_columns_empty() {
    let (results, _) = report_of_a_run("report-upgrade-9");
    {
        // What tlslab wrote before it counted the emulated link's traffic per trial.
        let connection = rusqlite::Connection::open(&results).unwrap();
        for column in [
            "link_bytes_to_server",
            "link_bytes_to_client",
            "link_queue_drops",
        ] {
            connection
                .execute_batch(&format!("ALTER TABLE trials DROP COLUMN {column}"))
                .unwrap();
        }
        connection.execute_batch("PRAGMA user_version = 9").unwrap();
    }
    let html = results.with_file_name("upgraded-9.html");
    tlslab_succeeds(&[
        "report",
        results.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let version: i64 = value(&results, "PRAGMA user_version");
    assert_eq!(version, 17);
    let trials = count(&results, "SELECT count(*) FROM trials");
    let empty = count(
        &results,
        "SELECT count(*) FROM trials WHERE link_bytes_to_server IS NULL \
         AND link_bytes_to_client IS NULL AND link_queue_drops IS NULL",
    );
    assert!(trials > 0);
    assert_eq!(empty, trials, "old trials carried no counted link");
}

#[test]
fn a_schema_10_store_is_upgraded_when_opened() {
    let (results, _) = report_of_a_run("report-upgrade-10");
    {
        // What tlslab wrote before each mutual-TLS step was timed: no client signature
        // events, phase or message bytes on samples, no client verifications on trials.
        let connection = rusqlite::Connection::open(&results).unwrap();
        for column in [
            "client_sign_start",
            "client_sign_end",
            "client_signing",
            "client_certificate_bytes",
        ] {
            connection
                .execute_batch(&format!("ALTER TABLE samples DROP COLUMN {column}"))
                .unwrap();
        }
        for column in ["server_client_verifications", "server_client_verify_ns"] {
            connection
                .execute_batch(&format!("ALTER TABLE trials DROP COLUMN {column}"))
                .unwrap();
        }
        connection
            .execute_batch("PRAGMA user_version = 10")
            .unwrap();
    }
    let export = tlslab_succeeds(&["export", results.to_str().unwrap(), "--format", "csv"]);
    let header: Vec<&str> = export
        .lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .collect();
    for column in [
        "client_certificate_bytes",
        "client_signing",
        "client_sign_start",
    ] {
        assert!(header.contains(&column), "{column} not in {header:?}");
    }
    assert_eq!(value::<i64>(&results, "PRAGMA user_version"), 17);
    let unsigned = count(
        &results,
        "SELECT count(*) FROM samples WHERE client_signing IS NULL AND client_certificate_bytes IS NULL",
    );
    let all = count(&results, "SELECT count(*) FROM samples");
    assert_eq!(unsigned, all, "old samples did not time a client signature");
    assert_eq!(
        count(
            &results,
            "SELECT count(*) FROM trials WHERE server_client_verifications IS NOT NULL"
        ),
        0
    );
}

fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(info.buffer_size());
    // Screenshots come as RGBA, our charts as RGB: keep three channels.
    let channels = info.color_type.samples();
    let rgb = pixels
        .chunks(channels)
        .flat_map(|pixel| pixel[..3].to_vec())
        .collect();
    (info.width, info.height, rgb)
}

/// Debian's Chromium, or `TLSLAB_CHROMIUM`.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TLSLAB_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

/// Runs headless Chromium on a page with the flags a closed, root-run machine needs, and
/// returns its stdout. Kills it after a minute.
fn run_chromium(browser: &Path, profile: &Path, args: &[String]) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// Collects script and resource errors from the first moment, then describes each chart.
const PROBE: &str = r#"<script>
window.tlslabErrors = [];
window.addEventListener('error', e => window.tlslabErrors.push(String(e.message || (e.target && (e.target.src || e.target.href)) || e.type)), true);
const originalError = console.error;
console.error = (...parts) => { window.tlslabErrors.push(parts.join(' ')); originalError(...parts); };
window.addEventListener('load', () => {
  const figures = [...document.querySelectorAll('figure.chart-figure')].map(figure => {
    const svg = figure.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
    return { id: figure.id, width: box.width, height: box.height,
      shapes: svg ? svg.querySelectorAll('rect, polyline, path, circle, line, polygon').length : 0,
      texts: svg ? svg.querySelectorAll('text').length : 0 };
  });
  const report = { errors: window.tlslabErrors,
    resources: performance.getEntriesByType('resource').map(r => r.name), figures };
  const out = document.createElement('pre');
  out.id = 'tlslab-probe';
  out.textContent = JSON.stringify(report);
  document.body.appendChild(out);
});
</script>"#;

#[test]
fn chromium_draws_the_report_without_errors() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("TLSLAB_REQUIRE_CHROMIUM").is_none(),
            "TLSLAB_REQUIRE_CHROMIUM is set but no chromium was found"
        );
        eprintln!(
            "SKIPPED: no headless Chromium (install Debian's chromium, or set TLSLAB_CHROMIUM)"
        );
        return;
    };
    let (_, html) = report_of_a_run("report-chromium");
    let dir = html.parent().unwrap();
    let text = std::fs::read_to_string(&html).unwrap();
    let probed = dir.join("probed.html");
    std::fs::write(
        &probed,
        text.replacen("<head>", &format!("<head>\n{PROBE}"), 1),
    )
    .unwrap();

    let dom = run_chromium(
        &browser,
        &dir.join("profile-dom"),
        &[
            "--window-size=1280,4000".into(),
            "--virtual-time-budget=5000".into(),
            "--dump-dom".into(),
            format!("file://{}", probed.display()),
        ],
    );
    let marker = "<pre id=\"tlslab-probe\">";
    let start = dom.find(marker).expect("the probe ran") + marker.len();
    let json = dom[start..][..dom[start..].find("</pre>").unwrap()]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let probe: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(probe["errors"], serde_json::json!([]), "page errors");
    assert_eq!(probe["resources"], serde_json::json!([]), "external loads");
    let figures = probe["figures"].as_array().unwrap();
    let ids: Vec<&str> = figures.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids, CHART_IDS);
    for figure in figures {
        assert!(figure["width"].as_f64().unwrap() > 400.0, "{figure}");
        assert!(figure["height"].as_f64().unwrap() > 150.0, "{figure}");
        assert!(figure["shapes"].as_u64().unwrap() >= 10, "{figure}");
        assert!(figure["texts"].as_u64().unwrap() >= 4, "{figure}");
    }

    let screenshot = dir.join("screenshot.png");
    run_chromium(
        &browser,
        &dir.join("profile-screenshot"),
        &[
            "--window-size=1280,4000".into(),
            format!("--screenshot={}", screenshot.display()),
            format!("file://{}", html.display()),
        ],
    );
    let (width, height, pixels) = decode_png(&screenshot);
    assert_eq!((width, height), (1280, 4000));
    // The phase chart's bars are drawn in its own palette; these five colours (client_hello
    // _build to client_finish) are nowhere else in the report (its two blues are also the CPU
    // chart's). The bars span each Config's median handshake, the longest nearly the plot's
    // width, so these phases cover far more than the legend's five squares (about 1,000 px)
    // however the time divides between them; one phase's colour alone depends on the data.
    const PHASES: [[u8; 3]; 5] = [
        [116, 196, 118],
        [253, 141, 60],
        [253, 190, 133],
        [35, 139, 69],
        [161, 217, 155],
    ];
    let painted = pixels
        .chunks(3)
        .filter(|p| PHASES.iter().any(|colour| p == colour))
        .count();
    assert!(
        painted > 5_000,
        "the phase chart's bars are not on screen ({painted} px)"
    );
}

/// Above half a million successes a Config's values are read one column at a time, so that the
/// summary's memory stays bounded: read so, every Config here (with a limit of 0), the
/// summary must be the one a single pass gives, the comparisons and factorials included.
#[test]
fn a_summary_read_one_column_at_a_time_equals_the_one_pass_summary() {
    let dir = scratch("report-passes");
    let handshakes = Run::new(&dir, "handshakes")
        .args("--tls 1.2,1.3 --group x25519,secp256r1 -n 30 -c 2 --warmup 2")
        .succeeds();
    // Requests: the comparison's metric is then `total`, read after the phases.
    let requests = Run::new(&dir, "requests")
        .args("--http 1.1 --keep-alive on,off -n 30 -c 2 --warmup 2")
        .succeeds();
    for db in [&handshakes.db, &requests.db] {
        let store = tlslab_store::Store::open(db).unwrap();
        let one_pass = tlslab_report::RunSummary::from_store(&store).unwrap();
        let by_column = tlslab_report::RunSummary::from_store_in_passes(&store, 0).unwrap();
        let one_pass = serde_json::to_value(&one_pass).unwrap();
        assert_eq!(one_pass, serde_json::to_value(&by_column).unwrap());
        assert!(
            one_pass["comparisons"].is_object(),
            "the runs compare Configs: {one_pass}"
        );
    }
}
