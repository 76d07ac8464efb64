//! Sans-IO wire codecs for the one HTTP request and response that tlslab exchanges per
//! connection, over HTTP/1.1 (RFC 9112), HTTP/2 (RFC 9113, HPACK RFC 7541) and HTTP/3
//! (RFC 9114, QPACK RFC 9204).
//!
//! tlslab measures TLS and QUIC handshakes and then, optionally, the time to the first byte
//! of one GET. The caller owns every socket, TLS session and QUIC stream; this crate only
//! turns the request and the response into bytes and parses bytes incrementally, so the
//! caller can timestamp the exact read in which the first response byte
//! ([`Progress::first_byte`]) and the end of the response ([`Progress::complete`]) arrived.
//!
//! - Client: [`encode_request`] (optionally padded to a chosen size with [`Request::min_size`],
//!   for requests sent as TLS 0-RTT early data), then a [`ResponseReader`].
//! - Server side: a [`RequestReader`], then [`encode_response`] with a body of N bytes; or
//!   [`ServerSession`], which does both for every request of a connection. The lab server
//!   itself serves its site with hyper and h3 (tlslab-site); these stay as the reference peer
//!   of the client codecs in tests and fuzzing.
//! - HTTP/2 connection setup: [`http2_server_preface`]; the client preface is part of the
//!   encoded request. HTTP/3 control streams: [`http3_control_stream`] for both sides.
//!
//! What this crate emits sticks to the RFCs (nginx and curl are the peers it must work
//! with); what it accepts is liberal: bare LF line ends, unknown frames and settings,
//! Huffman coding and the HPACK dynamic table.
//!
//! ```
//! use tlslab_http::{
//!     encode_request, encode_response, http2_server_preface, Request, RequestReader,
//!     ResponseReader, Version,
//! };
//!
//! let version = Version::Http2;
//! let request = Request { authority: "lab.test", path: "/", min_size: 0 };
//!
//! // The lab server reads the client's bytes and answers with 1,000 bytes of body.
//! let mut server = RequestReader::new(version);
//! let received = server.feed(&encode_request(version, &request)).unwrap().unwrap();
//! assert_eq!(received.path, "/");
//! let mut reply = http2_server_preface();
//! reply.extend(server.take_output());
//! reply.extend(encode_response(version, received.stream, 1_000));
//!
//! // The client feeds what it reads, in whatever pieces it arrives.
//! let mut client = ResponseReader::new(version);
//! let (head, tail) = reply.split_at(40);
//! assert!(!client.feed(head).unwrap().complete);
//! let progress = client.feed(tail).unwrap();
//! assert_eq!(progress.status, Some(200));
//! assert_eq!(progress.body_bytes, 1_000);
//! assert!(progress.complete);
//! assert!(!client.take_output().is_empty(), "the server's SETTINGS must be acknowledged");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod hpack;
mod http1;
mod http2;
mod http3;
mod huffman;
mod qpack;
mod session;

use std::fmt;

pub use error::HttpError;
pub use session::ServerSession;

/// The HTTP version spoken on a connection, as negotiated by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// HTTP/1.1 over TLS.
    Http11,
    /// HTTP/2 over TLS.
    Http2,
    /// HTTP/3 over QUIC.
    Http3,
}

impl Version {
    /// The ALPN protocol identifier: `http/1.1`, `h2` or `h3`.
    pub fn alpn(self) -> &'static [u8] {
        match self {
            Version::Http11 => b"http/1.1",
            Version::Http2 => b"h2",
            Version::Http3 => b"h3",
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Version::Http11 => "HTTP/1.1",
            Version::Http2 => "HTTP/2",
            Version::Http3 => "HTTP/3",
        })
    }
}

/// The GET request the client sends.
///
/// `authority` and `path` are written as given; they must already be valid for a request
/// line and a field value (no spaces or line breaks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// Host and optional port: the `Host` field of HTTP/1.1, `:authority` otherwise.
    pub authority: &'a str,
    /// The request target, such as `/` or `/file?size=100`.
    pub path: &'a str,
    /// Pads the encoded request with `x-tlslab-padding` fields until it is at least this many
    /// bytes, to send a request of a chosen size as TLS 0-RTT early data; 0 means no padding.
    /// The size is reached exactly unless a length prefix or frame header makes that
    /// impossible, and then it is passed by a few bytes. Each padding field holds at most
    /// 4,096 bytes, as servers limit single fields, but they also limit the whole field
    /// section (nginx by default: 8 KB per field and 32 KB in all), so keep this below that.
    pub min_size: usize,
}

