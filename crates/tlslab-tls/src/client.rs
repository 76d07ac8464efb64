//! The instrumented rustls client: drives a `ClientConnection` by hand over a tokio TCP stream
//! and timestamps every phase of DESIGN §4 around the sans-IO calls; then, when the Config asks
//! for it, one HTTP request (sent as early data on 0-RTT Configs).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::ServerCertVerifier;
use rustls::client::{Resumption, Tls12Resumption};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::HandshakeKind;
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use tlslab_core::{
    CloseMode, EchStatus, ErrorClass, Event, Http, Negotiated, QuicPath, Response, Resume,
    Timeline, TlsVersion, Transport,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::probe::{
    observe, CountingSessionStore, NoVerification, Observed, Report, TimedVerifier,
    TrafficKeyProbe, VerifiedChains,
};
use crate::provider::{client_provider, group_name, rustls_version};

/// What a client offers and trusts: one Config's worth of client-side settings.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub version: TlsVersion,
    pub cipher: tlslab_core::Cipher,
    pub group: tlslab_core::Group,
    pub server_name: String,
    pub trust: Trust,
    pub resume: Resume,
    /// Bytes of early data (the request, padded) on resumed TLS 1.3 handshakes; 0 for none.
    pub early_data: u64,
    /// Skip re-verifying chains this client already verified.
    pub cert_cache: bool,
    pub transport: Transport,
    /// The request after the handshake, if any, and its path.
    pub http: Http,
    pub path: String,
    /// Encrypted ClientHello (TLS 1.3 only).
    pub ech: EchMode,
}

/// Encrypted ClientHello, as a client offers it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EchMode {
    /// No ECH extension.
    #[default]
    Off,
    /// Real ECH with this ECHConfigList (the binary list, as in an HTTPS DNS record).
    On(Vec<u8>),
    /// A GREASE ECH extension: the size and shape of ECH without a configuration.
    Grease,
}

impl ClientSettings {
    /// A fresh-handshake TLS-over-TCP client with no request: what most Configs are.
    pub fn handshake_only(
        version: TlsVersion,
        cipher: tlslab_core::Cipher,
        group: tlslab_core::Group,
        server_name: impl Into<String>,
        trust: Trust,
    ) -> ClientSettings {
        ClientSettings {
            version,
            cipher,
            group,
            server_name: server_name.into(),
            trust,
            resume: Resume::Off,
            early_data: 0,
            cert_cache: false,
            transport: Transport::Tcp,
            http: Http::None,
            path: "/".into(),
            ech: EchMode::Off,
        }
    }
}

/// Which certificates the client accepts.
#[derive(Debug, Clone)]
pub enum Trust {
    /// These roots only (the lab root, or `--ca`).
    Roots(Vec<CertificateDer<'static>>),
    /// The operating system's roots.
    System,
    /// Anything (`--insecure`): handshake signatures are still parsed, not checked.
    Insecure,
}

/// A failed attempt: its class and a description for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub class: ErrorClass,
    pub detail: String,
}

impl Failure {
    pub fn new(class: ErrorClass, detail: impl Into<String>) -> Self {
        Failure {
            class,
            detail: detail.into(),
        }
    }

    pub fn io(error: &std::io::Error) -> Self {
        Failure::new(ErrorClass::of_io_error(error), error.to_string())
    }

    /// Classifies a rustls error; `saw_server_hello` tells a garbage peer from a broken one.
    fn tls(error: rustls::Error, saw_server_hello: bool) -> Self {
        use rustls::Error;
        let class = match &error {
            Error::AlertReceived(_) => ErrorClass::Alert,
            Error::InvalidCertificate(_) => ErrorClass::Certificate,
            Error::InvalidMessage(_) | Error::InappropriateMessage { .. } if !saw_server_hello => {
                ErrorClass::NotTls
            }
            _ => ErrorClass::Protocol,
        };
        let detail = match &error {
            Error::AlertReceived(description) => {
                format!("alert {} ({description:?})", u8::from(*description))
            }
            other => other.to_string(),
        };
        Failure { class, detail }
    }
}

