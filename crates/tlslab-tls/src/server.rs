//! The lab server: rustls with every suite and group enabled, over TCP (a small sans-IO loop
//! under hyper, [`stream`]) and QUIC (quinn), serving the lab's site ([`tlslab_site`]) over
//! HTTP/1.1, HTTP/2 and HTTP/3.
//!
//! Resumption follows [`ServerResumption`]: none, stateless tickets, or a session cache whose
//! TLS 1.3 tickets are removed when used. The cache is what makes 0-RTT safe to accept: a
//! ticket, and the early data sent with it, is accepted once, and the [`Counters`] say how many
//! replays were turned away.

mod stream;

use std::collections::HashSet;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};
use rustls::{ServerConfig, ServerConnection};
use tlslab_backend::{CounterSnapshot, Counters, ServerSettings};
use tlslab_core::ServerResumption;
use tlslab_http::{RequestReader, Version};
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
        body: 0,
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

/// One lab server's TLS configurations (TCP and QUIC share sessions and tickets).
#[derive(Debug)]
pub struct Lab {
    tcp: Arc<ServerConfig>,
    quic: Arc<ServerConfig>,
    counters: Arc<Counters>,
    /// What every connection serves, counting its requests in `counters`.
    site: Site,
    body: u64,
}

impl Lab {
    pub fn new(
        certificates: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        settings: &ServerSettings,
    ) -> Result<Lab, Error> {
        let counters = Arc::<Counters>::default();
        let mut tcp = ServerConfig::builder_with_provider(server_provider())
            .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])?
            .with_no_client_auth()
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
        tcp.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let mut quic = ServerConfig::builder_with_provider(server_provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
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
            body: settings.body,
        })
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// The site this server serves, for its plain-text port.
    pub fn site(&self) -> &Site {
        &self.site
    }

    /// quinn's server configuration for this lab server.
    pub fn quic_config(&self) -> Result<quinn::ServerConfig, Error> {
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(self.quic.clone())
            .map_err(|error| Error::Quic(error.to_string()))?;
        Ok(quinn::ServerConfig::with_crypto(Arc::new(crypto)))
    }
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
    stream.set_nodelay(true)?;
    let mut connection = ServerConnection::new(lab.tcp.clone()).map_err(io::Error::other)?;
    // Responses larger than rustls' default 64 KiB plaintext buffer go out whole.
    connection.set_buffer_limit(None);
    let stream = stream::TlsStream::new(stream, connection, lab.counters.clone());
    // A failed handshake, a client that is not speaking HTTP or one that left: all end the
    // connection alike.
    let _ = lab.site.serve(stream).await;
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

async fn serve_quic_connection(incoming: quinn::Incoming, lab: Arc<Lab>) -> Result<(), String> {
    let connecting = incoming.accept().map_err(|error| error.to_string())?;
    // Accept 0-RTT streams and answer them at once (0.5-RTT data).
    let connection = match connecting.into_0rtt() {
        Ok((connection, _)) => connection,
        Err(connecting) => connecting.await.map_err(|error| error.to_string())?,
    };
    let mut control = connection
        .open_uni()
        .await
        .map_err(|error| error.to_string())?;
    let _ = control
        .write_all(&tlslab_http::http3_control_stream())
        .await;
    loop {
        tokio::select! {
            stream = connection.accept_bi() => {
                let Ok((send, receive)) = stream else { break };
                let lab = lab.clone();
                tokio::spawn(async move {
                    let _ = answer_http3(send, receive, lab).await;
                });
            }
            stream = connection.accept_uni() => {
                // The client's control and QPACK streams: read and dropped.
                let Ok(mut receive) = stream else { break };
                tokio::spawn(async move {
                    while let Ok(Some(_)) = receive.read_chunk(usize::MAX, true).await {}
                });
            }
        }
    }
    drop(control);
    Ok(())
}

async fn answer_http3(
    mut send: quinn::SendStream,
    mut receive: quinn::RecvStream,
    lab: Arc<Lab>,
) -> Result<(), String> {
    let mut reader = RequestReader::new(Version::Http3);
    loop {
        let chunk = receive
            .read_chunk(usize::MAX, true)
            .await
            .map_err(|error| error.to_string())?
            .ok_or("the request stream ended before a request")?;
        if let Some(request) = reader.feed(&chunk.bytes).map_err(|e| e.to_string())? {
            lab.counters.answered(1);
            let response =
                tlslab_http::encode_response(Version::Http3, request.stream, lab.body as usize);
            send.write_all(&response)
                .await
                .map_err(|error| error.to_string())?;
            send.finish().map_err(|error| error.to_string())?;
            // Wait until the peer has the response (or the connection ends) before dropping.
            let _ = send.stopped().await;
            return Ok(());
        }
    }
}