/// How far the response to our request has come, after the bytes fed so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// At least one byte that belongs to our response arrived. HTTP/1.1: any byte. HTTP/2: a
    /// HEADERS or DATA frame header on stream 1, not connection-level frames such as
    /// SETTINGS, WINDOW_UPDATE or PING. HTTP/3: any byte of the request stream.
    pub first_byte: bool,
    /// The final (non-1xx) status code, once its header section is decoded.
    pub status: Option<u16>,
    /// Body bytes received so far, after removing chunked coding or frame padding.
    pub body_bytes: u64,
    /// The whole response has arrived.
    pub complete: bool,
}

/// A request the lab server has received completely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedRequest {
    /// The request target (`:path` for HTTP/2 and HTTP/3).
    pub path: String,
    /// The HTTP/2 stream to answer on; 0 for HTTP/1.1 and HTTP/3, whose request stream is the
    /// caller's own QUIC stream.
    pub stream: u64,
}

/// Everything the client writes for the request.
///
/// - HTTP/1.1: `GET path HTTP/1.1` with `Host`, `user-agent: tlslab` and `accept: */*`; the
///   connection is left open.
/// - HTTP/2: the connection preface, SETTINGS (ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 2^31−1),
///   a connection WINDOW_UPDATE up to 2^31−1, then HEADERS on stream 1 with END_STREAM
///   (plus CONTINUATION frames if padding makes the block longer than 16,384 bytes). Fields
///   are static-table references and plain literals without indexing. The windows are so
///   large that the client never needs to send WINDOW_UPDATE for bodies below 2 GiB.
/// - HTTP/3: the bytes of the request stream only, a HEADERS frame whose QPACK section uses
///   the static table and plain literals; the caller finishes the stream after writing it.
pub fn encode_request(version: Version, request: &Request) -> Vec<u8> {
    let build = |padding: Padding| match version {
        Version::Http11 => http1::encode_request(request, padding),
        Version::Http2 => http2::encode_request(request, padding),
        Version::Http3 => http3::encode_request(request, padding),
    };
    padded(request.min_size, build)
}

/// The HTTP/3 control stream both client and server open: stream type 0x00, then SETTINGS
/// with QPACK_MAX_TABLE_CAPACITY 0 and QPACK_BLOCKED_STREAMS 0, so peers never use the
/// QPACK dynamic table. The caller reads the peer's control and QPACK streams itself (and
/// may discard them).
pub fn http3_control_stream() -> Vec<u8> {
    http3::control_stream()
}

/// The server's HTTP/2 connection preface, a SETTINGS frame; it must be the first thing the
/// server sends.
pub fn http2_server_preface() -> Vec<u8> {
    http2::server_preface()
}

/// The lab server's answer: status 200 with `content-length` and `content-type:
/// application/octet-stream`, and a body of `body_bytes` zero bytes.
///
/// - HTTP/1.1: status line, fields and body; `stream` is ignored.
/// - HTTP/2: the frames for `stream`: HEADERS (then DATA frames of at most 16,384 bytes, the
///   last with END_STREAM; with an empty body, END_STREAM is on HEADERS). Flow control is
///   not tracked, so the body must fit in the client's windows (tlslab's client opens them
///   to 2^31−1; other clients' defaults may be as small as 65,535 bytes).
/// - HTTP/3: a HEADERS frame and a DATA frame for the request stream; `stream` is ignored
///   and the caller finishes the QUIC stream.
///
/// # Panics
///
/// For HTTP/2, if `stream` is not a valid stream identifier (above 2^31−1).
pub fn encode_response(version: Version, stream: u64, body_bytes: usize) -> Vec<u8> {
    match version {
        Version::Http11 => http1::encode_response(body_bytes),
        Version::Http2 => {
            let stream = u32::try_from(stream)
                .ok()
                .filter(|&stream| stream <= http2::MAX_STREAM)
                .expect("HTTP/2 stream identifiers are at most 2^31-1");
            http2::encode_response(stream, body_bytes)
        }
        Version::Http3 => http3::encode_response(body_bytes),
    }
}

