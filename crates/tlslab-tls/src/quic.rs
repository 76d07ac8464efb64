//! QUIC: the instrumented quinn client, and the probes that observe it.
//!
//! quinn runs rustls and its UDP socket on its own driver task, so a QUIC attempt cannot be
//! timed around sans-IO calls as the TCP client is. Instead each attempt gets:
//! - its own UDP socket, wrapped so every datagram sent and received is timestamped (the first
//!   datagram sent is the ClientHello's Initial, the first received the server's Initial);
//! - probes (certificate verifier, key log) that report into a record shared with the attempt.
//!
//! When the attempt ends, [`Attempt::settle`] turns those records into the same events the TCP
//! client records, so both transports share one phase model.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, ConnectionError, Runtime, UdpPoller};
use tlslab_core::{ErrorClass, Event, QuicPath, Response, ResponseFlights};

use tlslab_backend::{Attempt, Failure, Observer};

use crate::client::Client;
use crate::probe::Observed;
use crate::AgentSession;

/// Datagrams the log keeps per direction: a handshake takes a handful; the cap only bounds
/// memory on a long transfer.
const KEPT_DATAGRAMS: usize = 256;

/// Below this RTT the response's flights are not told apart: a server's next flight
/// would follow the last one by less than the client's own scheduling delays.
const SHORTEST_FLIGHT_RTT: Duration = Duration::from_millis(5);

/// The server's flights, in `received` (each datagram's arrival and size, in order), that
/// carried a response whose first byte was read at `first_byte` and last at `done`: a gap
/// longer than half of `rtt` starts a new flight (the server's next one waits for the
/// client's acknowledgements: a round trip later; quinn's pacer releases a window's bursts at
/// most 0.8 RTT apart only when each burst is a whole window). `None` when `rtt` is too short
/// to tell flights apart or no datagram came before `first_byte`.
fn response_flights(
    received: &[(Instant, usize)],
    first_byte: Instant,
    done: Instant,
    rtt: Duration,
) -> Option<ResponseFlights> {
    if rtt < SHORTEST_FLIGHT_RTT {
        return None;
    }
    let gap = rtt / 2;
    // The flight each datagram belongs to, counted from 0.
    let mut flight = 0;
    let flights: Vec<(usize, Instant, usize)> = received
        .iter()
        .enumerate()
        .map(|(index, &(at, size))| {
            if index > 0 && at.saturating_duration_since(received[index - 1].0) > gap {
                flight += 1;
            }
            (flight, at, size)
        })
        .collect();
    let flight_at = |moment: Instant| {
        flights
            .iter()
            .take_while(|(_, at, _)| *at <= moment)
            .last()
            .map(|(flight, _, _)| *flight)
    };
    let first = flight_at(first_byte)?;
    let last = flight_at(done).unwrap_or(first).max(first);
    let mut counted = ResponseFlights {
        round_trips: (last - first + 1) as u64,
        ..ResponseFlights::default()
    };
    for &(flight, _, size) in &flights {
        if flight == first {
            counted.first_datagrams += 1;
            counted.first_bytes += size as u64;
        } else if flight > first && flight <= last {
            counted.later_datagrams += 1;
            counted.later_bytes += size as u64;
        }
    }
    Some(counted)
}

/// What one QUIC attempt's socket and probes observed.
pub(crate) struct QuicLog {
    observed: Arc<Mutex<Observed>>,
    datagrams: Mutex<Datagrams>,
    /// Told of every datagram received (before quinn processes it): the wait for the
    /// server's confirmation looks again then.
    arrivals: tokio::sync::Notify,
}

#[derive(Default)]
struct Datagrams {
    sent: Vec<(Instant, usize)>,
    received: Vec<(Instant, usize)>,
    bytes_sent: u64,
    bytes_received: u64,
    /// Datagrams sent before the server's first answer (Initial and 0-RTT packets), kept for
    /// the replay probe.
    captured: Option<Vec<Vec<u8>>>,
}

impl fmt::Debug for QuicLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QuicLog")
    }
}

impl QuicLog {
    fn new(observed: Arc<Mutex<Observed>>, capture: bool) -> QuicLog {
        QuicLog {
            observed,
            datagrams: Mutex::new(Datagrams {
                captured: capture.then(Vec::new),
                ..Datagrams::default()
            }),
            arrivals: tokio::sync::Notify::new(),
        }
    }

    fn datagrams(&self) -> std::sync::MutexGuard<'_, Datagrams> {
        self.datagrams.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sent(&self, transmit: &Transmit<'_>, now: Instant) {
        let mut datagrams = self.datagrams();
        datagrams.bytes_sent += transmit.contents.len() as u64;
        let segment = transmit
            .segment_size
            .unwrap_or(transmit.contents.len())
            .max(1);
        let answered = !datagrams.received.is_empty();
        for datagram in transmit.contents.chunks(segment) {
            if datagrams.sent.len() < KEPT_DATAGRAMS {
                datagrams.sent.push((now, datagram.len()));
            }
            if !answered {
                if let Some(captured) = &mut datagrams.captured {
                    captured.push(datagram.to_vec());
                }
            }
        }
    }

