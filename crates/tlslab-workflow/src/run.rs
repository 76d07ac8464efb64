//! `run`: an experiment → its Configs → a plan → the engine → a results store → the run
//! summary → a verdict against `max_error_rate` and the thresholds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tlslab_backend::{KeyLogFile, KeyLogOutcome};
use tlslab_core::{Config, Experiment, Plan, RunEnd};
use tlslab_report::thresholds::Breach;
use tlslab_report::RunSummary;
use tlslab_store::{KeptHandle, Store, StoreError};

use crate::files::{self, Disposition};
use crate::{Control, ErrorKind, Invocation, Notice, WorkflowError};

/// What to run and where its results go.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The experiment (a file's, with flags on top: [`crate::experiment::build`]).
    pub experiment: Experiment,
    /// The experiment file it was read from: an input no output may be written over.
    pub experiment_file: Option<PathBuf>,
    /// The results store to create; [`crate::default_output`] when `None`.
    pub out: Option<PathBuf>,
    /// Where every client writes its handshakes' secrets, and the option that named it.
    pub key_log: Option<KeyLogRequest>,
    /// Where the run's own packets are recorded.
    pub capture: Option<PathBuf>,
    /// Whether to write the HTML report beside the store ([`report_path`]).
    pub report: bool,
    /// Whether an output may replace a file of another kind (never an input or a store).
    pub force: bool,
    /// What the summary compares (a phase or an event; the handshake when `None`).
    pub metric: Option<String>,
    /// The lab's certificate directory; the default one when `None`.
    pub pki_dir: Option<PathBuf>,
    /// Who runs it.
    pub invocation: Invocation,
}

impl RunRequest {
    /// `experiment` into the default store, nothing else asked for.
    pub fn new(experiment: Experiment, invocation: Invocation) -> RunRequest {
        RunRequest {
            experiment,
            experiment_file: None,
            out: None,
            key_log: None,
            capture: None,
            report: false,
            force: false,
            metric: None,
            pki_dir: None,
            invocation,
        }
    }
}

/// A key log to write, and the option (or variable) that named it, for messages.
#[derive(Debug, Clone)]
pub struct KeyLogRequest {
    /// The file, appended to.
    pub path: PathBuf,
    /// `--keylog` or `SSLKEYLOGFILE`.
    pub option: &'static str,
}

/// A finished run: its store, its summary, how it ended and what that means.
pub struct RunOutcome {
    /// The results store's path.
    pub path: PathBuf,
    /// The results store, open for reading.
    pub store: Store,
    /// The run summary.
    pub summary: RunSummary,
    /// How the engine ended the run.
    pub end: RunEnd,
    /// The run judged: interrupted, too many failures, a threshold broken, or passed.
    pub verdict: Verdict,
    /// A key log that could not be written whole.
    pub key_log_lost: Option<LostKeyLog>,
    /// The HTML report beside the store (when asked for), or why it could not be written
    /// (the samples are stored whatever becomes of it).
    pub report: Option<Result<PathBuf, WorkflowError>>,
}

impl RunOutcome {
    /// How the run ended, for an exit code: the verdict's kind, else the machine's when the
    /// key log lost lines (the samples are stored, the capture cannot be decrypted whole).
    pub fn kind(&self) -> Option<ErrorKind> {
        self.verdict
            .kind()
            .or(self.key_log_lost.as_ref().map(|_| ErrorKind::Environment))
    }
}

/// What a key log holds and lost, when writing it failed.
#[derive(Debug, Clone)]
pub struct LostKeyLog {
    /// The file.
    pub path: PathBuf,
    /// Its lines written and lost, and why writing stopped.
    pub outcome: KeyLogOutcome,
}

/// A completed run judged.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Completed, within the error rate, no threshold broken.
    Passed,
    /// Stopped by the caller before its plan was done.
    Interrupted {
        /// The attempts made before it stopped.
        attempted: u64,
    },
    /// More measured attempts failed than `max_error_rate` allows.
    Failures(Failures),
    /// A threshold was broken.
    Thresholds(Vec<Breach>),
}

