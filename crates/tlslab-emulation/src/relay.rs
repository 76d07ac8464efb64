//! The relay emulator: a userspace TCP relay on the loopback interface, for machines where
//! namespaces need privileges this process lacks.
//!
//! It is lower fidelity than the packet-level emulators, and the numbers it yields are not
//! comparable with theirs:
//! - the client's connection ends at the relay, so the TCP handshake itself is not delayed
//!   (a handshake measured through the relay lacks that one RTT);
//! - delay applies to chunks as the relay reads them, so several TLS records sent together
//!   travel as one, and TCP's own pacing (slow start, ACK clocking) is not delayed at all;
//! - there is no loss and no rate limit (they need packets; `set_profile` refuses them).
//!
//! One thread per route runs an epoll loop over all its connections, so hundreds of concurrent
//! connections cost descriptors, not threads.

use crate::impairment::duration_nanos;
use crate::statistics::ForwarderStatistics;
use crate::sys::{self, Timer, Wakeup};
use crate::{EmulationError, NetworkProfile};
use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::io::Errno;
use socket2::{Domain, SockAddr, SockRef, Socket, Type};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

const LISTENER: u64 = u64::MAX;
const TIMER: u64 = u64::MAX - 1;
const WAKEUP: u64 = u64::MAX - 2;
/// Bytes held per direction of a connection before the relay stops reading from its source:
/// the sender then feels backpressure, as it would from a full path.
const QUEUE_LIMIT_BYTES: usize = 1 << 20;
/// Reads per readiness event, so one busy connection cannot starve the others.
const READS_PER_EVENT: usize = 16;
/// The relay's accept backlog: thousands of agents connect at once when a trial starts.
const BACKLOG: i32 = 4096;

/// The delay settings every relay of a network reads, per chunk.
#[derive(Default)]
struct RelayProfile {
    delay_nanos: AtomicU64,
    jitter_nanos: AtomicU64,
}

/// All relays of one network (one per routed server).
pub(crate) struct RelaySet {
    profile: Arc<RelayProfile>,
    statistics: Arc<Mutex<ForwarderStatistics>>,
    relays: Mutex<Vec<Relay>>,
}

