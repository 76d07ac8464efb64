//! `capture`: a live capture agent. Every TLS handshake passing an interface becomes a
//! sample as it completes; the store is written as it goes, so a stop (the duration, or the
//! caller's stop token) loses nothing but the handshakes still in progress.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tlslab_capture::keys::KeyLog;
use tlslab_capture::live::{Live, PcapFiles, Rotation};
use tlslab_capture::{packets, Analyser, CaptureError};
use tlslab_core::{Sink, Source, Vantage};
use tlslab_store::Location;
use tlslab_telemetry::{influx, metrics, Metrics, Telemetry};

use crate::passive::{self, Ending, PassiveOutcome};
use crate::results::Results;
use crate::{files, Control, Invocation, Notice, WorkflowError};

/// How often idle connections are given up and the store commits, without traffic.
const IDLE_EVERY: Duration = Duration::from_millis(200);

/// The interface to capture on and where its handshakes go.
#[derive(Debug, Clone)]
pub struct CaptureRequest {
    /// The interface (`any` for all).
    pub interface: String,
    /// A BPF expression the kernel filters with.
    pub filter: Option<String>,
    /// Stop after this long; until the stop token when `None`.
    pub duration: Option<Duration>,
    /// Where the handshakes go as they complete: a new file, or a new run in a PostgreSQL
    /// database; [`crate::default_output`] when `None`.
    pub store: Option<Location>,
    /// Also write the packets to this pcap file...
    pub write: Option<PathBuf>,
    /// ... starting a new one at this size or age.
    pub rotation: Option<Rotation>,
    /// Whether an output may replace a file of another kind.
    pub force: bool,
    /// A key log to decrypt TLS 1.3 handshakes with.
    pub key_log: Option<PathBuf>,
    /// Where the packets are captured, when known.
    pub vantage: Option<Vantage>,
    /// Serve Prometheus metrics here.
    pub metrics: Option<SocketAddr>,
    /// An InfluxDB write URL each handshake is also sent to.
    pub influx: Option<String>,
    /// Who runs it (stored with the results).
    pub invocation: Invocation,
    /// The capture point's name (each Config carries it); by default this host's name and
    /// the interface (`host/eth0`).
    pub capture_point: Option<String>,
    /// A run of the PostgreSQL store to join, as one more capture point of it; a new run
    /// when `None`.
    pub join: Option<i64>,
}

impl CaptureRequest {
    /// The capture point's name: as asked, or this host's name and the interface.
    pub fn capture_point(&self) -> String {
        self.capture_point.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|name| name.trim().to_string())
                .unwrap_or_else(|_| "localhost".into());
            format!("{host}/{}", self.interface)
        })
    }
}

/// A finished live capture.
#[derive(Debug)]
pub struct CaptureOutcome {
    /// The handshakes stored, and what reading found.
    pub passive: PassiveOutcome,
    /// The pcap files written (`write`), in order.
    pub files: Vec<PathBuf>,
}

/// What the capture writes into and reports to, opened before it starts.
struct Outputs {
    results: Results,
    live: Live,
    file: Option<PcapFiles>,
    sink: Telemetry<Box<dyn Sink>>,
    metrics: Option<metrics::MetricsServer>,
    /// The first Config's number and the run's start, for the analyser.
    first_config: usize,
    started_at_unix_ns: u64,
}

