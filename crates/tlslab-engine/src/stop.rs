//! [`Stop`]: the token that ends a run early. The binary sets it on SIGINT and SIGTERM; the
//! engine checks it between attempts and keeps every sample taken.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A request to stop after the attempts in flight. Clones share the request.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A token not yet requested.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks the run to stop.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag itself, for signal handlers that set it (`signal_hook::flag::register`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_request_and_the_flag_sets_it() {
        let stop = Stop::new();
        let clone = stop.clone();
        assert!(!clone.is_requested());
        stop.flag().store(true, Ordering::SeqCst);
        assert!(clone.is_requested());
        let other = Stop::new();
        other.request();
        assert!(other.is_requested() && !Stop::new().is_requested());
    }
}
