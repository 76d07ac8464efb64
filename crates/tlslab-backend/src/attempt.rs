//! [`Attempt`]: the recorder every client fills during one handshake attempt, whatever its
//! library and transport, so every sample means the same thing.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tlslab_core::{Event, Negotiated, QuicPath, Response, Timeline, WireClock};

use crate::wire::WireTime;

/// Observations made outside the attempt's own task (over QUIC, on quinn's tasks), folded
/// into the attempt when it ends, finished or cut short by its time limit.
pub trait Observer: Send + Sync + fmt::Debug {
    /// Folds what was observed into `attempt`, once, as the attempt ends.
    fn settle_into(&self, attempt: &mut Attempt);
}

/// The measurements of one attempt, filled in as it goes so a failed or timed-out attempt
/// keeps what it observed.
///
/// Clients that drive TLS over a byte stream report each write ([`Attempt::sent`]) and read
/// ([`Attempt::received`]) and what their library's callbacks saw
/// ([`Attempt::server_flight_received`], [`Attempt::verification`],
/// [`Attempt::finished_due`]); the recorder turns that into the events of the phase model
/// (`docs/architecture.md`, "One attempt, step by step").
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The attempt's start: every event is timed from here.
    pub origin: Instant,
    /// The wall clock (CLOCK_REALTIME) read with `origin`: what places the kernel's socket
    /// timestamps, which are wall-clock times, on the attempt's monotonic timeline
    /// ([`Attempt::instant_of_wall`]).
    wall_origin: SystemTime,
    /// The events of the phase model, as they happened.
    pub timeline: Timeline,
    /// What the handshake settled, as far as it got.
    pub negotiated: Negotiated,
    /// Bytes written to the socket, TLS records and request included.
    pub bytes_sent: u64,
    /// Bytes read from the socket.
    pub bytes_received: u64,
    /// The ClientHello's size on the wire, when known.
    pub client_hello_bytes: Option<u64>,
    /// The server's first flight's size on the wire, when known.
    pub server_flight_bytes: Option<u64>,
    /// The HTTP response, when a request was sent.
    pub response: Option<Response>,
    /// The QUIC path's statistics, for QUIC attempts.
    pub quic: Option<QuicPath>,
    /// The local end of the attempt's socket, once connected.
    pub local_address: Option<std::net::SocketAddr>,
    /// The server's address the attempt connected to (or, on a kept connection, the one it
    /// was opened to).
    pub peer_address: Option<std::net::SocketAddr>,
    /// The connection that carried the request, and the request's place on it.
    pub connection: Option<tlslab_core::ConnectionUse>,
    /// The bytes of the client's first flight (ClientHello and early data; over QUIC the
    /// datagrams sent before the server answered), kept when the replay probe wants them.
    pub captured: Option<Vec<Vec<u8>>>,
    /// Whether the server asked for a client certificate (CertificateRequest) and, if it did,
    /// whether the client sent one; `None` when it did not ask (or the library cannot tell).
    /// It explains failures the server reports only by an alert or a closed connection.
    pub client_certificate: Option<bool>,
    /// Bytes of the client's Certificate and CertificateVerify messages, when it sent them.
    pub client_certificate_bytes: Option<u64>,
    /// The response's `Server` field, kept only for the request that opened its connection
    /// (see [`Attempt::record_server`]).
    pub server_software: Option<String>,
    /// Byte counts when the handshake ended: what the sample reports.
    handshake_bytes: Option<(u64, u64)>,
    /// When the last read's bytes arrived, the bytes received by then, and whether the
    /// kernel said when (rather than the clock when the read returned).
    last_read: Option<(Instant, u64, bool)>,
    /// When the first read after `handshake_done` brought its bytes (TLS 1.3: what the
    /// server sent once it judged the client's Finished; see [`Attempt::server_answered`]),
    /// and whether the kernel said when.
    answer_read: Option<(Instant, bool)>,
    /// When the last read or write crossed the socket, and whether the kernel said when:
    /// the handshake is done when its last message crossed it ([`Attempt::handshake_done`]).
    last_wire: Option<(Instant, bool)>,
    /// Wire events timed by the kernel's socket timestamps, and by the user-space clock.
    kernel_events: u8,
    user_events: u8,
    /// The client's Finished goes out with the next write.
    finished_pending: bool,
    /// A request on a kept connection: bytes are counted, but mark no handshake events.
    established: bool,
    observer: Option<Arc<dyn Observer>>,
}

