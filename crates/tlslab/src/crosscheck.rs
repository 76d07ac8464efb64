//! `tlslab run --capture FILE`: after the run, its own timestamps checked against the packets
//! the capture recorded.

use std::path::Path;

use tlslab_capture::crosscheck::{cross_check, Agreement, RunSample};
use tlslab_store::Store;

use crate::failure::CliError;
use crate::output;

/// Reads the run's samples and the capture, and prints how far apart they are per event.
pub fn print(store: &Store, capture: &Path) -> Result<(), CliError> {
    let run = store.run()?;
    let start = run.started_at_unix_ns.max(0) as u64;
    let timelines = store.timelines()?;
    let clocks = clock_counts(timelines.iter().map(|stored| stored.wire_clock.as_deref()));
    let samples: Vec<RunSample> = timelines
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
    if !clocks.is_empty() {
        out.push_str(&format!("  the run's wire events timed by: {clocks}\n"));
    }
    // `start` is no wire event: the attempt starts before its socket exists, and the
    // capture's start is the SYN. The gap between them is the client's own work, not a
    // disagreement of clocks, so it is said apart from the table.
    let (starts, events): (Vec<&Agreement>, Vec<&Agreement>) = check
        .events
        .iter()
        .partition(|agreement| agreement.event == tlslab_core::Event::Start);
    if !events.is_empty() {
        out.push_str(&format!(
            "  {:<24} {:>8} {:>16} {:>14} {:>20}\n",
            "event", "matched", "median |Δ| µs", "p99 |Δ| µs", "median run − wire µs"
        ));
    }
    for agreement in events {
        out.push_str(&format!(
            "  {:<24} {:>8} {:>16.1} {:>14.1} {:>20.1}\n",
            agreement.event.name(),
            agreement.matched,
            agreement.median_ns / 1e3,
            agreement.p99_ns / 1e3,
            agreement.median_signed_ns / 1e3
        ));
    }
    for start in starts {
        out.push_str(&format!(
            "  start precedes its SYN by {:.1} µs (median; p99 {:.1}): the socket's creation and \
             the connect call, before any packet\n",
            -start.median_signed_ns / 1e3,
            start.p99_ns / 1e3
        ));
    }
    output::print_fitted(&out)
}

/// How many samples each clock timed, in words: `the kernel's socket timestamps 1000 ·
/// mixed 2`; empty when no sample says (a store written before schema 14).
fn clock_counts<'a>(clocks: impl Iterator<Item = Option<&'a str>>) -> String {
    let mut counts = [0usize; 3];
    for clock in clocks.flatten() {
        if let Some(clock) = tlslab_core::WireClock::parse(clock) {
            counts[tlslab_core::WireClock::ALL
                .iter()
                .position(|known| *known == clock)
                .unwrap_or(0)] += 1;
        }
    }
    tlslab_core::WireClock::ALL
        .iter()
        .zip(counts)
        .filter(|(_, count)| *count > 0)
        .map(|(clock, count)| {
            let name = match clock {
                tlslab_core::WireClock::Kernel => "the kernel's socket timestamps",
                tlslab_core::WireClock::User => "the user-space clock",
                tlslab_core::WireClock::Mixed => "both (the kernel had no stamp for some)",
            };
            format!("{name} in {count}")
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_counts_name_each_clock_that_timed_a_sample() {
        let clocks = [Some("kernel"), Some("kernel"), Some("mixed"), None];
        assert_eq!(
            clock_counts(clocks.into_iter()),
            "the kernel's socket timestamps in 2 · both (the kernel had no stamp for some) in 1"
        );
        assert_eq!(clock_counts([None, None].into_iter()), "");
    }
}