/// Captures on `request.interface` until its duration passes or `control.stop` is
/// requested (either is how a capture ends: it is complete), storing each handshake as it
/// completes.
pub fn capture(
    request: &CaptureRequest,
    control: &Control,
) -> Result<CaptureOutcome, WorkflowError> {
    let (mut outputs, keys) = open(request, control)?;
    control.notice(Notice::Capturing {
        interface: request.interface.clone(),
        store: PathBuf::from(outputs.results.to_string()),
        until_stopped: request.duration.is_none(),
        metrics: outputs.metrics.as_ref().map(|server| server.address()),
    });
    let (first_config, started_at_unix_ns) = (outputs.first_config, outputs.started_at_unix_ns);
    let mut analyser = Analyser::new(&mut outputs.sink);
    if let Some(keys) = keys {
        analyser.use_keys(keys);
    }
    analyser.at_capture_point(&request.capture_point());
    analyser.numbering_configs_from(first_config);
    analyser.starting_at(started_at_unix_ns);
    if let Some(vantage) = request.vantage {
        analyser.known_vantage(vantage);
    }
    let source = analyser.add_source(&request.interface);
    let deadline = request.duration.map(|duration| Instant::now() + duration);
    let mut last_idle = Instant::now();
    let mut failure = None;
    while !control.stop.is_requested()
        && !analyser.failed()
        && deadline.is_none_or(|deadline| Instant::now() < deadline)
    {
        if let Err(error) = next(&mut outputs.live, &mut outputs.file, &mut analyser, source) {
            failure = Some(error);
            break;
        }
        if last_idle.elapsed() >= IDLE_EVERY {
            analyser.idle(crate::now_unix_ns());
            last_idle = Instant::now();
        }
    }
    let mut files = Vec::new();
    if let Some(file) = outputs.file {
        match file.finish() {
            Ok(paths) => files = paths,
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    let report = analyser.finish();
    let (store, influx) = outputs.sink.close();
    let ending = match &failure {
        Some(error) => Ending::Failed(tlslab_core::WithCauses(error).to_string()),
        // Stopping is how a capture ends: at its duration or on a signal.
        None => Ending::Complete,
    };
    let report = passive::end(store, report, ending);
    // What a database's writer had to say (it went away and came back), whatever the end.
    outputs.results.say_writer_notices(control);
    let report = report?;
    if let Some(error) = failure {
        return Err(passive::environment(error, Some(&outputs.results)));
    }
    Ok(CaptureOutcome {
        passive: PassiveOutcome {
            results: outputs.results,
            report,
            influx,
            interrupted: false,
        },
        files,
    })
}

/// The next packet, written to the capture file and analysed; `Ok` without one.
fn next(
    live: &mut Live,
    file: &mut Option<PcapFiles>,
    analyser: &mut Analyser<'_>,
    source: usize,
) -> Result<(), CaptureError> {
    let Some(packet) = live.next_packet()? else {
        return Ok(());
    };
    if let Some(file) = file {
        file.write(&packet)?;
    }
    if let Ok(segment) = packets::decode_ip(packet.timestamp_ns, packet.interface, packet.data) {
        analyser.segment(source, &segment);
    }
    Ok(())
}

/// Every output checked, then the capture, the capture file, monitoring and the store
/// opened, in that order: without the right to capture, no store is left behind.
fn open(
    request: &CaptureRequest,
    control: &Control,
) -> Result<(Outputs, Option<KeyLog>), WorkflowError> {
    let filter = passive::filter(request.filter.as_deref())?;
    let location = request
        .store
        .clone()
        .unwrap_or_else(|| Location::File(crate::default_output()));
    let path = location.path();
    // The store file, and the first capture file (each later one as it is begun).
    let first = request
        .write
        .as_deref()
        .map(|base| PcapFiles::name(base, request.rotation, 1));
    let mut outputs: Vec<files::Output<'_>> = path
        .map(|path| files::Output::new("--out", path, files::Kind::Results))
        .into_iter()
        .collect();
    if let Some(first) = &first {
        outputs.push(files::Output::new("--write", first, files::Kind::Capture));
    }
    let inputs: Vec<&Path> = request.key_log.iter().map(PathBuf::as_path).collect();
    let writes = files::claim_all(&outputs, &inputs, request.force)?;
    let keys = passive::keys(request.key_log.as_deref())?;
    let live = Live::open_filtered(Some(&request.interface), filter.as_ref())
        .map_err(|error| passive::environment(error, None))?;
    let file = request
        .write
        .as_deref()
        .map(|base| PcapFiles::create(base, request.rotation, file_check(request, path)))
        .transpose()
        .map_err(|error| passive::environment(error, None))?;
    // So is monitoring: a port in use or an InfluxDB that does not answer leaves nothing.
    let counts = Arc::new(Metrics::new());
    let metrics = request
        .metrics
        .map(|address| metrics::serve(address, counts.clone()))
        .transpose()?;
    let points = request
        .influx
        .as_deref()
        .map(influx::Writer::connect)
        .transpose()?;
    if let Some(path) = path {
        files::make_room(path, writes[0])?;
    }
    let begun = passive::begin(
        passive::Destination {
            location: &location,
            join: request.join,
        },
        Source::Capture {
            interface: request.interface.clone(),
        },
        &request.invocation,
        control,
    )?;
    let mut sink = Telemetry::new(begun.sink);
    if metrics.is_some() {
        sink = sink.with_metrics(counts);
    }
    if let Some(points) = points {
        sink = sink.with_influx(points);
    }
    let outputs = Outputs {
        results: begun.results,
        live,
        file,
        sink,
        metrics,
        first_config: begun.first_config,
        started_at_unix_ns: begun.started_at_unix_ns,
    };
    Ok((outputs, keys))
}

/// The rule for each capture file `write` begins: never over the store file, the key log or
/// a file of another kind (a rotated file's name may be taken by anything).
fn file_check(
    request: &CaptureRequest,
    store: Option<&Path>,
) -> impl FnMut(&Path) -> Result<(), CaptureError> + Send + 'static {
    let inputs: Vec<PathBuf> = request
        .key_log
        .iter()
        .cloned()
        .chain(store.map(Path::to_path_buf))
        .collect();
    let force = request.force;
    move |file| {
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let output = files::Output::new("--write", file, files::Kind::Capture);
        files::claim(&output, &inputs, force)
            .map(drop)
            .map_err(|error| CaptureError::new(error.to_string(), error.hint()).caused_by(error))
    }
}

/// A filter expression, compiled (and so checked): the first thing a capture checks.
pub fn check_filter(expression: Option<&str>) -> Result<(), WorkflowError> {
    passive::filter(expression).map(drop)
}

/// `--rotate`: a duration (10m, 1h) or a size with its unit (100MB, 1GiB). A duration is
/// read first, so `10m` is ten minutes.
pub fn rotation(text: &str) -> Result<Rotation, WorkflowError> {
    if let Ok(period) = tlslab_core::duration::parse(text) {
        if !period.is_zero() {
            return Ok(Rotation::Every(period));
        }
    }
    match parse_size::parse_size(text) {
        Ok(bytes) if bytes > 0 => Ok(Rotation::Size(bytes)),
        _ => Err(WorkflowError::usage(
            format!("--rotate {text}: neither a duration nor a size"),
            "for example --rotate 100MB (a new file every 100 MB) or --rotate 10m (every ten minutes)",
        )),
    }
}
