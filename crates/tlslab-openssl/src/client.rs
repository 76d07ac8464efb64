//! The instrumented OpenSSL client: drives `SSL_connect` over an in-memory pipe from one
//! async loop and timestamps every phase of DESIGN §4 around the calls, like the rustls
//! client does around `process_new_packets`; then, when the Config asks for it, one HTTP
//! request (sent as early data on 0-RTT Configs), as the rustls client does.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use foreign_types::ForeignTypeRef;
use openssl::ssl::{
    ErrorCode, Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions, SslRef, SslSession,
    SslSessionCacheMode, SslStream, SslVerifyMode, SslVersion,
};
use openssl::x509::{X509VerifyResult, X509};
use tlslab_core::{CloseMode, ErrorClass, Event, Http, TlsVersion};
use tlslab_tls::{Attempt, Failure, Trust};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::ech::EchStatus;
use crate::ffi;
use crate::names::{group_name, handshake_message_name, signature_scheme_name, suite_name};
use crate::probe::{self, observe, Direction, Observed, Pipe};
use crate::settings::{ClientOptions, Group};
use tlslab_tls::EchMode;

/// One handshake message with the time it was seen, in nanoseconds since the attempt
/// started: sent messages when OpenSSL wrote them into its buffer (the bytes reach the kernel
/// at the next flush, which the timeline records), received messages when OpenSSL had read
/// them completely, before processing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    pub direction: Direction,
    /// The handshake message type (1 ClientHello, 2 ServerHello, 11 Certificate, …).
    pub kind: u8,
    /// Its name (`client_hello`, `certificate_verify`).
    pub name: &'static str,
    /// Its length including the four-byte handshake header.
    pub length: usize,
    pub at: u64,
}

/// What the OpenSSL client observes beyond the fields of [`Attempt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observations {
    /// Bytes received until `server_flight_received` (also in
    /// [`Attempt::server_flight_bytes`]).
    pub server_flight_bytes: Option<u64>,
    pub ech: EchStatus,
    /// Every handshake message in both directions, in order.
    pub messages: Vec<Message>,
}

/// The session an agent resumes from, filled by OpenSSL's new-session callback, and how many
/// sessions (TLS 1.3: tickets) arrived so far.
#[derive(Default)]
struct Sessions {
    latest: Option<SslSession>,
    received: u64,
}

type SessionSlot = Arc<Mutex<Sessions>>;

fn sessions_received(slot: &SessionSlot) -> u64 {
    slot.lock().map(|sessions| sessions.received).unwrap_or(0)
}

fn session_slot_index() -> openssl::ex_data::Index<Ssl, SessionSlot> {
    static INDEX: OnceLock<openssl::ex_data::Index<Ssl, SessionSlot>> = OnceLock::new();
    *INDEX.get_or_init(|| Ssl::new_ex_index().expect("OpenSSL has room for one ex_data index"))
}

/// One Config's OpenSSL client: one `SSL_CTX`, one `SSL` per handshake.
#[derive(Clone)]
pub struct Client {
    context: SslContext,
    server_name: String,
    ech: EchMode,
    resume: bool,
    /// The request, encoded once (padded to `early_data` bytes, as the rustls client pads it).
    request: Option<Request>,
    early_data: u64,
}

/// An encoded HTTP request and the version it speaks.
#[derive(Debug, Clone)]
struct Request {
    version: tlslab_http::Version,
    bytes: Vec<u8>,
}

/// The wire version of an HTTP request dimension over TLS-over-TCP.
fn http_version(http: Http) -> Result<Option<tlslab_http::Version>, String> {
    match http {
        Http::None => Ok(None),
        Http::Http11 => Ok(Some(tlslab_http::Version::Http11)),
        Http::Http2 => Ok(Some(tlslab_http::Version::Http2)),
        Http::Http3 => Err("HTTP/3 needs QUIC; the OpenSSL backend speaks TLS over TCP".into()),
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server_name", &self.server_name)
            .field("ech", &self.ech)
            .field("resume", &self.resume)
            .field(
                "http",
                &self.request.as_ref().map(|request| request.version),
            )
            .field("early_data", &self.early_data)
            .finish_non_exhaustive()
    }
}