    fn received(&self, meta: &[RecvMeta]) {
        let now = Instant::now();
        let mut datagrams = self.datagrams();
        for meta in meta {
            datagrams.bytes_received += meta.len as u64;
            let stride = meta.stride.max(1);
            let mut left = meta.len;
            while left > 0 {
                let size = left.min(stride);
                if datagrams.received.len() < KEPT_DATAGRAMS {
                    datagrams.received.push((now, size));
                }
                left -= size;
            }
        }
        drop(datagrams);
        self.arrivals.notify_one();
    }

    /// How many datagrams arrived before the client's Finished left (the first datagram sent
    /// once its application keys existed at `keys`; all of them if it has not left yet):
    /// none of those can confirm the handshake, which answers that Finished.
    fn received_before_finished(&self, keys: Option<Instant>) -> u64 {
        let datagrams = self.datagrams();
        let finished = keys.and_then(|keys| datagrams.sent.iter().find(|(at, _)| *at >= keys));
        let before = match finished {
            Some((finished, _)) => datagrams
                .received
                .iter()
                .take_while(|(at, _)| at < finished)
                .count(),
            None => datagrams.received.len(),
        };
        before as u64
    }

    /// When the `index`th datagram (from 0) was received, if the log kept it.
    fn received_at(&self, index: u64) -> Option<Instant> {
        let datagrams = self.datagrams();
        let index = usize::try_from(index).ok()?;
        datagrams.received.get(index).map(|(at, _)| *at)
    }

    fn totals(&self) -> (u64, u64) {
        let datagrams = self.datagrams();
        (datagrams.bytes_sent, datagrams.bytes_received)
    }
}

impl Observer for QuicLog {
    /// Turns the datagram times and probe reports into the attempt's events.
    fn settle_into(&self, attempt: &mut Attempt) {
        let observed = *self.observed.lock().unwrap_or_else(|e| e.into_inner());
        let mut datagrams = self.datagrams();
        let origin = attempt.origin;
        // The datagrams' times are the user-space clock's, read around each system call.
        let kernel = false;
        let first_answer = datagrams.received.first().map(|(at, _)| *at);
        if let Some((at, _)) = datagrams.sent.first() {
            attempt.mark_wire(Event::ClientHelloSent, *at, kernel);
            attempt.client_hello_bytes = Some(
                datagrams
                    .sent
                    .iter()
                    .take_while(|(sent, _)| first_answer.is_none_or(|answer| *sent < answer))
                    .map(|(_, size)| *size as u64)
                    .sum(),
            );
        }
        if let Some(at) = first_answer {
            attempt.mark_wire(Event::ServerHelloReceived, at, kernel);
        }
        // The server's flight ends with the last datagram before the client reacted to it:
        // by verifying the certificate, or (resumed, nothing to verify) deriving its keys.
        if let Some(reacted) = observed.verify_start.or(observed.traffic_keys) {
            let flight: Vec<&(Instant, usize)> = datagrams
                .received
                .iter()
                .take_while(|(at, _)| *at <= reacted)
                .collect();
            if let Some((at, _)) = flight.last() {
                attempt.mark_wire(Event::ServerFlightReceived, *at, kernel);
                attempt.server_flight_bytes = Some(flight.iter().map(|(_, n)| *n as u64).sum());
            }
        }
        if let Some(keys) = observed.traffic_keys {
            if let Some((at, _)) = datagrams.sent.iter().find(|(at, _)| *at >= keys) {
                attempt.mark_wire(Event::ClientFinishedSent, *at, kernel);
            }
        }
        let timeline = &mut attempt.timeline;
        if let Some(start) = observed.verify_start.filter(|_| !observed.checked_nothing) {
            timeline.mark_once(Event::CertVerifyStart, origin, start);
            if let Some(end) = observed.verify_end {
                timeline.mark_once(Event::CertVerifyEnd, origin, end);
            }
        }
        if let Some(scheme) = observed.signature_scheme {
            attempt.negotiated.signature_scheme = Some(format!("{scheme:?}"));
        }
        attempt.client_certificate = observed.client_certificate;
        if let Some((start, end)) = observed.client_signature {
            timeline.mark_once(Event::ClientSignStart, origin, start);
            timeline.mark_once(Event::ClientSignEnd, origin, end);
            // QUIC is TLS 1.3 only.
            attempt.client_certificate_bytes = observed
                .client_certificate_sizes
                .map(|sizes| sizes.message_bytes(true));
        }
        attempt.bytes_sent = datagrams.bytes_sent;
        attempt.bytes_received = datagrams.bytes_received;
        // The round trip that separates flights: quinn's smoothed RTT, or the handshake's
        // first one (ClientHello to the server's first datagram) when shorter. A stall or a
        // lost packet early on inflates one of them, rarely both; an inflated one would merge
        // two flights into one.
        let handshake_round_trip = match (datagrams.sent.first(), first_answer) {
            (Some((sent, _)), Some(answer)) => Some(answer.saturating_duration_since(*sent)),
            _ => None,
        };
        // A log that reached its cap may lack the response's last datagrams.
        let flights = match (
            attempt.instant_of(Event::FirstByte),
            attempt.instant_of(Event::ResponseDone),
            attempt.quic,
        ) {
            (Some(first_byte), Some(done), Some(path))
                if datagrams.received.len() < KEPT_DATAGRAMS =>
            {
                let smoothed = Duration::from_nanos(path.rtt_ns);
                let rtt = handshake_round_trip.map_or(smoothed, |first| first.min(smoothed));
                response_flights(&datagrams.received, first_byte, done, rtt)
            }
            _ => None,
        };
        if let Some(path) = attempt.quic.as_mut() {
            path.response_flights = flights;
        }
        if let Some(captured) = datagrams.captured.take() {
            attempt.captured = Some(captured);
        }
    }
}

