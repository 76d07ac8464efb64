//! TCP connections in a capture: which side is the client, when the TCP handshake happened,
//! each direction put back in order, and the TLS handshake on top. A connection's handshake
//! is handed on once it is over (TLS 1.2: once the first response byte came, or the
//! connection closed) and its state freed; the connection itself stays as a small marker
//! until well after it closed, so memory holds only connections in progress and recent ones.
//!
//! Counting follows tshark's `tcp.stream`: a connection runs from its first segment (its SYN,
//! or whatever the capture saw first) to its last, whatever the close (FIN both ways, a
//! half-close, a reset, a reset after FINs, retransmitted FINs and ACKs after it). Only a SYN
//! that is not the connection's own (another initial sequence number, as when a client
//! reuses its port after TIME_WAIT) opens a new connection on the same two endpoints.

use std::collections::HashMap;
use std::net::SocketAddr;

use crate::packets::TcpSegment;
use crate::stream::Stream;
use crate::tls::{Direction, Handshake};

/// A handshake silent this long (in capture time) is given up and ends as a timeout; the
/// connection itself is remembered longer (`CLOSED_KEPT_NS`, `OPEN_KEPT_NS`).
pub const IDLE_TIMEOUT_NS: u64 = 60_000_000_000;

/// A closed connection (a reset, or a FIN each way) is remembered this long after its last
/// segment, as long as Linux keeps a socket in TIME_WAIT, so that late retransmissions of
/// the FINs and their ACKs still belong to it rather than opening a connection of their own.
const CLOSED_KEPT_NS: u64 = 60_000_000_000;

/// A connection that never closed in the capture is remembered this long silent: longer
/// than the idle timeouts of common servers and load balancers (60 to 350 s), so that a
/// keep-alive connection that wakes up, or the FINs that close it at that timeout, are still
/// the same connection. Its handshake, if still in progress, ended at [`IDLE_TIMEOUT_NS`].
const OPEN_KEPT_NS: u64 = 600_000_000_000;

/// How often (in segments) idle connections are looked for...
const SWEEP_EVERY: u32 = 8192;

/// ...and at most how often in capture time: forgetting needs no finer steps than this, and
/// each sweep walks recent closed connections too.
const SWEEP_INTERVAL_NS: u64 = 1_000_000_000;

/// Connection states kept for reuse: one is over a kilobyte, and allocating it anew for
/// every connection made the allocator merge its free lists each time.
const SPARE_STATES: usize = 64;

/// How a connection's handshake ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The handshake completed.
    Done,
    /// A reset, from the server or the client, before it completed.
    Reset { by_server: bool },
    /// A FIN before it completed.
    Closed { by_server: bool },
    /// Silent for [`IDLE_TIMEOUT_NS`] before it completed.
    Timeout,
    /// The capture shows no more of it: neither a success nor a failure (see [`Unseen`]).
    Unseen(Unseen),
}

/// Why a capture shows only the start of a handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unseen {
    /// The capture ended while the handshake was in progress.
    CaptureEnded,
    /// The connection went on (or closed) past bytes the capture does not hold: a capture
    /// filtered to handshake records, or packets lost before the capture point.
    RecordsAbsent,
    /// Nothing of the connection for a minute after the server answered, and no close.
    Silent,
}

/// One TLS connection, as the capture saw it.
#[derive(Debug)]
pub struct Connection {
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// Capture times of the TCP handshake's three segments, where seen.
    pub syn: Option<u64>,
    pub syn_ack: Option<u64>,
    pub ack: Option<u64>,
    pub first_packet: u64,
    pub handshake: Handshake,
    pub ending: Ending,
    pub retransmissions: u64,
    pub missing_bytes: u64,
    /// Which capture file (or interface) it came from.
    pub source: usize,
    /// `tcp`, `quic` or `quic-v2`.
    pub transport: &'static str,
    /// Why the server ended the handshake, when it said so in a way the TLS reader does not
    /// see (a QUIC CONNECTION_CLOSE, a version negotiation).
    pub failure: Option<(tlslab_core::ErrorClass, String)>,
}

