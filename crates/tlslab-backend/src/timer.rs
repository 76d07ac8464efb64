//! A sleep with the kernel's precision, for the waits after a handshake that are shorter
//! than tokio's timer tick.

use std::os::fd::OwnedFd;
use std::time::Duration;

use tokio::io::unix::AsyncFd;

/// Sleeps for `duration`. tokio's timer wheel ticks every millisecond (and a parked worker
/// sleeps in whole milliseconds), so a wait of a loopback handshake's time, half a
/// millisecond, would last one to two; a timerfd that tokio's reactor watches ends it on
/// time, for three system calls. Falls back to tokio's timer when no timerfd can be made
/// (out of file descriptors).
pub(crate) async fn sleep(duration: Duration) {
    match timer(duration) {
        Ok(timer) => {
            let _ = timer.readable().await;
        }
        Err(_) => tokio::time::sleep(duration).await,
    }
}

fn timer(duration: Duration) -> std::io::Result<AsyncFd<OwnedFd>> {
    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    let fd = timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )?;
    // A zero time disarms a timerfd instead of firing it.
    let duration = duration.max(Duration::from_nanos(1));
    let value = Timespec {
        tv_sec: duration.as_secs().try_into().unwrap_or(i64::MAX),
        tv_nsec: duration.subsec_nanos().into(),
    };
    let once = Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: value,
    };
    timerfd_settime(&fd, TimerfdTimerFlags::empty(), &once)?;
    // SAFETY: the `OwnedFd` is a valid, open descriptor that the `AsyncFd` owns, closed only
    // when it is dropped, and its `as_raw_fd` is the same number for all its life.
    unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(|failed| failed.into_parts().1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_short_sleep_ends_after_its_time() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for duration in [Duration::ZERO, Duration::from_micros(300)] {
            let started = Instant::now();
            runtime.block_on(sleep(duration));
            // Never early; how late depends on the machine, so no upper bound.
            assert!(started.elapsed() >= duration);
        }
    }
}
