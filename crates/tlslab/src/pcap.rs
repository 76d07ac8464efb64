//! `tlslab pcap`: the TLS handshakes in packet captures, stored as samples like a run's.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use tlslab_capture::{Analyser, Report, SkipReason};
use tlslab_core::{RunEnd, RunInfo, Sink, Source};
use tlslab_report::{render_text, RunSummary};
use tlslab_store::Store;

use crate::cli::PcapArgs;
use crate::failure::{CliError, EXIT_INTERRUPTED};
use crate::output;

pub fn pcap(args: &PcapArgs) -> Result<i32, CliError> {
    let path = args.out.clone().unwrap_or_else(crate::run::default_output);
    let inputs: Vec<&Path> = args.captures.iter().map(|path| path.as_path()).collect();
    crate::files::check_output(&path, &inputs)?;
    for capture in &args.captures {
        if !capture.is_file() {
            return Err(CliError::usage(
                format!("{}: no such capture file", capture.display()),
                "give pcap or pcapng files (tcpdump -w, dumpcap, Wireshark), optionally .gz or .zst",
            ));
        }
    }
    let keys = match &args.keylog {
        Some(path) => Some(
            tlslab_capture::keys::KeyLog::read(path)
                .map_err(|error| CliError::usage(error.message, error.hint))?,
        ),
        None => None,
    };
    let store = Store::create(&path)?;
    let mut sink = store.into_sink();
    let mut environment =
        tlslab_engine::environment::capture(env!("CARGO_PKG_VERSION"), env!("TLSLAB_COMMIT"));
    environment.network = "capture".into();
    sink.begin(&RunInfo {
        source: Source::Pcap {
            files: args
                .captures
                .iter()
                .map(|path| path.display().to_string())
                .collect(),
        },
        experiment: None,
        configs: Vec::new(),
        plan: None,
        environment,
        command_line: std::env::args().collect(),
        started_at_unix_ns: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64),
    })
    .map_err(|error| CliError::environment(error.message, error.hint))?;

    let stop = crate::run::stop_on_signals();
    let mut analyser = Analyser::new(&mut sink);
    if let Some(keys) = keys {
        analyser.use_keys(keys);
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
    let reason = match (&unreadable, interrupted, &report) {
        (_, _, Err(error)) => Some(error.message.clone()),
        (Some(error), _, _) => Some(error.message.clone()),
        (None, true, _) => Some("interrupted".to_string()),
        (None, false, _) => None,
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
    let report = report.map_err(|error| {
        CliError::environment(
            format!("writing results failed: {}", error.message),
            error.hint,
        )
    })?;
    finished.map_err(|error| CliError::environment(error.message, error.hint))?;
    if let Some(error) = unreadable {
        return Err(CliError::usage(
            error.message,
            format!(
                "{} (the handshakes of the captures before it are stored in {})",
                error.hint,
                path.display()
            ),
        ));
    }

    let store = Store::open(&path)?;
    let summary = RunSummary::from_store(&store)?;
    if args.json {
        output::print(format_args!(
            "{}\n",
            output::json(&serde_json::json!({ "summary": summary, "capture": describe(&report) }))
        ))?;
    } else {
        output::print(render_text(&summary))?;
        output::print(notes(&report))?;
    }
    if interrupted {
        output::note(format_args!(
            "error: interrupted after {} handshakes",
            report.connections
        ));
        output::note(format_args!(
            "hint: the handshakes read are stored in {}",
            path.display()
        ));
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(0)
}

/// What reading the captures skipped, as lines for people.
fn notes(report: &Report) -> String {
    let mut out = String::new();
    for (file, summary) in &report.files {
        out.push_str(&format!(
            "{file}: {} packets, {} TCP/UDP decoded{}\n",
            summary.packets,
            summary.decoded,
            if summary.truncated {
                " (the file ends mid-packet: cut off while it was written)"
            } else {
                ""
            }
        ));
        for (reason, count) in &summary.skipped {
            out.push_str(&format!("  skipped {count}: {}\n", reason.describe()));
        }
        for (link_type, count) in &summary.link_types {
            out.push_str(&format!(
                "  skipped {count}: link type {link_type}, which tlslab does not decode\n"
            ));
        }
    }
    let flows = report.flows;
    out.push_str(&format!(
        "{} TCP connections: {} TLS handshakes stored ({} failed), {} not TLS (or joined after their handshake), {} still in progress when the capture ended\n",
        flows.tcp, report.connections, report.errors, flows.not_tls, flows.unfinished
    ));
    out
}

/// The same as JSON, for `--json`.
fn describe(report: &Report) -> serde_json::Value {
    let files: Vec<serde_json::Value> = report
        .files
        .iter()
        .map(|(file, summary)| {
            let skipped: serde_json::Map<String, serde_json::Value> = SkipReason::ALL
                .iter()
                .filter_map(|reason| {
                    summary
                        .skipped
                        .get(reason)
                        .map(|count| (reason.describe().to_string(), (*count).into()))
                })
                .collect();
            serde_json::json!({
                "file": file,
                "packets": summary.packets,
                "decoded": summary.decoded,
                "truncated": summary.truncated,
                "skipped": skipped,
            })
        })
        .collect();
    serde_json::json!({
        "files": files,
        "tcp_connections": report.flows.tcp,
        "handshakes": report.connections,
        "failed": report.errors,
        "not_tls": report.flows.not_tls,
        "unfinished": report.flows.unfinished,
    })
}
