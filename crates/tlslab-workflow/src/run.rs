//! `run`: an experiment → its Configs → a plan → the engine → a results store → the run
//! summary → a verdict against `max_error_rate` and the thresholds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tlslab_backend::{KeyLogFile, KeyLogOutcome};
use tlslab_core::{Config, Experiment, Plan, RunEnd, Sink};
use tlslab_report::thresholds::Breach;
use tlslab_report::RunSummary;
use tlslab_store::{KeptHandle, Location, NewRun, Store, StoreError};

use crate::files::{self, Disposition};
use crate::results::{self, Results};
use crate::{Control, ErrorKind, Invocation, Notice, WorkflowError};

/// What to run and where its results go.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The experiment (a file's, with flags on top: [`crate::experiment::build`]).
    pub experiment: Experiment,
    /// The experiment file it was read from: an input no output may be written over.
    pub experiment_file: Option<PathBuf>,
    /// Where the results go: a new file, or a new run in a PostgreSQL database;
    /// [`crate::default_output`] when `None`.
    pub store: Option<Location>,
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
            store: None,
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
    /// Where its results went: the file, or the database and the run's number.
    pub results: Results,
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
    /// A distributed run's agents, each with what it did (none for a run of one process).
    pub agents: Vec<tlslab_store::postgres::agents::AgentRow>,
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

/// The HTML report's path for a run's `report`: beside the results file, or named by the
/// database and the run ([`Results::beside`]).
pub fn report_path(results: &Results) -> PathBuf {
    results.beside("html")
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
    let prepared = prepare(request, control)?;
    let key_log = open_key_log(request.key_log.as_ref(), prepared.key_log, control)?;
    // A file is made once every other output is open, so a refused one leaves none behind.
    let (created, results) = match prepared.created {
        Some(created) => created,
        None => results::create(&prepared.location, control)?,
    };
    let measured = measure(
        request,
        control,
        (&configs, &plan, seed),
        (created, &results),
        &key_log,
    );
    results.say_writer_notices(control);
    let (end, kept) = measured?;
    let (store, summary) = summarize(&results, kept, request.metric.as_deref(), alongside)?;
    let report = prepared
        .report
        .map(|output| write_report(&results, &output, request.metric.as_deref(), request.force));
    let verdict = judge(experiment, &end, &store, &summary)?;
    Ok(RunOutcome {
        results,
        store,
        summary,
        end,
        verdict,
        key_log_lost: lost_key_log(key_log.as_deref()),
        report,
        agents: Vec::new(),
    })
}

/// Where the run writes, checked before anything is: its store (a database is reached and
/// its new run numbered now, a file is made once the key log is open), its report and its
/// key log's disposition.
struct Prepared {
    location: Location,
    created: Option<(NewRun, Results)>,
    report: Option<PathBuf>,
    key_log: Option<Disposition>,
}

