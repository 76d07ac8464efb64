//! The pcap and capture workflows called as a library: a run against a lab server this
//! process serves, captured by tcpdump (then read by `pcap`) or live (by `capture`). Both
//! need the right to capture; without it (or without tcpdump) they say why and skip.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use tlslab_workflow::capture::CaptureRequest;
use tlslab_workflow::pcap::PcapRequest;
use tlslab_workflow::results::Location;
use tlslab_workflow::run::{RunRequest, Verdict};
use tlslab_workflow::{Control, ErrorKind, Notice};

use support::*;

/// One capture at a time: each sees only its own run's port, but a machine's loopback is
/// shared and the runs are quicker alone.
static CAPTURING: Mutex<()> = Mutex::new(());

/// A run of `handshakes` (and 2 warm-up) against `lab`, which must pass.
fn run_against(lab: &Lab, dir: &Path, handshakes: u64) {
    let mut request = RunRequest::new(lab.experiment(handshakes), invocation("captured"));
    request.store = Some(Location::File(dir.join("active.db")));
    let outcome = tlslab_workflow::run::run(&request, &Control::default()).unwrap();
    assert!(
        matches!(outcome.verdict, Verdict::Passed),
        "{:?}",
        outcome.verdict
    );
}

#[test]
fn pcap_reads_every_handshake_of_a_run_that_tcpdump_captured() {
    let _one = CAPTURING
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let dir = scratch("pcap");
    let lab = Lab::start();
    let filter = format!("tcp port {}", lab.address().port());
    let Some(tcpdump) = tcpdump_in(None, "lo", &dir, "run", &filter) else {
        return;
    };
    run_against(&lab, &dir, 10);
    // It writes what it holds and exits, as on Ctrl-C.
    let file = tcpdump.stop();

    let store = dir.join("passive.db");
    let request = PcapRequest::new(vec![file.clone()], store.clone(), invocation("pcap"));
    let outcome = tlslab_workflow::pcap::pcap(&request, &Control::default()).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!(outcome.kind(), None);
    assert_eq!(outcome.results.path(), Some(store.as_path()));
    // The summary the binary prints is the store's, read back.
    assert_eq!(outcome.summary().unwrap().attempted, 12);
    assert_eq!((outcome.report.connections, outcome.report.errors), (12, 0));
    assert_eq!(count(&store, "SELECT COUNT(*) FROM samples"), 12);
    assert_eq!(count(&store, "SELECT complete FROM runs"), 1);

    // Stopped by its caller before the captures' end: an interruption, said by its kind.
    let control = Control::default();
    control.stop.request();
    let stopped = dir.join("stopped.db");
    let request = PcapRequest::new(vec![file.clone()], stopped, invocation("stopped"));
    let outcome = tlslab_workflow::pcap::pcap(&request, &control).unwrap();
    assert!(outcome.interrupted);
    assert_eq!(outcome.kind(), Some(ErrorKind::Interrupted));

    // A capture that does not parse: the user's input, named with the cause.
    let bad = dir.join("bad.pcap");
    std::fs::write(&bad, "not a capture").unwrap();
    let request = PcapRequest::new(vec![bad], dir.join("bad.db"), invocation("bad"));
    let error = tlslab_workflow::pcap::pcap(&request, &Control::default()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert!(error.hint().contains("bad.db"), "{}", error.hint());
}

#[test]
fn capture_stores_each_handshake_live_until_its_token_stops_it() {
    let _one = CAPTURING
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let dir = scratch("capture");
    let lab = Lab::start();
    let store = dir.join("live.db");
    let packets = dir.join("live.pcap");
    let request = CaptureRequest {
        interface: "lo".into(),
        filter: Some(format!("tcp port {}", lab.address().port())),
        duration: None,
        store: Some(Location::File(store.clone())),
        write: Some(packets.clone()),
        rotation: None,
        force: false,
        key_log: None,
        vantage: None,
        metrics: None,
        influx: None,
        invocation: invocation("capture"),
        capture_point: None,
        join: None,
    };
    let (sender, started) = mpsc::channel();
    let sender = Mutex::new(sender);
    let control = Control {
        notices: Some(Arc::new(move |notice: &Notice| {
            if let Notice::Capturing { .. } = notice {
                let _ = sender.lock().unwrap().send(());
            }
        })),
        ..Control::default()
    };
    let stop = control.stop.clone();
    let capturing =
        std::thread::spawn(move || tlslab_workflow::capture::capture(&request, &control));
    if started.recv().is_err() {
        match capturing.join().unwrap() {
            Err(error) if error.kind() == ErrorKind::Environment => {
                println!("skipped: no live capture here ({error}: {})", error.hint());
                return;
            }
            other => panic!("the capture did not start: {other:?}"),
        }
    }
    run_against(&lab, &dir, 10);
    // Stopped once the store holds the run's handshakes (it commits as it goes), or after a
    // minute, when the count below says what was missed.
    let deadline = Instant::now() + Duration::from_secs(60);
    while stored(&store) < 12 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.request();
    let outcome = capturing.join().unwrap().unwrap();
    let passive = &outcome.passive;
    assert!(!passive.interrupted, "stopping is how a capture ends");
    // The kernel filter kept the run's packets only: its 12 handshakes, all stored.
    assert_eq!((passive.report.connections, passive.report.errors), (12, 0));
    assert_eq!(count(&store, "SELECT COUNT(*) FROM samples"), 12);
    assert_eq!(count(&store, "SELECT complete FROM runs"), 1);
    assert_eq!(outcome.files, vec![packets.clone()]);
    assert!(std::fs::metadata(&packets).unwrap().len() > 24);
}

/// The samples a store being written holds so far (0 before it can be read).
fn stored(store: &PathBuf) -> i64 {
    rusqlite::Connection::open(store)
        .and_then(|connection| {
            connection.query_row("SELECT COUNT(*) FROM samples", [], |row| row.get(0))
        })
        .unwrap_or(0)
}

#[test]
fn a_runs_own_capture_is_cross_checked_with_its_samples() {
    let _alone = CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = scratch("crosscheck");
    let lab = Lab::start();
    let capture = dir.join("run.pcap");
    let mut request = RunRequest::new(lab.experiment(20), invocation("crosscheck"));
    request.store = Some(Location::File(dir.join("run.db")));
    request.capture = Some(capture.clone());
    let outcome = match tlslab_workflow::run::run(&request, &Control::default()) {
        Ok(outcome) => outcome,
        Err(error) if error.kind() == ErrorKind::Environment => {
            println!(
                "skipped: the run cannot capture here ({error}: {})",
                error.hint()
            );
            return;
        }
        Err(error) => panic!("{error}"),
    };
    let checked = tlslab_workflow::crosscheck::cross_check(&outcome.store, &capture).unwrap();
    let samples = stored(&dir.join("run.db"));
    assert_eq!(
        (checked.check.matched as i64, checked.check.unmatched),
        (samples, 0)
    );
    assert!(!checked.check.events.is_empty());
    let timed: usize = checked.clocks.iter().map(|(_, count)| count).sum();
    assert_eq!(timed as i64, samples, "{:?}", checked.clocks);

    // A file that is no capture is said as such.
    let error =
        tlslab_workflow::crosscheck::cross_check(&outcome.store, &dir.join("run.db")).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cannot read the run's capture"),
        "{error}"
    );
}
