//! The instrumented OpenSSL client: drives `SSL_connect` over an in-memory pipe from one
//! async loop and timestamps every phase of the phase model (docs/architecture.md, "Phases")
//! around the calls, like the rustls client does around `process_new_packets`; then, when the
//! Config asks for it, one HTTP request (sent as early data on 0-RTT Configs), as the rustls
//! client does.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use foreign_types::ForeignTypeRef;
use openssl::ssl::{
    ErrorCode, Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions, SslRef, SslSession,
    SslSessionCacheMode, SslStream, SslVerifyMode, SslVersion,
};
use openssl::x509::{X509VerifyResult, X509};
use tlslab_backend::{
    AcceptanceWait, Attempt, Channel, ClientSettings, EchMode, Failure, Handshake, Plaintext,
    Request, TimestampedStream, Trust,
};
use tlslab_core::{CloseMode, ErrorClass, Http, TlsVersion};
use tokio::net::TcpStream;

use crate::ech::EchStatus;
use crate::ffi;
use crate::names::{group_name, handshake_message_name, signature_scheme_name, suite_name};
use crate::probe::{self, observe, Direction, Observed, Pipe, SeenMessage};
use crate::settings::{groups_list, suite_list};
use crate::Error;

/// One handshake message with the time it was seen, in nanoseconds since the attempt
/// started: sent messages when OpenSSL wrote them into its buffer (the bytes reach the kernel
/// at the next flush, which the timeline records), received messages when OpenSSL had read
/// them completely, before processing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// Whether the client sent it or received it.
    pub direction: Direction,
    /// The handshake message type (1 ClientHello, 2 ServerHello, 11 Certificate, …).
    pub kind: u8,
    /// Its name (`client_hello`, `certificate_verify`).
    pub name: &'static str,
    /// Its length including the four-byte handshake header.
    pub length: usize,
    /// When it was seen, in nanoseconds since the attempt started.
    pub at: u64,
}

/// What the OpenSSL client observes beyond the fields of [`Attempt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observations {
    /// What became of ECH: not offered, accepted, rejected, or GREASE.
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
    /// `--client-cert`: sent whenever the server asks.
    has_client_certificate: bool,
    /// How long TLS 1.3 attempts wait for the server's acceptance.
    acceptance: Arc<AcceptanceWait>,
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
    /// The client `settings` describe. It speaks TLS over TCP, with HTTP/1.1 or HTTP/2
    /// requests (offered by ALPN, as the rustls client does); resuming by ticket, or with
    /// `Resume::SessionId` by TLS 1.2 session ID alone (`SSL_OP_NO_TICKET`, as rustls'
    /// `SessionIdOnly`). It has no certificate cache.
    pub fn new(settings: &ClientSettings) -> Result<Client, Error> {
        if settings.http == Http::Http3 {
            return Err(Error::unsupported(
                "HTTP/3 needs QUIC; the OpenSSL backend speaks TLS over TCP",
            ));
        }
        if settings.cert_cache {
            return Err(Error::unsupported(
                "the certificate cache is a rustls client feature",
            ));
        }
        let request = settings.request();
        let context = client_context(settings, request.as_ref().map(|r| r.version))?;
        let client = Client {
            context,
            server_name: settings.server_name.clone(),
            ech: settings.ech.clone(),
            resume: settings.resumes(),
            request,
            early_data: settings.early_data,
            has_client_certificate: settings.client_certificate.is_some(),
            acceptance: Arc::default(),
        };
        // A configuration OpenSSL cannot use fails here, once, not on every attempt.
        client
            .connection(&client.agent_session())
            .map_err(|failure| Error::new(failure.detail))?;
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
}

impl tlslab_backend::Client for Client {
    type Channel = Established;
    type Agent = AgentSession;

    /// Runs a handshake on a connected stream. `attempt` holds the partial record when this
    /// fails or is cancelled by a timeout. On 0-RTT Configs the request goes out as early data
    /// with the ClientHello whenever the agent holds a session that allows it.
    async fn handshake(
        &self,
        session: &AgentSession,
        attempt: &mut Attempt,
        socket: TcpStream,
    ) -> Result<Handshake<Established>, Failure> {
        // Reads and writes timed by the kernel where it can (measurement rule 12).
        let mut socket = TimestampedStream::new(socket);
        let (ssl, offered_session) = self.connection(session)?;
        let mut tls = SslStream::new(ssl, Pipe::default())
            .map_err(|error| Failure::new(ErrorClass::Protocol, error.to_string()))?;
        let mut progress = Progress {
            has_client_certificate: self.has_client_certificate,
            ..Progress::default()
        };
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
        attempt.handshake_done();
        record_negotiated(attempt, tls.ssl(), self.resume);
        attempt.negotiated.hello_retry = Some(progress.hello_retry);
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
        Ok(Handshake {
            channel: Established {
                observations: Observations {
                    ech,
                    messages: progress.messages,
                },
                tls,
                socket,
                buffer,
                plaintext: Plaintext::default(),
            },
            // A rejected early request is sent again after the handshake (OpenSSL does not
            // resend it by itself).
            request_sent: early_accepted,
        })
    }