/// One agent's view of a [`Client`]: with resumption, the session it resumes next.
#[derive(Clone, Default)]
pub struct AgentSession {
    slot: Option<SessionSlot>,
}

impl std::fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSession")
            .field("resumes", &self.slot.is_some())
            .field(
                "sessions_received",
                &self.slot.as_ref().map(sessions_received),
            )
            .finish()
    }
}

impl Client {
    pub fn new(options: &ClientOptions) -> Result<Client, String> {
        let version = http_version(options.http)?;
        let context = client_context(options, version).map_err(|error| error.to_string())?;
        let request = version.map(|version| Request {
            version,
            bytes: tlslab_http::encode_request(
                version,
                &tlslab_http::Request {
                    authority: &options.server_name,
                    path: &options.path,
                    min_size: options.early_data as usize,
                },
            ),
        });
        let client = Client {
            context,
            server_name: options.server_name.clone(),
            ech: options.ech.clone(),
            resume: options.resume,
            request,
            early_data: options.early_data,
        };
        // A configuration OpenSSL cannot use fails here, once, not on every attempt.
        client
            .connection(&client.agent_session())
            .map_err(|failure| failure.detail)?;
        Ok(client)
    }

    /// A session for one agent: none for fresh handshakes, a private slot with resumption.
    pub fn agent_session(&self) -> AgentSession {
        AgentSession {
            slot: self.resume.then(SessionSlot::default),
        }
    }

    /// A fresh `SSL` for one handshake, and the session it offers to resume.
    fn connection(&self, session: &AgentSession) -> Result<(Ssl, Option<SslSession>), Failure> {
        let protocol = |error: openssl::error::ErrorStack| {
            Failure::new(ErrorClass::Protocol, error.to_string())
        };
        let mut ssl = Ssl::new(&self.context).map_err(protocol)?;
        match self.server_name.parse::<IpAddr>() {
            // No SNI for addresses (RFC 6066); verification matches the address instead.
            Ok(address) => ssl.param_mut().set_ip(address).map_err(protocol)?,
            Err(_) => {
                ssl.set_hostname(&self.server_name).map_err(protocol)?;
                ssl.param_mut()
                    .set_host(&self.server_name)
                    .map_err(protocol)?;
            }
        }
        if let EchMode::On(list) = &self.ech {
            // SAFETY: the SSL is live; OpenSSL copies the list.
            let set =
                unsafe { ffi::SSL_set1_ech_config_list(ssl.as_ptr(), list.as_ptr(), list.len()) };
            if set != 1 {
                return Err(Failure::new(
                    ErrorClass::Protocol,
                    format!(
                        "OpenSSL rejected the ECH configuration list: {}",
                        openssl::error::ErrorStack::get()
                    ),
                ));
            }
        }
        let mut offered = None;
        if let Some(slot) = &session.slot {
            let latest = slot.lock().ok().and_then(|held| held.latest.clone());
            if let Some(previous) = latest {
                // SAFETY: the session comes from this client's context.
                unsafe { ssl.set_session(&previous) }.map_err(protocol)?;
                offered = Some(previous);
            }
            ssl.set_ex_data(session_slot_index(), slot.clone());
        }
        ssl.set_connect_state();
        Ok((ssl, offered))
    }