impl Attempt {
    /// Starts an attempt now (the `start` event).
    pub fn start() -> Self {
        Attempt::start_at(Instant::now())
    }

    /// Starts an attempt at `origin` (the `start` event): the time the caller's clock read,
    /// so that an open loop's schedule and its attempts read one clock.
    pub fn start_at(origin: Instant) -> Self {
        // The wall clock at `origin`, from both clocks read together now: what places the
        // kernel's timestamps on the timeline, to within tens of nanoseconds (see
        // `instant_of_wall`).
        let (now, wall) = crate::wire::clocks_now();
        let wall_origin = match now.checked_duration_since(origin) {
            Some(since) => wall.checked_sub(since).unwrap_or(wall),
            None => wall + origin.duration_since(now),
        };
        let mut timeline = Timeline::default();
        timeline.set(Event::Start, 0);
        Attempt {
            origin,
            wall_origin,
            timeline,
            negotiated: Negotiated::default(),
            bytes_sent: 0,
            bytes_received: 0,
            client_hello_bytes: None,
            server_flight_bytes: None,
            response: None,
            quic: None,
            local_address: None,
            peer_address: None,
            connection: None,
            captured: None,
            client_certificate: None,
            client_certificate_bytes: None,
            server_software: None,
            handshake_bytes: None,
            last_read: None,
            answer_read: None,
            last_wire: None,
            kernel_events: 0,
            user_events: 0,
            finished_pending: false,
            established: false,
            observer: None,
        }
    }

    /// Starts the attempt over on a new connection, keeping its start (and the time already
    /// spent): a kept connection the server had closed (its keep-alive limit or timeout)
    /// carried nothing back, and a client then opens another, as browsers and ab do.
    pub fn start_over(&mut self) {
        for event in Event::ALL {
            if event != Event::Start {
                self.timeline.clear(event);
            }
        }
        self.bytes_sent = 0;
        self.bytes_received = 0;
        self.client_hello_bytes = None;
        self.server_flight_bytes = None;
        self.response = None;
        self.connection = None;
        self.client_certificate = None;
        self.client_certificate_bytes = None;
        self.server_software = None;
        self.handshake_bytes = None;
        self.last_read = None;
        self.answer_read = None;
        self.last_wire = None;
        self.kernel_events = 0;
        self.user_events = 0;
        self.finished_pending = false;
        self.established = false;
    }

    /// The attempt is a request on a connection an earlier attempt opened (HTTP keep-alive)
    /// or one without TLS (plain HTTP): no handshake to time, so writes and reads mark no
    /// handshake events, and the sample reports no handshake bytes.
    pub fn without_handshake(&mut self) {
        self.established = true;
        self.handshake_bytes = Some((0, 0));
    }

    /// What the sample stores of client authentication: asked or not, and sent or not.
    /// "Not asked" only once the handshake completed, since a CertificateRequest arrives in
    /// the server's flight; before that the attempt cannot tell (`None`).
    pub fn client_certificate_status(&self) -> Option<tlslab_core::ClientCertificateStatus> {
        use tlslab_core::ClientCertificateStatus;
        match self.client_certificate {
            Some(true) => Some(ClientCertificateStatus::Sent),
            Some(false) => Some(ClientCertificateStatus::AskedNoneSent),
            None if !self.established && self.timeline.get(Event::HandshakeDone).is_some() => {
                Some(ClientCertificateStatus::NotAsked)
            }
            None => None,
        }
    }

    /// Records `event` now, unless it was already recorded.
    pub fn mark(&mut self, event: Event) {
        self.timeline.mark_once(event, self.origin, Instant::now());
    }

