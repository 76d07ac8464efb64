//! `store copy` and `store ls` between real stores: SQLite files made here and a throw-away
//! PostgreSQL cluster (`cluster/mod.rs`), each written through the sinks a run writes with.

mod cluster;

use std::path::{Path, PathBuf};

use cluster::Cluster;
use tlslab_core::*;
use tlslab_store::{
    copy, export, list_runs, CopyOutcome, CopyRefused, ExportFormat, Location, RunCopy, Store,
    StoreError,
};

/// A fresh scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("tlslab-copy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

fn file(path: &Path) -> Location {
    Location::File(path.to_path_buf())
}

fn database(url: &str) -> Location {
    Location::parse(url).unwrap()
}

/// A run of two Configs, as a producer begins it; `label` makes runs differ.
fn info(label: &str, started_at_unix_ns: u64) -> RunInfo {
    let experiment = Experiment {
        handshakes: 10,
        warmup: 0,
        ..Experiment::default()
    };
    let first = experiment
        .configs()
        .unwrap()
        .remove(0)
        .record("192.0.2.1:443".into(), None);
    let mut second = first.clone();
    second.index = 1;
    second.label = format!("{label}, \"quoted\" and ünïcode");
    second.arrival_rate = Some(12.5);
    RunInfo {
        source: Source::Pcap {
            files: vec![format!("{label}.pcap")],
        },
        experiment: None,
        plan: None,
        configs: vec![first, second],
        environment: Environment {
            tool_version: "0.1.0".into(),
            commit: "test".into(),
            rustls_version: "n/a".into(),
            crypto_provider: "n/a".into(),
            openssl_version: None,
            cpu_model: "any".into(),
            cores: 1,
            kernel: "any".into(),
            hostname: label.into(),
            network: "capture".into(),
            name_resolution: Vec::new(),
            wire_clock: None,
        },
        command_line: vec!["tlslab".into(), "pcap".into(), format!("{label}.pcap")],
        started_at_unix_ns,
    }
}

/// Sample `number` of a run: values of every kind the store keeps, some NULL, some failed.
fn sample(number: u64) -> Record {
    let config = (number % 2) as usize;
    let mut builder = Sample::builder()
        .config(config)
        .trial(config)
        .round(1 + (number % 3) as u32)
        .agent((number % 4) as u32)
        .started_at(number * 1_000)
        .event(Event::Start, 0)
        .bytes(500 + number, 4_000 + number)
        .client_address(
            format!("192.0.2.7:{}", 1024 + number % 60_000)
                .parse()
                .unwrap(),
        );
    if number % 10 == 7 {
        builder = builder.error(
            ErrorClass::Timeout,
            format!("no answer to attempt {number}"),
        );
    } else {
        builder = builder
            .version(if number.is_multiple_of(3) {
                "1.2"
            } else {
                "1.3"
            })
            .event(Event::TcpConnected, 40_000 + number)
            .event(Event::HandshakeDone, 1_000_000 + number * 7)
            .server_software("lab/1");
    }
    Record::Sample(Box::new(builder.build()))
}

fn trial(index: usize, attempted: u64) -> Record {
    Record::Trial(TrialRecord {
        trial: Trial {
            index,
            config: index,
            round: 1,
            warmup: false,
            handshakes: attempted,
            time_limit: None,
        },
        concurrency: 2,
        started_at: 10,
        duration_ns: 1_000_000 * attempted,
        attempted,
        server: None,
        client: Usage {
            user_ns: 5,
            system_ns: 6,
            peak_rss_bytes: 7,
        },
        link: None,
        server_client_verifications: None,
    })
}

/// Writes a whole run of `samples` samples into `sink`, with a replay result and an early
/// stop beside them.
fn write_run(sink: &mut dyn Sink, label: &str, started: u64, samples: u64) {
    sink.begin(&info(label, started)).unwrap();
    for number in 0..samples {
        sink.record(sample(number)).unwrap();
    }
    sink.record(trial(0, samples.div_ceil(2))).unwrap();
    sink.record(trial(1, samples / 2)).unwrap();
    sink.record(Record::Replay(ReplayRecord {
        config: 1,
        sent: 3,
        rejected: 2,
        accepted: 1,
    }))
    .unwrap();
    sink.record(Record::Stopped(EarlyStop {
        config: 0,
        round: 2,
        samples: 40,
        relative_half_width: 0.0125,
    }))
    .unwrap();
    sink.finish(&RunEnd {
        complete: true,
        reason: None,
        duration_ns: 5_000,
        attempted: samples,
        errors: samples / 10,
    })
    .unwrap();
}

