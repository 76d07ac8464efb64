//! End to end: what a reader concludes from the examples' summaries (issue 29). Each verdict
//! names its metric, and it is the table's and the gains'; no contrast is credited to one
//! dimension when the Configs compared differ in two; the JSON says what the text says.

mod support;

use serde_json::Value;
use support::*;

/// The summary's table: the first cell of its header (the metric) and each row's name and
/// median cell. Cells are two or more spaces apart; a name or a time holds single spaces.
/// Names too wide for the terminal go on a line of their own, above their numbers.
fn table(summary: &str) -> (String, Vec<(String, String)>) {
    let lines: Vec<&str> = summary
        .lines()
        .skip_while(|line| line.starts_with("all: "))
        .take_while(|line| !line.is_empty())
        .collect();
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .map(String::from)
            .collect()
    };
    let apart = lines.get(1).is_some_and(|line| line.starts_with(' '));
    let rows: Vec<Vec<String>> = if apart {
        lines
            .chunks(2)
            .map(|pair| {
                let mut row = vec![pair[0].to_string()];
                row.extend(pair.get(1).map_or_else(Vec::new, |numbers| cells(numbers)));
                row
            })
            .collect()
    } else {
        lines.iter().map(|line| cells(line)).collect()
    };
    let (header, rows) = rows.split_first().expect("a table");
    let rows = rows
        .iter()
        .map(|row| (row[0].clone(), row[2].clone()))
        .collect();
    (header[0].clone(), rows)
}

/// The verdict lines under the heading that starts with `heading`.
fn verdict_lines<'a>(summary: &'a str, heading: &str) -> Vec<&'a str> {
    summary
        .lines()
        .skip_while(|line| !line.starts_with(heading))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .collect()
}

/// The run summary of a store as `tlslab run --json` prints it.
fn summary_json(db: &std::path::Path) -> Value {
    let store = tlslab_store::Store::open(db).unwrap();
    serde_json::to_value(tlslab_report::RunSummary::from_store(&store).unwrap()).unwrap()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|item| item.as_str().unwrap().to_string())
        .collect()
}

