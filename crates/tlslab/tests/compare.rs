//! End-to-end: `tlslab compare` on a results store and on plain sample files, and sequential
//! stopping in `tlslab run --until-ci`.

mod support;

use serde_json::Value;
use support::*;
use tlslab_stats::COMPARISON_FIELDS;

/// The scipy reference values that tlslab-stats is tested against; the file comparison below
/// takes its data set and expected values from there rather than from a second copy.
const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tlslab-stats/tests/data/stats-scipy.json"
);

#[test]
fn compare_judges_every_config_of_a_run_against_the_baseline() {
    let dir = scratch("compare-store");
    for store in stores(&dir, "compare_store") {
        let run = Run::new(&dir, "run")
            .store(&store)
            .args("--tls 1.2,1.3 --group x25519,secp384r1 -n 60 --json")
            .succeeds();
        let db = store.location.as_str();
        // The run summary ends with the same comparisons.
        assert_eq!(
            run.json()["comparisons"]["comparisons"]
                .as_array()
                .unwrap()
                .len(),
            3,
            "{}",
            store.kind
        );

        let baseline = "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1";
        let set: Value = serde_json::from_str(&tlslab_succeeds(&[
            "compare",
            db,
            "--baseline",
            baseline,
            "--metric",
            "server_response",
            "--json",
        ]))
        .unwrap();
        let comparisons = set["comparisons"].as_array().unwrap();
        assert_eq!(comparisons.len(), 3);
        for comparison in comparisons {
            for field in COMPARISON_FIELDS {
                assert!(
                    !comparison[field].is_null(),
                    "{field} missing in {comparison}"
                );
            }
            assert_eq!(comparison["baseline"], baseline);
            assert_eq!(comparison["n_baseline"], 60);
            assert!(["exact", "asymptotic"]
                .contains(&comparison["mann_whitney_method"].as_str().unwrap()));
            let holm = comparison["mann_whitney_p_holm"].as_f64().unwrap();
            assert!(holm >= comparison["mann_whitney_p"].as_f64().unwrap());
        }
        assert!(set["kruskal_wallis"]["p_value"].as_f64().is_some(), "{set}");

        let text = stdout(&tlslab(&["compare", db]));
        assert!(text.contains("Kruskal-Wallis across 4 configs"), "{text}");
        // The same store named by --store, and its run by number.
        assert_eq!(
            text,
            stdout(&tlslab(&["compare", "--store", db, "--run", "1"]))
        );
        assert_user_error(
            &tlslab(&["compare", db, "--baseline", "nope"]),
            2,
            "tls1.2 aes128gcm x25519",
        );
        assert_user_error(
            &tlslab(&["compare", db, "--metric", "speed"]),
            2,
            "server_response",
        );
    }
}

