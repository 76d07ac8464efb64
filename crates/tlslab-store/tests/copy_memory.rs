//! `store copy` streams: a run of 200,000 samples copied between SQLite and PostgreSQL with
//! the process's peak resident memory growing by a small fraction of the run's size. A test
//! file of its own, so that no other test's memory shares the process's peak.

mod cluster;

use std::path::Path;

use cluster::Cluster;
use tlslab_core::*;
use tlslab_store::{copy, list_runs, Location, RunCopy, Store};

const SAMPLES: u64 = 200_000;

/// How much the peak may grow during a copy. Holding the run's rows (a hundred columns
/// each) would take hundreds of megabytes; a stream holds a row, SQLite's page cache and a
/// connection's buffers.
const LIMIT_BYTES: u64 = 32 << 20;

/// A `kB` line of /proc/self/status, in bytes.
fn status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kilobytes: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|number| number.parse().ok())
        .unwrap();
    kilobytes * 1024
}

/// How much the process's peak resident memory grew while `work` ran: the peak is reset to
/// the present first (`clear_refs` 5, Linux 4.0 and later).
fn peak_growth(work: impl FnOnce()) -> u64 {
    std::fs::write("/proc/self/clear_refs", "5").expect("the peak can be reset");
    let before = status("VmRSS:");
    assert!(status("VmHWM:") <= before + (1 << 20), "the peak was reset");
    work();
    status("VmHWM:").saturating_sub(before)
}

fn write_run(path: &Path) {
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
    let mut sink = Store::create(path).unwrap().into_sink();
    sink.begin(&RunInfo {
        source: Source::Pcap {
            files: vec!["large.pcap".into()],
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
            hostname: "large".into(),
            network: "capture".into(),
            name_resolution: Vec::new(),
            wire_clock: None,
        },
        command_line: vec!["tlslab".into(), "pcap".into(), "large.pcap".into()],
        started_at_unix_ns: 1,
    })
    .unwrap();
    for number in 0..SAMPLES {
        let sample = Sample::builder()
            .started_at(number * 1_000)
            .version("1.3")
            .event(Event::Start, 0)
            .event(Event::TcpConnected, 40_000 + number)
            .event(Event::ClientHelloSent, 50_000 + number)
            .event(Event::ServerHelloReceived, 400_000 + number)
            .event(Event::HandshakeDone, 1_000_000 + number)
            .bytes(500, 4_000)
            .client_address(
                format!("192.0.2.7:{}", 1024 + number % 60_000)
                    .parse()
                    .unwrap(),
            )
            .error(
                ErrorClass::Alert,
                format!("sample {number} of a large run, kept whole"),
            )
            .server_software("lab/1")
            .build();
        sink.record(Record::Sample(Box::new(sample))).unwrap();
    }
    sink.finish(&RunEnd {
        complete: true,
        reason: None,
        duration_ns: 1,
        attempted: SAMPLES,
        errors: 0,
    })
    .unwrap();
}

fn copied_samples(outcome: &tlslab_store::CopyOutcome) -> u64 {
    match outcome.runs[..] {
        [RunCopy::Copied { samples, .. }] => samples,
        ref runs => panic!("{runs:?}"),
    }
}

#[test]
fn a_large_run_is_copied_in_bounded_memory_each_way() {
    let directory = std::env::temp_dir().join(format!("tlslab-copy-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    let original = directory.join("large.db");
    write_run(&original);
    let size = std::fs::metadata(&original).unwrap().len();
    assert!(
        size > LIMIT_BYTES,
        "the run is larger than the limit: {size} bytes"
    );
    let source = Location::File(original.clone());

    let into_file = directory.join("copy.db");
    let mut outcome = None;
    let growth = peak_growth(|| {
        outcome = Some(
            copy(
                &source,
                &Location::File(into_file.clone()),
                None,
                &mut |_| {},
            )
            .unwrap(),
        )
    });
    eprintln!("SQLite to SQLite: {SAMPLES} samples ({size} bytes) copied with the peak {growth} bytes higher");
    assert_eq!(copied_samples(&outcome.unwrap()), SAMPLES);
    assert!(growth < LIMIT_BYTES, "{growth} bytes");

    let Some(cluster) = Cluster::start() else {
        return;
    };
    let database = Location::parse(&cluster.url()).unwrap();
    let mut progress = Vec::new();
    let mut outcome = None;
    let growth = peak_growth(|| {
        outcome = Some(
            copy(&source, &database, None, &mut |samples| {
                progress.push(samples)
            })
            .unwrap(),
        )
    });
    eprintln!("SQLite to PostgreSQL: the peak {growth} bytes higher");
    assert_eq!(copied_samples(&outcome.unwrap()), SAMPLES);
    assert!(growth < LIMIT_BYTES, "{growth} bytes");
    assert_eq!(
        progress.len() as u64,
        SAMPLES.div_ceil(tlslab_store::PROGRESS_EVERY)
    );
    assert_eq!(progress.last(), Some(&SAMPLES));
    assert!(progress.windows(2).all(|pair| pair[0] < pair[1]));
    assert_eq!(list_runs(&database).unwrap()[0].samples, SAMPLES);

    let back = directory.join("back.db");
    let mut outcome = None;
    let growth = peak_growth(|| {
        outcome = Some(copy(&database, &Location::File(back.clone()), None, &mut |_| {}).unwrap())
    });
    eprintln!("PostgreSQL to SQLite: the peak {growth} bytes higher");
    assert_eq!(copied_samples(&outcome.unwrap()), SAMPLES);
    assert!(growth < LIMIT_BYTES, "{growth} bytes");
    let _ = std::fs::remove_dir_all(&directory);
}