    /// Records a wire event (see [`WireClock`]) at `at`, unless it was already recorded, and
    /// counts which clock timed it: the kernel's (`kernel`) or the user-space clock.
    pub fn mark_wire(&mut self, event: Event, at: Instant, kernel: bool) {
        if self.timeline.get(event).is_none() {
            self.timeline.mark_once(event, self.origin, at);
            if kernel {
                self.kernel_events = self.kernel_events.saturating_add(1);
            } else {
                self.user_events = self.user_events.saturating_add(1);
            }
        }
    }

    /// `tcp_connected` at `at`, the kernel's time of the connection (see
    /// `wire::connected_at`), or now when the kernel cannot say.
    pub fn connected(&mut self, at: Option<Instant>) {
        match at {
            Some(at) => self.mark_wire(Event::TcpConnected, at, true),
            None => self.mark_wire(Event::TcpConnected, Instant::now(), false),
        }
    }

    /// Which clock timed the attempt's wire events; `None` when it recorded none (it failed
    /// before its socket connected, or it shook no hands: see [`Attempt::without_handshake`]).
    pub fn wire_clock(&self) -> Option<WireClock> {
        match (self.kernel_events, self.user_events) {
            (0, 0) => None,
            (_, 0) => Some(WireClock::Kernel),
            (0, _) => Some(WireClock::User),
            _ => Some(WireClock::Mixed),
        }
    }

    /// Where the wall-clock time `wall` falls on the attempt's monotonic timeline.
    ///
    /// The kernel's software timestamps are CLOCK_REALTIME; the timeline is `Instant`
    /// (CLOCK_MONOTONIC). The two advance at the same rate (NTP's frequency corrections slew
    /// both) and differ only when the wall clock is stepped, so the offset read at the
    /// attempt's start holds for its whole life, to within the reads (`wire::clocks_now`).
    /// The kernel has no monotonic software timestamp to ask for instead.
    pub fn instant_of_wall(&self, wall: SystemTime) -> Instant {
        match wall.duration_since(self.wall_origin) {
            Ok(after) => self.origin + after,
            Err(before) => self
                .origin
                .checked_sub(before.duration())
                .unwrap_or(self.origin),
        }
    }

    /// The instant of a wire time, and whether the kernel said it (`WireTime::User` is
    /// read from the clock now).
    fn resolve(&self, time: WireTime) -> (Instant, bool) {
        match time {
            WireTime::Kernel(wall) => (self.instant_of_wall(wall), true),
            WireTime::User => (Instant::now(), false),
        }
    }

    /// The moment `event` was recorded.
    pub fn instant_of(&self, event: Event) -> Option<Instant> {
        self.timeline
            .get(event)
            .map(|nanos| self.origin + Duration::from_nanos(nanos))
    }

    /// Records `HandshakeDone` and freezes the byte counts the sample reports: bytes of a
    /// request and its response are the response's (`Response::body_bytes`), not the
    /// handshake's.
    ///
    /// When the kernel timed the handshake's last message across the socket (the client's
    /// Finished in TLS 1.3 or a resumption, the server's Finished in a full TLS 1.2
    /// handshake), the handshake is done then: the client's check of a received Finished,
    /// a microsecond or two, is not counted, and neither is the thread's wake-up after
    /// the read. Otherwise it is done now.
    pub fn handshake_done(&mut self) {
        match self.last_wire {
            Some((at, true)) => self.mark_wire(Event::HandshakeDone, at, true),
            _ if self.last_wire.is_some() => {
                self.mark_wire(Event::HandshakeDone, Instant::now(), false)
            }
            // No socket reported to this attempt (QUIC's socket reports elsewhere).
            _ => self.mark(Event::HandshakeDone),
        }
        self.handshake_bytes = Some((self.bytes_sent, self.bytes_received));
    }

    /// The byte counts the sample reports, for transports that count them elsewhere (QUIC
    /// counts datagrams on the socket).
    pub fn set_handshake_bytes(&mut self, sent: u64, received: u64) {
        self.handshake_bytes = Some((sent, received));
    }

