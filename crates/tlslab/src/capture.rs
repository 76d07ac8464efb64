//! `tlslab capture`: a live capture agent. Every TLS handshake passing an interface becomes a
//! sample as it completes; the store is written as it goes, so a stop (the --duration, Ctrl-C
//! or SIGTERM) loses nothing but the handshakes still in progress.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tlslab_capture::live::{Live, PcapFiles, Rotation};
use tlslab_capture::{packets, Analyser};
use tlslab_core::Source;
use tlslab_telemetry::{influx, metrics, Metrics, Telemetry};

use crate::cli::CaptureArgs;
use crate::failure::CliError;
use crate::files;
use crate::output;
use crate::passive::{self, Ending};

/// How often idle connections are given up and the store commits, without traffic.
const IDLE_EVERY: Duration = Duration::from_millis(200);

fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

pub fn capture(args: &CaptureArgs) -> Result<i32, CliError> {
    let filter = passive::filter(args.filter.as_deref())?;
    let path = args.out.clone().unwrap_or_else(crate::run::default_output);
    let duration = args
        .duration
        .as_deref()
        .map(tlslab_core::duration::parse)
        .transpose()
        .map_err(|problem| {
            CliError::usage(
                format!("--duration: {problem}"),
                "for example --duration 30s or --duration 10m",
            )
        })?;
    let rotation = args.rotate.as_deref().map(rotation).transpose()?;
    // Every output is checked before the capture opens: the store, and the first capture
    // file (each later one as it is begun).
    let first = args
        .write
        .as_deref()
        .map(|base| PcapFiles::name(base, rotation, 1));
    let mut outputs = vec![files::Output::new("--out", &path, files::Kind::Results)];
    if let Some(first) = &first {
        outputs.push(files::Output::new("--write", first, files::Kind::Capture));
    }
    let inputs: Vec<&Path> = args.keylog.iter().map(PathBuf::as_path).collect();
    let writes = files::claim_all(&outputs, &inputs, args.force)?;
    let keys = passive::keys(args.keylog.as_deref())?;
    // The capture opens first: without the right to capture, no store is left behind.
    let environment = |error: tlslab_capture::CaptureError| {
        CliError::environment(tlslab_core::WithCauses(&error), &error.hint)
    };
    let mut live =
        Live::open_filtered(Some(&args.interface), filter.as_ref()).map_err(environment)?;
    let mut file = args
        .write
        .as_deref()
        .map(|base| PcapFiles::create(base, rotation, file_check(args, &path)))
        .transpose()
        .map_err(environment)?;
    // So is monitoring: a port in use or an InfluxDB that does not answer leaves nothing.
    let counts = std::sync::Arc::new(Metrics::new());
    let server = args
        .metrics
        .map(|address| metrics::serve(address, counts.clone()))
        .transpose()?;
    let points = args
        .influx
        .as_deref()
        .map(influx::Writer::connect)
        .transpose()?;
    files::make_room(&path, writes[0])?;
    let store = passive::begin(
        &path,
        Source::Capture {
            interface: args.interface.clone(),
        },
    )?;
    let mut sink = Telemetry::new(store);
    if server.is_some() {
        sink = sink.with_metrics(counts);
    }
    if let Some(points) = points {
        sink = sink.with_influx(points);
    }
    let stop = crate::run::stop_on_signals();
    output::note(format_args!(
        "capturing TLS handshakes on {} into {}{}",
        args.interface,
        path.display(),
        if duration.is_some() {
            ""
        } else {
            " until Ctrl-C"
        }
    ));
    if let Some(server) = &server {
        output::note(format_args!(
            "serving metrics at http://{}/metrics",
            server.address()
        ));
    }

    let mut analyser = Analyser::new(&mut sink);
    if let Some(keys) = keys {
        analyser.use_keys(keys);
    }
    if let Some(vantage) = args.vantage {
        analyser.known_vantage(vantage.vantage());
    }
    let source = analyser.add_source(&args.interface);
    let deadline = duration.map(|duration| Instant::now() + duration);
    let mut last_idle = Instant::now();
    let mut failure = None;
    while !stop.is_requested()
        && !analyser.failed()
        && deadline.is_none_or(|deadline| Instant::now() < deadline)
    {
        match live.next_packet() {
            Ok(Some(packet)) => {
                if let Some(file) = &mut file {
                    if let Err(error) = file.write(&packet) {
                        failure = Some(error);
                        break;
                    }
                }
                if let Ok(segment) =
                    packets::decode_ip(packet.timestamp_ns, packet.interface, packet.data)
                {
                    analyser.segment(source, &segment);
                }
            }
            Ok(None) => {}
            Err(error) => {
                failure = Some(error);
                break;
            }
        }
        if last_idle.elapsed() >= IDLE_EVERY {
            analyser.idle(now_unix_ns());
            last_idle = Instant::now();
        }
    }
    if let Some(file) = file {
        match file.finish() {
            Ok(paths) => {
                if let (Some(first), Some(last), true) =
                    (paths.first(), paths.last(), paths.len() > 1)
                {
                    output::note(format_args!(
                        "packets written to {} files, {} to {}",
                        paths.len(),
                        first.display(),
                        last.display()
                    ));
                }
            }
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    let report = analyser.finish();
    let (store, influx) = sink.close();
    if let Some(influx) = influx {
        passive::say_what_influx_took(&influx);
    }
    let ending = match &failure {
        Some(error) => Ending::Failed(tlslab_core::WithCauses(error).to_string()),
        // Stopping is how a capture ends: at its duration or on a signal.
        None => Ending::Complete,
    };
    let report = passive::end(store, report, ending)?;
    if let Some(error) = failure {
        return Err(CliError::environment(
            tlslab_core::WithCauses(&error),
            format!(
                "{} (the handshakes captured until then are stored in {})",
                error.hint,
                path.display()
            ),
        ));
    }
    passive::print_summary(&path, args.json, &report)?;
    Ok(0)
}

/// The rule for each capture file `--write` begins: never over the store, the key log or a
/// file of another kind (a rotated file's name may be taken by anything).
fn file_check(
    args: &CaptureArgs,
    store: &Path,
) -> impl FnMut(&Path) -> Result<(), tlslab_capture::CaptureError> + Send + 'static {
    let inputs: Vec<PathBuf> = args.keylog.iter().cloned().chain([store.into()]).collect();
    let force = args.force;
    move |file| {
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let output = files::Output::new("--write", file, files::Kind::Capture);
        files::claim(&output, &inputs, force)
            .map(drop)
            .map_err(|error| tlslab_capture::CaptureError::new(error.message, error.hint))
    }
}

/// `--rotate`: a duration (10m, 1h) or a size with its unit (100MB, 1GiB). A duration is
/// read first, so `10m` is ten minutes.
fn rotation(text: &str) -> Result<Rotation, CliError> {
    if let Ok(period) = tlslab_core::duration::parse(text) {
        if !period.is_zero() {
            return Ok(Rotation::Every(period));
        }
    }
    match parse_size::parse_size(text) {
        Ok(bytes) if bytes > 0 => Ok(Rotation::Size(bytes)),
        _ => Err(CliError::usage(
            format!("--rotate {text}: neither a duration nor a size"),
            "for example --rotate 100MB (a new file every 100 MB) or --rotate 10m (every ten minutes)",
        )),
    }
}
