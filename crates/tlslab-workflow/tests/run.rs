//! The run, load and serve workflows called as a library: a lab server served by the serve
//! workflow in this process, runs and loads against it, their stores, summaries and
//! verdicts, and errors that keep their causes. No tlslab binary is started.

mod support;

use tlslab_workflow::results::Location;
use tlslab_workflow::run::{RunRequest, Verdict};
use tlslab_workflow::{Control, ErrorKind, WorkflowError};

use support::*;

#[test]
fn a_run_against_the_lab_server_stores_every_attempt_and_passes() {
    let dir = scratch("run-passes");
    let lab = Lab::start();
    let mut request = RunRequest::new(lab.experiment(20), invocation("run"));
    let store = dir.join("run.db");
    request.store = Some(Location::File(store.clone()));
    let outcome = tlslab_workflow::run::run(&request, &Control::default()).unwrap();
    assert!(
        matches!(outcome.verdict, Verdict::Passed),
        "{:?}",
        outcome.verdict
    );
    assert_eq!(outcome.kind(), None);
    assert_eq!(outcome.results.path(), Some(store.as_path()));
    assert!(outcome.end.complete);
    assert_eq!(outcome.summary.attempted, 20);
    assert_eq!(outcome.summary.errors, 0);
    // Warm-up included, every attempt is a row; the command line is the one given.
    assert_eq!(count(&store, "SELECT COUNT(*) FROM samples"), 22);
    let stored: String = rusqlite::Connection::open(&store)
        .unwrap()
        .query_row("SELECT command_line FROM runs", [], |row| row.get(0))
        .unwrap();
    assert!(stored.contains("workflow-test"), "{stored}");
    assert!(outcome.report.is_none());
    lab.stop().unwrap();
}

#[test]
fn a_broken_threshold_and_too_many_failures_are_verdicts_not_errors() {
    let dir = scratch("run-verdicts");
    let lab = Lab::start();
    let mut experiment = lab.experiment(10);
    experiment.thresholds = vec!["p99<1us".into()];
    let mut request = RunRequest::new(experiment, invocation("threshold"));
    request.store = Some(Location::File(dir.join("threshold.db")));
    request.report = true;
    let outcome = tlslab_workflow::run::run(&request, &Control::default()).unwrap();
    let Verdict::Thresholds(breaches) = &outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert_eq!(breaches.len(), 1);
    assert_eq!(breaches[0].threshold, "p99<1us");
    assert_eq!(outcome.kind(), Some(ErrorKind::Threshold));
    // The report is written beside the store whatever the verdict.
    let report = outcome.report.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(report, &dir.join("threshold.html"));
    assert!(report.exists());

    // A closed port: every attempt fails, the run completes, the verdict says so.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut experiment = lab.experiment(5);
    experiment.target = Some(format!("127.0.0.1:{port}"));
    let mut request = RunRequest::new(experiment, invocation("refused"));
    request.store = Some(Location::File(dir.join("refused.db")));
    let outcome = tlslab_workflow::run::run(&request, &Control::default()).unwrap();
    let Verdict::Failures(failures) = &outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert_eq!((failures.errors, failures.attempted), (5, 5));
    assert!(failures
        .classes
        .iter()
        .any(|(count, class, _)| *count == 5 && class == "refused"));
    assert_eq!(outcome.kind(), Some(ErrorKind::Failures));
}

#[test]
fn a_run_stopped_by_its_token_is_interrupted_with_its_samples_kept() {
    let dir = scratch("run-stopped");
    let lab = Lab::start();
    let mut request = RunRequest::new(lab.experiment(1_000_000), invocation("stopped"));
    request.store = Some(Location::File(dir.join("stopped.db")));
    let control = Control::default();
    // Stopped by the progress callback, once attempts are being made: no sleeping.
    let stop = control.stop.clone();
    let control = Control {
        progress: Some(std::sync::Arc::new(move |progress| {
            if progress.done >= 50 {
                stop.request();
            }
        })),
        ..control
    };
    let outcome = tlslab_workflow::run::run(&request, &control).unwrap();
    let Verdict::Interrupted { attempted } = outcome.verdict else {
        panic!("{:?}", outcome.verdict);
    };
    assert!((50..1_000_000).contains(&attempted), "{attempted}");
    assert_eq!(outcome.kind(), Some(ErrorKind::Interrupted));
    assert!(!outcome.end.complete);
    let stored = count(&dir.join("stopped.db"), "SELECT COUNT(*) FROM samples");
    assert_eq!(
        stored as u64, attempted,
        "every attempt made (warm-up included) is stored"
    );
}