/// The measurements of one attempt, filled in as it goes so a failed or timed-out attempt
/// keeps what it observed.
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
    /// The bytes of the client's first flight (ClientHello and early data; over QUIC the
    /// datagrams sent before the server answered), kept when the replay probe wants them.
    pub captured: Option<Vec<Vec<u8>>>,
    /// Byte counts when the handshake ended: what the sample reports.
    handshake_bytes: Option<(u64, u64)>,
    last_read: Option<Instant>,
    finished_pending: bool,
    /// A QUIC attempt's observations, gathered on quinn's tasks; see [`Attempt::settle`].
    pub(crate) quic_log: Option<Arc<crate::quic::QuicLog>>,
}

impl Attempt {
    /// Starts an attempt now (the `start` event).
    pub fn start() -> Self {
        let origin = Instant::now();
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
            captured: None,
            handshake_bytes: None,
            last_read: None,
            finished_pending: false,
            quic_log: None,
        }
    }

    /// Records `HandshakeDone` now and freezes the byte counts the sample reports.
    fn handshake_done(&mut self) {
        self.mark(Event::HandshakeDone);
        self.handshake_bytes = Some((self.bytes_sent, self.bytes_received));
    }

    /// How long to wait for a session ticket after the handshake: tickets follow it within a
    /// round trip, so twice the attempt so far plus a margin is generous.
    pub fn ticket_patience(&self) -> Duration {
        self.origin.elapsed() * 2 + Duration::from_millis(100)
    }

    pub(crate) fn set_handshake_bytes(&mut self, bytes: (u64, u64)) {
        self.handshake_bytes = Some(bytes);
    }

    /// Bytes sent and received until the handshake ended (or until now, when it did not).
    pub fn handshake_bytes(&self) -> (u64, u64) {
        self.handshake_bytes
            .unwrap_or((self.bytes_sent, self.bytes_received))
    }

    /// Folds in what a QUIC attempt observed on quinn's tasks. Call it once the attempt is
    /// over, finished or cancelled by a timeout, so a cut-short attempt keeps its events.
    pub fn settle(&mut self) {
        if let Some(log) = self.quic_log.take() {
            log.settle_into(self);
        }
    }

    /// Records how far the response has come (first byte, status, body, done); returns
    /// whether it is complete. Shared by every client so they mark the same events.
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

    /// Records `event` now, unless it was already recorded.
    pub fn mark(&mut self, event: Event) {
        self.timeline.mark_once(event, self.origin, Instant::now());
    }

    fn apply(&mut self, observed: Observed) {
        let flight_arrived = self.last_read.unwrap_or(self.origin);
        if (observed.verify_start.is_some() || observed.traffic_keys.is_some())
            && self.server_flight_bytes.is_none()
        {
            self.server_flight_bytes = Some(self.bytes_received);
        }
        if let Some(start) = observed.verify_start {
            self.timeline
                .mark_once(Event::ServerFlightReceived, self.origin, flight_arrived);
            self.timeline
                .mark_once(Event::CertVerifyStart, self.origin, start);
        }
        if let Some(end) = observed.verify_end {
            if self.timeline.get(Event::CertVerifyStart).is_some() {
                // Signature checks after the chain extend verification, so always take the last.
                self.timeline.set(
                    Event::CertVerifyEnd,
                    end.saturating_duration_since(self.origin).as_nanos() as u64,
                );
            }
        }
        if let Some(scheme) = observed.signature_scheme {
            self.negotiated.signature_scheme = Some(format!("{scheme:?}"));
        }
        if observed.traffic_keys.is_some() {
            self.timeline
                .mark_once(Event::ServerFlightReceived, self.origin, flight_arrived);
            if self.timeline.get(Event::ClientFinishedSent).is_none() {
                self.finished_pending = true;
            }
        }
    }
}

