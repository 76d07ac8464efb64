//! One probe: connect, send one ClientHello, read the server's first answer, close.
//!
//! Everything read here comes from the network, so nothing in it may panic: a reply that is
//! not TLS records is a [`ProbeError::NotTls`], TLS records whose handshake does not parse a
//! [`ProbeError::Malformed`], never an index out of bounds. Neither is ever read as a finding:
//! a ServerHello that does not parse exactly is no evidence of what the server supports.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tls_parser::{
    parse_tls_message_handshake, parse_tls_server_hello_extensions, TlsExtension, TlsMessage,
    TlsMessageHandshake,
};

use crate::hello::ClientHello;

/// Why a probe got no answer. None of these ends a scan: the scan notes them and goes on.
/// An I/O error is kept whole (as the [`source`](std::error::Error::source)), in an `Arc`
/// so that a probe's answer can be cloned with it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProbeError {
    /// Nothing listens on the port.
    #[error("connection refused")]
    Refused,
    /// No connection, or no answer, within the probe's timeout.
    #[error("timed out")]
    Timeout,
    /// The server answered with something that is not a TLS handshake.
    #[error("the answer is not TLS")]
    NotTls,
    /// TLS records whose handshake message does not parse: a ServerHello whose extensions
    /// run past its end, a message of the wrong kind at its place. What is wrong, in words.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// Any other socket error (unreachable network, reset), as the system words it.
    #[error(transparent)]
    Io(Arc<std::io::Error>),
    /// A rustls handshake that did not finish (an alert, a reset), with what rustls or the
    /// socket said when there is something.
    #[error("handshake failed")]
    Handshake(#[source] Option<Arc<std::io::Error>>),
    /// The rustls client could not be made for this server name and these versions.
    #[error("cannot make the rustls client")]
    Client(#[source] rustls::Error),
    /// The server name is not one rustls can send (not a DNS name or an IP address).
    #[error("cannot make the rustls client")]
    ServerName(#[source] Arc<rustls_pki_types::InvalidDnsNameError>),
}

impl ProbeError {
    /// The server answered, but what it said cannot be read as TLS: evidence that it (or
    /// something in front of it) is broken, unlike a timeout or a reset.
    pub fn is_malformed(&self) -> bool {
        matches!(self, ProbeError::NotTls | ProbeError::Malformed(_))
    }

    /// This error and its causes on one line, for the scan's list of failed probes.
    pub fn in_one_line(&self) -> String {
        let mut line = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(error) = cause {
            line.push_str(": ");
            line.push_str(&error.to_string());
            cause = error.source();
        }
        line
    }
}

/// What the server answered a ClientHello with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A ServerHello (or HelloRetryRequest): the server accepted something offered.
    Hello(ServerHello),
    /// A fatal alert (its description code): the server declined what we offered.
    Alert(u8),
    /// The server closed (or reset) the connection without a word: most declining servers
    /// of the SSL 3.0 era do this.
    Closed,
}

/// The parts of a ServerHello (or HelloRetryRequest) a scan reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerHello {
    /// The negotiated version: supported_versions when present, else the legacy field.
    pub version: u16,
    /// The suite the server chose, by code point.
    pub suite: u16,
    /// TLS 1.3: the key_share's group (of the HelloRetryRequest too); TLS 1.2 (whole flight
    /// read): the ServerKeyExchange's named curve.
    pub group: Option<u16>,
    /// The answer was a HelloRetryRequest: the group is the one the server asked for.
    pub hello_retry: bool,
    /// The ALPN protocol the server selected (TLS 1.2 and older send it in the clear).
    pub alpn: Option<String>,
    /// TLS 1.2 and older DHE (whole flight read): the ServerKeyExchange's prime p, leading
    /// zeros trimmed (its length is the group's size; RFC 7919's groups are named by it).
    pub dh_prime: Option<Vec<u8>>,
    /// The ServerHello carried renegotiation_info (RFC 5746): secure renegotiation.
    pub secure_renegotiation: bool,
    /// The Certificate message's chain (DER), when the probe asked to read the server's whole
    /// flight and the version sends it in the clear (TLS 1.2 and older).
    pub certificates: Vec<Vec<u8>>,
}