/// What became of the TCP connections that were not TLS handshakes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowCounts {
    /// TCP connections seen, counted as tshark's `tcp.stream` numbers them.
    pub tcp: u64,
    /// Connections whose client did not start with a TLS ClientHello (other protocols, or
    /// connections the capture joined after their handshake).
    pub not_tls: u64,
    /// Connections still waiting for their first handshake byte when the capture ended
    /// (TCP), or whose client Initial held no whole ClientHello (QUIC): nothing to store.
    /// Handshakes in progress are stored, as incomplete.
    pub unfinished: u64,
    /// QUIC connections seen (opened by a client Initial the capture could read).
    pub quic: u64,
}

#[derive(Debug)]
enum State {
    /// Roles not known yet: no SYN and no data so far (a capture that joined the
    /// connection on an ACK).
    Waiting,
    Open(Box<Open>),
    /// Handed on, not a handshake, or closed: later segments only keep it alive.
    Finished,
}

#[derive(Debug)]
struct Open {
    client: SocketAddr,
    server: SocketAddr,
    syn: Option<u64>,
    syn_ack: Option<u64>,
    ack: Option<u64>,
    first_packet: u64,
    to_server: Stream,
    to_client: Stream,
    handshake: Handshake,
}

/// One connection of the table, from its first segment to well after its last.
#[derive(Debug)]
struct Flow {
    state: State,
    last_packet: u64,
    source: usize,
    /// The first sequence number each endpoint (in the key's order) sent: a SYN's own, or
    /// the one before a first segment that was not a SYN, as tshark takes it. A SYN with
    /// another one is a new connection on the same endpoints.
    base: [Option<u32>; 2],
    /// Whether each endpoint sent a FIN.
    fin: [bool; 2],
    reset: bool,
}

impl Flow {
    fn new(timestamp: u64, source: usize) -> Flow {
        Flow {
            state: State::Waiting,
            last_packet: timestamp,
            source,
            base: [None; 2],
            fin: [false; 2],
            reset: false,
        }
    }

    /// Whether both ends are done: a reset, or a FIN each way.
    fn closed(&self) -> bool {
        self.reset || self.fin == [true, true]
    }

    /// Whether the connection is past remembering at `now`: a segment then starts a new one.
    fn forgotten(&self, now: u64) -> bool {
        let kept = if self.closed() {
            CLOSED_KEPT_NS
        } else {
            OPEN_KEPT_NS
        };
        self.last_packet.saturating_add(kept) < now
    }

    /// Whether its handshake (or its wait for roles) has been silent too long at `now`.
    fn stalled(&self, now: u64) -> bool {
        !matches!(self.state, State::Finished)
            && self.last_packet.saturating_add(IDLE_TIMEOUT_NS) < now
    }

    /// Whether `tcp`, from endpoint `side`, is a SYN that opens another connection on the
    /// same endpoints: its sequence number is not the one this connection started with from
    /// that side, or this connection already closed.
    fn reopened_by(&self, side: usize, tcp: &TcpSegment<'_>) -> bool {
        tcp.syn
            && !tcp.ack
            && (self.closed() || self.base[side].is_some_and(|base| base != tcp.sequence))
    }
}

/// Every TCP connection of a capture, by its two endpoints.
#[derive(Debug, Default)]
pub struct Flows {
    table: HashMap<(SocketAddr, SocketAddr), Flow, foldhash::fast::RandomState>,
    since_sweep: u32,
    last_sweep: u64,
    /// Boxes of handed-on connections, for the next ones (see [`SPARE_STATES`]): the
    /// boxes themselves are what is reused, so they stay boxes in the vector.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Open>>,
    pub counts: FlowCounts,
    /// A key log to decrypt TLS 1.3 handshakes with.
    pub keys: Option<std::sync::Arc<crate::keys::KeyLog>>,
}