fn prepare(request: &RunRequest, control: &Control) -> Result<Prepared, WorkflowError> {
    let location = request
        .store
        .clone()
        .unwrap_or_else(|| Location::File(crate::default_output()));
    let Location::File(path) = &location else {
        // The report beside a database's run is named by the run's number.
        let (created, results) = results::create(&location, control)?;
        let report = request.report.then(|| report_path(&results));
        let writes = claim_outputs(request, None, report.as_deref())?;
        return Ok(Prepared {
            location,
            created: Some((created, results)),
            report,
            key_log: writes.key_log,
        });
    };
    let report = request.report.then(|| report_path(&Results::file(path)));
    if report.as_ref() == Some(path) {
        return Err(WorkflowError::usage(
            format!(
                "--report would write its HTML over the results file {}",
                path.display()
            ),
            "give --out a name ending in .db",
        ));
    }
    let writes = claim_outputs(request, Some(path), report.as_deref())?;
    if let Some(write) = writes.store {
        files::make_room(path, write)?;
    }
    Ok(Prepared {
        location,
        created: None,
        report,
        key_log: writes.key_log,
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

/// How the rule lets the run write its store file (`None` for a database) and its key log
/// (`None` when none is asked for); the capture and the report are checked with them, before
/// anything is written.
struct Writes {
    store: Option<Disposition>,
    key_log: Option<Disposition>,
}

fn claim_outputs(
    request: &RunRequest,
    store: Option<&Path>,
    report: Option<&Path>,
) -> Result<Writes, WorkflowError> {
    let mut outputs: Vec<files::Output<'_>> = store
        .map(|store| files::Output::new("--out", store, files::Kind::Results))
        .into_iter()
        .collect();
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
    let key_log_at = usize::from(store.is_some());
    Ok(Writes {
        store: store.map(|_| writes[0]),
        key_log: request.key_log.as_ref().map(|_| writes[key_log_at]),
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

/// The engine's run of `configs` by `plan` into the new store `created` (at `results`);
/// the values the writer kept for the summaries (a database's run keeps none: its summaries
/// read the database).
fn measure(
    request: &RunRequest,
    control: &Control,
    (configs, plan, seed): (&[Config], &Plan, u64),
    (created, results): (NewRun, &Results),
    key_log: &Option<Arc<KeyLogFile>>,
) -> Result<(RunEnd, KeptHandle), WorkflowError> {
    // The summaries read the values the writer kept rather than every row back (unless the
    // run plans more measured samples than they may take).
    let planned = plan
        .trials
        .iter()
        .filter(|trial| !trial.warmup)
        .fold(0u64, |sum, trial| sum.saturating_add(trial.handshakes));
    let (sink, kept): (Box<dyn Sink>, KeptHandle) = match created {
        NewRun::File(store) => {
            let (sink, kept) = store.into_sink_keeping(planned);
            (Box::new(sink.without_index()), kept)
        }
        NewRun::Database(sink) => (sink, KeptHandle::default()),
    };
    let invocation = &request.invocation;
    let options = tlslab_engine::RunOptions {
        server_program: invocation.program.clone(),
        pki: crate::open_pki(request.pki_dir.as_deref())?,
        environment: invocation.environment(),
        command_line: invocation.stored_command_line(),
        seed,
        stop: control.stop.clone(),
        progress: control.progress.clone(),
        key_log: key_log.clone(),
        capture: request.capture.clone(),
        trials: None,
    };
    let mut recorded = request.experiment.clone();
    recorded.seed = Some(seed);
    match tlslab_engine::run(&recorded, configs, plan, options, sink) {
        Ok(end) => Ok((end, kept)),
        Err(source) => {
            if let Some(lost) = lost_key_log(key_log.as_deref()) {
                control.notice(Notice::KeyLogLost(lost));
            }
            // The samples stored so far are read as fast as a finished run's.
            if let Some(path) = results.path() {
                let _ = Store::build_index(path);
            }
            Err(WorkflowError::Engine {
                source,
                results: Some(PathBuf::from(results.to_string())),
            })
        }
    }
}

/// The store opened for reading and its run summary. A file is opened with the kept values,
/// and its readers' index is built while the summaries read them; a database's run is read
/// back from the database. `alongside` reads on a connection and a thread of its own.
pub(crate) fn summarize(
    results: &Results,
    kept: KeptHandle,
    metric: Option<&str>,
    alongside: Option<Alongside<'_>>,
) -> Result<(Store, RunSummary), WorkflowError> {
    let path = results.path();
    let open = || match path {
        Some(path) => Store::open(path).map(|store| store.with_kept(kept.get())),
        None => Store::open_location(&results.location, results.run),
    };
    let build_index = || path.map(Store::build_index);
    let store = match open() {
        Ok(store) => store,
        Err(error) => {
            let _ = build_index();
            return Err(error.into());
        }
    };
    let mut summary = std::thread::scope(|scope| {
        if path.is_some() {
            let index = std::thread::Builder::new()
                .name("tlslab-index".into())
                .spawn_scoped(scope, build_index);
            if index.is_err() {
                let _ = build_index();
            }
        }
        if let Some(alongside) = alongside {
            // Without a thread (the process's limit), the caller reads it all itself.
            let _ = std::thread::Builder::new()
                .name("tlslab-summary".into())
                .spawn_scoped(scope, || alongside(open()));
        }
        RunSummary::from_store_on(&store, metric)
    })?;
    // A database's run is named with its number: the database holds many.
    summary.store = results.to_string();
    Ok((store, summary))
}

/// The HTML report of the run at `results`, written to `output`.
pub fn write_report(
    results: &Results,
    output: &Path,
    metric: Option<&str>,
    force: bool,
) -> Result<PathBuf, WorkflowError> {
    let inputs: Vec<&Path> = results.path().into_iter().collect();
    files::claim(
        &files::Output::new("--report", output, files::Kind::Report),
        &inputs,
        force,
    )?;
    let store = results.open(&Control::default())?;
    let mut data = tlslab_report::ReportData::from_store_on(&store, metric)?;
    data.summary.store = results.to_string();
    files::write_whole(output, tlslab_report::render_html(&data)?.as_bytes())?;
    Ok(output.to_path_buf())
}

/// The verdict: interrupted, too many failures, a threshold broken, or passed.
pub(crate) fn judge(
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
