//! The instrumented rustls client: drives a `ClientConnection` by hand over a tokio TCP stream
//! and timestamps every phase of the phase model (docs/architecture.md, "Phases") around the
//! sans-IO calls; then, when the Config asks for it, one HTTP request (sent as early data on
//! 0-RTT Configs).

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use tlslab_backend::{
    AcceptanceWait, Attempt, Channel, ClientSettings, EchMode, Failure, Handshake, Plaintext,
    Request, Suite, TimestampedStream, Trust,
};

use rustls::client::danger::ServerCertVerifier;
use rustls::client::{Resumption, Tls12Resumption};
use rustls::pki_types::ServerName;
use rustls::HandshakeKind;
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use tlslab_core::{CloseMode, EchStatus, ErrorClass, Resume, Transport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::Error;
use crate::probe::{
    observe, CertificateRequestProbe, CountingSessionStore, KeyShareGuess, NoVerification,
    Observed, Report, TimedVerifier, TrafficKeyProbe, VerifiedChains,
};
use crate::provider::{client_provider, group_name, rustls_version};

/// Classifies a rustls error; `saw_server_hello` tells a garbage peer from a broken one.
pub(crate) fn tls_failure(error: rustls::Error, saw_server_hello: bool) -> Failure {
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
        // tlslab's own rejections say in words what the server sent.
        Error::InvalidCertificate(rustls::CertificateError::Other(other)) => {
            format!("invalid peer certificate: {}", other.0)
        }
        other => other.to_string(),
    };
    Failure::new(class, detail)
}

