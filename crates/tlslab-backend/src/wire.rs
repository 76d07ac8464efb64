//! Wire times from the kernel (DESIGN.md, measurement rule 12): when a client's bytes
//! reached its network stack, or left it, from the socket's own timestamps rather than from a
//! clock read when a system call returned.
//!
//! A user-space clock read after `recv` returns is late by however long the thread took to
//! wake up and run: 10 to 60 µs on a busy machine, as `tlslab run --capture` showed against
//! the packets. The kernel knows better, and says so per socket:
//!
//! - **Receive**: `SO_TIMESTAMPING` with `SOF_TIMESTAMPING_RX_SOFTWARE` stamps every packet as
//!   the network stack takes it in, and each `recvmsg` reports, as `SCM_TIMESTAMPING`, the
//!   stamp of the last packet whose bytes it returns: the read's bytes had all arrived by
//!   then. (TCP merges segments that queue up unread, keeping the latest stamp, so when a
//!   flight's segments all arrived before the client read them, the event is the last
//!   one's arrival: still no later than the user-space clock, which the reading thread
//!   reads after waking to all of them.)
//! - **Send**: a write's last byte is stamped when its packet reaches the device driver
//!   (`SOF_TIMESTAMPING_TX_SOFTWARE`: on the wire, give or take the driver) and, earlier,
//!   when it enters the device layer (`TX_SCHED`, before the queueing discipline). TCP
//!   sends a handshake's small flights at once, inside the `send` call, so the stamps are
//!   waiting on the socket's error queue (`MSG_ERRQUEUE`) when the write returns, keyed by
//!   the byte offset of the write's last byte (`SOF_TIMESTAMPING_OPT_ID`; TCP counts bytes)
//!   and without a copy of the payload (`OPT_TSONLY`). The driver's stamp is the send time;
//!   when it is not there yet, a queueing discipline held the packet (netem's emulated
//!   delay on the client's side of the link, or pacing), and the packet left the client's
//!   stack at the device layer's stamp: the emulated delay is the network's, not the
//!   client's. Only writes that mark an event ask (the ClientHello, the client's Finished):
//!   the error queue is charged to the socket's receive buffer, and a kept connection's
//!   requests must not fill it.
//! - **Connect**: no packet of the TCP handshake reaches user space, but the kernel measured
//!   the SYN's round trip (`TCP_INFO`'s `tcpi_rtt`, µs, from the SYN's departure to the
//!   SYN-ACK's processing, when the client's ACK leaves): the moment `connect()` was called
//!   plus that round trip ([`connected_at`]), without the wake-up that tells the client.
//!
//! Where the kernel cannot (an old kernel, a sandbox refusing the option, a packet that
//! arrived unstamped) each time falls back to the user-space clock, and the sample says
//! which clock timed its events ([`tlslab_core::WireClock`]).
//!
//! The kernel's software timestamps are CLOCK_REALTIME; [`Attempt`](crate::Attempt) places
//! them on its monotonic timeline (`Attempt::instant_of_wall`).

use std::io::{self, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::socket::{
    getsockopt, recvmsg, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned, MsgFlags,
    SockFlag, SockType, TimestampingFlag, Timestamps,
};
use nix::sys::time::TimeSpec;
// `sockopt_impl!` expands to the other by its bare name.
use nix::{getsockopt_impl, sockopt_impl};
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;

/// When bytes crossed the client's socket, as well as the socket could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireTime {
    /// The kernel's software timestamp (CLOCK_REALTIME): a received packet's arrival in the
    /// network stack, or a sent one's departure.
    Kernel(SystemTime),
    /// The kernel gave none: the user-space clock, read when the attempt records it.
    User,
}

/// `SCM_TSTAMP_SND` and `SCM_TSTAMP_SCHED` (linux/errqueue.h): which stamp an error queue
/// entry carries. The libc crate has the flags that ask for them, not these values.
const SCM_TSTAMP_SND: u32 = 0;
const SCM_TSTAMP_SCHED: u32 = 1;