    /// Runs a handshake on a connected stream. `attempt` holds the partial record when this
    /// fails or is cancelled by a timeout. On 0-RTT Configs the request goes out as early data
    /// with the ClientHello whenever the agent holds a session that allows it.
    pub async fn handshake(
        &self,
        session: &AgentSession,
        attempt: &mut Attempt,
        mut socket: TcpStream,
    ) -> Result<Established, Failure> {
        let tickets_before = session.slot.as_ref().map(sessions_received);
        let (ssl, offered_session) = self.connection(session)?;
        let mut tls = SslStream::new(ssl, Pipe::default())
            .map_err(|error| Failure::new(ErrorClass::Protocol, error.to_string()))?;
        let mut progress = Progress::default();
        let mut buffer = vec![0u8; 32 * 1024];
        let mut sent_early = false;
        if let (Some(request), true, Some(previous)) =
            (&self.request, self.early_data > 0, &offered_session)
        {
            let allowed = previous.max_early_data() as usize;
            if allowed >= request.bytes.len() {
                // SSL_write_early_data writes the ClientHello, then the request after it.
                let (result, observed) = observe(|| write_early(&mut tls, &request.bytes));
                progress.apply(attempt, observed);
                if let Err(error) = result {
                    return Err(progress.failure(&error, tls.ssl()));
                }
                sent_early = true;
                if let Some(captured) = &mut attempt.captured {
                    captured.push(tls.get_ref().outgoing.clone());
                }
                progress.flush(attempt, &mut tls, &mut socket).await?;
            } else if allowed > 0 {
                // The session allows less early data than the request: it goes 1-RTT, and the
                // sample says 0-RTT did not happen.
                attempt.negotiated.early_data = Some(false);
            }
        }
        loop {
            let (result, observed) = observe(|| tls.connect());
            progress.apply(attempt, observed);
            match result {
                Ok(()) => {
                    progress.flush(attempt, &mut tls, &mut socket).await?;
                    break;
                }
                Err(error) if error.code() == ErrorCode::WANT_READ => {
                    progress.flush(attempt, &mut tls, &mut socket).await?;
                    progress
                        .read(attempt, &mut tls, &mut socket, &mut buffer)
                        .await?;
                }
                Err(error) => {
                    // Tell the server why we give up, as a real client would (OpenSSL queued
                    // the alert); failing to do so changes nothing about the attempt.
                    let _ = progress.flush(attempt, &mut tls, &mut socket).await;
                    return Err(progress.failure(&error, tls.ssl()));
                }
            }
        }
        attempt.mark(Event::HandshakeDone);
        record_negotiated(attempt, tls.ssl(), self.resume);
        if let (Some(slot), Some(SslVersion::TLS1_2)) = (&session.slot, tls.ssl().version2()) {
            // A TLS 1.2 server may renew the ticket of a resumed session: OpenSSL then marks
            // the old session spent and announces no new one, so keep the connection's own.
            if let (Ok(mut held), Some(current)) = (slot.lock(), tls.ssl().session()) {
                held.latest = Some(current.to_owned());
            }
        }
        // SAFETY: the SSL is live.
        let ech = unsafe { EchStatus::of(tls.ssl().as_ptr()) };
        attempt.negotiated.ech = Some(ech.into());
        // SAFETY: the SSL is live.
        let early_accepted = sent_early
            && unsafe { ffi::SSL_get_early_data_status(tls.ssl().as_ptr()) }
                == ffi::SSL_EARLY_DATA_ACCEPTED;
        if sent_early {
            attempt.negotiated.early_data = Some(early_accepted);
        }
        Ok(Established {
            observations: Observations {
                server_flight_bytes: progress.server_flight_bytes,
                ech,
                messages: progress.messages,
            },
            tls,
            socket,
            buffer,
            slot: session.slot.clone(),
            tickets_before,
            request: self.request.clone(),
            // A rejected early request is sent again after the handshake (OpenSSL does not
            // resend it by itself).
            request_sent: early_accepted,
        })
    }
}

/// Writes all of `data` as early data (OpenSSL writes the ClientHello first).
fn write_early(tls: &mut SslStream<Pipe>, mut data: &[u8]) -> Result<(), openssl::ssl::Error> {
    while !data.is_empty() {
        let written = tls.write_early_data(data)?;
        data = &data[written..];
    }
    Ok(())
}