/// One Config's client: a shared `ClientConfig` for fresh handshakes, and what it takes to
/// give each agent its own session cache when resuming.
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) config: Arc<ClientConfig>,
    /// The verifier inside the timing wrapper: QUIC attempts wrap it again with their own
    /// probes.
    pub(crate) verifier: Arc<dyn ServerCertVerifier>,
    pub(crate) cache: Option<Arc<VerifiedChains>>,
    pub(crate) server_name: ServerName<'static>,
    pub(crate) settings: ClientSettings,
    /// The request, encoded once: HTTP/1.1 or HTTP/2 bytes, or HTTP/3's request stream.
    pub(crate) request: Option<Vec<u8>>,
}

/// One agent's view of a [`Client`]: with resumption, its own session cache; over QUIC, its
/// own probes.
#[derive(Debug, Clone)]
pub struct AgentSession {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) store: Option<Arc<CountingSessionStore>>,
    /// QUIC: where this agent's probes report. An agent runs one attempt at a time, and the
    /// probes must stay the same objects across attempts: rustls resumes a ticket only with
    /// the verifier that verified the original handshake.
    pub(crate) observed: Option<Arc<std::sync::Mutex<Observed>>>,
}

/// tlslab's name for what rustls says became of ECH. After a completed handshake `Offered`
/// cannot remain; it would mean the server never answered the offer, which is a rejection.
fn ech_status(status: rustls::client::EchStatus) -> EchStatus {
    match status {
        rustls::client::EchStatus::NotOffered => EchStatus::NotOffered,
        rustls::client::EchStatus::Grease => EchStatus::Grease,
        rustls::client::EchStatus::Accepted => EchStatus::Accepted,
        rustls::client::EchStatus::Offered | rustls::client::EchStatus::Rejected => {
            EchStatus::Rejected
        }
    }
}

/// The wire version of an HTTP request dimension.
pub(crate) fn http_version(http: Http) -> Option<tlslab_http::Version> {
    match http {
        Http::None => None,
        Http::Http11 => Some(tlslab_http::Version::Http11),
        Http::Http2 => Some(tlslab_http::Version::Http2),
        Http::Http3 => Some(tlslab_http::Version::Http3),
    }
}