impl Verdict {
    /// The kind of ending that is not a pass.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            Verdict::Passed => None,
            Verdict::Interrupted { .. } => Some(ErrorKind::Interrupted),
            Verdict::Failures(_) => Some(ErrorKind::Failures),
            Verdict::Thresholds(_) => Some(ErrorKind::Threshold),
        }
    }
}

/// Failed attempts above the allowed rate.
#[derive(Debug, Clone)]
pub struct Failures {
    /// Failed measured attempts.
    pub errors: i64,
    /// Measured attempts.
    pub attempted: i64,
    /// `errors / attempted`.
    pub rate: f64,
    /// The rate allowed (`max_error_rate`).
    pub allowed: f64,
    /// Each error class of each Config: (count, class, Config label).
    pub classes: Vec<(i64, String, String)>,
    /// The first failure said in the server's terms, when the summary could say it.
    pub diagnosis: Option<String>,
}

/// The HTML report's path for a run's `report`: beside the results file.
pub fn report_path(results: &Path) -> PathBuf {
    results.with_extension("html")
}

/// Runs `request`: checks every output, runs the engine into a new store, reads the run
/// summary and judges it. Stopping `control.stop` ends the run after the attempts in flight
/// ([`Verdict::Interrupted`]; the samples taken are stored).
pub fn run(request: &RunRequest, control: &Control) -> Result<RunOutcome, WorkflowError> {
    execute(request, control, None)
}

/// Reads from the run's store, on a connection of its own, while the run summary is read
/// (`load` reads its figures so).
pub(crate) type Alongside<'a> = &'a (dyn Fn(Result<Store, StoreError>) + Sync);

/// [`run`], with `alongside` given the store while the summary is read.
pub(crate) fn execute(
    request: &RunRequest,
    control: &Control,
    alongside: Option<Alongside<'_>>,
) -> Result<RunOutcome, WorkflowError> {
    crate::experiment::check_metric(request.metric.as_deref())?;
    let experiment = &request.experiment;
    let configs = experiment.configs()?;
    check_certificate_files(experiment)?;
    let seed = experiment.seed.unwrap_or_else(|| fastrand::u64(..));
    let plan = Plan::new(experiment, &configs, seed);
    let path = request.out.clone().unwrap_or_else(crate::default_output);
    let report = request.report.then(|| report_path(&path));
    if report.as_ref() == Some(&path) {
        return Err(WorkflowError::usage(
            format!(
                "--report would write its HTML over the results file {}",
                path.display()
            ),
            "give --out a name ending in .db",
        ));
    }
    let writes = claim_outputs(request, &path, report.as_deref())?;
    files::make_room(&path, writes.store)?;
    let key_log = open_key_log(request.key_log.as_ref(), writes.key_log, control)?;
    let (end, kept) = measure(request, control, (&configs, &plan, seed), &path, &key_log)?;
    let (store, summary) = summarize(&path, kept, request.metric.as_deref(), alongside)?;
    let report = request
        .report
        .then(|| write_report(&path, request.metric.as_deref(), request.force));
    let verdict = judge(experiment, &end, &store, &summary)?;
    Ok(RunOutcome {
        path,
        store,
        summary,
        end,
        verdict,
        key_log_lost: lost_key_log(key_log.as_deref()),
        report,
    })
}

/// `--ca`, `--client-cert` and `--client-key` of an external target, read before anything
/// is created, so a file that is not PEM is named with its cause.
fn check_certificate_files(experiment: &Experiment) -> Result<(), WorkflowError> {
    if experiment.target.is_none() {
        return Ok(());
    }
    if let Some(ca) = &experiment.ca {
        tlslab_pki::load_certificates(ca).map_err(|error| WorkflowError::CertificateFile {
            option: "--ca",
            path: ca.clone(),
            source: crate::CertificateFileError::Pki(error),
        })?;
    }
    if let (Some(certificate), Some(key)) = (&experiment.client_cert, &experiment.client_key) {
        tlslab_pki::load_client_credentials(certificate, key).map_err(|error| {
            WorkflowError::CertificateFile {
                option: "--client-cert",
                path: certificate.clone(),
                source: crate::CertificateFileError::Pki(error),
            }
        })?;
    }
    Ok(())
}

