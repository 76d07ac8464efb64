//! End-to-end: how the command line names a results store. `--store` (or `TLSLAB_STORE`)
//! takes a file's path or a PostgreSQL URL on every command that writes or reads results,
//! `--run` chooses among a database's runs, a password in a URL is never stored, shown nor
//! reported, and a database that cannot be reached stops a run before its first handshake.
//!
//! The PostgreSQL tests start a throw-away cluster of their own ([`Cluster`]); where the
//! server is not installed they print why and skip.

mod support;

use std::net::TcpListener;

use support::*;

/// Every piece of text a user or a later reader sees of a run: what the run printed, its
/// report, its exports and its comparison; none of them may hold `password`.
fn assert_nowhere(password: &str, texts: &[(&str, &str)]) {
    for (what, text) in texts {
        assert!(
            !text.contains(password),
            "the password is in {what}:\n{text}"
        );
    }
}

#[test]
fn a_password_in_the_store_url_is_never_stored_shown_or_reported() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let dir = scratch("store-password");
    let password = cluster.password();
    let url = cluster.create_database("secrets");
    assert!(
        url.contains(password),
        "the URL carries the password: {url}"
    );
    let run = tlslab(&["run", "--store", &url, "--tls", "1.2,1.3", "-n", "20"]);
    let printed = assert_success(&run);
    // Where the run went: the database without its password, and the run's number.
    let shown = format!("postgres://tlslab:***@127.0.0.1:{}/secrets", cluster.port());
    assert!(printed.contains(&shown), "{printed}");
    assert!(printed.contains("(run 1)"), "{printed}");
    let markdown = dir.join("secrets.md");
    let reported = tlslab(&[
        "report",
        &url,
        "--format",
        "md",
        "-o",
        markdown.to_str().unwrap(),
    ]);
    assert_success(&reported);
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert!(markdown.contains(&shown), "{markdown}");
    let csv = tlslab_succeeds(&["export", "--store", &url]);
    let lines = tlslab_succeeds(&["export", "--store", &url, "--format", "jsonl"]);
    let compared = tlslab_succeeds(&["compare", &url, "--json"]);
    for (export, lines) in [(&csv, 81), (&lines, 80)] {
        // 20 warm-up and 20 measured handshakes of each version (and the CSV's header).
        assert_eq!(export.lines().count(), lines, "{export}");
    }
    // The stored command line kept the URL, with `***` for the password.
    let stored = pg_dump(&url);
    assert!(stored.contains(&shown), "{stored}");
    assert_nowhere(
        password,
        &[
            ("the run's output", &printed),
            ("the run's messages", &stderr(&run)),
            ("the report", &markdown),
            ("the report's messages", &stderr(&reported)),
            ("the CSV export", &csv),
            ("the JSON Lines export", &lines),
            ("the comparison", &compared),
            ("the database", &stored),
        ],
    );

    // A password from PGPASSWORD, the store from TLSLAB_STORE: neither variable is
    // recorded, and the run is the database's second.
    let without_password = format!(
        "postgres://{}@{}:{}/secrets",
        cluster.user(),
        cluster.host(),
        cluster.port()
    );
    let quiet = tlslab_with(
        &["run", "-n", "5", "--quiet"],
        &[
            ("TLSLAB_STORE", &without_password),
            ("PGPASSWORD", password),
        ],
    );
    let line = assert_success(&quiet);
    assert!(line.contains("(run 2)"), "{line}");
    assert_nowhere(
        password,
        &[
            ("the quiet run's line", &line),
            ("the database", &pg_dump(&url)),
        ],
    );
}

#[test]
fn an_unreachable_database_stops_a_run_before_its_first_handshake() {
    // A server nobody else connects to: the run would shake hands with it first.
    let target = TcpListener::bind("127.0.0.1:0").unwrap();
    target.set_nonblocking(true).unwrap();
    let address = target.local_addr().unwrap().to_string();
    let output = tlslab(&[
        "run",
        "--store",
        "postgres://tlslab@127.0.0.1:1/x",
        "--target",
        &address,
        "--insecure",
        "-n",
        "5",
    ]);
    assert_user_error(&output, 3, "cannot reach PostgreSQL at 127.0.0.1:1");
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    assert!(
        matches!(target.accept(), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "the run connected to its target before it reached its store"
    );
}

#[test]
fn run_chooses_among_the_runs_of_a_database() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.create_database("runs");
    for handshakes in ["7", "4"] {
        assert_success(&tlslab(&[
            "run", "--store", &url, "-n", handshakes, "--warmup", "0",
        ]));
    }
    let exported = |run: &[&str]| {
        let mut line = vec!["export", "--store", &url];
        line.extend(run);
        tlslab_succeeds(&line).lines().count() - 1
    };
    assert_eq!(exported(&["--run", "1"]), 7);
    assert_eq!(exported(&["--run", "2"]), 4);
    // Its latest run, when none is named.
    assert_eq!(exported(&[]), 4);
    assert_user_error(
        &tlslab(&["report", &url, "--run", "9", "--format", "md"]),
        2,
        "no run 9",
    );
}

