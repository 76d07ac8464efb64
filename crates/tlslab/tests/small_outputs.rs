//! End-to-end: small outputs that were wrong (issue 31, "small wrong outputs"): a time of
//! "-0 s", "NaN" in a report, an option silently ignored, messages that named the wrong
//! cause, and two exit codes for one DNS failure. Each input is the one the hostile review
//! tried.

mod support;

use std::net::TcpListener;
use std::process::Stdio;

use serde_json::Value;
use support::*;

#[test]
fn plan_on_a_cut_off_store_says_the_time_is_unknown_instead_of_minus_zero() {
    let dir = scratch("small-plan-cut-off");
    // One block of a million: killed in it, the run stored samples but no trial, so no rate.
    let run = Run::new(&dir, "cut").args("-n 1000000 --block 1000000 --warmup 0");
    let mut child = run
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_samples(run.db(), 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let db = run.db().to_str().unwrap();

    let text = assert_success(&tlslab(&["plan", db]));
    assert!(!text.contains("-0 s"), "{text}");
    assert!(text.contains("run with -n "), "{text}");
    assert!(
        text.contains("how long that takes is unknown: 1 of 1 Configs recorded no rate"),
        "{text}"
    );
    let plan: Value =
        serde_json::from_str(&assert_success(&tlslab(&["plan", db, "--json"]))).expect("JSON");
    assert!(plan["handshakes"].as_u64().is_some(), "{plan}");
    assert_eq!(plan["seconds"], Value::Null, "{plan}");
}

#[test]
fn one_sample_shows_no_nan_in_reports_and_summaries() {
    let dir = scratch("small-one-sample");
    let one = Run::new(&dir, "one")
        .args("-n 1 --warmup 0 --verbose")
        .succeeds();
    assert!(!one.summary.contains("NaN"), "{}", one.summary);
    assert!(
        one.summary.contains("one value: no interval"),
        "{}",
        one.summary
    );
    let db = one.db.to_str().unwrap();
    for name in ["one.md", "one.html"] {
        let path = dir.join(name);
        tlslab_succeeds(&["report", db, "-o", path.to_str().unwrap()]);
        let report = std::fs::read_to_string(&path).unwrap();
        assert!(!report.contains("NaN"), "{name}: {report}");
        assert!(report.contains("(one value: no interval)"), "{name}");
    }
    // The load summary's ab-style table too.
    let load = dir.join("load.db");
    let text = tlslab_succeeds(&["load", "-n", "1", "--out", load.to_str().unwrap()]);
    assert!(!text.contains("NaN"), "{text}");
}

#[test]
fn compare_of_two_files_applies_baseline_or_refuses_it() {
    let dir = scratch("small-compare-baseline");
    let write = |name: &str, first: u32| {
        let path = dir.join(name);
        let values: String = (first..first + 20).map(|v| format!("{v}\n")).collect();
        std::fs::write(&path, values).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (a, b) = (write("a.csv", 1), write("b.csv", 2));
    // A name that is neither file: a usage error naming both, not silently ignored.
    let refused = tlslab(&["compare", &a, &b, "--baseline", "zzz"]);
    assert_user_error(&refused, 2, "--baseline 'zzz' is neither sample file");
    assert!(stderr(&refused).contains(&format!("'{b}'")));
    // The second file named as the baseline becomes it, by file name or path.
    for named in ["b.csv", b.as_str()] {
        let set: Value = serde_json::from_str(&tlslab_succeeds(&[
            "compare",
            &a,
            &b,
            "--baseline",
            named,
            "--json",
        ]))
        .unwrap();
        let comparison = &set["comparisons"][0];
        assert_eq!(comparison["baseline"], "b.csv", "{comparison}");
        assert_eq!(comparison["other"], "a.csv", "{comparison}");
        // a's values are 1 lower than b's.
        assert!(comparison["diff_median"].as_f64().unwrap() < 0.0);
    }
    // Two files of one name: only a path tells them apart.
    std::fs::create_dir(dir.join("other")).unwrap();
    let twin = dir.join("other/a.csv");
    std::fs::copy(&a, &twin).unwrap();
    let twin = twin.to_str().unwrap();
    assert_user_error(
        &tlslab(&["compare", &a, twin, "--baseline", "a.csv"]),
        2,
        "names both sample files",
    );
}

#[test]
fn pcap_of_a_file_that_exists_but_is_no_capture_says_what_it_is() {
    let dir = scratch("small-pcap-kinds");
    let out = dir.join("out.db");
    let out = out.to_str().unwrap();
    let zero = tlslab(&["pcap", "/dev/zero", "--out", out]);
    assert_user_error(
        &zero,
        2,
        "/dev/zero is a character device, not a capture file",
    );
    assert!(!stderr(&zero).contains("no such"), "{}", stderr(&zero));
    let directory = tlslab(&["pcap", dir.to_str().unwrap(), "--out", out]);
    assert_user_error(&directory, 2, "is a directory, not a capture file");
    // A missing file is still "no such capture file".
    let missing = dir.join("missing.pcap");
    assert_user_error(
        &tlslab(&["pcap", missing.to_str().unwrap(), "--out", out]),
        2,
        "no such capture file",
    );
}

#[test]
fn a_plain_http_timeout_says_no_response_not_no_handshake() {
    let dir = scratch("small-plain-timeout");
    // The kernel completes connections into the backlog; nothing ever reads or answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let run = Run::new(&dir, "silent")
        .option("--target", format!("127.0.0.1:{port}"))
        .option("--plain-port", port.to_string())
        .args("--scheme http --http 1.1 --timeout 300ms -n 2 --warmup 0 --verbose");
    let output = run.output();
    let summary = stdout(&output);
    let errors = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{summary}\n{errors}");
    let details: Vec<String> = column(
        run.db(),
        "SELECT error_detail FROM samples WHERE error = 'timeout'",
        [],
    );
    assert_eq!(details.len(), 2, "{summary}\n{errors}");
    for detail in &details {
        assert_eq!(detail, "connected, but no response within 300ms");
    }
    for text in [&summary, &errors] {
        assert!(!text.contains("no handshake within"), "{text}");
        assert!(!text.contains("finish the handshake"), "{text}");
    }
    assert!(
        summary.contains("did not answer within --timeout"),
        "{summary}"
    );
    drop(silent);
}

#[test]
fn an_unresolvable_name_is_an_environment_error_for_run_load_and_scan_alike() {
    let dir = scratch("small-dns");
    let name = "tlslab-test.invalid:443";
    let run_db = dir.join("run.db");
    let load_db = dir.join("load.db");
    for arguments in [
        vec!["run", "--target", name, "--out", run_db.to_str().unwrap()],
        vec!["load", "--target", name, "--out", load_db.to_str().unwrap()],
        vec!["scan", name],
    ] {
        assert_user_error(&tlslab(&arguments), 3, "cannot resolve");
    }
    // A host that cannot be a name is a typing mistake, told before any lookup, by both.
    assert_user_error(
        &tlslab(&[
            "run",
            "--target",
            "a b:1",
            "--out",
            dir.join("typo.db").to_str().unwrap(),
        ]),
        2,
        "is not host:port",
    );
    assert_user_error(&tlslab(&["scan", "a b:1"]), 2, "is not HOST[:PORT]");
}