fn client_context(
    options: &ClientOptions,
    http: Option<tlslab_http::Version>,
) -> Result<SslContext, crate::Error> {
    let mut builder = SslContextBuilder::new(SslMethod::tls_client())?;
    let version = match options.version {
        TlsVersion::Tls12 => SslVersion::TLS1_2,
        TlsVersion::Tls13 => SslVersion::TLS1_3,
    };
    builder.set_min_proto_version(Some(version))?;
    builder.set_max_proto_version(Some(version))?;
    let suites = options
        .suite
        .openssl_list(options.version)
        .map_err(crate::Error::new)?;
    match options.version {
        TlsVersion::Tls13 => builder.set_ciphersuites(suites)?,
        TlsVersion::Tls12 => builder.set_cipher_list(suites)?,
    }
    builder.set_groups_list(&offered_groups(options.version, options.group)?)?;
    if options.ech != EchMode::Off && options.version != TlsVersion::Tls13 {
        return Err(crate::Error::new("ECH needs TLS 1.3"));
    }
    if options.ech == EchMode::Grease {
        builder.set_options(SslOptions::from_bits_retain(ffi::SSL_OP_ECH_GREASE as _));
    }
    match &options.trust {
        Trust::Insecure => {
            builder.set_verify(SslVerifyMode::NONE);
            // SAFETY: the callback is a plain function that ignores its argument.
            unsafe {
                ffi::SSL_CTX_set_cert_verify_callback(
                    builder.as_ptr(),
                    Some(probe::no_verification),
                    std::ptr::null_mut(),
                )
            };
        }
        trust => {
            match trust {
                Trust::Roots(roots) => {
                    let store = builder.cert_store_mut();
                    for root in roots {
                        store.add_cert(X509::from_der(root)?)?;
                    }
                }
                _ => {
                    // Our OpenSSL's compiled-in directory (/usr/local/ssl) is not the
                    // system's, so ask openssl-probe where this system keeps its roots.
                    let locations = openssl_probe::probe();
                    let loaded = locations
                        .cert_file
                        .as_ref()
                        .is_some_and(|file| builder.set_ca_file(file).is_ok());
                    if !loaded {
                        return Err(crate::Error::new(format!(
                            "no system root certificates found (looked for a bundle in {:?})",
                            locations.cert_file
                        )));
                    }
                }
            }
            builder.set_verify(SslVerifyMode::PEER);
            // SAFETY: the callback is a plain function that ignores its argument.
            unsafe {
                ffi::SSL_CTX_set_cert_verify_callback(
                    builder.as_ptr(),
                    Some(probe::timed_verification),
                    std::ptr::null_mut(),
                )
            };
        }
    }
    // SAFETY: a plain function that only touches the per-thread record.
    unsafe { ffi::SSL_CTX_set_msg_callback(builder.as_ptr(), Some(probe::message_callback)) };
    if let Some(version) = http {
        // One protocol, as the rustls client offers: the Config's request decides.
        let alpn = version.alpn();
        let mut wire = Vec::with_capacity(alpn.len() + 1);
        wire.push(alpn.len() as u8);
        wire.extend_from_slice(alpn);
        builder.set_alpn_protos(&wire)?;
    }
    if options.resume {
        // Sessions go to the agent's slot only: OpenSSL's internal cache would keep every
        // session (and its peer chain) of the Config under a shared lock, and nobody reads it.
        builder
            .set_session_cache_mode(SslSessionCacheMode::CLIENT | SslSessionCacheMode::NO_INTERNAL);
        if options.session_id_only {
            builder.set_options(SslOptions::NO_TICKET);
        }
        builder.set_new_session_callback(|ssl, session| {
            if let Some(slot) = ssl.ex_data(session_slot_index()) {
                if let Ok(mut held) = slot.lock() {
                    held.latest = Some(session);
                    held.received += 1;
                }
            }
        });
    } else {
        // Fresh handshakes by default (DESIGN §5 rule 2): nothing is cached.
        builder.set_session_cache_mode(SslSessionCacheMode::OFF);
    }
    Ok(builder.build())
}

/// The groups a client offers, most preferred first: the requested group alone under TLS 1.3
/// (it is the key share); under TLS 1.2 P-256 and P-384 follow, for the reason the rustls
/// client gives (`tlslab_tls::provider::offered_groups`).
fn offered_groups(version: TlsVersion, group: Group) -> Result<String, crate::Error> {
    if version == TlsVersion::Tls13 {
        return Ok(group.openssl_name().to_string());
    }
    if group.is_tls13_only() {
        return Err(crate::Error::new(format!(
            "group {group} exists only in TLS 1.3"
        )));
    }
    // A DHE suite's group, offered alone: the server must not fall back to its own choice.
    if group.is_finite_field() {
        return Ok(group.openssl_name().to_string());
    }
    let mut groups = vec![group];
    for curve in [Group::Secp256r1, Group::Secp384r1] {
        if !groups.contains(&curve) {
            groups.push(curve);
        }
    }
    Ok(groups
        .iter()
        .map(|group| group.openssl_name())
        .collect::<Vec<_>>()
        .join(":"))
}