/// `TCP_ESTABLISHED` in `tcpi_state` (linux/tcp_states.h).
const TCP_ESTABLISHED: u8 = 1;

/// The start of Linux's `struct tcp_info`, to `tcpi_total_retrans`: a layout unchanged since
/// Linux 2.6 (fields are only ever appended). Read whole on every kernel, where libc's
/// complete struct would be longer than an older kernel's and fail nix's length check.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TcpInfoStart {
    /// `tcpi_state`.
    pub state: u8,
    /// `tcpi_ca_state`.
    pub ca_state: u8,
    /// `tcpi_retransmits`.
    pub retransmits: u8,
    /// `tcpi_probes`.
    pub probes: u8,
    /// `tcpi_backoff`.
    pub backoff: u8,
    /// `tcpi_options`.
    pub options: u8,
    /// `tcpi_snd_wscale` and `tcpi_rcv_wscale`, four bits each.
    pub window_scales: u8,
    /// `tcpi_delivery_rate_app_limited` and `tcpi_fastopen_client_fail` bits.
    pub delivery_flags: u8,
    /// `tcpi_rto`.
    pub rto: u32,
    /// `tcpi_ato`.
    pub ato: u32,
    /// `tcpi_snd_mss`.
    pub snd_mss: u32,
    /// `tcpi_rcv_mss`.
    pub rcv_mss: u32,
    /// `tcpi_unacked`.
    pub unacked: u32,
    /// `tcpi_sacked`.
    pub sacked: u32,
    /// `tcpi_lost`.
    pub lost: u32,
    /// `tcpi_retrans`.
    pub retrans: u32,
    /// `tcpi_fackets`.
    pub fackets: u32,
    /// `tcpi_last_data_sent`.
    pub last_data_sent: u32,
    /// `tcpi_last_ack_sent`.
    pub last_ack_sent: u32,
    /// `tcpi_last_data_recv`.
    pub last_data_recv: u32,
    /// `tcpi_last_ack_recv`.
    pub last_ack_recv: u32,
    /// `tcpi_pmtu`.
    pub pmtu: u32,
    /// `tcpi_rcv_ssthresh`.
    pub rcv_ssthresh: u32,
    /// The smoothed round trip, µs; after `connect()`, the SYN's.
    pub rtt: u32,
    /// `tcpi_rttvar`.
    pub rttvar: u32,
    /// `tcpi_snd_ssthresh`.
    pub snd_ssthresh: u32,
    /// `tcpi_snd_cwnd`.
    pub snd_cwnd: u32,
    /// `tcpi_advmss`.
    pub advmss: u32,
    /// `tcpi_reordering`.
    pub reordering: u32,
    /// `tcpi_rcv_rtt`.
    pub rcv_rtt: u32,
    /// `tcpi_rcv_space`.
    pub rcv_space: u32,
    /// Segments retransmitted over the connection's life, SYNs included.
    pub total_retrans: u32,
}

sockopt_impl!(
    /// `TCP_INFO`, read to `tcpi_total_retrans` ([`TcpInfoStart`]).
    TcpInfo,
    GetOnly,
    libc::IPPROTO_TCP,
    libc::TCP_INFO,
    TcpInfoStart
);

/// The flags every timestamped socket has: software receive stamps, reported; write stamps
/// keyed by byte offset, without the payload; and, with `send`, the writes' stamps.
fn flags(send: bool) -> TimestampingFlag {
    let mut flags = TimestampingFlag::SOF_TIMESTAMPING_SOFTWARE
        | TimestampingFlag::SOF_TIMESTAMPING_RX_SOFTWARE
        | TimestampingFlag::SOF_TIMESTAMPING_OPT_ID
        | TimestampingFlag::SOF_TIMESTAMPING_OPT_TSONLY;
    if send {
        // nix names the other flags, not TX_SCHED.
        flags |= TimestampingFlag::SOF_TIMESTAMPING_TX_SOFTWARE
            | TimestampingFlag::from_bits_retain(libc::SOF_TIMESTAMPING_TX_SCHED);
    }
    flags
}