#[test]
fn compare_of_two_sample_files_matches_scipy() {
    let dir = scratch("compare-files");
    // scipy's mannwhitneyu(x, y) on the n8_noties data set: U = 44, exact p = 0.2345,
    // rank-biserial 0.375.
    let text = std::fs::read_to_string(VECTORS)
        .unwrap_or_else(|error| panic!("the reference values {VECTORS}: {error}"));
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let dataset = &vectors["datasets"]["n8_noties"];
    let number = |value: &Value| value.as_f64().unwrap_or_else(|| panic!("{value}"));
    let numbers = |key: &str| -> Vec<f64> {
        dataset[key]
            .as_array()
            .unwrap()
            .iter()
            .map(number)
            .collect()
    };
    let (x, y) = (numbers("x"), numbers("y"));
    let scipy = &dataset["results"];
    let write = |name: &str, header: &str, values: &[f64]| {
        let path = dir.join(name);
        let body: String = values.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&path, format!("{header}{body}")).unwrap();
        path
    };
    let baseline = write("y.txt", "", &y);
    let other = write("x.txt", "milliseconds\n", &x);
    let set: Value = serde_json::from_str(&tlslab_succeeds(&[
        "compare",
        baseline.to_str().unwrap(),
        other.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    let comparison = &set["comparisons"][0];
    assert_eq!(
        comparison["mann_whitney_u"],
        number(&scipy["mannwhitneyu"]["U_x"])
    );
    assert_eq!(comparison["mann_whitney_method"], "exact");
    let p = comparison["mann_whitney_p"].as_f64().unwrap();
    let scipy_p = number(&scipy["mannwhitneyu"]["two_sided_exact_p"]);
    assert!((p - scipy_p).abs() < 1e-12, "{p}");
    let rank_biserial = number(&scipy["effect_sizes"]["rank_biserial"]);
    assert!((comparison["rank_biserial"].as_f64().unwrap() - rank_biserial).abs() < 1e-12);
    assert!(comparison["diff_median"].as_f64().unwrap() > 0.0);

    // A named column of a CSV file.
    let csv = dir.join("columns.csv");
    std::fs::write(&csv, "agent,handshake\n0,1.5\n1,1.7\n0,1.6\n").unwrap();
    let text = tlslab_succeeds(&[
        "compare",
        csv.to_str().unwrap(),
        csv.to_str().unwrap(),
        "--column",
        "handshake",
    ]);
    assert!(text.contains("no detectable difference"), "{text}");

    // Bad input: error and hint lines, exit 2.
    let empty = write("empty.txt", "", &[]);
    assert_user_error(
        &tlslab(&["compare", empty.to_str().unwrap(), other.to_str().unwrap()]),
        2,
        "no values",
    );
    let words = dir.join("words.txt");
    std::fs::write(&words, "1.0\n2.0\nfast\n").unwrap();
    assert_user_error(
        &tlslab(&["compare", words.to_str().unwrap(), other.to_str().unwrap()]),
        2,
        "line 3",
    );
    assert_user_error(
        &tlslab(&[
            "compare",
            csv.to_str().unwrap(),
            csv.to_str().unwrap(),
            "--column",
            "rtt",
        ]),
        2,
        "agent, handshake",
    );
    assert_user_error(
        &tlslab(&["compare", csv.to_str().unwrap(), other.to_str().unwrap()]),
        2,
        "--column",
    );
    let single = write("one.txt", "", &[1.0]);
    assert_user_error(
        &tlslab(&["compare", single.to_str().unwrap(), other.to_str().unwrap()]),
        2,
        "at least 2",
    );
}

/// Two files of 8 million values each made `compare` hang on main (issue 31): Welch's
/// t-interval needs Student's t quantile at df ≈ 1.6·10⁷, and statrs' `inv_beta_reg`, which
/// computed it, loops forever from df ≈ 1.44·10⁷ on. Equal spreads and sizes make Welch's df
/// exactly 2(n − 1) = 15,999,998. The command runs as a child with a deadline, so a hang
/// fails the test instead of stalling the suite; the deadline is no timing claim (a debug
/// build takes a minute or two where the release build takes seconds, see
/// `bench/compare-large.sh`).
#[test]
fn compare_of_two_files_of_eight_million_values_finishes() {
    let dir = scratch("compare-eight-million");
    let count = 8_000_000;
    // Milliseconds on a 1 µs grid, one thousand distinct values, the other file 0.1 ms slower.
    let write = |name: &str, offset: u32| {
        let mut body = String::with_capacity(count * 6);
        for index in 0..count {
            let micros = 2_000 + offset + (index as u64 * 7_919 % 1_000) as u32;
            body.push_str(&format!("{}.{:03}\n", micros / 1_000, micros % 1_000));
        }
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        path
    };
    let baseline = write("baseline.txt", 0);
    let other = write("other.txt", 100);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["compare", "--json", "--resamples", "99"])
        .arg(&baseline)
        .arg(&other)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the tlslab binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tlslab compare of two files of {count} values did not finish in 15 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let output = child.wait_with_output().unwrap();
    let set: Value = serde_json::from_str(&assert_success(&output)).unwrap();
    let comparison = &set["comparisons"][0];
    assert_eq!(comparison["n_baseline"], count);
    assert_eq!(
        comparison["welch_df"].as_f64().unwrap().round(),
        15_999_998.0
    );
    let difference = comparison["diff_mean"].as_f64().unwrap();
    assert!((difference - 0.1).abs() < 1e-9, "{comparison}");
    let [low, high] = [0, 1].map(|end| comparison["diff_mean_ci"][end].as_f64().unwrap());
    assert!(low < difference && difference < high, "{comparison}");
    assert!(comparison["verdict"]
        .as_str()
        .unwrap()
        .contains("times slower"));
}

/// A file that is not a sample file must cost bounded memory: `/dev/zero` is endless and has
/// no line break. On main `compare` read it whole and grew until memory ran out; now it
/// streams the file and stops at a line longer than 1 MiB. Run under a 1 GB address-space
/// limit, so a regression aborts the child instead of exhausting the machine.
#[test]
fn compare_of_an_endless_file_stops_with_an_error() {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000 && exec \"$0\" compare /dev/zero /dev/zero")
        .arg(env!("CARGO_BIN_EXE_tlslab"))
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs");
    assert_user_error(&output, 2, "longer than 1 MiB");
}

