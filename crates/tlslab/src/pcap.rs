//! `tlslab pcap`: the TLS handshakes in packet captures, stored as samples like a run's.

use std::path::Path;

use tlslab_capture::Analyser;
use tlslab_core::{SinkThread, Source};
use tlslab_telemetry::{influx, Telemetry};

use crate::cli::PcapArgs;
use crate::failure::{CliError, EXIT_INTERRUPTED};
use crate::files;
use crate::passive::{self, Ending};

/// A capture must be a regular file: says what the path is when it is not, since "no such
/// file" for one that exists (`/dev/zero`, a directory) sends the user looking for a typo.
fn check_capture_file(capture: &Path) -> Result<(), CliError> {
    use std::os::unix::fs::FileTypeExt;
    const HINT: &str =
        "give pcap or pcapng files (tcpdump -w, dumpcap, Wireshark), optionally .gz or .zst";
    let kind = match std::fs::metadata(capture) {
        Ok(metadata) => metadata.file_type(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::usage(
                format!("{}: no such capture file", capture.display()),
                HINT,
            ))
        }
        Err(error) => {
            return Err(CliError::usage(
                format!("cannot read {}: {error}", capture.display()),
                HINT,
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
    Err(CliError::usage(
        format!("{} is {what}, not a capture file", capture.display()),
        HINT,
    ))
}

pub fn pcap(args: &PcapArgs) -> Result<i32, CliError> {
    let filter = passive::filter(args.filter.as_deref())?;
    let path = args.out.clone().unwrap_or_else(crate::run::default_output);
    let inputs: Vec<&Path> = args
        .captures
        .iter()
        .chain(&args.keylog)
        .map(|path| path.as_path())
        .collect();
    let output = files::Output::new("--out", &path, files::Kind::Results);
    let write = files::claim(&output, &inputs, args.force)?;
    for capture in &args.captures {
        check_capture_file(capture)?;
    }
    let keys = passive::keys(args.keylog.as_deref())?;
    files::make_room(&path, write)?;
    let source = Source::Pcap {
        files: args
            .captures
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
    };
    let points = args
        .influx
        .as_deref()
        .map(|url| influx::Writer::connect(url).map(influx::Writer::waiting))
        .transpose()?;
    // The store writes on a thread of its own, beside the reading: a file never waits for
    // the network, so the two keep two cores busy (docs/benchmarks.md).
    let store = SinkThread::spawn(passive::begin(&path, source)?)
        .map_err(|error| CliError::environment(error.message, error.hint))?;
    let mut sink = Telemetry::new(store);
    if let Some(points) = points {
        sink = sink.with_influx(points);
    }

    let stop = crate::run::stop_on_signals();
    let mut analyser = Analyser::new(&mut sink);
    if let Some(keys) = keys {
        analyser.use_keys(keys);
    }
    if let Some(filter) = filter {
        analyser.use_filter(filter);
    }
    if let Some(vantage) = args.vantage {
        analyser.known_vantage(vantage.vantage());
    }
    analyser.stop_when(stop.flag());
    let mut unreadable = None;
    for capture in &args.captures {
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
    if let Some(influx) = influx {
        passive::say_what_influx_took(&influx);
    }
    let ending = match (&unreadable, interrupted) {
        (Some(error), _) => Ending::Failed(tlslab_core::WithCauses(error).to_string()),
        (None, true) => Ending::Interrupted,
        (None, false) => Ending::Complete,
    };
    let report = passive::end(store, report, ending)?;
    if let Some(error) = unreadable {
        return Err(CliError::usage(
            tlslab_core::WithCauses(&error),
            format!(
                "{} (the handshakes of the captures before it are stored in {})",
                error.hint,
                path.display()
            ),
        ));
    }
    passive::print_summary(&path, args.json, &report)?;
    if interrupted {
        passive::interrupted(&path, &report);
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(0)
}