#[test]
fn the_store_is_named_once_and_a_file_holds_one_run() {
    let dir = scratch("store-names");
    let db = dir.join("run.db");
    let db = db.to_str().unwrap();
    // `--store PATH` is `--out PATH`.
    assert_success(&tlslab(&["run", "--store", db, "-n", "5", "--warmup", "0"]));
    assert_eq!(
        count(std::path::Path::new(db), "SELECT COUNT(*) FROM samples"),
        5
    );
    let other = dir.join("other.db");
    let both = tlslab(&["run", "--store", db, "--out", other.to_str().unwrap()]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
    assert!(!other.exists());

    // Readers: RESULTS, --store or TLSLAB_STORE, and a file's one run.
    let csv = tlslab_succeeds(&["export", db]);
    assert_eq!(tlslab_succeeds(&["export", "--store", db]), csv);
    assert_eq!(
        tlslab_succeeds(&["export", "--store", db, "--run", "1"]),
        csv
    );
    let from_variable = tlslab_with(&["export"], &[("TLSLAB_STORE", db)]);
    assert_eq!(assert_success(&from_variable), csv);
    assert_user_error(&tlslab(&["export", db, "--run", "2"]), 2, "holds one run");
    assert_user_error(&tlslab(&["export"]), 2, "no results store given");
    assert_user_error(&tlslab(&["export", db, "--store", db]), 2, "given twice");
    let samples = dir.join("samples.txt");
    std::fs::write(&samples, "1\n2\n3\n").unwrap();
    let samples = samples.to_str().unwrap();
    assert_user_error(
        &tlslab(&["compare", samples, samples, "--store", db]),
        2,
        "two inputs are sample files",
    );
}

#[test]
fn scans_go_into_a_database_and_read_back_as_from_a_file() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let dir = scratch("store-scans");
    let lab = LabServer::start();
    let target = format!("127.0.0.1:{}", lab.port);
    // Unreachable: refused before the first connection to the target, exit 3.
    let unreachable = format!("postgres://tlslab@127.0.0.1:{}/x", closed_port());
    let refused = tlslab(&[
        "scan",
        &target,
        "--sni",
        "localhost",
        "--store",
        &unreachable,
    ]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(
        stdout(&refused).is_empty(),
        "nothing scanned: {}",
        stdout(&refused)
    );
    let url = cluster.create_database("scans");
    let file = dir.join("scans.db");
    let mut exports = Vec::new();
    for store in [url.as_str(), file.to_str().unwrap()] {
        let scanned = tlslab(&["scan", &target, "--sni", "localhost", "--store", store]);
        let printed = assert_success(&scanned);
        assert!(printed.contains("grade        T"), "{printed}");
        let report = dir.join("scans.md");
        tlslab_succeeds(&["report", store, "-o", report.to_str().unwrap(), "--force"]);
        let report = std::fs::read_to_string(&report).unwrap();
        assert!(report.contains(&target), "{report}");
        let exported = tlslab_succeeds(&["export", store, "--scans"]);
        exports.push(exported.replace(store, "STORE"));
        assert!(!report.contains(cluster.password()));
    }
    let [database, file] = &exports[..] else {
        unreachable!()
    };
    // The same scan of the same server: the same grade and target, whichever store.
    let grade = |export: &str| -> Vec<String> {
        export
            .lines()
            .map(|line| {
                let row: serde_json::Value = serde_json::from_str(line).unwrap();
                format!("{} {}", row["target"], row["grade"])
            })
            .collect()
    };
    assert_eq!(grade(database), grade(file));
    assert_eq!(grade(database).len(), 1);
}

#[test]
fn a_price_list_goes_into_a_database_and_exports_as_from_a_file() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.create_database("speed");
    let file = scratch("store-speed").join("speed.db");
    let mut exported = Vec::new();
    for store in [url.as_str(), file.to_str().unwrap()] {
        let measured = tlslab(&["speed", "ed25519", "--seconds", "0.01", "--store", store]);
        let printed = assert_success(&measured);
        assert!(printed.contains("stored in"), "{printed}");
        assert!(!printed.contains(cluster.password()), "{printed}");
        let rows: Vec<serde_json::Value> = tlslab_succeeds(&["export", store, "--speed"])
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        // Sign and verify on each backend, whichever store holds them.
        let mut operations: Vec<String> = rows
            .iter()
            .map(|row| {
                format!(
                    "{} {} {}",
                    row["backend"], row["primitive"], row["operation"]
                )
            })
            .collect();
        operations.sort();
        exported.push(operations);
    }
    assert_eq!(exported[0], exported[1]);
    assert_eq!(exported[0].len(), 4, "{:?}", exported[0]);
}