/// A counting semaphore for connections: a scan is polite to one target.
pub struct Limiter {
    free: Mutex<usize>,
    released: Condvar,
    connections: AtomicU64,
}

impl Limiter {
    /// A limiter that lets `concurrency` connections be open at once (at least one).
    pub fn new(concurrency: usize) -> Limiter {
        Limiter {
            free: Mutex::new(concurrency.max(1)),
            released: Condvar::new(),
            connections: AtomicU64::new(0),
        }
    }

    /// Connections opened so far (each probe opens one).
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Runs `work` holding one of the permits.
    pub fn with_permit<T>(&self, work: impl FnOnce() -> T) -> T {
        {
            // A poisoned lock only means another probe thread panicked; the count is intact.
            let mut free = self
                .free
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            while *free == 0 {
                free = self
                    .released
                    .wait(free)
                    .unwrap_or_else(|poison| poison.into_inner());
            }
            *free -= 1;
        }
        self.connections.fetch_add(1, Ordering::Relaxed);
        let result = work();
        *self
            .free
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) += 1;
        self.released.notify_one();
        result
    }
}

/// Where and how to probe.
pub struct Prober {
    /// The target's address, resolved once so that every probe reaches the same server.
    pub address: SocketAddr,
    /// The server name every ClientHello sends.
    pub server_name: Option<String>,
    /// How long a probe waits to connect and for each read.
    pub timeout: Duration,
    /// The connections open at once, shared by every probe of the scan.
    pub limiter: Limiter,
    /// Probes that failed, as "what: why", for the report.
    errors: Mutex<Vec<String>>,
    /// Of those, the probes whose answer could not be read ([`ProbeError::is_malformed`]).
    malformed: AtomicU64,
}

impl Prober {
    /// A prober of `address` that sends `server_name`, at most `concurrency` connections at a
    /// time.
    pub fn new(
        address: SocketAddr,
        server_name: Option<String>,
        timeout: Duration,
        concurrency: usize,
    ) -> Prober {
        Prober {
            address,
            server_name,
            timeout,
            limiter: Limiter::new(concurrency),
            errors: Mutex::new(Vec::new()),
            malformed: AtomicU64::new(0),
        }
    }

    /// Notes that the probe `what` failed with `error`.
    pub fn note(&self, what: &str, error: &ProbeError) {
        if error.is_malformed() {
            self.malformed.fetch_add(1, Ordering::Relaxed);
        }
        self.errors
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push(format!("{what}: {}", error.in_one_line()));
    }

    /// The failed probes so far, as "what: why".
    pub fn errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    /// How many probes got an answer that could not be read as TLS.
    pub fn malformed_answers(&self) -> u64 {
        self.malformed.load(Ordering::Relaxed)
    }

    /// Sends `hello` and reads the answer; with `flight`, reads the server's whole first
    /// flight (Certificate and ServerKeyExchange: TLS 1.2 and older). A failure is also noted in [`Prober::errors`].
    pub fn probe(
        &self,
        what: &str,
        hello: &ClientHello,
        flight: bool,
    ) -> Result<Answer, ProbeError> {
        let result = self.limiter.with_permit(|| self.exchange(hello, flight));
        if let Err(error) = &result {
            self.note(what, error);
        }
        result
    }

    /// A plain TCP connection: is anyone listening?
    pub fn connect(&self) -> Result<TcpStream, ProbeError> {
        let stream = TcpStream::connect_timeout(&self.address, self.timeout).map_err(io_error)?;
        stream
            .set_read_timeout(Some(self.timeout))
            .map_err(io_error)?;
        stream
            .set_write_timeout(Some(self.timeout))
            .map_err(io_error)?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    fn exchange(&self, hello: &ClientHello, flight: bool) -> Result<Answer, ProbeError> {
        let mut stream = self.connect()?;
        match stream.write_all(&hello.to_record()) {
            Ok(()) => {}
            // A server that closes as soon as it sees the hello is declining it.
            Err(error) if closed(&error) => return Ok(Answer::Closed),
            Err(error) => return Err(io_error(error)),
        }
        let answer = read_answer(&mut stream, flight);
        let _ = stream.shutdown(std::net::Shutdown::Both);
        answer
    }
}

fn closed(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
    )
}

