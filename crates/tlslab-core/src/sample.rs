//! [`Sample`]: the record of one handshake attempt, and the phase model.
//!
//! Each attempt records, for the [`Event`]s it can observe, nanoseconds since the attempt
//! started (`start` = 0). Events that do not apply stay `None`, never 0. The derived
//! [`Phase`]s partition `start..handshake_done`: the additive phases ([`Phase::PARTS`]) add up
//! to [`Phase::Handshake`] exactly, so "where does the time go" has an exact answer.
//!
//! With `--dns per-attempt` an attempt starts before its name lookup, and `resolved` marks
//! its end: the lookup is then the `dns` phase, the first part of the handshake (as curl's
//! `time_namelookup` is part of its `time_connect`). Otherwise the name was resolved once,
//! before the run, and `resolved` and `dns` are `None`.

use std::borrow::Cow;
use std::fmt;
use std::time::Instant;

use serde::Serialize;

/// An observable point of a handshake, in the order it happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// Before socket creation; with `--dns per-attempt`, before the name lookup (otherwise
    /// the name was resolved once per run, before any attempt).
    Start,
    /// The name lookup returned an address (`--dns per-attempt` only).
    Resolved,
    /// `connect()` completed.
    TcpConnected,
    /// The ClientHello bytes were handed to the kernel.
    ClientHelloSent,
    /// The first bytes of the server's first flight were read.
    ServerHelloReceived,
    /// The bytes the client needs to react to the server's flight were read: those that made
    /// it verify the certificate, or (without verification, as on resumption) derive the
    /// application keys.
    ServerFlightReceived,
    /// The client began verifying the server's certificate chain and signature.
    CertVerifyStart,
    /// Certificate verification finished.
    CertVerifyEnd,
    /// Mutual TLS: the client began signing its CertificateVerify (the server asked for a
    /// certificate and the client had one).
    ClientSignStart,
    /// The client's CertificateVerify signature was made.
    ClientSignEnd,
    /// The client's Finished was handed to the kernel.
    ClientFinishedSent,
    /// The client may send application data (TLS 1.2: the server's Finished was read).
    HandshakeDone,
    /// The server's first sign, after `handshake_done`, that it accepted the handshake (TLS
    /// 1.3, whose server judges the client's Finished and certificate after the client is
    /// done): over TCP the first read after `handshake_done` whose records held no alert (a
    /// session ticket, the response); over QUIC the datagram that confirmed the handshake
    /// (HANDSHAKE_DONE). `None` when no sign came while the client waited (a server that
    /// sends nothing unasked), in TLS 1.2 (whose server Finished already is the sign), and on
    /// a request that reused a connection. Not part of any phase: `handshake` ends at
    /// `handshake_done`.
    ServerAccepted,
    /// The first byte of the response to an optional request.
    FirstByte,
    /// The last byte of that response.
    ResponseDone,
}

impl Event {
    /// Every event, in the order an attempt meets them.
    pub const ALL: [Event; 15] = [
        Event::Start,
        Event::Resolved,
        Event::TcpConnected,
        Event::ClientHelloSent,
        Event::ServerHelloReceived,
        Event::ServerFlightReceived,
        Event::CertVerifyStart,
        Event::CertVerifyEnd,
        Event::ClientSignStart,
        Event::ClientSignEnd,
        Event::ClientFinishedSent,
        Event::HandshakeDone,
        Event::ServerAccepted,
        Event::FirstByte,
        Event::ResponseDone,
    ];

    /// The name used in the store, exports and output.
    pub fn name(self) -> &'static str {
        match self {
            Event::Start => "start",
            Event::Resolved => "resolved",
            Event::TcpConnected => "tcp_connected",
            Event::ClientHelloSent => "client_hello_sent",
            Event::ServerHelloReceived => "server_hello_received",
            Event::ServerFlightReceived => "server_flight_received",
            Event::CertVerifyStart => "cert_verify_start",
            Event::CertVerifyEnd => "cert_verify_end",
            Event::ClientSignStart => "client_sign_start",
            Event::ClientSignEnd => "client_sign_end",
            Event::ClientFinishedSent => "client_finished_sent",
            Event::HandshakeDone => "handshake_done",
            Event::ServerAccepted => "server_accepted",
            Event::FirstByte => "first_byte",
            Event::ResponseDone => "response_done",
        }
    }
}