/// A SQLite store holding one run.
fn sqlite_run(path: &Path, label: &str, started: u64, samples: u64) {
    let mut sink = Store::create(path).unwrap().into_sink();
    write_run(&mut sink, label, started, samples);
}

/// A new run in the database at `url`; its id.
fn postgres_run(url: &str, label: &str, started: u64, samples: u64) -> i64 {
    let new = Store::create_at(&database(url)).unwrap();
    let run = new.run().unwrap();
    write_run(new.into_sink().as_mut(), label, started, samples);
    run
}

/// The run's samples as `tlslab export --format jsonl` writes them.
fn jsonl(location: &Location, run: Option<i64>) -> Vec<u8> {
    let store = Store::open_location(location, run).unwrap();
    let mut out = Vec::new();
    export(&store, ExportFormat::JsonLines, &mut out).unwrap();
    out
}

/// Everything but the samples a reader reads of a run: its row, Configs, trials, replays.
fn described(location: &Location, run: Option<i64>) -> String {
    let store = Store::open_location(location, run).unwrap();
    let configs = store.configs().unwrap();
    let mut text = format!("{:?}\n{configs:?}\n", store.run().unwrap());
    for config in configs {
        text.push_str(&format!(
            "{:?} {:?}\n",
            store.trial_totals(config.id).unwrap(),
            store.replay(config.id).unwrap()
        ));
    }
    text
}

fn no_progress() -> impl FnMut(u64) {
    |_| {}
}

/// The one run a copy copied: from, to, samples.
fn copied(outcome: &CopyOutcome) -> (i64, i64, u64) {
    match outcome.runs.as_slice() {
        [RunCopy::Copied { from, to, samples }] => (*from, *to, *samples),
        runs => panic!("not one run copied: {runs:?}"),
    }
}

#[test]
fn a_run_copied_from_sqlite_to_postgresql_and_back_reads_back_byte_for_byte() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = scratch("round-trip");
    let original = directory.join("original.db");
    sqlite_run(&original, "round-trip", 1_700_000_000_000_000_000, 2_345);
    let source = file(&original);
    let exported = jsonl(&source, None);
    assert_eq!(
        exported.iter().filter(|byte| **byte == b'\n').count(),
        2_345
    );
    let description = described(&source, None);

    // Another writer's run first, so that the copy's ids are not the source's.
    let url = cluster.url();
    postgres_run(&url, "other", 5, 3);
    let mut told = Vec::new();
    let outcome = copy(&source, &database(&url), None, &mut |samples| {
        told.push(samples)
    })
    .unwrap();
    let (from, run, samples) = copied(&outcome);
    assert_eq!((from, samples), (1, 2_345));
    assert_ne!(run, 1, "the database numbers the copied run");
    assert_eq!(told.last(), Some(&2_345), "progress ends with every sample");
    assert_eq!(jsonl(&database(&url), Some(run)), exported);
    assert_eq!(described(&database(&url), Some(run)), description);

    // Back into a new SQLite file, and from there into another database: the same bytes.
    let back = directory.join("nested/back.db");
    let outcome = copy(&database(&url), &file(&back), Some(run), &mut no_progress()).unwrap();
    assert_eq!(copied(&outcome), (run, 1, 2_345));
    assert_eq!(jsonl(&file(&back), None), exported);
    assert_eq!(described(&file(&back), None), description);
    let other = cluster.create_database("other");
    let outcome = copy(&file(&back), &database(&other), None, &mut no_progress()).unwrap();
    let (_, again, _) = copied(&outcome);
    assert_eq!(jsonl(&database(&other), Some(again)), exported);
    assert_eq!(described(&database(&other), Some(again)), description);
}

#[test]
fn copying_a_run_twice_copies_it_once() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = scratch("twice");
    let original = directory.join("original.db");
    sqlite_run(&original, "twice", 42, 100);
    let url = cluster.url();
    let first = copy(&file(&original), &database(&url), None, &mut no_progress()).unwrap();
    let (_, run, _) = copied(&first);
    let second = copy(&file(&original), &database(&url), None, &mut no_progress()).unwrap();
    assert_eq!(
        second.runs,
        [RunCopy::AlreadyThere {
            from: 1,
            run,
            samples: 100
        }]
    );
    let listed = list_runs(&database(&url)).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0].id, listed[0].samples), (run, 100));

    // The database's own run copied into itself is there already too.
    let itself = copy(
        &database(&url),
        &database(&url),
        Some(run),
        &mut no_progress(),
    )
    .unwrap();
    assert!(matches!(itself.runs[..], [RunCopy::AlreadyThere { .. }]));

    // A copy that holds other contents (samples lost from it) is refused, not added to.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .execute(
            "DELETE FROM samples WHERE run_id = $1 AND started_at_ns >= 90000",
            &[&run],
        )
        .unwrap();
    let refused = copy(&file(&original), &database(&url), None, &mut no_progress()).unwrap_err();
    assert!(
        matches!(
            &refused,
            StoreError::Copy(CopyRefused::Differs {
                held: 90,
                samples: 100,
                ..
            })
        ),
        "{refused:?}"
    );
    assert!(
        refused.hint().contains(&format!("remove run {run}")),
        "{}",
        refused.hint()
    );
    assert_eq!(list_runs(&database(&url)).unwrap().len(), 1);
}