fn io_error(error: std::io::Error) -> ProbeError {
    match error.kind() {
        ErrorKind::ConnectionRefused => ProbeError::Refused,
        ErrorKind::TimedOut | ErrorKind::WouldBlock => ProbeError::Timeout,
        _ => ProbeError::Io(Arc::new(error)),
    }
}

/// The longest handshake flight we read before giving up (a certificate chain with large
/// post-quantum keys stays far below this).
const MAX_FLIGHT: usize = 256 * 1024;

/// Reads records until the ServerHello (and, if asked, the flight to ServerHelloDone) has
/// arrived.
pub fn read_answer(stream: &mut impl Read, flight: bool) -> Result<Answer, ProbeError> {
    let mut handshake: Vec<u8> = Vec::new();
    let mut hello: Option<ServerHello> = None;
    loop {
        let mut header = [0u8; 5];
        match read_exact(stream, &mut header) {
            Ok(()) => {}
            Err(Closed) if hello.is_some() => break,
            Err(Closed) => return Ok(Answer::Closed),
        }
        let (content_type, major, length) = (
            header[0],
            header[1],
            usize::from(u16::from_be_bytes([header[3], header[4]])),
        );
        // A TLS record header: a known content type, major version 3, a bounded length.
        if !(20..=24).contains(&content_type) || major != 3 || length > 18432 {
            return Err(ProbeError::NotTls);
        }
        let mut body = vec![0u8; length];
        if read_exact(stream, &mut body).is_err() {
            return match hello {
                Some(hello) => Ok(Answer::Hello(hello)),
                None => Ok(Answer::Closed),
            };
        }
        match content_type {
            21 => {
                if hello.is_some() {
                    break;
                }
                // [level, description]; an empty alert is still a refusal.
                return Ok(Answer::Alert(body.get(1).copied().unwrap_or(0)));
            }
            22 => handshake.extend_from_slice(&body),
            // change_cipher_spec or encrypted data after the hello: the clear part is over.
            _ if hello.is_some() => break,
            _ => return Err(ProbeError::NotTls),
        }
        // Whole handshake messages in the buffer, in order.
        while let Some(length) = handshake.get(1..4) {
            let total = 4
                + (usize::from(length[0]) << 16
                    | usize::from(length[1]) << 8
                    | usize::from(length[2]));
            if handshake.len() < total {
                if total > MAX_FLIGHT {
                    return Err(ProbeError::Malformed(format!(
                        "a handshake message of {} bytes (no flight is longer than {MAX_FLIGHT})",
                        total - 4
                    )));
                }
                break;
            }
            let message: Vec<u8> = handshake.drain(..total).collect();
            let done = take_message(&message, &mut hello, flight)?;
            if done {
                if let Some(hello) = hello {
                    return Ok(Answer::Hello(hello));
                }
            }
        }
    }
    hello.map(Answer::Hello).ok_or(ProbeError::NotTls)
}

struct Closed;

fn read_exact(stream: &mut impl Read, buffer: &mut [u8]) -> Result<(), Closed> {
    // A timeout mid-answer also ends the reading: what arrived is what we judge.
    stream.read_exact(buffer).map_err(|_| Closed)
}