/// A duration derived from the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// start → resolved: the name lookup of `--dns per-attempt` (curl's `time_namelookup`).
    Dns,
    /// start → tcp_connected, or resolved → tcp_connected after a lookup.
    TcpConnect,
    /// tcp_connected → client_hello_sent: key-share generation (large for ML-KEM). QUIC has no
    /// TCP connect, so there it runs from start and includes the UDP socket's creation.
    ClientHelloBuild,
    /// client_hello_sent → server_hello_received: one round trip plus server compute.
    ServerResponse,
    /// server_hello_received → server_flight_received: the rest of the server's flight.
    ServerFlight,
    /// cert_verify_start → cert_verify_end.
    CertValidation,
    /// client_sign_start → client_sign_end: mutual TLS, the client's CertificateVerify
    /// signature with its certificate's key; `None` when the server asked for no certificate.
    ClientSigning,
    /// server_flight_received → client_finished_sent, certificate validation and the client's
    /// signature excluded: key schedule, Finished, and any tail of the server flight still
    /// arriving.
    ClientFinish,
    /// client_finished_sent → handshake_done: TLS 1.2's extra round trip for the server's
    /// Finished; about zero in TLS 1.3.
    ServerFinish,
    /// start → handshake_done.
    Handshake,
    /// tcp_connected → handshake_done.
    TlsHandshake,
    /// start → first_byte.
    Ttfb,
    /// start → response_done: the whole connection-to-response time.
    Total,
    /// Open loop: the attempt's intended start → start, the time it waited for a free agent
    /// (or for the load generator); `None` in a closed loop.
    ScheduleDelay,
    /// Open loop: the intended start → response_done, or → handshake_done without a
    /// request: the latency a user arriving on schedule saw, queueing included (no
    /// coordinated omission); `None` in a closed loop.
    Latency,
}

impl Phase {
    /// Every phase, in the order reports list them.
    pub const ALL: [Phase; 15] = [
        Phase::Dns,
        Phase::TcpConnect,
        Phase::ClientHelloBuild,
        Phase::ServerResponse,
        Phase::ServerFlight,
        Phase::CertValidation,
        Phase::ClientSigning,
        Phase::ClientFinish,
        Phase::ServerFinish,
        Phase::Handshake,
        Phase::TlsHandshake,
        Phase::Ttfb,
        Phase::Total,
        Phase::ScheduleDelay,
        Phase::Latency,
    ];

    /// The phases that partition `handshake`, in time order.
    pub const PARTS: [Phase; 9] = [
        Phase::Dns,
        Phase::TcpConnect,
        Phase::ClientHelloBuild,
        Phase::ServerResponse,
        Phase::ServerFlight,
        Phase::CertValidation,
        Phase::ClientSigning,
        Phase::ClientFinish,
        Phase::ServerFinish,
    ];

    /// The phase's name in the store, reports and thresholds (`server_response`).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Dns => "dns",
            Phase::TcpConnect => "tcp_connect",
            Phase::ClientHelloBuild => "client_hello_build",
            Phase::ServerResponse => "server_response",
            Phase::ServerFlight => "server_flight",
            Phase::CertValidation => "cert_validation",
            Phase::ClientSigning => "client_signing",
            Phase::ClientFinish => "client_finish",
            Phase::ServerFinish => "server_finish",
            Phase::Handshake => "handshake",
            Phase::TlsHandshake => "tls_handshake",
            Phase::Ttfb => "ttfb",
            Phase::Total => "total",
            Phase::ScheduleDelay => "schedule_delay",
            Phase::Latency => "latency",
        }
    }

    /// Looks a phase up by its name (for `--metric`).
    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|phase| phase.name() == name)
    }
}

/// Event timestamps of one attempt, in nanoseconds since its start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    events: [Option<u64>; Event::ALL.len()],
    /// Open loop: nanoseconds from the attempt's intended start to its start.
    schedule_delay: Option<u64>,
}

impl Timeline {
    /// When `event` happened, in nanoseconds from the attempt's start, if it did.
    pub fn get(&self, event: Event) -> Option<u64> {
        self.events[event as usize]
    }

    /// Records `event` at `nanos` from the attempt's start, replacing an earlier time.
    pub fn set(&mut self, event: Event, nanos: u64) {
        self.events[event as usize] = Some(nanos);
    }

    /// Forgets `event` (an attempt that starts over keeps only its start).
    pub fn clear(&mut self, event: Event) {
        self.events[event as usize] = None;
    }

    /// Open loop: how long after its intended start the attempt started.
    pub fn set_schedule_delay(&mut self, nanos: u64) {
        self.schedule_delay = Some(nanos);
    }

    /// Records `event` at `at` unless it was already recorded.
    pub fn mark_once(&mut self, event: Event, origin: Instant, at: Instant) {
        if self.get(event).is_none() {
            self.set(
                event,
                at.saturating_duration_since(origin).as_nanos() as u64,
            );
        }
    }

