//! One attempt over TLS-over-TCP for any library: the handshake (the library's), then the
//! request and its response, the wait for the server to accept a TLS 1.3 handshake, the wait
//! for a session ticket and the close, written once.
//!
//! A library implements [`Client`] (set-up and handshake) and [`Channel`] (moving bytes of
//! an established connection); [`attempt_over_tcp`] does the rest the same way for all.

use std::future::Future;
use std::time::{Duration, Instant};

use tlslab_core::{CloseMode, ErrorClass, Event};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::acceptance::AcceptanceWait;
use crate::attempt::Attempt;
use crate::failure::Failure;
use crate::settings::Request;

/// Decrypted application data not yet consumed, and whether the server sent close_notify.
#[derive(Debug, Default)]
pub struct Plaintext {
    /// Bytes decrypted and not yet consumed.
    pub data: Vec<u8>,
    /// The server sent close_notify.
    pub closed: bool,
}

/// A TLS connection after its handshake, over a TCP stream: what a request, the wait for a
/// ticket and the close need of a library. Every byte read or written is reported to the
/// attempt ([`Attempt::received`], [`Attempt::sent`]).
pub trait Channel: Send {
    /// Encrypts `data` for the next [`Channel::send`].
    fn write(&mut self, data: &[u8]) -> Result<(), Failure>;

    /// Hands everything encrypted so far to the kernel.
    fn send(&mut self, attempt: &mut Attempt) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Reads once from the socket into the library; `Ok(false)` when the peer closed the
    /// connection.
    fn receive(
        &mut self,
        attempt: &mut Attempt,
    ) -> impl Future<Output = Result<bool, Failure>> + Send;

    /// Moves whatever application data the library has decrypted into the buffer, and
    /// returns the buffer.
    fn plaintext(&mut self) -> Result<&mut Plaintext, Failure>;

    /// Whether the connection speaks TLS 1.3, whose tickets follow the handshake.
    fn is_tls13(&self) -> bool;

    /// Closes the connection: an RST (sockets are opened with `SO_LINGER` 0) or a
    /// close_notify and FIN.
    fn close(self, mode: CloseMode) -> impl Future<Output = ()> + Send;
}

/// A handshake that completed.
#[derive(Debug)]
pub struct Handshake<C> {
    /// The connection, ready for the request.
    pub channel: C,
    /// The request already went out as early data the server accepted.
    pub request_sent: bool,
}

/// One Config's client in one library: what [`attempt_over_tcp`] needs of it.
pub trait Client: Send + Sync {
    /// One agent's state: its sessions to resume, when the Config resumes.
    type Agent: Clone + Send + Sync;
    /// The library's connection after the handshake.
    type Channel: Channel;

    /// A new agent: its first handshake is full.
    fn agent(&self) -> Self::Agent;

    /// The handshake on a connected stream. `attempt` keeps the partial record when this
    /// fails or is cancelled by a timeout. On 0-RTT Configs the request goes out as early
    /// data whenever the agent holds a session that allows it.
    fn handshake(
        &self,
        agent: &Self::Agent,
        attempt: &mut Attempt,
        stream: TcpStream,
    ) -> impl Future<Output = Result<Handshake<Self::Channel>, Failure>> + Send;

    /// The request sent after the handshake, if the Config sends one.
    fn request(&self) -> Option<&Request>;

    /// Sessions (TLS 1.3: tickets) the agent has received so far; `None` when the Config
    /// does not resume.
    fn tickets_received(&self, agent: &Self::Agent) -> Option<u64>;

    /// The Config's wait for its server's acceptance of TLS 1.3 handshakes, shared by its
    /// agents.
    fn acceptance(&self) -> &AcceptanceWait;
}

/// One attempt on a connected stream: the handshake, the Config's request, in TLS 1.3 the
/// server's acceptance, the session ticket of a resuming Config, then the close. The waits
/// after the handshake are never part of it, and end at the latest `wait_limit` after the
/// attempt's start.
pub async fn attempt_over_tcp<C: Client>(
    client: &C,
    agent: &C::Agent,
    attempt: &mut Attempt,
    stream: TcpStream,
    close: CloseMode,
    wait_limit: Duration,
) -> Result<(), Failure> {
    let channel = open_over_tcp(client, agent, attempt, stream, wait_limit).await?;
    channel.close(close).await;
    Ok(())
}