/// What the handshake negotiated. `resumes`: the client resumes sessions, so `resumed` says
/// whether this handshake did (`Some(false)` for an agent's first, as in the rustls client).
fn record_negotiated(attempt: &mut Attempt, ssl: &SslRef, resumes: bool) {
    let negotiated = &mut attempt.negotiated;
    negotiated.version = ssl.version2().map(|version| {
        if version == SslVersion::TLS1_3 {
            "1.3".to_string()
        } else if version == SslVersion::TLS1_2 {
            "1.2".to_string()
        } else {
            ssl.version_str().to_string()
        }
    });
    negotiated.suite = ssl
        .current_cipher()
        .and_then(|cipher| cipher.standard_name())
        .map(suite_name);
    // SAFETY: the SSL is live; the group name points into OpenSSL's static tables.
    negotiated.group = unsafe {
        if ffi::negotiated_group(ssl.as_ptr()) != 0 {
            let name = openssl_sys::SSL_get0_group_name(ssl.as_ptr());
            (!name.is_null())
                .then(|| std::ffi::CStr::from_ptr(name).to_string_lossy())
                .map(|name| group_name(&name))
        } else if is_dhe(ssl) {
            ffi::peer_key_group(ssl.as_ptr()).map(|name| group_name(&name))
        } else {
            // RSA key transport: no key exchange at all.
            None
        }
    };
    // SAFETY: the SSL is live.
    negotiated.signature_scheme =
        unsafe { ffi::peer_signature_name(ssl.as_ptr()) }.map(signature_scheme_name);
    negotiated.alpn = ssl
        .selected_alpn_protocol()
        .map(|alpn| String::from_utf8_lossy(alpn).into_owned());
    if resumes {
        negotiated.resumed = Some(ssl.session_reused());
    }
}

/// A TLS 1.2 finite-field DHE suite, whose group no extension names.
fn is_dhe(ssl: &SslRef) -> bool {
    ssl.current_cipher()
        .and_then(|cipher| cipher.standard_name())
        .is_some_and(|name| name.starts_with("TLS_DHE_"))
}

/// The client's progress through one handshake, between OpenSSL calls.
#[derive(Debug, Default)]
struct Progress {
    last_read: Option<Instant>,
    bytes_at_last_read: u64,
    finished_pending: bool,
    server_flight_bytes: Option<u64>,
    messages: Vec<Message>,
}

impl Progress {
    fn apply(&mut self, attempt: &mut Attempt, observed: Observed) {
        let origin = attempt.origin;
        let since_origin = |at: Instant| at.saturating_duration_since(origin).as_nanos() as u64;
        let flight_arrived = self.last_read.unwrap_or(origin);
        let finished_written = observed
            .messages
            .iter()
            .any(|message| message.direction == Direction::Sent && message.kind == 20);
        // The server's flight is every byte read before the client answers it (Finished, or
        // ClientKeyExchange in TLS 1.2), whatever the reads that carried it: its size must not
        // depend on where OpenSSL happened to start verifying.
        let answered = observed
            .messages
            .iter()
            .any(|message| message.direction == Direction::Sent && message.kind != 1);
        if answered && self.server_flight_bytes.is_none() {
            self.server_flight_bytes = Some(self.bytes_at_last_read);
            attempt.server_flight_bytes = self.server_flight_bytes;
        }
        self.messages
            .extend(observed.messages.iter().map(|message| Message {
                direction: message.direction,
                kind: message.kind,
                name: handshake_message_name(message.kind),
                length: message.length,
                at: since_origin(message.at),
            }));
        if let Some(start) = observed.verify_start {
            // The read that delivered the certificate completed the flight the client needs.
            // OpenSSL verifies the chain as soon as the Certificate message is in, where
            // rustls waits for CertificateVerify: when the flight spans several reads, OpenSSL
            // overlaps verification with the rest of the flight, and the events say so.
            self.flight_complete(attempt, flight_arrived);
            attempt
                .timeline
                .mark_once(Event::CertVerifyStart, origin, start);
        }
        if let Some(end) = observed.verify_end {
            if attempt.timeline.get(Event::CertVerifyStart).is_some() {
                // The signature check after the chain extends verification: take the last.
                attempt
                    .timeline
                    .set(Event::CertVerifyEnd, since_origin(end));
            }
        }
        if finished_written {
            // Without verification (insecure, resumed) the flight is complete when the
            // client can answer it.
            self.flight_complete(attempt, flight_arrived);
            if attempt.timeline.get(Event::ClientFinishedSent).is_none() {
                self.finished_pending = true;
            }
        }
    }