impl Client {
    pub fn new(settings: &ClientSettings) -> Result<Client, String> {
        let provider = client_provider(settings.version, settings.cipher, settings.group)?;
        let inner: Arc<dyn ServerCertVerifier> = match &settings.trust {
            Trust::Insecure => Arc::new(NoVerification {
                schemes: provider
                    .signature_verification_algorithms
                    .supported_schemes(),
            }),
            trust => {
                let mut roots = RootCertStore::empty();
                let certificates = match trust {
                    Trust::Roots(certificates) => certificates.clone(),
                    _ => {
                        let loaded = rustls_native_certs::load_native_certs();
                        if loaded.certs.is_empty() {
                            return Err(format!(
                                "no system root certificates could be loaded ({:?})",
                                loaded.errors
                            ));
                        }
                        loaded.certs
                    }
                };
                let (_, ignored) = roots.add_parsable_certificates(certificates);
                if roots.is_empty() {
                    return Err(format!(
                        "none of the {ignored} trusted certificates could be parsed"
                    ));
                }
                rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider.clone(),
                )
                .build()
                .map_err(|error| error.to_string())?
            }
        };
        let cache = settings
            .cert_cache
            .then(|| Arc::new(VerifiedChains::default()));
        let builder = ClientConfig::builder_with_provider(provider);
        let builder = match &settings.ech {
            EchMode::Off => builder.with_protocol_versions(&[rustls_version(settings.version)]),
            EchMode::On(list) => {
                let config = rustls::client::EchConfig::new(
                    rustls::pki_types::EchConfigListBytes::from(list.clone()),
                    rustls::crypto::aws_lc_rs::hpke::ALL_SUPPORTED_SUITES,
                )
                .map_err(|error| format!("the ECH configuration is unusable: {error}"))?;
                builder.with_ech(rustls::client::EchMode::Enable(config))
            }
            EchMode::Grease => {
                // The placeholder key is fresh per Config: GREASE only needs the shape.
                let suite = rustls::crypto::aws_lc_rs::hpke::DH_KEM_X25519_HKDF_SHA256_AES_128;
                let (public_key, _) = rustls::crypto::hpke::Hpke::generate_key_pair(suite)
                    .map_err(|error| format!("cannot make an ECH GREASE key: {error}"))?;
                builder.with_ech(rustls::client::EchMode::Grease(
                    rustls::client::EchGreaseConfig::new(suite, public_key),
                ))
            }
        };
        let mut config = builder
            .map_err(|error| error.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(TimedVerifier {
                inner: inner.clone(),
                cache: cache.clone(),
                report: Report::ThreadLocal,
            }))
            .with_no_client_auth();
        config.key_log = Arc::new(TrafficKeyProbe::default());
        // Fresh handshakes by default: no session cache at all is a fresh cache per attempt.
        config.resumption = Resumption::disabled();
        config.enable_early_data = settings.early_data > 0;
        let version = http_version(settings.http);
        config.alpn_protocols = match (settings.transport, version) {
            // QUIC needs an application protocol; without a request it still names HTTP/3.
            (Transport::Quic, _) => vec![b"h3".to_vec()],
            (Transport::Tcp, Some(version)) => vec![version.alpn().to_vec()],
            (Transport::Tcp, None) => Vec::new(),
        };
        let server_name = ServerName::try_from(settings.server_name.clone())
            .map_err(|_| format!("'{}' is not a valid server name", settings.server_name))?;
        let request = version.map(|version| {
            tlslab_http::encode_request(
                version,
                &tlslab_http::Request {
                    authority: &settings.server_name,
                    path: &settings.path,
                    min_size: settings.early_data as usize,
                },
            )
        });
        Ok(Client {
            config: Arc::new(config),
            verifier: inner,
            cache,
            server_name,
            settings: settings.clone(),
            request,
        })
    }

    /// A session for one agent: shared and cache-less for fresh handshakes, private with
    /// resumption.
    pub fn agent_session(&self) -> AgentSession {
        let quic = self.settings.transport == Transport::Quic;
        let tls12 = match self.settings.resume {
            Resume::Off if !quic => {
                return AgentSession {
                    config: self.config.clone(),
                    store: None,
                    observed: None,
                }
            }
            Resume::Off => None,
            Resume::Tickets => Some(Tls12Resumption::SessionIdOrTickets),
            Resume::SessionId => Some(Tls12Resumption::SessionIdOnly),
        };
        let mut config = (*self.config).clone();
        let store = tls12.map(|tls12| {
            let store = Arc::new(CountingSessionStore::new());
            config.resumption = Resumption::store(store.clone()).tls12_resumption(tls12);
            store
        });
        // quinn calls the probes from its own task: they report into the agent's record.
        let observed = quic.then(|| {
            let observed = Arc::new(std::sync::Mutex::new(Observed::default()));
            config.key_log = Arc::new(TrafficKeyProbe {
                report: Report::Shared(observed.clone()),
            });
            config
                .dangerous()
                .set_certificate_verifier(Arc::new(TimedVerifier {
                    inner: self.verifier.clone(),
                    cache: self.cache.clone(),
                    report: Report::Shared(observed.clone()),
                }));
            observed
        });
        AgentSession {
            config: Arc::new(config),
            store,
            observed,
        }
    }

    /// Runs a handshake on a connected stream. `attempt` holds the partial record when this
    /// fails or is cancelled by a timeout. On 0-RTT Configs the request goes out as early data
    /// with the ClientHello whenever the agent holds a ticket that allows it.
    pub async fn handshake(
        &self,
        session: &AgentSession,
        attempt: &mut Attempt,
        mut stream: TcpStream,
    ) -> Result<Established, Failure> {
        let tickets_before = session.store.as_ref().map(|s| s.tickets_received());
        let mut connection =
            ClientConnection::new(session.config.clone(), self.server_name.clone())
                .map_err(|error| Failure::new(ErrorClass::Protocol, error.to_string()))?;
        connection.set_buffer_limit(None);
        let mut sent_early = false;
        if let (Some(request), true) = (&self.request, self.settings.early_data > 0) {
            if let Some(mut early) = connection.early_data() {
                if early.bytes_left() >= request.len() {
                    early
                        .write_all(request)
                        .map_err(|error| Failure::new(ErrorClass::Protocol, error.to_string()))?;
                    sent_early = true;
                } else {
                    // The ticket allows less early data than the request: it goes 1-RTT, and
                    // the sample says 0-RTT did not happen.
                    attempt.negotiated.early_data = Some(false);
                }
            }
        }
        let mut buffer = vec![0u8; 32 * 1024];
        let mut outgoing = Vec::with_capacity(2048);
        flush(&mut connection, &mut stream, attempt, &mut outgoing).await?;
        if let (Some(captured), true) = (&mut attempt.captured, sent_early) {
            captured.push(outgoing.clone());
        }

        // With 0-RTT the server's answer follows its flight at once, often in the same read:
        // it is drained as it is decrypted, because rustls holds at most 16 KiB of it.
        let mut plaintext = Plaintext::default();
        while connection.is_handshaking() {
            if !read_draining(
                &mut connection,
                &mut stream,
                attempt,
                &mut buffer,
                Some(&mut plaintext),
            )
            .await?
            {
                return Err(closed_during_handshake(attempt));
            }
            flush(&mut connection, &mut stream, attempt, &mut outgoing).await?;
        }
        attempt.handshake_done();

        let negotiated = &mut attempt.negotiated;
        negotiated.version = connection.protocol_version().map(|v| match v {
            rustls::ProtocolVersion::TLSv1_2 => "1.2".to_string(),
            rustls::ProtocolVersion::TLSv1_3 => "1.3".to_string(),
            other => format!("{other:?}"),
        });
        negotiated.suite = connection
            .negotiated_cipher_suite()
            .map(|suite| format!("{:?}", suite.suite()));
        negotiated.group = connection
            .negotiated_key_exchange_group()
            .map(|group| group_name(group.name()));
        negotiated.alpn = connection
            .alpn_protocol()
            .map(|alpn| String::from_utf8_lossy(alpn).into_owned());
        if self.settings.resume != Resume::Off {
            negotiated.resumed = Some(connection.handshake_kind() == Some(HandshakeKind::Resumed));
        }
        negotiated.ech = Some(ech_status(connection.ech_status()));
        let early_accepted = sent_early && connection.is_early_data_accepted();
        if sent_early {
            negotiated.early_data = Some(early_accepted);
        }
        Ok(Established {
            connection,
            stream,
            buffer,
            outgoing,
            tickets_before,
            store: session.store.clone(),
            request: self.request.clone(),
            request_sent: early_accepted,
            version: http_version(self.settings.http),
            plaintext,
        })
    }
}