/// The table key: the two endpoints in a fixed order, whichever sent the segment.
fn key(a: SocketAddr, b: SocketAddr) -> (SocketAddr, SocketAddr) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Whether `payload` starts a TLS handshake record holding a message of type `kind`.
fn starts_handshake(payload: &[u8], kind: u8) -> bool {
    matches!(payload, [22, 3, _, _, _, first, ..] if *first == kind)
}

/// What a segment of a connection whose roles are not known yet says about them: `None`
/// when nothing (an ACK, FIN or reset alone), `Some(None)` when the connection is not TLS,
/// else the client and the server.
#[inline]
fn roles(
    from: SocketAddr,
    to: SocketAddr,
    tcp: &TcpSegment<'_>,
) -> Option<Option<(SocketAddr, SocketAddr)>> {
    if tcp.syn {
        // SYN from the client, SYN-ACK from the server.
        Some(Some(if tcp.ack { (to, from) } else { (from, to) }))
    } else if starts_handshake(tcp.payload, 1) {
        Some(Some((from, to)))
    } else if starts_handshake(tcp.payload, 2) {
        Some(Some((to, from)))
    } else if tcp.payload.is_empty() {
        None
    } else {
        Some(None)
    }
}

/// `open` in a spare allocation when there is one, so that a capture of many connections
/// does not allocate a handshake's state for each.
#[inline]
// The boxes are the spare allocations themselves, moved in and out of `State::Open`.
#[allow(clippy::vec_box)]
fn reuse(spare: &mut Vec<Box<Open>>, open: Open) -> Box<Open> {
    match spare.pop() {
        Some(mut spare) => {
            *spare = open;
            spare
        }
        None => Box::new(open),
    }
}

impl Flows {
    /// One TCP segment from `source` (a file or interface index), in capture order.
    pub fn segment(
        &mut self,
        source: usize,
        timestamp: u64,
        from: SocketAddr,
        to: SocketAddr,
        tcp: &TcpSegment<'_>,
        emit: &mut impl FnMut(Connection),
    ) {
        self.since_sweep += 1;
        if self.since_sweep >= SWEEP_EVERY
            && timestamp >= self.last_sweep.saturating_add(SWEEP_INTERVAL_NS)
        {
            self.sweep(timestamp, emit);
        }
        let key = key(from, to);
        // Most segments belong to connections already handed on (the application data,
        // the ACKs): one look-up settles them. A SYN, a FIN or a reset takes the long way.
        if !(tcp.syn || tcp.fin || tcp.rst) {
            if let Some(flow) = self.table.get_mut(&key) {
                if matches!(flow.state, State::Finished) && !flow.forgotten(timestamp) {
                    flow.last_packet = timestamp;
                    return;
                }
            }
        }
        let side = usize::from(from != key.0);
        // Whether the time since its last segment, or this segment, ends what the table
        // holds for these endpoints: decided here, at the segment, so that when the sweeps
        // ran (a file's segment count, a live capture's clock) changes nothing.
        let (new, stalled) = match self.table.get(&key) {
            None => (true, false),
            Some(flow) => {
                let new = flow.forgotten(timestamp) || flow.reopened_by(side, tcp);
                (new, new || flow.stalled(timestamp))
            }
        };
        if stalled {
            self.end(&key, Ending::Timeout, emit);
        }
        if new {
            self.counts.tcp += 1;
            self.table.insert(key, Flow::new(timestamp, source));
        }
        let Some(flow) = self.table.get_mut(&key) else {
            return;
        };
        flow.last_packet = timestamp;
        flow.base[side].get_or_insert(if tcp.syn {
            tcp.sequence
        } else {
            tcp.sequence.wrapping_sub(1)
        });
        if let State::Waiting = flow.state {
            match roles(from, to, tcp) {
                None => {}
                Some(Some((client, server))) => {
                    let open = Open {
                        client,
                        server,
                        syn: None,
                        syn_ack: None,
                        ack: None,
                        first_packet: timestamp,
                        to_server: Stream::default(),
                        to_client: Stream::default(),
                        handshake: Handshake::with_keys(self.keys.clone()),
                    };
                    flow.state = State::Open(reuse(&mut self.spare, open));
                }
                Some(None) => {
                    self.counts.not_tls += 1;
                    flow.state = State::Finished;
                }
            }
        }
        if let State::Open(open) = &mut flow.state {
            open.segment(timestamp, from, tcp);
            if open.handshake.client_not_tls() {
                self.counts.not_tls += 1;
                flow.state = State::Finished;
            } else if open.ready() {
                let State::Open(mut open) = std::mem::replace(&mut flow.state, State::Finished)
                else {
                    return;
                };
                emit(open.connection(Ending::Done, source));
                if self.spare.len() < SPARE_STATES {
                    self.spare.push(open);
                }
            }
        }
        if tcp.rst || tcp.fin {
            // The first FIN or reset ends the handshake; the connection stays, to take
            // the rest of its close.
            let by_server = match &flow.state {
                State::Open(open) => from == open.server,
                _ => false,
            };
            flow.fin[side] |= tcp.fin;
            flow.reset |= tcp.rst;
            let ending = if tcp.rst {
                Ending::Reset { by_server }
            } else {
                Ending::Closed { by_server }
            };
            self.end(&key, ending, emit);
        }
    }

