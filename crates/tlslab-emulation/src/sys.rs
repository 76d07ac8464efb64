//! The few policies the emulators' event loops share on top of rustix: monotonic nanoseconds,
//! an epoll wait that treats EINTR as "no events", a one-shot absolute timerfd, an eventfd
//! wake-up, and the forwarder thread's timing setup (timer slack, SCHED_FIFO).

use rustix::event::epoll;
use rustix::event::{eventfd, EventfdFlags};
use rustix::io::Errno;
use rustix::time::{
    clock_gettime, timerfd_create, timerfd_settime, ClockId, Itimerspec, TimerfdClockId,
    TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use std::io;
use std::num::NonZeroU64;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// Nanoseconds on CLOCK_MONOTONIC, the clock timerfd deadlines are given in. `Instant` reads
/// the same clock but hides the value, and absolute timer deadlines need it.
pub(crate) fn monotonic_nanos() -> u64 {
    let now = clock_gettime(ClockId::Monotonic);
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// What a descriptor is watched for, and what epoll reports.
pub(crate) const READABLE: epoll::EventFlags = epoll::EventFlags::IN;
pub(crate) const WRITABLE: epoll::EventFlags = epoll::EventFlags::OUT;
pub(crate) const HANG_UP: epoll::EventFlags = epoll::EventFlags::HUP.union(epoll::EventFlags::ERR);

pub(crate) fn new_epoll() -> io::Result<OwnedFd> {
    Ok(epoll::create(epoll::CreateFlags::CLOEXEC)?)
}

pub(crate) fn empty_events<const N: usize>() -> [epoll::Event; N] {
    [epoll::Event {
        flags: epoll::EventFlags::empty(),
        data: epoll::EventData::new_u64(0),
    }; N]
}

/// Waits up to `timeout_milliseconds` (-1: forever, 0: poll). An interrupted wait reports
/// zero events rather than an error: callers loop anyway.
pub(crate) fn wait(
    epoll: &OwnedFd,
    events: &mut [epoll::Event],
    timeout_milliseconds: i32,
) -> io::Result<usize> {
    let timeout = (timeout_milliseconds >= 0).then(|| Timespec {
        tv_sec: (timeout_milliseconds / 1000).into(),
        tv_nsec: (timeout_milliseconds % 1000 * 1_000_000).into(),
    });
    match epoll::wait(epoll, events, timeout.as_ref()) {
        Ok(count) => Ok(count),
        Err(Errno::INTR) => Ok(0),
        Err(error) => Err(error.into()),
    }
}

/// A one-shot timer on CLOCK_MONOTONIC with nanosecond deadlines: epoll's own timeout has
/// millisecond granularity, far too coarse for delays that must be right to tens of µs.
pub(crate) struct Timer(OwnedFd);

impl Timer {
    pub(crate) fn new() -> io::Result<Timer> {
        let flags = TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC;
        Ok(Timer(timerfd_create(TimerfdClockId::Monotonic, flags)?))
    }

    /// Arms the timer to fire at `deadline` (monotonic nanoseconds); a deadline in the past
    /// fires at once.
    pub(crate) fn arm_at(&self, deadline: u64) -> io::Result<()> {
        // Zero would disarm the timer: a past deadline must still fire.
        let deadline = deadline.max(1);
        let setting = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: (deadline / 1_000_000_000) as _,
                tv_nsec: (deadline % 1_000_000_000) as _,
            },
        };
        timerfd_settime(&self.0, TimerfdTimerFlags::ABSTIME, &setting)?;
        Ok(())
    }

    /// Consumes the expiration count so a level-triggered epoll stops reporting it.
    pub(crate) fn drain(&self) {
        let mut count = [0u8; 8];
        let _ = rustix::io::read(&self.0, &mut count);
    }
}

impl AsFd for Timer {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// A counter another thread writes to wake an epoll loop (stop, new profile, statistics).
pub(crate) struct Wakeup(OwnedFd);

impl Wakeup {
    pub(crate) fn new() -> io::Result<Wakeup> {
        let flags = EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC;
        Ok(Wakeup(eventfd(0, flags)?))
    }

    pub(crate) fn signal(&self) {
        // Fails only when the counter would overflow, and then a wake-up is pending anyway.
        let _ = rustix::io::write(&self.0, &1u64.to_ne_bytes());
    }

    pub(crate) fn drain(&self) {
        let mut count = [0u8; 8];
        let _ = rustix::io::read(&self.0, &mut count);
    }
}

impl AsFd for Wakeup {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// Lets the kernel wake this thread's timers within 1 ns of their deadline instead of the
/// default 50 µs slack, which alone would use up the whole precision budget.
pub(crate) fn minimize_timer_slack() {
    // Failure leaves the default slack.
    let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
}

/// Runs the calling thread under SCHED_FIFO (`true`) or the normal policy (`false`); returns
/// whether the change took effect (SCHED_FIFO needs CAP_SYS_NICE or an rtprio limit).
pub(crate) fn set_realtime_priority(realtime: bool) -> bool {
    let (policy, priority) = if realtime {
        (libc::SCHED_FIFO, 1)
    } else {
        (libc::SCHED_OTHER, 0)
    };
    let parameter = libc::sched_param {
        sched_priority: priority,
    };
    // The one libc call left in the crate: rustix 1.1 wraps sched_setaffinity, sched_getcpu
    // and sched_yield but not sched_setscheduler, and socket2 has nothing of the kind.
    // SAFETY: pid 0 is the calling thread; `parameter` outlives the call; failure changes
    // nothing.
    unsafe { libc::sched_setscheduler(0, policy, &parameter) == 0 }
}