/// Decrypted application data, drained after every record batch: rustls holds at most 16 KiB
/// of it and refuses more ciphertext until it is read.
#[derive(Default)]
struct Plaintext {
    data: Vec<u8>,
    /// The server sent close_notify.
    closed: bool,
}

impl Plaintext {
    fn drain(&mut self, connection: &mut ClientConnection) -> Result<(), Failure> {
        let mut chunk = [0u8; 4096];
        loop {
            match connection.reader().read(&mut chunk) {
                Ok(0) => {
                    self.closed = true;
                    return Ok(());
                }
                Ok(count) => self.data.extend_from_slice(&chunk[..count]),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(error) => return Err(http_failure(error.to_string())),
            }
        }
    }
}

/// Reads from the socket into rustls; `Ok(false)` when the peer closed the connection.
async fn read_into(
    connection: &mut ClientConnection,
    stream: &mut TcpStream,
    attempt: &mut Attempt,
    buffer: &mut [u8],
) -> Result<bool, Failure> {
    read_draining(connection, stream, attempt, buffer, None).await
}

/// [`read_into`], draining application data into `plaintext` as it is decrypted.
async fn read_draining(
    connection: &mut ClientConnection,
    stream: &mut TcpStream,
    attempt: &mut Attempt,
    buffer: &mut [u8],
    mut plaintext: Option<&mut Plaintext>,
) -> Result<bool, Failure> {
    let read = stream
        .read(buffer)
        .await
        .map_err(|error| Failure::io(&error))?;
    let now = Instant::now();
    if read == 0 {
        return Ok(false);
    }
    attempt.bytes_received += read as u64;
    attempt
        .timeline
        .mark_once(Event::ServerHelloReceived, attempt.origin, now);
    attempt.last_read = Some(now);
    let mut data = &buffer[..read];
    while !data.is_empty() {
        connection
            .read_tls(&mut data)
            .map_err(|error| Failure::io(&error))?;
        let (processed, observed) = observe(|| connection.process_new_packets());
        attempt.apply(observed);
        if let Err(error) = processed {
            let saw_server_hello = connection.protocol_version().is_some();
            // Tell the server why we give up, as a real client would; failure to do so changes
            // nothing about the attempt.
            let mut alert = Vec::new();
            while connection.wants_write() {
                if connection.write_tls(&mut alert).is_err() {
                    break;
                }
            }
            let _ = stream.write_all(&alert).await;
            return Err(Failure::tls(error, saw_server_hello));
        }
        if let Some(plaintext) = plaintext.as_deref_mut() {
            plaintext.drain(connection)?;
        }
    }
    Ok(true)
}