#[test]
fn a_database_of_many_runs_copies_whole_into_another_or_one_run_into_a_file() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = scratch("many");
    let url = cluster.url();
    let runs: Vec<i64> = [("a", 10), ("b", 0), ("c", 333)]
        .into_iter()
        .enumerate()
        .map(|(index, (label, samples))| postgres_run(&url, label, 100 + index as u64, samples))
        .collect();
    let listed = list_runs(&database(&url)).unwrap();
    let ids: Vec<i64> = listed.iter().map(|listing| listing.id).collect();
    assert_eq!(ids, runs);
    let counts: Vec<u64> = listed.iter().map(|listing| listing.samples).collect();
    assert_eq!(counts, [10, 0, 333]);
    assert!(listed
        .iter()
        .all(|listing| listing.complete && listing.source == "pcap"));
    assert!(
        listed[2].bytes > listed[0].bytes && listed[1].bytes == 0,
        "{listed:?}"
    );
    assert_eq!(listed[0].command_line, r#"["tlslab","pcap","a.pcap"]"#);

    // Into a file: one run, chosen with --run; all of them is refused, naming them.
    let one = directory.join("c.db");
    let refused = copy(&database(&url), &file(&one), None, &mut no_progress()).unwrap_err();
    match &refused {
        StoreError::Copy(CopyRefused::SeveralRuns { runs: listed, .. }) => {
            assert_eq!(listed, &runs)
        }
        other => panic!("{other:?}"),
    }
    let hint = refused.hint();
    assert!(
        hint.contains("--run") && hint.contains(&runs[2].to_string()),
        "{hint}"
    );
    assert!(!one.exists(), "a refused copy makes no file");
    copy(
        &database(&url),
        &file(&one),
        Some(runs[2]),
        &mut no_progress(),
    )
    .unwrap();
    assert_eq!(
        jsonl(&file(&one), None),
        jsonl(&database(&url), Some(runs[2]))
    );
    let refused = copy(
        &database(&url),
        &file(&one),
        Some(runs[0]),
        &mut no_progress(),
    );
    assert!(
        matches!(refused, Err(StoreError::Exists { .. })),
        "{refused:?}"
    );
    let missing = copy(
        &database(&url),
        &file(&directory.join("x.db")),
        Some(999),
        &mut no_progress(),
    );
    assert!(
        matches!(missing, Err(StoreError::NoRun { run: Some(999), .. })),
        "{missing:?}"
    );

    // Into another database: every run, in order, under the other's numbers; then again,
    // nothing.
    let other = cluster.create_database("other");
    postgres_run(&other, "already", 1, 1);
    let outcome = copy(&database(&url), &database(&other), None, &mut no_progress()).unwrap();
    assert_eq!(outcome.runs.len(), 3);
    for (copy, (&from, samples)) in outcome.runs.iter().zip(runs.iter().zip([10, 0, 333])) {
        let RunCopy::Copied {
            from: copied_from,
            to,
            samples: copied,
        } = copy
        else {
            panic!("{copy:?}");
        };
        assert_eq!((*copied_from, *copied), (from, samples));
        assert_eq!(
            jsonl(&database(&other), Some(*to)),
            jsonl(&database(&url), Some(from))
        );
    }
    let again = copy(&database(&url), &database(&other), None, &mut no_progress()).unwrap();
    assert!(
        again
            .runs
            .iter()
            .all(|run| matches!(run, RunCopy::AlreadyThere { .. })),
        "{again:?}"
    );
    assert_eq!(list_runs(&database(&other)).unwrap().len(), 4);
}

