//! The lab server: rustls with every suite and group enabled, over TCP (a small sans-IO loop
//! under hyper, [`stream`]) and QUIC (quinn, with h3), serving the lab's site ([`tlslab_site`]) over
//! HTTP/1.1, HTTP/2 and HTTP/3.
//!
//! Resumption follows [`ServerResumption`]: none, stateless tickets, or a session cache whose
//! TLS 1.3 tickets are removed when used. The cache is what makes 0-RTT safe to accept: a
//! ticket, and the early data sent with it, is accepted once, and the [`Counters`] say how many
//! replays were turned away.

mod stream;

use std::collections::HashSet;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Body;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};
use rustls::{ServerConfig, ServerConnection};
use tlslab_backend::{CounterSnapshot, Counters, ServerSettings};
use tlslab_core::ServerResumption;
use tlslab_site::Site;
use tokio::net::{TcpListener, TcpStream};

use crate::error::Error;
use crate::provider::server_provider;

/// How much early data the TCP server accepts per connection (rustls' limit is per ticket).
const MAX_EARLY_DATA: u32 = 16_384;

/// Sessions a cache keeps, and spent tickets remembered to recognise replays.
const CACHED_SESSIONS: usize = 65_536;
const REMEMBERED_TICKETS: usize = 262_144;

/// Server-side settings shared by every connection of one lab server instance.
///
/// With `resumption`, both mechanisms a production server offers: TLS 1.3 and 1.2 tickets, and
/// a stateful cache for TLS 1.2 clients that resume by session ID. Without it, no tickets and
/// no cache: a fresh-handshake measurement then holds no ticket-issuing work.
pub fn server_config(
    certificates: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    resumption: bool,
) -> Result<Arc<ServerConfig>, Error> {
    let settings = ServerSettings {
        resumption: if resumption {
            ServerResumption::Tickets
        } else {
            ServerResumption::Off
        },
        early_data: false,
        body: 0,
        client_roots: Vec::new(),
    };
    Ok(Lab::new(certificates, key, &settings)?.tcp)
}

/// Accepts TLS-over-TCP connections forever, one task each, for a bare `ServerConfig`.
pub async fn serve(listener: TcpListener, config: Arc<ServerConfig>) -> io::Result<()> {
    let counters = Arc::<Counters>::default();
    let lab = Arc::new(Lab {
        quic: config.clone(),
        tcp: config,
        site: Site::new(0, counters.clone()),
        counters,
    });
    serve_tcp(listener, lab).await
}

/// A session cache that counts redeemed tickets and recognises spent ones.
#[derive(Debug)]
struct CountingCache {
    inner: Arc<ServerSessionMemoryCache>,
    spent: Mutex<HashSet<Vec<u8>>>,
    counters: Arc<Counters>,
}

impl StoresServerSessions for CountingCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(key)
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let taken = self.inner.take(key);
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        match &taken {
            Some(_) => {
                self.counters.ticket_redeemed();
                // Bounded memory: forgetting old spent tickets only means a very late replay
                // is counted as an unknown ticket; it is refused either way.
                if spent.len() >= REMEMBERED_TICKETS {
                    spent.clear();
                }
                spent.insert(key.to_vec());
            }
            None if spent.contains(key) => {
                self.counters.replay_rejected();
            }
            None => {}
        }
        taken
    }

    fn can_cache(&self) -> bool {
        true
    }
}

/// Who may connect: anyone (no CertificateRequest), or, with `client_roots` (mutual TLS),
/// only a client whose certificate chains to one of them, verified by a [`TimedClientVerifier`]
/// that counts its time in `counters`. TCP and QUIC share the verifier, so both transports ask
/// and verify alike.
fn client_verifier(
    client_roots: &[CertificateDer<'static>],
    counters: &Arc<Counters>,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, Error> {
    if client_roots.is_empty() {
        return Ok(rustls::server::WebPkiClientVerifier::no_client_auth());
    }
    let mut roots = rustls::RootCertStore::empty();
    for root in client_roots {
        roots
            .add(root.clone())
            .map_err(|error| Error::ClientRoots(error.into()))?;
    }
    let inner = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        server_provider(),
    )
    .build()
    .map_err(|error| Error::ClientRoots(error.into()))?;
    Ok(Arc::new(TimedClientVerifier {
        inner,
        counters: counters.clone(),
    }))
}

/// The lab server's client certificate verifier, timed: the chain check and the
/// CertificateVerify signature check are summed into the server's [`Counters`], which the
/// run reads per trial (the server's share of what mutual TLS costs).
#[derive(Debug)]
struct TimedClientVerifier {
    inner: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    counters: Arc<Counters>,
}

impl rustls::server::danger::ClientCertVerifier for TimedClientVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        let start = std::time::Instant::now();
        let result = self
            .inner
            .verify_client_cert(end_entity, intermediates, now);
        self.counters.client_verified(start.elapsed());
        result
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let start = std::time::Instant::now();
        let result = self.inner.verify_tls12_signature(message, cert, dss);
        self.counters.client_verification_continued(start.elapsed());
        result
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let start = std::time::Instant::now();
        let result = self.inner.verify_tls13_signature(message, cert, dss);
        self.counters.client_verification_continued(start.elapsed());
        result
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }
}