/// A Config's median of the summary's metric, from the JSON.
fn metric_median(json: &Value, label: &str) -> f64 {
    json["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|config| config["label"] == label)
        .unwrap_or_else(|| panic!("no Config '{label}' in {json}"))["metric_ms"]["median"]
        .as_f64()
        .unwrap()
}

/// Every table row's median is the JSON's median of the same metric, as the table prints it.
fn table_agrees_with_json(summary: &str, json: &Value) {
    let (metric, rows) = table(summary);
    assert_eq!(metric, json["metric"].as_str().unwrap(), "{summary}");
    let configs = json["configs"].as_array().unwrap();
    assert_eq!(rows.len(), configs.len(), "{summary}");
    for ((name, median), config) in rows.iter().zip(configs) {
        let expected = tlslab_report::duration(config["metric_ms"]["median"].as_f64().unwrap());
        assert_eq!(median, &expected, "'{name}' in:\n{summary}");
    }
}

#[test]
fn explicit_configs_credit_each_contrast_to_every_dimension_it_changes() {
    let dir = scratch("verdicts-explicit");
    let Finished { db, summary, .. } = Run::new(&dir, "explicit")
        .arg(example("explicit-configs.toml"))
        .args("-n 40 --warmup 2")
        .succeeds();
    // Two TLS 1.2 Configs that change suite and certificate together, and a TLS 1.3 one that
    // changes all three: no line may credit a difference to the suite (or the certificate)
    // alone. Each Config is set against the first, naming all it changes.
    for line in summary.lines() {
        for alone in ["  suite ", "  cert ", "  tls "] {
            assert!(
                !line.starts_with(alone),
                "a contrast credited to one dimension: {line}\n{summary}"
            );
        }
    }
    assert_eq!(table(&summary).0, "handshake", "{summary}");
    assert!(
        summary.contains("\nmetric: handshake (start to the handshake's end): "),
        "{summary}"
    );
    let lines = verdict_lines(
        &summary,
        "handshake of each Config against 'ecdhe-rsa aes128gcm'",
    );
    assert_eq!(lines.len(), 2, "{summary}");
    assert!(
        lines[0].starts_with("  ecdhe-ecdsa aes256gcm [suite+cert]: "),
        "{summary}"
    );
    assert!(
        lines[1].starts_with("  tls1.3 chacha20 ed25519 [tls+suite+cert]: "),
        "{summary}"
    );
    // The JSON's verdicts are the lines: same Configs, dimensions, metric, words and ratio,
    // and the ratio is the table's medians'.
    let json = summary_json(&db);
    table_agrees_with_json(&summary, &json);
    assert_eq!(json["metric"], "handshake", "{summary}");
    let verdicts = json["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), lines.len(), "{json}");
    let credited: Vec<Vec<String>> = verdicts
        .iter()
        .map(|verdict| strings(&verdict["dimensions"]))
        .collect();
    assert_eq!(
        credited,
        [vec!["suite", "cert"], vec!["tls", "suite", "cert"]]
    );
    assert!(json["factorials"].as_array().unwrap().is_empty(), "{json}");
    for (verdict, line) in verdicts.iter().zip(&lines) {
        assert_eq!(verdict["kind"], "config");
        assert_eq!(verdict["metric"], "handshake");
        let words = format!(
            ": {} in handshake (×{:.3} [",
            verdict["verdict"].as_str().unwrap(),
            verdict["ratio"].as_f64().unwrap()
        );
        assert!(line.contains(&words), "{words} not in {line}");
        let ratio = metric_median(&json, verdict["other"].as_str().unwrap())
            / metric_median(&json, verdict["baseline"].as_str().unwrap());
        assert!(
            (ratio - verdict["ratio"].as_f64().unwrap()).abs() < 1e-9,
            "{verdict}"
        );
    }

    // `compare --by suite` and `--by cert` credit the same contrast to both, never to one.
    let store = db.to_str().unwrap();
    for by in ["suite", "cert"] {
        let text = tlslab_succeeds(&["compare", store, "--by", by]);
        assert!(
            text.starts_with(
                "handshake by suite+cert: each value against aes128gcm+rsa2048 with every other dimension held fixed\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\n  aes256gcm+ecdsa-p256 vs aes128gcm+rsa2048: ratio "),
            "{text}"
        );
        let factorial: Value =
            serde_json::from_str(&tlslab_succeeds(&["compare", store, "--by", by, "--json"]))
                .unwrap();
        assert_eq!(strings(&factorial["dimensions"]), ["suite", "cert"]);
        for contrast in factorial["contrasts"].as_array().unwrap() {
            assert_eq!(strings(&contrast["dimensions"]), ["suite", "cert"]);
        }
    }
    // A dimension no two Configs change alone is refused, with what else they change.
    let output = tlslab(&["compare", store, "--by", "tls"]);
    assert_user_error(&output, 2, "no two Configs differ in tls alone");
    assert!(stderr(&output).contains("the closest pairs that change it also change suite and cert"));
    // Each Config against the first, in text and JSON, names what differs.
    let plain = tlslab_succeeds(&["compare", store]);
    assert!(
        plain.contains("\n  ecdhe-ecdsa aes256gcm [suite+cert]: handshake "),
        "{plain}"
    );
    let plain: Value =
        serde_json::from_str(&tlslab_succeeds(&["compare", store, "--json"])).unwrap();
    assert_eq!(plain["metric"], "handshake");
    assert_eq!(
        strings(&plain["comparisons"][1]["dimensions"]),
        ["tls", "suite", "cert"]
    );
    // The report: its headings name the metric, its comparisons what differs.
    let markdown = dir.join("explicit.md");
    tlslab_succeeds(&["report", store, "-o", markdown.to_str().unwrap()]);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert!(markdown.contains("\n## Summary: handshake\n"), "{markdown}");
    assert!(
        markdown.contains("\n## Comparisons: handshake\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| ecdhe-ecdsa aes256gcm | suite+cert | handshake "),
        "{markdown}"
    );
}

/// `--metric` moves the table, the verdicts and the report's headings together.
#[test]
fn the_metric_asked_for_is_the_tables_the_verdicts_and_the_reports() {
    let dir = scratch("verdicts-metric");
    let Finished { db, summary, .. } = Run::new(&dir, "asked")
        .args("--tls 1.2,1.3 --http 1.1 -n 20 --warmup 2 --metric ttfb")
        .succeeds();
    let json = summary_json(&db);
    // The store alone calls for the handshake (the Configs differ in the handshake only)...
    assert_eq!(json["metric"], "handshake", "{json}");
    // ... and the run's summary said ttfb, everywhere.
    assert!(
        summary.contains("\nttfb  "),
        "the table's header names ttfb: {summary}"
    );
    assert!(
        summary.contains(
            "\nmetric: ttfb (start to the response's first byte): asked for with --metric\n"
        ),
        "{summary}"
    );
    let lines = verdict_lines(&summary, "ttfb of each Config against 'tls1.2'");
    assert_eq!(lines.len(), 1, "{summary}");
    assert!(
        lines[0].starts_with("  tls1.3 [tls]: ") && lines[0].contains(" in ttfb (×"),
        "{summary}"
    );
    let asked = dir.join("asked.md");
    tlslab_succeeds(&[
        "report",
        db.to_str().unwrap(),
        "--metric",
        "ttfb",
        "-o",
        asked.to_str().unwrap(),
    ]);
    let asked = std::fs::read_to_string(&asked).unwrap();
    assert!(asked.contains("\n## Summary: ttfb\n"), "{asked}");
    assert!(asked.contains("| ttfb median ms |"), "{asked}");
    assert!(asked.contains("\n## Comparisons: ttfb\n"), "{asked}");
    // Misspelt, it is refused before anything runs.
    let output = tlslab(&["run", "--metric", "tffb", "-n", "2"]);
    assert_user_error(&output, 2, "--metric tffb: not a phase or event");
}

#[test]
fn the_session_techniques_example_compares_ttfb_in_its_table_verdicts_and_gains() {
    require_emulation!();
    let dir = scratch("verdicts-sessions");
    let Finished { db, summary, .. } = Run::new(&dir, "techniques")
        .arg(example("session-techniques.toml"))
        .args("-n 20 --warmup 2")
        .succeeds();
    // Every Config sends a GET and they vary session techniques: the time to the response's
    // first byte, in the table (where 0-RTT's saved round trip shows), the verdicts and the
    // gains alike. The handshake (about 2 RTT for each of them) would hide it.
    assert_eq!(table(&summary).0, "ttfb", "{summary}");
    assert!(
        summary.contains("\nmetric: ttfb (start to the response's first byte): the Configs vary resume, early-data and cert-cache"),
        "{summary}"
    );
    let lines = verdict_lines(&summary, "ttfb by each dimension, the others held fixed");
    assert_eq!(lines.len(), 3, "{summary}");
    for (line, dimension) in lines.iter().zip(["resume", "early-data", "cert-cache"]) {
        assert!(
            line.starts_with(&format!("  {dimension} ")) && line.contains(" in ttfb (×"),
            "{line}"
        );
    }
    let gains = verdict_lines(&summary, "gains over the full handshake (median ttfb,");
    assert_eq!(gains.len(), 3, "{summary}");
    assert!(
        gains.iter().all(|line| line.contains("] of ttfb (")),
        "{summary}"
    );
    let json = summary_json(&db);
    table_agrees_with_json(&summary, &json);
    assert_eq!(json["metric"], "ttfb", "{summary}");
    // Each gain's medians are the table's: the same metric of the same Configs.
    for gain in json["gains"].as_array().unwrap() {
        assert_eq!(gain["metric"], "ttfb");
        for (side, median) in [("label", "median_ms"), ("baseline", "baseline_median_ms")] {
            let table = metric_median(&json, gain[side].as_str().unwrap());
            assert!(
                (table - gain[median].as_f64().unwrap()).abs() < 1e-9,
                "{gain}"
            );
        }
        let dimensions = strings(&gain["dimensions"]);
        let technique = gain["technique"].as_str().unwrap();
        match technique {
            "0-RTT (tickets)" => assert_eq!(dimensions, ["resume", "early-data"]),
            "resumption (tickets)" => assert_eq!(dimensions, ["resume"]),
            "certificate cache" => assert_eq!(dimensions, ["cert-cache"]),
            other => panic!("unexpected technique {other}"),
        }
    }
    // 0-RTT's row in the table is the one a round trip shorter.
    let zero_rtt = json["gains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|gain| gain["technique"] == "0-RTT (tickets)")
        .unwrap();
    assert!(
        metric_median(&json, zero_rtt["label"].as_str().unwrap())
            < metric_median(&json, zero_rtt["baseline"].as_str().unwrap()),
        "{summary}"
    );
    // The report names the metric in its headings.
    let markdown = dir.join("techniques.md");
    tlslab_succeeds(&[
        "report",
        db.to_str().unwrap(),
        "-o",
        markdown.to_str().unwrap(),
    ]);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    for heading in ["Summary", "By dimension", "Session techniques"] {
        assert!(
            markdown.contains(&format!("\n## {heading}: ttfb\n")),
            "{heading}: {markdown}"
        );
    }
    assert!(!markdown.contains("Handshake times"), "{markdown}");
}

#[test]
fn the_tcp_vs_quic_example_credits_quic_with_http3_on_the_tables_metric() {
    require_emulation!();
    let dir = scratch("verdicts-quic");
    let Finished { db, summary, .. } = Run::new(&dir, "transports")
        .arg(example("tcp-vs-quic.toml"))
        .args("-n 8 --warmup 3")
        .succeeds();
    // The table shows what the verdict compares: the time to the response's first byte.
    assert_eq!(table(&summary).0, "ttfb", "{summary}");
    // HTTP/2 runs only over TCP and HTTP/3 only over QUIC: the contrast changes both, and is
    // credited to both.
    let lines = verdict_lines(&summary, "ttfb by each dimension, the others held fixed");
    let transport = lines
        .iter()
        .find(|line| line.starts_with("  transport"))
        .unwrap_or_else(|| panic!("no transport verdict: {summary}"));
    assert!(
        transport.starts_with("  transport+http quic+3 vs tcp+2: ")
            && transport.contains(" in ttfb (×"),
        "{summary}"
    );
    let json = summary_json(&db);
    table_agrees_with_json(&summary, &json);
    assert_eq!(json["metric"], "ttfb", "{summary}");
    let verdict = json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|verdict| verdict["other"] == "quic+3")
        .unwrap_or_else(|| panic!("no QUIC verdict in {json}"));
    assert_eq!(strings(&verdict["dimensions"]), ["transport", "http"]);
    // The verdict's ratio is the median over the RTTs of the table's QUIC / TCP medians.
    let labels: Vec<&str> = json["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|config| config["label"].as_str().unwrap())
        .collect();
    let mut ratios: Vec<f64> = labels
        .iter()
        .filter(|label| label.contains(" quic "))
        .map(|quic| {
            // The TCP Config at the same RTT (each label ends with it).
            let rtt = quic.split(' ').next_back().unwrap();
            let tcp = labels
                .iter()
                .find(|label| !label.contains(" quic ") && label.ends_with(rtt))
                .unwrap();
            metric_median(&json, quic) / metric_median(&json, tcp)
        })
        .collect();
    assert_eq!(ratios.len(), 4, "{labels:?}");
    ratios.sort_by(f64::total_cmp);
    let pooled = (ratios[1] + ratios[2]) / 2.0;
    assert!(
        (pooled - verdict["ratio"].as_f64().unwrap()).abs() < 1e-9,
        "{ratios:?} against {verdict}"
    );
    // QUIC saves TCP's connect round trip before the first byte, at every RTT.
    assert!(ratios.iter().all(|ratio| *ratio < 1.0), "{summary}");
    assert!(
        verdict["verdict"].as_str().unwrap().ends_with("faster"),
        "{verdict}"
    );
}