    /// Ends what is in progress on the connection at `key` as `ending`: its handshake is
    /// handed on (or counted), and the connection stays as a marker.
    fn end(
        &mut self,
        key: &(SocketAddr, SocketAddr),
        ending: Ending,
        emit: &mut impl FnMut(Connection),
    ) {
        let Some(flow) = self.table.get_mut(key) else {
            return;
        };
        let state = std::mem::replace(&mut flow.state, State::Finished);
        let source = flow.source;
        self.hand_on(state, source, ending, emit);
    }

    /// Hands on (or counts) the handshake of a connection whose state was `state`.
    fn hand_on(
        &mut self,
        state: State,
        source: usize,
        ending: Ending,
        emit: &mut impl FnMut(Connection),
    ) {
        let mut open = match state {
            State::Finished => return,
            State::Waiting => {
                self.counts.not_tls += 1;
                return;
            }
            State::Open(open) => open,
        };
        open.skip_holes();
        if open.handshake.client_hello.is_none() {
            self.counts.not_tls += 1;
            return;
        }
        let ending = if open.handshake.done() {
            Ending::Done
        } else {
            open.unseen(ending)
        };
        emit(open.connection(ending, source));
        if self.spare.len() < SPARE_STATES {
            self.spare.push(open);
        }
    }

    /// At `now`: handshakes silent for longer than [`IDLE_TIMEOUT_NS`] end as timeouts, and
    /// connections past remembering are forgotten.
    pub fn sweep(&mut self, now: u64, emit: &mut impl FnMut(Connection)) {
        self.since_sweep = 0;
        self.last_sweep = now;
        let mut ended = Vec::new();
        self.table.retain(|_, flow| {
            let forgotten = flow.forgotten(now);
            if forgotten || flow.stalled(now) {
                ended.push((
                    std::mem::replace(&mut flow.state, State::Finished),
                    flow.source,
                ));
            }
            !forgotten
        });
        for (state, source) in ended {
            self.hand_on(state, source, Ending::Timeout, emit);
        }
    }

    /// The capture ended: completed handshakes are handed on, the rest counted.
    pub fn finish(&mut self, emit: &mut impl FnMut(Connection)) {
        for (_, flow) in std::mem::take(&mut self.table) {
            let mut open = match flow.state {
                State::Finished => continue,
                State::Waiting => {
                    self.counts.not_tls += 1;
                    continue;
                }
                State::Open(open) => open,
            };
            open.skip_holes();
            if open.handshake.done() {
                emit(open.connection(Ending::Done, flow.source));
            } else if open.handshake.client_hello.is_some() {
                // What the capture shows of it is a measurement: stored, as incomplete.
                let ending = if open.absent() {
                    Unseen::RecordsAbsent
                } else {
                    Unseen::CaptureEnded
                };
                emit(open.connection(Ending::Unseen(ending), flow.source));
            } else if open.handshake.client_began() {
                self.counts.unfinished += 1;
            } else {
                self.counts.not_tls += 1;
            }
        }
    }
}