/// A UDP socket that reports every datagram to the attempt's log.
#[derive(Debug)]
struct ObservedSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    log: Arc<QuicLog>,
}

impl AsyncUdpSocket for ObservedSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        // Stamped before the system call: quinn sends from one task and receives on another,
        // and a thread preempted right after sending would otherwise stamp its datagram after
        // the answer to it.
        let now = Instant::now();
        self.inner.try_send(transmit)?;
        self.log.sent(transmit, now);
        Ok(())
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        buffers: &mut [io::IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let poll = self.inner.poll_recv(cx, buffers, meta);
        if let Poll::Ready(Ok(count)) = &poll {
            self.log.received(&meta[..*count]);
        }
        poll
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        // No receive offload: a handshake receives a handful of datagrams, and quinn sizes
        // each endpoint's receive buffer by this (see `endpoint_config`).
        1
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// The class of a failed QUIC connection. TLS alerts travel as CRYPTO_ERROR codes
/// (0x100 + alert). One the server sent is a received alert, named as the TCP clients name
/// one (`alert 116 (CertificateRequired)`), whatever it is about: a certificate alert from
/// the server refuses the client's certificate. One of the client's own, a certificate
/// alert, means the client refused the server's certificate.
fn connection_failure(error: ConnectionError) -> Failure {
    use quinn::ConnectionError as E;
    let alert = |code: u64| (0x100..0x200).contains(&code).then(|| (code - 0x100) as u8);
    if let E::ConnectionClosed(closed) = &error {
        if let Some(number) = alert(u64::from(closed.error_code)) {
            let description = rustls::AlertDescription::from(number);
            return Failure::new(
                ErrorClass::Alert,
                format!("alert {number} ({description:?})"),
            );
        }
    }
    let class = match &error {
        E::TimedOut => ErrorClass::Timeout,
        E::Reset => ErrorClass::Reset,
        E::VersionMismatch => ErrorClass::NotTls,
        E::CidsExhausted => ErrorClass::Local,
        E::TransportError(transport) => match alert(u64::from(transport.code)) {
            Some(42..=46 | 48) => ErrorClass::Certificate,
            Some(_) => ErrorClass::Alert,
            None => ErrorClass::Protocol,
        },
        E::ConnectionClosed(_) => ErrorClass::Protocol,
        E::ApplicationClosed(_) | E::LocallyClosed => ErrorClass::Protocol,
    };
    Failure::new(class, error.to_string())
}

/// What a failed exchange means: when the server closed the connection, its reason (a TLS
/// alert refusing the handshake, in TLS 1.3 after the client's Finished), not the stream's.
fn exchange_failure(connection: &quinn::Connection, failure: Failure) -> Failure {
    match connection.close_reason() {
        Some(reason) => refusal(connection_failure(reason)),
        None => failure,
    }
}

/// A failure once the handshake was done: an alert then answered the client's Finished.
fn refusal(failure: Failure) -> Failure {
    if failure.class == ErrorClass::Alert {
        failure.after_finished()
    } else {
        failure
    }
}

/// Whether the server confirmed the handshake, read from quinn's statistics: quinn tells no
/// event when the HANDSHAKE_DONE frame arrives (RFC 9000 19.20: a server sends it once it
/// verified the client's Finished, and certificate), but counts it, under the same lock as
/// the datagrams it processed. Each look that finds none notes how many datagrams were
/// processed, so the first positive look pins the datagram that carried it: the first one
/// processed after the last negative look (at first, the first one after the client's
/// Finished left: the confirmation may be in before the attempt's task first looks).
#[derive(Debug)]
struct Confirmation {
    processed_before: u64,
    /// The index of the datagram that confirmed the handshake, once a look found it.
    carrier: Option<u64>,
}

impl Confirmation {
    /// Looks start after the `answered_finished`th datagram: those before answered nothing
    /// the client's Finished said.
    fn after(answered_finished: u64) -> Confirmation {
        Confirmation {
            processed_before: answered_finished,
            carrier: None,
        }
    }

    fn look(&mut self, connection: &quinn::Connection) -> bool {
        if self.carrier.is_none() {
            let statistics = connection.stats();
            if statistics.frame_rx.handshake_done > 0 {
                self.carrier = Some(self.processed_before);
            } else {
                self.processed_before = self.processed_before.max(statistics.udp_rx.datagrams);
            }
        }
        self.carrier.is_some()
    }

    /// Waits until the server confirmed the handshake (`Ok(true)`), closed the connection
    /// (its reason), or `until` passed (`Ok(false)`).
    async fn wait(
        &mut self,
        connection: &quinn::Connection,
        log: &QuicLog,
        until: Instant,
    ) -> Result<bool, Failure> {
        loop {
            if self.look(connection) {
                return Ok(true);
            }
            if let Some(reason) = connection.close_reason() {
                return Err(refusal(connection_failure(reason)));
            }
            tokio::select! {
                () = log.arrivals.notified() => tokio::task::yield_now().await,
                // A datagram is told before quinn processed it: look again a tick later.
                () = tokio::time::sleep(Duration::from_millis(1)) => {}
                _ = connection.closed() => {}
                () = tokio::time::sleep_until(until.into()) => return Ok(self.look(connection)),
            }
        }
    }
}

/// The HTTP/3 exchange of a handshake just done, while looking for the server's
/// confirmation at every datagram: the response's datagrams must not hide which one
/// confirmed.
async fn exchange_confirming(
    connection: &quinn::Connection,
    log: &QuicLog,
    confirmation: &mut Confirmation,
    request: &[u8],
    until: Instant,
) -> Result<Exchanged, Failure> {
    let exchange = exchange_http3(connection, request);
    tokio::pin!(exchange);
    let watch = confirmation.wait(connection, log, until);
    tokio::pin!(watch);
    let mut watching = true;
    loop {
        tokio::select! {
            result = &mut exchange => return result,
            // A close fails the exchange too, which says why.
            _ = &mut watch, if watching => watching = false,
        }
    }
}

fn stream_failure(error: impl fmt::Display) -> Failure {
    Failure::new(ErrorClass::Protocol, format!("HTTP/3 request: {error}"))
}

/// When one HTTP/3 exchange saw its response arrive.
struct Exchanged {
    first_byte: Option<Instant>,
    done: Instant,
    response: Response,
    /// The response's `Server` field.
    server: Option<String>,
    /// The HTTP/3 control stream stays open for the connection's life (closing it is an error).
    control: Option<quinn::SendStream>,
}

/// Opens the connection's HTTP/3 control stream (with its SETTINGS), then sends the request
/// on a new stream and reads the response to its end.
async fn exchange_http3(
    connection: &quinn::Connection,
    request: &[u8],
) -> Result<Exchanged, Failure> {
    let mut control = connection.open_uni().await.map_err(connection_failure)?;
    control
        .write_all(&tlslab_http::http3_control_stream())
        .await
        .map_err(stream_failure)?;
    let mut exchanged = request_http3(connection, request).await?;
    exchanged.control = Some(control);
    Ok(exchanged)
}

/// Sends the request on a new stream of a connection whose control stream is open, and reads
/// the response to its end.
async fn request_http3(
    connection: &quinn::Connection,
    request: &[u8],
) -> Result<Exchanged, Failure> {
    let (mut send, mut receive) = connection.open_bi().await.map_err(connection_failure)?;
    send.write_all(request).await.map_err(stream_failure)?;
    send.finish().map_err(stream_failure)?;
    let mut reader = tlslab_http::ResponseReader::new(tlslab_http::Version::Http3);
    let mut first_byte = None;
    loop {
        let chunk = receive
            .read_chunk(usize::MAX, true)
            .await
            .map_err(stream_failure)?;
        let now = Instant::now();
        let ended = chunk.is_none();
        let progress = match chunk {
            Some(chunk) => reader.feed(&chunk.bytes),
            None => reader.finish(),
        }
        .map_err(stream_failure)?;
        if progress.first_byte && first_byte.is_none() {
            first_byte = Some(now);
        }
        if progress.complete {
            return Ok(Exchanged {
                first_byte,
                done: now,
                response: Response {
                    status: progress.status,
                    body_bytes: progress.body_bytes,
                },
                server: reader.server().map(str::to_owned),
                control: None,
            });
        }
        if ended {
            return Err(stream_failure("the server ended the stream early"));
        }
    }
}

/// Whether the server asked for a client certificate and whether one went, as the probe saw
/// it (settled again when the attempt ends): a refusal read now is explained by it.
fn note_client_certificate(attempt: &mut Attempt, observed: &Mutex<Observed>) {
    attempt.client_certificate = observed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .client_certificate;
}

/// A handshake that failed: its reason, explained (as over TCP) by a client certificate the
/// server asked for and did not get.
fn handshake_failure(
    attempt: &mut Attempt,
    observed: &Mutex<Observed>,
    error: ConnectionError,
) -> Failure {
    note_client_certificate(attempt, observed);
    connection_failure(error).explained_by(attempt)
}

/// Records when the HTTP/3 response arrived. The client cannot read 1-RTT data before it
/// holds the handshake keys: a first byte stamped before `handshake_done` only reflects which
/// of two tasks woke first.
fn record_exchange(attempt: &mut Attempt, exchanged: &Exchanged) {
    let done = attempt
        .instant_of(Event::HandshakeDone)
        .unwrap_or(attempt.origin);
    if let Some(at) = exchanged.first_byte {
        attempt
            .timeline
            .mark_once(Event::FirstByte, attempt.origin, at.max(done));
    }
    attempt.timeline.mark_once(
        Event::ResponseDone,
        attempt.origin,
        exchanged.done.max(done),
    );
    attempt.response = Some(exchanged.response);
    attempt.record_server(exchanged.server.as_deref());
}

/// The client endpoint's configuration. quinn allocates and zeroes a receive buffer of
/// max UDP payload × receive segments × batch size per endpoint: with the defaults (64 KiB
/// and receive offload) that is megabytes, and zeroing it dominated a loopback attempt's CPU.
/// Handshake datagrams fit in 1,500 bytes.
fn endpoint_config() -> quinn::EndpointConfig {
    let mut config = quinn::EndpointConfig::default();
    config
        .max_udp_payload_size(1500)
        .expect("1,500 is within QUIC's limits");
    config
}

/// quinn's client configuration for one attempt: the Config's rustls client with the
/// Initial packets' suite, and an idle timeout that leaves giving up to the attempt.
fn quic_client_config(tls: Arc<rustls::ClientConfig>) -> Result<quinn::ClientConfig, Failure> {
    // Initial packets are always protected with AES-128-GCM (RFC 9001), whatever suite the
    // Config offers for the handshake itself.
    let initial = rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .expect("AES-128-GCM is a QUIC suite");
    let crypto = quinn::crypto::rustls::QuicClientConfig::with_initial(tls, initial)
        .map_err(|error| Failure::new(ErrorClass::Protocol, error.to_string()))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    // Give up with the attempt rather than quinn's 30 s default.
    transport.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(Duration::from_secs(60)).expect("in range"),
    ));
    config.transport_config(Arc::new(transport));

    Ok(config)
}