    fn flight_complete(&mut self, attempt: &mut Attempt, arrived: Instant) {
        attempt
            .timeline
            .mark_once(Event::ServerFlightReceived, attempt.origin, arrived);
    }

    /// Hands what OpenSSL wrote to the kernel, and records which flight it was.
    async fn flush(
        &mut self,
        attempt: &mut Attempt,
        tls: &mut SslStream<Pipe>,
        socket: &mut TcpStream,
    ) -> Result<(), Failure> {
        let outgoing = std::mem::take(&mut tls.get_mut().outgoing);
        if outgoing.is_empty() {
            return Ok(());
        }
        socket
            .write_all(&outgoing)
            .await
            .map_err(|error| Failure::io(&error))?;
        let now = Instant::now();
        attempt.bytes_sent += outgoing.len() as u64;
        if attempt.timeline.get(Event::ClientHelloSent).is_none() {
            attempt
                .timeline
                .mark_once(Event::ClientHelloSent, attempt.origin, now);
            attempt.client_hello_bytes = Some(outgoing.len() as u64);
        } else if self.finished_pending {
            attempt
                .timeline
                .mark_once(Event::ClientFinishedSent, attempt.origin, now);
            self.finished_pending = false;
        }
        // Give the buffer back so its capacity is reused.
        let pipe = tls.get_mut();
        if pipe.outgoing.is_empty() {
            pipe.outgoing = outgoing;
            pipe.outgoing.clear();
        }
        Ok(())
    }

    async fn read(
        &mut self,
        attempt: &mut Attempt,
        tls: &mut SslStream<Pipe>,
        socket: &mut TcpStream,
        buffer: &mut [u8],
    ) -> Result<(), Failure> {
        let read = socket
            .read(buffer)
            .await
            .map_err(|error| Failure::io(&error))?;
        let now = Instant::now();
        if read == 0 {
            let class = if attempt.timeline.get(Event::ServerHelloReceived).is_none() {
                ErrorClass::Reset
            } else {
                ErrorClass::Protocol
            };
            return Err(Failure::new(
                class,
                "the server closed the connection during the handshake",
            ));
        }
        attempt.bytes_received += read as u64;
        attempt
            .timeline
            .mark_once(Event::ServerHelloReceived, attempt.origin, now);
        self.last_read = Some(now);
        self.bytes_at_last_read = attempt.bytes_received;
        tls.get_mut().push(&buffer[..read]);
        Ok(())
    }

    fn failure(&self, error: &openssl::ssl::Error, ssl: &SslRef) -> Failure {
        if let Some(io) = error.io_error() {
            return Failure::io(io);
        }
        let saw_server_hello = self
            .messages
            .iter()
            .any(|message| message.direction == Direction::Received && message.kind == 2);
        let verified = ssl.verify_result();
        if verified != X509VerifyResult::OK {
            return Failure::new(ErrorClass::Certificate, verified.error_string());
        }
        if let Some(stack) = error.ssl_error() {
            for entry in stack.errors() {
                let reason = openssl_sys::ERR_GET_REASON(entry.code());
                // OpenSSL reports a received alert as reason 1000 + its number.
                if (1000..1256).contains(&reason) {
                    let description = entry.reason().unwrap_or("unknown alert");
                    return Failure::new(
                        ErrorClass::Alert,
                        format!("alert {} ({description})", reason - 1000),
                    );
                }
            }
        }
        let class = if saw_server_hello {
            ErrorClass::Protocol
        } else {
            ErrorClass::NotTls
        };
        Failure::new(class, error.to_string())
    }
}

