//! [`Clock`]: where schedules, deadlines and stopping read the time.
//!
//! An open loop's promise is a schedule kept over minutes, and a closed loop's `--duration`
//! is a deadline; neither can be tested honestly against the wall clock (a test would have
//! to sleep for the whole schedule, and could only assert loose bounds). So the engine never
//! reads the OS clock for them: the caller passes a clock in. A run passes [`SystemClock`];
//! a test passes a [`SimulatedClock`], which moves only when a sleeper asks it to, so a
//! ten-second schedule of 2,000 arrivals runs in milliseconds and its times are exact.
//! (quinn-proto drives its connections the same way: `handle_timeout(now)`.)

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of time that can also wait.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The time now.
    fn now(&self) -> Instant;

    /// Blocks the calling thread until `deadline` (at once when it has passed).
    fn sleep_until(&self, deadline: Instant);
}

/// The machine's monotonic clock, with the kernel's sleeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep_until(&self, deadline: Instant) {
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
    }
}

/// Simulated time: it starts at the moment it is made and advances only when a sleeper
/// asks for a later time (or a test calls [`SimulatedClock::advance`]); a sleep returns at
/// once, with the clock at its deadline. Several threads may share it: the clock never moves
/// back.
#[derive(Debug)]
pub struct SimulatedClock {
    origin: Instant,
    elapsed_ns: AtomicU64,
}

impl SimulatedClock {
    /// A clock at its origin; it moves only when the test advances it.
    pub fn new() -> SimulatedClock {
        SimulatedClock {
            origin: Instant::now(),
            elapsed_ns: AtomicU64::new(0),
        }
    }

    /// Moves the clock on by `by`.
    pub fn advance(&self, by: Duration) {
        self.elapsed_ns
            .fetch_add(saturating_nanos(by), Ordering::SeqCst);
    }

    /// Simulated time since the clock was made.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns.load(Ordering::SeqCst))
    }
}

impl Default for SimulatedClock {
    fn default() -> Self {
        SimulatedClock::new()
    }
}

impl Clock for SimulatedClock {
    fn now(&self) -> Instant {
        self.origin + self.elapsed()
    }

    fn sleep_until(&self, deadline: Instant) {
        let target = saturating_nanos(deadline.saturating_duration_since(self.origin));
        self.elapsed_ns.fetch_max(target, Ordering::SeqCst);
    }
}

fn saturating_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_time_moves_only_forward_and_only_when_asked() {
        let clock = SimulatedClock::new();
        let start = clock.now();
        assert_eq!(clock.now(), start);
        clock.sleep_until(start + Duration::from_secs(3600));
        assert_eq!(clock.now() - start, Duration::from_secs(3600));
        // A deadline already passed leaves it where it is.
        clock.sleep_until(start + Duration::from_secs(1));
        assert_eq!(clock.elapsed(), Duration::from_secs(3600));
        clock.advance(Duration::from_millis(5));
        assert_eq!(clock.elapsed(), Duration::from_millis(3_600_005));
    }

    #[test]
    fn the_system_clock_sleeps_at_least_until_the_deadline() {
        let clock = SystemClock;
        let deadline = clock.now() + Duration::from_millis(2);
        clock.sleep_until(deadline);
        assert!(clock.now() >= deadline);
    }
}
