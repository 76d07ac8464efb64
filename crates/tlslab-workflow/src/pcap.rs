//! `pcap`: the TLS handshakes in packet captures, stored as samples like a run's.

use std::path::{Path, PathBuf};

use tlslab_capture::Analyser;
use tlslab_core::{SinkThread, Source, Vantage};
use tlslab_store::Location;
use tlslab_telemetry::{influx, Telemetry};

pub use crate::passive::PassiveOutcome;
use crate::passive::{self, Ending};
use crate::{files, Control, Invocation, WorkflowError};

/// The captures to read and where their handshakes go.
#[derive(Debug, Clone)]
pub struct PcapRequest {
    /// pcap or pcapng files (plain, .gz or .zst), read in order: a rotated capture's
    /// connections continue across its files.
    pub captures: Vec<PathBuf>,
    /// Where the handshakes go: a new file, or a new run in a PostgreSQL database;
    /// [`crate::default_output`] when `None`.
    pub store: Option<Location>,
    /// Whether a store file may replace a file of another kind.
    pub force: bool,
    /// A key log to decrypt TLS 1.3 handshakes with.
    pub key_log: Option<PathBuf>,
    /// A BPF expression: only the packets it passes are read.
    pub filter: Option<String>,
    /// Where the packets were captured, when known.
    pub vantage: Option<Vantage>,
    /// An InfluxDB write URL each handshake is also sent to.
    pub influx: Option<String>,
    /// Who runs it (stored with the results).
    pub invocation: Invocation,
}

impl PcapRequest {
    /// `captures` into `out`, nothing else asked for.
    pub fn new(captures: Vec<PathBuf>, out: PathBuf, invocation: Invocation) -> PcapRequest {
        PcapRequest {
            captures,
            store: Some(Location::File(out)),
            force: false,
            key_log: None,
            filter: None,
            vantage: None,
            influx: None,
            invocation,
        }
    }
}

/// A capture must be a regular file: says what the path is when it is not, since "no such
/// file" for one that exists (`/dev/zero`, a directory) sends the user looking for a typo.
fn check_capture_file(capture: &Path) -> Result<(), WorkflowError> {
    use std::os::unix::fs::FileTypeExt;
    const HINT: &str =
        "give pcap or pcapng files (tcpdump -w, dumpcap, Wireshark), optionally .gz or .zst";
    let kind = match std::fs::metadata(capture) {
        Ok(metadata) => metadata.file_type(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(WorkflowError::usage(
                format!("{}: no such capture file", capture.display()),
                HINT,
            ))
        }
        Err(error) => {
            return Err(WorkflowError::usage_because(
                format!("cannot read {}", capture.display()),
                HINT,
                error,
            ))
        }
    };
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a pipe"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(WorkflowError::usage(
        format!("{} is {what}, not a capture file", capture.display()),
        HINT,
    ))
}

/// Reads every capture of `request` into a new store. Stopping `control.stop` ends the
/// reading where it is ([`PassiveOutcome::interrupted`]; what was read is stored).
pub fn pcap(request: &PcapRequest, control: &Control) -> Result<PassiveOutcome, WorkflowError> {
    let filter = passive::filter(request.filter.as_deref())?;
    let location = request
        .store
        .clone()
        .unwrap_or_else(|| Location::File(crate::default_output()));
    let inputs: Vec<&Path> = request
        .captures
        .iter()
        .chain(&request.key_log)
        .map(PathBuf::as_path)
        .collect();
    let write = location
        .path()
        .map(|path| {
            let output = files::Output::new("--out", path, files::Kind::Results);
            files::claim(&output, &inputs, request.force)
        })
        .transpose()?;
    for capture in &request.captures {
        check_capture_file(capture)?;
    }
    let keys = passive::keys(request.key_log.as_deref())?;
    if let (Some(path), Some(write)) = (location.path(), write) {
        files::make_room(path, write)?;
    }
    let source = Source::Pcap {
        files: request
            .captures
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
    };
    let points = request
        .influx
        .as_deref()
        .map(|url| influx::Writer::connect(url).map(influx::Writer::waiting))
        .transpose()?;
    // The store writes on a thread of its own, beside the reading: a file never waits for
    // the network, so the two keep two cores busy (docs/benchmarks.md).
    // A capture file's times count from its first packet (the run's record of when it
    // started is when it was read).
    let passive::Begun {
        sink: store,
        results,
        ..
    } = passive::begin(
        passive::Destination {
            location: &location,
            join: None,
        },
        source,
        &request.invocation,
        control,
    )?;
    let store = SinkThread::spawn(store).map_err(WorkflowError::Sink)?;
    let mut sink = Telemetry::new(store);
    if let Some(points) = points {
        sink = sink.with_influx(points);
    }
    let mut analyser = Analyser::new(&mut sink);
    if let Some(keys) = keys {
        analyser.use_keys(keys);
    }
    if let Some(filter) = filter {
        analyser.use_filter(filter);
    }
    if let Some(vantage) = request.vantage {
        analyser.known_vantage(vantage);
    }
    analyser.stop_when(control.stop.flag());
    let mut unreadable = None;
    for capture in &request.captures {
        if analyser.stopped() {
            break;
        }
        if let Err(error) = analyser.read_file(capture) {
            unreadable = Some(error);
            break;
        }
    }
    let interrupted = analyser.stopped();
    let report = analyser.finish();
    let (store, influx) = sink.close();
    let ending = match (&unreadable, interrupted) {
        (Some(error), _) => Ending::Failed(tlslab_core::WithCauses(error).to_string()),
        (None, true) => Ending::Interrupted,
        (None, false) => Ending::Complete,
    };
    let report = passive::end(store, report, ending);
    // What a database's writer had to say (it went away and came back), whatever the end.
    results.say_writer_notices(control);
    let report = report?;
    if let Some(source) = unreadable {
        return Err(WorkflowError::Capture {
            source,
            usage: true,
            results: Some(PathBuf::from(results.to_string())),
        });
    }
    Ok(PassiveOutcome {
        results,
        report,
        influx,
        interrupted,
    })
}
