//! `scan`: what each server supports, Mozilla's verdict and a grade (tlslab-scan's), with
//! the cost of each choice timed by the engine ([`crate::scan_cost`]), optionally added to
//! a results store.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tlslab_scan::certificate::TrustAnchors;
use tlslab_scan::{Options, Report, Target};

use crate::files;
use crate::scan_cost::{time_choices, TimingOptions};
use crate::{CertificateFileError, Control, ErrorKind, Invocation, WorkflowError};

/// The most handshakes the cost table may ask per choice: it keeps each one's times in
/// memory until the table is made.
pub const MAX_TIMING_HANDSHAKES: u64 = 100_000;

/// The servers to scan and how.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    /// `HOST` or `HOST:PORT` each (port 443 unless given).
    pub targets: Vec<String>,
    /// The name sent as SNI and checked against the certificate (the host when `None`).
    pub server_name: Option<String>,
    /// Connections open to one target at once.
    pub concurrency: usize,
    /// How long one probe waits to connect, and for each answer.
    pub timeout: Duration,
    /// Judge the chain by these certificates (PEM) rather than the system's roots.
    pub ca: Option<PathBuf>,
    /// The cost table's timing; no table when `None`.
    pub timing: Option<Timing>,
    /// A results store each scan is added to: a file (created if missing), or a PostgreSQL
    /// database.
    pub out: Option<tlslab_store::Location>,
    /// Whether `out` may replace a file of another kind.
    pub force: bool,
    /// Who runs it (stored with each scan).
    pub invocation: Invocation,
}

/// How the cost table times each choice.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    /// Measured handshakes per choice; fewer when there are many choices unless given.
    pub handshakes: Option<u64>,
    /// The pause between two timed handshakes.
    pub delay: Option<Duration>,
}

/// One target scanned, or why it could not be.
#[derive(Debug)]
pub enum Scanned {
    /// Its report (check [`Report::malformed_answers`]: answers that did not parse leave it
    /// ungraded).
    Report(Box<Report>),
    /// It could not be scanned (another target still is).
    Failed(WorkflowError),
}

/// Every target's scan.
#[derive(Debug, Default)]
pub struct ScanOutcome {
    /// The reports, in the order of the targets scanned.
    pub reports: Vec<Report>,
    /// Targets that could not be scanned.
    pub failed: usize,
}

impl ScanOutcome {
    /// How the scan ended, for an exit code: a target that could not be scanned is the
    /// environment's; answers that did not parse are failures.
    pub fn kind(&self) -> Option<ErrorKind> {
        if self.failed > 0 {
            Some(ErrorKind::Environment)
        } else if self
            .reports
            .iter()
            .any(|report| report.malformed_answers > 0)
        {
            Some(ErrorKind::Failures)
        } else {
            None
        }
    }
}

/// Scans each target of `request` in turn, calling `each` with each as it is done (a
/// target that cannot be scanned does not stop the others, unless it is the only one: then
/// it is the error). Stopping `control.stop` skips the targets not yet begun.
pub fn scan(
    request: &ScanRequest,
    control: &Control,
    each: &mut dyn FnMut(&Scanned),
) -> Result<ScanOutcome, WorkflowError> {
    check(request)?;
    // Checked before the first connection: a scan is not made to be thrown away.
    if let Some(location) = &request.out {
        if let Some(path) = location.path() {
            let output = files::Output::new("--out", path, files::Kind::Scans);
            let inputs: Vec<&Path> = request.ca.as_deref().into_iter().collect();
            let write = files::claim(&output, &inputs, request.force)?;
            files::make_room(path, write)?;
        }
        tlslab_store::check_scan_store(location).map_err(|source| WorkflowError::StoreCreate {
            path: PathBuf::from(location.to_string()),
            source,
        })?;
    }
    // Every target is checked before the first connection.
    let targets = request
        .targets
        .iter()
        .map(|text| Target::parse(text))
        .collect::<Result<Vec<_>, _>>()?;
    let trust_anchors = request
        .ca
        .as_deref()
        .map(|path| {
            TrustAnchors::load(path).map_err(|error| WorkflowError::CertificateFile {
                option: "--ca",
                path: path.to_path_buf(),
                source: CertificateFileError::Scan(error),
            })
        })
        .transpose()?;
    let options = Options {
        server_name: request.server_name.clone(),
        concurrency: request.concurrency,
        timeout: request.timeout,
        trust_anchors,
    };
    let mut outcome = ScanOutcome::default();
    for target in &targets {
        if control.stop.is_requested() {
            break;
        }
        match scan_one(request, target, &options) {
            Ok(report) => {
                let scanned = Scanned::Report(Box::new(report));
                each(&scanned);
                if let Scanned::Report(report) = scanned {
                    outcome.reports.push(*report);
                }
            }
            Err(error) if targets.len() > 1 => {
                outcome.failed += 1;
                each(&Scanned::Failed(error));
            }
            Err(error) => return Err(error),
        }
    }
    Ok(outcome)
}

