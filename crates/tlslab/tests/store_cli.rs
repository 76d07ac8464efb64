//! End-to-end: `tlslab store ls` and `tlslab store copy` on a real run's store, into a
//! throw-away PostgreSQL cluster and back.

mod support;

use support::*;

/// Both streams of a command, for the checks that a password never shows.
fn printed(output: &std::process::Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn a_run_copied_into_postgresql_twice_and_back_exports_the_same() {
    let dir = scratch("store-cli");
    let run = Run::new(&dir, "run").args("--tls 1.2,1.3 -n 15").succeeds();
    let db = run.db.to_str().unwrap().to_string();
    let samples = count(&run.db, "SELECT COUNT(*) FROM samples");
    assert!(samples >= 30, "{samples}");

    // A file lists its one run.
    let listed: serde_json::Value =
        serde_json::from_str(&tlslab_succeeds(&["store", "ls", &db, "--json"])).unwrap();
    let runs = listed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{listed}");
    assert_eq!(runs[0]["id"], 1);
    assert_eq!(runs[0]["samples"], samples);
    assert_eq!(runs[0]["complete"], true);
    assert_eq!(runs[0]["source"], "active");
    assert_eq!(runs[0]["command_line"][1], "run");

    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let password = cluster.password();

    let first = tlslab(&["store", "copy", &db, &url]);
    let text = assert_success(&first);
    assert!(
        text.contains(&format!("copied run 1 of {db} to "))
            && text.contains(&format!(": {samples} samples")),
        "{text}"
    );
    assert!(!printed(&first).contains(password), "{}", printed(&first));

    let second = tlslab(&["store", "copy", &db, &url]);
    let text = assert_success(&second);
    assert!(
        text.contains("already") && text.contains("nothing copied"),
        "{text}"
    );
    assert!(!printed(&second).contains(password));

    let ls = tlslab(&["store", "ls", &url]);
    let text = assert_success(&ls);
    assert!(!printed(&ls).contains(password), "{text}");
    assert!(text.contains(": 1 run\n"), "{text}");
    let line = text.lines().nth(2).expect("a line for the run");
    assert!(
        line.contains(&format!(" {samples} ")) && line.contains("active") && line.contains(" run "),
        "{text}"
    );
    let listed: serde_json::Value =
        serde_json::from_str(&tlslab_succeeds(&["store", "ls", &url, "--json"])).unwrap();
    let runs = listed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{listed}");
    assert_eq!(runs[0]["samples"], samples);
    let id = runs[0]["id"].to_string();

    // Back into a new file: the same export, byte for byte.
    let back = dir.join("back.db");
    let back_path = back.to_str().unwrap();
    let text = tlslab_succeeds(&["store", "copy", &url, back_path, "--run", &id]);
    assert!(text.contains(&format!("to {back_path} as run 1")), "{text}");
    let original = tlslab_succeeds(&["export", "--format", "jsonl", &db]);
    let copied = tlslab_succeeds(&["export", "--format", "jsonl", back_path]);
    assert_eq!(original.lines().count() as i64, samples);
    assert!(original == copied, "the exports differ");

    // A file is never copied into or over; a run that is not there is named.
    let refused = tlslab(&["store", "copy", &url, back_path]);
    assert_user_error(&refused, 2, "already exists");
    let missing = tlslab(&[
        "store",
        "copy",
        &url,
        &format!("{back_path}.new"),
        "--run",
        "999",
    ]);
    assert_user_error(&missing, 2, "no run 999");
    assert!(
        stderr(&missing).contains("store ls"),
        "{}",
        stderr(&missing)
    );
    assert!(!printed(&missing).contains(password));
}