#[test]
fn a_copy_that_fails_part_way_leaves_nothing_of_its_run() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = scratch("fails");
    let damaged = directory.join("damaged.db");
    sqlite_run(&damaged, "damaged", 7, 30_000);
    // A value PostgreSQL's column cannot hold, in the run's last samples: the copy fails
    // after its run row, Configs, trials and most samples were sent.
    rusqlite::Connection::open(&damaged)
        .unwrap()
        .execute(
            "UPDATE samples SET bytes_sent = 'many' WHERE id = 29000",
            [],
        )
        .unwrap();
    let url = cluster.url();
    let failed = copy(&file(&damaged), &database(&url), None, &mut no_progress()).unwrap_err();
    let message = tlslab_core::WithCauses(&failed).to_string();
    assert!(message.contains("many"), "{message}");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for table in ["runs", "configs", "trials", "samples", "replays"] {
        let rows: i64 = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(rows, 0, "{table}");
    }
}

#[test]
fn stored_scans_go_with_a_whole_store_and_once() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = scratch("scans");
    let path = directory.join("scans.db");
    sqlite_run(&path, "scans", 3, 4);
    for target in ["a.example:443", "b.example:443"] {
        tlslab_store::add_scan(
            &path,
            &tlslab_store::NewScan {
                scanned_at_unix_ns: 9,
                tool_version: "0.1.0".into(),
                command_line: vec!["tlslab".into(), "scan".into(), target.into()],
                target: target.into(),
                address: "192.0.2.1:443".into(),
                server_name: None,
                grade: "A".into(),
                connections: 12,
                report: serde_json::json!({ "target": target }),
            },
        )
        .unwrap();
    }
    let url = cluster.url();
    let outcome = copy(&file(&path), &database(&url), None, &mut no_progress()).unwrap();
    assert_eq!((outcome.scans, outcome.scans_already_there), (2, 0));
    let again = copy(&file(&path), &database(&url), None, &mut no_progress()).unwrap();
    assert_eq!((again.scans, again.scans_already_there), (0, 2));
    let back = directory.join("back.db");
    copy(&database(&url), &file(&back), None, &mut no_progress()).unwrap();
    let scans = Store::open(&back).unwrap().scans().unwrap();
    let original = Store::open(&path).unwrap().scans().unwrap();
    assert_eq!(scans, original);
    // One run chosen: the scans stay behind.
    let one = directory.join("one.db");
    let (_, run, _) = copied(&outcome);
    let outcome = copy(&database(&url), &file(&one), Some(run), &mut no_progress()).unwrap();
    assert_eq!(outcome.scans, 0);
    assert!(Store::open(&one).unwrap().scans().unwrap().is_empty());
}

#[test]
fn sqlite_to_sqlite_copies_into_a_new_file_only() {
    let directory = scratch("files");
    let original = directory.join("original.db");
    sqlite_run(&original, "files", 11, 500);
    let listed = list_runs(&file(&original)).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].id, listed[0].samples), (1, 500));
    assert_eq!(listed[0].bytes, std::fs::metadata(&original).unwrap().len());
    assert_eq!(listed[0].source_detail.as_deref(), Some("files.pcap"));

    let copy_path = directory.join("copy.db");
    let outcome = copy(
        &file(&original),
        &file(&copy_path),
        None,
        &mut no_progress(),
    )
    .unwrap();
    assert_eq!(copied(&outcome), (1, 1, 500));
    assert_eq!(
        jsonl(&file(&copy_path), None),
        jsonl(&file(&original), None)
    );
    assert_eq!(
        described(&file(&copy_path), None),
        described(&file(&original), None)
    );
    // The copy is one file, as a run leaves its store.
    assert!(!directory.join("copy.db-wal").exists());

    let before = std::fs::read(&copy_path).unwrap();
    let refused = copy(
        &file(&original),
        &file(&copy_path),
        None,
        &mut no_progress(),
    );
    assert!(
        matches!(refused, Err(StoreError::Exists { .. })),
        "{refused:?}"
    );
    assert_eq!(std::fs::read(&copy_path).unwrap(), before, "left as it was");
    let missing = copy(
        &file(&original),
        &file(&directory.join("x.db")),
        Some(2),
        &mut no_progress(),
    );
    assert!(
        matches!(missing, Err(StoreError::NoRun { run: Some(2), .. })),
        "{missing:?}"
    );
    assert!(!directory.join("x.db").exists());
}

