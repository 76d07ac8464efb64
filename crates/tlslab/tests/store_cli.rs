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

/// What `report --format md` and `compare --json` print of the run in `store` (a file, or
/// `--run run` of a database), the line that names the store left out (the report's third).
fn read_back(dir: &std::path::Path, store: &str, run: Option<&str>) -> [String; 2] {
    let report = dir.join("read-back.md");
    let report_path = report.to_str().unwrap();
    let chosen: Vec<&str> = run.map_or(Vec::new(), |run| vec!["--run", run]);
    let mut line = vec![
        "report",
        store,
        "--format",
        "md",
        "-o",
        report_path,
        "--force",
    ];
    line.extend(&chosen);
    tlslab_succeeds(&line);
    let markdown = std::fs::read_to_string(&report).unwrap();
    let named = markdown.lines().nth(2).unwrap_or_default().to_string();
    assert!(
        named.starts_with('`'),
        "the store is named on line 3:\n{markdown}"
    );
    let markdown = markdown.replacen(&named, "STORE", 1);
    let mut line = vec!["compare", store, "--json"];
    line.extend(&chosen);
    [markdown, tlslab_succeeds(&line)]
}

#[test]
fn a_copied_run_reports_and_compares_alike_from_postgresql_and_from_its_file() {
    // The database's readers take each Config's samples in one pass (tlslab-store's
    // read.rs) where the file's query them reader by reader: the outputs must not differ by
    // a byte. A handshake run (two Configs, warm-up, ten rounds, resumption) and a load
    // run (HTTPS beside plain HTTP, kept connections, the server's software).
    let dir = scratch("store-read-alike");
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let handshakes = Run::new(&dir, "handshakes")
        .args("--tls 1.2,1.3 -n 60 --warmup 10 --resume")
        .succeeds()
        .db;
    let load = dir.join("load.db");
    tlslab_succeeds(&[
        "load",
        "--out",
        load.to_str().unwrap(),
        "--scheme",
        "http,https",
        "-n",
        "300",
        "-c",
        "4",
    ]);
    for db in [&handshakes, &load] {
        let db = db.to_str().unwrap();
        let copied = tlslab_succeeds(&["store", "copy", db, &url]);
        let run = copied
            .split(" as run ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .unwrap_or_else(|| panic!("no run number in: {copied}"))
            .to_string();
        let from_file = read_back(&dir, db, None);
        let from_database = read_back(&dir, &url, Some(&run));
        assert!(from_file[0].contains("| "), "{}", from_file[0]);
        for (what, (file, database)) in ["report", "compare"]
            .into_iter()
            .zip(from_file.iter().zip(&from_database))
        {
            assert!(
                file == database,
                "{what} of {db} differs from PostgreSQL's:\n--- file\n{file}\n--- database\n{database}"
            );
        }
    }
}