/// The monotonic and the wall clock read together, as closely as a few tries manage: a
/// thread preempted between the two reads would misplace every kernel timestamp of what it
/// times by as long. Three reads (monotonic, wall, monotonic) a try; the try whose
/// monotonic reads are closest wins, the wall read placed at their midpoint.
pub fn clocks_now() -> (Instant, SystemTime) {
    let mut best: Option<(Duration, Instant, SystemTime)> = None;
    for _ in 0..4 {
        let before = Instant::now();
        let wall = SystemTime::now();
        let after = Instant::now();
        let spread = after.duration_since(before);
        if best.is_none_or(|(narrowest, _, _)| spread < narrowest) {
            best = Some((spread, before + spread / 2, wall));
        }
        // Two vDSO reads apart: nothing came between.
        if spread < Duration::from_micros(1) {
            break;
        }
    }
    let (_, monotonic, wall) = best.expect("at least one try");
    (monotonic, wall)
}

/// Keeps the kernel's receive timestamping switched on for the life of the process, or says
/// why it cannot be.
///
/// The kernel stamps received packets only while some socket asks (a global switch, counted
/// per socket), and turns the switch on or off from a deferred work item, patching its code
/// each time: a client whose attempts open and close one socket after another would flip it
/// at every attempt and find the first packets of each unstamped. One socket that asks for
/// the whole run keeps it on; the first call waits (a few milliseconds at most) until a
/// datagram it sends itself comes back stamped, so the first attempt is stamped too.
pub fn kernel_timestamps() -> Result<(), TimestampError> {
    static KEEPER: OnceLock<Result<OwnedFd, TimestampError>> = OnceLock::new();
    KEEPER
        .get_or_init(|| {
            let keeper = socket(
                AddressFamily::Inet,
                SockType::Datagram,
                SockFlag::SOCK_CLOEXEC,
                None,
            )
            .map_err(TimestampError::NoSocket)?;
            setsockopt(&keeper, sockopt::Timestamping, &flags(false))
                .map_err(TimestampError::Refused)?;
            wait_until_stamped(&keeper);
            Ok(keeper)
        })
        .as_ref()
        .map(|_| ())
        .map_err(|error| *error)
}

/// Why the kernel cannot stamp this process's packets: the system's own error underneath.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// No socket could be opened to ask for timestamps with.
    #[error("no socket to ask with")]
    NoSocket(#[source] nix::errno::Errno),
    /// The kernel refused `SO_TIMESTAMPING`.
    #[error("SO_TIMESTAMPING refused")]
    Refused(#[source] nix::errno::Errno),
}

/// Sends `keeper` datagrams over loopback until one comes back with a receive stamp, for up
/// to 100 ms; without a loopback to send on, returns at once (the switch turns on anyway,
/// a moment later).
fn wait_until_stamped(keeper: &OwnedFd) {
    use nix::sys::socket::{bind, getsockname, sendto, setsockopt, SockaddrIn};
    let loopback = SockaddrIn::new(127, 0, 0, 1, 0);
    let timeout = nix::sys::time::TimeVal::new(0, 1_000);
    if bind(keeper.as_raw_fd(), &loopback).is_err()
        || setsockopt(keeper, sockopt::ReceiveTimeout, &timeout).is_err()
    {
        return;
    }
    let Ok(address) = getsockname::<SockaddrIn>(keeper.as_raw_fd()) else {
        return;
    };
    let mut control = control_buffer();
    for _ in 0..100 {
        if sendto(keeper.as_raw_fd(), &[0], &address, MsgFlags::empty()).is_err() {
            return;
        }
        let mut byte = [0u8; 1];
        match receive(keeper.as_raw_fd(), &mut byte, &mut control) {
            Ok((_, WireTime::Kernel(_))) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(1)),
            Err(_) => {}
        }
    }
}