/// A completed handshake, still connected.
pub struct Established {
    pub observations: Observations,
    tls: SslStream<Pipe>,
    socket: TcpStream,
    buffer: Vec<u8>,
    slot: Option<SessionSlot>,
    /// Sessions the agent had received when the handshake started.
    tickets_before: Option<u64>,
    request: Option<Request>,
    /// The request already went out as accepted early data.
    request_sent: bool,
}

impl std::fmt::Debug for Established {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Established")
            .field("observations", &self.observations)
            .finish_non_exhaustive()
    }
}

/// Application data read from OpenSSL, and whether the server sent close_notify.
#[derive(Default)]
struct Plaintext {
    data: Vec<u8>,
    closed: bool,
}

/// A failure of the request after a successful handshake.
fn http_failure(detail: impl Into<String>) -> Failure {
    Failure::new(ErrorClass::Protocol, detail)
}

impl Established {
    /// Sends the Config's request (unless early data carried it) and reads the response,
    /// marking `first_byte` and `response_done` and filling [`Attempt::response`], as the
    /// rustls client's `Established::exchange` does. Does nothing for Configs without a
    /// request.
    ///
    /// Bytes exchanged after the handshake are not added to [`Attempt::bytes_sent`] and
    /// [`Attempt::bytes_received`]: the rustls client adds them but freezes
    /// [`Attempt::handshake_bytes`] at `handshake_done`, which only `tlslab-tls` can do, so
    /// leaving them out keeps `handshake_bytes()` (what a sample stores) the same for both
    /// clients.
    pub async fn exchange(&mut self, attempt: &mut Attempt) -> Result<(), Failure> {
        let Some(request) = self.request.take() else {
            return Ok(());
        };
        if !self.request_sent {
            self.write(&request.bytes)?;
            self.send().await?;
        }
        let mut reader = tlslab_http::ResponseReader::new(request.version);
        // With 0-RTT the response may have come with the server's handshake flight: it waits
        // in OpenSSL's buffers (or the pipe) and the first drain returns it.
        let mut plaintext = Plaintext::default();
        loop {
            self.drain(&mut plaintext)?;
            // Tickets or key update acknowledgements OpenSSL wrote while reading.
            self.send().await?;
            if !plaintext.data.is_empty() {
                let progress = reader
                    .feed(&plaintext.data)
                    .map_err(|error| http_failure(error.to_string()))?;
                plaintext.data.clear();
                if self.note(attempt, &mut reader, progress).await? {
                    return Ok(());
                }
            }
            let open = !plaintext.closed && self.receive().await?;
            if !open {
                let progress = reader
                    .finish()
                    .map_err(|error| http_failure(error.to_string()))?;
                if self.note(attempt, &mut reader, progress).await? {
                    return Ok(());
                }
                return Err(Failure::new(
                    ErrorClass::Reset,
                    "the server closed the connection before the response was complete",
                ));
            }
        }
    }

    /// Records a response's progress; `Ok(true)` once it is complete.
    async fn note(
        &mut self,
        attempt: &mut Attempt,
        reader: &mut tlslab_http::ResponseReader,
        progress: tlslab_http::Progress,
    ) -> Result<bool, Failure> {
        // HTTP/2 acknowledgements (SETTINGS, WINDOW_UPDATE) the reader wants sent.
        let answer = reader.take_output();
        if !answer.is_empty() {
            self.write(&answer)?;
            self.send().await?;
        }
        Ok(attempt.record_response(&progress))
    }

    /// Encrypts application data into the pipe.
    fn write(&mut self, mut data: &[u8]) -> Result<(), Failure> {
        while !data.is_empty() {
            let written = self
                .tls
                .ssl_write(data)
                .map_err(|error| http_failure(error.to_string()))?;
            data = &data[written..];
        }
        Ok(())
    }

