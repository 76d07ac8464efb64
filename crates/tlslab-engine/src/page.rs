//! Page mode: one attempt loads a page as a browser does. The first connection's handshake is
//! the attempt's (every phase timed as in any attempt); it fetches the document, then the
//! resources go over six connections for HTTP/1.1 (the first and five more, opened at once)
//! or as concurrent streams on the one connection for HTTP/2. `first_byte` is the document's
//! answer, `response_done` the last resource's: the page load time.
//!
//! hyper's clients speak HTTP here (our own reader handles one request per connection, and a
//! page needs HTTP/2 multiplexing). They run over an in-memory pipe that a task of each
//! connection pumps to and from its TLS (or plain) [`Channel`], so the TLS libraries stay
//! driven by our instrumented code.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tlslab_backend::{Attempt, Channel, Failure};
use tlslab_core::{ErrorClass, Event, Http, Page, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::TcpStream;

/// Connections a browser opens to one host over HTTP/1.1.
pub const CONNECTIONS_PER_HOST: usize = 6;

/// Where a page comes from, and how to open another connection to it.
pub struct Origin<'a, Open> {
    /// `https://host` or `http://host`, with the `Host` a request names.
    pub scheme: &'static str,
    pub authority: String,
    pub path: String,
    pub http: Http,
    /// Opens one more connection (connect and handshake), as a channel.
    pub open: &'a Open,
}

/// The bytes a pumped connection has moved on the wire so far (TLS records included).
#[derive(Default)]
struct Wire {
    received: AtomicU64,
}

/// A connection's plaintext as a byte stream for hyper: a task moves bytes between one end of
/// an in-memory pipe and the channel, until either side closes.
fn pipe<C: Channel + 'static>(channel: C) -> (DuplexStream, Arc<Wire>) {
    let (ours, theirs) = tokio::io::duplex(256 * 1024);
    let wire = Arc::new(Wire::default());
    tokio::spawn(pump(channel, theirs, wire.clone()));
    (ours, wire)
}