    /// A derived phase, or `None` when an event it needs was not observed.
    pub fn phase(&self, phase: Phase) -> Option<u64> {
        let span = |from: Event, to: Event| Some(self.get(to)?.saturating_sub(self.get(from)?));
        // Where connecting starts: after the lookup when the attempt made one.
        let connecting = if self.get(Event::Resolved).is_some() {
            Event::Resolved
        } else {
            Event::Start
        };
        match phase {
            Phase::Dns => span(Event::Start, Event::Resolved),
            Phase::TcpConnect => span(connecting, Event::TcpConnected),
            Phase::ClientHelloBuild => match self.get(Event::TcpConnected) {
                Some(_) => span(Event::TcpConnected, Event::ClientHelloSent),
                None => span(connecting, Event::ClientHelloSent),
            },
            Phase::ServerResponse => span(Event::ClientHelloSent, Event::ServerHelloReceived),
            Phase::ServerFlight => span(Event::ServerHelloReceived, Event::ServerFlightReceived),
            Phase::CertValidation => span(Event::CertVerifyStart, Event::CertVerifyEnd),
            Phase::ClientSigning => span(Event::ClientSignStart, Event::ClientSignEnd),
            Phase::ClientFinish => {
                let reacting = span(Event::ServerFlightReceived, Event::ClientFinishedSent)?;
                let measured_apart = self.phase(Phase::CertValidation).unwrap_or(0)
                    + self.phase(Phase::ClientSigning).unwrap_or(0);
                Some(reacting.saturating_sub(measured_apart))
            }
            Phase::ServerFinish => span(Event::ClientFinishedSent, Event::HandshakeDone),
            Phase::Handshake => span(Event::Start, Event::HandshakeDone),
            Phase::TlsHandshake => match self.get(Event::TcpConnected) {
                Some(_) => span(Event::TcpConnected, Event::HandshakeDone),
                None => span(connecting, Event::HandshakeDone),
            },
            Phase::Ttfb => span(Event::Start, Event::FirstByte),
            Phase::Total => span(Event::Start, Event::ResponseDone),
            Phase::ScheduleDelay => self.schedule_delay,
            Phase::Latency => {
                let end = self
                    .get(Event::ResponseDone)
                    .or(self.get(Event::HandshakeDone))?;
                let whole = end.saturating_sub(self.get(Event::Start)?);
                Some(self.schedule_delay?.saturating_add(whole))
            }
        }
    }

    /// True when the observed events never go backwards in [`Event::ALL`] order.
    /// `server_accepted` only has to follow `handshake_done`: a 0-RTT answer arrives with
    /// the server's flight, so the response may be read before the server's acceptance.
    pub fn is_ordered(&self) -> bool {
        let observed: Vec<u64> = Event::ALL
            .iter()
            .filter(|event| **event != Event::ServerAccepted)
            .filter_map(|event| self.get(*event))
            .collect();
        let accepted_after_done = match (
            self.get(Event::HandshakeDone),
            self.get(Event::ServerAccepted),
        ) {
            (Some(done), Some(accepted)) => done <= accepted,
            (None, Some(_)) => false,
            _ => true,
        };
        accepted_after_done && observed.windows(2).all(|pair| pair[0] <= pair[1])
    }
}

/// Success or failure of an attempt, or neither: a handshake a capture saw only part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The handshake (and the request, when there was one) completed.
    Ok,
    /// It failed; the Sample's `error` says how.
    Error,
    /// A capture shows only its start: the capture ended, or holds none of its later
    /// records (filtered, or lost before the capture point). Neither a success nor a
    /// failure: the phases the capture shows are kept, the rest are NULL, and the error
    /// class is [`ErrorClass::Incomplete`] with the reason as its detail.
    Incomplete,
}

impl Outcome {
    /// The outcome's spelling in the store and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Incomplete => "incomplete",
        }
    }
}

/// Why an attempt failed. The summary counts attempts per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Nothing listens on the port (connection refused).
    Refused,
    /// No route to the host or network.
    Unreachable,
    /// The attempt exceeded its time limit.
    Timeout,
    /// The peer answered with something that is not TLS.
    NotTls,
    /// The peer sent a TLS alert (the sample keeps its description).
    Alert,
    /// The server's certificate did not verify.
    Certificate,
    /// The peer reset or closed the connection mid-handshake.
    Reset,
    /// A TLS protocol violation or a negotiation failure on our side.
    Protocol,
    /// The client machine ran out of something (ports, file descriptors, memory).
    Local,
    /// Any other I/O error.
    Io,
    /// The run was interrupted (or its lab server died) while the attempt was in flight: it
    /// was stopped, not failed.
    Cancelled,
    /// The attempt's own name lookup failed (`--dns per-attempt`).
    Dns,
    /// Not a failure: a capture shows the handshake's start and not its end (the Sample's
    /// outcome is [`Outcome::Incomplete`]); summaries count it apart from the failures.
    Incomplete,
}