#[test]
fn a_column_the_source_lacks_is_copied_as_null() {
    let directory = scratch("lacks");
    let original = directory.join("original.db");
    sqlite_run(&original, "lacks", 11, 20);
    // A store written by hand or by another tool without one of today's columns.
    rusqlite::Connection::open(&original)
        .unwrap()
        .execute_batch("ALTER TABLE samples DROP COLUMN server_software")
        .unwrap();
    let copy_path = directory.join("copy.db");
    copy(
        &file(&original),
        &file(&copy_path),
        None,
        &mut no_progress(),
    )
    .unwrap();
    let copied = rusqlite::Connection::open(&copy_path).unwrap();
    let (samples, with_software): (i64, i64) = copied
        .query_row(
            "SELECT count(*), count(server_software) FROM samples",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!((samples, with_software), (20, 0));
}

#[test]
fn a_database_without_tlslab_in_it_has_no_runs_to_list_or_copy() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let listed = list_runs(&database(&url));
    assert!(
        matches!(listed, Err(StoreError::NoRun { run: None, .. })),
        "{listed:?}"
    );
    let directory = scratch("empty");
    let copied = copy(
        &database(&url),
        &file(&directory.join("x.db")),
        None,
        &mut no_progress(),
    );
    assert!(
        matches!(copied, Err(StoreError::NoRun { .. })),
        "{copied:?}"
    );
    assert!(!directory.join("x.db").exists());
    // Where the password was in the URL, no message shows it.
    let message = tlslab_core::WithCauses(&copied.unwrap_err()).to_string();
    assert!(!message.contains(cluster.password()), "{message}");
}

#[test]
fn a_copy_into_a_file_that_fails_part_way_leaves_no_file() {
    let directory = scratch("file-fails");
    let original = directory.join("original.db");
    sqlite_run(&original, "file-fails", 11, 20);
    // Without a column every sample must have, the copy fails at its first sample, after
    // the run's row, Configs and trials were written into the new file.
    rusqlite::Connection::open(&original)
        .unwrap()
        .execute_batch("ALTER TABLE samples DROP COLUMN round")
        .unwrap();
    let target = directory.join("copy.db");
    let failed = copy(&file(&original), &file(&target), None, &mut no_progress()).unwrap_err();
    let message = tlslab_core::WithCauses(&failed).to_string();
    assert!(message.contains("round"), "{message}");
    let left: Vec<_> = std::fs::read_dir(&directory)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left, ["original.db"], "nothing of the copy is left");
}

#[test]
fn a_spool_is_appended_to_the_run_it_was_spooled_from_once() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = scratch("spool");
    let url = cluster.url();
    let tlslab_store::NewRun::Database(sink) = Store::create_at(&database(&url)).unwrap() else {
        panic!("a database's new run");
    };
    let run = sink.run();
    let mut sink = sink.spooling_into(directory.join("spools"));
    sink.begin(&info("spooled", 77)).unwrap();
    for number in 0..300 {
        if number == 120 {
            sink.flush().unwrap();
            cluster.stop_immediately();
        }
        sink.record(sample(number)).unwrap();
    }
    let failure = sink
        .finish(&RunEnd {
            complete: true,
            reason: None,
            duration_ns: 5,
            attempted: 300,
            errors: 30,
        })
        .unwrap_err();
    let spool = PathBuf::from(failure.message.split_whitespace().last().unwrap());
    assert!(failure.hint.contains("tlslab store copy"), "{failure:?}");
    cluster.start_again();
    let in_database = list_runs(&database(&url)).unwrap()[0].samples;
    assert!(in_database < 300, "{in_database}");

    // Into another database, the spool is refused: its run is not there.
    let other = cluster.create_database("other");
    postgres_run(&other, "other", 1, 1);
    let refused = copy(&file(&spool), &database(&other), None, &mut no_progress()).unwrap_err();
    assert!(
        matches!(refused, StoreError::Copy(CopyRefused::NotTheSpoolsRun { run: r, .. }) if r == run),
        "{refused:?}"
    );

    let uploaded = copy(&file(&spool), &database(&url), None, &mut no_progress()).unwrap();
    assert_eq!(
        uploaded.runs,
        [RunCopy::Appended {
            from: 1,
            to: run,
            samples: 300 - in_database
        }]
    );
    let listed = list_runs(&database(&url)).unwrap();
    assert_eq!(
        listed.len(),
        1,
        "appended, not a run of its own: {listed:?}"
    );
    assert_eq!(listed[0].samples, 300);
    assert!(listed[0].complete, "the run's end came from the spool");
    let again = copy(&file(&spool), &database(&url), None, &mut no_progress()).unwrap();
    assert!(
        matches!(again.runs[..], [RunCopy::AlreadyThere { run: r, .. }] if r == run),
        "{again:?}"
    );
    assert_eq!(list_runs(&database(&url)).unwrap()[0].samples, 300);

    // The whole run, read back, is every sample once and in order.
    let exported = String::from_utf8(jsonl(&database(&url), Some(run))).unwrap();
    let starts: Vec<u64> = exported
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["started_at"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        starts,
        (0..300).map(|number| number * 1_000).collect::<Vec<_>>()
    );
}
