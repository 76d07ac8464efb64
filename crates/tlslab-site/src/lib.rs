//! The lab server's synthetic web site, and hyper serving it on any byte stream.
//!
//! Every lab server (rustls and OpenSSL over TLS, and the plain-text port) answers the same
//! three kinds of request:
//!
//! - `GET /` (or `HEAD /`): 200 with the server's configured body size (`--body`);
//! - `GET /r/<bytes>`: 200 with exactly that many bytes, at most [`MAX_BODY`] (64 MiB; above it
//!   413, and 400 for anything that is not a plain decimal number);
//! - anything else: 404; a method other than GET and HEAD: 405.
//!
//! Bodies are zeros, typed `application/octet-stream` with a `Content-Length`, and streamed as
//! slices of one static buffer, so a large body costs no allocation. Each answered request is
//! counted in the server's [`Counters`].
//!
//! [`Site::serve`] runs hyper's HTTP/1.1 (keep-alive, pipelining) or HTTP/2 on a connection,
//! whichever the client's first bytes show, so the TLS backends only need to hand it a stream
//! of plaintext; [`serve_plain`] accepts plain-text TCP connections (HTTP/1.1 and h2c with
//! prior knowledge).
//!
//! ```
//! use std::sync::Arc;
//!
//! use hyper::body::Body;
//! use hyper::{Request, StatusCode};
//! use tlslab_backend::Counters;
//! use tlslab_site::Site;
//!
//! let counters = Arc::new(Counters::default());
//! let site = Site::new(1_000, counters.clone());
//!
//! let page = site.answer(&Request::get("/").body(()).unwrap());
//! assert_eq!(page.status(), StatusCode::OK);
//! assert_eq!(page.body().size_hint().exact(), Some(1_000));
//!
//! let sized = site.answer(&Request::get("/r/30000").body(()).unwrap());
//! assert_eq!(sized.headers()["content-length"], "30000");
//!
//! let missing = site.answer(&Request::get("/index.html").body(()).unwrap());
//! assert_eq!(missing.status(), StatusCode::NOT_FOUND);
//! assert_eq!(counters.snapshot().requests, 3);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE, SERVER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tlslab_backend::Counters;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;

/// The largest body `/r/<bytes>` serves: larger requests are refused with 413, so one request
/// cannot keep a connection busy for minutes.
pub const MAX_BODY: u64 = 64 * 1024 * 1024;

/// The static buffer every body is sliced from: 64 KiB is four TLS records, large enough that
/// per-slice overhead vanishes and small enough to stay in cache.
const CHUNK: usize = 64 * 1024;
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// How many HTTP/2 streams one connection may have open: h2load -m 100 and browsers fit.
const MAX_STREAMS: u32 = 256;

/// The `Server` field of every answer, as nginx sends `nginx/1.22.1`: load generators (ab's
/// "Server Software", tlslab's own) show which server they measured.
pub const SERVER_SOFTWARE: &str = concat!("tlslab/", env!("CARGO_PKG_VERSION"));

/// The largest HTTP/2 header list accepted: tlslab pads 0-RTT requests with header fields up
/// to the early-data limit (16 KiB), above hyper's default.
const MAX_HEADER_LIST: u32 = 64 * 1024;

/// The site one lab server serves, with the counters it reports.
#[derive(Debug, Clone)]
pub struct Site {
    body: u64,
    counters: Arc<Counters>,
}

impl Site {
    /// The site whose `/` answers `body` bytes, counting requests in `counters`.
    pub fn new(body: u64, counters: Arc<Counters>) -> Site {
        Site { body, counters }
    }