impl ErrorClass {
    /// The class of an I/O failure while connecting or during the handshake: one mapping for
    /// every transport and backend.
    pub fn of_io_error(error: &std::io::Error) -> ErrorClass {
        use std::io::ErrorKind;
        match error.kind() {
            ErrorKind::ConnectionRefused => ErrorClass::Refused,
            ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => ErrorClass::Unreachable,
            ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof => ErrorClass::Reset,
            ErrorKind::TimedOut => ErrorClass::Timeout,
            ErrorKind::AddrNotAvailable | ErrorKind::AddrInUse | ErrorKind::OutOfMemory => {
                ErrorClass::Local
            }
            _ => match error.raw_os_error() {
                Some(libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN | libc::ENETDOWN) => {
                    ErrorClass::Unreachable
                }
                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                    ErrorClass::Local
                }
                _ => ErrorClass::Io,
            },
        }
    }

    /// The class's spelling in the store and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Refused => "refused",
            ErrorClass::Unreachable => "unreachable",
            ErrorClass::Timeout => "timeout",
            ErrorClass::NotTls => "not_tls",
            ErrorClass::Alert => "alert",
            ErrorClass::Certificate => "certificate",
            ErrorClass::Reset => "reset",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Local => "local",
            ErrorClass::Io => "io",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::Dns => "dns",
            ErrorClass::Incomplete => "incomplete",
        }
    }
}

/// What the handshake negotiated, in IANA-style names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Negotiated {
    /// The TLS version (`1.3`).
    pub version: Option<String>,
    /// The cipher suite's IANA name.
    pub suite: Option<String>,
    /// The key exchange group; `None` for a resumption without one.
    pub group: Option<String>,
    /// The signature scheme of the server's CertificateVerify; `None` when none was sent.
    pub signature_scheme: Option<String>,
    /// The application protocol agreed by ALPN.
    pub alpn: Option<String>,
    /// Whether the server accepted the offered session; `None` when nothing was offered.
    pub resumed: Option<bool>,
    /// Whether the server accepted the early data (0-RTT); `None` when none was sent.
    pub early_data: Option<bool>,
    /// What became of Encrypted ClientHello; `None` when the backend could not tell.
    pub ech: Option<EchStatus>,
    /// Whether the server answered the first ClientHello with a HelloRetryRequest (TLS 1.3);
    /// `None` when the client cannot tell.
    pub hello_retry: Option<bool>,
    /// Whether the server asked for a client certificate and whether one was sent; `None`
    /// when the handshake did not get far enough to tell (or the source cannot see it).
    pub client_certificate: Option<ClientCertificateStatus>,
}

/// What became of client authentication in one handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientCertificateStatus {
    /// The server sent no CertificateRequest.
    NotAsked,
    /// The server asked, and the client had no certificate to send.
    AskedNoneSent,
    /// The server asked, and the client sent its certificate and CertificateVerify.
    Sent,
}

impl ClientCertificateStatus {
    /// Every status, in the order reports list them.
    pub const ALL: [ClientCertificateStatus; 3] = [
        ClientCertificateStatus::NotAsked,
        ClientCertificateStatus::AskedNoneSent,
        ClientCertificateStatus::Sent,
    ];

    /// The stored spelling (`asked-none-sent`).
    pub fn as_str(self) -> &'static str {
        match self {
            ClientCertificateStatus::NotAsked => "not-asked",
            ClientCertificateStatus::AskedNoneSent => "asked-none-sent",
            ClientCertificateStatus::Sent => "sent",
        }
    }

    /// The status a stored spelling names, if any.
    pub fn parse(text: &str) -> Option<ClientCertificateStatus> {
        ClientCertificateStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

/// What became of Encrypted ClientHello in one handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EchStatus {
    /// The server decrypted the inner ClientHello: the real server name stayed private.
    Accepted,
    /// ECH was offered and the server did not use it (the outer ClientHello was answered).
    Rejected,
    /// A GREASE extension was sent, with nothing to accept.
    Grease,
    /// No ECH extension was sent.
    NotOffered,
}

impl EchStatus {
    /// Every status, in the order reports list them.
    pub const ALL: [EchStatus; 4] = [
        EchStatus::Accepted,
        EchStatus::Rejected,
        EchStatus::Grease,
        EchStatus::NotOffered,
    ];

    /// The stored spelling (`not_offered`).
    pub fn as_str(self) -> &'static str {
        match self {
            EchStatus::Accepted => "accepted",
            EchStatus::Rejected => "rejected",
            EchStatus::Grease => "grease",
            EchStatus::NotOffered => "not_offered",
        }
    }

    /// The status a stored spelling names, if any.
    pub fn parse(text: &str) -> Option<EchStatus> {
        EchStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

impl fmt::Display for EchStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which clock timed an attempt's wire events: `tcp_connected`, `client_hello_sent`,
/// `server_hello_received`, `server_flight_received`, `client_finished_sent`, the
/// `handshake_done` that a message crossing the socket ends, `server_accepted`, and
/// `first_byte` / `response_done` (measurement rule 12, docs/architecture.md "Wire times").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WireClock {
    /// The kernel's socket timestamps: when a packet reached the client's network stack, or
    /// left it for the link; the connect from the kernel's own SYN round trip.
    Kernel,
    /// The user-space clock, read when a system call returned: late by however long the
    /// thread took to wake and run (10 to 60 µs on a busy machine).
    User,
    /// Some events from each (the kernel had no timestamp for the others).
    Mixed,
}

