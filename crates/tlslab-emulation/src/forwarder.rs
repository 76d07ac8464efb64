//! The tun emulator's forwarder thread: moves IP packets between the two TUN devices, each held
//! until its release time.
//!
//! Precision comes from three things. Deadlines are absolute CLOCK_MONOTONIC nanoseconds on a
//! timerfd (epoll's own timeout is in milliseconds) with the thread's timer slack at 1 ns. The
//! timer is armed a little before the release, by an estimate of how late wake-ups arrive, and
//! the rest is spent polling (epoll with a zero timeout, so arriving packets are still read).
//! And the thread asks for SCHED_FIFO (while it is not saturated, see `PriorityGovernor`), so
//! a busy application thread on the same core cannot hold a due packet back by a scheduler
//! time slice.

use crate::impairment::{Impairment, Verdict};
use crate::statistics::{DelayErrorHistogram, DirectionStatistics, ForwarderStatistics};
use crate::sys::{self, Timer, Wakeup};
use crate::{EmulationError, NetworkProfile};
use rustix::event::epoll::{self, EventData};
use rustix::io::Errno;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const CLIENT_DEVICE: u64 = 0;
const SERVER_DEVICE: u64 = 1;
const TIMER: u64 = 2;
const WAKEUP: u64 = 3;

/// Packets read from one device before the loop looks at due releases again: large enough to
/// amortize the epoll call in bulk transfers, small enough that the other direction waits at
/// most a few tens of µs.
const READ_BATCH: usize = 32;
/// Packets held per direction at most (about 150 MB at 1500 bytes): a memory cap for huge
/// delays at high rates, not a queue model (that is the rate queue's job).
const DELAY_LINE_LIMIT: usize = 100_000;
/// Spare packet buffers kept for reuse, so steady traffic allocates nothing.
const POOL_LIMIT: usize = 4096;
/// Timer wake-up lateness assumed before any was measured. The timer is armed by the
/// estimate plus `WAKE_MARGIN` before a release, and the remainder is spent polling; the
/// bounds keep that polling short (below the floor, a late wake-up costs precision; above the
/// ceiling, polling would take the core from the application threads on a small machine).
const WAKE_LATENESS_INITIAL: u64 = 10_000;
const WAKE_MARGIN: u64 = 3_000;
const WAKE_EARLY_FLOOR: u64 = 5_000;
const WAKE_EARLY_CEILING: u64 = 30_000;
/// Lateness samples are capped here before averaging: a rare scheduling hiccup of a
/// millisecond says nothing about the next wake-up and must not make the loop poll for long.
const WAKE_SAMPLE_CAP: u64 = 100_000;
/// How long `set_profile` and `statistics` wait for the thread to answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Requests from the owning `Network` to the thread, answered under the same lock.
#[derive(Default)]
struct Requests {
    profile: Option<NetworkProfile>,
    profile_requested: u64,
    profile_applied: u64,
    statistics_requested: u64,
    statistics_served: u64,
    reset_requested: bool,
    statistics: ForwarderStatistics,
    exited: bool,
}