/// The request's limits, checked before anything is done.
fn check(request: &ScanRequest) -> Result<(), WorkflowError> {
    if request.concurrency == 0 {
        return Err(WorkflowError::usage(
            "--concurrency 0: no probe could run",
            "give 1 or more (4 is polite to one server)",
        ));
    }
    check_timing(request.timing)
}

/// The cost table's number of handshakes, checked before anything is done.
pub fn check_timing(timing: Option<Timing>) -> Result<(), WorkflowError> {
    let Some(timing) = timing else {
        return Ok(());
    };
    match timing.handshakes {
        Some(handshakes) if handshakes > MAX_TIMING_HANDSHAKES => Err(WorkflowError::usage(
            format!(
                "--timing-handshakes {handshakes}: more than {MAX_TIMING_HANDSHAKES} per choice"
            ),
            "the cost table is a short timed run, its samples kept in memory; for a long one, \
             run `tlslab run --target HOST:PORT` with the choice's --tls, --suite and --group",
        )),
        Some(0) => Err(WorkflowError::usage(
            "--timing-handshakes 0: the cost table would have no figures",
            "give 1 or more (20 is the default), or --no-timing to skip the table",
        )),
        _ => Ok(()),
    }
}

/// One target: scanned, timed, and stored when asked.
fn scan_one(
    request: &ScanRequest,
    target: &Target,
    options: &Options,
) -> Result<Report, WorkflowError> {
    let started_unix_ns = crate::now_unix_ns();
    let mut report = tlslab_scan::scan(target, options)?;
    if let Some(timing) = request.timing {
        let timing = TimingOptions {
            handshakes: timing.handshakes,
            delay: timing.delay,
            timeout: request.timeout,
            ca: request.ca.clone(),
            invocation: request.invocation.clone(),
        };
        report.timing = Some(time_choices(&report, target, &timing));
    }
    if let Some(location) = &request.out {
        store(location, &report, started_unix_ns, &request.invocation)?;
    }
    Ok(report)
}

/// Adds `report` to the results store at `location`.
fn store(
    location: &tlslab_store::Location,
    report: &Report,
    started_unix_ns: u64,
    invocation: &Invocation,
) -> Result<(), WorkflowError> {
    let json = serde_json::to_value(report).map_err(|error| {
        WorkflowError::environment(format!("cannot write JSON: {error}"), "", None)
    })?;
    let scan = tlslab_store::NewScan {
        scanned_at_unix_ns: started_unix_ns,
        tool_version: invocation.version.clone(),
        command_line: invocation.stored_command_line(),
        target: report.target.clone(),
        address: report.address.clone(),
        server_name: report.server_name.clone(),
        grade: report.grade.letter.to_string(),
        connections: report.connections + report.timing.as_ref().map_or(0, |t| t.connections),
        report: json,
    };
    tlslab_store::add_scan_at(location, &scan)?;
    Ok(())
}
