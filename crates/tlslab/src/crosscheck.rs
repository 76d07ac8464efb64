//! `tlslab run --capture FILE`: after the run, its own timestamps checked against the packets
//! the capture recorded.

use std::path::Path;

use tlslab_capture::crosscheck::Agreement;
use tlslab_core::WireClock;
use tlslab_store::Store;

use crate::failure::CliError;
use crate::output;

/// Checks the run's samples against the capture (the workflow's
/// [`tlslab_workflow::crosscheck::cross_check`]), and prints how far apart they are per
/// event.
pub fn print(store: &Store, capture: &Path) -> Result<(), CliError> {
    let checked = tlslab_workflow::crosscheck::cross_check(store, capture)?;
    let clocks = clock_counts(&checked.clocks);
    let check = checked.check;
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

/// How many samples each clock timed, in words: `the kernel's socket timestamps in 1000 ·
/// both (the kernel had no stamp for some) in 2`; empty when no sample says (a store written
/// before schema 14).
fn clock_counts(counts: &[(WireClock, usize)]) -> String {
    counts
        .iter()
        .map(|(clock, count)| {
            let name = match clock {
                WireClock::Kernel => "the kernel's socket timestamps",
                WireClock::User => "the user-space clock",
                WireClock::Mixed => "both (the kernel had no stamp for some)",
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
        let counts = [(WireClock::Kernel, 2), (WireClock::Mixed, 1)];
        assert_eq!(
            clock_counts(&counts),
            "the kernel's socket timestamps in 2 · both (the kernel had no stamp for some) in 1"
        );
        assert_eq!(clock_counts(&[]), "");
    }
}