impl Open {
    fn segment(&mut self, timestamp: u64, from: SocketAddr, tcp: &TcpSegment<'_>) {
        let to_server = from == self.client;
        if tcp.syn {
            if to_server {
                self.syn.get_or_insert(timestamp);
                self.to_server.syn(tcp.sequence);
            } else {
                self.syn_ack.get_or_insert(timestamp);
                self.to_client.syn(tcp.sequence);
            }
        } else if to_server && tcp.ack && self.syn_ack.is_some() && self.ack.is_none() {
            self.ack = Some(timestamp);
        }
        let handshake = &mut self.handshake;
        let (stream, other, direction) = if to_server {
            (
                &mut self.to_server,
                &mut self.to_client,
                Direction::ToServer,
            )
        } else {
            (
                &mut self.to_client,
                &mut self.to_server,
                Direction::ToClient,
            )
        };
        // Every segment says how far its sender got, and how far the other side did (its
        // acknowledgment): past what the capture holds, bytes are absent.
        if tcp.ack {
            other.acknowledged(tcp.acknowledgment);
        }
        if tcp.fin {
            stream.fin(tcp.sequence, tcp.payload.len());
        } else if tcp.payload.is_empty() && !tcp.syn {
            stream.reached(tcp.sequence, 0);
        }
        stream.push(tcp.sequence, tcp.payload, timestamp, &mut |bytes, at| {
            handshake.push(direction, bytes, at)
        });
    }

    /// Whether everything the capture can say about the handshake is known: the handshake
    /// is done and, where the response can be read (TLS 1.2, or decrypted), its first byte
    /// came.
    fn ready(&self) -> bool {
        let handshake = &self.handshake;
        handshake.done()
            && (!handshake.can_see_response() || handshake.times.first_response_byte.is_some())
    }

    /// Whether either side sent bytes of the connection that the capture does not hold.
    fn absent(&self) -> bool {
        self.to_server.absent() || self.to_client.absent()
    }

    /// What `ending` is, for a handshake that did not complete, once the capture's gaps
    /// are known: a close or a silence after bytes the capture does not hold (a filtered
    /// capture, packets lost before the capture point) says nothing of how the handshake
    /// went, nor does a minute without a packet after the server answered (the client
    /// either finishes or gives up and closes well within that; a capture filtered to
    /// handshake records shows neither).
    fn unseen(&self, ending: Ending) -> Ending {
        match ending {
            Ending::Reset { .. } | Ending::Closed { .. } | Ending::Timeout if self.absent() => {
                Ending::Unseen(Unseen::RecordsAbsent)
            }
            Ending::Timeout if self.handshake.server_hello.is_some() => {
                Ending::Unseen(Unseen::Silent)
            }
            ending => ending,
        }
    }

    /// Gives up on holes the capture never filled, so what follows them is read.
    fn skip_holes(&mut self) {
        let handshake = &mut self.handshake;
        while self
            .to_server
            .skip_hole(&mut |bytes, at| handshake.push(Direction::ToServer, bytes, at))
        {}
        while self
            .to_client
            .skip_hole(&mut |bytes, at| handshake.push(Direction::ToClient, bytes, at))
        {}
    }

