//! One attempt over TLS-over-TCP for any library: the handshake (the library's), then the
//! request and its response, the wait for a session ticket and the close, written once.
//!
//! A library implements [`Client`] (set-up and handshake) and [`Channel`] (moving bytes of
//! an established connection); [`attempt_over_tcp`] does the rest the same way for all.

use std::future::Future;
use std::time::Duration;

use tlslab_core::{CloseMode, ErrorClass};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::attempt::Attempt;
use crate::failure::Failure;
use crate::settings::Request;

/// Decrypted application data not yet consumed, and whether the server sent close_notify.
#[derive(Debug, Default)]
pub struct Plaintext {
    pub data: Vec<u8>,
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
    pub channel: C,
    /// The request already went out as early data the server accepted.
    pub request_sent: bool,
}

/// One Config's client in one library: what [`attempt_over_tcp`] needs of it.
pub trait Client: Send + Sync {
    /// One agent's state: its sessions to resume, when the Config resumes.
    type Agent: Clone + Send + Sync;
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
}

/// One attempt on a connected stream: the handshake, the Config's request, the session
/// ticket of a resuming Config (waiting at most `ticket_limit`, and never as part of the
/// handshake), then the close.
pub async fn attempt_over_tcp<C: Client>(
    client: &C,
    agent: &C::Agent,
    attempt: &mut Attempt,
    stream: TcpStream,
    close: CloseMode,
    ticket_limit: Duration,
) -> Result<(), Failure> {
    let channel = open_over_tcp(client, agent, attempt, stream, ticket_limit).await?;
    channel.close(close).await;
    Ok(())
}

/// [`attempt_over_tcp`] without the close: the connection stays open for the agent's next
/// request (HTTP keep-alive).
pub async fn open_over_tcp<C: Client>(
    client: &C,
    agent: &C::Agent,
    attempt: &mut Attempt,
    stream: TcpStream,
    ticket_limit: Duration,
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
    if let Some(request) = client.request() {
        // TLS 1.3: a server that wanted a certificate says so after the client's Finished,
        // so the client learns it on its first read.
        exchange(&mut channel, attempt, request, request_sent)
            .await
            .map_err(|failure| failure.explained_by(attempt))?;
        if let Some(failure) = Failure::refused_at_http(attempt) {
            return Err(failure);
        }
    }
    if let (Some(before), true) = (tickets_before, channel.is_tls13()) {
        let patience = attempt.ticket_patience().min(ticket_limit);
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
        while !arrived() {
            match channel.plaintext() {
                Ok(plaintext) if !plaintext.closed => plaintext.data.clear(),
                _ => return,
            }
            // Some libraries process the ticket while decrypting.
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
    }

    impl Scripted {
        fn new(chunks: Vec<Vec<u8>>) -> Scripted {
            Scripted {
                incoming: chunks.into(),
                plaintext: Plaintext::default(),
                written: Vec::new(),
                sent: Vec::new(),
                close_notify_after_script: false,
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
                None => Ok(false),
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
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
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

    #[test]
    fn the_ticket_wait_ends_when_the_ticket_arrives_or_the_server_leaves() {
        let arrivals = std::sync::atomic::AtomicU64::new(0);
        let mut channel = Scripted::new(vec![vec![1], vec![2], vec![3]]);
        let mut attempt = Attempt::start();
        let arrived = || arrivals.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 3;
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