/// A client endpoint on a fresh UDP socket of `address`'s family, whose datagrams `log`
/// sees; the socket's address is the attempt's local address.
fn client_endpoint(
    address: SocketAddr,
    attempt: &mut Attempt,
    log: &Arc<QuicLog>,
) -> Result<quinn::Endpoint, Failure> {
    let local: SocketAddr = if address.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = std::net::UdpSocket::bind(local).map_err(|error| Failure::io(&error))?;
    // The unspecified address and the port: what ties the sample to its packets (the
    // cross-check matches an unspecified address by port).
    attempt.local_address = socket.local_addr().ok();
    let runtime: Arc<dyn Runtime> = Arc::new(quinn::TokioRuntime);
    let inner = runtime
        .wrap_udp_socket(socket)
        .map_err(|error| Failure::io(&error))?;
    quinn::Endpoint::new_with_abstract_socket(
        endpoint_config(),
        None,
        Arc::new(ObservedSocket {
            inner,
            log: log.clone(),
        }),
        runtime,
    )
    .map_err(|error| Failure::io(&error))
}

/// A client's settings for one QUIC attempt beyond the Config's.
#[derive(Debug, Clone, Copy)]
pub struct QuicAttemptOptions {
    /// Keep the datagrams of the first flight for the replay probe.
    pub capture: bool,
    /// Stop waiting for the server's confirmation and for a session ticket at this moment
    /// (within the attempt's own time limit).
    pub ticket_deadline: Instant,
}