/// Takes one handshake message; `true` when the probe has read all it wanted.
fn take_message(
    message: &[u8],
    hello: &mut Option<ServerHello>,
    flight: bool,
) -> Result<bool, ProbeError> {
    let kind = message.first().copied().unwrap_or(0);
    let malformed = |why: String| ProbeError::Malformed(why);
    let parsed = parse_tls_message_handshake(message).map_err(|_| {
        malformed(format!(
            "a handshake message of type {kind} that does not parse"
        ))
    })?;
    let TlsMessage::Handshake(handshake) = parsed.1 else {
        return Err(malformed(format!(
            "a handshake message of type {kind} that does not parse"
        )));
    };
    match handshake {
        TlsMessageHandshake::ServerHello(contents) => {
            if hello.is_some() {
                return Err(malformed("a second ServerHello".into()));
            }
            let mut server_hello = ServerHello {
                version: contents.version.0,
                suite: contents.cipher.0,
                hello_retry: contents.random == tlslab_core::names::HELLO_RETRY_RANDOM,
                ..ServerHello::default()
            };
            let extensions = server_hello_extensions(message.get(4..).unwrap_or_default())?;
            if let Some(extensions) = extensions {
                let (rest, extensions) = parse_tls_server_hello_extensions(extensions)
                    .map_err(|_| malformed("a ServerHello whose extensions do not parse".into()))?;
                if !rest.is_empty() {
                    return Err(malformed(format!(
                        "a ServerHello whose extensions do not parse ({} bytes left over)",
                        rest.len()
                    )));
                }
                for extension in extensions {
                    match extension {
                        TlsExtension::SupportedVersions(versions) => {
                            if let Some(version) = versions.first() {
                                server_hello.version = version.0;
                            }
                        }
                        // ServerHello: group, length, key; HelloRetryRequest: group alone.
                        TlsExtension::KeyShare(data) => {
                            server_hello.group = data
                                .get(..2)
                                .map(|group| u16::from_be_bytes([group[0], group[1]]));
                        }
                        TlsExtension::RenegotiationInfo(_) => {
                            server_hello.secure_renegotiation = true;
                        }
                        TlsExtension::ALPN(protocols) => {
                            server_hello.alpn = protocols
                                .first()
                                .map(|protocol| String::from_utf8_lossy(protocol).into_owned());
                        }
                        _ => {}
                    }
                }
            }
            let tls13 = server_hello.version == 0x0304;
            *hello = Some(server_hello);
            // TLS 1.3 encrypts the rest; without certificates the hello is all we need.
            Ok(!flight || tls13)
        }
        TlsMessageHandshake::Certificate(contents) => {
            let Some(hello) = hello.as_mut() else {
                return Err(malformed("a Certificate before the ServerHello".into()));
            };
            hello.certificates = contents
                .cert_chain
                .iter()
                .map(|certificate| certificate.data.to_vec())
                .collect();
            Ok(false)
        }
        // ECDHE parameters start with curve_type 3 (named_curve) and the group (RFC 8422,
        // 5.4): the curve a TLS 1.2 server chose is only said here. DHE parameters start
        // with dh_p as an opaque<1..2^16-1> (RFC 5246, 7.4.3): the group's prime. Which of
        // the two it is follows from the suite (a DHE p may also start with the byte 3).
        TlsMessageHandshake::ServerKeyExchange(contents) => {
            let Some(hello) = hello.as_mut() else {
                return Err(malformed(
                    "a ServerKeyExchange before the ServerHello".into(),
                ));
            };
            let kx = tls_parser::TlsCipherSuite::from_id(hello.suite).map(|suite| suite.kx);
            match (kx, contents.parameters) {
                (Some(tls_parser::TlsCipherKx::Dhe), [high, low, rest @ ..]) => {
                    let length = usize::from(u16::from_be_bytes([*high, *low]));
                    if let Some(prime) = rest.get(..length) {
                        let start = prime.iter().position(|byte| *byte != 0).unwrap_or(length);
                        hello.dh_prime = Some(prime[start..].to_vec());
                    }
                }
                (Some(tls_parser::TlsCipherKx::Ecdhe), [3, high, low, ..]) => {
                    hello.group = Some(u16::from_be_bytes([*high, *low]));
                }
                _ => {}
            }
            Ok(false)
        }
        _ if hello.is_none() => Err(malformed(format!(
            "a handshake message of type {kind} before the ServerHello"
        ))),
        TlsMessageHandshake::ServerDone(_) => Ok(true),
        _ => Ok(false),
    }
}

