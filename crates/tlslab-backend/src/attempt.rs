//! [`Attempt`]: the recorder every client fills during one handshake attempt, whatever its
//! library and transport, so every sample means the same thing.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tlslab_core::{Event, Negotiated, QuicPath, Response, Timeline};

/// Observations made outside the attempt's own task (over QUIC, on quinn's tasks), folded
/// into the attempt when it ends, finished or cut short by its time limit.
pub trait Observer: Send + Sync + fmt::Debug {
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
    pub origin: Instant,
    pub timeline: Timeline,
    pub negotiated: Negotiated,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub client_hello_bytes: Option<u64>,
    pub server_flight_bytes: Option<u64>,
    pub response: Option<Response>,
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
    /// When the last read returned, and the bytes received by then.
    last_read: Option<(Instant, u64)>,
    /// When the first read after `handshake_done` returned (TLS 1.3: what the server sent
    /// once it judged the client's Finished; see [`Attempt::server_answered`]).
    answer_read: Option<Instant>,
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
        let mut timeline = Timeline::default();
        timeline.set(Event::Start, 0);
        Attempt {
            origin,
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

    /// The moment `event` was recorded.
    pub fn instant_of(&self, event: Event) -> Option<Instant> {
        self.timeline
            .get(event)
            .map(|nanos| self.origin + Duration::from_nanos(nanos))
    }

    /// Records `HandshakeDone` now and freezes the byte counts the sample reports: bytes of a
    /// request and its response are the response's (`Response::body_bytes`), not the
    /// handshake's.
    pub fn handshake_done(&mut self) {
        self.mark(Event::HandshakeDone);
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
        if let Some(at) = self.answer_read {
            self.timeline
                .mark_once(Event::ServerAccepted, self.origin, at);
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

    /// The client handed `bytes` to the kernel at `at`: the first write is the ClientHello;
    /// the first after [`Attempt::finished_due`] carries the client's Finished.
    pub fn sent(&mut self, bytes: usize, at: Instant) {
        self.sent_with(bytes, || at);
    }

    /// [`Attempt::sent`] now. The clock is read only for a write that marks an event: the
    /// writes and reads of a request after its handshake, or on a kept connection, mark none
    /// (two of a kept request's six clock readings were spent on them).
    pub fn sent_now(&mut self, bytes: usize) {
        self.sent_with(bytes, Instant::now);
    }

    fn sent_with(&mut self, bytes: usize, at: impl FnOnce() -> Instant) {
        self.bytes_sent += bytes as u64;
        if self.established {
            return;
        }
        if self.timeline.get(Event::ClientHelloSent).is_none() {
            self.timeline
                .mark_once(Event::ClientHelloSent, self.origin, at());
            self.client_hello_bytes = Some(bytes as u64);
        } else if self.finished_pending {
            self.timeline
                .mark_once(Event::ClientFinishedSent, self.origin, at());
            self.finished_pending = false;
        }
    }

    /// A read returned `bytes` at `at`; the first one starts the server's answer.
    pub fn received(&mut self, bytes: usize, at: Instant) {
        self.received_with(bytes, || at);
    }

    /// [`Attempt::received`] now, reading the clock only while the handshake's events are
    /// being recorded (see [`Attempt::sent_now`]).
    pub fn received_now(&mut self, bytes: usize) {
        self.received_with(bytes, Instant::now);
    }

    fn received_with(&mut self, bytes: usize, at: impl FnOnce() -> Instant) {
        self.bytes_received += bytes as u64;
        if self.established {
            return;
        }
        let at = at();
        self.timeline
            .mark_once(Event::ServerHelloReceived, self.origin, at);
        self.last_read = Some((at, self.bytes_received));
        if self.answer_read.is_none() && self.timeline.get(Event::HandshakeDone).is_some() {
            self.answer_read = Some(at);
        }
    }

    /// The client began to react to the server's flight (to verify it, or to answer it):
    /// the bytes it needed came with the last read. Records `server_flight_received` at that
    /// read's time, once.
    pub fn server_flight_received(&mut self) {
        let arrived = self.last_read.map_or(self.origin, |(at, _)| at);
        self.timeline
            .mark_once(Event::ServerFlightReceived, self.origin, arrived);
    }

    /// The client answered the server's flight: the flight is every byte read until then,
    /// whatever reads carried it. Records `server_flight_bytes`, once. (A library that starts
    /// verifying before the flight is whole marks the event earlier than this.)
    pub fn server_flight_answered(&mut self) {
        if self.server_flight_bytes.is_none() {
            let bytes = self
                .last_read
                .map_or(self.bytes_received, |(_, bytes)| bytes);
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
    pub fn record_response(&mut self, progress: &tlslab_http::Progress) -> bool {
        if progress.first_byte {
            self.mark(Event::FirstByte);
        }
        self.response = Some(Response {
            status: progress.status,
            body_bytes: progress.body_bytes,
        });
        if progress.complete {
            self.mark(Event::ResponseDone);
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
