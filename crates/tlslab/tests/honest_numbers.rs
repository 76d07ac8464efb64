//! What a reader concludes from `run` and `load`, checked against the store (issue 29): an
//! open loop keeps the schedule it was asked for, the figures printed agree with each other
//! and with the exported samples, and a keep-alive load's measured part holds no handshakes.
//! Timings are checked only from below (a schedule can only be late, never early).

mod support;

use std::path::Path;

use support::*;

/// Each measured sample's intended start (its start less how late it was), in ns since the
/// run began, in order.
fn intended_starts(db: &Path) -> Vec<i64> {
    column(
        db,
        "SELECT started_at_ns - schedule_delay FROM samples WHERE warmup = 0 ORDER BY 1",
        [],
    )
}

/// Asserts that `starts` are `count` arrivals at least `gap_ns` apart (less 1 µs of
/// rounding), spanning at least `count - 1` gaps.
fn assert_spaced(starts: &[i64], count: usize, gap_ns: i64) {
    assert_eq!(starts.len(), count, "{starts:?}");
    for pair in starts.windows(2) {
        assert!(
            pair[1] - pair[0] >= gap_ns - 1_000,
            "arrivals {} ns apart, asked {gap_ns}: {starts:?}",
            pair[1] - pair[0]
        );
    }
}

#[test]
fn an_open_loop_makes_the_arrivals_asked_over_the_time_asked() {
    // 10/s for 2 s: 20 arrivals 100 ms apart. Before, each block of two restarted its
    // schedule as soon as its last attempt ended, so arrivals came in pairs 2 ms apart and
    // the 20 were done in about a second at "20/s".
    let dir = scratch("schedule-run");
    let finished = Run::new(&dir, "run")
        .args("--arrival-rate 10/s --duration 2s --warmup 0 --json")
        .succeeds();
    assert_spaced(&intended_starts(&finished.db), 20, 100_000_000);
    let summary = finished.json();
    let rate = summary["configs"][0]["handshakes_per_second"]
        .as_f64()
        .unwrap();
    assert!(rate <= 10.0 + 1e-9, "reported {rate}/s for 10/s asked");

    // `load` is the same schedule: its requests per second count the whole time asked.
    let db = dir.join("load.db");
    let output = tlslab_succeeds(&[
        "load",
        "--arrival-rate",
        "10/s",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "--json",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_spaced(&intended_starts(&db), 20, 100_000_000);
    let load: serde_json::Value = serde_json::from_str(&output).unwrap();
    let config = &load["configs"][0];
    let per_second = config["requests_per_second"].as_f64().unwrap();
    assert!(per_second <= 10.0 + 1e-9, "{per_second}/s for 10/s asked");
    assert!(config["time_taken_s"].as_f64().unwrap() >= 2.0);
}

#[test]
fn two_hundred_a_second_for_ten_seconds_is_two_thousand_arrivals() {
    let dir = scratch("schedule-200");
    let finished = Run::new(&dir, "run")
        .args("--arrival-rate 200/s --duration 10s --warmup 0 -c 8")
        .succeeds();
    let starts = intended_starts(&finished.db);
    assert_spaced(&starts, 2_000, 5_000_000);
    // The last arrival is due no earlier than 1,999 gaps after the first.
    assert!(starts[1_999] - starts[0] >= 1_999 * 5_000_000 - 1_000);
}

#[test]
fn load_percentiles_are_the_observed_values_in_text_json_and_export() {
    // The percentiles line once came from histogram buckets: its max read 50.233 ms beside a
    // table whose max (the observed one) read 50.223 ms, for the same ten requests.
    let dir = scratch("load-figures");
    for store in stores(&dir, "load") {
        let output = tlslab_succeeds(&[
            "load",
            "-n",
            "50",
            "-c",
            "2",
            "--json",
            "--store",
            &store.location,
        ]);
        let load: serde_json::Value = serde_json::from_str(&output).unwrap();
        let config = &load["configs"][0];
        let (percentiles, total) = (&config["percentiles"], &config["total"]);
        assert_eq!(percentiles["max"], total["max"], "{config}");
        assert_eq!(percentiles["p50"], total["median"], "{config}");
        // The exported samples give the same maximum, to the nanosecond.
        let lines = tlslab_succeeds(&["export", &store.location, "--format", "jsonl"]);
        let exported = lines
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|row| row["warmup"] == serde_json::json!(false) || row["warmup"] == 0)
            .filter_map(|row| row["total"].as_i64())
            .max()
            .unwrap();
        assert_eq!(total["max"].as_f64().unwrap(), exported as f64 / 1e6);
        // And so does the file itself, read without tlslab.
        if let Some(db) = store.path() {
            let longest: i64 = value(
                db,
                "SELECT MAX(total) FROM samples WHERE warmup = 0 AND outcome = 'ok'",
            );
            assert_eq!(exported, longest);
        }
    }
}
#[test]
fn a_keep_alive_load_opens_every_connection_in_its_warm_up() {
    // 40 agents, the default warm-up of 20: every agent's connection is opened before the
    // measured part, so no measured "keep-alive" request carries a handshake.
    let dir = scratch("load-warmup");
    let db = dir.join("load.db");
    let output = tlslab(&[
        "load",
        "-c",
        "40",
        "-n",
        "400",
        "--out",
        db.to_str().unwrap(),
    ]);
    let text = assert_success(&output);
    let opened_measured = count_samples(&db, "s.warmup = 0 AND s.connection_request = 1");
    assert_eq!(opened_measured, 0, "{text}");
    let agents_warmed: i64 = value(
        &db,
        "SELECT COUNT(DISTINCT agent) FROM samples WHERE warmup = 1 AND connection_request = 1",
    );
    assert_eq!(agents_warmed, 40);
    assert!(!text.contains("opened their connection"), "{text}");

    // Asked for no warm-up, the same load says how many measured requests were handshakes.
    let db = dir.join("cold.db");
    let output = tlslab(&[
        "load",
        "-c",
        "40",
        "-n",
        "400",
        "--warmup",
        "0",
        "--out",
        db.to_str().unwrap(),
    ]);
    let text = assert_success(&output);
    assert!(
        text.contains("warning: ") && text.contains("40 of 400 measured keep-alive requests"),
        "{text}"
    );
}

#[test]
fn a_config_too_short_or_too_small_to_trust_is_flagged() {
    let dir = scratch("untrusted");
    let finished = Run::new(&dir, "small").args("-n 10 --warmup 0").succeeds();
    let warnings: Vec<&str> = finished
        .summary
        .lines()
        .filter(|line| line.starts_with("warning: "))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|line| line.contains("only 10 successful attempts")),
        "{}",
        finished.summary
    );
    assert!(
        warnings
            .iter()
            .any(|line| line.contains("measured for only")),
        "{}",
        finished.summary
    );
    // A Config measured long enough, on enough handshakes, is not flagged.
    let finished = Run::new(&dir, "enough")
        .args("-n 100 --arrival-rate 500/s --warmup 0")
        .succeeds();
    assert!(
        !finished.summary.contains("measured for only")
            && !finished.summary.contains("successful attempts:"),
        "{}",
        finished.summary
    );
}