/// [`attempt_over_tcp`] without the close: the connection stays open for the agent's next
/// request (HTTP keep-alive).
///
/// A TLS 1.3 handshake counts only once the server accepted it (measurement rule 11): its
/// server judges the client's Finished and certificate after the client is done, and refuses
/// by an alert on the client's next read. With a request, the response is that read; without
/// one, the client waits for the server's next flight (a session ticket, any record: the
/// `server_accepted` event) or its refusal, for a few handshakes' time ([`AcceptanceWait`]);
/// a server that sends nothing unasked is counted when that time passes without a refusal.
pub async fn open_over_tcp<C: Client>(
    client: &C,
    agent: &C::Agent,
    attempt: &mut Attempt,
    stream: TcpStream,
    wait_limit: Duration,
) -> Result<C::Channel, Failure> {
    let tickets_before = client.tickets_received(agent);
    attempt.local_address = stream.local_addr().ok();
    let Handshake {
        mut channel,
        request_sent,
    } = client
        .handshake(agent, attempt, stream)
        .await
        .map_err(|failure| failure.explained_by(attempt))?;
    // Waits end by this moment, so they cannot turn into the attempt's timeout.
    let waits_end = attempt.origin + wait_limit;
    let tls13 = channel.is_tls13();
    if let Some(request) = client.request() {
        // TLS 1.3: a server that wanted a certificate says so after the client's Finished,
        // so the client learns it on its first read.
        exchange(&mut channel, attempt, request, request_sent)
            .await
            .map_err(|failure| match (tls13, failure.class) {
                (true, ErrorClass::Alert) => failure.after_finished(),
                _ => failure,
            })
            .map_err(|failure| failure.explained_by(attempt))?;
        if let Some(failure) = Failure::refused_at_http(attempt) {
            return Err(failure);
        }
        // The response's first read answered the client's Finished, unless the request went
        // as 0-RTT data: its answer was sent before the server saw the Finished.
        match (tls13, request_sent) {
            (true, false) => attempt.server_answered(),
            (true, true) => attempt.not_an_answer(),
            (false, _) => {}
        }
    }
    // Without a request, or with a 0-RTT answer, nothing read so far says the server
    // accepted the handshake. Only a server that asked for a certificate can still refuse
    // (`acceptance.rs` says why and what waiting always cost).
    if tls13
        && attempt.timeline.get(Event::ServerAccepted).is_none()
        && AcceptanceWait::can_refuse(attempt.client_certificate)
    {
        let patience = client
            .acceptance()
            .patience(attempt.handshake_time())
            .min(waits_end.saturating_duration_since(Instant::now()));
        let verdict = await_acceptance(&mut channel, attempt, patience).await;
        client.acceptance().saw(!matches!(verdict, Ok(false)));
        verdict.map_err(|failure| failure.explained_by(attempt))?;
    }
    if let (Some(before), true) = (tickets_before, tls13) {
        let patience = attempt
            .ticket_patience()
            .min(waits_end.saturating_duration_since(Instant::now()));
        let arrived = || client.tickets_received(agent) != Some(before);
        await_ticket(&mut channel, attempt, patience, arrived).await;
    }
    Ok(channel)
}

/// Plain HTTP: the request and response as they are, over the TCP stream. What a request
/// costs without TLS, measured by the same reader as over TLS.
#[derive(Debug)]
pub struct PlainChannel {
    stream: TcpStream,
    outgoing: Vec<u8>,
    buffer: Vec<u8>,
    plaintext: Plaintext,
}

impl PlainChannel {
    /// A plain channel on a connected stream; `attempt` records it has no handshake.
    pub fn new(stream: TcpStream, attempt: &mut Attempt) -> PlainChannel {
        attempt.local_address = stream.local_addr().ok();
        attempt.without_handshake();
        PlainChannel {
            stream,
            outgoing: Vec::new(),
            buffer: vec![0; 16 * 1024],
            plaintext: Plaintext::default(),
        }
    }
}

