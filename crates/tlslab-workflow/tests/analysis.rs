//! The workflows that read a results store or sample files (compare, plan, report, export)
//! called as a library, on stores the run workflow makes against a lab server served in
//! this process. No tlslab binary is started.

mod support;

use std::path::{Path, PathBuf};

use tlslab_workflow::compare::{CompareOutcome, CompareRequest, Gate, Verdict};
use tlslab_workflow::export::{Destination, ExportFormat, ExportRequest};
use tlslab_workflow::plan::{Goal, PlanRequest};
use tlslab_workflow::report::{ReportFormat, ReportRequest};
use tlslab_workflow::results::Location;
use tlslab_workflow::run::RunRequest;
use tlslab_workflow::{Control, ErrorKind, Notice};

use support::*;

/// A store of `handshakes` per Config, TLS 1.2 and 1.3, made by the run workflow.
fn two_config_store(dir: &Path, handshakes: u64) -> PathBuf {
    let lab = Lab::start();
    let mut experiment = lab.experiment(handshakes);
    experiment.tls = vec![
        tlslab_core::TlsVersion::Tls12,
        tlslab_core::TlsVersion::Tls13,
    ];
    let mut request = RunRequest::new(experiment, invocation("analysis"));
    let store = dir.join("pilot.db");
    request.store = Some(Location::File(store.clone()));
    let outcome = tlslab_workflow::run::run(&request, &Control::default()).unwrap();
    assert_eq!(outcome.summary.errors, 0);
    lab.stop().unwrap();
    store
}