impl Client {
    /// One QUIC attempt from a fresh UDP socket: the handshake, the Config's HTTP/3 request
    /// (as 0-RTT data when the Config asks and the agent holds a ticket), the server's
    /// confirmation, the session ticket when resuming, and a close. Call [`Attempt::settle`]
    /// afterwards, also on a timeout.
    ///
    /// The handshake counts only once the server accepted it (measurement rule 11): a QUIC
    /// server confirms every handshake it accepts with HANDSHAKE_DONE, and refuses one by
    /// closing the connection with the TLS alert, so the attempt waits for either (at most
    /// until `ticket_deadline`: a confirmation lost and never resent is no refusal) and
    /// records the confirmation's datagram as `server_accepted`, after `handshake_done`.
    pub async fn quic_attempt(
        &self,
        session: &AgentSession,
        attempt: &mut Attempt,
        address: SocketAddr,
        options: QuicAttemptOptions,
    ) -> Result<(), Failure> {
        self.quic_open(session, attempt, address, options)
            .await?
            .close();
        Ok(())
    }

    /// [`Client::quic_attempt`] without the close: the connection stays open for the agent's
    /// next requests (HTTP/3 keep-alive), each a new stream ([`QuicSession::request`]).
    pub async fn quic_open(
        &self,
        session: &AgentSession,
        attempt: &mut Attempt,
        address: SocketAddr,
        options: QuicAttemptOptions,
    ) -> Result<QuicSession, Failure> {
        let observed = session.observed.clone().ok_or_else(|| {
            Failure::new(ErrorClass::Local, "a TCP agent session cannot run QUIC")
        })?;
        // The agent's probes report here; the previous attempt's reports are done with.
        *observed.lock().unwrap_or_else(|e| e.into_inner()) = Observed::default();
        let log = Arc::new(QuicLog::new(observed.clone(), options.capture));
        attempt.observe_with(log.clone());
        let config = quic_client_config(session.config.clone())?;

        let endpoint = client_endpoint(address, attempt, &log)?;
        let tickets_before = session.store.as_ref().map(|s| s.tickets_received());
        let connecting = endpoint
            .connect_with(config, address, &self.settings.server_name)
            .map_err(|error| Failure::new(ErrorClass::Protocol, error.to_string()))?;

        let request = self
            .request
            .as_ref()
            .map(|request| request.bytes.as_slice());
        let (connection, exchanged) = self
            .handshake(connecting, request, attempt, &observed, &log)
            .await?;
        note_client_certificate(attempt, &observed);
        // What was negotiated, kept also when the server then refuses the handshake.
        self.describe(attempt, &connection, &observed);
        // The waits after the handshake end by then, within the attempt's time limit.
        let waits_end = options.ticket_deadline;
        let keys = observed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .traffic_keys;
        let mut confirmation = Confirmation::after(log.received_before_finished(keys));
        let exchanged = match (exchanged, request) {
            (Some(exchanged), _) => Some(exchanged),
            (None, Some(request)) => Some(
                exchange_confirming(&connection, &log, &mut confirmation, request, waits_end)
                    .await
                    .map_err(|failure| {
                        exchange_failure(&connection, failure).explained_by(attempt)
                    })?,
            ),
            (None, None) => None,
        };
        if let Some(exchanged) = &exchanged {
            record_exchange(attempt, exchanged);
        }
        // With a request the confirmation came before its answer; without one, only a
        // server that asked for a certificate can still refuse (tlslab-backend's
        // `acceptance.rs`), so only then is waiting for its verdict worth a round trip.
        let judged = exchanged.is_some()
            || tlslab_backend::AcceptanceWait::can_refuse(attempt.client_certificate);
        if judged
            && confirmation
                .wait(&connection, &log, waits_end)
                .await
                .map_err(|failure| failure.explained_by(attempt))?
        {
            // Processed after the handshake, though its arrival may be stamped before the
            // attempt's task woke to mark `handshake_done` (see `record_exchange`).
            let done = attempt
                .instant_of(Event::HandshakeDone)
                .unwrap_or(attempt.origin);
            if let Some(at) = confirmation
                .carrier
                .and_then(|index| log.received_at(index))
            {
                attempt
                    .timeline
                    .mark_once(Event::ServerAccepted, attempt.origin, at.max(done));
            }
        }

        if let (Some(before), Some(store)) = (tickets_before, &session.store) {
            let patience = attempt.ticket_patience().min(
                options
                    .ticket_deadline
                    .saturating_duration_since(Instant::now()),
            );
            let _ = tokio::time::timeout(patience, store.ticket_after(before)).await;
        }
        let statistics = connection.stats();
        attempt.quic = Some(QuicPath {
            rtt_ns: statistics.path.rtt.as_nanos() as u64,
            datagrams_sent: statistics.udp_tx.datagrams,
            datagrams_received: statistics.udp_rx.datagrams,
            packets_sent: statistics.path.sent_packets,
            packets_lost: statistics.path.lost_packets,
            // Counted when the attempt settles, from the datagrams' arrivals.
            response_flights: None,
        });
        Ok(QuicSession {
            connection,
            control: exchanged.and_then(|exchanged| exchanged.control),
            log,
            endpoint,
        })
    }