impl Channel for PlainChannel {
    fn write(&mut self, data: &[u8]) -> Result<(), Failure> {
        self.outgoing.extend_from_slice(data);
        Ok(())
    }

    async fn send(&mut self, attempt: &mut Attempt) -> Result<(), Failure> {
        if self.outgoing.is_empty() {
            return Ok(());
        }
        self.stream
            .write_all(&self.outgoing)
            .await
            .map_err(|error| Failure::io(&error))?;
        attempt.sent_now(self.outgoing.len());
        self.outgoing.clear();
        Ok(())
    }

    async fn receive(&mut self, attempt: &mut Attempt) -> Result<bool, Failure> {
        let read = self
            .stream
            .read(&mut self.buffer)
            .await
            .map_err(|error| Failure::io(&error))?;
        if read == 0 {
            self.plaintext.closed = true;
            return Ok(false);
        }
        attempt.received_now(read);
        self.plaintext.data.extend_from_slice(&self.buffer[..read]);
        Ok(true)
    }

    fn plaintext(&mut self) -> Result<&mut Plaintext, Failure> {
        Ok(&mut self.plaintext)
    }

    fn is_tls13(&self) -> bool {
        false
    }

    async fn close(mut self, mode: CloseMode) {
        if mode == CloseMode::Graceful {
            let _ = self.stream.shutdown().await;
        }
    }
}

/// Sends `request` (unless early data carried it) and reads the response to its end,
/// marking `first_byte` and `response_done`.
pub async fn exchange<C: Channel>(
    channel: &mut C,
    attempt: &mut Attempt,
    request: &Request,
    request_sent: bool,
) -> Result<(), Failure> {
    if !request_sent {
        channel.write(&request.bytes)?;
        channel.send(attempt).await?;
    }
    let mut reader = tlslab_http::ResponseReader::new(request.version);
    loop {
        // With 0-RTT the response may have come with the server's handshake flight: the
        // library holds it already, and the first round returns it.
        let plaintext = channel.plaintext()?;
        let data = std::mem::take(&mut plaintext.data);
        let closed = plaintext.closed;
        // Tickets or key-update acknowledgements the library wrote while reading.
        channel.send(attempt).await?;
        if !data.is_empty() {
            let progress = reader.feed(&data).map_err(Failure::http)?;
            if answer(channel, attempt, &mut reader, progress).await? {
                return Ok(());
            }
        }
        if closed || !channel.receive(attempt).await? {
            let progress = reader.finish().map_err(Failure::http)?;
            if answer(channel, attempt, &mut reader, progress).await? {
                return Ok(());
            }
            return Err(Failure::new(
                ErrorClass::Reset,
                "the server closed the connection before the response was complete",
            ));
        }
    }
}

/// Records a response's progress, sending the acknowledgements (HTTP/2 SETTINGS,
/// WINDOW_UPDATE) the reader wants sent; `Ok(true)` once the response is complete.
async fn answer<C: Channel>(
    channel: &mut C,
    attempt: &mut Attempt,
    reader: &mut tlslab_http::ResponseReader,
    progress: tlslab_http::Progress,
) -> Result<bool, Failure> {
    let acknowledgements = reader.take_output();
    if !acknowledgements.is_empty() {
        channel.write(&acknowledgements)?;
        channel.send(attempt).await?;
    }
    if progress.complete {
        attempt.record_server(reader.server());
    }
    Ok(attempt.record_response(&progress))
}