async fn read_and_process(
    connection: &mut ClientConnection,
    stream: &mut TcpStream,
    attempt: &mut Attempt,
    buffer: &mut [u8],
) -> Result<(), Failure> {
    if read_into(connection, stream, attempt, buffer).await? {
        return Ok(());
    }
    Err(closed_during_handshake(attempt))
}

fn closed_during_handshake(attempt: &Attempt) -> Failure {
    let class = if attempt.timeline.get(Event::ServerHelloReceived).is_none() {
        ErrorClass::Reset
    } else {
        ErrorClass::Protocol
    };
    Failure::new(
        class,
        "the server closed the connection during the handshake",
    )
}

async fn flush(
    connection: &mut ClientConnection,
    stream: &mut TcpStream,
    attempt: &mut Attempt,
    outgoing: &mut Vec<u8>,
) -> Result<(), Failure> {
    if !connection.wants_write() {
        return Ok(());
    }
    outgoing.clear();
    while connection.wants_write() {
        connection
            .write_tls(outgoing)
            .map_err(|error| Failure::io(&error))?;
    }
    stream
        .write_all(outgoing)
        .await
        .map_err(|error| Failure::io(&error))?;
    let now = Instant::now();
    attempt.bytes_sent += outgoing.len() as u64;
    if attempt.timeline.get(Event::ClientHelloSent).is_none() {
        attempt
            .timeline
            .mark_once(Event::ClientHelloSent, attempt.origin, now);
        attempt.client_hello_bytes = Some(outgoing.len() as u64);
    } else if attempt.finished_pending {
        attempt
            .timeline
            .mark_once(Event::ClientFinishedSent, attempt.origin, now);
        attempt.finished_pending = false;
    }
    Ok(())
}

/// A completed handshake, still connected.
pub struct Established {
    connection: ClientConnection,
    stream: TcpStream,
    buffer: Vec<u8>,
    outgoing: Vec<u8>,
    tickets_before: Option<u64>,
    store: Option<Arc<CountingSessionStore>>,
    request: Option<Vec<u8>>,
    /// The request already went out as accepted early data.
    request_sent: bool,
    version: Option<tlslab_http::Version>,
    /// Application data decrypted during the handshake (a 0-RTT answer).
    plaintext: Plaintext,
}