    /// The handshake, with the request sent as 0-RTT data when the Config asks for early
    /// data and the agent holds a ticket: the connection, and the exchange when it went
    /// early (or was asked again in 1-RTT after the server refused the early data).
    async fn handshake(
        &self,
        connecting: quinn::Connecting,
        request: Option<&[u8]>,
        attempt: &mut Attempt,
        observed: &Arc<Mutex<Observed>>,
        log: &QuicLog,
    ) -> Result<(quinn::Connection, Option<Exchanged>), Failure> {
        let wants_early = self.settings.early_data > 0 && request.is_some();
        match (wants_early, request) {
            (true, Some(request)) => match connecting.into_0rtt() {
                Ok((connection, accepted)) => {
                    // The request leaves in 0-RTT packets while the handshake runs.
                    let timed_accept = async {
                        let accepted = accepted.await;
                        (accepted, Instant::now(), log.totals())
                    };
                    let ((accepted, done, bytes), early) =
                        tokio::join!(timed_accept, exchange_http3(&connection, request));
                    // quinn also resolves `accepted` to false when the connection died: that
                    // is a failed attempt, not refused early data.
                    if let Some(reason) = connection.close_reason() {
                        return Err(connection_failure(reason));
                    }
                    attempt
                        .timeline
                        .mark_once(Event::HandshakeDone, attempt.origin, done);
                    attempt.set_handshake_bytes(bytes.0, bytes.1);
                    attempt.negotiated.early_data = Some(accepted);
                    note_client_certificate(attempt, observed);
                    let exchanged = match (accepted, early) {
                        (true, Ok(exchanged)) => exchanged,
                        (true, Err(failure)) => {
                            return Err(exchange_failure(&connection, failure).explained_by(attempt))
                        }
                        // Rejected: the 0-RTT streams are gone; ask again in 1-RTT.
                        (false, _) => {
                            exchange_http3(&connection, request)
                                .await
                                .map_err(|failure| {
                                    exchange_failure(&connection, failure).explained_by(attempt)
                                })?
                        }
                    };
                    Ok((connection, Some(exchanged)))
                }
                Err(connecting) => {
                    let connection = connecting
                        .await
                        .map_err(|error| handshake_failure(attempt, observed, error))?;
                    attempt.mark(Event::HandshakeDone);
                    let (sent, received) = log.totals();
                    attempt.set_handshake_bytes(sent, received);
                    Ok((connection, None))
                }
            },
            _ => {
                let connection = connecting
                    .await
                    .map_err(|error| handshake_failure(attempt, observed, error))?;
                attempt.mark(Event::HandshakeDone);
                let (sent, received) = log.totals();
                attempt.set_handshake_bytes(sent, received);
                Ok((connection, None))
            }
        }
    }