/// What timed a run's wire events, for the run's environment record.
pub fn describe_clock() -> String {
    match kernel_timestamps() {
        Ok(()) => "kernel socket timestamps (SO_TIMESTAMPING: receive when the packet reached \
                   the network stack, send when it left for the device; connect from \
                   TCP_INFO's SYN round trip)"
            .to_string(),
        Err(reason @ (TimestampError::NoSocket(errno) | TimestampError::Refused(errno))) => {
            format!("user-space clock after each call returned ({reason}: {errno})")
        }
    }
}

/// When the connection `stream` was established, by the kernel's account: `issued` (read
/// just before `connect()`) plus the SYN's round trip the kernel measured (`tcpi_rtt`, from
/// the SYN's departure to the SYN-ACK's processing, when the client's ACK leaves). Early
/// by the few microseconds the call takes to send the SYN; the call's return, or the
/// wake-up after it, would be late instead: on loopback the handshake completes inside the
/// call, but the listening server, woken by it, often runs before the call returns. `None`
/// when the kernel cannot say: no `TCP_INFO`, not established, or a retransmitted SYN
/// (whose round trip TCP does not time).
pub fn connected_at<F: AsFd>(stream: &F, issued: Instant) -> Option<Instant> {
    let info = getsockopt(stream, TcpInfo).ok()?;
    if info.state != TCP_ESTABLISHED || info.total_retrans != 0 || info.rtt == 0 {
        return None;
    }
    let established = issued + Duration::from_micros(u64::from(info.rtt));
    Some(established.min(Instant::now()))
}

/// A wall-clock time from a kernel timestamp; `None` for the zero the kernel reports when it
/// has none.
fn wall_time(stamp: TimeSpec) -> Option<SystemTime> {
    let (seconds, nanos) = (stamp.tv_sec(), stamp.tv_nsec());
    if seconds <= 0 && nanos <= 0 {
        return None;
    }
    UNIX_EPOCH.checked_add(Duration::new(
        u64::try_from(seconds).ok()?,
        u32::try_from(nanos).ok()?,
    ))
}

/// Room for the control messages of one read (`SCM_TIMESTAMPING`) or one error queue entry
/// (`SCM_TIMESTAMPING` and an `IP(V6)_RECVERR` with its address).
fn control_buffer() -> Vec<u8> {
    nix::cmsg_space!(Timestamps, libc::sock_extended_err, libc::sockaddr_in6)
}

/// A connected TCP stream whose reads and writes say when their bytes crossed the socket:
/// by the kernel's timestamps where it gives them, otherwise [`WireTime::User`].
#[derive(Debug)]
pub struct TimestampedStream {
    stream: TcpStream,
    /// The kernel took the timestamping flags: reads carry receive stamps and marked writes
    /// can ask for send stamps.
    stamping: bool,
    /// Writes are stamped now (switched off for writes that mark no event).
    stamping_sends: bool,
    /// Bytes written since the flags were set: `OPT_ID` keys a TCP write by its last byte's
    /// offset (a 32-bit counter that wraps, as the kernel's does).
    written: u32,
    /// Reused for every read's control messages.
    control: Vec<u8>,
}

impl TimestampedStream {
    /// Asks the kernel to timestamp `stream` (connected: `OPT_ID` counts from the next byte
    /// written, which is the first), its writes too: a handshake's first writes mark events.
    /// A refusal leaves a stream timed by the user-space clock.
    pub fn new(stream: TcpStream) -> TimestampedStream {
        let stamping = kernel_timestamps().is_ok()
            && setsockopt(&stream, sockopt::Timestamping, &flags(true)).is_ok();
        TimestampedStream {
            stream,
            stamping,
            stamping_sends: stamping,
            written: 0,
            control: if stamping {
                control_buffer()
            } else {
                Vec::new()
            },
        }
    }