    /// Hands what OpenSSL wrote to the kernel.
    async fn send(&mut self) -> Result<(), Failure> {
        let pipe = self.tls.get_mut();
        if pipe.outgoing.is_empty() {
            return Ok(());
        }
        self.socket
            .write_all(&pipe.outgoing)
            .await
            .map_err(|error| Failure::io(&error))?;
        pipe.outgoing.clear();
        Ok(())
    }

    /// Reads from the socket into the pipe; `Ok(false)` when the server closed the connection.
    async fn receive(&mut self) -> Result<bool, Failure> {
        let read = self
            .socket
            .read(&mut self.buffer)
            .await
            .map_err(|error| Failure::io(&error))?;
        if read == 0 {
            return Ok(false);
        }
        self.tls.get_mut().push(&self.buffer[..read]);
        Ok(true)
    }

    /// Decrypts whatever application data the pipe holds.
    fn drain(&mut self, plaintext: &mut Plaintext) -> Result<(), Failure> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.tls.ssl_read(&mut chunk) {
                Ok(count) => plaintext.data.extend_from_slice(&chunk[..count]),
                Err(error) if error.code() == ErrorCode::WANT_READ => return Ok(()),
                Err(error) if error.code() == ErrorCode::ZERO_RETURN => {
                    plaintext.closed = true;
                    return Ok(());
                }
                Err(error) => return Err(http_failure(error.to_string())),
            }
        }
    }

    /// With resumption under TLS 1.3, reads until the server's NewSessionTicket arrives (it
    /// follows the handshake) so the agent's next handshake can resume. Gives up quietly after
    /// `patience`: a server that issues no tickets just means the next handshake is full.
    /// Tickets that came during [`Established::exchange`] count.
    pub async fn await_ticket(&mut self, patience: Duration) {
        let (Some(slot), Some(before)) = (self.slot.clone(), self.tickets_before) else {
            return;
        };
        if self.tls.ssl().version2() != Some(SslVersion::TLS1_3) {
            return;
        }
        let wait = async {
            let mut plaintext = Plaintext::default();
            while sessions_received(&slot) == before {
                plaintext.data.clear();
                if self.drain(&mut plaintext).is_err() || plaintext.closed {
                    return;
                }
                if sessions_received(&slot) != before {
                    return;
                }
                if !matches!(self.receive().await, Ok(true)) {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(patience, wait).await;
    }

    /// Closes the connection: an RST (the socket was opened with `SO_LINGER` 0) or a
    /// close_notify and FIN.
    pub async fn close(mut self, mode: CloseMode) {
        if mode == CloseMode::Graceful {
            let _ = self.tls.shutdown();
            let outgoing = std::mem::take(&mut self.tls.get_mut().outgoing);
            let _ = self.socket.write_all(&outgoing).await;
            let _ = self.socket.shutdown().await;
        }
    }
}

impl Drop for Established {
    /// An abortive close (how tlslab ends a finished connection), a failed request or a
    /// timeout after the handshake are not failures of the session. Freed without a shutdown,
    /// OpenSSL would mark the session unresumable and the agent's next handshake would be a
    /// full one, which the rustls client does not do; so the connection is declared shut down.
    fn drop(&mut self) {
        self.tls.set_shutdown(
            openssl::ssl::ShutdownState::SENT | openssl::ssl::ShutdownState::RECEIVED,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls12_offers_the_certificate_curves_and_tls13_only_the_key_share() {
        assert_eq!(
            offered_groups(TlsVersion::Tls13, Group::X25519Mlkem768).unwrap(),
            "X25519MLKEM768"
        );
        assert_eq!(
            offered_groups(TlsVersion::Tls12, Group::X25519).unwrap(),
            "x25519:secp256r1:secp384r1"
        );
        assert_eq!(
            offered_groups(TlsVersion::Tls12, Group::Secp384r1).unwrap(),
            "secp384r1:secp256r1"
        );
        assert!(offered_groups(TlsVersion::Tls12, Group::Mlkem768).is_err());
    }
}