struct Shared {
    wakeup: Wakeup,
    stop: AtomicBool,
    /// Set with each request so the loop checks the lock only when there is something to do.
    pending: AtomicBool,
    requests: Mutex<Requests>,
    answered: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub(crate) struct Forwarder {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Forwarder {
    /// Starts the thread; it owns both devices from now on and closes them when it stops.
    pub(crate) fn start(client_device: OwnedFd, server_device: OwnedFd) -> io::Result<Forwarder> {
        let shared = Arc::new(Shared {
            wakeup: Wakeup::new()?,
            stop: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            requests: Mutex::new(Requests::default()),
            answered: Condvar::new(),
        });
        let mut engine = Engine::new(Arc::clone(&shared), client_device, server_device)?;
        let thread = std::thread::Builder::new()
            .name("tlslab-forwarder".into())
            .spawn(move || {
                engine.run();
                let mut requests = engine.shared.lock();
                requests.exited = true;
                engine.shared.answered.notify_all();
            })?;
        Ok(Forwarder {
            shared,
            thread: Some(thread),
        })
    }

    /// Asks the thread for something (`ask` returns the request's number) and waits until
    /// `done` says that number was answered.
    fn request<T>(
        &self,
        ask: impl FnOnce(&mut Requests) -> u64,
        done: impl Fn(&Requests, u64) -> bool,
        answer: impl FnOnce(&Requests) -> T,
    ) -> Result<T, EmulationError> {
        let mut requests = self.shared.lock();
        let number = ask(&mut requests);
        self.shared.pending.store(true, Ordering::Release);
        self.shared.wakeup.signal();
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        while !done(&requests, number) {
            let left = deadline.saturating_duration_since(Instant::now());
            if requests.exited || left.is_zero() {
                return Err(EmulationError::new(
                    "the tun forwarder thread is not responding",
                    "close this network and create a new one",
                ));
            }
            requests = self
                .shared
                .answered
                .wait_timeout(requests, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(answer(&requests))
    }

    /// Returns once the thread applies `profile`: every packet it reads afterwards gets it.
    pub(crate) fn set_profile(&self, profile: &NetworkProfile) -> Result<(), EmulationError> {
        self.request(
            |requests| {
                requests.profile = Some(profile.clone());
                requests.profile_requested += 1;
                requests.profile_requested
            },
            |requests, number| requests.profile_applied >= number,
            |_| (),
        )
    }

    fn request_statistics(&self, reset: bool) -> Result<ForwarderStatistics, EmulationError> {
        self.request(
            |requests| {
                requests.reset_requested |= reset;
                requests.statistics_requested += 1;
                requests.statistics_requested
            },
            |requests, number| requests.statistics_served >= number,
            |requests| requests.statistics.clone(),
        )
    }

    pub(crate) fn statistics(&self) -> ForwarderStatistics {
        self.request_statistics(false)
            // A dead thread has nothing newer than what it last published.
            .unwrap_or_else(|_| self.shared.lock().statistics.clone())
    }

    pub(crate) fn reset_statistics(&self) {
        let _ = self.request_statistics(true);
    }

    /// Stops the thread and waits for it; the devices close with it.
    pub(crate) fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wakeup.signal();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs the forwarder under SCHED_FIFO while it has spare time, and under the normal policy
/// while it is saturated.
///
/// Real-time priority lets it preempt busy application threads (TLS handshakes are CPU-heavy,
/// and a normal thread would wait for a scheduler slice of milliseconds). But a real-time
/// thread that never blocks, as in a bulk transfer with no delay, is throttled by the kernel
/// (sched_rt_runtime_us: stopped for 50 ms each second) or, without throttling, starves its
/// core. Saturated, it has no precision to protect anyway, so it steps down until it idles
/// again.
struct PriorityGovernor {
    permitted: bool,
    realtime: bool,
    window_start: u64,
    blocked: u64,
}

/// Busy fraction is judged over windows of this length.
const GOVERNOR_WINDOW: u64 = 100_000_000;
/// Step down above this busy fraction (in percent); step up again below the lower one.
const GOVERNOR_BUSY_HIGH: u64 = 80;
const GOVERNOR_BUSY_LOW: u64 = 50;

impl PriorityGovernor {
    fn new() -> PriorityGovernor {
        let permitted = sys::set_realtime_priority(true);
        PriorityGovernor {
            permitted,
            realtime: permitted,
            window_start: sys::monotonic_nanos(),
            blocked: 0,
        }
    }

    /// Called after each epoll wait, which returned at `now`; `blocked_since` is when a
    /// blocking wait began.
    fn account(&mut self, blocked_since: Option<u64>, now: u64) {
        if !self.permitted {
            return;
        }
        if let Some(since) = blocked_since {
            self.blocked += now.saturating_sub(since);
        }
        let elapsed = now.saturating_sub(self.window_start);
        if elapsed < GOVERNOR_WINDOW {
            return;
        }
        let busy_percent = 100 - (self.blocked.min(elapsed) * 100 / elapsed);
        if self.realtime && busy_percent > GOVERNOR_BUSY_HIGH {
            self.realtime = !sys::set_realtime_priority(false);
        } else if !self.realtime && busy_percent < GOVERNOR_BUSY_LOW {
            self.realtime = sys::set_realtime_priority(true);
        }
        self.window_start = now;
        self.blocked = 0;
    }
}

struct Packet {
    release: u64,
    data: Vec<u8>,
}

/// One direction: packets read from one device, held in `queue`, written to the other (lane
/// `i` reads device `i` and writes device `1 - i`).
struct Lane {
    link: Impairment,
    /// Release times never decrease along the queue (the link model preserves order), so
    /// the front is always the next packet due.
    queue: VecDeque<Packet>,
    statistics: DirectionStatistics,
}

impl Lane {
    fn new() -> Lane {
        Lane {
            link: Impairment::new(&NetworkProfile::default(), fastrand::Rng::new()),
            queue: VecDeque::new(),
            statistics: DirectionStatistics::default(),
        }
    }

    fn next_release(&self) -> Option<u64> {
        self.queue.front().map(|packet| packet.release)
    }

    /// Writes one packet to `destination` and records how late it went out.
    fn write(
        &mut self,
        destination: BorrowedFd<'_>,
        data: &[u8],
        release: u64,
        errors: &mut DelayErrorHistogram,
    ) {
        let written_at = sys::monotonic_nanos();
        match rustix::io::write(destination, data) {
            Ok(_) => {
                self.statistics.packets_forwarded += 1;
                self.statistics.bytes_forwarded += data.len() as u64;
                errors.record_nanos(written_at.saturating_sub(release));
            }
            Err(_) => self.statistics.write_errors += 1,
        }
    }

    /// Writes every packet due at `now` to `destination`, returning their buffers to `pool`.
    fn release_due(
        &mut self,
        destination: BorrowedFd<'_>,
        now: u64,
        errors: &mut DelayErrorHistogram,
        pool: &mut Vec<Vec<u8>>,
    ) {
        while self
            .queue
            .front()
            .is_some_and(|packet| packet.release <= now)
        {
            let Some(packet) = self.queue.pop_front() else {
                break;
            };
            self.write(destination, &packet.data, packet.release, errors);
            if pool.len() < POOL_LIMIT {
                pool.push(packet.data);
            }
        }
    }
}

struct Engine {
    shared: Arc<Shared>,
    epoll: OwnedFd,
    timer: Timer,
    /// The client and the server TUN device, owned here so they live exactly as long as the
    /// thread.
    devices: [OwnedFd; 2],
    lanes: [Lane; 2],
    errors: DelayErrorHistogram,
    pool: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    /// The deadline the timer is armed for, if any.
    armed: Option<u64>,
    /// A moving average of how late timer wake-ups arrived, in nanoseconds.
    wake_lateness: u64,
}

impl Engine {
    fn new(shared: Arc<Shared>, client: OwnedFd, server: OwnedFd) -> io::Result<Engine> {
        let epoll = sys::new_epoll()?;
        let timer = Timer::new()?;
        let watch = |fd: BorrowedFd<'_>, token| {
            epoll::add(&epoll, fd, EventData::new_u64(token), sys::READABLE)
        };
        watch(client.as_fd(), CLIENT_DEVICE)?;
        watch(server.as_fd(), SERVER_DEVICE)?;
        watch(timer.as_fd(), TIMER)?;
        watch(shared.wakeup.as_fd(), WAKEUP)?;
        Ok(Engine {
            shared,
            epoll,
            timer,
            devices: [client, server],
            lanes: [Lane::new(), Lane::new()],
            errors: DelayErrorHistogram::default(),
            pool: Vec::new(),
            // The largest IP packet: the device MTU is 1500, but a reader must never truncate.
            scratch: vec![0; 65_536],
            armed: None,
            wake_lateness: WAKE_LATENESS_INITIAL,
        })
    }

    fn run(&mut self) {
        sys::minimize_timer_slack();
        let mut governor = PriorityGovernor::new();
        let mut events = sys::empty_events::<8>();
        while !self.shared.stop.load(Ordering::Acquire) {
            if self.shared.pending.swap(false, Ordering::AcqRel) {
                self.serve_requests();
            }
            let now = sys::monotonic_nanos();
            self.release_due(now);
            let timeout = match self.next_release() {
                None => -1,
                Some(release) => {
                    let early = self.wake_early();
                    if release <= now + early {
                        0 // close enough: poll until due
                    } else {
                        let deadline = release - early;
                        if self.armed != Some(deadline) && self.timer.arm_at(deadline).is_ok() {
                            self.armed = Some(deadline);
                        }
                        -1
                    }
                }
            };
            let blocked_since = (timeout != 0).then(sys::monotonic_nanos);
            let count = match sys::wait(&self.epoll, &mut events, timeout) {
                Ok(count) => count,
                Err(_) => break, // only a bug makes epoll_wait fail: stop rather than spin
            };
            let woke = sys::monotonic_nanos();
            governor.account(blocked_since, woke);
            for event in &events[..count] {
                match event.data.u64() {
                    CLIENT_DEVICE => self.receive(0),
                    SERVER_DEVICE => self.receive(1),
                    TIMER => self.timer_fired(woke),
                    WAKEUP => self.shared.wakeup.drain(),
                    _ => {}
                }
            }
        }
        self.serve_requests();
    }

    fn next_release(&self) -> Option<u64> {
        match (self.lanes[0].next_release(), self.lanes[1].next_release()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn release_due(&mut self, now: u64) {
        for (index, lane) in self.lanes.iter_mut().enumerate() {
            let destination = self.devices[1 - index].as_fd();
            lane.release_due(destination, now, &mut self.errors, &mut self.pool);
        }
    }

    /// How long before a release the timer is armed.
    fn wake_early(&self) -> u64 {
        (self.wake_lateness + WAKE_MARGIN).clamp(WAKE_EARLY_FLOOR, WAKE_EARLY_CEILING)
    }

    /// `woke` is when the wait returned, before any event of the batch was handled.
    fn timer_fired(&mut self, woke: u64) {
        self.timer.drain();
        if let Some(deadline) = self.armed.take() {
            // Learn how late wake-ups come on this machine (an average over ~16 wake-ups).
            let lateness = woke.saturating_sub(deadline).min(WAKE_SAMPLE_CAP);
            self.wake_lateness = (self.wake_lateness * 15 + lateness) / 16;
        }
    }

    /// Reads a batch of packets from one device and schedules (or drops) each.
    fn receive(&mut self, index: usize) {
        for _ in 0..READ_BATCH {
            let length = match rustix::io::read(&self.devices[index], &mut self.scratch) {
                Ok(0) => break,
                Ok(length) => length,
                Err(Errno::INTR) => continue,
                Err(_) => break, // WouldBlock: drained
            };
            let now = sys::monotonic_nanos();
            // Packets due while this burst is being read go out first, in both directions.
            if self.next_release().is_some_and(|release| release <= now) {
                self.release_due(now);
            }
            let lane = &mut self.lanes[index];
            if lane.queue.len() >= DELAY_LINE_LIMIT {
                lane.statistics.dropped_queue_full += 1;
                continue;
            }
            match lane.link.admit(now, length) {
                Verdict::DropLoss => lane.statistics.dropped_loss += 1,
                Verdict::DropQueueFull => lane.statistics.dropped_queue_full += 1,
                Verdict::Release(release) if release <= now && lane.queue.is_empty() => {
                    // Due already (no delay configured): write from the read buffer, no copy.
                    let destination = self.devices[1 - index].as_fd();
                    lane.write(
                        destination,
                        &self.scratch[..length],
                        release,
                        &mut self.errors,
                    );
                }
                Verdict::Release(release) => {
                    let mut data = self.pool.pop().unwrap_or_default();
                    data.clear();
                    data.extend_from_slice(&self.scratch[..length]);
                    lane.queue.push_back(Packet { release, data });
                }
            }
        }
    }

    fn serve_requests(&mut self) {
        let shared = Arc::clone(&self.shared);
        let mut requests = shared.lock();
        if requests.profile_requested > requests.profile_applied {
            if let Some(profile) = requests.profile.take() {
                for lane in &mut self.lanes {
                    lane.link.set_profile(&profile);
                }
            }
            requests.profile_applied = requests.profile_requested;
        }
        if requests.statistics_requested > requests.statistics_served {
            let [client_to_server, server_to_client] = self
                .lanes
                .each_mut()
                .map(|lane| std::mem::take(&mut lane.statistics));
            let delta = ForwarderStatistics {
                client_to_server,
                server_to_client,
                delay_error: std::mem::take(&mut self.errors),
            };
            if std::mem::take(&mut requests.reset_requested) {
                requests.statistics = ForwarderStatistics::default();
            } else {
                requests.statistics.merge(&delta);
            }
            requests.statistics_served = requests.statistics_requested;
        }
        shared.answered.notify_all();
    }
}