/// Reads, at most `patience`, until the server's first records after a TLS 1.3 handshake
/// arrive (`Ok(true)`; [`Attempt::server_answered`] marks `server_accepted`) or the server
/// refuses the handshake: an alert (the library's failure, said to come after the client's
/// Finished) or a closed connection, either a failure. Nothing within `patience` is no
/// refusal: `Ok(false)`.
pub async fn await_acceptance<C: Channel>(
    channel: &mut C,
    attempt: &mut Attempt,
    patience: Duration,
) -> Result<bool, Failure> {
    let wait = async {
        loop {
            // Some libraries process what was read (tickets, alerts) only while decrypting.
            let closed = channel.plaintext()?.closed;
            if attempt.read_since_handshake() {
                attempt.server_answered();
                return Ok(true);
            }
            if closed || !channel.receive(attempt).await? {
                return Err(Failure::new(
                    ErrorClass::Protocol,
                    "the server closed the connection after the client's Finished without accepting the handshake",
                ));
            }
        }
    };
    // The patience is about a handshake's time, often less than tokio's timer tick.
    tokio::select! {
        biased;
        verdict = wait => match verdict {
            Err(failure) if failure.class == ErrorClass::Alert => Err(failure.after_finished()),
            verdict => verdict,
        },
        () = crate::timer::sleep(patience) => Ok(false),
    }
}