/// The extensions block of a ServerHello's body (`None` when it has none), checked to fill
/// the message exactly; `Err` says what is wrong. Hand-written because tls-parser reads an
/// extensions length that runs past the message as "no extensions" (its
/// `opt(complete(..))`) and leaves the bytes unread, so a broken ServerHello would pass for
/// a plain one; the layout is fixed (RFC 5246, 7.4.1.3; RFC 8446, 4.1.3): version (2),
/// random (32), session id (1 + at most 32), suite (2), compression (1), extensions.
fn server_hello_extensions(body: &[u8]) -> Result<Option<&[u8]>, ProbeError> {
    let malformed = |why: String| ProbeError::Malformed(format!("a ServerHello {why}"));
    let short = || {
        malformed(format!(
            "of {} bytes, shorter than its fixed fields",
            body.len()
        ))
    };
    let session_id = usize::from(*body.get(34).ok_or_else(short)?);
    if session_id > 32 {
        return Err(malformed(format!(
            "with a session id of {session_id} bytes (at most 32)"
        )));
    }
    match body.get(35 + session_id + 3..).ok_or_else(short)? {
        [] => Ok(None),
        [high, low, extensions @ ..] => {
            let length = usize::from(u16::from_be_bytes([*high, *low]));
            match length.cmp(&extensions.len()) {
                std::cmp::Ordering::Equal => Ok(Some(extensions)),
                std::cmp::Ordering::Greater => Err(malformed(format!(
                    "whose extensions length ({length} bytes) runs past its end ({} left)",
                    extensions.len()
                ))),
                std::cmp::Ordering::Less => Err(malformed(format!(
                    "with {} bytes after its extensions",
                    extensions.len() - length
                ))),
            }
        }
        [_] => Err(malformed("with one byte after its fixed fields".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_short_answers_are_errors_not_panics() {
        let cases: [&[u8]; 6] = [
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            &[22, 3, 3, 0, 4, 2, 0, 0, 9],
            &[22, 3, 3, 0, 4, 2, 0xff, 0xff, 0xff],
            &[21, 3, 3, 0, 2, 2, 40],
            &[21, 3, 3, 0, 0],
            &[],
        ];
        let answers: Vec<_> = cases
            .iter()
            .map(|case| read_answer(&mut &case[..], false))
            .collect();
        assert!(matches!(answers[0], Err(ProbeError::NotTls)));
        assert_eq!(answers[1].as_ref().ok(), Some(&Answer::Closed));
        // A handshake message longer than any flight: not a TLS server we can read.
        assert!(
            matches!(&answers[2], Err(ProbeError::Malformed(why)) if why.contains("16777215 bytes"))
        );
        assert_eq!(answers[3].as_ref().ok(), Some(&Answer::Alert(40)));
        assert_eq!(answers[4].as_ref().ok(), Some(&Answer::Alert(0)));
        assert_eq!(answers[5].as_ref().ok(), Some(&Answer::Closed));
    }

    /// A TLS 1.2 ServerHello choosing `suite`, then a ServerKeyExchange with `parameters`
    /// and a ServerHelloDone, as one record.
    fn hello_and_key_exchange(suite: u16, parameters: &[u8]) -> Vec<u8> {
        let mut hello = vec![0x03, 0x03];
        hello.extend_from_slice(&[7; 32]);
        hello.push(0);
        hello.extend_from_slice(&suite.to_be_bytes());
        hello.push(0);
        let mut messages = vec![2, 0, 0, hello.len() as u8];
        messages.extend_from_slice(&hello);
        messages.extend_from_slice(&[12, 0, (parameters.len() >> 8) as u8, parameters.len() as u8]);
        messages.extend_from_slice(parameters);
        messages.extend_from_slice(&[14, 0, 0, 0]);
        let mut record = vec![22, 3, 3];
        record.extend_from_slice(&(messages.len() as u16).to_be_bytes());
        record.extend_from_slice(&messages);
        record
    }

    #[test]
    fn the_key_exchange_names_a_curve_or_a_prime_by_the_suite() {
        // DHE: p of 768 bytes whose length starts with the byte 3, as ffdhe6144's does.
        let mut dhe = vec![0x03, 0x00, 0x00];
        dhe.extend(std::iter::repeat_n(0xff, 0x2ff));
        dhe.extend_from_slice(&[0, 1, 2, 0, 1, 5]);
        let record = hello_and_key_exchange(0x009e, &dhe);
        let Ok(Answer::Hello(hello)) = read_answer(&mut &record[..], true) else {
            panic!("no hello");
        };
        assert_eq!(hello.group, None);
        assert_eq!(hello.dh_prime.map(|prime| prime.len()), Some(0x2ff));
        // ECDHE: named_curve x25519.
        let record = hello_and_key_exchange(0xc02f, &[3, 0x00, 0x1d, 1, 9]);
        let Ok(Answer::Hello(hello)) = read_answer(&mut &record[..], true) else {
            panic!("no hello");
        };
        assert_eq!((hello.group, hello.dh_prime), (Some(0x1d), None));
        // A prime longer than the message: no size rather than a wrong one.
        let record = hello_and_key_exchange(0x009e, &[0x01, 0x00, 0xff]);
        let Ok(Answer::Hello(hello)) = read_answer(&mut &record[..], true) else {
            panic!("no hello");
        };
        assert_eq!(hello.dh_prime, None);
    }

    /// A TLS 1.2 ServerHello (suite 0xc02f) whose extensions block is `extensions`, as
    /// one record.
    fn hello_with_extensions(extensions: &[u8]) -> Vec<u8> {
        let mut body = vec![0x03, 0x03];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0, 0xc0, 0x2f, 0]);
        body.extend_from_slice(extensions);
        let mut message = vec![2, 0, 0, body.len() as u8];
        message.extend_from_slice(&body);
        let mut record = vec![22, 3, 3, 0, message.len() as u8];
        record.extend_from_slice(&message);
        record
    }

    #[test]
    fn a_server_hello_that_does_not_parse_exactly_is_malformed_not_a_hello() {
        let read =
            |extensions: &[u8]| read_answer(&mut &hello_with_extensions(extensions)[..], false);
        // renegotiation_info, empty: a plain hello.
        let Ok(Answer::Hello(hello)) = read(&[0, 5, 0xff, 0x01, 0, 1, 0]) else {
            panic!("no hello");
        };
        assert!(hello.secure_renegotiation);
        assert!(matches!(read(&[]), Ok(Answer::Hello(_))));
        // tls-parser alone reads each of these as a hello without extensions.
        let cases: [(&[u8], &str); 4] = [
            (
                &[0, 40, 0xff, 0x01, 0, 1, 0],
                "extensions length (40 bytes) runs past its end (5 left)",
            ),
            (
                &[0, 5, 0xff, 0x01, 0, 1, 0, 9, 9],
                "2 bytes after its extensions",
            ),
            (&[0, 5, 0xff, 0x01, 0, 9, 0], "extensions do not parse"),
            (&[0], "one byte after its fixed fields"),
        ];
        for (extensions, why) in cases {
            match read(extensions) {
                Err(ProbeError::Malformed(text)) => assert!(text.contains(why), "{text}"),
                other => panic!("{extensions:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_hello_retry_request_names_its_group() {
        // ServerHello with the HRR random, suite 0x1301, supported_versions 1.3, key_share x25519.
        let mut body = vec![0x03, 0x03];
        body.extend_from_slice(&tlslab_core::names::HELLO_RETRY_RANDOM);
        body.push(0);
        body.extend_from_slice(&[0x13, 0x01, 0]);
        let extensions = [0x00, 0x2b, 0, 2, 0x03, 0x04, 0x00, 0x33, 0, 2, 0x00, 0x1d];
        body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
        body.extend_from_slice(&extensions);
        let mut message = vec![2, 0, 0, body.len() as u8];
        message.extend_from_slice(&body);
        let mut record = vec![22, 3, 3, 0, message.len() as u8];
        record.extend_from_slice(&message);
        let Ok(Answer::Hello(hello)) = read_answer(&mut &record[..], false) else {
            panic!("no hello");
        };
        assert!(hello.hello_retry);
        assert_eq!(
            (hello.version, hello.suite, hello.group),
            (0x0304, 0x1301, Some(0x1d))
        );
    }
}
