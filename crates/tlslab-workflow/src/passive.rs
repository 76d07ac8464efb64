//! What `pcap` and `capture` share: the key log and filter read before anything is
//! created, a store begun for a capture, and its end.

use std::path::{Path, PathBuf};

use tlslab_capture::filter::Filter;
use tlslab_capture::keys::KeyLog;
use tlslab_capture::Report;
use tlslab_core::{RunEnd, RunInfo, Sink, SinkError, Source};
use tlslab_store::Location;
use tlslab_telemetry::InfluxReport;

use crate::results::{self, Results};
use crate::{Control, ErrorKind, Invocation, WorkflowError};

/// Handshakes read from packets into a store.
#[derive(Debug)]
pub struct PassiveOutcome {
    /// Where the handshakes went: the file, or the database and the run's number.
    pub results: Results,
    /// What reading found and skipped.
    pub report: Report,
    /// What InfluxDB took, when handshakes were sent to it.
    pub influx: Option<InfluxReport>,
    /// Whether the caller's stop token ended the reading before the captures' end (a live
    /// capture ends so; it is then not an interruption).
    pub interrupted: bool,
}

impl PassiveOutcome {
    /// How the reading ended, for an exit code: interrupted, or (`None`) read to the end.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.interrupted.then_some(ErrorKind::Interrupted)
    }

    /// The run summary of the store the reading wrote: what its handshakes measured.
    pub fn summary(&self) -> Result<tlslab_report::RunSummary, WorkflowError> {
        let store = self.results.open(&Control::default())?;
        let mut summary = tlslab_report::RunSummary::from_store(&store)?;
        summary.store = self.results.to_string();
        Ok(summary)
    }
}

/// A capture error of the user's input (a file that does not parse, a key log, a filter).
pub(crate) fn usage(source: tlslab_capture::CaptureError) -> WorkflowError {
    WorkflowError::Capture {
        source,
        usage: true,
        results: None,
    }
}

/// A capture error of the machine (no right to capture, a disk full).
pub(crate) fn environment(
    source: tlslab_capture::CaptureError,
    results: Option<&Results>,
) -> WorkflowError {
    WorkflowError::Capture {
        source,
        usage: false,
        results: results.map(|results| PathBuf::from(results.to_string())),
    }
}

/// The key log at `path`, read before anything is created.
pub(crate) fn keys(path: Option<&Path>) -> Result<Option<KeyLog>, WorkflowError> {
    path.map(|path| KeyLog::read(path).map_err(usage))
        .transpose()
}

/// The filter expression, compiled (and so checked) before anything is created.
pub(crate) fn filter(expression: Option<&str>) -> Result<Option<Filter>, WorkflowError> {
    expression
        .map(|expression| Filter::new(expression).map_err(usage))
        .transpose()
}

/// Where a capture writes: a new run (a file, or a new run in a database), or a run of a
/// database it joins (`--run`) as one more capture point.
pub(crate) struct Destination<'a> {
    pub location: &'a Location,
    /// A database's run to join as one more capture point.
    pub join: Option<i64>,
}

/// The store begun, where it is, and how the analyser numbers and times what it stores.
pub(crate) struct Begun {
    pub sink: Box<dyn Sink>,
    pub results: Results,
    /// The first Config's number: its writer's block in a joined run, else 0.
    pub first_config: usize,
    /// When the run started (nanoseconds since the Unix epoch): the Samples' times count from
    /// it.
    pub started_at_unix_ns: u64,
}

/// A new store at `destination` (a file, or a new run in a database), or a run joined, its
/// run begun for `source`.
pub(crate) fn begin(
    destination: Destination<'_>,
    source: Source,
    invocation: &Invocation,
    control: &Control,
) -> Result<Begun, WorkflowError> {
    let (created, results) = match destination.join {
        Some(run) => results::join(destination.location, run, source.kind(), control)?,
        None => results::create(destination.location, control)?,
    };
    let joined = created.joined();
    let started_at_unix_ns = joined.map_or_else(crate::now_unix_ns, |joined| {
        joined.started_at_unix_ns.max(0) as u64
    });
    let first_config = joined.map_or(0, |joined| {
        joined.writer.max(0) as usize * tlslab_store::CONFIG_BLOCK
    });
    let mut sink = created.into_sink();
    let mut environment = invocation.environment();
    environment.network = "capture".into();
    // A capture's times are the packets'; no client of tlslab's ran.
    environment.wire_clock = None;
    sink.begin(&RunInfo {
        source,
        experiment: None,
        configs: Vec::new(),
        plan: None,
        environment,
        command_line: invocation.stored_command_line(),
        started_at_unix_ns,
    })
    .map_err(WorkflowError::Sink)?;
    Ok(Begun {
        sink,
        results,
        first_config,
        started_at_unix_ns,
    })
}

/// How reading ended.
pub(crate) enum Ending {
    Complete,
    Interrupted,
    Failed(String),
}

/// Writes the run's end; the analysis' report, or why writing failed.
pub(crate) fn end(
    mut sink: impl Sink,
    report: Result<Report, SinkError>,
    ending: Ending,
) -> Result<Report, WorkflowError> {
    let reason = match (&report, ending) {
        (Err(error), _) => Some(error.message.clone()),
        (_, Ending::Failed(reason)) => Some(reason),
        (_, Ending::Interrupted) => Some("interrupted".to_string()),
        (_, Ending::Complete) => None,
    };
    let (connections, errors, span_ns) = report.as_ref().map_or((0, 0, 0), |report| {
        (report.connections, report.errors, report.span_ns)
    });
    // The run lasted as long as the capture did.
    let end = RunEnd {
        complete: reason.is_none(),
        reason,
        duration_ns: span_ns,
        attempted: connections,
        errors,
    };
    let finished = sink.finish(&end);
    let report = report.map_err(WorkflowError::Sink)?;
    finished.map_err(WorkflowError::Sink)?;
    Ok(report)
}