    /// Whether the kernel timestamps this stream.
    pub fn is_stamped(&self) -> bool {
        self.stamping
    }

    /// The stream, for what the timestamps do not cover (addresses, socket options).
    pub fn get_ref(&self) -> &TcpStream {
        &self.stream
    }

    /// Reads once; returns the bytes read (0: the peer closed) and when the last packet
    /// among them arrived.
    pub async fn read(&mut self, buffer: &mut [u8]) -> io::Result<(usize, WireTime)> {
        if !self.stamping {
            let read = self.stream.read(buffer).await?;
            return Ok((read, WireTime::User));
        }
        let TimestampedStream {
            stream, control, ..
        } = self;
        let descriptor = stream.as_raw_fd();
        loop {
            stream.readable().await?;
            match stream.try_io(Interest::READABLE, || receive(descriptor, buffer, control)) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                result => return result,
            }
        }
    }

    /// Writes all of `data`; with `stamp` (the write marks an event), returns when the
    /// kernel sent its last byte, if it says.
    pub async fn write_all(&mut self, data: &[u8], stamp: bool) -> io::Result<WireTime> {
        let stamp = stamp && self.stamping && !data.is_empty();
        if stamp != self.stamping_sends {
            // A refused switch leaves the flags as they were; the write goes out unstamped.
            if setsockopt(&self.stream, sockopt::Timestamping, &flags(stamp)).is_ok() {
                self.stamping_sends = stamp;
            }
        }
        self.stream.write_all(data).await?;
        self.written = self.written.wrapping_add(data.len() as u32);
        if !(stamp && self.stamping_sends) {
            return Ok(WireTime::User);
        }
        let key = self.written.wrapping_sub(1);
        Ok(sent_time(self.stream.as_raw_fd(), key, &mut self.control)
            .map_or(WireTime::User, WireTime::Kernel))
    }

    /// Sends a FIN (`shutdown(SHUT_WR)`).
    pub async fn shutdown(&mut self) -> io::Result<()> {
        self.stream.shutdown().await
    }
}

/// One `recvmsg`: the bytes read and the receive stamp reported with them.
fn receive(
    descriptor: RawFd,
    buffer: &mut [u8],
    control: &mut [u8],
) -> io::Result<(usize, WireTime)> {
    let mut slices = [IoSliceMut::new(buffer)];
    let message = recvmsg::<()>(descriptor, &mut slices, Some(control), MsgFlags::empty())
        .map_err(io::Error::from)?;
    let mut time = WireTime::User;
    if let Ok(messages) = message.cmsgs() {
        for message in messages {
            if let ControlMessageOwned::ScmTimestampsns(stamps) = message {
                if let Some(wall) = wall_time(stamps.system) {
                    time = WireTime::Kernel(wall);
                }
            }
        }
    }
    Ok((message.bytes, time))
}