    /// The response to `request` (its body is never read), counted as answered.
    pub fn answer<B>(&self, request: &Request<B>) -> Response<SiteBody> {
        self.counters.answered(1);
        let head = request.method() == Method::HEAD;
        if request.method() != Method::GET && !head {
            let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let size = match route(request.uri().path(), self.body) {
            Ok(size) => size,
            Err((status, reason)) => return text(status, reason),
        };
        let mut response = Response::new(SiteBody {
            // HEAD announces the length it would send, and sends nothing.
            remaining: if head { 0 } else { size },
            bytes: &ZEROS,
        });
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        headers.insert(CONTENT_LENGTH, HeaderValue::from(size));
        headers.insert(SERVER, HeaderValue::from_static(SERVER_SOFTWARE));
        response
    }

    /// Serves HTTP/1.1 or HTTP/2 (told apart by the client's first bytes: the HTTP/2 preface
    /// or not) on `stream` until the client leaves. Errors are the connection's end, for the
    /// caller to drop: a client that sent something other than HTTP gets a 400 or a closed
    /// connection, never a crash.
    pub async fn serve<S>(&self, stream: S) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let site = self.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let site = site.clone();
            async move {
                let (head, body) = request.into_parts();
                // The answer waits for the end of the request, as nginx's does: a stream the
                // client resets or breaks meanwhile gets its error, not a response (a GET's
                // empty body ends at once).
                drain(body).await;
                Ok::<_, Infallible>(site.answer(&Request::from_parts(head, ())))
            }
        });
        builder()
            .serve_connection(TokioIo::new(stream), service)
            .await
    }

    /// Serves a TLS connection: HTTP/2 alone when the handshake agreed on `h2` (as nginx
    /// does: a client that chose HTTP/2 and then sends something else is closed, not answered
    /// with an HTTP/1.1 400), otherwise as [`Site::serve`] does.
    pub async fn serve_tls<S>(
        &self,
        mut stream: S,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
    where
        S: AsyncRead + AsyncWrite + Negotiated + Unpin + Send + 'static,
    {
        // The first plaintext comes once the library has chosen the protocol (with the
        // ClientHello, early data included); it is handed back to hyper first.
        let mut first = vec![0u8; 64];
        let count = stream.read(&mut first).await?;
        if count == 0 {
            return Ok(());
        }
        first.truncate(count);
        let http2 = stream.protocol() == Some(b"h2".as_slice());
        let stream = Replayed {
            first: Bytes::from(first),
            stream,
        };
        if !http2 {
            return self.serve(stream).await;
        }
        let site = self.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let site = site.clone();
            async move {
                let (head, body) = request.into_parts();
                drain(body).await;
                Ok::<_, Infallible>(site.answer(&Request::from_parts(head, ())))
            }
        });
        builder()
            .http2_only()
            .serve_connection(TokioIo::new(stream), service)
            .await
    }
}

/// A TLS stream that can tell which application protocol its handshake agreed on (ALPN).
pub trait Negotiated {
    /// The protocol chosen, once the library has chosen one.
    fn protocol(&self) -> Option<&[u8]>;
}

/// A stream whose first bytes, already read, are read again.
struct Replayed<S> {
    first: Bytes,
    stream: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Replayed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.first.is_empty() {
            return Pin::new(&mut self.stream).poll_read(cx, buffer);
        }
        let count = self.first.len().min(buffer.remaining());
        let first = self.first.split_to(count);
        buffer.put_slice(&first);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replayed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Reads a request body to its end (or its error), discarding it; past [`MAX_BODY`] the rest
/// is left unread, so an endless upload still gets its answer.
async fn drain(mut body: Incoming) {
    let mut read = 0;
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            read += data.len() as u64;
            if read > MAX_BODY {
                return;
            }
        }
    }
}

/// hyper's connection settings for the lab: keep-alive, and HTTP/2 limits that fit load
/// generators and tlslab's padded requests.
///
/// Pipelined requests are answered in order, each response written as it is ready. hyper's
/// `pipeline_flush`, which would hold them for one write, also lifts its write buffer's limit
/// and copies every body into one buffer: a 64 MiB body took 150 MB of the server, and a page
/// of 24 of them over six connections took a gigabyte. Without it the buffer stays under
/// hyper's 400 KiB limit, and the bodies, slices of a static buffer, are never held whole.
fn builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        // A client that sends its request and then its close_notify (or FIN) still gets the
        // answer; without this hyper drops a connection whose read side ended mid-request.
        .half_close(true);
    builder
        .http2()
        .max_concurrent_streams(MAX_STREAMS)
        .max_header_list_size(MAX_HEADER_LIST);
    builder
}

/// The body size a path asks for, or the status and reason it is refused with.
fn route(path: &str, body: u64) -> Result<u64, (StatusCode, &'static str)> {
    if path == "/" {
        return Ok(body);
    }
    let Some(size) = path.strip_prefix("/r/") else {
        return Err((StatusCode::NOT_FOUND, "not found: try / or /r/<bytes>\n"));
    };
    // Plain decimal digits only: u64's parser would also take a leading '+'.
    if size.is_empty() || !size.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err((
            StatusCode::BAD_REQUEST,
            "/r/<bytes> takes a decimal number\n",
        ));
    }
    match size.parse::<u64>() {
        Ok(size) if size <= MAX_BODY => Ok(size),
        // Too many digits for u64 is above the cap too.
        _ => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "/r/<bytes> serves at most 67108864 bytes\n",
        )),
    }
}

/// A short text response for a refused request.
fn text(status: StatusCode, reason: &'static str) -> Response<SiteBody> {
    let mut response = Response::new(SiteBody {
        remaining: reason.len() as u64,
        bytes: reason.as_bytes(),
    });
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(reason.len()));
    headers.insert(SERVER, HeaderValue::from_static(SERVER_SOFTWARE));
    response
}