    /// Bytes sent and received until the handshake ended (or until now, when it did not).
    pub fn handshake_bytes(&self) -> (u64, u64) {
        self.handshake_bytes
            .unwrap_or((self.bytes_sent, self.bytes_received))
    }

    /// How long to wait for a session ticket after the handshake: tickets follow it within a
    /// round trip, so twice the attempt so far plus a margin is generous.
    pub fn ticket_patience(&self) -> Duration {
        self.origin.elapsed() * 2 + Duration::from_millis(100)
    }

    /// The handshake's time (start → `handshake_done`): the yardstick of the wait for the
    /// server's acceptance ([`crate::AcceptanceWait`]). Zero before the handshake is done.
    pub fn handshake_time(&self) -> Duration {
        Duration::from_nanos(self.timeline.get(Event::HandshakeDone).unwrap_or(0))
    }

    /// The client processed, without an alert, the records of the first read after
    /// `handshake_done`: they were the server's answer to the client's Finished, and
    /// `server_accepted` is that read's time (once). Nothing when no read followed the
    /// handshake.
    pub fn server_answered(&mut self) {
        if let Some((at, kernel)) = self.answer_read {
            self.mark_wire(Event::ServerAccepted, at, kernel);
        }
    }

    /// Whether a read followed `handshake_done` (see [`Attempt::server_answered`]).
    pub fn read_since_handshake(&self) -> bool {
        self.answer_read.is_some()
    }

    /// What was read after the handshake so far did not answer the client's Finished: 0.5-RTT
    /// data answering an accepted 0-RTT request, which the server sent before it saw the
    /// Finished. The next read may.
    pub fn not_an_answer(&mut self) {
        self.answer_read = None;
    }

    /// The client handed `bytes` to the kernel at `at` (by the user-space clock): the first
    /// write is the ClientHello; the first after [`Attempt::finished_due`] carries the
    /// client's Finished.
    pub fn sent(&mut self, bytes: usize, at: Instant) {
        self.sent_with(bytes, |_| (at, false));
    }

    /// [`Attempt::sent`] now. The clock is read only for a write that marks an event: the
    /// writes and reads of a request after its handshake, or on a kept connection, mark none
    /// (two of a kept request's six clock readings were spent on them).
    pub fn sent_now(&mut self, bytes: usize) {
        self.sent_at(bytes, WireTime::User);
    }

    /// [`Attempt::sent`] at `time`: the kernel's timestamp of the write, when the socket
    /// gave one (`TimestampedStream::write_all`), or now.
    pub fn sent_at(&mut self, bytes: usize, time: WireTime) {
        self.sent_with(bytes, |attempt| attempt.resolve(time));
    }

    /// Whether the next write marks an event (the ClientHello, or the client's Finished):
    /// only those ask the kernel for a send timestamp.
    pub fn marks_next_send(&self) -> bool {
        !self.established
            && (self.timeline.get(Event::ClientHelloSent).is_none() || self.finished_pending)
    }

    fn sent_with(&mut self, bytes: usize, at: impl FnOnce(&Attempt) -> (Instant, bool)) {
        self.bytes_sent += bytes as u64;
        if self.established {
            return;
        }
        let event = if self.timeline.get(Event::ClientHelloSent).is_none() {
            self.client_hello_bytes = Some(bytes as u64);
            Event::ClientHelloSent
        } else if self.finished_pending {
            self.finished_pending = false;
            Event::ClientFinishedSent
        } else {
            // Only what ends the handshake needs the time of a write that marks nothing.
            if self.timeline.get(Event::HandshakeDone).is_none() {
                self.last_wire = Some(at(self));
            }
            return;
        };
        let (at, kernel) = at(self);
        self.mark_wire(event, at, kernel);
        self.last_wire = Some((at, kernel));
    }

    /// A read returned `bytes` at `at` (by the user-space clock); the first one starts the
    /// server's answer.
    pub fn received(&mut self, bytes: usize, at: Instant) {
        self.received_with(bytes, |_| (at, false));
    }

    /// [`Attempt::received`] now, reading the clock only while the handshake's events are
    /// being recorded (see [`Attempt::sent_now`]).
    pub fn received_now(&mut self, bytes: usize) {
        self.received_at(bytes, WireTime::User);
    }