async fn pump<C: Channel>(mut channel: C, mut pipe: DuplexStream, wire: Arc<Wire>) {
    // Bytes are counted on a record of their own: the page's attempt holds the handshake.
    // They are published before the plaintext they carried reaches hyper.
    let mut scratch = Attempt::start();
    scratch.without_handshake();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let Ok(plaintext) = channel.plaintext() else {
            return;
        };
        if !plaintext.data.is_empty() {
            let data = std::mem::take(&mut plaintext.data);
            if pipe.write_all(&data).await.is_err() {
                return;
            }
            continue;
        }
        if plaintext.closed {
            return;
        }
        tokio::select! {
            read = pipe.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return,
                Ok(count) => {
                    if channel.write(&buffer[..count]).is_err()
                        || channel.send(&mut scratch).await.is_err()
                    {
                        return;
                    }
                }
            },
            more = channel.receive(&mut scratch) => {
                wire.received.store(scratch.bytes_received, Ordering::Release);
                // Whatever the library wrote while reading (acknowledgements, key updates).
                if !matches!(more, Ok(true)) || channel.send(&mut scratch).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn http_failure(error: impl std::fmt::Display) -> Failure {
    Failure::new(ErrorClass::Protocol, format!("page: {error}"))
}

/// One request's answer: its status, its body's size, when its headers came.
struct Answer {
    status: u16,
    bytes: u64,
    headers_at: Instant,
    /// The `Server` field, as text.
    server: Option<hyper::header::HeaderValue>,
}

fn request(
    origin_form: bool,
    scheme: &str,
    authority: &str,
    path: &str,
) -> hyper::Request<Empty<Bytes>> {
    let uri = if origin_form {
        path.to_string()
    } else {
        format!("{scheme}://{authority}{path}")
    };
    hyper::Request::get(uri)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::USER_AGENT, "tlslab")
        .body(Empty::new())
        .unwrap_or_default()
}

async fn answer(response: hyper::Response<hyper::body::Incoming>) -> Result<Answer, Failure> {
    let headers_at = Instant::now();
    let status = response.status().as_u16();
    let server = response.headers().get(hyper::header::SERVER).cloned();
    // The body is counted as it comes and dropped: a page of 24 resources of 64 MiB held
    // 1.9 GB when each body was collected whole, and a browser does not keep them either.
    let mut body = response.into_body();
    let mut bytes = 0u64;
    while let Some(frame) = body.frame().await {
        if let Some(data) = frame.map_err(http_failure)?.data_ref() {
            bytes += data.len() as u64;
        }
    }
    Ok(Answer {
        status,
        bytes,
        headers_at,
        server,
    })
}

/// What the page's requests came to: the worst status and the bytes.
#[derive(Default)]
struct Tally {
    bytes: u64,
    failed_status: Option<u16>,
}

impl Tally {
    fn add(&mut self, answer: &Answer) {
        self.bytes += answer.bytes;
        if !(200..300).contains(&answer.status) {
            self.failed_status.get_or_insert(answer.status);
        }
    }
}

/// Loads `page` from `origin`: the document on `first` (whose handshake `attempt` recorded),
/// then every resource. Records `first_byte`, `response_done` and the response.
pub async fn load<C, Open, Opening>(
    attempt: &mut Attempt,
    first: C,
    origin: Origin<'_, Open>,
    page: &Page,
) -> Result<(), Failure>
where
    C: Channel + 'static,
    Open: Fn() -> Opening,
    Opening: Future<Output = Result<C, Failure>>,
{
    let resources: VecDeque<String> = page.resources().map(|size| format!("/r/{size}")).collect();
    let mut tally = Tally::default();
    // What every connection read after its handshake: the page's bytes on the wire.
    let mut wires: Vec<Arc<Wire>> = Vec::new();
    let mut piped = |channel: C| {
        let (stream, wire) = pipe(channel);
        wires.push(wire);
        stream
    };
    let document = match origin.http {
        Http::Http2 => {
            let (sender, connection) =
                http2::handshake(TokioExecutor::new(), TokioIo::new(piped(first)))
                    .await
                    .map_err(http_failure)?;
            tokio::spawn(connection);
            let document = answer(
                sender
                    .clone()
                    .send_request(request(
                        false,
                        origin.scheme,
                        &origin.authority,
                        &origin.path,
                    ))
                    .await
                    .map_err(http_failure)?,
            )
            .await?;
            attempt
                .timeline
                .mark_once(Event::FirstByte, attempt.origin, document.headers_at);
            // Every resource at once, as streams of the one connection.
            let mut streams = tokio::task::JoinSet::new();
            for path in resources {
                let mut sender = sender.clone();
                let request = request(false, origin.scheme, &origin.authority, &path);
                streams.spawn(async move {
                    answer(sender.send_request(request).await.map_err(http_failure)?).await
                });
            }
            while let Some(joined) = streams.join_next().await {
                tally.add(&joined.map_err(http_failure)??);
            }
            document
        }
        _ => {
            let (mut sender, connection) = http1::handshake(TokioIo::new(piped(first)))
                .await
                .map_err(http_failure)?;
            tokio::spawn(connection);
            let document = answer(
                sender
                    .send_request(request(
                        true,
                        origin.scheme,
                        &origin.authority,
                        &origin.path,
                    ))
                    .await
                    .map_err(http_failure)?,
            )
            .await?;
            attempt
                .timeline
                .mark_once(Event::FirstByte, attempt.origin, document.headers_at);
            // The first connection and five more, each taking the next resource as soon as
            // it is free.
            let queue = Arc::new(Mutex::new(resources));
            let take = |queue: &Arc<Mutex<VecDeque<String>>>| {
                queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
            };
            let mut workers = tokio::task::JoinSet::new();
            let spawn_worker =
                |workers: &mut tokio::task::JoinSet<Result<Tally, Failure>>,
                 mut sender: http1::SendRequest<Empty<Bytes>>| {
                    let queue = queue.clone();
                    let (scheme, authority) = (origin.scheme, origin.authority.clone());
                    workers.spawn(async move {
                        let mut tally = Tally::default();
                        while let Some(path) = take(&queue) {
                            sender.ready().await.map_err(http_failure)?;
                            let response = sender
                                .send_request(request(true, scheme, &authority, &path))
                                .await
                                .map_err(http_failure)?;
                            tally.add(&answer(response).await?);
                        }
                        Ok(tally)
                    });
                };
            spawn_worker(&mut workers, sender);
            let more = CONNECTIONS_PER_HOST
                .saturating_sub(1)
                .min(page.count() as usize);
            // Opened concurrently, in this task: the openings borrow the client.
            let mut opening: FuturesUnordered<Opening> =
                (0..more).map(|_| (origin.open)()).collect();
            while let Some(opened) = opening.next().await {
                let channel = opened?;
                let (sender, connection) = http1::handshake(TokioIo::new(piped(channel)))
                    .await
                    .map_err(http_failure)?;
                tokio::spawn(connection);
                spawn_worker(&mut workers, sender);
            }
            while let Some(joined) = workers.join_next().await {
                let worker = joined.map_err(http_failure)??;
                tally.bytes += worker.bytes;
                if let Some(status) = worker.failed_status {
                    tally.failed_status.get_or_insert(status);
                }
            }
            document
        }
    };
    tally.add(&document);
    // Counted on the attempt after its handshake's bytes, as a single connection's
    // response is.
    attempt.bytes_received += wires
        .iter()
        .map(|wire| wire.received.load(Ordering::Acquire))
        .sum::<u64>();
    attempt.record_server(server_text(&document));
    attempt.mark(Event::ResponseDone);
    attempt.response = Some(Response {
        status: Some(document.status),
        body_bytes: tally.bytes,
    });
    match tally.failed_status {
        Some(status) => Err(Failure::new(
            ErrorClass::Protocol,
            format!("page: a request was answered with HTTP status {status}"),
        )),
        None => Ok(()),
    }
}

/// An HTTP/2 connection an agent keeps for its requests (keep-alive over HTTP/2, as h2load's
/// clients do): hyper's client over the pumped channel, each request a new stream. The
/// connection's handshake was timed by the library before it was handed over.
pub struct Http2Session {
    sender: http2::SendRequest<Empty<Bytes>>,
    wire: Arc<Wire>,
}

impl Http2Session {
    /// Starts HTTP/2 (the preface and SETTINGS) on an established channel.
    pub async fn open<C: Channel + 'static>(channel: C) -> Result<Http2Session, Failure> {
        let (stream, wire) = pipe(channel);
        let (sender, connection) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(http_failure)?;
        tokio::spawn(connection);
        Ok(Http2Session { sender, wire })
    }

    /// One GET of `path` on a new stream: `first_byte` when its headers come, `response_done`
    /// when its body has, and the bytes the connection read meanwhile as the attempt's (one
    /// request at a time per connection: they are this response's). A connection the server
    /// closed fails before `first_byte`.
    pub async fn request(
        &mut self,
        attempt: &mut Attempt,
        scheme: &str,
        authority: &str,
        path: &str,
    ) -> Result<(), Failure> {
        self.sender.ready().await.map_err(http_failure)?;
        let before = self.wire.received.load(Ordering::Acquire);
        let response = self
            .sender
            .send_request(request(false, scheme, authority, path))
            .await
            .map_err(http_failure)?;
        let answer = answer(response).await?;
        attempt
            .timeline
            .mark_once(Event::FirstByte, attempt.origin, answer.headers_at);
        attempt.mark(Event::ResponseDone);
        let read = self
            .wire
            .received
            .load(Ordering::Acquire)
            .saturating_sub(before);
        attempt.received_now(read as usize);
        attempt.response = Some(Response {
            status: Some(answer.status),
            body_bytes: answer.bytes,
        });
        attempt.record_server(server_text(&answer));
        Ok(())
    }
}

/// An answer's `Server` field as text (a value that is not visible ASCII is left out).
fn server_text(answer: &Answer) -> Option<&str> {
    answer.server.as_ref().and_then(|value| value.to_str().ok())
}

/// Connects to `address` for page mode's additional connections.
pub async fn connect(
    address: std::net::SocketAddr,
    close: tlslab_core::CloseMode,
) -> Result<TcpStream, Failure> {
    crate::transport::connect(address, close)
        .await
        .map_err(|error| Failure::io(&error))
}
