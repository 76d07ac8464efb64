//! `tlslab run --capture FILE`: after the run, its own timestamps checked against the packets
//! the capture recorded.

use std::path::Path;

use tlslab_capture::crosscheck::{cross_check, RunSample};
use tlslab_store::Store;

use crate::failure::CliError;
use crate::output;

/// Reads the run's samples and the capture, and prints how far apart they are per event.
pub fn print(store: &Store, capture: &Path) -> Result<(), CliError> {
    let run = store.run()?;
    let start = run.started_at_unix_ns.max(0) as u64;
    let samples: Vec<RunSample> = store
        .timelines()?
        .into_iter()
        .filter_map(|stored| {
            Some(RunSample {
                client: stored.client?.parse().ok()?,
                start_unix_ns: start.saturating_add(stored.started_at_ns),
                timeline: stored.timeline,
            })
        })
        .collect();
    // The run captured its own packets in its client's network (loopback, or the client's
    // namespace under emulation): they are the client's, whatever the gaps of a QUIC
    // handshake on a fast link would suggest.
    let captured = tlslab_capture::samples_of(capture, Some(tlslab_core::Vantage::Client))
        .map_err(|error| {
            CliError::environment(
                format!("cannot read the run's capture: {}", error.message),
                error.hint,
            )
        })?;
    let check = cross_check(&samples, &captured);
    let mut out = format!(
        "\ncross-check with the packets in {}: {} of {} handshakes found{}\n",
        tlslab_core::terminal::Escaped(&capture.display().to_string()),
        check.matched,
        check.matched + check.unmatched,
        if check.unmatched > 0 {
            " (a failed connect has no connection to match)"
        } else {
            ""
        }
    );
    if !check.events.is_empty() {
        out.push_str(&format!(
            "  {:<24} {:>8} {:>16} {:>14} {:>20}\n",
            "event", "matched", "median |Δ| µs", "p99 |Δ| µs", "median run − wire µs"
        ));
    }
    for agreement in &check.events {
        out.push_str(&format!(
            "  {:<24} {:>8} {:>16.1} {:>14.1} {:>20.1}\n",
            agreement.event.name(),
            agreement.matched,
            agreement.median_ns / 1e3,
            agreement.p99_ns / 1e3,
            agreement.median_signed_ns / 1e3
        ));
    }
    output::print_fitted(&out)
}