/// The name of the fields that pad a request to [`Request::min_size`].
const PADDING_NAME: &str = "x-tlslab-padding";

/// The most bytes of padding one field carries.
const PADDING_FIELD_LIMIT: usize = 4096;

/// How much padding an encoded request carries: `bytes` of field values spread evenly over
/// `fields` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Padding {
    fields: usize,
    bytes: usize,
}

impl Padding {
    const NONE: Padding = Padding {
        fields: 0,
        bytes: 0,
    };

    /// The value length of each padding field.
    fn lengths(self) -> impl Iterator<Item = usize> {
        let share = self.bytes.checked_div(self.fields).unwrap_or(0);
        let longer = self.bytes.checked_rem(self.fields).unwrap_or(0);
        (0..self.fields).map(move |field| share + usize::from(field < longer))
    }
}

/// The smallest output of `build` that is at least `min_size` bytes long.
///
/// The number of fields is fixed first, as the fewest that can carry the padding, because
/// each extra field adds its name and line end at once; spreading the bytes evenly keeps every
/// field below the limit. The size then only grows with the bytes, so bisection finds the
/// smallest; computing it directly would have to know every format's length prefixes and
/// frame splits.
fn padded(min_size: usize, build: impl Fn(Padding) -> Vec<u8>) -> Vec<u8> {
    let plain = build(Padding::NONE);
    if plain.len() >= min_size {
        return plain;
    }
    let fields = (min_size - plain.len()).div_ceil(PADDING_FIELD_LIMIT);
    // The fields full already reach min_size, since their values alone are that long.
    let (mut low, mut high) = (fields, fields * PADDING_FIELD_LIMIT);
    while low < high {
        let middle = low + (high - low) / 2;
        if build(Padding {
            fields,
            bytes: middle,
        })
        .len()
            >= min_size
        {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    build(Padding { fields, bytes: low })
}

/// Parses a status code: three digits, 100 to 999.
fn parse_status(text: &[u8]) -> Option<u16> {
    if text.len() != 3 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let code = text
        .iter()
        .fold(0u16, |code, &digit| code * 10 + u16::from(digit - b'0'));
    (code >= 100).then_some(code)
}

/// Applies a decoded response field section (HTTP/2 or HTTP/3) to `progress`: the first
/// final status is recorded, interim (1xx) responses are skipped, and a section without
/// `:status` after the final one is the trailer section; the final response's `server` field
/// goes to `server`. Returns whether it was interim.
fn apply_response_fields(
    progress: &mut Progress,
    server: &mut Option<String>,
    fields: &[hpack::HeaderField],
    version: &str,
) -> Result<bool, HttpError> {
    match hpack::find(fields, ":status") {
        Some(value) => {
            let status = parse_status(value).ok_or_else(|| {
                HttpError::new(format!(
                    "{version} response has an invalid :status {}",
                    error::quote(value)
                ))
            })?;
            if progress.status.is_some() {
                return Err(HttpError::new(format!(
                    "{version} response has a second final status {status}"
                )));
            }
            if (100..200).contains(&status) {
                return Ok(true);
            }
            progress.status = Some(status);
            *server = hpack::find(fields, "server")
                .map(|value| String::from_utf8_lossy(value).into_owned());
            Ok(false)
        }
        None if progress.status.is_some() => Ok(false),
        None => Err(HttpError::new(format!(
            "{version} response header section has no :status"
        ))),
    }
}

enum ResponseParser {
    Http11(http1::ResponseParser),
    Http2(http2::ResponseParser),
    Http3(http3::ResponseParser),
}

/// Client side: reads the response to the one request, incrementally.
///
/// After an error the reader is spent: every later call returns the same error.
pub struct ResponseReader {
    version: Version,
    parser: ResponseParser,
    failure: Option<HttpError>,
}

impl ResponseReader {
    /// A reader for a connection (HTTP/1.1, HTTP/2) or request stream (HTTP/3) of `version`.
    pub fn new(version: Version) -> Self {
        let parser = match version {
            Version::Http11 => ResponseParser::Http11(http1::ResponseParser::new()),
            Version::Http2 => ResponseParser::Http2(http2::ResponseParser::new()),
            Version::Http3 => ResponseParser::Http3(http3::ResponseParser::new()),
        };
        ResponseReader {
            version,
            parser,
            failure: None,
        }
    }

    /// Feeds plaintext bytes as they arrive, split anywhere (even one byte at a time), and
    /// returns the progress so far. For HTTP/3, feed the request stream only.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, HttpError> {
        self.run(|parser| match parser {
            ResponseParser::Http11(parser) => parser.feed(data),
            ResponseParser::Http2(parser) => parser.feed(data),
            ResponseParser::Http3(parser) => parser.feed(data),
        })
    }

    /// The peer finished the stream (HTTP/3) or closed the connection. Completes a response
    /// that ends there (HTTP/3 always; HTTP/1.1 without Content-Length or chunked coding) and
    /// is an error if the response was cut short.
    pub fn finish(&mut self) -> Result<Progress, HttpError> {
        self.run(|parser| match parser {
            ResponseParser::Http11(parser) => parser.finish(),
            ResponseParser::Http2(parser) => parser.finish(),
            ResponseParser::Http3(parser) => parser.finish(),
        })
    }

    /// HTTP/2: the bytes the client must send back (SETTINGS and PING acknowledgements),
    /// drained by this call. Always empty for HTTP/1.1 and HTTP/3.
    pub fn take_output(&mut self) -> Vec<u8> {
        match &mut self.parser {
            ResponseParser::Http2(parser) => parser.take_output(),
            _ => Vec::new(),
        }
    }

    /// The final response's `Server` field (what ab prints as "Server Software"), once its
    /// header section has arrived; `None` when the server sent none (or, over HTTP/1.1, one
    /// that is not UTF-8).
    pub fn server(&self) -> Option<&str> {
        match &self.parser {
            ResponseParser::Http11(parser) => parser.server(),
            ResponseParser::Http2(parser) => parser.server(),
            ResponseParser::Http3(parser) => parser.server(),
        }
    }

    /// The progress so far, without feeding anything.
    pub fn progress(&self) -> Progress {
        match &self.parser {
            ResponseParser::Http11(parser) => parser.progress(),
            ResponseParser::Http2(parser) => parser.progress(),
            ResponseParser::Http3(parser) => parser.progress(),
        }
    }

    fn run(
        &mut self,
        step: impl FnOnce(&mut ResponseParser) -> Result<(), HttpError>,
    ) -> Result<Progress, HttpError> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        if let Err(error) = step(&mut self.parser) {
            self.failure = Some(error.clone());
            return Err(error);
        }
        Ok(self.progress())
    }
}

