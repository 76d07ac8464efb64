//! Live progress for a display: attempts done and failed so far, reported every 100 ms.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stop::Stop;
use crate::trials::Counts;

/// Live counters for a progress display.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Attempts finished, warm-up ones included.
    pub done: u64,
    /// Of `done`, the attempts that failed.
    pub errors: u64,
    /// Of `done`, the warm-up attempts (not measured, not in the summary).
    pub warmup_done: u64,
    /// The Config running now (its label, its 1-based number of `configs`), and whether
    /// its block is a warm-up; `None` before the first block.
    pub config: Option<RunningConfig>,
    /// How many Configs the run has.
    pub configs: usize,
    /// Attempts planned (the timed blocks' attempts are not known in advance: 0 for them).
    pub total: u64,
    /// How long the timed blocks run in all, when the plan has some: progress is then time.
    pub timed: Option<Duration>,
    /// Time since the run began measuring (its origin, just before the first trial).
    pub elapsed: Duration,
}

/// The Config whose block is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningConfig {
    /// The Config's label, as the summary shows it.
    pub label: String,
    /// 1-based, of [`Progress::configs`].
    pub number: usize,
    /// Whether the block is a warm-up (not measured).
    pub warmup: bool,
}

/// What a display is handed every 100 ms; called from a runtime thread, so it must not
/// block.
pub type ProgressCallback = Arc<dyn Fn(&Progress) + Send + Sync>;

/// What the plan holds, for the display: the Configs' labels in order, the attempts planned
/// (the timed blocks' attempts not counted) and how long the timed blocks run.
pub struct Planned {
    pub labels: Vec<String>,
    pub total: u64,
    pub timed: Option<Duration>,
}

/// Calls `callback` every 100 ms on `runtime` until `end` is requested.
pub fn report(
    runtime: &tokio::runtime::Runtime,
    callback: ProgressCallback,
    counts: Arc<Counts>,
    planned: Planned,
    origin: Instant,
    end: Stop,
) {
    let Planned {
        labels,
        total,
        timed,
    } = planned;
    runtime.spawn(async move {
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        while !end.is_requested() {
            ticker.tick().await;
            let config = counts.current().and_then(|(index, warmup)| {
                Some(RunningConfig {
                    label: labels.get(index)?.clone(),
                    number: index + 1,
                    warmup,
                })
            });
            callback(&Progress {
                done: counts.done.load(Ordering::Relaxed),
                errors: counts.errors.load(Ordering::Relaxed),
                warmup_done: counts.warmup_done.load(Ordering::Relaxed),
                config,
                configs: labels.len(),
                total,
                timed,
                elapsed: origin.elapsed(),
            });
        }
    });
}