#[test]
fn until_ci_stops_configs_early_and_says_why() {
    let dir = scratch("until-ci");
    let run = Run::new(&dir, "until")
        .args("--tls 1.2,1.3 -n 3000 --block 100 --warmup 0 --until-ci 5% --json")
        .succeeds();
    for config in run.json()["configs"].as_array().unwrap() {
        let stopping = config["stopping"].as_str().unwrap();
        assert!(
            stopping.starts_with("stopped early after round"),
            "{stopping}"
        );
        let attempted = config["attempted"].as_i64().unwrap();
        assert!((100..3000).contains(&attempted), "{attempted}");
    }
    // Every attempt is stored, and the stop is recorded with the config.
    let (stored, attempted): (i64, i64) = row(
        &run.db,
        "SELECT (SELECT COUNT(*) FROM samples), attempted FROM runs",
    );
    assert_eq!(stored, attempted);
    let stopped = count(
        &run.db,
        "SELECT COUNT(*) FROM configs WHERE stopped_half_width <= 0.05",
    );
    assert_eq!(stopped, 2);
    assert_user_error(&tlslab(&["run", "--until-ci", "often"]), 2, "until-ci");
    assert_user_error(&tlslab(&["run", "--until-ci", "150%"]), 2, "until-ci");
}

#[test]
fn fail_on_gates_a_regression_with_exit_4() {
    let dir = scratch("compare-gate");
    let write = |name: &str, values: &[f64]| {
        let path = dir.join(name);
        let body: String = values.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&path, body).unwrap();
        path.to_str().unwrap().to_string()
    };
    let before = write(
        "before.txt",
        &[1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00],
    );
    let after = write(
        "after.txt",
        &[1.50, 1.52, 1.48, 1.51, 1.49, 1.53, 1.47, 1.50],
    );
    // The new build is slower: the slower and different gates catch it, the faster one not.
    for (gate, code) in [("slower", 4), ("different", 4), ("faster", 0)] {
        let output = tlslab(&["compare", &before, &after, "--fail-on", gate]);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{gate}: {}",
            stderr(&output)
        );
        if code == 4 {
            assert!(stderr(&output).contains("error: 'after.txt' against 'before.txt'"));
            assert!(stderr(&output).contains(&format!("hint: --fail-on {gate} caught 1 of 1")));
        }
    }
    // The same numbers are no regression.
    let same = write(
        "same.txt",
        &[1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00],
    );
    let output = tlslab(&["compare", &before, &same, "--fail-on", "different"]);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn compare_by_tls_holds_every_other_dimension_fixed() {
    let dir = scratch("compare-by");
    let run = Run::new(&dir, "versions")
        .arg(example("tls12-vs-tls13.toml"))
        .args("-n 60 --warmup 0")
        .succeeds();
    let db = run.db.to_str().unwrap();
    let json: Value =
        serde_json::from_str(&stdout(&tlslab(&["compare", db, "--by", "tls", "--json"]))).unwrap();
    let contrasts = json["contrasts"].as_array().unwrap();
    // Three suites × three concurrencies: nine strata, one contrast each.
    assert_eq!(contrasts.len(), 9, "{json}");
    for contrast in contrasts {
        let baseline = contrast["comparison"]["baseline"].as_str().unwrap();
        let other = contrast["comparison"]["other"].as_str().unwrap();
        // Never a contrast that changes two dimensions: the labels differ in the version alone.
        assert_eq!(baseline.replace("tls1.2", "tls1.3"), other, "{contrast}");
        let stratum = contrast["stratum"].as_str().unwrap();
        assert!(
            stratum.contains("suite=") && stratum.contains("concurrency="),
            "{stratum}"
        );
    }
    let pooled = &json["pooled"][0];
    assert_eq!(pooled["level"], "1.3");
    assert_eq!(pooled["strata"], 9);
    assert!(
        pooled["van_elteren"]["p_value"].as_f64().is_some(),
        "{pooled}"
    );
    let dimensions: Vec<&str> = pooled["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|interaction| interaction["dimension"].as_str().unwrap())
        .collect();
    assert_eq!(dimensions, ["suite", "concurrency"]);
    let text = stdout(&tlslab(&["compare", db, "--by", "tls"]));
    assert!(text.contains("1.3 vs 1.2: ratio "), "{text}");
    assert!(text.contains("across 9 strata"), "{text}");
    // `--by none` is the plain comparison: every Config against the first.
    let plain = stdout(&tlslab(&["compare", db, "--by", "none"]));
    assert_eq!(plain, stdout(&tlslab(&["compare", db])));
    assert!(
        plain.contains("each config against baseline 'tls1.2 aes128gcm"),
        "{plain}"
    );
    // A dimension the run did not vary, or none at all, is a usage error.
    assert_user_error(
        &tlslab(&["compare", db, "--by", "cert"]),
        2,
        "one value of cert",
    );
    assert_user_error(
        &tlslab(&["compare", db, "--by", "colour"]),
        2,
        "not a dimension",
    );
}

#[test]
fn numeric_levels_are_listed_in_numeric_order_everywhere() {
    let dir = scratch("compare-order");
    for store in stores(&dir, "compare_order") {
        numeric_levels_in_order(&dir, &store);
    }
}

fn numeric_levels_in_order(dir: &std::path::Path, store: &StoreUnderTest) {
    // Typed out of order, and 100 before 20 as text would put it.
    let run = Run::new(dir, "order")
        .store(store)
        .args("--tls 1.2,1.3 -c 100,1,20 -n 100 --warmup 0")
        .succeeds();
    let db = store.location.as_str();
    let position = |text: &str, what: &str| {
        text.find(what)
            .unwrap_or_else(|| panic!("no {what:?} in:\n{text}"))
    };
    // The summary's pooled answers: concurrency 20 before 100, both against 1.
    let summary = &run.summary;
    assert!(
        position(summary, "concurrency 20 vs 1:") < position(summary, "concurrency 100 vs 1:"),
        "{summary}"
    );

    let json: Value =
        serde_json::from_str(&stdout(&tlslab(&["compare", db, "--by", "tls", "--json"]))).unwrap();
    let strata: Vec<&str> = json["contrasts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|contrast| contrast["stratum"].as_str().unwrap())
        .collect();
    assert_eq!(
        strata,
        ["concurrency=1", "concurrency=20", "concurrency=100"],
        "{json}"
    );
    let levels: Vec<&str> = json["pooled"][0]["interactions"][0]["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ratio| ratio[0].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["1", "20", "100"], "{json}");
    let text = stdout(&tlslab(&["compare", db, "--by", "tls"]));
    assert!(
        position(&text, "concurrency=20 ·") < position(&text, "concurrency=100 ·"),
        "{text}"
    );

    // By concurrency: the baseline is the smallest, the others in numeric order.
    let json: Value = serde_json::from_str(&stdout(&tlslab(&[
        "compare",
        db,
        "--by",
        "concurrency",
        "--json",
    ])))
    .unwrap();
    assert_eq!(json["baseline"], "1", "{json}");
    let pooled: Vec<&str> = json["pooled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pooled| pooled["level"].as_str().unwrap())
        .collect();
    assert_eq!(pooled, ["20", "100"], "{json}");

    // The Markdown report lists them so too.
    let markdown = dir.join(format!("order-{}.md", store.kind));
    tlslab_succeeds(&["report", db, "-o", markdown.to_str().unwrap()]);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert!(
        position(&markdown, "| concurrency | 20 vs 1 |")
            < position(&markdown, "| concurrency | 100 vs 1 |"),
        "{markdown}"
    );
}

#[test]
fn plan_says_how_many_handshakes_a_difference_needs() {
    let dir = scratch("plan");
    for store in stores(&dir, "plan") {
        Run::new(&dir, "pilot")
            .store(&store)
            .args("--tls 1.2,1.3 -n 100 --warmup 0")
            .succeeds();
        let db = store.location.as_str();
        let plan: Value =
            serde_json::from_str(&stdout(&tlslab(&["plan", db, "--detect", "2%", "--json"])))
                .unwrap();
        let configs = plan["configs"].as_array().unwrap();
        assert_eq!(configs.len(), 2, "{}", store.kind);
        for config in configs {
            assert_eq!(config["pilot_samples"], 100);
            assert!(config["handshakes"].as_u64().unwrap() >= 2, "{config}");
        }
        // A smaller difference needs more handshakes: about four times for half of it.
        let half: Value =
            serde_json::from_str(&stdout(&tlslab(&["plan", db, "--detect", "1%", "--json"])))
                .unwrap();
        let needed = |plan: &Value| plan["handshakes"].as_u64().unwrap() as f64;
        let ratio = needed(&half) / needed(&plan);
        assert!((3.5..4.5).contains(&ratio), "{ratio}");
        assert_user_error(&tlslab(&["plan", db, "--detect", "2"]), 2, "not a share");
    }
}