    /// [`Attempt::received`] at `time`: when the kernel says the read's bytes arrived (the
    /// last packet among them: `TimestampedStream::read`), or now.
    pub fn received_at(&mut self, bytes: usize, time: WireTime) {
        self.received_with(bytes, |attempt| attempt.resolve(time));
    }

    fn received_with(&mut self, bytes: usize, at: impl FnOnce(&Attempt) -> (Instant, bool)) {
        self.bytes_received += bytes as u64;
        if self.established {
            return;
        }
        let (at, kernel) = at(self);
        self.mark_wire(Event::ServerHelloReceived, at, kernel);
        self.last_read = Some((at, self.bytes_received, kernel));
        if self.timeline.get(Event::HandshakeDone).is_none() {
            self.last_wire = Some((at, kernel));
        } else if self.answer_read.is_none() {
            self.answer_read = Some((at, kernel));
        }
    }

    /// The client began to react to the server's flight (to verify it, or to answer it):
    /// the bytes it needed came with the last read. Records `server_flight_received` at that
    /// read's time, once.
    pub fn server_flight_received(&mut self) {
        let (arrived, kernel) = self
            .last_read
            .map_or((self.origin, false), |(at, _, kernel)| (at, kernel));
        self.mark_wire(Event::ServerFlightReceived, arrived, kernel);
    }

    /// The client answered the server's flight: the flight is every byte read until then,
    /// whatever reads carried it. Records `server_flight_bytes`, once. (A library that starts
    /// verifying before the flight is whole marks the event earlier than this.)
    pub fn server_flight_answered(&mut self) {
        if self.server_flight_bytes.is_none() {
            let bytes = self
                .last_read
                .map_or(self.bytes_received, |(_, bytes, _)| bytes);
            self.server_flight_bytes = Some(bytes);
        }
    }

    /// Certificate verification began at `start` and (so far) ended at `end`. Signature
    /// checks after the chain extend verification, so a later end replaces an earlier one.
    pub fn verification(&mut self, start: Option<Instant>, end: Option<Instant>) {
        if let Some(start) = start {
            self.timeline
                .mark_once(Event::CertVerifyStart, self.origin, start);
        }
        if let (Some(end), true) = (end, self.timeline.get(Event::CertVerifyStart).is_some()) {
            self.timeline.set(
                Event::CertVerifyEnd,
                end.saturating_duration_since(self.origin).as_nanos() as u64,
            );
        }
    }

    /// Mutual TLS: the client signed its CertificateVerify from `start` to `end` (the
    /// `client_signing` phase, measured apart from `client_finish` like certificate
    /// validation).
    pub fn client_signature(&mut self, start: Instant, end: Instant) {
        self.timeline
            .mark_once(Event::ClientSignStart, self.origin, start);
        self.timeline
            .mark_once(Event::ClientSignEnd, self.origin, end);
    }

    /// The client has its application keys: its Finished goes out with the next write.
    pub fn finished_due(&mut self) {
        if self.timeline.get(Event::ClientFinishedSent).is_none() {
            self.finished_pending = true;
        }
    }

    /// Records how far the response has come (first byte, status, body, done); returns
    /// whether it is complete.
    ///
    /// When the kernel timed the read that brought them, the events take its time (the
    /// response's bytes arrived then), never before `handshake_done`: a 0-RTT answer that
    /// came with the server's flight cannot be read before the handshake's keys are.
    pub fn record_response(&mut self, progress: &tlslab_http::Progress) -> bool {
        let arrived = match (self.established, self.last_read) {
            (false, Some((at, _, true))) => Some(
                self.instant_of(Event::HandshakeDone)
                    .map_or(at, |done| at.max(done)),
            ),
            _ => None,
        };
        let record = |attempt: &mut Attempt, event: Event| match arrived {
            Some(at) => attempt.mark_wire(event, at, true),
            None if attempt.established => attempt.mark(event),
            None => attempt.mark_wire(event, Instant::now(), false),
        };
        if progress.first_byte {
            record(self, Event::FirstByte);
        }
        self.response = Some(Response {
            status: progress.status,
            body_bytes: progress.body_bytes,
        });
        if progress.complete {
            record(self, Event::ResponseDone);
        }
        progress.complete
    }