impl WireClock {
    /// Every clock, in the order reports list them.
    pub const ALL: [WireClock; 3] = [WireClock::Kernel, WireClock::User, WireClock::Mixed];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            WireClock::Kernel => "kernel",
            WireClock::User => "user",
            WireClock::Mixed => "mixed",
        }
    }

    /// The clock a stored spelling names, if any.
    pub fn parse(text: &str) -> Option<WireClock> {
        WireClock::ALL
            .into_iter()
            .find(|clock| clock.as_str() == text)
    }
}

/// QUIC's view of the path during one attempt (quinn's connection statistics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QuicPath {
    /// The smoothed RTT estimate when the attempt ended, in nanoseconds.
    pub rtt_ns: u64,
    /// UDP datagrams sent and received.
    pub datagrams_sent: u64,
    /// See `datagrams_sent`: those received.
    pub datagrams_received: u64,
    /// QUIC packets sent, and those declared lost.
    pub packets_sent: u64,
    /// See `packets_sent`: those quinn declared lost.
    pub packets_lost: u64,
    /// How the server's datagrams brought the response of the request that opened the
    /// connection; `None` without one, or when flights could not be told apart.
    pub response_flights: Option<ResponseFlights>,
}

/// The server's flights that carried an HTTP/3 response, as the client's socket received
/// them: a flight is datagrams that arrive without a gap longer than half the RTT (quinn's
/// smoothed estimate, or the handshake's first round trip when shorter; a server's next
/// flight waits for the client's acknowledgements, a round trip). From the flight that
/// brought the response's first byte to the one that brought its last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ResponseFlights {
    /// Round trips from the response's first byte to its last: 1 when the flight that brought
    /// the first byte brought it all.
    pub round_trips: u64,
    /// Datagrams and their UDP payload bytes in the flight with the first byte (whatever else
    /// the server sent in it too: acknowledgements, tickets, HTTP/3 settings).
    pub first_datagrams: u64,
    /// See `first_datagrams`: their UDP payload bytes.
    pub first_bytes: u64,
    /// Datagrams and bytes of the later flights, up to the one with the response's last byte.
    pub later_datagrams: u64,
    /// See `later_datagrams`: their UDP payload bytes.
    pub later_bytes: u64,
}

/// What the optional request after the handshake returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Response {
    /// The HTTP status, when it could be read.
    pub status: Option<u16>,
    /// Body bytes received.
    pub body_bytes: u64,
}

/// Where a capture saw a connection's packets, told apart by the gaps of the TCP handshake:
/// a client sees SYN → SYN-ACK take a round trip and answers at once; a server answers the
/// SYN at once and waits a round trip for the ACK; a point in between sees both gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Vantage {
    /// At the client: SYN → SYN-ACK took a round trip, and the ACK left at once.
    Client,
    /// At the server: the SYN-ACK left at once, and the ACK came a round trip later.
    Server,
    /// On the path: both gaps are part of a round trip.
    Middle,
    /// Client and server on the capturing machine (loopback): every event is seen when it
    /// happens, as the client would time it.
    Local,
    /// The capture started after the TCP handshake: nothing tells.
    Unknown,
}

impl Vantage {
    /// The vantage's spelling in `--vantage`, the store and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Vantage::Client => "client",
            Vantage::Server => "server",
            Vantage::Middle => "middle",
            Vantage::Local => "local",
            Vantage::Unknown => "unknown",
        }
    }
}

/// What a capture adds to a passive Sample: where and when its packets were seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Observed {
    /// The capture file or interface.
    pub source: String,
    /// Where the packets were seen, which decides which events are the client's.
    pub vantage: Vantage,
    /// The server's address and port.
    pub server: std::net::SocketAddr,
    /// When the connection's first packet was captured, in nanoseconds since the Unix epoch
    /// (the Sample's events count from it).
    pub first_packet_unix_ns: u64,
    /// The round trip the TCP handshake shows (client side: SYN → SYN-ACK; server side:
    /// SYN-ACK → ACK; in between: both); `None` without a whole SYN exchange.
    pub network_rtt_ns: Option<u64>,
    /// Segments that carried bytes already seen (retransmissions and overlaps).
    pub retransmissions: u64,
    /// Stream bytes the capture never saw (lost before the capture point or dropped by it):
    /// counted, never invented.
    pub missing_bytes: u64,
    /// What the ClientHello offered.
    pub offered: Offered,
}