/// How the rule lets the run write its store and its key log (`None` when none is asked
/// for); the capture and the report are checked with them, before anything is written.
struct Writes {
    store: Disposition,
    key_log: Option<Disposition>,
}

fn claim_outputs(
    request: &RunRequest,
    store: &Path,
    report: Option<&Path>,
) -> Result<Writes, WorkflowError> {
    let mut outputs = vec![files::Output::new("--out", store, files::Kind::Results)];
    if let Some(key_log) = &request.key_log {
        outputs.push(files::Output::new(
            key_log.option,
            &key_log.path,
            files::Kind::KeyLog,
        ));
    }
    if let Some(path) = &request.capture {
        outputs.push(files::Output::new("--capture", path, files::Kind::Capture));
    }
    if let Some(path) = report {
        outputs.push(files::Output::new("--report", path, files::Kind::Report));
    }
    let experiment = &request.experiment;
    let inputs: Vec<&Path> = [
        &request.experiment_file,
        &experiment.ca,
        &experiment.client_cert,
        &experiment.client_key,
    ]
    .into_iter()
    .filter_map(|input| input.as_deref())
    .collect();
    let writes = files::claim_all(&outputs, &inputs, request.force)?;
    Ok(Writes {
        store: writes[0],
        key_log: request.key_log.as_ref().map(|_| writes[1]),
    })
}

fn open_key_log(
    request: Option<&KeyLogRequest>,
    write: Option<Disposition>,
    control: &Control,
) -> Result<Option<Arc<KeyLogFile>>, WorkflowError> {
    let (Some(request), Some(write)) = (request, write) else {
        return Ok(None);
    };
    let path = &request.path;
    files::make_room(path, write)?;
    let file = KeyLogFile::open(path).map_err(|error| {
        WorkflowError::environment(
            format!("cannot write the key log {}", path.display()),
            "give --keylog (or SSLKEYLOGFILE) a file in a directory you can write",
            Some(error),
        )
    })?;
    control.notice(Notice::KeyLog(path.clone()));
    Ok(Some(Arc::new(file)))
}

/// A key log that could not be written whole: what it holds and lost.
fn lost_key_log(file: Option<&KeyLogFile>) -> Option<LostKeyLog> {
    let file = file?;
    let outcome = file.outcome();
    outcome.failure.as_ref()?;
    Some(LostKeyLog {
        path: file.path().to_path_buf(),
        outcome,
    })
}

/// The engine's run of `configs` by `plan` into a new store at `path`; the values the
/// writer kept for the summaries.
fn measure(
    request: &RunRequest,
    control: &Control,
    (configs, plan, seed): (&[Config], &Plan, u64),
    path: &Path,
    key_log: &Option<Arc<KeyLogFile>>,
) -> Result<(RunEnd, KeptHandle), WorkflowError> {
    // The summaries read the values the writer kept rather than every row back (unless the
    // run plans more measured samples than they may take).
    let planned = plan
        .trials
        .iter()
        .filter(|trial| !trial.warmup)
        .fold(0u64, |sum, trial| sum.saturating_add(trial.handshakes));
    let created = Store::create(path).map_err(|source| WorkflowError::StoreCreate {
        path: path.to_path_buf(),
        source,
    })?;
    let (sink, kept) = created.into_sink_keeping(planned);
    let invocation = &request.invocation;
    let options = tlslab_engine::RunOptions {
        server_program: invocation.program.clone(),
        pki: crate::open_pki(request.pki_dir.as_deref())?,
        environment: invocation.environment(),
        command_line: invocation.command_line.clone(),
        seed,
        stop: control.stop.clone(),
        progress: control.progress.clone(),
        key_log: key_log.clone(),
        capture: request.capture.clone(),
    };
    let mut recorded = request.experiment.clone();
    recorded.seed = Some(seed);
    let sink = Box::new(sink.without_index());
    match tlslab_engine::run(&recorded, configs, plan, options, sink) {
        Ok(end) => Ok((end, kept)),
        Err(source) => {
            if let Some(lost) = lost_key_log(key_log.as_deref()) {
                control.notice(Notice::KeyLogLost(lost));
            }
            // The samples stored so far are read as fast as a finished run's.
            let _ = Store::build_index(path);
            Err(WorkflowError::Engine {
                source,
                results: Some(path.to_path_buf()),
            })
        }
    }
}