    /// Keeps the response's `Server` field (ab's "Server Software") when this request opened
    /// its connection: a server does not change on a kept connection, so later requests need
    /// not store (nor allocate) it again.
    pub fn record_server(&mut self, server: Option<&str>) {
        if self
            .connection
            .is_none_or(|connection| connection.request == 1)
        {
            self.server_software = server.map(str::to_owned);
        }
    }

    /// Hands the attempt an observer whose findings [`Attempt::settle`] folds in.
    pub fn observe_with(&mut self, observer: Arc<dyn Observer>) {
        self.observer = Some(observer);
    }

    /// Folds in what an observer saw elsewhere. Call it once the attempt is over, finished
    /// or cancelled by a timeout, so a cut-short attempt keeps its events.
    pub fn settle(&mut self) {
        if let Some(observer) = self.observer.take() {
            observer.settle_into(self);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::Phase;

    #[test]
    fn writes_and_reads_become_the_handshake_events() {
        let mut attempt = Attempt::start();
        let origin = attempt.origin;
        let at = |micros: u64| origin + Duration::from_micros(micros);
        attempt.mark(Event::TcpConnected);
        attempt.sent(300, at(100));
        attempt.received(1_000, at(400));
        attempt.received(2_000, at(450));
        attempt.server_flight_received();
        attempt.server_flight_answered();
        attempt.verification(Some(at(460)), Some(at(500)));
        attempt.verification(None, Some(at(520)));
        attempt.finished_due();
        attempt.sent(80, at(560));
        attempt.handshake_done();
        attempt.sent(100, at(600));

        let timeline = &attempt.timeline;
        assert_eq!(timeline.get(Event::ClientHelloSent), Some(100_000));
        assert_eq!(timeline.get(Event::ServerHelloReceived), Some(400_000));
        assert_eq!(timeline.get(Event::ServerFlightReceived), Some(450_000));
        assert_eq!(timeline.phase(Phase::CertValidation), Some(60_000));
        assert_eq!(timeline.get(Event::ClientFinishedSent), Some(560_000));
        assert_eq!(attempt.client_hello_bytes, Some(300));
        assert_eq!(attempt.server_flight_bytes, Some(3_000));
        // The request after the handshake is not the handshake's.
        assert_eq!(attempt.handshake_bytes(), (380, 3_000));
        assert_eq!(attempt.bytes_sent, 480);
    }

    #[test]
    fn verification_ends_only_after_it_started_and_answering_fixes_the_flight_size() {
        let mut attempt = Attempt::start();
        let early = attempt.origin + Duration::from_micros(10);
        let late = attempt.origin + Duration::from_micros(30);
        attempt.verification(None, Some(early));
        assert_eq!(attempt.timeline.get(Event::CertVerifyEnd), None);
        // Verification may begin on the first part of the flight (OpenSSL does): the event
        // is that read's, the size is what was read when the client answered.
        attempt.received(700, early);
        attempt.server_flight_received();
        attempt.received(50, late);
        attempt.server_flight_answered();
        attempt.server_flight_received();
        assert_eq!(
            attempt.timeline.get(Event::ServerFlightReceived),
            Some(10_000)
        );
        assert_eq!(attempt.server_flight_bytes, Some(750));
    }

    #[test]
    fn kernel_times_land_on_the_timeline_and_the_sample_says_which_clock() {
        let mut attempt = Attempt::start();
        let origin = attempt.origin;
        // Kernel timestamps are wall-clock times: placed by the offset read at the start.
        let wall_origin = attempt.wall_origin;
        let wall = |micros: u64| wall_origin + Duration::from_micros(micros);
        let (hello, answer, flight, finished) = (wall(100), wall(400), wall(450), wall(560));
        assert!(attempt.marks_next_send());
        attempt.connected(Some(origin + Duration::from_micros(40)));
        attempt.sent_at(300, WireTime::Kernel(hello));
        assert!(!attempt.marks_next_send());
        attempt.received_at(1_000, WireTime::Kernel(answer));
        attempt.received_at(2_000, WireTime::Kernel(flight));
        attempt.server_flight_received();
        attempt.server_flight_answered();
        attempt.finished_due();
        assert!(attempt.marks_next_send());
        attempt.sent_at(80, WireTime::Kernel(finished));
        // TLS 1.3: the handshake is done when the client's Finished left, not when the
        // thread got round to saying so.
        attempt.handshake_done();
        let timeline = &attempt.timeline;
        assert_eq!(timeline.get(Event::TcpConnected), Some(40_000));
        assert_eq!(timeline.get(Event::ClientHelloSent), Some(100_000));
        assert_eq!(timeline.get(Event::ServerHelloReceived), Some(400_000));
        assert_eq!(timeline.get(Event::ServerFlightReceived), Some(450_000));
        assert_eq!(timeline.get(Event::ClientFinishedSent), Some(560_000));
        assert_eq!(timeline.get(Event::HandshakeDone), Some(560_000));
        assert_eq!(attempt.wire_clock(), Some(WireClock::Kernel));

        // A response read by the kernel's clock: its first byte then, never before the
        // handshake was done.
        attempt.received_at(500, WireTime::Kernel(wall(300)));
        let progress = tlslab_http::Progress {
            first_byte: true,
            complete: true,
            ..tlslab_http::Progress::default()
        };
        attempt.record_response(&progress);
        assert_eq!(attempt.timeline.get(Event::FirstByte), Some(560_000));
        assert_eq!(attempt.timeline.get(Event::ResponseDone), Some(560_000));
        assert_eq!(attempt.wire_clock(), Some(WireClock::Kernel));

        // A read the kernel gave no time for is the user-space clock's: the sample says so.
        let mut attempt = Attempt::start();
        attempt.connected(None);
        attempt.sent_at(300, WireTime::Kernel(SystemTime::now()));
        assert_eq!(attempt.wire_clock(), Some(WireClock::Mixed));
        let mut attempt = Attempt::start();
        assert_eq!(attempt.wire_clock(), None);
        attempt.sent_now(300);
        attempt.received_now(300);
        assert_eq!(attempt.wire_clock(), Some(WireClock::User));
    }

    #[test]
    fn a_full_tls12_handshake_is_done_when_the_servers_finished_arrived() {
        let mut attempt = Attempt::start();
        let wall_origin = attempt.wall_origin;
        let wall = |micros: u64| wall_origin + Duration::from_micros(micros);
        let times = [wall(100), wall(400), wall(600), wall(900)];
        attempt.sent_at(300, WireTime::Kernel(times[0]));
        attempt.received_at(3_000, WireTime::Kernel(times[1]));
        attempt.server_flight_received();
        attempt.finished_due();
        attempt.sent_at(150, WireTime::Kernel(times[2]));
        attempt.received_at(51, WireTime::Kernel(times[3]));
        attempt.handshake_done();
        assert_eq!(attempt.timeline.get(Event::HandshakeDone), Some(900_000));
        // Writes after the handshake mark nothing and move nothing.
        assert!(!attempt.marks_next_send());
        attempt.sent_at(100, WireTime::User);
        assert_eq!(attempt.timeline.get(Event::HandshakeDone), Some(900_000));
        assert_eq!(attempt.wire_clock(), Some(WireClock::Kernel));
    }

    #[derive(Debug)]
    struct Elsewhere;

    impl Observer for Elsewhere {
        fn settle_into(&self, attempt: &mut Attempt) {
            attempt.bytes_sent = 1_200;
        }
    }

    #[test]
    fn settle_folds_in_an_observer_once() {
        let mut attempt = Attempt::start();
        attempt.observe_with(Arc::new(Elsewhere));
        attempt.settle();
        attempt.bytes_sent = 0;
        attempt.settle();
        assert_eq!(attempt.bytes_sent, 0);
    }
}
