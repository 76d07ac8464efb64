//! `run --capture`'s cross-check: after the run, its own timestamps checked against the
//! packets the capture recorded.

use std::path::Path;

use tlslab_capture::crosscheck::{cross_check as check, CrossCheck, RunSample};
use tlslab_core::WireClock;
use tlslab_store::Store;

use crate::WorkflowError;

/// A run's samples matched to its capture's connections, and which clocks timed them.
#[derive(Debug, Clone)]
pub struct CrossChecked {
    /// How far apart the two are, per event.
    pub check: CrossCheck,
    /// How many samples each clock timed, in [`WireClock::ALL`]'s order, those that timed
    /// none left out (empty for a store written before schema 14, whose samples do not say).
    pub clocks: Vec<(WireClock, usize)>,
}

/// Reads the run's samples from `store` and the handshakes of `capture`, and matches them.
pub fn cross_check(store: &Store, capture: &Path) -> Result<CrossChecked, WorkflowError> {
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
            WorkflowError::environment(
                format!("cannot read the run's capture: {}", error.message),
                error.hint,
                None,
            )
        })?;
    Ok(CrossChecked {
        check: check(&samples, &captured),
        clocks,
    })
}

/// How many samples each clock timed, those that timed none left out.
fn clock_counts<'a>(clocks: impl Iterator<Item = Option<&'a str>>) -> Vec<(WireClock, usize)> {
    let mut counts = [0usize; 3];
    for clock in clocks.flatten() {
        if let Some(clock) = WireClock::parse(clock) {
            counts[WireClock::ALL
                .iter()
                .position(|known| *known == clock)
                .unwrap_or(0)] += 1;
        }
    }
    WireClock::ALL
        .iter()
        .copied()
        .zip(counts)
        .filter(|(_, count)| *count > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_counts_count_each_clock_that_timed_a_sample() {
        let clocks = [Some("kernel"), Some("kernel"), Some("mixed"), None];
        assert_eq!(
            clock_counts(clocks.into_iter()),
            vec![(WireClock::Kernel, 2), (WireClock::Mixed, 1)]
        );
        assert!(clock_counts([None, None].into_iter()).is_empty());
    }
}
