//! The scan workflow called as a library, against a lab server this process serves: the
//! scan's findings, its cost table timed by the engine, its store, and its errors.

mod support;

use std::time::Duration;

use tlslab_workflow::scan::{ScanRequest, Scanned, Timing};
use tlslab_workflow::{Control, ErrorKind, WorkflowError};

use support::*;

fn scan_request(lab: &Lab, name: &str) -> ScanRequest {
    ScanRequest {
        targets: vec![lab.address().to_string()],
        server_name: Some("localhost".into()),
        concurrency: 4,
        timeout: Duration::from_secs(5),
        ca: Some(lab.serving.root.clone()),
        timing: Some(Timing {
            handshakes: Some(3),
            delay: None,
        }),
        out: None,
        force: false,
        invocation: invocation(name),
    }
}

#[test]
fn a_scan_of_the_lab_server_finds_tls13_times_each_choice_and_is_stored() {
    let dir = scratch("scan");
    let lab = Lab::start();
    let mut request = scan_request(&lab, "scan");
    let store = dir.join("scans.db");
    request.out = Some(tlslab_store::Location::File(store.clone()));
    let mut seen = Vec::new();
    let outcome = tlslab_workflow::scan::scan(&request, &Control::default(), &mut |scanned| {
        seen.push(matches!(scanned, Scanned::Report(_)))
    })
    .unwrap();
    assert_eq!(seen, [true]);
    assert_eq!(outcome.kind(), None);
    let report = &outcome.reports[0];
    assert!(
        report
            .versions
            .iter()
            .any(|version| version.version == "TLS 1.3"),
        "{:?}",
        report.versions
    );
    assert_eq!(report.certificates.trusted, Some(true));
    assert_eq!(report.certificates.name_matches, Some(true));
    // The cost table: every timed row has its handshakes, none failed.
    let costs = report.timing.as_ref().unwrap();
    assert!(costs.error.is_none(), "{:?}", costs.error);
    assert_eq!(costs.handshakes_per_choice, 3);
    let timed: Vec<_> = costs
        .rows
        .iter()
        .filter(|row| row.not_timed.is_none())
        .collect();
    assert!(!timed.is_empty(), "{:?}", costs.rows);
    for row in timed {
        assert_eq!((row.handshakes, row.errors), (3, 0), "{row:?}");
        assert!(
            row.median_handshake_ms.is_some_and(|ms| ms > 0.0),
            "{row:?}"
        );
    }
    assert_eq!(count(&store, "SELECT COUNT(*) FROM scans"), 1);
}

#[test]
fn scan_errors_keep_their_kind_and_cause() {
    let dir = scratch("scan-errors");
    let lab = Lab::start();
    // A --ca that is not PEM: the user's, with the scanner's reason as its cause.
    let ca = dir.join("bad.pem");
    std::fs::write(&ca, "not a certificate\n").unwrap();
    let mut request = scan_request(&lab, "bad-ca");
    request.ca = Some(ca);
    let error =
        tlslab_workflow::scan::scan(&request, &Control::default(), &mut |_| {}).unwrap_err();
    assert!(
        matches!(error, WorkflowError::CertificateFile { .. }),
        "{error:?}"
    );
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert!(chain(&error).len() >= 2, "{:?}", chain(&error));
    // One target that does not answer among two: reported, the other scanned.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut request = scan_request(&lab, "two");
    request.targets.push(format!("127.0.0.1:{port}"));
    request.timing = None;
    let mut failed = 0;
    let outcome = tlslab_workflow::scan::scan(&request, &Control::default(), &mut |scanned| {
        if let Scanned::Failed(error) = scanned {
            assert_eq!(error.kind(), ErrorKind::Environment);
            failed += 1;
        }
    })
    .unwrap();
    assert_eq!((outcome.reports.len(), outcome.failed, failed), (1, 1, 1));
    assert_eq!(outcome.kind(), Some(ErrorKind::Environment));
    assert!(outcome.reports[0].timing.is_none());
}