/// One lab server's TLS configurations (TCP and QUIC share sessions and tickets).
#[derive(Debug)]
pub struct Lab {
    tcp: Arc<ServerConfig>,
    quic: Arc<ServerConfig>,
    counters: Arc<Counters>,
    /// What every connection serves, counting its requests in `counters`.
    site: Site,
}

impl Lab {
    /// A lab server presenting `certificates` (leaf first) with `key`, configured by `settings`.
    pub fn new(
        certificates: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        settings: &ServerSettings,
    ) -> Result<Lab, Error> {
        let counters = Arc::<Counters>::default();
        let client_verifier = client_verifier(&settings.client_roots, &counters)?;
        let mut tcp = ServerConfig::builder_with_provider(server_provider())
            .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])?
            .with_client_cert_verifier(client_verifier.clone())
            .with_single_cert(certificates.clone(), key.clone_key())?;
        match settings.resumption {
            ServerResumption::Off => {
                tcp.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
                tcp.send_tls13_tickets = 0;
            }
            ServerResumption::Tickets => {
                tcp.session_storage = ServerSessionMemoryCache::new(CACHED_SESSIONS);
                tcp.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new()?;
            }
            ServerResumption::Cache => {
                // No ticketer: TLS 1.3 tickets become cache keys, taken on use.
                tcp.session_storage = Arc::new(CountingCache {
                    inner: ServerSessionMemoryCache::new(CACHED_SESSIONS),
                    spent: Mutex::default(),
                    counters: counters.clone(),
                });
            }
        }
        // HTTP/1.0 too (`curl --http1.0` offers only it): hyper's HTTP/1 answers it; without
        // it in the list rustls would end such a handshake with `no_application_protocol`.
        tcp.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec(), b"http/1.0".to_vec()];
        let mut quic = ServerConfig::builder_with_provider(server_provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_client_cert_verifier(client_verifier)
            .with_single_cert(certificates, key)?;
        quic.session_storage = tcp.session_storage.clone();
        quic.ticketer = tcp.ticketer.clone();
        quic.send_tls13_tickets = tcp.send_tls13_tickets;
        quic.alpn_protocols = vec![b"h3".to_vec()];
        if settings.early_data {
            tcp.max_early_data_size = MAX_EARLY_DATA;
            // Answer a 0-RTT request right after the server's flight: that is what saves the
            // round trip.
            tcp.send_half_rtt_data = true;
            // QUIC signals 0-RTT support with this exact value (RFC 9001 §4.6.1).
            quic.max_early_data_size = u32::MAX;
        }
        Ok(Lab {
            tcp: Arc::new(tcp),
            quic: Arc::new(quic),
            site: Site::new(settings.body, counters.clone()),
            counters,
        })
    }

    /// What the server counted so far (tickets, early data, client verifications, requests).
    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// The site this server serves, for its plain-text port.
    pub fn site(&self) -> &Site {
        &self.site
    }

    /// quinn's server configuration for this lab server, with the transport of
    /// [`quic_transport`].
    pub fn quic_config(&self) -> Result<quinn::ServerConfig, Error> {
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(self.quic.clone())
            .map_err(Error::Quic)?;
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        config.transport_config(Arc::new(quic_transport()));
        Ok(config)
    }
}

/// The lab server's datagrams from its first packet: Cloudflare tokio-quiche's default
/// `max_send_udp_payload_size`.
pub const QUIC_DATAGRAM_BYTES: u16 = 1_350;