/// The store opened for reading and its run summary; the readers' index is built while the
/// summaries read the kept values, and `alongside` reads on a thread of its own.
fn summarize(
    path: &Path,
    kept: KeptHandle,
    metric: Option<&str>,
    alongside: Option<Alongside<'_>>,
) -> Result<(Store, RunSummary), WorkflowError> {
    let open = || Store::open(path).map(|store| store.with_kept(kept.get()));
    let store = match open() {
        Ok(store) => store,
        Err(error) => {
            let _ = Store::build_index(path);
            return Err(error.into());
        }
    };
    let summary = std::thread::scope(|scope| {
        let index = std::thread::Builder::new()
            .name("tlslab-index".into())
            .spawn_scoped(scope, || Store::build_index(path));
        if index.is_err() {
            let _ = Store::build_index(path);
        }
        if let Some(alongside) = alongside {
            // Without a thread (the process's limit), the caller reads it all itself.
            let _ = std::thread::Builder::new()
                .name("tlslab-summary".into())
                .spawn_scoped(scope, || alongside(open()));
        }
        RunSummary::from_store_on(&store, metric)
    })?;
    Ok((store, summary))
}

/// The HTML report beside the results file.
pub fn write_report(
    results: &Path,
    metric: Option<&str>,
    force: bool,
) -> Result<PathBuf, WorkflowError> {
    let output = report_path(results);
    files::claim(
        &files::Output::new("--report", &output, files::Kind::Report),
        &[results],
        force,
    )?;
    let store = Store::open(results)?;
    let data = tlslab_report::ReportData::from_store_on(&store, metric)?;
    files::write_whole(&output, tlslab_report::render_html(&data)?.as_bytes())?;
    Ok(output)
}

/// The verdict: interrupted, too many failures, a threshold broken, or passed.
fn judge(
    experiment: &Experiment,
    end: &RunEnd,
    store: &Store,
    summary: &RunSummary,
) -> Result<Verdict, WorkflowError> {
    if !end.complete {
        return Ok(Verdict::Interrupted {
            attempted: end.attempted,
        });
    }
    let rate = if end.attempted == 0 {
        0.0
    } else {
        summary.errors as f64 / summary.attempted.max(1) as f64
    };
    if rate > experiment.max_error_rate {
        let classes = summary
            .configs
            .iter()
            .flat_map(|config| {
                config
                    .errors
                    .iter()
                    .map(|(class, count)| (*count, class.clone(), config.label.clone()))
            })
            .collect();
        let diagnosis = summary
            .configs
            .iter()
            .find_map(|config| config.diagnoses.values().next().cloned());
        return Ok(Verdict::Failures(Failures {
            errors: summary.errors,
            attempted: summary.attempted,
            rate,
            allowed: experiment.max_error_rate,
            classes,
            diagnosis,
        }));
    }
    let thresholds: Vec<tlslab_core::threshold::Threshold> = experiment
        .thresholds
        .iter()
        .filter_map(|text| text.parse().ok())
        .collect();
    let breaches = tlslab_report::thresholds::check(store, summary, &thresholds)?;
    Ok(match breaches.is_empty() {
        true => Verdict::Passed,
        false => Verdict::Thresholds(breaches),
    })
}
