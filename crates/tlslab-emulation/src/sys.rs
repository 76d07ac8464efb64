//! Thin wrappers over the Linux calls the emulators share: the monotonic clock, epoll, timerfd,
//! eventfd, setns and thread scheduling. Each keeps the `unsafe` in one place.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Nanoseconds on CLOCK_MONOTONIC, the clock timerfd deadlines are given in. `Instant` reads
/// the same clock but hides the value, and absolute timer deadlines need it.
pub(crate) fn monotonic_nanos() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Turns a -1 return into the thread's errno.
pub(crate) fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    let fd = check(fd)?;
    // SAFETY: the descriptor was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Moves the calling thread into the network namespace `namespace` refers to.
pub(crate) fn enter_network_namespace(namespace: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: setns takes any descriptor and reports misuse through errno.
    check(unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}

/// Reads everything `read(2)` gives into `buffer`, without retrying.
pub(crate) fn read(fd: RawFd, buffer: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buffer`.
    let count = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
    if count < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(count as usize)
    }
}

pub(crate) fn write(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `data`.
    let count = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    if count < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(count as usize)
    }
}

pub(crate) struct Epoll(OwnedFd);

pub(crate) const READABLE: u32 = libc::EPOLLIN as u32;
pub(crate) const WRITABLE: u32 = libc::EPOLLOUT as u32;
pub(crate) const HANG_UP: u32 = (libc::EPOLLHUP | libc::EPOLLERR) as u32;

pub(crate) fn empty_events<const N: usize>() -> [libc::epoll_event; N] {
    [libc::epoll_event { events: 0, u64: 0 }; N]
}

impl Epoll {
    pub(crate) fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall.
        owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }).map(Epoll)
    }

    fn control(
        &self,
        operation: libc::c_int,
        fd: RawFd,
        events: u32,
        token: u64,
    ) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: `event` outlives the call; the kernel copies it.
        check(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), operation, fd, &mut event) }).map(drop)
    }

    pub(crate) fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    pub(crate) fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    pub(crate) fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits up to `timeout_milliseconds` (-1: forever, 0: poll). An interrupted wait reports
    /// zero events rather than an error: callers loop anyway.
    pub(crate) fn wait(
        &self,
        events: &mut [libc::epoll_event],
        timeout_milliseconds: i32,
    ) -> io::Result<usize> {
        // SAFETY: the pointer and length describe `events`.
        let count = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                timeout_milliseconds,
            )
        };
        match check(count) {
            Ok(count) => Ok(count as usize),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => Ok(0),
            Err(error) => Err(error),
        }
    }
}

/// A one-shot timer on CLOCK_MONOTONIC with nanosecond deadlines: epoll's own timeout has
/// millisecond granularity, far too coarse for delays that must be right to tens of µs.
pub(crate) struct Timer(OwnedFd);

impl Timer {
    pub(crate) fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall.
        owned(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })
        .map(Timer)
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Arms the timer to fire at `deadline` (monotonic nanoseconds); a deadline in the past
    /// fires at once.
    pub(crate) fn arm_at(&self, deadline: u64) -> io::Result<()> {
        // Zero would disarm the timer: a past deadline must still fire.
        let deadline = deadline.max(1);
        let setting = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `setting` is valid; the old value is not wanted.
        check(unsafe {
            libc::timerfd_settime(
                self.0.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &setting,
                std::ptr::null_mut(),
            )
        })
        .map(drop)
    }

    /// Consumes the expiration count so a level-triggered epoll stops reporting it.
    pub(crate) fn drain(&self) {
        let mut count = [0u8; 8];
        let _ = read(self.0.as_raw_fd(), &mut count);
    }
}

/// A counter another thread writes to wake an epoll loop (stop, new profile, statistics).
pub(crate) struct Wakeup(OwnedFd);

impl Wakeup {
    pub(crate) fn new() -> io::Result<Wakeup> {
        // SAFETY: plain syscall.
        owned(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) }).map(Wakeup)
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    pub(crate) fn signal(&self) {
        // Fails only when the counter would overflow, and then a wake-up is pending anyway.
        let _ = write(self.0.as_raw_fd(), &1u64.to_ne_bytes());
    }

    pub(crate) fn drain(&self) {
        let mut count = [0u8; 8];
        let _ = read(self.0.as_raw_fd(), &mut count);
    }
}

/// Lets the kernel wake this thread's timers within 1 ns of their deadline instead of the
/// default 50 µs slack, which alone would use up the whole precision budget.
pub(crate) fn minimize_timer_slack() {
    // SAFETY: prctl with integer arguments; failure leaves the default slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
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
    // SAFETY: pid 0 is the calling thread; failure changes nothing.
    unsafe { libc::sched_setscheduler(0, policy, &parameter) == 0 }
}