/// A response body: `remaining` bytes, sent as slices of a static buffer (repeated when the
/// body is longer than it).
#[derive(Debug)]
pub struct SiteBody {
    remaining: u64,
    bytes: &'static [u8],
}

impl Body for SiteBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let count = usize::try_from(self.remaining)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        self.remaining -= count as u64;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
            &self.bytes[..count],
        )))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// Accepts plain-text TCP connections forever and serves `site` on each (HTTP/1.1, and h2c
/// with prior knowledge). These are not TLS handshakes: only the requests are counted.
pub async fn serve_plain(listener: TcpListener, site: Site) -> io::Result<()> {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                let site = site.clone();
                tokio::spawn(async move {
                    let _ = site.serve(stream).await;
                });
            }
            // Out of file descriptors: back off instead of spinning; the clients will see
            // slow connects, not a dead server.
            Err(error) if matches!(error.raw_os_error(), Some(24 | 23)) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> (Site, Arc<Counters>) {
        let counters = Arc::new(Counters::default());
        (Site::new(300, counters.clone()), counters)
    }

    async fn body_of(response: Response<SiteBody>) -> Vec<u8> {
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec()
    }

    fn get(path: &str) -> Request<()> {
        Request::get(path).body(()).unwrap()
    }

    #[tokio::test]
    async fn the_root_serves_the_configured_body_and_r_serves_the_asked_size() {
        let (site, counters) = site();
        let root = site.answer(&get("/"));
        assert_eq!(root.status(), StatusCode::OK);
        assert_eq!(root.headers()[CONTENT_TYPE], "application/octet-stream");
        assert_eq!(root.headers()[CONTENT_LENGTH], "300");
        assert_eq!(root.headers()[SERVER], SERVER_SOFTWARE);
        assert_eq!(body_of(root).await, vec![0; 300]);
        // Longer than the static buffer: several slices, exactly the length asked for.
        let size = CHUNK * 2 + 12_345;
        let sized = site.answer(&get(&format!("/r/{size}?cache=no")));
        assert_eq!(sized.headers()[CONTENT_LENGTH], size.to_string().as_str());
        assert_eq!(body_of(sized).await.len(), size);
        assert_eq!(body_of(site.answer(&get("/r/0"))).await.len(), 0);
        assert_eq!(counters.snapshot().requests, 3);
    }

    #[tokio::test]
    async fn head_announces_the_length_and_sends_nothing() {
        let (site, _) = site();
        let head = site.answer(&Request::head("/r/5000").body(()).unwrap());
        assert_eq!(head.status(), StatusCode::OK);
        assert_eq!(head.headers()[CONTENT_LENGTH], "5000");
        assert!(body_of(head).await.is_empty());
    }

    #[test]
    fn refusals_name_their_reason() {
        let (site, counters) = site();
        let status = |path: &str| site.answer(&get(path)).status();
        assert_eq!(status("/nope"), StatusCode::NOT_FOUND);
        assert_eq!(status("/r"), StatusCode::NOT_FOUND);
        assert_eq!(status("/r/"), StatusCode::BAD_REQUEST);
        assert_eq!(status("/r/+5"), StatusCode::BAD_REQUEST);
        assert_eq!(status("/r/30KB"), StatusCode::BAD_REQUEST);
        assert_eq!(status("/r/-1"), StatusCode::BAD_REQUEST);
        assert_eq!(status(&format!("/r/{MAX_BODY}")), StatusCode::OK);
        assert_eq!(
            status(&format!("/r/{}", MAX_BODY + 1)),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(
            status("/r/99999999999999999999999"),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let post = site.answer(&Request::post("/").body(()).unwrap());
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(post.headers()[ALLOW], "GET, HEAD");
        assert_eq!(counters.snapshot().requests, 10);
    }

    /// The plain port over a real socket: keep-alive HTTP/1.1, two requests on one
    /// connection, then h2c with prior knowledge.
    #[tokio::test]
    async fn plain_http1_keeps_the_connection_and_h2c_is_recognised() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (site, counters) = site();
        tokio::spawn(serve_plain(listener, site));
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: lab\r\n\r\nGET /r/7 HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let text = String::from_utf8_lossy(&answer);
        assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 2, "{text}");
        assert!(text.contains("content-length: 300\r\n"), "{text}");
        assert!(text.contains("content-length: 7\r\n"), "{text}");
        assert_eq!(counters.snapshot().requests, 2);

        let mut h2 = tokio::net::TcpStream::connect(address).await.unwrap();
        h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .await
            .unwrap();
        let mut frame = [0u8; 9];
        h2.read_exact(&mut frame).await.unwrap();
        // The server's first frame is its SETTINGS (type 4) on stream 0.
        assert_eq!(frame[3], 4, "{frame:?}");
    }
}