impl fmt::Debug for ResponseReader {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ResponseReader")
            .field("version", &self.version)
            .field("progress", &self.progress())
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

enum RequestParser {
    Http11(http1::RequestParser),
    Http2(http2::RequestParser),
    Http3(http3::RequestParser),
}

/// Server side: reads requests incrementally. HTTP/1.1 reads the one request of the
/// connection; HTTP/2 reads every request of the connection, keeping its HPACK state;
/// HTTP/3 reads one request stream (use one reader per stream).
///
/// After an error the reader is spent: every later call returns the same error.
pub struct RequestReader {
    version: Version,
    parser: RequestParser,
    failure: Option<HttpError>,
}

impl RequestReader {
    /// A reader for a connection (HTTP/1.1, HTTP/2) or request stream (HTTP/3) of `version`.
    pub fn new(version: Version) -> Self {
        let parser = match version {
            Version::Http11 => RequestParser::Http11(http1::RequestParser::new()),
            Version::Http2 => RequestParser::Http2(http2::RequestParser::new()),
            Version::Http3 => RequestParser::Http3(http3::RequestParser::new()),
        };
        RequestReader {
            version,
            parser,
            failure: None,
        }
    }

    /// Feeds bytes as they arrive, split anywhere. Returns a request once it is complete
    /// (HTTP/2: at END_STREAM, or at the end of the header block for GET and HEAD; HTTP/3:
    /// when its HEADERS frame is complete), each request once. If one call completes several
    /// HTTP/2 requests, later calls return the rest, even with no new bytes.
    pub fn feed(&mut self, data: &[u8]) -> Result<Option<ReceivedRequest>, HttpError> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        let result = match &mut self.parser {
            RequestParser::Http11(parser) => parser.feed(data),
            RequestParser::Http2(parser) => parser.feed(data),
            RequestParser::Http3(parser) => parser.feed(data),
        };
        if let Err(error) = &result {
            self.failure = Some(error.clone());
        }
        result
    }