/// What a captured ClientHello offered, in the client's order (GREASE values left out).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
///
/// Names are borrowed from the name tables where they are known (`names::*_static`): a
/// ClientHello offers dozens, and an owned copy of each cost an allocation per name per
/// captured sample.
pub struct Offered {
    /// TLS versions (`1.3`, `1.2`): supported_versions, or the legacy version field.
    pub versions: Vec<Cow<'static, str>>,
    /// The cipher suites, in the client's order of preference.
    pub suites: Vec<Cow<'static, str>>,
    /// The groups, in the client's order of preference.
    pub groups: Vec<Cow<'static, str>>,
    /// The key shares sent: group and key size in bytes (an ML-KEM hybrid's is over 1,000).
    pub key_shares: Vec<(Cow<'static, str>, u16)>,
    /// The application protocols offered by ALPN.
    pub alpn: Vec<String>,
}

/// The record of one handshake attempt, success or failure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// The Config's index in the run.
    pub config: usize,
    /// The trial (block of the plan) it belongs to.
    pub trial: usize,
    /// The round of the plan, from 1.
    pub round: u32,
    /// The agent that made it.
    pub agent: u32,
    /// A warm-up attempt, left out of the statistics.
    pub warmup: bool,
    /// When the attempt started, in nanoseconds since the run started.
    pub started_at: u64,
    /// The events of the phase model, as they happened.
    pub timeline: Timeline,
    /// Whether it succeeded.
    pub outcome: Outcome,
    /// How it failed, when it did.
    pub error: Option<ErrorClass>,
    /// The error's description (an alert's name, an OS error) for people reading failures.
    pub error_detail: Option<String>,
    /// What the handshake settled, as far as it got.
    pub negotiated: Negotiated,
    /// Bytes written to and read from the socket until the handshake ended.
    pub bytes_sent: u64,
    /// Bytes the client read from the socket.
    pub bytes_received: u64,
    /// Size of the first flight the client wrote (the ClientHello record; over QUIC the
    /// Initial datagrams, padded to at least 1,200 bytes each, and any 0-RTT packets).
    pub client_hello_bytes: Option<u64>,
    /// Bytes the server sent until the client had its first flight (`server_flight_received`).
    pub server_flight_bytes: Option<u64>,
    /// Mutual TLS: bytes of the client's Certificate and CertificateVerify handshake messages
    /// (their 4-byte headers included, record framing and encryption not), what client
    /// authentication adds to the client's flight; `None` when it sent no certificate.
    pub client_certificate_bytes: Option<u64>,
    /// The request's response, when the Config sends one.
    pub response: Option<Response>,
    /// QUIC path statistics, for QUIC attempts.
    pub quic: Option<QuicPath>,
    /// Whether certificate verification was disabled for this attempt.
    pub insecure: bool,
    /// The client's address and port: the local end of tlslab's own socket, or the client a
    /// capture saw. What ties an active sample to its packets.
    pub client_address: Option<std::net::SocketAddr>,
    /// The address tlslab's own socket connected to (with `--dns per-attempt`, what that
    /// attempt's lookup chose); `None` for a capture's samples, whose `observed` has it.
    pub server_address: Option<std::net::SocketAddr>,
    /// A capture's view of the connection; `None` for the handshakes tlslab made itself.
    pub observed: Option<Box<Observed>>,
    /// The connection that carried the attempt's request, and the request's place on it;
    /// `None` without a request.
    pub connection: Option<ConnectionUse>,
    /// Bytes read from the socket for the response (headers, body and, over TLS, record
    /// overhead): what a load tester calls transferred; `None` without a request.
    pub response_wire_bytes: Option<u64>,
    /// The response's `Server` field (ab's "Server Software"), stored for the request that
    /// opened its connection only; `None` on later requests of a kept connection and when the
    /// server sent none.
    pub server_software: Option<String>,
    /// Which clock timed the wire events tlslab's own client observed; `None` for a
    /// capture's samples (packet times) and for attempts that reached no socket.
    pub wire_clock: Option<WireClock>,
}

/// Which connection carried a request, and how many requests it had carried with this one:
/// 1 for the request that opened it (and shook hands), 2 and up for those that reused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConnectionUse {
    /// Numbered from 1 per run, in the order connections were opened.
    pub id: u64,
    /// Which request on that connection this was, from 1.
    pub request: u32,
}

impl Sample {
    /// Whether the attempt succeeded.
    pub fn is_ok(&self) -> bool {
        self.outcome == Outcome::Ok
    }

    /// The server's address: the one tlslab connected to, or the one a capture saw.
    pub fn server(&self) -> Option<std::net::SocketAddr> {
        self.server_address
            .or_else(|| self.observed.as_ref().map(|observed| observed.server))
    }