    /// What the handshake negotiated. quinn does not expose rustls' session, but the client
    /// offers exactly one TLS 1.3 suite and one group, so a completed handshake used those; a
    /// handshake that verified no certificate resumed.
    fn describe(
        &self,
        attempt: &mut Attempt,
        connection: &quinn::Connection,
        observed: &Arc<Mutex<Observed>>,
    ) {
        let negotiated = &mut attempt.negotiated;
        negotiated.version = Some("1.3".into());
        // tlslab offers no ECH over QUIC (the Config is rejected before it runs).
        negotiated.ech = Some(tlslab_core::EchStatus::NotOffered);
        negotiated.suite = match self.settings.suite {
            tlslab_backend::Suite::Cipher(cipher) => {
                crate::provider::cipher_suites(self.settings.version, cipher)
                    .first()
                    .map(|suite| format!("{:?}", suite.suite()))
            }
            // A client with a legacy suite cannot be made (Client::new refuses it).
            tlslab_backend::Suite::Legacy(_) => None,
        };
        negotiated.group = Some(self.settings.group.as_str().to_string());
        negotiated.alpn = connection
            .handshake_data()
            .and_then(|data| data.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
            .and_then(|data| data.protocol)
            .map(|alpn| String::from_utf8_lossy(&alpn).into_owned());
        if self.settings.resumes() {
            let verified = observed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .verify_start
                .is_some();
            negotiated.resumed = Some(!verified);
        }
    }
}

/// A QUIC connection an agent keeps for its HTTP/3 requests (keep-alive, as HTTP/2 keeps
/// one TCP connection): the handshake was timed by [`Client::quic_open`]; each later request
/// is a new stream on it.
pub struct QuicSession {
    connection: quinn::Connection,
    /// The HTTP/3 control stream, open for the connection's life (closing it is an error).
    control: Option<quinn::SendStream>,
    /// The connection's datagram counts, for each request's bytes on the wire.
    log: Arc<QuicLog>,
    /// The endpoint drives the connection's socket: dropped last.
    endpoint: quinn::Endpoint,
}

impl fmt::Debug for QuicSession {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("QuicSession")
            .field("remote", &self.connection.remote_address())
            .finish_non_exhaustive()
    }
}