    /// HTTP/2: the bytes the server must send (SETTINGS and PING acknowledgements), drained
    /// by this call; its own preface comes from [`http2_server_preface`]. Always empty for
    /// HTTP/1.1 and HTTP/3.
    pub fn take_output(&mut self) -> Vec<u8> {
        match &mut self.parser {
            RequestParser::Http2(parser) => parser.take_output(),
            _ => Vec::new(),
        }
    }
}

impl fmt::Debug for RequestReader {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("RequestReader")
            .field("version", &self.version)
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpn_identifiers() {
        assert_eq!(Version::Http11.alpn(), b"http/1.1");
        assert_eq!(Version::Http2.alpn(), b"h2");
        assert_eq!(Version::Http3.alpn(), b"h3");
        assert_eq!(Version::Http2.to_string(), "HTTP/2");
    }

    #[test]
    fn padding_is_spread_over_its_fields() {
        assert_eq!(Padding::NONE.lengths().count(), 0);
        let lengths = |fields, bytes| Padding { fields, bytes }.lengths().collect::<Vec<_>>();
        assert_eq!(lengths(1, 5), [5]);
        assert_eq!(lengths(1, 4096), [4096]);
        assert_eq!(lengths(3, 9000), [3000, 3000, 3000]);
        assert_eq!(lengths(3, 9001), [3001, 3000, 3000]);
    }

    #[test]
    fn padded_finds_the_smallest_size_reached() {
        // 10 bytes plus the padding plus 20 bytes per field, as in HTTP/1.1.
        let build = |padding: Padding| vec![0; 10 + padding.bytes + 20 * padding.fields];
        assert_eq!(padded(0, build).len(), 10);
        assert_eq!(padded(11, build).len(), 31);
        assert_eq!(padded(31, build).len(), 31);
        assert_eq!(padded(100, build).len(), 100);
        // Just past one full field: two fields carry it exactly.
        assert_eq!(padded(10 + 20 + 4096 + 1, build).len(), 10 + 20 + 4096 + 1);
        assert_eq!(padded(50_000, build).len(), 50_000);
    }

    #[test]
    fn readers_show_their_state() {
        let mut reader = ResponseReader::new(Version::Http11);
        reader.feed(b"HTTP/1.1 200 OK\r\n").unwrap();
        let text = format!("{reader:?}");
        assert!(
            text.contains("Http11") && text.contains("first_byte: true"),
            "{text}"
        );
        assert!(format!("{:?}", RequestReader::new(Version::Http3)).contains("Http3"));
    }

    #[test]
    fn the_final_responses_server_field_is_kept() {
        let mut reader = ResponseReader::new(Version::Http11);
        reader
            .feed(b"HTTP/1.1 103 Early Hints\r\nServer: early\r\n\r\n")
            .unwrap();
        reader
            .feed(b"HTTP/1.1 200 OK\r\nSERVER:  nginx/1.22.1 \r\ncontent-length: 0\r\n\r\n")
            .unwrap();
        assert_eq!(reader.server(), Some("nginx/1.22.1"));
        let mut bare = ResponseReader::new(Version::Http11);
        bare.feed(&encode_response(Version::Http11, 0, 3)).unwrap();
        assert_eq!(bare.server(), None);

        let field = |name: &str, value: &str| hpack::HeaderField {
            name: name.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
        };
        let (mut progress, mut server) = (Progress::default(), None);
        let interim = [field(":status", "103"), field("server", "early")];
        assert!(apply_response_fields(&mut progress, &mut server, &interim, "HTTP/2").unwrap());
        assert_eq!(server, None);
        let last = [field(":status", "200"), field("server", "tlslab/0.1.0")];
        assert!(!apply_response_fields(&mut progress, &mut server, &last, "HTTP/2").unwrap());
        assert_eq!(server.as_deref(), Some("tlslab/0.1.0"));
    }

    #[test]
    fn status_codes() {
        assert_eq!(parse_status(b"200"), Some(200));
        assert_eq!(parse_status(b"099"), None);
        assert_eq!(parse_status(b"20"), None);
        assert_eq!(parse_status(b"2x0"), None);
    }
}