    /// A Sample made by hand (in tests, in tools): a successful attempt of the first Config,
    /// trial and round, with nothing timed, negotiated or counted, until the setters say
    /// otherwise. Built here, a field added to Sample is given its default once, not in every
    /// test that makes one.
    ///
    /// ```
    /// use tlslab_core::{ErrorClass, Event, Sample};
    ///
    /// let sample = Sample::builder()
    ///     .event(Event::Start, 0)
    ///     .event(Event::HandshakeDone, 3_000_000)
    ///     .error(ErrorClass::Timeout, "no answer")
    ///     .build();
    /// assert!(!sample.is_ok());
    /// assert_eq!(sample.timeline.get(Event::HandshakeDone), Some(3_000_000));
    /// ```
    pub fn builder() -> SampleBuilder {
        SampleBuilder(Sample {
            config: 0,
            trial: 0,
            round: 1,
            agent: 0,
            warmup: false,
            started_at: 0,
            timeline: Timeline::default(),
            outcome: Outcome::Ok,
            error: None,
            error_detail: None,
            negotiated: Negotiated::default(),
            bytes_sent: 0,
            bytes_received: 0,
            client_hello_bytes: None,
            server_flight_bytes: None,
            client_certificate_bytes: None,
            response: None,
            quic: None,
            insecure: false,
            client_address: None,
            server_address: None,
            observed: None,
            connection: None,
            response_wire_bytes: None,
            server_software: None,
            wire_clock: None,
        })
    }
}

/// Makes a [`Sample`] by hand ([`Sample::builder`]): each setter sets one thing and keeps
/// the defaults of the rest.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SampleBuilder(Sample);

impl SampleBuilder {
    /// The Config's index.
    pub fn config(mut self, config: usize) -> Self {
        self.0.config = config;
        self
    }

    /// The trial's index in the plan.
    pub fn trial(mut self, trial: usize) -> Self {
        self.0.trial = trial;
        self
    }

    /// The round of the trial (1 for the first).
    pub fn round(mut self, round: u32) -> Self {
        self.0.round = round;
        self
    }

    /// The agent that made the attempt.
    pub fn agent(mut self, agent: u32) -> Self {
        self.0.agent = agent;
        self
    }

    /// Nanoseconds from the run's start to the attempt's.
    pub fn started_at(mut self, started_at: u64) -> Self {
        self.0.started_at = started_at;
        self
    }

    /// `event` at `at` nanoseconds from the attempt's start.
    pub fn event(mut self, event: Event, at: u64) -> Self {
        self.0.timeline.set(event, at);
        self
    }

    /// A whole timeline at once.
    pub fn timeline(mut self, timeline: Timeline) -> Self {
        self.0.timeline = timeline;
        self
    }

    /// A failed attempt: its class and what happened.
    pub fn error(mut self, class: ErrorClass, detail: impl Into<String>) -> Self {
        self.0.outcome = Outcome::Error;
        self.0.error = Some(class);
        self.0.error_detail = Some(detail.into());
        self
    }

    /// How the attempt ended, without an error's class or detail.
    pub fn outcome(mut self, outcome: Outcome) -> Self {
        self.0.outcome = outcome;
        self
    }