/// Reads until `arrived` says the session ticket came (it follows a TLS 1.3 handshake), so
/// the agent's next handshake can resume. Gives up quietly after `patience`: a server that
/// issues no tickets just means the next handshake is full.
pub async fn await_ticket<C: Channel>(
    channel: &mut C,
    attempt: &mut Attempt,
    patience: Duration,
    arrived: impl Fn() -> bool + Sync,
) {
    let wait = async {
        loop {
            // Some libraries process the ticket while decrypting.
            match channel.plaintext() {
                Ok(plaintext) if !plaintext.closed => plaintext.data.clear(),
                _ => return,
            }
            // Read and processed without an alert: a ticket that came after the wait for the
            // server's acceptance is its acceptance still.
            attempt.server_answered();
            if arrived() || !matches!(channel.receive(attempt).await, Ok(true)) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(patience, wait).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use tlslab_core::Event;

    /// A connection whose server answers from a script: each `receive` decrypts the next
    /// chunk; an empty script is the server closing the connection.
    struct Scripted {
        incoming: VecDeque<Vec<u8>>,
        plaintext: Plaintext,
        written: Vec<u8>,
        sent: Vec<u8>,
        close_notify_after_script: bool,
        /// After the script: the server's refusal (an alert), or silence when `None` and
        /// `silent`; otherwise a closed connection.
        refusal: Option<Failure>,
        silent: bool,
    }

    impl Scripted {
        fn new(chunks: Vec<Vec<u8>>) -> Scripted {
            Scripted {
                incoming: chunks.into(),
                plaintext: Plaintext::default(),
                written: Vec::new(),
                sent: Vec::new(),
                close_notify_after_script: false,
                refusal: None,
                silent: false,
            }
        }
    }

    impl Channel for Scripted {
        fn write(&mut self, data: &[u8]) -> Result<(), Failure> {
            self.written.extend_from_slice(data);
            Ok(())
        }

        async fn send(&mut self, attempt: &mut Attempt) -> Result<(), Failure> {
            if !self.written.is_empty() {
                attempt.sent(self.written.len(), std::time::Instant::now());
                self.sent.append(&mut self.written);
            }
            Ok(())
        }

        async fn receive(&mut self, attempt: &mut Attempt) -> Result<bool, Failure> {
            match self.incoming.pop_front() {
                Some(chunk) => {
                    attempt.received(chunk.len(), std::time::Instant::now());
                    self.plaintext.data.extend_from_slice(&chunk);
                    self.plaintext.closed =
                        self.incoming.is_empty() && self.close_notify_after_script;
                    Ok(true)
                }
                None => match self.refusal.take() {
                    Some(failure) => Err(failure),
                    None if self.silent => std::future::pending().await,
                    None => Ok(false),
                },
            }
        }

        fn plaintext(&mut self) -> Result<&mut Plaintext, Failure> {
            Ok(&mut self.plaintext)
        }

        fn is_tls13(&self) -> bool {
            true
        }

        async fn close(self, _: CloseMode) {}
    }

    fn request() -> Request {
        let version = tlslab_http::Version::Http11;
        Request {
            version,
            bytes: tlslab_http::encode_request(
                version,
                &tlslab_http::Request {
                    authority: "lab.test",
                    path: "/",
                    min_size: 0,
                },
            ),
        }
    }

    fn response(body: usize) -> Vec<u8> {
        tlslab_http::encode_response(tlslab_http::Version::Http11, 1, body)
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        // Time and I/O, as the attempts' runtime has: short waits use a timerfd.
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn a_response_in_pieces_marks_first_byte_and_done() {
        let whole = response(2_000);
        let (head, tail) = whole.split_at(10);
        let mut channel = Scripted::new(vec![head.to_vec(), tail.to_vec()]);
        let mut attempt = Attempt::start();
        attempt.handshake_done();
        block_on(exchange(&mut channel, &mut attempt, &request(), false)).unwrap();
        assert_eq!(channel.sent, request().bytes);
        let response = attempt.response.unwrap();
        assert_eq!((response.status, response.body_bytes), (Some(200), 2_000));
        assert!(attempt.timeline.get(Event::FirstByte).is_some());
        assert!(attempt.timeline.get(Event::ResponseDone).is_some());
        // The encoder's response names no server.
        assert_eq!(attempt.server_software, None);
    }

    #[test]
    fn the_server_field_is_kept_for_a_connections_first_request_only() {
        let answer = b"HTTP/1.1 200 OK\r\nServer: lab/1\r\ncontent-length: 2\r\n\r\nok";
        let on = |place: u32| {
            let mut channel = Scripted::new(vec![answer.to_vec()]);
            let mut attempt = Attempt::start();
            attempt.handshake_done();
            attempt.connection = Some(tlslab_core::ConnectionUse {
                id: 1,
                request: place,
            });
            block_on(exchange(&mut channel, &mut attempt, &request(), false)).unwrap();
            attempt.server_software
        };
        assert_eq!(on(1).as_deref(), Some("lab/1"));
        assert_eq!(on(2), None);
    }

    #[test]
    fn an_early_request_is_not_sent_again_and_a_buffered_answer_counts() {
        let mut channel = Scripted::new(Vec::new());
        channel.plaintext.data = response(10);
        let mut attempt = Attempt::start();
        block_on(exchange(&mut channel, &mut attempt, &request(), true)).unwrap();
        assert!(channel.sent.is_empty());
        assert_eq!(attempt.response.unwrap().body_bytes, 10);
    }

    #[test]
    fn a_close_before_the_end_fails_with_what_arrived_recorded() {
        let whole = response(2_000);
        for close_notify in [false, true] {
            let mut channel = Scripted::new(vec![whole[..100].to_vec()]);
            channel.close_notify_after_script = close_notify;
            let mut attempt = Attempt::start();
            let failure =
                block_on(exchange(&mut channel, &mut attempt, &request(), false)).unwrap_err();
            // The reader refuses a body cut short by its Content-Length.
            assert_eq!(failure.class, ErrorClass::Protocol, "{failure:?}");
            assert!(attempt.timeline.get(Event::FirstByte).is_some());
            assert_eq!(attempt.timeline.get(Event::ResponseDone), None);
        }
    }

    #[test]
    fn garbage_is_a_protocol_failure() {
        let mut channel = Scripted::new(vec![b"\x00\x01garbage\r\n\r\n".to_vec()]);
        let mut attempt = Attempt::start();
        let failure =
            block_on(exchange(&mut channel, &mut attempt, &request(), false)).unwrap_err();
        assert_eq!(failure.class, ErrorClass::Protocol);
    }

    /// An attempt whose TLS 1.3 handshake just ended.
    fn handshaken() -> Attempt {
        let mut attempt = Attempt::start();
        attempt.received(1_000, std::time::Instant::now());
        attempt.handshake_done();
        attempt
    }

    #[test]
    fn the_servers_next_flight_is_its_acceptance_and_is_timed() {
        let mut channel = Scripted::new(vec![vec![4; 200], vec![4; 200]]);
        let mut attempt = handshaken();
        let answered = block_on(await_acceptance(
            &mut channel,
            &mut attempt,
            Duration::from_secs(5),
        ))
        .unwrap();
        assert!(answered);
        // The first record read after the handshake ended the wait.
        assert_eq!(channel.incoming.len(), 1);
        let accepted = attempt.timeline.get(Event::ServerAccepted).unwrap();
        assert!(accepted > attempt.timeline.get(Event::HandshakeDone).unwrap());
        assert!(attempt.timeline.is_ordered());
        // Not part of the handshake, nor of its bytes.
        assert_eq!(attempt.handshake_bytes(), (0, 1_000));
    }

    #[test]
    fn an_alert_or_a_close_after_the_handshake_refuses_it() {
        let mut channel = Scripted::new(Vec::new());
        channel.refusal = Some(Failure::new(
            ErrorClass::Alert,
            "alert 116 (CertificateRequired)",
        ));
        let mut attempt = handshaken();
        let failure = block_on(await_acceptance(
            &mut channel,
            &mut attempt,
            Duration::from_secs(5),
        ))
        .unwrap_err();
        assert_eq!(failure.class, ErrorClass::Alert);
        assert_eq!(
            failure.detail,
            "alert 116 (CertificateRequired), after the client's Finished"
        );
        assert_eq!(attempt.timeline.get(Event::ServerAccepted), None);

        for close_notify in [false, true] {
            let mut channel = Scripted::new(Vec::new());
            channel.plaintext.closed = close_notify;
            let mut attempt = handshaken();
            let failure = block_on(await_acceptance(
                &mut channel,
                &mut attempt,
                Duration::from_secs(5),
            ))
            .unwrap_err();
            assert_eq!(failure.class, ErrorClass::Protocol);
            assert!(failure.detail.ends_with("without accepting the handshake"));
        }
    }

    #[test]
    fn a_silent_server_is_no_refusal_and_the_wait_is_bounded() {
        let mut channel = Scripted::new(Vec::new());
        channel.silent = true;
        let mut attempt = handshaken();
        let answered = block_on(await_acceptance(
            &mut channel,
            &mut attempt,
            Duration::from_millis(5),
        ))
        .unwrap();
        assert!(!answered);
        assert_eq!(attempt.timeline.get(Event::ServerAccepted), None);
    }

    #[test]
    fn a_0rtt_answer_read_after_the_handshake_is_not_the_acceptance() {
        // The rest of a 0.5-RTT answer read after the handshake was sent before the server
        // saw the client's Finished; the ticket after it is the acceptance.
        let mut channel = Scripted::new(vec![vec![1; 10], vec![4; 200]]);
        let mut attempt = handshaken();
        block_on(channel.receive(&mut attempt)).unwrap();
        attempt.not_an_answer();
        let after_the_answer = std::time::Instant::now();
        block_on(await_acceptance(
            &mut channel,
            &mut attempt,
            Duration::from_secs(5),
        ))
        .unwrap();
        assert!(attempt.instant_of(Event::ServerAccepted).unwrap() >= after_the_answer);
        assert!(channel.incoming.is_empty());
    }

    #[test]
    fn the_ticket_wait_ends_when_the_ticket_arrives_or_the_server_leaves() {
        let arrivals = std::sync::atomic::AtomicU64::new(0);
        let mut channel = Scripted::new(vec![vec![1], vec![2], vec![3]]);
        let mut attempt = Attempt::start();
        // The ticket is there from the second look on: after the first read.
        let arrived = || arrivals.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 1;
        block_on(await_ticket(
            &mut channel,
            &mut attempt,
            Duration::from_secs(5),
            arrived,
        ));
        assert_eq!(
            channel.incoming.len(),
            2,
            "stopped once the ticket was there"
        );

        let mut channel = Scripted::new(vec![vec![1]]);
        let started = std::time::Instant::now();
        block_on(await_ticket(
            &mut channel,
            &mut attempt,
            Duration::from_secs(5),
            || false,
        ));
        assert!(channel.incoming.is_empty());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "gave up on the close"
        );
    }
}