    fn request(&self) -> Option<&Request> {
        self.request.as_ref()
    }

    fn tickets_received(&self, agent: &AgentSession) -> Option<u64> {
        agent.slot.as_ref().map(sessions_received)
    }

    fn acceptance(&self) -> &AcceptanceWait {
        &self.acceptance
    }

    fn agent(&self) -> AgentSession {
        self.agent_session()
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
    settings: &ClientSettings,
    http: Option<tlslab_http::Version>,
) -> Result<SslContext, Error> {
    let mut builder = SslContextBuilder::new(SslMethod::tls_client())?;
    let version = match settings.version {
        TlsVersion::Tls12 => SslVersion::TLS1_2,
        TlsVersion::Tls13 => SslVersion::TLS1_3,
    };
    builder.set_min_proto_version(Some(version))?;
    builder.set_max_proto_version(Some(version))?;
    let suites = suite_list(settings.suite, settings.version)?;
    match settings.version {
        TlsVersion::Tls13 => builder.set_ciphersuites(suites)?,
        TlsVersion::Tls12 => builder.set_cipher_list(suites)?,
    }
    builder.set_groups_list(&groups_list(settings.version, &settings.offered_groups())?)?;
    if let Some(file) = settings.key_log.clone() {
        // OpenSSL formats each line as SSLKEYLOGFILE does.
        builder.set_keylog_callback(move |_, line| file.line(line));
    }
    if settings.ech != EchMode::Off && settings.version != TlsVersion::Tls13 {
        return Err(Error::unsupported("ECH needs TLS 1.3"));
    }
    if settings.ech == EchMode::Grease {
        builder.set_options(SslOptions::from_bits_retain(ffi::SSL_OP_ECH_GREASE as _));
    }
    set_trust(&mut builder, settings)?;
    if let Some(certificate) = &settings.client_certificate {
        client_certificate(&mut builder, certificate)?;
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
    set_session_cache(&mut builder, settings);
    if let Some(pins) = &settings.pins {
        builder.set_ex_data(pins_index(), pins.clone());
    }
    let context = builder.build();
    if let Some(pins) = context.ex_data(pins_index()) {
        let verify: ffi::CertVerifyCallback = match settings.trust {
            Trust::Insecure => probe::no_verification,
            _ => probe::timed_verification,
        };
        // SAFETY: the pins live in the context's own ex_data, freed with it, so the pointer
        // outlives every verification the context runs; no connection exists yet.
        unsafe {
            ffi::SSL_CTX_set_cert_verify_callback(
                context.as_ptr(),
                Some(verify),
                pins as *const tlslab_core::Pins as *mut libc::c_void,
            )
        };
    }
    Ok(context)
}

/// How the client verifies the server: not at all (a pin still checks its key), against the
/// roots given, or against the system's roots; each through a timed verification callback.
fn set_trust(builder: &mut SslContextBuilder, settings: &ClientSettings) -> Result<(), Error> {
    match &settings.trust {
        Trust::Insecure => {
            // A pin is still checked, and its refusal must end the handshake.
            builder.set_verify(if settings.pins.is_some() {
                SslVerifyMode::PEER
            } else {
                SslVerifyMode::NONE
            });
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
                        return Err(Error::system_roots(format!(
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
    Ok(())
}

/// Sessions kept for resumption in the agent's slot, or none at all for fresh handshakes.
fn set_session_cache(builder: &mut SslContextBuilder, settings: &ClientSettings) {
    if settings.resumes() {
        // Sessions go to the agent's slot only: OpenSSL's internal cache would keep every
        // session (and its peer chain) of the Config under a shared lock, and nobody reads it.
        builder
            .set_session_cache_mode(SslSessionCacheMode::CLIENT | SslSessionCacheMode::NO_INTERNAL);
        if settings.resume == tlslab_core::Resume::SessionId {
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
        // Fresh handshakes by default (docs/architecture.md, "Plan and measurement rules"):
        // nothing is cached.
        builder.set_session_cache_mode(SslSessionCacheMode::OFF);
    }
}

/// Presents `certificate` when the server asks: the leaf, the rest of the chain as extra
/// certificates (sent in order, not looked up in the trust store), and the leaf's key.
fn client_certificate(
    builder: &mut SslContextBuilder,
    certificate: &tlslab_backend::ClientCertificate,
) -> Result<(), Error> {
    let mut chain = certificate.chain.iter();
    if let Some(leaf) = chain.next() {
        builder.set_certificate(X509::from_der(leaf)?.as_ref())?;
    }
    for extra in chain {
        builder.add_extra_chain_cert(X509::from_der(extra)?)?;
    }
    let key = match &certificate.key {
        rustls_pki_types::PrivateKeyDer::Pkcs8(der) => {
            openssl::pkey::PKey::private_key_from_pkcs8(der.secret_pkcs8_der())?
        }
        rustls_pki_types::PrivateKeyDer::Pkcs1(der) => openssl::pkey::PKey::from_rsa(
            openssl::rsa::Rsa::private_key_from_der(der.secret_pkcs1_der())?,
        )?,
        rustls_pki_types::PrivateKeyDer::Sec1(der) => openssl::pkey::PKey::from_ec_key(
            openssl::ec::EcKey::private_key_from_der(der.secret_sec1_der())?,
        )?,
        other => openssl::pkey::PKey::private_key_from_der(other.secret_der())?,
    };
    builder.set_private_key(&key)?;
    builder.check_private_key()?;
    Ok(())
}

/// Where a client context keeps its `--pin`s for the verification callback.
fn pins_index() -> openssl::ex_data::Index<SslContext, tlslab_core::Pins> {
    static INDEX: OnceLock<openssl::ex_data::Index<SslContext, tlslab_core::Pins>> =
        OnceLock::new();
    // Unreachable from input: OpenSSL refuses a new index only when it cannot allocate.
    *INDEX
        .get_or_init(|| SslContext::new_ex_index().expect("OpenSSL has room for one ex_data index"))
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

/// The client's progress through one handshake, between OpenSSL calls: the messages seen so
/// far (the attempt records the rest).
#[derive(Debug, Default)]
struct Progress {
    messages: Vec<Message>,
    /// The server asked again for a key share.
    hello_retry: bool,
    /// `--pin` refused the server's key.
    pin_rejected: bool,
    /// The server certificate that was refused.
    rejected: Option<Vec<u8>>,
    /// The context holds a client certificate: OpenSSL sends it whenever the server asks.
    has_client_certificate: bool,
}

impl Progress {
    /// Mutual TLS: the client's CertificateVerify (15) is written once its signature is made,
    /// and the message before it (Certificate in TLS 1.3, ClientKeyExchange in TLS 1.2) was
    /// written just before the signing began, so the span between the two is the
    /// `client_signing` phase (OpenSSL has no hook around the signature itself; the span
    /// also holds the transcript hash, and in TLS 1.2 the master secret's derivation, a few
    /// microseconds). The message callback gives each message's size, headers included.
    fn client_signature(&self, attempt: &mut Attempt, observed: &Observed) {
        let sent = |message: &&SeenMessage| message.direction == Direction::Sent;
        let Some(verify_index) = observed
            .messages
            .iter()
            .position(|message| message.direction == Direction::Sent && message.kind == 15)
        else {
            return;
        };
        let verify = &observed.messages[verify_index];
        let before = observed.messages[..verify_index]
            .iter()
            .rev()
            .find(sent)
            .map(|message| message.at)
            .or_else(|| {
                self.messages
                    .iter()
                    .rev()
                    .find(|message| message.direction == Direction::Sent)
                    .map(|message| attempt.origin + std::time::Duration::from_nanos(message.at))
            });
        if let Some(start) = before {
            attempt.client_signature(start, verify.at);
        }
        let certificate = observed
            .messages
            .iter()
            .find(|message| message.direction == Direction::Sent && message.kind == 11)
            .map(|message| message.length as u64)
            .or_else(|| {
                self.messages
                    .iter()
                    .find(|message| message.direction == Direction::Sent && message.kind == 11)
                    .map(|message| message.length as u64)
            });
        attempt.client_certificate_bytes =
            certificate.map(|certificate| certificate + verify.length as u64);
    }

    fn apply(&mut self, attempt: &mut Attempt, observed: Observed) {
        self.hello_retry |= observed.hello_retry;
        self.pin_rejected |= observed.pin_rejected;
        if observed.rejected.is_some() {
            self.rejected = observed.rejected.clone();
        }
        let origin = attempt.origin;
        let since_origin = |at: Instant| at.saturating_duration_since(origin).as_nanos() as u64;
        // CertificateRequest (13); OpenSSL reports TLS 1.3's encrypted messages decrypted.
        if observed
            .messages
            .iter()
            .any(|message| message.direction == Direction::Received && message.kind == 13)
        {
            attempt.client_certificate = Some(self.has_client_certificate);
        }
        let sent = |kind: fn(u8) -> bool| {
            observed
                .messages
                .iter()
                .any(|message| message.direction == Direction::Sent && kind(message.kind))
        };
        let finished_written = sent(|kind| kind == 20);
        // The server's flight is every byte read before the client answers it (Finished, or
        // ClientKeyExchange in TLS 1.2), whatever the reads that carried it: its size must not
        // depend on where OpenSSL happened to start verifying.
        if sent(|kind| kind != 1) {
            attempt.server_flight_answered();
        }
        self.client_signature(attempt, &observed);
        self.messages
            .extend(observed.messages.iter().map(|message| Message {
                direction: message.direction,
                kind: message.kind,
                name: handshake_message_name(message.kind),
                length: message.length,
                at: since_origin(message.at),
            }));
        // The read that delivered the certificate completed the flight the client needs.
        // OpenSSL verifies the chain as soon as the Certificate message is in, where rustls
        // waits for CertificateVerify: when the flight spans several reads, OpenSSL overlaps
        // verification with the rest of the flight, and the events say so. Without
        // verification (insecure, resumed) the flight is complete when the client can answer
        // it.
        if observed.verify_start.is_some() || finished_written {
            attempt.server_flight_received();
        }
        attempt.verification(observed.verify_start, observed.verify_end);
        if finished_written {
            attempt.finished_due();
        }
    }

    /// Hands what OpenSSL wrote to the kernel.
    async fn flush(
        &mut self,
        attempt: &mut Attempt,
        tls: &mut SslStream<Pipe>,
        socket: &mut TimestampedStream,
    ) -> Result<(), Failure> {
        send(attempt, tls, socket).await
    }

    async fn read(
        &mut self,
        attempt: &mut Attempt,
        tls: &mut SslStream<Pipe>,
        socket: &mut TimestampedStream,
        buffer: &mut [u8],
    ) -> Result<(), Failure> {
        if receive(attempt, tls, socket, buffer).await? {
            Ok(())
        } else {
            Err(Failure::closed_during_handshake(attempt))
        }
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
            let refused = self.rejected.clone().or_else(|| {
                ssl.peer_certificate()
                    .and_then(|certificate| certificate.to_der().ok())
            });
            let code = verified.as_raw();
            let reason = if self.pin_rejected {
                "the server's public key is not pinned".to_string()
            } else if code == openssl_sys::X509_V_ERR_CERT_HAS_EXPIRED
                || code == openssl_sys::X509_V_ERR_CERT_NOT_YET_VALID
            {
                // The dates and the clock, as the rustls client says them; OpenSSL's words
                // when the server's own certificate is within its dates (an intermediate
                // is not).
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.as_secs() as i64);
                refused
                    .as_deref()
                    .and_then(|der| tlslab_backend::certificate::outside_validity(der, now))
                    .unwrap_or_else(|| verified.error_string().to_string())
            } else {
                verified.error_string().to_string()
            };
            // What the server sent, in words.
            let sent = refused
                .map(|der| {
                    format!(
                        ": the server sent {}",
                        tlslab_backend::certificate::describe(&der)
                    )
                })
                .unwrap_or_default();
            // No trusted issuer: who issued the last certificate sent (the intermediate an
            // incomplete chain lacks).
            let unknown_issuer = [
                openssl_sys::X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
                openssl_sys::X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
                openssl_sys::X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE,
            ]
            .contains(&code);
            let chain = ssl
                .peer_cert_chain()
                .filter(|_| unknown_issuer)
                .and_then(|chain| {
                    let chain: Vec<Vec<u8>> = chain
                        .iter()
                        .filter_map(|certificate| certificate.to_der().ok())
                        .collect();
                    tlslab_backend::certificate::chain_end(chain.iter().map(Vec::as_slice))
                })
                .map(|end| format!("; {end}"))
                .unwrap_or_default();
            return Failure::new(ErrorClass::Certificate, format!("{reason}{sent}{chain}"));
        }
        if let Some(alert) = received_alert(error) {
            return alert;
        }
        let class = if saw_server_hello {
            ErrorClass::Protocol
        } else {
            ErrorClass::NotTls
        };
        Failure::new(class, error.to_string())
    }
}

/// The alert the server sent, if that is what ended the connection: during the handshake,
/// or on the first read after it (TLS 1.3 servers refuse a client certificate, or the lack of
/// one, after the client's Finished).
fn received_alert(error: &openssl::ssl::Error) -> Option<Failure> {
    error.ssl_error()?.errors().iter().find_map(|entry| {
        let reason = openssl_sys::ERR_GET_REASON(entry.code());
        // OpenSSL reports a received alert as reason 1000 + its number.
        (1000..1256).contains(&reason).then(|| {
            let description = entry.reason().unwrap_or("unknown alert");
            Failure::new(
                ErrorClass::Alert,
                format!("alert {} ({description})", reason - 1000),
            )
        })
    })
}

/// Hands what OpenSSL wrote to the kernel, and reports it to the attempt.
async fn send(
    attempt: &mut Attempt,
    tls: &mut SslStream<Pipe>,
    socket: &mut TimestampedStream,
) -> Result<(), Failure> {
    let pipe = tls.get_mut();
    if pipe.outgoing.is_empty() {
        return Ok(());
    }
    let sent = socket
        .write_all(&pipe.outgoing, attempt.marks_next_send())
        .await
        .map_err(|error| Failure::io(&error))?;
    attempt.sent_at(pipe.outgoing.len(), sent);
    pipe.outgoing.clear();
    Ok(())
}

/// Reads once from the socket into the pipe; `Ok(false)` when the server closed the
/// connection.
async fn receive(
    attempt: &mut Attempt,
    tls: &mut SslStream<Pipe>,
    socket: &mut TimestampedStream,
    buffer: &mut [u8],
) -> Result<bool, Failure> {
    let (read, arrived) = socket
        .read(buffer)
        .await
        .map_err(|error| Failure::io(&error))?;
    if read == 0 {
        return Ok(false);
    }
    attempt.received_at(read, arrived);
    tls.get_mut().push(&buffer[..read]);
    Ok(true)
}

/// A completed handshake, still connected.
pub struct Established {
    /// What the handshake showed, for the attempt's Sample.
    pub observations: Observations,
    tls: SslStream<Pipe>,
    socket: TimestampedStream,
    buffer: Vec<u8>,
    plaintext: Plaintext,
}

impl std::fmt::Debug for Established {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Established")
            .field("observations", &self.observations)
            .finish_non_exhaustive()
    }
}

impl Channel for Established {
    fn write(&mut self, mut data: &[u8]) -> Result<(), Failure> {
        while !data.is_empty() {
            let written = self.tls.ssl_write(data).map_err(Failure::http)?;
            data = &data[written..];
        }
        Ok(())
    }

    async fn send(&mut self, attempt: &mut Attempt) -> Result<(), Failure> {
        send(attempt, &mut self.tls, &mut self.socket).await
    }

    async fn receive(&mut self, attempt: &mut Attempt) -> Result<bool, Failure> {
        receive(attempt, &mut self.tls, &mut self.socket, &mut self.buffer).await
    }

    /// Decrypts whatever application data the pipe holds (OpenSSL also processes tickets and
    /// key updates here).
    fn plaintext(&mut self) -> Result<&mut Plaintext, Failure> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.tls.ssl_read(&mut chunk) {
                Ok(count) => self.plaintext.data.extend_from_slice(&chunk[..count]),
                Err(error) if error.code() == ErrorCode::WANT_READ => break,
                Err(error) if error.code() == ErrorCode::ZERO_RETURN => {
                    self.plaintext.closed = true;
                    break;
                }
                Err(error) => {
                    return Err(received_alert(&error).unwrap_or_else(|| Failure::http(error)))
                }
            }
        }
        Ok(&mut self.plaintext)
    }

    fn is_tls13(&self) -> bool {
        self.tls.ssl().version2() == Some(SslVersion::TLS1_3)
    }

    async fn close(mut self, mode: CloseMode) {
        if mode == CloseMode::Graceful {
            let _ = self.tls.shutdown();
            let outgoing = std::mem::take(&mut self.tls.get_mut().outgoing);
            let _ = self.socket.write_all(&outgoing, false).await;
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