/// The send time of the write whose last byte has offset `key`, from the error queue,
/// without waiting: the driver's stamp when it is there, else the device layer's (a
/// queueing discipline holds the packet), else `None` (TCP has not sent that byte yet).
/// Stamps of earlier writes that came late are read past and dropped.
fn sent_time(descriptor: RawFd, key: u32, control: &mut [u8]) -> Option<SystemTime> {
    let mut scheduled = None;
    // A handful at most: two per stamped write.
    for _ in 0..8 {
        let Ok(message) = recvmsg::<()>(
            descriptor,
            &mut [],
            Some(&mut *control),
            MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
        ) else {
            break;
        };
        let (mut wall, mut stamp) = (None, None);
        let Ok(messages) = message.cmsgs() else {
            continue;
        };
        for message in messages {
            match message {
                ControlMessageOwned::ScmTimestampsns(stamps) => wall = wall_time(stamps.system),
                ControlMessageOwned::Ipv4RecvErr(error, _)
                | ControlMessageOwned::Ipv6RecvErr(error, _)
                    if error.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING =>
                {
                    stamp = Some((error.ee_data, error.ee_info));
                }
                _ => {}
            }
        }
        match stamp {
            Some((id, SCM_TSTAMP_SND)) if id == key => return wall.or(scheduled),
            Some((id, SCM_TSTAMP_SCHED)) if id == key => scheduled = wall,
            _ => {}
        }
    }
    scheduled
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected pair on loopback: the client's end timestamped, the server's plain.
    async fn pair() -> (TimestampedStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (client, server) = tokio::join!(TcpStream::connect(address), listener.accept());
        let client = client.unwrap();
        client.set_nodelay(true).unwrap();
        (TimestampedStream::new(client), server.unwrap().0)
    }

    fn wall_now() -> SystemTime {
        SystemTime::now()
    }

    #[tokio::test]
    async fn a_read_arrived_before_user_space_saw_it_and_after_it_was_sent() {
        let (mut client, mut server) = pair().await;
        if !client.is_stamped() {
            eprintln!(
                "skipped: this kernel does not timestamp sockets ({})",
                describe_clock()
            );
            return;
        }
        let mut buffer = [0u8; 64];
        for round in 0..20u8 {
            let before_send = wall_now();
            server.write_all(&[round; 10]).await.unwrap();
            let (read, time) = client.read(&mut buffer).await.unwrap();
            let after_read = wall_now();
            assert_eq!(read, 10);
            let WireTime::Kernel(arrived) = time else {
                panic!("round {round}: the kernel gave no receive timestamp");
            };
            // Physics, not timing: the packet arrived after it was sent and before the
            // read that returned it, on one clock.
            assert!(
                arrived >= before_send,
                "round {round}: {arrived:?} < {before_send:?}"
            );
            assert!(
                arrived <= after_read,
                "round {round}: {arrived:?} > {after_read:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_marked_write_is_stamped_within_its_call_and_others_are_not() {
        let (mut client, mut server) = pair().await;
        if !client.is_stamped() {
            eprintln!(
                "skipped: this kernel does not timestamp sockets ({})",
                describe_clock()
            );
            return;
        }
        let mut buffer = [0u8; 4096];
        for (round, stamp) in [true, false, true, true, false, true]
            .into_iter()
            .enumerate()
        {
            let data = vec![round as u8; 100 * (round + 1)];
            let before = wall_now();
            let time = client.write_all(&data, stamp).await.unwrap();
            let after = wall_now();
            match (stamp, time) {
                (true, WireTime::Kernel(sent)) => {
                    assert!(sent >= before && sent <= after, "round {round}: {sent:?}");
                }
                (false, WireTime::User) => {}
                other => panic!("round {round}: {other:?}"),
            }
            let mut read = 0;
            while read < data.len() {
                read += server.read(&mut buffer).await.unwrap();
            }
        }
    }

    #[tokio::test]
    async fn the_connection_time_falls_within_the_connect_call() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let issued = Instant::now();
        let (client, _server) = tokio::join!(TcpStream::connect(address), listener.accept());
        let returned = Instant::now();
        let client = client.unwrap();
        match connected_at(&client, issued) {
            Some(at) => assert!(at > issued && at <= returned, "{at:?}"),
            None => eprintln!("skipped: no TCP_INFO round trip on this kernel"),
        }
    }

    #[test]
    fn paired_clocks_are_read_together() {
        let before = Instant::now();
        let (monotonic, wall) = clocks_now();
        let after = Instant::now();
        assert!(monotonic >= before && monotonic <= after);
        assert!(wall.duration_since(UNIX_EPOCH).is_ok());
    }

    #[test]
    fn a_zero_stamp_is_no_stamp() {
        assert_eq!(wall_time(TimeSpec::new(0, 0)), None);
        assert_eq!(
            wall_time(TimeSpec::new(2, 5)),
            Some(UNIX_EPOCH + Duration::new(2, 5))
        );
    }
}