impl QuicSession {
    /// One request on a new stream: `first_byte` when its first byte arrives, `response_done`
    /// at its end, the response, and the datagram bytes sent and received meanwhile as the
    /// attempt's (one request at a time per connection: they are this request's). A
    /// connection the server closed fails before `first_byte`.
    pub async fn request(&mut self, attempt: &mut Attempt, request: &[u8]) -> Result<(), Failure> {
        let (sent_before, received_before) = self.log.totals();
        let exchanged = match self.control {
            Some(_) => request_http3(&self.connection, request).await?,
            None => {
                let mut exchanged = exchange_http3(&self.connection, request).await?;
                self.control = exchanged.control.take();
                exchanged
            }
        };
        record_exchange(attempt, &exchanged);
        let (sent, received) = self.log.totals();
        attempt.sent(sent.saturating_sub(sent_before) as usize, exchanged.done);
        attempt.received(
            received.saturating_sub(received_before) as usize,
            exchanged.done,
        );
        Ok(())
    }

    /// Closes the connection (CONNECTION_CLOSE with no error).
    pub fn close(self) {
        self.connection.close(0u32.into(), b"");
        drop(self.control);
        drop(self.endpoint);
    }
}

/// Re-sends a captured first flight (Initial and 0-RTT datagrams) from a new UDP socket and
/// waits briefly for the server's answer. The lab server counts the replay.
pub async fn replay_quic(
    address: SocketAddr,
    datagrams: &[Vec<u8>],
    patience: Duration,
) -> io::Result<()> {
    let local: SocketAddr = if address.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = tokio::net::UdpSocket::bind(local).await?;
    socket.connect(address).await?;
    for datagram in datagrams {
        socket.send(datagram).await?;
    }
    let mut buffer = vec![0u8; 2048];
    let _ = tokio::time::timeout(patience, socket.recv(&mut buffer)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Datagrams of `sizes` arriving `spacing` apart from `start`.
    fn burst(start: Instant, spacing: Duration, sizes: &[usize]) -> Vec<(Instant, usize)> {
        (0..sizes.len())
            .map(|index| (start + spacing * index as u32, sizes[index]))
            .collect()
    }

    #[test]
    fn a_response_cut_by_the_window_takes_two_round_trips() {
        let origin = Instant::now();
        let rtt = Duration::from_millis(30);
        let micro = Duration::from_micros(20);
        // The handshake flight, the response's flight (8 full datagrams after a probe and
        // small packets), and its rest a round trip later: quinn's defaults with 10 kB.
        let mut received = burst(origin, micro, &[1_200, 138]);
        let response = origin + rtt * 2;
        received.extend(burst(response, micro, &[37, 1_326, 31, 70, 33]));
        received.extend(burst(response + micro * 5, micro, &[1_200; 8]));
        received.extend(burst(response + rtt, micro, &[682, 1_389]));
        let flights = response_flights(
            &received,
            response + micro * 6,
            response + rtt + micro * 2,
            rtt,
        )
        .expect("flights");
        assert_eq!(
            flights,
            ResponseFlights {
                round_trips: 2,
                first_datagrams: 13,
                first_bytes: 11_097,
                later_datagrams: 2,
                later_bytes: 2_071,
            }
        );
    }

    #[test]
    fn a_response_in_one_flight_takes_one_round_trip() {
        let origin = Instant::now();
        let rtt = Duration::from_millis(30);
        let millisecond = Duration::from_millis(1);
        let mut received = burst(origin, millisecond, &[1_200, 138]);
        // Paced bursts a few milliseconds apart are one flight; the acknowledgement of the
        // client's last ACK-eliciting packet, a round trip later, is not the response's.
        received.extend(burst(origin + rtt * 2, millisecond * 3, &[1_350; 8]));
        received.extend(burst(origin + rtt * 4, millisecond, &[38]));
        let done = origin + rtt * 2 + millisecond * 22;
        let flights = response_flights(&received, origin + rtt * 2, done, rtt).expect("flights");
        assert_eq!(flights.round_trips, 1);
        assert_eq!((flights.first_datagrams, flights.first_bytes), (8, 10_800));
        assert_eq!((flights.later_datagrams, flights.later_bytes), (0, 0));
    }

    #[test]
    fn flights_are_not_told_apart_on_a_path_shorter_than_scheduling() {
        let origin = Instant::now();
        let received = burst(origin, Duration::from_micros(50), &[1_200; 4]);
        let rtt = Duration::from_micros(200);
        assert_eq!(response_flights(&received, origin, origin, rtt), None);
        // Nor before any datagram arrived.
        let later = burst(origin + rtt, Duration::from_micros(50), &[1_200; 4]);
        let end = origin + Duration::from_secs(1);
        assert_eq!(
            response_flights(&later, origin, end, Duration::from_millis(30)),
            None
        );
    }
}
