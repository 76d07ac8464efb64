//! The PostgreSQL store against a real server: a throw-away cluster each test run starts
//! (`cluster/mod.rs`), written through the same records a run makes.

mod cluster;

use std::collections::BTreeMap;

use cluster::Cluster;
use tlslab_core::*;
use tlslab_store::postgres::{prepare, reserve_run, PostgresError, PostgresSink};

fn connect(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).expect("the cluster accepts its own role")
}

fn info(label: &str) -> RunInfo {
    let experiment = Experiment {
        handshakes: 10,
        warmup: 0,
        ..Experiment::default()
    };
    let config = experiment
        .configs()
        .unwrap()
        .remove(0)
        .record("192.0.2.1:443".into(), None);
    RunInfo {
        source: Source::Pcap {
            files: vec![format!("{label}.pcap")],
        },
        experiment: None,
        plan: None,
        configs: vec![config],
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
        command_line: vec!["tlslab".into(), label.into()],
        started_at_unix_ns: 1,
    }
}

fn sample(trial: usize, number: u64) -> Record {
    Record::Sample(Box::new(
        Sample::builder()
            .trial(trial)
            .agent(number as u32)
            .started_at(number)
            .event(Event::Start, 0)
            .event(Event::HandshakeDone, 1_000 + number)
            .server_software("lab/1")
            .build(),
    ))
}

fn trial(index: usize, attempted: u64) -> Record {
    Record::Trial(TrialRecord {
        trial: Trial {
            index,
            config: 0,
            round: 1,
            warmup: false,
            handshakes: attempted,
            time_limit: None,
        },
        concurrency: 1,
        started_at: 0,
        duration_ns: 1,
        attempted,
        server: None,
        client: Usage::default(),
        link: None,
        server_client_verifications: None,
    })
}

/// Writes one run of `samples` samples in two trials; its run number.
fn write_run(url: &str, label: &str, samples: u64) -> i64 {
    let mut client = connect(url);
    prepare(&mut client, "test").unwrap();
    let run = reserve_run(&mut client, "test").unwrap();
    let mut sink = PostgresSink::new(client, "test".into(), run);
    sink.begin(&info(label)).unwrap();
    for number in 0..samples {
        sink.record(sample(usize::from(number >= samples / 2), number))
            .unwrap();
        if number == samples / 2 {
            sink.record(trial(0, samples / 2)).unwrap();
        }
    }
    sink.record(trial(1, samples - samples / 2)).unwrap();
    sink.finish(&RunEnd {
        complete: true,
        reason: None,
        duration_ns: 5,
        attempted: samples,
        errors: 0,
    })
    .unwrap();
    run
}

#[test]
fn writers_at_once_each_get_a_run_of_their_own_with_every_sample() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    // Three writers at once into one database, as capture points and agents write: the
    // schema is made once, and no run, Config, trial or sample collides.
    let writers: Vec<_> = [25_000u64, 7, 1_001]
        .into_iter()
        .enumerate()
        .map(|(index, samples)| {
            let url = url.clone();
            std::thread::spawn(move || {
                (write_run(&url, &format!("point-{index}"), samples), samples)
            })
        })
        .collect();
    let written: Vec<(i64, u64)> = writers
        .into_iter()
        .map(|writer| writer.join().unwrap())
        .collect();
    let mut client = connect(&url);
    let mut runs: Vec<i64> = written.iter().map(|(run, _)| *run).collect();
    runs.sort_unstable();
    runs.dedup();
    assert_eq!(runs.len(), 3, "each writer has its own run: {written:?}");
    for (run, samples) in written {
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM samples WHERE run_id = $1), \
                        (SELECT count(DISTINCT handshake) FROM samples WHERE run_id = $1), \
                        (SELECT sum(attempted) FROM trials WHERE run_id = $1)::BIGINT, \
                        (SELECT count(*) FROM configs WHERE run_id = $1), \
                        complete, attempted, environment \
                 FROM runs WHERE id = $1",
                &[&run],
            )
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), samples as i64, "run {run}");
        // Every sample's own value arrived (1,000 + its number ns of handshake).
        assert_eq!(row.get::<_, i64>(1), samples as i64, "run {run}");
        assert_eq!(row.get::<_, i64>(2), samples as i64, "run {run}");
        assert_eq!(row.get::<_, i64>(3), 1);
        assert_eq!(row.get::<_, i64>(4), 1, "the run's end is written");
        assert_eq!(row.get::<_, i64>(5), samples as i64);
        assert!(row.get::<_, String>(6).contains("point-"));
    }
}