/// The lab server's QUIC transport, as Cloudflare's tokio-quiche (the QUIC library of its
/// HTTP/3 services) starts by default: [`QUIC_DATAGRAM_BYTES`] from the first packet, an
/// initial congestion window of ten of them (13,500 bytes: RFC 9002 §7.2's ten datagrams),
/// and no path MTU probing.
///
/// quinn's defaults start at 1,200 bytes with a 12,000-byte window and send a path MTU probe
/// (1,326–1,452 bytes) at the handshake's end, in the response's flight and inside that
/// window: a 10 kB HTTP/3 body then came 8 datagrams at once and the rest a round trip later,
/// while TCP's initial window (ten 1,448-byte segments, 14,480 bytes) carries it whole.
/// Google's quiche starts with 32 packets and sends its first MTU probe after 100 packets,
/// so neither spends its first flights on a probe. quinn's pacer stays on: its bursts are at
/// least ten datagrams, the whole initial window, so it never splits the first flight.
pub fn quic_transport() -> quinn::TransportConfig {
    let mut window = quinn::congestion::CubicConfig::default();
    window.initial_window(10 * u64::from(QUIC_DATAGRAM_BYTES));
    let mut transport = quinn::TransportConfig::default();
    transport
        .initial_mtu(QUIC_DATAGRAM_BYTES)
        .mtu_discovery_config(None)
        .congestion_controller_factory(Arc::new(window));
    transport
}

/// Accepts TLS-over-TCP connections forever, one task each.
pub async fn serve_tcp(listener: TcpListener, lab: Arc<Lab>) -> io::Result<()> {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let lab = lab.clone();
                tokio::spawn(async move {
                    let _ = serve_connection(stream, lab).await;
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

/// Runs one connection: hyper over the TLS stream, which drives the handshake as hyper reads.
async fn serve_connection(stream: TcpStream, lab: Arc<Lab>) -> io::Result<()> {
    tlslab_backend::server_socket::accepted(&stream)?;
    let mut connection = ServerConnection::new(lab.tcp.clone()).map_err(io::Error::other)?;
    // Responses larger than rustls' default 64 KiB plaintext buffer go out whole.
    connection.set_buffer_limit(None);
    let stream = stream::TlsStream::new(stream, connection, lab.counters.clone());
    // A failed handshake, a client that is not speaking HTTP or one that left: all end the
    // connection alike.
    let _ = lab.site.serve_tls(stream).await;
    Ok(())
}

/// Accepts QUIC connections forever, one task each; every connection answers HTTP/3 requests.
pub async fn serve_quic(endpoint: quinn::Endpoint, lab: Arc<Lab>) {
    while let Some(incoming) = endpoint.accept().await {
        let lab = lab.clone();
        tokio::spawn(async move {
            let _ = serve_quic_connection(incoming, lab).await;
        });
    }
}

/// Why a lab server's QUIC connection ended before it could answer requests.
#[derive(Debug, thiserror::Error)]
enum QuicConnectionError {
    /// The QUIC handshake failed or the client left.
    #[error("the QUIC connection failed")]
    Quic(#[from] quinn::ConnectionError),
    /// HTTP/3 could not start on the connection.
    #[error("HTTP/3 could not start")]
    Http3(#[from] h3::error::ConnectionError),
}

async fn serve_quic_connection(
    incoming: quinn::Incoming,
    lab: Arc<Lab>,
) -> Result<(), QuicConnectionError> {
    let connecting = incoming.accept()?;
    // Accept 0-RTT streams and answer them at once (0.5-RTT data).
    let connection = match connecting.into_0rtt() {
        Ok((connection, _)) => connection,
        Err(connecting) => connecting.await?,
    };
    let mut http3: h3::server::Connection<h3_quinn::Connection, Bytes> = h3::server::builder()
        // No reserved "grease" settings, frames or streams: every connection sends the same
        // bytes, and the measured response is only the response.
        .send_grease(false)
        .build(h3_quinn::Connection::new(connection))
        .await?;
    // Each request on a task of its own; the connection lives until the client closes it.
    while let Ok(Some(resolver)) = http3.accept().await {
        let site = lab.site.clone();
        tokio::spawn(async move {
            if let Ok((request, stream)) = resolver.resolve_request().await {
                let _ = answer_http3(&site, &request, stream).await;
            }
        });
    }
    Ok(())
}

/// Sends the site's answer to `request` on its stream (the request body, if any, is not
/// read: tlslab's client sends none).
async fn answer_http3(
    site: &Site,
    request: &hyper::Request<()>,
    mut stream: h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
) -> Result<(), h3::error::StreamError> {
    let (head, mut body) = site.answer(request).into_parts();
    stream
        .send_response(hyper::Response::from_parts(head, ()))
        .await?;
    while let Some(frame) =
        std::future::poll_fn(|context| Pin::new(&mut body).poll_frame(context)).await
    {
        // The site's bodies cannot fail, and have no trailers.
        let Ok(frame) = frame;
        if let Ok(data) = frame.into_data() {
            stream.send_data(data).await?;
        }
    }
    stream.finish().await
}