/// A failure of the request after a successful handshake.
fn http_failure(detail: impl Into<String>) -> Failure {
    Failure::new(ErrorClass::Protocol, detail)
}

impl Established {
    /// Sends the Config's request (unless early data carried it) and reads the response,
    /// marking `first_byte` and `response_done`. Does nothing for Configs without a request.
    pub async fn exchange(&mut self, attempt: &mut Attempt) -> Result<(), Failure> {
        let (Some(request), Some(version)) = (self.request.take(), self.version) else {
            return Ok(());
        };
        if !self.request_sent {
            self.connection
                .writer()
                .write_all(&request)
                .map_err(|error| http_failure(error.to_string()))?;
            flush(
                &mut self.connection,
                &mut self.stream,
                attempt,
                &mut self.outgoing,
            )
            .await?;
        }
        let mut reader = tlslab_http::ResponseReader::new(version);
        // What arrived during the handshake, and what rustls decrypted since: with 0-RTT the
        // response may have come with the server's handshake flight.
        let mut plaintext = std::mem::take(&mut self.plaintext);
        plaintext.drain(&mut self.connection)?;
        loop {
            if !plaintext.data.is_empty() {
                let progress = reader
                    .feed(&plaintext.data)
                    .map_err(|error| http_failure(error.to_string()))?;
                plaintext.data.clear();
                if self.note(attempt, &mut reader, progress).await? {
                    return Ok(());
                }
            }
            let open = !plaintext.closed
                && read_draining(
                    &mut self.connection,
                    &mut self.stream,
                    attempt,
                    &mut self.buffer,
                    Some(&mut plaintext),
                )
                .await?;
            if !open && plaintext.data.is_empty() {
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
            let _ = self.connection.writer().write_all(&answer);
            flush(
                &mut self.connection,
                &mut self.stream,
                attempt,
                &mut self.outgoing,
            )
            .await?;
        }
        Ok(attempt.record_response(&progress))
    }

    /// With resumption under TLS 1.3, reads until the server's NewSessionTicket arrives (it
    /// follows the handshake) so the agent's next handshake can resume. Gives up quietly after
    /// `patience`: a server that issues no tickets just means the next handshake is full.
    pub async fn await_ticket(&mut self, attempt: &mut Attempt, patience: Duration) {
        let (Some(before), Some(store)) = (self.tickets_before, self.store.clone()) else {
            return;
        };
        if self.connection.protocol_version() != Some(rustls::ProtocolVersion::TLSv1_3) {
            return;
        }
        let wait = async {
            while store.tickets_received() == before {
                if read_and_process(
                    &mut self.connection,
                    &mut self.stream,
                    attempt,
                    &mut self.buffer,
                )
                .await
                .is_err()
                {
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
            self.connection.send_close_notify();
            let mut outgoing = Vec::new();
            while self.connection.wants_write() {
                if self.connection.write_tls(&mut outgoing).is_err() {
                    break;
                }
            }
            let _ = self.stream.write_all(&outgoing).await;
            let _ = self.stream.shutdown().await;
        }
    }
}

/// Replays a captured first flight (ClientHello with early data) on a new connection, reads
/// what the server answers for a moment, and closes. The lab server counts the replay.
pub async fn replay_tcp(
    address: std::net::SocketAddr,
    flight: &[u8],
    patience: Duration,
) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    stream.write_all(flight).await?;
    let mut buffer = vec![0u8; 16 * 1024];
    // The server's answer (a full handshake, since the ticket is spent) proves it processed
    // the ClientHello; the replayed client cannot finish it.
    let _ = tokio::time::timeout(patience, stream.read(&mut buffer)).await;
    Ok(())
}