#[test]
fn a_database_with_a_newer_schema_is_refused_and_left_as_it_was() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let mut client = connect(&url);
    prepare(&mut client, "test").unwrap();
    client
        .batch_execute("UPDATE tlslab_schema SET version = version + 1")
        .unwrap();
    let refused = prepare(&mut client, "the lab database").unwrap_err();
    assert!(
        matches!(refused, PostgresError::Newer { .. }),
        "{refused:?}"
    );
    let message = refused.to_string();
    assert!(
        message.contains("the lab database") && message.contains("upgrade tlslab"),
        "{message}"
    );
    let runs: i64 = client
        .query_one("SELECT count(*) FROM runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(runs, 0);
}

/// The same records into a SQLite file and into PostgreSQL.
fn both(cluster: &Cluster, records: &[Record]) -> (tlslab_store::Store, tlslab_store::Store) {
    let path = std::env::temp_dir().join(format!("tlslab-both-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let url = cluster.url();
    let location = tlslab_store::Location::parse(&url).unwrap();
    let new_run = tlslab_store::Store::create_at(&location).unwrap();
    let run = new_run.run().expect("a database numbers its runs");
    let sinks: Vec<Box<dyn Sink>> = vec![
        Box::new(tlslab_store::Store::create(&path).unwrap().into_sink()),
        new_run.into_sink(),
    ];
    for mut sink in sinks {
        sink.begin(&info("both")).unwrap();
        for record in records {
            sink.record(record.clone()).unwrap();
        }
        sink.finish(&RunEnd {
            complete: true,
            reason: None,
            duration_ns: 5,
            attempted: records.len() as u64,
            errors: 0,
        })
        .unwrap();
    }
    let file = tlslab_store::Store::open(&path).unwrap();
    let database = tlslab_store::Store::open_location(&location, Some(run)).unwrap();
    let latest = tlslab_store::Store::open_location(&location, None).unwrap();
    assert_eq!(
        latest.run().unwrap(),
        database.run().unwrap(),
        "the latest run is this one"
    );
    (file, database)
}

#[test]
fn a_run_reads_back_alike_from_postgresql_and_from_sqlite() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // Another run first, so that the database holds more than the run read.
    write_run(&cluster.url(), "other", 50);
    // Three rounds, two versions, and a failure among the successes: a database's readers
    // read a Config once in the order of its index (by outcome), a file's reader by reader.
    let mut records: Vec<Record> = (0..300)
        .map(|number| {
            Record::Sample(Box::new(
                Sample::builder()
                    .agent(number as u32)
                    .round((number % 3) as u32)
                    .started_at(number)
                    .event(Event::Start, 0)
                    .event(Event::HandshakeDone, 1_000 + number * number)
                    .version(if number % 4 == 0 { "1.2" } else { "1.3" })
                    .server_software(format!("lab/{}", number / 100))
                    .build(),
            ))
        })
        .collect();
    records.insert(
        100,
        Record::Sample(Box::new(
            Sample::builder()
                .outcome(Outcome::Error)
                .error(ErrorClass::Timeout, "no answer in 5 s")
                .build(),
        )),
    );
    records.push(trial(0, 301));
    let (file, database) = both(&cluster, &records);
    let export = |store: &tlslab_store::Store| {
        let mut lines = Vec::new();
        tlslab_store::export(store, tlslab_store::ExportFormat::JsonLines, &mut lines).unwrap();
        String::from_utf8(lines).unwrap()
    };
    let exported = export(&file);
    assert_eq!(exported.lines().count(), 301);
    assert_eq!(
        export(&database),
        exported,
        "the export is the same, byte for byte"
    );
    assert_eq!(database.configs().unwrap(), file.configs().unwrap());
    let mut run = database.run().unwrap();
    let file_run = file.run().unwrap();
    // Each store says when its own run's end was written.
    run.duration_ns = file_run.duration_ns;
    assert_eq!(run.environment, file_run.environment);
    assert_eq!(run.command_line, file_run.command_line);
    assert_eq!(run.complete, file_run.complete);
    for reader in [
        |store: &tlslab_store::Store| {
            format!(
                "{:?}",
                store.phases_values(0, &["handshake", "start"]).unwrap()
            )
        },
        |store: &tlslab_store::Store| format!("{:?}", store.outcome_counts(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.trial_totals(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.negotiated(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.round_medians(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.resumption_counts(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.server_software(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.error_example(0, "timeout").unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.sample_count().unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.trial_start_spans(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.request_counts(0).unwrap()),
        |store: &tlslab_store::Store| {
            format!(
                "{:?}",
                store.phases_values(0, &["handshake", "total"]).unwrap()
            )
        },
        |store: &tlslab_store::Store| {
            let by_config = store.phase_values_by_config("handshake").unwrap();
            format!("{:?}", by_config.into_iter().collect::<BTreeMap<_, _>>())
        },
        |store: &tlslab_store::Store| {
            let mut requests = Vec::new();
            store
                .for_each_request(0, |request| requests.push(request))
                .unwrap();
            format!("{requests:?}")
        },
        |store: &tlslab_store::Store| format!("{:?}", store.early_data_counts(0).unwrap()),
        |store: &tlslab_store::Store| format!("{:?}", store.ech_counts(0).unwrap()),
    ] {
        assert_eq!(reader(&database), reader(&file));
    }
    assert_eq!(
        database.sample_count().unwrap(),
        301,
        "the other run's samples are not this run's"
    );
}

/// Writes `samples` samples through `sink` a few milliseconds apart, calling `meanwhile`
/// with each sample's number (to stop and start the database while the run goes on).
fn write_slowly(sink: &mut dyn Sink, samples: u64, mut meanwhile: impl FnMut(u64)) {
    sink.begin(&info("faults")).unwrap();
    for number in 0..samples {
        sink.record(sample(0, number)).unwrap();
        meanwhile(number);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    sink.record(trial(0, samples)).unwrap();
}

fn end(samples: u64) -> RunEnd {
    RunEnd {
        complete: true,
        reason: None,
        duration_ns: 5,
        attempted: samples,
        errors: 0,
    }
}

#[test]
fn a_database_that_goes_away_and_comes_back_ends_with_every_sample() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = std::env::temp_dir().join(format!("tlslab-spool-{}", std::process::id()));
    let location = tlslab_store::Location::parse(&cluster.url()).unwrap();
    let tlslab_store::NewRun::Database(sink) = tlslab_store::Store::create_at(&location).unwrap()
    else {
        panic!("a database's new run");
    };
    let run = sink.run();
    let notices = sink.notices();
    let mut sink = sink.spooling_into(&directory);
    // Stopped at once (no checkpoint, as a crash) a third of the way, started again later.
    write_slowly(&mut sink, 1_500, |number| match number {
        500 => cluster.stop_immediately(),
        1_000 => cluster.start_again(),
        _ => {}
    });
    sink.finish(&end(1_500)).unwrap();
    let store = tlslab_store::Store::open_location(&location, Some(run)).unwrap();
    assert_eq!(store.sample_count().unwrap(), 1_500, "{:?}", notices.all());
    let mut starts: Vec<u64> = store
        .timelines()
        .unwrap()
        .iter()
        .map(|timeline| timeline.started_at_ns)
        .collect();
    starts.sort_unstable();
    assert_eq!(starts, (0..1_500).collect::<Vec<_>>(), "each sample once");
    assert_eq!(store.trial_totals(0).unwrap().attempted, 1_500);
    assert!(store.run().unwrap().complete);
    let said = notices.all().join("\n");
    assert!(
        said.contains("went away") && said.contains("was back"),
        "{said}"
    );
    assert!(!said.contains(cluster.password()), "{said}");
    let spools: Vec<_> = std::fs::read_dir(&directory).unwrap().collect();
    assert!(spools.is_empty(), "an uploaded spool is removed");
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn a_database_that_never_comes_back_leaves_every_sample_in_the_spool() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = std::env::temp_dir().join(format!("tlslab-spool-never-{}", std::process::id()));
    let location = tlslab_store::Location::parse(&cluster.url()).unwrap();
    let tlslab_store::NewRun::Database(sink) = tlslab_store::Store::create_at(&location).unwrap()
    else {
        panic!("a database's new run");
    };
    let run = sink.run();
    let mut sink = sink.spooling_into(&directory);
    write_slowly(&mut sink, 600, |number| {
        if number == 200 {
            cluster.stop_immediately();
        }
    });
    let failure = sink.finish(&end(600)).unwrap_err();
    assert!(!failure.message.contains(cluster.password()), "{failure:?}");
    assert!(failure.hint.contains("tlslab store copy "), "{failure:?}");
    let spool = failure
        .message
        .split_whitespace()
        .last()
        .expect("the message ends with the spool's path");
    let spooled = tlslab_store::Store::open(std::path::Path::new(spool)).unwrap();
    let in_spool = spooled.sample_count().unwrap();
    cluster.start_again();
    let store = tlslab_store::Store::open_location(&location, Some(run)).unwrap();
    let in_database = store.sample_count().unwrap();
    assert_eq!(
        in_spool + in_database,
        600,
        "every sample is in one of the two"
    );
    // The spool is uploaded into its run once: a second upload adds nothing.
    let mut client = connect(&cluster.url());
    let path = std::path::Path::new(spool);
    assert_eq!(
        tlslab_store::postgres::spool::upload(path, &mut client, run).unwrap(),
        in_spool as u64
    );
    assert_eq!(
        tlslab_store::postgres::spool::upload(path, &mut client, run).unwrap(),
        0
    );
    assert_eq!(store.sample_count().unwrap(), 600);
    assert!(
        store.run().unwrap().complete,
        "the run's end came from the spool"
    );
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn a_spool_stops_the_run_at_its_bound_keeping_what_it_took() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let directory = std::env::temp_dir().join(format!("tlslab-spool-bound-{}", std::process::id()));
    let location = tlslab_store::Location::parse(&cluster.url()).unwrap();
    let tlslab_store::NewRun::Database(sink) = tlslab_store::Store::create_at(&location).unwrap()
    else {
        panic!("a database's new run");
    };
    let mut sink = sink.spooling_into(&directory).spool_limit(64 << 10);
    sink.begin(&info("bound")).unwrap();
    sink.record(sample(0, 0)).unwrap();
    sink.flush().unwrap();
    cluster.stop_immediately();
    let refused = (1..200_000u64).find_map(|number| sink.record(sample(0, number)).err());
    let refused = refused.expect("the spool's bound stops the run");
    assert!(refused.message.contains("reached its bound"), "{refused:?}");
    assert!(refused.hint.contains("tlslab store copy"), "{refused:?}");
    let _ = std::fs::remove_dir_all(&directory);
}

/// Capture point `point`'s Config, numbered `index`.
fn point_config(index: usize, point: &str) -> Record {
    let RunInfo { mut configs, .. } = info(point);
    let mut config = configs.remove(0);
    config.index = index;
    config.label = format!("tls1.3 @{point}");
    config.capture_point = Some(point.to_string());
    Record::Config(Box::new(config))
}

/// Writes `samples` handshakes of capture point `point` through `new`, numbering its Config
/// from its block; the run's number and the writer's.
fn capture_point(new: tlslab_store::NewRun, point: &str, samples: u64) -> (i64, i64) {
    let run = new.run().unwrap();
    let writer = new.joined().map_or(0, |joined| joined.writer);
    let first = writer as usize * tlslab_store::CONFIG_BLOCK;
    let mut sink = new.into_sink();
    let mut info = info(point);
    info.source = Source::Capture {
        interface: point.into(),
    };
    info.configs.clear();
    sink.begin(&info).unwrap();
    sink.record(point_config(first, point)).unwrap();
    for number in 0..samples {
        let Record::Sample(mut sample) = sample(0, number) else {
            unreachable!()
        };
        sample.config = first;
        sink.record(Record::Sample(sample)).unwrap();
    }
    sink.finish(&RunEnd {
        complete: point != "b",
        reason: (point == "b").then(|| "interrupted".into()),
        duration_ns: 1_000 * samples,
        attempted: samples,
        errors: 0,
    })
    .unwrap();
    (run, writer)
}

#[test]
fn capture_points_join_one_run_and_read_back_as_one() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let location = tlslab_store::Location::parse(&cluster.url()).unwrap();
    let (run, first) = capture_point(tlslab_store::Store::create_at(&location).unwrap(), "a", 30);
    assert_eq!(first, 0);
    // Two more capture points join it, at once.
    let joiners: Vec<(i64, i64)> = [("b", 20), ("c", 10)]
        .into_iter()
        .map(|(point, samples)| {
            let location = location.clone();
            std::thread::spawn(move || {
                let joined = tlslab_store::Store::join_at(&location, run, "capture").unwrap();
                capture_point(joined, point, samples)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|writer| writer.join().unwrap())
        .collect();
    let mut writers: Vec<i64> = joiners
        .iter()
        .map(|(joined, writer)| {
            assert_eq!(*joined, run);
            *writer
        })
        .collect();
    writers.sort();
    assert_eq!(writers, [1, 2], "each joiner takes a number of its own");
    let store = tlslab_store::Store::open_location(&location, Some(run)).unwrap();
    let mut points: Vec<(Option<String>, i64)> = store
        .configs()
        .unwrap()
        .into_iter()
        .map(|config| (config.capture_point, config.id))
        .collect();
    points.sort();
    assert_eq!(points.len(), 3);
    for ((point, id), (expected, samples)) in points.iter().zip([("a", 30), ("b", 20), ("c", 10)]) {
        assert_eq!(point.as_deref(), Some(expected));
        let outcomes = store.outcome_counts(*id).unwrap();
        assert_eq!(outcomes, [("ok".to_string(), samples)], "{expected}");
    }
    // The run's end is every writer's: counts add up, and one interrupted part makes it
    // incomplete.
    let mut client = connect(&cluster.url());
    let row = client
        .query_one(
            "SELECT attempted, complete, reason, duration_ns, writers FROM runs WHERE id = $1",
            &[&run],
        )
        .unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), Some(60));
    assert_eq!(row.get::<_, i64>(1), 0);
    assert_eq!(
        row.get::<_, Option<String>>(2).as_deref(),
        Some("interrupted")
    );
    assert_eq!(row.get::<_, Option<i64>>(3), Some(30_000));
    assert_eq!(row.get::<_, i64>(4), 3);
    // Only a capture run of the database can be joined.
    let active = write_run(&cluster.url(), "pcap", 3);
    for (run, message) in [(active, "no capture run"), (run + 100, "no capture run")] {
        let refused = tlslab_store::Store::join_at(&location, run, "capture")
            .err()
            .unwrap();
        assert!(refused.to_string().contains(message), "{refused}");
        assert!(refused.hint().contains("--run"), "{}", refused.hint());
    }
    let file = tlslab_store::Location::File(std::env::temp_dir().join("never-joined.db"));
    let refused = tlslab_store::Store::join_at(&file, run, "capture")
        .err()
        .unwrap();
    assert!(refused.to_string().contains("PostgreSQL"), "{refused}");
}

#[test]
fn a_database_of_an_earlier_schema_gains_the_columns_added_since() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let mut client = connect(&url);
    prepare(&mut client, "test").unwrap();
    // As schema 15 wrote it: without the columns schema 16 added.
    client
        .batch_execute(
            "ALTER TABLE configs DROP COLUMN capture_point; ALTER TABLE runs DROP COLUMN writers; \
             UPDATE tlslab_schema SET version = 15",
        )
        .unwrap();
    let run = write_run(&url, "upgraded", 4);
    let row = client
        .query_one(
            "SELECT r.writers, c.capture_point IS NULL, v.version FROM runs r JOIN configs c ON c.run_id = r.id, tlslab_schema v WHERE r.id = $1",
            &[&run],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1);
    assert!(row.get::<_, bool>(1));
    assert_eq!(row.get::<_, i64>(2), tlslab_store::SCHEMA_VERSION);
}