#[test]
fn a_load_reads_its_figures_beside_the_run_summary() {
    let dir = scratch("load");
    let lab = Lab::start();
    let mut experiment = tlslab_workflow::load::defaults(false);
    tlslab_workflow::load::Url::parse(&format!("https://{}/r/100", lab.address()))
        .unwrap()
        .aim(&mut experiment, false, false);
    experiment.sni = Some("localhost".into());
    experiment.ca = Some(lab.serving.root.clone());
    experiment.handshakes = 30;
    experiment.warmup = 0;
    let mut request = RunRequest::new(experiment, invocation("load"));
    request.store = Some(Location::File(dir.join("load.db")));
    let outcome = tlslab_workflow::load::load(&request, &Control::default(), true).unwrap();
    assert!(matches!(outcome.run.verdict, Verdict::Passed));
    let figures = outcome.figures.unwrap().unwrap();
    assert_eq!(figures.configs.len(), 1);
    assert_eq!(figures.configs[0].complete, 30);
    assert_eq!(figures.configs[0].failed, 0);
    assert_eq!(figures.configs[0].path.as_deref(), Some("/r/100"));
    assert_eq!(outcome.run.summary.attempted, 30);
    // A load has no --metric: refused before anything runs.
    request.metric = Some("handshake".into());
    request.store = Some(Location::File(dir.join("never.db")));
    let error = match tlslab_workflow::load::load(&request, &Control::default(), true) {
        Err(error) => error,
        Ok(_) => panic!("a load with a metric ran"),
    };
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert!(!dir.join("never.db").exists());
}

#[test]
fn a_store_that_cannot_be_created_keeps_its_cause() {
    let dir = scratch("run-store-under-a-file");
    let lab = Lab::start();
    std::fs::write(dir.join("file"), "a regular file").unwrap();
    let mut request = RunRequest::new(lab.experiment(5), invocation("store"));
    request.store = Some(Location::File(dir.join("file").join("x.db")));
    let error = match tlslab_workflow::run::run(&request, &Control::default()) {
        Err(error) => error,
        Ok(_) => panic!("a store under a regular file was created"),
    };
    assert!(
        matches!(error, WorkflowError::StoreCreate { .. }),
        "{error:?}"
    );
    assert_eq!(error.kind(), ErrorKind::Environment);
    let chain = chain(&error);
    assert!(chain.len() >= 2, "{chain:?}");
    assert!(chain[0].contains("x.db"), "{chain:?}");
    assert!(!error.hint().is_empty());
}

#[test]
fn a_ca_file_that_is_not_pem_is_refused_before_anything_is_written() {
    let dir = scratch("run-ca-not-pem");
    let lab = Lab::start();
    let ca = dir.join("bad.pem");
    std::fs::write(&ca, "not a certificate\n").unwrap();
    let mut experiment = lab.experiment(5);
    experiment.ca = Some(ca.clone());
    let mut request = RunRequest::new(experiment, invocation("ca"));
    let store = dir.join("never.db");
    request.store = Some(Location::File(store.clone()));
    let error = match tlslab_workflow::run::run(&request, &Control::default()) {
        Err(error) => error,
        Ok(_) => panic!("a run trusted a file that is not PEM"),
    };
    assert_eq!(error.kind(), ErrorKind::Usage);
    let chain = chain(&error);
    assert!(
        chain[0].contains("--ca") && chain[0].contains("bad.pem"),
        "{chain:?}"
    );
    assert!(chain[1].contains("not PEM"), "{chain:?}");
    assert!(error.hint().contains("PEM"), "{}", error.hint());
    assert!(!store.exists());
}

#[test]
fn the_serve_workflow_serves_until_its_token_is_requested() {
    let lab = Lab::start();
    let address = lab.address();
    assert!(address.ip().is_loopback() && address.port() != 0);
    assert!(lab.serving.root.exists());
    std::net::TcpStream::connect(address).unwrap();
    // Stopping returns from the workflow (join), with no error.
    lab.stop().unwrap();
}