    /// The TLS version negotiated, as the Sample names it (`1.3`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.0.negotiated.version = Some(version.into());
        self
    }

    /// Bytes the client sent and received.
    pub fn bytes(mut self, sent: u64, received: u64) -> Self {
        self.0.bytes_sent = sent;
        self.0.bytes_received = received;
        self
    }

    /// The client's address.
    pub fn client_address(mut self, address: std::net::SocketAddr) -> Self {
        self.0.client_address = Some(address);
        self
    }

    /// The server's `Server` response field.
    pub fn server_software(mut self, software: impl Into<String>) -> Self {
        self.0.server_software = Some(software.into());
        self
    }

    /// What a capture saw of the attempt (a passive Sample).
    pub fn observed(mut self, observed: Observed) -> Self {
        self.0.observed = Some(Box::new(observed));
        self
    }

    /// The Sample.
    pub fn build(self) -> Sample {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_handshake() -> Timeline {
        let mut timeline = Timeline::default();
        for (event, nanos) in [
            (Event::Start, 0),
            (Event::TcpConnected, 40_000),
            (Event::ClientHelloSent, 95_000),
            (Event::ServerHelloReceived, 400_000),
            (Event::ServerFlightReceived, 410_000),
            (Event::CertVerifyStart, 430_000),
            (Event::CertVerifyEnd, 520_000),
            (Event::ClientFinishedSent, 560_000),
            (Event::HandshakeDone, 561_000),
        ] {
            timeline.set(event, nanos);
        }
        timeline
    }

    #[test]
    fn the_additive_phases_partition_the_handshake() {
        for timeline in [full_handshake(), {
            // A resumed handshake verifies nothing.
            let mut resumed = Timeline::default();
            for (event, nanos) in [
                (Event::Start, 0),
                (Event::TcpConnected, 10),
                (Event::ClientHelloSent, 30),
                (Event::ServerHelloReceived, 70),
                (Event::ServerFlightReceived, 70),
                (Event::ClientFinishedSent, 90),
                (Event::HandshakeDone, 150),
            ] {
                resumed.set(event, nanos);
            }
            resumed
        }] {
            let parts: u64 = Phase::PARTS.iter().filter_map(|p| timeline.phase(*p)).sum();
            assert_eq!(parts, timeline.phase(Phase::Handshake).unwrap());
            assert!(timeline.is_ordered());
        }
        let timeline = full_handshake();
        assert_eq!(timeline.phase(Phase::ClientFinish), Some(60_000));
        assert_eq!(timeline.phase(Phase::CertValidation), Some(90_000));
        assert_eq!(timeline.phase(Phase::Ttfb), None);
        assert_eq!(timeline.phase(Phase::ClientSigning), None);
    }

    #[test]
    fn a_client_signature_is_a_part_of_its_own() {
        // Mutual TLS: the client signed for 25 µs between verifying and its Finished.
        let mut timeline = full_handshake();
        timeline.set(Event::ClientSignStart, 525_000);
        timeline.set(Event::ClientSignEnd, 550_000);
        assert!(timeline.is_ordered());
        assert_eq!(timeline.phase(Phase::ClientSigning), Some(25_000));
        assert_eq!(timeline.phase(Phase::ClientFinish), Some(35_000));
        let parts: u64 = Phase::PARTS.iter().filter_map(|p| timeline.phase(*p)).sum();
        assert_eq!(parts, timeline.phase(Phase::Handshake).unwrap());
    }

    #[test]
    fn a_lookup_is_the_first_part_of_the_handshake() {
        let mut timeline = full_handshake();
        assert_eq!(timeline.phase(Phase::Dns), None);
        // The same handshake after a 30 µs lookup: connecting starts when it returned.
        timeline.set(Event::Resolved, 30_000);
        assert!(timeline.is_ordered());
        assert_eq!(timeline.phase(Phase::Dns), Some(30_000));
        assert_eq!(timeline.phase(Phase::TcpConnect), Some(10_000));
        let parts: u64 = Phase::PARTS.iter().filter_map(|p| timeline.phase(*p)).sum();
        assert_eq!(parts, timeline.phase(Phase::Handshake).unwrap());
        // QUIC has no TCP connect: the ClientHello's build starts at the lookup's end.
        timeline.clear(Event::TcpConnected);
        assert_eq!(timeline.phase(Phase::ClientHelloBuild), Some(65_000));
        let parts: u64 = Phase::PARTS.iter().filter_map(|p| timeline.phase(*p)).sum();
        assert_eq!(parts, timeline.phase(Phase::Handshake).unwrap());
        assert_eq!(timeline.phase(Phase::TlsHandshake), Some(561_000 - 30_000));
    }

    #[test]
    fn acceptance_follows_the_handshake_and_belongs_to_no_phase() {
        let mut timeline = full_handshake();
        let handshake = timeline.phase(Phase::Handshake);
        // A 0-RTT answer read with the server's flight, the ticket (the acceptance) after it.
        timeline.set(Event::FirstByte, 562_000);
        timeline.set(Event::ResponseDone, 563_000);
        timeline.set(Event::ServerAccepted, 700_000);
        assert!(timeline.is_ordered());
        assert_eq!(timeline.phase(Phase::Handshake), handshake);
        // No phase reaches it: the wait for the server is not a part of any.
        for phase in Phase::ALL {
            assert!(timeline.phase(phase) < Some(700_000), "{}", phase.name());
        }
        // Before the handshake ended, or without it, it is out of order.
        timeline.set(Event::ServerAccepted, 500_000);
        assert!(!timeline.is_ordered());
        timeline.clear(Event::HandshakeDone);
        timeline.set(Event::ServerAccepted, 700_000);
        assert!(!timeline.is_ordered());
    }

    #[test]
    fn os_errors_map_to_classes() {
        let class = |code| ErrorClass::of_io_error(&std::io::Error::from_raw_os_error(code));
        assert_eq!(class(libc::ECONNREFUSED), ErrorClass::Refused);
        assert_eq!(class(libc::EHOSTUNREACH), ErrorClass::Unreachable);
        assert_eq!(class(libc::EMFILE), ErrorClass::Local);
        assert_eq!(class(libc::ECONNRESET), ErrorClass::Reset);
        assert_eq!(class(libc::EPERM), ErrorClass::Io);
    }

    #[test]
    fn out_of_order_events_are_detected_and_names_are_stable() {
        let mut timeline = full_handshake();
        timeline.set(Event::CertVerifyEnd, 1);
        assert!(!timeline.is_ordered());
        assert_eq!(Event::ALL.map(Event::name).len(), 15);
        assert_eq!(
            Phase::from_name("server_response"),
            Some(Phase::ServerResponse)
        );
        assert_eq!(Phase::from_name("nonsense"), None);
    }
}