/// Reports what the probes saw during one `process_new_packets` call to the attempt: the
/// client reacted to the server's flight by verifying it or, without verification (as on
/// resumption), by deriving its application keys.
fn apply(attempt: &mut Attempt, observed: Observed, tls13: bool) {
    if observed.verify_start.is_some() || observed.traffic_keys.is_some() {
        attempt.server_flight_received();
        attempt.server_flight_answered();
    }
    if !observed.checked_nothing {
        attempt.verification(observed.verify_start, observed.verify_end);
    }
    if let Some(scheme) = observed.signature_scheme {
        attempt.negotiated.signature_scheme = Some(format!("{scheme:?}"));
    }
    if observed.traffic_keys.is_some() {
        attempt.finished_due();
    }
    if observed.client_certificate.is_some() {
        attempt.client_certificate = observed.client_certificate;
    }
    if let Some((start, end)) = observed.client_signature {
        attempt.client_signature(start, end);
        attempt.client_certificate_bytes = observed
            .client_certificate_sizes
            .map(|sizes| sizes.message_bytes(tls13));
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
    /// The client certificate resolver inside the probe: QUIC attempts wrap it again.
    pub(crate) client_certificates: Arc<dyn rustls::client::ResolvesClientCert>,
    pub(crate) server_name: ServerName<'static>,
    pub(crate) settings: ClientSettings,
    /// The request, encoded once: HTTP/1.1 or HTTP/2 bytes, or HTTP/3's request stream.
    pub(crate) request: Option<Request>,
    /// How long TLS 1.3 attempts over TCP wait for the server's acceptance.
    acceptance: Arc<AcceptanceWait>,
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

/// Whether the client validates the server's chain: not with `--insecure`. A `--pin` check
/// then (a hash of the key) is not counted as validation either, as in the OpenSSL client,
/// whose insecure callback checks pins untimed: `cert_validation` is NULL for every backend.
fn checks_certificates(settings: &ClientSettings) -> bool {
    !matches!(settings.trust, Trust::Insecure)
}

/// The certificate verifier `trust` asks for.
fn verifier(
    trust: &Trust,
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, Error> {
    let (certificates, given) = match trust {
        Trust::Insecure => {
            return Ok(Arc::new(NoVerification {
                schemes: provider
                    .signature_verification_algorithms
                    .supported_schemes(),
            }))
        }
        Trust::Roots(certificates) => (certificates.clone(), certificates.clone()),
        Trust::System => {
            let loaded = rustls_native_certs::load_native_certs();
            if loaded.certs.is_empty() {
                return Err(Error::NoSystemRoots(loaded.errors.into_iter().next()));
            }
            (loaded.certs, Vec::new())
        }
    };
    let mut roots = RootCertStore::empty();
    let (_, ignored) = roots.add_parsable_certificates(certificates);
    if roots.is_empty() {
        return Err(Error::UnusableRoots(ignored));
    }
    let roots = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(Error::Verifier)?;
    // Certificates given with --ca also count as the server's own, exactly, and a refusal
    // says what the server sent (trust.rs).
    Ok(Arc::new(crate::trust::RootsOrExact { roots, given }))
}

impl Client {
    /// A client for the Config's `settings`: refused here, once, when rustls cannot do what it asks.
    pub fn new(settings: &ClientSettings) -> Result<Client, Error> {
        let cipher = match settings.suite {
            Suite::Cipher(cipher) => cipher,
            Suite::Legacy(legacy) => {
                return Err(Error::Unsupported(format!(
                    "legacy suite {} needs OpenSSL (--client-backend openssl)",
                    legacy.iana_name()
                )))
            }
        };
        let provider = client_provider(settings.version, cipher, &settings.offered_groups())?;
        let inner = verifier(&settings.trust, &provider)?;
        let inner: Arc<dyn ServerCertVerifier> = match &settings.pins {
            Some(pins) => Arc::new(crate::trust::Pinned {
                inner,
                pins: pins.clone(),
            }),
            None => inner,
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
                .map_err(Error::Ech)?;
                builder.with_ech(rustls::client::EchMode::Enable(config))
            }
            EchMode::Grease => {
                // The placeholder key is fresh per Config: GREASE only needs the shape.
                let suite = rustls::crypto::aws_lc_rs::hpke::DH_KEM_X25519_HKDF_SHA256_AES_128;
                let (public_key, _) = rustls::crypto::hpke::Hpke::generate_key_pair(suite)?;
                builder.with_ech(rustls::client::EchMode::Grease(
                    rustls::client::EchGreaseConfig::new(suite, public_key),
                ))
            }
        };
        let builder = builder?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(TimedVerifier {
                inner: inner.clone(),
                cache: cache.clone(),
                report: Report::ThreadLocal,
                checks: checks_certificates(settings),
            }));
        let mut config = match &settings.client_certificate {
            // rustls checks that the key signs for the certificate, and that this provider
            // can sign with it.
            Some(certificate) => builder
                .with_client_auth_cert(certificate.chain.clone(), certificate.key.clone_key())
                .map_err(Error::ClientCertificate)?,
            None => builder.with_no_client_auth(),
        };
        let client_certificates = config.client_auth_cert_resolver.clone();
        config.client_auth_cert_resolver = Arc::new(CertificateRequestProbe {
            inner: client_certificates.clone(),
            report: Report::ThreadLocal,
        });
        config.key_log = Arc::new(TrafficKeyProbe {
            report: Report::ThreadLocal,
            file: settings.key_log.clone(),
        });
        // Fresh handshakes by default: no session cache at all is a fresh cache per attempt.
        config.resumption = match key_share_guess(settings) {
            Some(guess) => Resumption::store(Arc::new(KeyShareGuess(guess)))
                .tls12_resumption(Tls12Resumption::Disabled),
            None => Resumption::disabled(),
        };
        config.enable_early_data = settings.early_data > 0;
        config.alpn_protocols = match (settings.transport, settings.http_version()) {
            // QUIC needs an application protocol; without a request it still names HTTP/3.
            (Transport::Quic, _) => vec![b"h3".to_vec()],
            (Transport::Tcp, Some(version)) => vec![version.alpn().to_vec()],
            (Transport::Tcp, None) => Vec::new(),
        };
        let server_name = ServerName::try_from(settings.server_name.clone())
            .map_err(|_| Error::ServerName(settings.server_name.clone()))?;
        Ok(Client {
            config: Arc::new(config),
            verifier: inner,
            cache,
            client_certificates,
            server_name,
            settings: settings.clone(),
            request: settings.request(),
            acceptance: Arc::default(),
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
            let store =
                Arc::new(CountingSessionStore::new().with_guess(key_share_guess(&self.settings)));
            config.resumption = Resumption::store(store.clone()).tls12_resumption(tls12);
            store
        });
        // quinn calls the probes from its own task: they report into the agent's record.
        let observed = quic.then(|| {
            let observed = Arc::new(std::sync::Mutex::new(Observed::default()));
            config.key_log = Arc::new(TrafficKeyProbe {
                report: Report::Shared(observed.clone()),
                file: self.settings.key_log.clone(),
            });
            config
                .dangerous()
                .set_certificate_verifier(Arc::new(TimedVerifier {
                    inner: self.verifier.clone(),
                    cache: self.cache.clone(),
                    report: Report::Shared(observed.clone()),
                    checks: checks_certificates(&self.settings),
                }));
            config.client_auth_cert_resolver = Arc::new(CertificateRequestProbe {
                inner: self.client_certificates.clone(),
                report: Report::Shared(observed.clone()),
            });
            observed
        });
        AgentSession {
            config: Arc::new(config),
            store,
            observed,
        }
    }
}

impl tlslab_backend::Client for Client {
    type Agent = AgentSession;
    type Channel = Established;

    /// Runs a handshake on a connected stream. `attempt` holds the partial record when this
    /// fails or is cancelled by a timeout. On 0-RTT Configs the request goes out as early data
    /// with the ClientHello whenever the agent holds a ticket that allows it.
    async fn handshake(
        &self,
        session: &AgentSession,
        attempt: &mut Attempt,
        stream: TcpStream,
    ) -> Result<Handshake<Established>, Failure> {
        // Reads and writes timed by the kernel where it can (measurement rule 12).
        let mut stream = TimestampedStream::new(stream);
        let mut connection =
            ClientConnection::new(session.config.clone(), self.server_name.clone())
                .map_err(|error| Failure::new(ErrorClass::Protocol, error.to_string()))?;
        connection.set_buffer_limit(None);
        let mut sent_early = false;
        if let (Some(request), true) = (&self.request, self.settings.early_data > 0) {
            if let Some(mut early) = connection.early_data() {
                if early.bytes_left() >= request.bytes.len() {
                    early
                        .write_all(&request.bytes)
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
                &mut plaintext,
            )
            .await?
            {
                return Err(Failure::closed_during_handshake(attempt));
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
        if self.settings.resumes() {
            negotiated.resumed = Some(connection.handshake_kind() == Some(HandshakeKind::Resumed));
        }
        negotiated.ech = Some(ech_status(connection.ech_status()));
        negotiated.hello_retry =
            Some(connection.handshake_kind() == Some(HandshakeKind::FullWithHelloRetryRequest));
        let early_accepted = sent_early && connection.is_early_data_accepted();
        if sent_early {
            negotiated.early_data = Some(early_accepted);
        }
        Ok(Handshake {
            channel: Established {
                connection,
                stream,
                buffer,
                outgoing,
                plaintext,
            },
            request_sent: early_accepted,
        })
    }

    fn request(&self) -> Option<&Request> {
        self.request.as_ref()
    }

    fn tickets_received(&self, agent: &AgentSession) -> Option<u64> {
        agent.store.as_ref().map(|store| store.tickets_received())
    }

    fn acceptance(&self) -> &AcceptanceWait {
        &self.acceptance
    }

    fn agent(&self) -> AgentSession {
        self.agent_session()
    }
}

/// Decrypted application data, drained after every record batch: rustls holds at most 16 KiB
/// of it and refuses more ciphertext until it is read. The data is borrowed from rustls'
/// buffer (`BufRead`), not copied through a zeroed chunk first.
fn drain(connection: &mut ClientConnection, plaintext: &mut Plaintext) -> Result<(), Failure> {
    loop {
        let mut reader = connection.reader();
        match reader.fill_buf() {
            Ok([]) => {
                plaintext.closed = true;
                return Ok(());
            }
            Ok(data) => {
                let count = data.len();
                plaintext.data.extend_from_slice(data);
                reader.consume(count);
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(error) => return Err(Failure::http(error)),
        }
    }
}

/// Reads from the socket into rustls, draining application data into `plaintext` as it is
/// decrypted; `Ok(false)` when the peer closed the connection.
async fn read_draining(
    connection: &mut ClientConnection,
    stream: &mut TimestampedStream,
    attempt: &mut Attempt,
    buffer: &mut [u8],
    plaintext: &mut Plaintext,
) -> Result<bool, Failure> {
    let (read, arrived) = stream
        .read(buffer)
        .await
        .map_err(|error| Failure::io(&error))?;
    if read == 0 {
        return Ok(false);
    }
    attempt.received_at(read, arrived);
    let mut data = &buffer[..read];
    while !data.is_empty() {
        connection
            .read_tls(&mut data)
            .map_err(|error| Failure::io(&error))?;
        let (processed, observed) = observe(|| connection.process_new_packets());
        let tls13 = connection.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
        apply(attempt, observed, tls13);
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
            let _ = stream.write_all(&alert, false).await;
            return Err(tls_failure(error, saw_server_hello));
        }
        drain(connection, plaintext)?;
    }
    Ok(true)
}

async fn flush(
    connection: &mut ClientConnection,
    stream: &mut TimestampedStream,
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
    let sent = stream
        .write_all(outgoing, attempt.marks_next_send())
        .await
        .map_err(|error| Failure::io(&error))?;
    attempt.sent_at(outgoing.len(), sent);
    Ok(())
}

/// A completed handshake, still connected.
pub struct Established {
    connection: ClientConnection,
    stream: TimestampedStream,
    buffer: Vec<u8>,
    outgoing: Vec<u8>,
    /// Application data decrypted and not yet consumed (from the handshake on: a 0-RTT
    /// answer).
    plaintext: Plaintext,
}

impl Channel for Established {
    fn write(&mut self, data: &[u8]) -> Result<(), Failure> {
        self.connection
            .writer()
            .write_all(data)
            .map_err(Failure::http)
    }

    async fn send(&mut self, attempt: &mut Attempt) -> Result<(), Failure> {
        flush(
            &mut self.connection,
            &mut self.stream,
            attempt,
            &mut self.outgoing,
        )
        .await
    }

    async fn receive(&mut self, attempt: &mut Attempt) -> Result<bool, Failure> {
        read_draining(
            &mut self.connection,
            &mut self.stream,
            attempt,
            &mut self.buffer,
            &mut self.plaintext,
        )
        .await
    }

    fn plaintext(&mut self) -> Result<&mut Plaintext, Failure> {
        drain(&mut self.connection, &mut self.plaintext)?;
        Ok(&mut self.plaintext)
    }

    fn is_tls13(&self) -> bool {
        self.connection.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3)
    }

    async fn close(mut self, mode: CloseMode) {
        if mode == CloseMode::Graceful {
            self.connection.send_close_notify();
            let mut outgoing = Vec::new();
            while self.connection.wants_write() {
                if self.connection.write_tls(&mut outgoing).is_err() {
                    break;
                }
            }
            let _ = self.stream.write_all(&outgoing, false).await;
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

/// The named group of `settings`' wrong first key share, if it has one.
fn key_share_guess(settings: &ClientSettings) -> Option<rustls::NamedGroup> {
    settings
        .key_share_guess()
        .and_then(crate::provider::kx_group)
        .map(|group| group.name())
}