    /// The connection as handed on; its handshake is moved out, and the rest of the state
    /// can be reused.
    fn connection(&mut self, ending: Ending, source: usize) -> Connection {
        let open = self;
        Connection {
            client: open.client,
            server: open.server,
            syn: open.syn,
            syn_ack: open.syn_ack,
            ack: open.ack,
            first_packet: open.first_packet,
            retransmissions: open.to_server.retransmissions + open.to_client.retransmissions,
            missing_bytes: open.to_server.missing_bytes + open.to_client.missing_bytes,
            handshake: std::mem::take(&mut open.handshake),
            ending,
            source,
            transport: "tcp",
            failure: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: &str = "10.0.0.1:40000";
    const SERVER: &str = "10.0.0.2:443";

    fn segment<'a>(flags: &str, sequence: u32, payload: &'a [u8]) -> TcpSegment<'a> {
        TcpSegment {
            sequence,
            acknowledgment: 0,
            syn: flags.contains('S'),
            ack: flags.contains('A'),
            fin: flags.contains('F'),
            rst: flags.contains('R'),
            payload,
        }
    }

    /// Feeds (time, from the client?, segment) in order; returns what was handed on.
    fn feed(flows: &mut Flows, segments: &[(u64, bool, TcpSegment<'_>)]) -> Vec<Connection> {
        let client: SocketAddr = CLIENT.parse().unwrap();
        let server: SocketAddr = SERVER.parse().unwrap();
        let mut out = Vec::new();
        for (at, from_client, tcp) in segments {
            let (from, to) = if *from_client {
                (client, server)
            } else {
                (server, client)
            };
            flows.segment(0, *at, from, to, tcp, &mut |connection| {
                out.push(connection)
            });
        }
        out
    }

    #[test]
    fn a_handshake_the_server_resets_ends_as_a_reset_with_its_tcp_times() {
        let hello = crate::tls::tests::record(22, &crate::tls::tests::client_hello());
        let mut flows = Flows::default();
        let out = feed(
            &mut flows,
            &[
                (1_000, true, segment("S", 99, b"")),
                // The SYN again, before the SYN-ACK: the same connection.
                (1_500, true, segment("S", 99, b"")),
                (2_000, false, segment("SA", 499, b"")),
                (2_010, true, segment("A", 100, b"")),
                (2_050, true, segment("A", 100, &hello)),
                (3_000, false, segment("R", 500, b"")),
            ],
        );
        assert_eq!(out.len(), 1);
        let connection = &out[0];
        assert_eq!(connection.ending, Ending::Reset { by_server: true });
        assert_eq!(
            (connection.syn, connection.syn_ack, connection.ack),
            (Some(1_000), Some(2_000), Some(2_010))
        );
        assert_eq!(connection.handshake.times.client_hello, Some(2_050));
        assert_eq!(flows.counts.tcp, 1);
    }

    #[test]
    fn other_protocols_are_counted_and_unanswered_handshakes_stored_as_incomplete() {
        let mut flows = Flows::default();
        let out = feed(
            &mut flows,
            &[
                (1, true, segment("S", 0, b"")),
                (2, false, segment("SA", 0, b"")),
                (3, true, segment("A", 1, b"SSH-2.0-OpenSSH\r\n")),
            ],
        );
        assert!(out.is_empty());
        assert_eq!(flows.counts.not_tls, 1);
        // A ClientHello whose answer the capture never saw: in progress when it ended, and
        // stored so.
        let mut flows = Flows::default();
        let hello = crate::tls::tests::record(22, &crate::tls::tests::client_hello());
        feed(&mut flows, &[(1, true, segment("A", 7, &hello))]);
        let mut rest = Vec::new();
        flows.finish(&mut |connection| rest.push(connection));
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].ending, Ending::Unseen(Unseen::CaptureEnded));
        assert_eq!(flows.counts.unfinished, 0);
        // Half a ClientHello: nothing to store, counted.
        let mut flows = Flows::default();
        feed(&mut flows, &[(1, true, segment("A", 7, &hello[..20]))]);
        flows.finish(&mut |_| panic!("nothing to hand on"));
        assert_eq!((flows.counts.unfinished, flows.counts.not_tls), (1, 0));
    }