/// Writes one number per line.
fn sample_file(path: &Path, values: impl Iterator<Item = u32>) -> PathBuf {
    let text: String = values.map(|value| format!("{value}\n")).collect();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

#[test]
fn compare_judges_a_stores_configs_and_compares_them_by_a_dimension() {
    let dir = scratch("compare-store");
    let store = two_config_store(&dir, 30);
    let mut request = CompareRequest::new(vec![store.clone()]);
    request.fail_on = Some(Gate::Different);
    request.resamples = 200;
    let CompareOutcome::Comparisons(compared) =
        tlslab_workflow::compare::compare(&request, &Control::default()).unwrap()
    else {
        panic!("a comparison of Configs, not a factorial");
    };
    assert_eq!(compared.unit, "ms");
    assert_eq!(compared.set.metric, "handshake");
    assert_eq!(compared.set.comparisons.len(), 1);
    assert_eq!(compared.names.as_ref().unwrap().shown.len(), 2);
    // The gate catches exactly the comparisons the verdict rule calls different.
    let detected = compared
        .set
        .comparisons
        .iter()
        .filter(|compared| compared.comparison.detects_difference(request.alpha))
        .count();
    match &compared.verdict {
        Verdict::Passed => assert_eq!(detected, 0),
        Verdict::Caught { caught, of, .. } => {
            assert_eq!((caught.len(), *of), (detected, 1));
            assert_eq!(compared.verdict.kind(), Some(ErrorKind::Threshold));
        }
    }

    request.by = Some("tls".into());
    let outcome = tlslab_workflow::compare::compare(&request, &Control::default()).unwrap();
    assert!(
        matches!(outcome, CompareOutcome::Factorial(_)),
        "{outcome:?}"
    );

    // A dimension compares the Configs of one store, never two files.
    request.inputs = vec![store.clone(), store];
    let error = tlslab_workflow::compare::compare(&request, &Control::default()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert!(error.to_string().contains("one results store"), "{error}");
}

#[test]
fn compare_gates_two_sample_files_either_way_round() {
    let dir = scratch("compare-files");
    let fast = sample_file(&dir.join("fast.txt"), 100..160);
    let slow = sample_file(&dir.join("slow.txt"), 200..260);
    let mut request = CompareRequest::new(vec![fast.clone(), slow.clone()]);
    request.fail_on = Some(Gate::Slower);
    request.resamples = 200;
    let compare = |request: &CompareRequest| match tlslab_workflow::compare::compare(
        request,
        &Control::default(),
    ) {
        Ok(CompareOutcome::Comparisons(compared)) => Ok(compared),
        Ok(other) => panic!("{other:?}"),
        Err(error) => Err(error),
    };
    let compared = compare(&request).unwrap();
    assert_eq!((compared.unit, compared.set.metric.as_str()), ("", "value"));
    assert!(compared.names.is_none());
    let Verdict::Caught { gate, caught, of } = &compared.verdict else {
        panic!("{:?}", compared.verdict);
    };
    assert_eq!((*gate, caught.len(), *of), (Gate::Slower, 1, 1));
    assert_eq!(
        (caught[0].baseline.as_str(), caught[0].other.as_str()),
        ("fast.txt", "slow.txt")
    );

    // The slow file as the baseline, by its file name: the other is faster, not slower.
    request.baseline = Some("slow.txt".into());
    assert!(matches!(
        compare(&request).unwrap().verdict,
        Verdict::Passed
    ));
    request.fail_on = Some(Gate::Faster);
    assert_eq!(
        compare(&request).unwrap().verdict.kind(),
        Some(ErrorKind::Threshold)
    );

    // A baseline that is neither file is refused, not ignored.
    request.baseline = Some("neither.txt".into());
    let error = compare(&request).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert!(
        error.to_string().contains("is neither sample file"),
        "{error}"
    );

    // A file of one number is the user's to fix.
    let one = sample_file(&dir.join("one.txt"), 0..1);
    let error = compare(&CompareRequest::new(vec![one, slow])).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert!(error.to_string().contains("holds only 1 value"), "{error}");
}

#[test]
fn plan_sizes_every_config_from_a_pilot_run() {
    let dir = scratch("plan");
    let store = two_config_store(&dir, 20);
    let goal = Goal::parse("5%", "80%", "0.05").unwrap();
    assert_eq!(
        goal,
        Goal {
            relative: 0.05,
            power: 0.8,
            alpha: 0.05
        }
    );
    let request = PlanRequest {
        store: store.into(),
        metric: "handshake".into(),
        goal,
    };
    let plan = tlslab_workflow::plan::plan(&request, &Control::default()).unwrap();
    assert_eq!(plan.configs.len(), 2);
    for config in &plan.configs {
        assert_eq!(config.pilot_samples, 20, "{config:?}");
        assert!(
            config.sigma_log.is_some_and(|sigma| sigma > 0.0),
            "{config:?}"
        );
        assert!(config.handshakes.is_some_and(|n| n >= 2), "{config:?}");
    }
    // One -n for every Config: the most any needs.
    let most = plan
        .configs
        .iter()
        .filter_map(|config| config.handshakes)
        .max();
    assert_eq!(plan.handshakes, most);
    assert_eq!(plan.unrated == 0, plan.seconds.is_some(), "{plan:?}");

    // A goal that is not a share is refused before the store is read.
    let error = Goal::parse("150%", "80%", "0.05").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert_eq!(
        error.to_string(),
        "--detect 150%: not a share between 0 and 1"
    );
    let mut request = request;
    request.goal.power = 1.0;
    let error = tlslab_workflow::plan::plan(&request, &Control::default()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
}

#[test]
fn report_writes_html_beside_the_store_and_markdown_with_charts() {
    let dir = scratch("report");
    let store = two_config_store(&dir, 10);
    let outcome =
        tlslab_workflow::report::report(&ReportRequest::new(&store), &Control::default()).unwrap();
    assert_eq!(outcome.output, dir.join("pilot.html"));
    assert_eq!(outcome.format, ReportFormat::Html);
    assert!(!outcome.scans_only && outcome.charts.is_empty());
    let html = std::fs::read_to_string(&outcome.output).unwrap();
    assert!(html.contains("<html"), "{}", &html[..html.len().min(200)]);

    // Markdown by the output's extension, with every chart as a PNG it links to.
    let mut request = ReportRequest::new(&store);
    request.output = Some(dir.join("pilot.md"));
    request.png = Some(dir.join("charts"));
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let heard = said.clone();
    let control = Control {
        notices: Some(std::sync::Arc::new(move |notice: &Notice| {
            if let Notice::ChartsWritten { count, .. } = notice {
                heard.lock().unwrap().push(*count);
            }
        })),
        ..Control::default()
    };
    let outcome = tlslab_workflow::report::report(&request, &control).unwrap();
    assert_eq!(outcome.format, ReportFormat::Markdown);
    assert!(!outcome.charts.is_empty());
    assert!(outcome.charts.iter().all(|chart| chart.exists()));
    assert_eq!(*said.lock().unwrap(), vec![outcome.charts.len()]);
    let markdown = std::fs::read_to_string(dir.join("pilot.md")).unwrap();
    assert!(markdown.contains("](charts/"), "{markdown}");

    // The report never replaces the store it reads.
    request.output = Some(store.clone());
    request.png = None;
    let error = tlslab_workflow::report::report(&request, &Control::default()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert_eq!(count(&store, "SELECT COUNT(*) FROM configs"), 2);
}

#[test]
fn export_writes_every_sample_as_csv_to_a_file_or_a_writer() {
    let dir = scratch("export");
    let store = two_config_store(&dir, 10);
    let samples = count(&store, "SELECT COUNT(*) FROM samples");
    let csv = dir.join("pilot.csv");
    let request = ExportRequest::new(&store);
    tlslab_workflow::export::export(
        &request,
        Destination::File(csv.clone()),
        &Control::default(),
    )
    .unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.split(',').count() > 3, "{header}");
    assert_eq!(lines.count() as i64, samples);
    // The temporary file it was written into is renamed onto it, none left beside it.
    let beside: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !beside.iter().any(|name| name.starts_with(".tlslab-")),
        "{beside:?}"
    );

    // The same rows into the caller's writer, as JSON Lines.
    let mut written = Vec::new();
    let mut request = request;
    request.format = ExportFormat::JsonLines;
    tlslab_workflow::export::export(
        &request,
        Destination::Writer(&mut written),
        &Control::default(),
    )
    .unwrap();
    let written = String::from_utf8(written).unwrap();
    assert_eq!(written.lines().count() as i64, samples);
    assert!(written
        .lines()
        .all(|line| serde_json::from_str::<serde_json::Value>(line).is_ok()));

    // Never over the store it reads.
    let error = tlslab_workflow::export::export(
        &request,
        Destination::File(store.clone()),
        &Control::default(),
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert_eq!(count(&store, "SELECT COUNT(*) FROM samples"), samples);
}

#[test]
fn pki_makes_the_labs_chains_and_pins_a_certificate_file() {
    use tlslab_workflow::pki;
    let dir = scratch("pki");
    let lab = tlslab_workflow::open_pki(Some(&pki_dir())).unwrap();
    let profile = pki::profile("ecdsa-p256").unwrap();
    let chain = pki::chain(&lab, profile, 2).unwrap();
    assert!(chain.chain_pem.exists() && chain.key_pem.exists() && chain.root_pem.exists());
    let client = pki::client_certificate(&lab, profile).unwrap();
    assert!(client.certificate_pem.exists() && client.key_pem.exists());
    let pin = pki::pin_of(&chain.root_pem).unwrap();
    assert!(pin.starts_with("sha256//") && pin.len() > 40, "{pin}");

    // Each mistake is the user's, said with what to give instead.
    let error = pki::profile("ecdsa-p999").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert_eq!(error.hint(), "for example --cert ecdsa-p256");
    // The PKI crate's message and hint, each once (its error's text carries a hint line too).
    let error = pki::chain(&lab, profile, 9).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert_eq!(error.to_string(), "chain depth 9 is out of range");
    assert!(
        error.hint().starts_with("use a depth from 1 to 5"),
        "{}",
        error.hint()
    );
    let not_pem = dir.join("not.pem");
    std::fs::write(&not_pem, "no certificate here\n").unwrap();
    // Named by its option, the PKI crate's reading as the cause, its hint for the file.
    let error = pki::pin_of(&not_pem).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert_eq!(
        error.to_string(),
        format!("cannot use --pin-of {}", not_pem.display())
    );
    let cause = std::error::Error::source(&error).map(ToString::to_string);
    assert!(
        cause
            .as_deref()
            .is_some_and(|cause| cause.ends_with("is not PEM")),
        "{cause:?}"
    );
    assert!(
        error.hint().contains("BEGIN CERTIFICATE"),
        "{}",
        error.hint()
    );
}

#[test]
fn store_lists_a_files_run_and_copies_it_into_a_new_file_only() {
    use tlslab_workflow::store::{RunCopy, StoreCopyRequest, StoreListRequest};
    let dir = scratch("store-copy");
    let store = two_config_store(&dir, 10);
    let listed = tlslab_workflow::store::list(
        &StoreListRequest {
            store: Location::File(store.clone()),
        },
        &Control::default(),
    )
    .unwrap();
    // A file holds one run: both Configs' handshakes and warm-ups, complete.
    let stored = count(&store, "SELECT COUNT(*) FROM samples");
    assert_eq!(listed.runs.len(), 1);
    let run = &listed.runs[0];
    assert_eq!((run.id, run.complete), (1, true));
    assert_eq!(run.samples as i64, stored);

    let copy = dir.join("copy.db");
    let request = StoreCopyRequest {
        from: Location::File(store.clone()),
        to: Location::File(copy.clone()),
        run: None,
    };
    let mut progress = 0;
    let outcome = tlslab_workflow::store::copy(&request, &Control::default(), &mut |samples| {
        progress = samples
    })
    .unwrap();
    assert!(
        matches!(
            outcome.copied.runs[..],
            [RunCopy::Copied { from: 1, samples, .. }] if samples as i64 == stored
        ),
        "{:?}",
        outcome.copied
    );
    assert_eq!(progress as i64, stored);
    assert_eq!(count(&copy, "SELECT COUNT(*) FROM samples"), stored);
    // A copy never goes into an existing file: the user's mistake, the file untouched.
    let before = std::fs::read(&copy).unwrap();
    let again =
        tlslab_workflow::store::copy(&request, &Control::default(), &mut |_| {}).unwrap_err();
    assert_eq!(again.kind(), ErrorKind::Usage);
    assert_eq!(std::fs::read(&copy).unwrap(), before);
}
