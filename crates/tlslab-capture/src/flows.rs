//! TCP connections in a capture: which side is the client, when the TCP handshake happened,
//! each direction put back in order, and the TLS handshake on top. A connection is handed
//! on once its TLS handshake is over (TLS 1.2: once the first response byte came, or the
//! connection closed) and then forgotten, so memory holds only connections in progress.

use std::collections::HashMap;
use std::net::SocketAddr;

use crate::packets::TcpSegment;
use crate::stream::Stream;
use crate::tls::{Direction, Handshake};

/// Connections silent this long (in capture time) are given up: a handshake in progress
/// ends as a timeout, anything else is forgotten.
pub const IDLE_TIMEOUT_NS: u64 = 60_000_000_000;

/// How often (in segments) idle connections are looked for.
const SWEEP_EVERY: u32 = 8192;

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
    /// TCP connections seen (with a SYN, or with data).
    pub tcp: u64,
    /// Connections whose client did not start with a TLS ClientHello (other protocols, or
    /// connections the capture joined after their handshake).
    pub not_tls: u64,
    /// Handshakes still in progress when the capture ended (TCP and QUIC).
    pub unfinished: u64,
    /// QUIC connections seen (opened by a client Initial the capture could read).
    pub quic: u64,
}

#[derive(Debug)]
enum State {
    /// Roles not known yet (no SYN, no data).
    Waiting,
    Open(Box<Open>),
    /// Handed on or not a handshake: later segments are ignored until it closes.
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

#[derive(Debug)]
struct Flow {
    state: State,
    last_packet: u64,
    source: usize,
}

/// Every TCP connection of a capture, by its two endpoints.
#[derive(Debug, Default)]
pub struct Flows {
    table: HashMap<(SocketAddr, SocketAddr), Flow, foldhash::fast::RandomState>,
    since_sweep: u32,
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
        if self.since_sweep >= SWEEP_EVERY {
            self.since_sweep = 0;
            self.sweep(timestamp, emit);
        }
        let key = key(from, to);
        // Most segments belong to connections already handed on (the application data,
        // the ACKs): one look-up settles them. A SYN, a FIN or a reset takes the long way.
        if !(tcp.syn || tcp.fin || tcp.rst) {
            if let Some(flow) = self.table.get_mut(&key) {
                if let State::Finished = flow.state {
                    flow.last_packet = timestamp;
                    return;
                }
            }
        }
        // A SYN opens a new connection, unless it is the same SYN again (retransmitted
        // before the SYN-ACK came back).
        let opening = tcp.syn
            && !tcp.ack
            && !self.table.get(&key).is_some_and(|flow| match &flow.state {
                State::Open(open) => open.syn.is_some() && open.syn_ack.is_none(),
                _ => false,
            });
        if !self.table.contains_key(&key) || opening {
            // Only a SYN or data starts a connection; a stray ACK or FIN says nothing.
            if !opening && tcp.payload.is_empty() && !tcp.syn {
                return;
            }
            if let Some(old) = self.table.remove(&key) {
                // The ports were reused: the old connection is over.
                self.close(old, Ending::Timeout, emit);
            }
            self.counts.tcp += 1;
            self.table.insert(
                key,
                Flow {
                    state: State::Waiting,
                    last_packet: timestamp,
                    source,
                },
            );
        }
        let Some(flow) = self.table.get_mut(&key) else {
            return;
        };
        flow.last_packet = timestamp;
        if let State::Waiting = flow.state {
            let roles = if tcp.syn {
                // SYN from the client, SYN-ACK from the server.
                Some(if tcp.ack { (to, from) } else { (from, to) })
            } else if starts_handshake(tcp.payload, 1) {
                Some((from, to))
            } else if starts_handshake(tcp.payload, 2) {
                Some((to, from))
            } else {
                None
            };
            match roles {
                Some((client, server)) => {
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
                    flow.state = State::Open(match self.spare.pop() {
                        Some(mut spare) => {
                            *spare = open;
                            spare
                        }
                        None => Box::new(open),
                    });
                }
                None => {
                    self.counts.not_tls += 1;
                    flow.state = State::Finished;
                }
            }
        }
        let ended_by = (tcp.rst || tcp.fin).then_some(from);
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
        if let Some(sender) = ended_by {
            if let Some(flow) = self.table.remove(&key) {
                let by_server = match &flow.state {
                    State::Open(open) => sender == open.server,
                    _ => false,
                };
                let ending = if tcp.rst {
                    Ending::Reset { by_server }
                } else {
                    Ending::Closed { by_server }
                };
                self.close(flow, ending, emit);
            }
        }
    }

    /// Hands on (or counts) a connection that ends now.
    fn close(&mut self, flow: Flow, ending: Ending, emit: &mut impl FnMut(Connection)) {
        let State::Open(mut open) = flow.state else {
            return;
        };
        open.skip_holes();
        if open.handshake.client_hello.is_none() {
            self.counts.not_tls += 1;
            return;
        }
        let ending = if open.handshake.done() {
            Ending::Done
        } else {
            ending
        };
        emit(open.connection(ending, flow.source));
        if self.spare.len() < SPARE_STATES {
            self.spare.push(open);
        }
    }

    /// Ends connections silent for longer than [`IDLE_TIMEOUT_NS`] before `now`.
    pub fn sweep(&mut self, now: u64, emit: &mut impl FnMut(Connection)) {
        let idle: Vec<_> = self
            .table
            .iter()
            .filter(|(_, flow)| flow.last_packet.saturating_add(IDLE_TIMEOUT_NS) < now)
            .map(|(key, _)| *key)
            .collect();
        for key in idle {
            if let Some(flow) = self.table.remove(&key) {
                self.close(flow, Ending::Timeout, emit);
            }
        }
    }

    /// The capture ended: completed handshakes are handed on, the rest counted.
    pub fn finish(&mut self, emit: &mut impl FnMut(Connection)) {
        for (_, flow) in std::mem::take(&mut self.table) {
            let State::Open(mut open) = flow.state else {
                continue;
            };
            open.skip_holes();
            if open.handshake.done() {
                emit(open.connection(Ending::Done, flow.source));
            } else if open.handshake.client_hello.is_some() {
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
        let (stream, direction) = if to_server {
            (&mut self.to_server, Direction::ToServer)
        } else {
            (&mut self.to_client, Direction::ToClient)
        };
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
    fn other_protocols_and_unfinished_handshakes_are_counted_not_stored() {
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
        // A ClientHello whose answer the capture never saw: in progress when it ended.
        let mut flows = Flows::default();
        let hello = crate::tls::tests::record(22, &crate::tls::tests::client_hello());
        feed(&mut flows, &[(1, true, segment("A", 7, &hello))]);
        let mut rest = Vec::new();
        flows.finish(&mut |connection| rest.push(connection));
        assert!(rest.is_empty());
        assert_eq!(flows.counts.unfinished, 1);
    }
}