    #[test]
    fn a_close_past_bytes_the_capture_lacks_leaves_the_handshake_incomplete() {
        let hello = crate::tls::tests::record(22, &crate::tls::tests::client_hello());
        let server_hello = crate::tls::tests::record(22, &crate::tls::tests::server_hello());
        let after_hello = 100 + hello.len() as u32;
        let handshake = [
            (1_000, true, segment("S", 99, b"")),
            (2_000, false, segment("SA", 499, b"")),
            (2_010, true, segment("A", 100, &hello)),
            (3_000, false, segment("A", 500, &server_hello)),
        ];
        // The client's FIN comes 80 bytes after its ClientHello, which the capture does
        // not hold (a filter on the record type left out its Finished and request).
        let mut flows = Flows::default();
        let mut segments = handshake.to_vec();
        segments.push((4_000, true, segment("FA", after_hello + 80, b"")));
        let out = feed(&mut flows, &segments);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ending, Ending::Unseen(Unseen::RecordsAbsent));
        // The same FIN right after the ClientHello: the client closed, a failure.
        let mut flows = Flows::default();
        let mut segments = handshake.to_vec();
        segments.push((4_000, true, segment("FA", after_hello, b"")));
        let out = feed(&mut flows, &segments);
        assert_eq!(out[0].ending, Ending::Closed { by_server: false });
        // Silent for a minute after the server answered, with no close: incomplete; a
        // minute without an answer is still a timeout.
        for (answered, ending) in [
            (true, Ending::Unseen(Unseen::Silent)),
            (false, Ending::Timeout),
        ] {
            let mut flows = Flows::default();
            let mut out = feed(&mut flows, &handshake[..3 + usize::from(answered)]);
            flows.sweep(IDLE_TIMEOUT_NS + 10_000, &mut |connection| {
                out.push(connection)
            });
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].ending, ending);
        }
    }

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn a_connection_is_one_from_its_syn_to_the_last_segment_of_its_close() {
        let hello = crate::tls::tests::record(22, &crate::tls::tests::client_hello());
        let close_notify = crate::tls::tests::record(21, &[1, 0]);
        let mut flows = Flows::default();
        let out = feed(
            &mut flows,
            &[
                (1_000, true, segment("S", 99, b"")),
                (2_000, false, segment("SA", 499, b"")),
                (2_010, true, segment("A", 100, b"")),
                (2_050, true, segment("A", 100, &hello)),
                (2_060, false, segment("A", 500, b"")),
                // The client closes first (close_notify, FIN, as `openssl s_client` does)...
                (
                    3_000,
                    true,
                    segment("A", 100 + hello.len() as u32, &close_notify),
                ),
                (3_010, true, segment("FA", 107 + hello.len() as u32, b"")),
                // ...and the server's answer and its own close_notify come after that FIN.
                (3_100, false, segment("A", 500, &close_notify)),
                (3_110, true, segment("A", 108 + hello.len() as u32, b"")),
                (3_200, false, segment("FA", 507, b"")),
                (3_210, true, segment("A", 108 + hello.len() as u32, b"")),
                // The last ACK was lost beyond the capture point: the FIN again, a second
                // later, the ACK again, and a reset for good measure.
                (SECOND + 3_200, false, segment("FA", 507, b"")),
                (
                    SECOND + 3_210,
                    true,
                    segment("A", 108 + hello.len() as u32, b""),
                ),
                (
                    SECOND + 3_300,
                    true,
                    segment("R", 108 + hello.len() as u32, b""),
                ),
            ],
        );
        assert_eq!(flows.counts.tcp, 1);
        assert_eq!(flows.counts.not_tls, 0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ending, Ending::Closed { by_server: false });
    }

    #[test]
    fn a_new_syn_after_the_close_is_a_new_connection_and_the_same_syn_again_is_not() {
        let mut flows = Flows::default();
        feed(
            &mut flows,
            &[
                (1_000, true, segment("S", 99, b"")),
                (2_000, false, segment("SA", 499, b"")),
                (2_010, true, segment("A", 100, b"")),
                (3_000, true, segment("R", 100, b"")),
                // The port again, after the close (TIME_WAIT reuse): a new connection...
                (4_000, true, segment("S", 90_000, b"")),
                (5_000, false, segment("SA", 7_000, b"")),
                // ...whose SYN-ACK the client did not get: its SYN again is the same one.
                (SECOND, true, segment("S", 90_000, b"")),
                (SECOND + 10, false, segment("SA", 7_000, b"")),
                (SECOND + 20, true, segment("A", 90_001, b"")),
                // A SYN with another sequence number on a connection that never closed
                // (the capture missed its end): a new one too, as tshark takes it.
                (2 * SECOND, true, segment("S", 123_456, b"")),
            ],
        );
        assert_eq!(flows.counts.tcp, 3);
        assert_eq!(flows.counts.not_tls, 2);
    }

    #[test]
    fn a_connection_silent_past_the_idle_timeout_keeps_its_later_segments() {
        let hello = crate::tls::tests::record(22, &crate::tls::tests::client_hello());
        let server_hello = crate::tls::tests::record(22, &[2, 0, 0, 0]);
        let silent = IDLE_TIMEOUT_NS + SECOND;
        let segments = [
            (1_000, true, segment("S", 99, b"")),
            (2_000, false, segment("SA", 499, b"")),
            (2_010, true, segment("A", 100, &hello)),
            // A minute and more later: the handshake is over as a timeout, but what the
            // server says then, and the close, are still this connection's.
            (silent, false, segment("A", 500, &server_hello)),
            (silent + 10, false, segment("FA", 509, b"")),
            (
                silent + 20,
                true,
                segment("FA", 100 + hello.len() as u32, b""),
            ),
        ];
        // The same, whether a sweep ran during the silence (a live capture's clock, a busy
        // file) or not.
        for swept in [false, true] {
            let mut flows = Flows::default();
            let mut out = feed(&mut flows, &segments[..3]);
            if swept {
                flows.sweep(silent - 1, &mut |connection| out.push(connection));
            }
            out.extend(feed(&mut flows, &segments[3..]));
            assert_eq!(flows.counts.tcp, 1, "swept: {swept}");
            assert_eq!(out.len(), 1, "swept: {swept}");
            assert_eq!(out[0].ending, Ending::Timeout, "swept: {swept}");
            flows.finish(&mut |connection| out.push(connection));
            assert_eq!(out.len(), 1);
            assert_eq!((flows.counts.not_tls, flows.counts.unfinished), (0, 0));
        }
    }

    #[test]
    fn a_connection_joined_on_an_ack_is_counted_once_and_memory_is_let_go() {
        let mut flows = Flows::default();
        feed(
            &mut flows,
            &[
                (1_000, true, segment("A", 100, b"")),
                (2_000, false, segment("A", 500, b"")),
                (3_000, false, segment("A", 500, b"\x17\x03\x03\x00\x01x")),
                (4_000, true, segment("FA", 100, b"")),
            ],
        );
        assert_eq!((flows.counts.tcp, flows.counts.not_tls), (1, 1));
        // Half-closed: remembered for ten minutes of silence, then let go.
        flows.sweep(IDLE_TIMEOUT_NS + 5_000, &mut |_| {
            panic!("nothing to hand on")
        });
        assert_eq!(flows.table.len(), 1);
        flows.sweep(OPEN_KEPT_NS + 5_000, &mut |_| panic!("nothing to hand on"));
        assert!(flows.table.is_empty());
        // Closed both ways: let go a minute after its last segment.
        let mut flows = Flows::default();
        feed(
            &mut flows,
            &[
                (1_000, true, segment("S", 99, b"")),
                (2_000, false, segment("RA", 0, b"")),
            ],
        );
        assert_eq!(flows.table.len(), 1);
        flows.sweep(CLOSED_KEPT_NS + 3_000, &mut |_| {
            panic!("nothing to hand on")
        });
        assert!(flows.table.is_empty());
        assert_eq!((flows.counts.tcp, flows.counts.not_tls), (1, 1));
    }
}