impl RelaySet {
    pub(crate) fn new() -> RelaySet {
        RelaySet {
            profile: Arc::default(),
            statistics: Arc::default(),
            relays: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn set_profile(&self, profile: &NetworkProfile) -> Result<(), EmulationError> {
        if profile.loss > 0.0 || profile.rate_bits_per_second.is_some() {
            return Err(EmulationError::new(
                "the relay emulator cannot emulate loss or a rate limit (it relays bytes, not \
                 packets)",
                "use --emulator tun or --emulator netem (as root), or set only rtt and jitter",
            ));
        }
        self.profile
            .delay_nanos
            .store(duration_nanos(profile.one_way_delay()), Ordering::Relaxed);
        self.profile
            .jitter_nanos
            .store(duration_nanos(profile.jitter), Ordering::Relaxed);
        Ok(())
    }

    /// Starts a relay listening on the loopback address of `server`'s family, forwarding to
    /// `server`, and returns the relay's address.
    pub(crate) fn route(&self, server: SocketAddr) -> Result<SocketAddr, EmulationError> {
        let mut target = server;
        if target.ip().is_unspecified() {
            // A server listening on every address is reached on loopback.
            target.set_ip(loopback_of(server));
        }
        let relay = Relay::start(
            target,
            Arc::clone(&self.profile),
            Arc::clone(&self.statistics),
        )
        .map_err(|error| EmulationError::io("could not start the relay", error))?;
        let address = relay.address;
        self.relays
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(relay);
        Ok(address)
    }

    pub(crate) fn statistics(&self) -> ForwarderStatistics {
        self.statistics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn reset_statistics(&self) {
        *self
            .statistics
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = ForwarderStatistics::default();
    }

    pub(crate) fn close(&self) {
        let relays =
            std::mem::take(&mut *self.relays.lock().unwrap_or_else(PoisonError::into_inner));
        drop(relays); // each stops and joins its thread
    }
}

fn loopback_of(address: SocketAddr) -> std::net::IpAddr {
    match address {
        SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
    }
}

struct Control {
    wakeup: Wakeup,
    stop: AtomicBool,
}

struct Relay {
    address: SocketAddr,
    control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    fn start(
        server: SocketAddr,
        profile: Arc<RelayProfile>,
        statistics: Arc<Mutex<ForwarderStatistics>>,
    ) -> io::Result<Relay> {
        let listener = listen(SocketAddr::new(loopback_of(server), 0))?;
        let address = listener.local_addr()?;
        let control = Arc::new(Control {
            wakeup: Wakeup::new()?,
            stop: AtomicBool::new(false),
        });
        let epoll = sys::new_epoll()?;
        let timer = Timer::new()?;
        epoll::add(
            &epoll,
            &listener,
            EventData::new_u64(LISTENER),
            sys::READABLE,
        )?;
        epoll::add(&epoll, &timer, EventData::new_u64(TIMER), sys::READABLE)?;
        epoll::add(
            &epoll,
            &control.wakeup,
            EventData::new_u64(WAKEUP),
            sys::READABLE,
        )?;
        let mut relay_loop = RelayLoop {
            control: Arc::clone(&control),
            listener,
            server,
            timer,
            armed: None,
            pairs: HashMap::new(),
            next_id: 0,
            context: Context {
                epoll,
                schedule: BinaryHeap::new(),
                profile,
                statistics,
                random: fastrand::Rng::new(),
                buffer: vec![0; 65_536],
            },
        };
        let thread = std::thread::Builder::new()
            .name("tlslab-relay".into())
            .spawn(move || relay_loop.run())?;
        Ok(Relay {
            address,
            control,
            thread: Some(thread),
        })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::Release);
        self.control.wakeup.signal();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What travels through one direction, in order.
enum Item {
    Data {
        bytes: Vec<u8>,
        written: usize,
    },
    /// The source shut down its sending side: shut down the destination's.
    End,
    /// The source connection was reset: reset the destination.
    Reset,
}

struct Chunk {
    due: u64,
    item: Item,
}

/// One direction of a connection pair: read from `sockets[d]`, written to `sockets[1 - d]`.
#[derive(Default)]
struct Flow {
    queue: VecDeque<Chunk>,
    queued_bytes: usize,
    read_closed: bool,
    /// End delivered: nothing more will be written.
    finished: bool,
    /// The destination's send buffer was full: wait for it to become writable.
    blocked: bool,
    last_due: u64,
}

/// A client connection (side 0) and the relay's connection to the server (side 1).
struct Pair {
    sockets: [TcpStream; 2],
    connected: bool,
    flows: [Flow; 2],
    interest: [EventFlags; 2],
    registered: [bool; 2],
}

/// The pair must be closed at once, with a reset to whichever side is still there.
struct Abort;

fn token(id: u64, side: usize) -> u64 {
    id << 1 | side as u64
}

/// Everything the per-pair handlers need besides the pair itself.
struct Context {
    epoll: OwnedFd,
    /// (due, pair id, direction): a min-heap of flushes to do.
    schedule: BinaryHeap<Reverse<(u64, u64, usize)>>,
    profile: Arc<RelayProfile>,
    statistics: Arc<Mutex<ForwarderStatistics>>,
    random: fastrand::Rng,
    buffer: Vec<u8>,
}

impl Context {
    fn enqueue(&mut self, pair: &mut Pair, id: u64, direction: usize, item: Item) {
        let now = sys::monotonic_nanos();
        let delay = self.profile.delay_nanos.load(Ordering::Relaxed);
        let jitter = self.profile.jitter_nanos.load(Ordering::Relaxed);
        let delay = if jitter > 0 {
            self.random
                .u64(delay.saturating_sub(jitter)..=delay + jitter)
        } else {
            delay
        };
        let flow = &mut pair.flows[direction];
        // In order, like the packets of one direction on a path.
        let due = (now + delay).max(flow.last_due);
        flow.last_due = due;
        if let Item::Data { bytes, .. } = &item {
            flow.queued_bytes += bytes.len();
        }
        flow.queue.push_back(Chunk { due, item });
        self.schedule.push(Reverse((due, id, direction)));
    }

    fn read(&mut self, pair: &mut Pair, id: u64, side: usize) {
        for _ in 0..READS_PER_EVENT {
            if pair.flows[side].queued_bytes >= QUEUE_LIMIT_BYTES {
                break;
            }
            let item = match (&pair.sockets[side]).read(&mut self.buffer) {
                Ok(0) => Item::End,
                Ok(length) => Item::Data {
                    bytes: self.buffer[..length].to_vec(),
                    written: 0,
                },
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => Item::Reset,
            };
            let last = !matches!(item, Item::Data { .. });
            self.enqueue(pair, id, side, item);
            if last {
                pair.flows[side].read_closed = true;
                break;
            }
        }
    }

    /// Writes everything due in `direction`.
    fn flush(&mut self, pair: &mut Pair, direction: usize) -> Result<(), Abort> {
        let destination = 1 - direction;
        if destination == 1 && !pair.connected {
            return Ok(()); // flushed when the connect completes
        }
        let now = sys::monotonic_nanos();
        let flow = &mut pair.flows[direction];
        let mut socket = &pair.sockets[destination];
        flow.blocked = false;
        while let Some(chunk) = flow.queue.front_mut() {
            if chunk.due > now {
                break;
            }
            match &mut chunk.item {
                Item::Data { bytes, written } => match socket.write(&bytes[*written..]) {
                    Ok(count) => {
                        if *written == 0 {
                            self.record(direction, bytes.len(), chunk.due);
                        }
                        *written += count;
                        if *written < bytes.len() {
                            flow.blocked = true;
                            break;
                        }
                        flow.queued_bytes -= bytes.len();
                        flow.queue.pop_front();
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    // An unwatched socket would never report writable again.
                    Err(error)
                        if error.kind() == io::ErrorKind::WouldBlock
                            && pair.registered[destination] =>
                    {
                        flow.blocked = true;
                        break;
                    }
                    Err(_) => return Err(Abort),
                },
                Item::End => {
                    let _ = socket.shutdown(Shutdown::Write);
                    flow.finished = true;
                    flow.queue.pop_front();
                }
                Item::Reset => return Err(Abort),
            }
        }
        Ok(())
    }

    fn record(&self, direction: usize, length: usize, due: u64) {
        let late = sys::monotonic_nanos().saturating_sub(due);
        let mut statistics = self
            .statistics
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let counters = if direction == 0 {
            &mut statistics.client_to_server
        } else {
            &mut statistics.server_to_client
        };
        counters.packets_forwarded += 1;
        counters.bytes_forwarded += length as u64;
        statistics.delay_error.record_nanos(late);
    }

    /// Registers interest in what each socket can do next; level-triggered, so anything not
    /// wanted (a full queue, a closed source) must be switched off.
    fn update_interest(&self, pair: &mut Pair, id: u64) {
        for side in 0..2 {
            if !pair.registered[side] {
                continue;
            }
            let flow = &pair.flows[side];
            let mut interest = EventFlags::empty();
            if !flow.read_closed
                && flow.queued_bytes < QUEUE_LIMIT_BYTES
                && (side == 0 || pair.connected)
            {
                interest |= sys::READABLE;
            }
            if (side == 1 && !pair.connected) || pair.flows[1 - side].blocked {
                interest |= sys::WRITABLE;
            }
            if interest != pair.interest[side]
                && epoll::modify(
                    &self.epoll,
                    &pair.sockets[side],
                    EventData::new_u64(token(id, side)),
                    interest,
                )
                .is_ok()
            {
                pair.interest[side] = interest;
            }
        }
    }

    /// Handles readiness of one socket; returns whether the pair is done.
    fn handle(
        &mut self,
        pair: &mut Pair,
        id: u64,
        side: usize,
        events: EventFlags,
    ) -> Result<bool, Abort> {
        if side == 1 && !pair.connected && events.intersects(sys::WRITABLE | sys::HANG_UP) {
            match pair.sockets[1].take_error() {
                Ok(None) => pair.connected = true,
                _ => return Err(Abort), // the server refused: reset the client
            }
        }
        let readable = events.intersects(sys::READABLE | sys::HANG_UP);
        if readable && !pair.flows[side].read_closed && (side == 0 || pair.connected) {
            self.read(pair, id, side);
        } else if events.intersects(sys::HANG_UP) && pair.flows[side].read_closed {
            // Level-triggered hang-ups repeat until the socket is closed, and the pair may
            // have to wait for data in flight towards it: stop watching the socket. Both
            // directions of it are shut, so writing what is still due there fails and aborts
            // the pair, which is what the peer's reset (or close) means.
            let _ = epoll::delete(&self.epoll, &pair.sockets[side]);
            pair.registered[side] = false;
        }
        self.flush(pair, 0)?;
        self.flush(pair, 1)?;
        Ok(pair.flows[0].finished && pair.flows[1].finished)
    }
}

struct RelayLoop {
    control: Arc<Control>,
    listener: TcpListener,
    server: SocketAddr,
    timer: Timer,
    armed: Option<u64>,
    pairs: HashMap<u64, Pair>,
    next_id: u64,
    context: Context,
}

impl RelayLoop {
    fn run(&mut self) {
        sys::minimize_timer_slack();
        let mut events = sys::empty_events::<64>();
        while !self.control.stop.load(Ordering::Acquire) {
            let now = sys::monotonic_nanos();
            while let Some(&Reverse((due, id, direction))) = self.context.schedule.peek() {
                if due > now {
                    break;
                }
                self.context.schedule.pop();
                self.on_pair(id, |context, pair| {
                    context.flush(pair, direction)?;
                    Ok(pair.flows[0].finished && pair.flows[1].finished)
                });
            }
            if let Some(&Reverse((due, ..))) = self.context.schedule.peek() {
                if self.armed != Some(due) && self.timer.arm_at(due).is_ok() {
                    self.armed = Some(due);
                }
            }
            let count = match sys::wait(&self.context.epoll, &mut events, -1) {
                Ok(count) => count,
                Err(_) => break,
            };
            for event in &events[..count] {
                let (token, readiness) = (event.data.u64(), event.flags);
                match token {
                    LISTENER => self.accept_all(),
                    TIMER => {
                        self.timer.drain();
                        self.armed = None;
                    }
                    WAKEUP => self.control.wakeup.drain(),
                    token => {
                        let side = (token & 1) as usize;
                        self.on_pair(token >> 1, |context, pair| {
                            context.handle(pair, token >> 1, side, readiness)
                        });
                    }
                }
            }
        }
    }

    /// Runs `work` on a pair still open, then closes it if done (gracefully) or aborted (with
    /// resets), else updates its epoll interest.
    fn on_pair(
        &mut self,
        id: u64,
        work: impl FnOnce(&mut Context, &mut Pair) -> Result<bool, Abort>,
    ) {
        let Some(pair) = self.pairs.get_mut(&id) else {
            return; // closed earlier; a stale event or schedule entry
        };
        match work(&mut self.context, pair) {
            Ok(false) => self.context.update_interest(pair, id),
            Ok(true) => {
                self.pairs.remove(&id);
            }
            Err(Abort) => {
                if let Some(pair) = self.pairs.remove(&id) {
                    for socket in &pair.sockets {
                        set_reset_on_close(socket);
                    }
                }
            }
        }
    }

    fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((client, _)) => self.open_pair(client),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                // WouldBlock: all accepted. Anything else (out of descriptors) is retried on
                // the next readiness event.
                Err(_) => break,
            }
        }
    }

    fn open_pair(&mut self, client: TcpStream) {
        let _ = client.set_nodelay(true);
        if client.set_nonblocking(true).is_err() {
            return;
        }
        let (server, connected) = match connect_nonblocking(self.server) {
            Ok(connection) => connection,
            Err(_) => {
                set_reset_on_close(&client);
                return;
            }
        };
        let id = self.next_id;
        self.next_id += 1;
        let interest = [
            sys::READABLE,
            if connected {
                sys::READABLE
            } else {
                sys::WRITABLE
            },
        ];
        let pair = Pair {
            sockets: [client, server],
            connected,
            flows: Default::default(),
            interest,
            registered: [true, true],
        };
        for (side, socket) in pair.sockets.iter().enumerate() {
            let data = EventData::new_u64(token(id, side));
            if epoll::add(&self.context.epoll, socket, data, interest[side]).is_err() {
                set_reset_on_close(&pair.sockets[0]);
                return;
            }
        }
        self.pairs.insert(id, pair);
    }
}

/// An abortive close (RST), so a reset travels through the relay as a reset.
fn set_reset_on_close(socket: &TcpStream) {
    let _ = SockRef::from(socket).set_linger(Some(Duration::ZERO));
}

/// A non-blocking, close-on-exec TCP socket of `address`'s family.
fn new_socket(address: SocketAddr) -> io::Result<Socket> {
    Socket::new(
        Domain::for_address(address),
        Type::STREAM.nonblocking(),
        None,
    )
}

/// A listener with a deep backlog (std's `bind` uses 128).
fn listen(address: SocketAddr) -> io::Result<TcpListener> {
    let socket = new_socket(address)?;
    socket.bind(&SockAddr::from(address))?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Starts a connect without waiting for it; returns whether it already completed.
fn connect_nonblocking(address: SocketAddr) -> io::Result<(TcpStream, bool)> {
    let socket = new_socket(address)?;
    // Handshake messages are small and latency-bound: Nagle would hold them back.
    socket.set_tcp_nodelay(true)?;
    match socket.connect(&SockAddr::from(address)) {
        Ok(()) => Ok((socket.into(), true)),
        Err(error) if Errno::from_io_error(&error) == Some(Errno::INPROGRESS) => {
            Ok((socket.into(), false))
        }
        Err(error) => Err(error),
    }
}
