//! Live progress for a display: attempts done and failed so far, reported every 100 ms.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stop::Stop;
use crate::trials::Counts;

/// Live counters for a progress display.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub errors: u64,
    /// Attempts planned (the timed blocks' attempts are not known in advance: 0 for them).
    pub total: u64,
    /// How long the timed blocks run in all, when the plan has some: progress is then time.
    pub timed: Option<Duration>,
    pub elapsed: Duration,
}

pub type ProgressCallback = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Calls `callback` every 100 ms on `runtime` until `end` is requested.
pub fn report(
    runtime: &tokio::runtime::Runtime,
    callback: ProgressCallback,
    counts: Arc<Counts>,
    total: u64,
    timed: Option<Duration>,
    origin: Instant,
    end: Stop,
) {
    runtime.spawn(async move {
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        while !end.is_requested() {
            ticker.tick().await;
            callback(&Progress {
                done: counts.done.load(Ordering::Relaxed),
                errors: counts.errors.load(Ordering::Relaxed),
                total,
                timed,
                elapsed: origin.elapsed(),
            });
        }
    });
}
