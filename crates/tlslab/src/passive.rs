//! What `tlslab pcap` and `tlslab capture` print: the summary of the store with what reading
//! skipped, and what InfluxDB took.

use tlslab_capture::{Report, SkipReason};
use tlslab_report::render_text;
use tlslab_workflow::pcap::PassiveOutcome;
use tlslab_workflow::results::Results;

use crate::failure::CliError;
use crate::output;

/// The run summary of the store, then what reading skipped (or both as JSON).
pub fn print_summary(outcome: &PassiveOutcome, json: bool) -> Result<(), CliError> {
    let summary = outcome.summary()?;
    let report = &outcome.report;
    if json {
        output::print(format_args!(
            "{}\n",
            output::json(&serde_json::json!({ "summary": summary, "capture": describe(report) }))
        ))
    } else {
        let options = tlslab_report::TextOptions {
            verbose: false,
            width: output::width(),
        };
        output::print_fitted(&render_text(&summary, &options))?;
        output::print_fitted(&notes(report))
    }
}

/// Says that reading stopped on a signal, and where what was read is.
pub fn interrupted(results: &Results, report: &Report) {
    output::note(format_args!(
        "error: interrupted after {} handshakes",
        report.connections
    ));
    output::note(format_args!(
        "hint: the handshakes read are stored in {results}"
    ));
}

/// What reading the captures skipped, as lines for people.
fn notes(report: &Report) -> String {
    let mut out = String::new();
    for (file, summary) in &report.files {
        out.push_str(&format!(
            "{}: {} packets, {} TCP/UDP decoded{}\n",
            tlslab_core::terminal::Escaped(file),
            summary.packets,
            summary.decoded,
            if summary.truncated {
                " (the file ends mid-packet: cut off while it was written)"
            } else {
                ""
            }
        ));
        if summary.filtered > 0 {
            out.push_str(&format!("  left out by --filter: {}\n", summary.filtered));
        }
        for (encapsulation, count) in &summary.tunneled {
            out.push_str(&format!(
                "  through {}: {count} (the inner packets analysed)\n",
                encapsulation.name()
            ));
        }
        if summary.key_logs > 0 {
            out.push_str(&format!(
                "  TLS key log embedded: {} (its secrets used as --keylog's)\n",
                summary.key_logs
            ));
        }
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
        "{} TCP connections and {} QUIC connections: {} TLS handshakes stored ({} failed, {} incomplete: the capture ends before they do or lacks their later records), {} TCP connections not TLS (or joined after their handshake), {} with no whole ClientHello when the capture ended\n",
        flows.tcp,
        flows.quic,
        report.connections,
        report.errors,
        report.incomplete,
        flows.not_tls,
        flows.unfinished
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
                "filtered": summary.filtered,
                "skipped": skipped,
                "tunneled": summary
                    .tunneled
                    .iter()
                    .map(|(encapsulation, count)| (encapsulation.name().to_string(), (*count).into()))
                    .collect::<serde_json::Map<String, serde_json::Value>>(),
                "embedded_key_logs": summary.key_logs,
            })
        })
        .collect();
    serde_json::json!({
        "files": files,
        "tcp_connections": report.flows.tcp,
        "quic_connections": report.flows.quic,
        "handshakes": report.connections,
        "failed": report.errors,
        "incomplete": report.incomplete,
        "not_tls": report.flows.not_tls,
        "unfinished": report.flows.unfinished,
    })
}

/// What InfluxDB took; points it did not take are a warning (the store has every one).
pub fn say_what_influx_took(report: &tlslab_telemetry::InfluxReport) {
    output::note(format_args!("InfluxDB: {} points written", report.written));
    if report.dropped > 0 || report.last_error.is_some() {
        output::note(format_args!(
            "warning: InfluxDB did not take {} points{}",
            report.dropped,
            report
                .last_error
                .as_deref()
                .map(|error| format!(" (last error: {error})"))
                .unwrap_or_default()
        ));
    }
}