#[test]
fn a_capture_read_into_either_store_exports_the_same_samples() {
    let dir = scratch("store-pcap");
    let lab = LabServer::start();
    let filter = format!("tcp port {}", lab.port);
    let Some(capture) = tcpdump_in(None, "lo", &dir, "lab", &filter) else {
        return;
    };
    let target = format!("127.0.0.1:{}", lab.port);
    let args = format!("--target {target} --insecure --tls 1.2,1.3 -n 6 --warmup 0");
    Run::new(&dir, "active").args(&args).succeeds();
    let file = capture.stop();
    let mut exports = Vec::new();
    for store in stores(&dir, "passive") {
        let read = tlslab(&["pcap", file.to_str().unwrap(), "--store", &store.location]);
        let summary = assert_success(&read);
        assert!(summary.contains("12 attempts"), "{}: {summary}", store.kind);
        exports.push(tlslab_succeeds(&[
            "export",
            &store.location,
            "--format",
            "jsonl",
        ]));
    }
    assert_eq!(exports[0].lines().count(), 12);
    if let [sqlite, postgres] = exports.as_slice() {
        assert_eq!(sqlite, postgres);
    }
}

/// The number of samples a store's run holds, and the attempts its run row counted.
fn samples_and_attempts(url: &str) -> (i64, i64) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("the cluster is up");
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM samples WHERE run_id = r.id), r.attempted FROM runs r ORDER BY r.id DESC LIMIT 1",
            &[],
        )
        .expect("the run is stored");
    (row.get(0), row.get(1))
}

#[test]
fn a_database_stopped_mid_run_and_started_again_ends_with_every_attempt() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.create_database("faults");
    // An open loop of 20 s: the database is stopped outright (as in a crash) 6 s in, and
    // started again 5 s later, while handshakes go on.
    let run = command([
        "run",
        "--store",
        &url,
        "--tls",
        "1.3",
        "--arrival-rate",
        "40/s",
        "--duration",
        "20s",
        "--warmup",
        "0",
        "-c",
        "8",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("tlslab runs");
    std::thread::sleep(std::time::Duration::from_secs(6));
    cluster.stop_immediately();
    std::thread::sleep(std::time::Duration::from_secs(5));
    cluster.start_again();
    let output = run.wait_with_output().expect("the run ends");
    let printed = assert_success(&output);
    let said = stderr(&output);
    assert!(
        said.contains("went away") && said.contains("was back"),
        "{said}"
    );
    assert!(!said.contains(cluster.password()) && !printed.contains(cluster.password()));
    let (samples, attempted) = samples_and_attempts(&url);
    assert!(attempted >= 700, "20 s at 40/s: {attempted} attempts");
    assert_eq!(samples, attempted, "every attempt is stored once\n{said}");
}

#[test]
fn a_database_that_never_comes_back_leaves_a_spool_that_the_printed_command_uploads() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.create_database("never");
    let dir = scratch("store-never");
    let run = command([
        "run",
        "--store",
        &url,
        "--tls",
        "1.3",
        "--arrival-rate",
        "40/s",
        "--duration",
        "8s",
        "--warmup",
        "0",
        "-c",
        "8",
    ])
    .current_dir(&dir)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("tlslab runs");
    std::thread::sleep(std::time::Duration::from_secs(3));
    cluster.stop_immediately();
    let output = run.wait_with_output().expect("the run ends");
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{said}");
    assert!(!said.contains(cluster.password()), "{said}");
    // The hint is the command to type, its password left to PGPASSWORD.
    let typed = said
        .lines()
        .find_map(|line| line.split_once("upload them: ").map(|(_, command)| command))
        .unwrap_or_else(|| panic!("the upload command is printed:\n{said}"));
    let typed = typed.split(" (its password").next().unwrap();
    cluster.start_again();
    let words: Vec<String> = typed
        .split_whitespace()
        .skip(1)
        .map(|word| word.trim_matches('\'').to_string())
        .collect();
    let uploaded = command(&words)
        .current_dir(&dir)
        .env("PGPASSWORD", cluster.password())
        .output()
        .expect("tlslab runs");
    assert_success(&uploaded);
    let (samples, attempted) = samples_and_attempts(&url);
    assert!(attempted >= 280, "8 s at 40/s: {attempted} attempts");
    assert_eq!(
        samples, attempted,
        "every attempt is in the database once\n{said}"
    );
    // Typed again, it adds nothing.
    assert_success(
        &command(&words)
            .current_dir(&dir)
            .env("PGPASSWORD", cluster.password())
            .output()
            .unwrap(),
    );
    assert_eq!(samples_and_attempts(&url), (samples, attempted));
}
