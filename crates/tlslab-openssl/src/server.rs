//! The OpenSSL lab server: every TLS 1.2 and 1.3 suite and group OpenSSL offers, driven by
//! the same in-memory pipe as the client, under hyper, serving the lab's site
//! ([`tlslab_site`]) over HTTP/1.1 and HTTP/2, as the rustls lab server does over TCP.
//!
//! Resumption follows [`ServerResumption`]: none, stateless tickets, or a session cache whose
//! TLS 1.3 tickets are removed when used. The cache is what makes 0-RTT safe to accept: a
//! ticket, and the early data sent with it, is accepted once, and the [`Counters`] say how many
//! replays were turned away.

use std::collections::{HashMap, HashSet};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use openssl::pkey::PKey;
use openssl::ssl::{
    select_next_proto, AlpnError, ErrorCode, ShutdownState, Ssl, SslContext, SslContextBuilder,
    SslMethod, SslOptions, SslSession, SslSessionCacheMode, SslStream, SslVerifyMode, SslVersion,
};
use openssl::x509::X509;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tlslab_backend::server_socket::{self, Advance, ServerStream};
use tlslab_backend::{CounterSnapshot, Counters, ServerSettings};
use tlslab_core::{Group, ServerResumption};
use tlslab_site::Site;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::ech::EchKey;
use crate::ffi;
use crate::probe::Pipe;
use crate::settings::group_openssl_name;
use crate::Error;

/// Every TLS 1.3 suite OpenSSL implements, CCM included.
const TLS13_SUITES: &str = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:\
                            TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_CCM_SHA256";

/// Every TLS 1.2 suite with authentication: the AEAD suites, the CBC suites and the RSA key
/// transport suites a legacy Config may ask for.
const TLS12_SUITES: &str = "ALL:!aNULL:!eNULL";

/// The application protocols the server selects, in its order of preference (the rustls lab
/// server's). HTTP/1.0 too, which `curl --http1.0` offers alone: hyper's HTTP/1 answers it.
const ALPN: &[u8] = b"\x02h2\x08http/1.1\x08http/1.0";

/// How much early data the server accepts per connection, as the rustls lab server.
const MAX_EARLY_DATA: u32 = 16_384;

/// Sessions the cache keeps, and spent tickets remembered to recognise replays (the rustls lab
/// server's bounds).
const CACHED_SESSIONS: usize = 65_536;
const REMEMBERED_TICKETS: usize = 262_144;

/// A configured server: one `SSL_CTX` shared by every connection, and what they count.
#[derive(Clone)]
pub struct ServerConfig {
    context: SslContext,
    counters: Arc<Counters>,
    /// What every connection serves, counting its requests in `counters`.
    site: Site,
    body: u64,
    /// Connections read early data before completing the handshake.
    early_data: bool,
    /// TLS 1.3 tickets name cache entries, counted as redeemed when taken.
    cache: bool,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("body", &self.body)
            .field("early_data", &self.early_data)
            .field("counters", &self.counters.snapshot())
            .finish_non_exhaustive()
    }
}

/// Builds a server for `certificates` (leaf first, then intermediates, as tlslab-pki's
/// `ServedChain::certificates`) and the leaf's `key` (PKCS#8, PKCS#1 or SEC1 DER), accepting
/// ECH with `ech` when given.
///
/// Everything is enabled, so the client alone decides what a Config negotiates and one
/// server serves every client-side Config with the same certificate. Early data is accepted
/// only with the session cache: as in the rustls lab server, stateless tickets could be
/// replayed.
pub fn server_config(
    certificates: &[CertificateDer<'_>],
    key: &PrivateKeyDer<'_>,
    settings: &ServerSettings,
    ech: Option<&EchKey>,
) -> Result<Arc<ServerConfig>, Error> {
    let (leaf, intermediates) = certificates
        .split_first()
        .ok_or_else(|| Error::new("the server needs at least one certificate"))?;
    let mut builder = SslContextBuilder::new(SslMethod::tls_server())?;
    builder.set_min_proto_version(Some(SslVersion::TLS1_2))?;
    builder.set_max_proto_version(Some(SslVersion::TLS1_3))?;
    // Level 0: the lab server accepts whatever a client offers, including what OpenSSL's
    // default level refuses (SHA-1 signatures, small DH groups, from old clients); the
    // client's settings decide what a Config negotiates. The three legacy suites tlslab
    // offers would negotiate at the default level too.
    builder.set_security_level(0);
    builder.set_cipher_list(TLS12_SUITES)?;
    builder.set_ciphersuites(TLS13_SUITES)?;
    let groups: Vec<&str> = Group::ALL
        .iter()
        .map(|&group| group_openssl_name(group))
        .collect();
    builder.set_groups_list(&groups.join(":"))?;
    // SAFETY: the context is live.
    unsafe { ffi::set_dh_auto(builder.as_ptr()) };
    let leaf = X509::from_der(leaf)?;
    builder.set_certificate(&leaf)?;
    for intermediate in intermediates {
        builder.add_extra_chain_cert(X509::from_der(intermediate)?)?;
    }
    let key = PKey::private_key_from_der(key.secret_der())?;
    builder.set_private_key(&key)?;
    builder.check_private_key()?;
    // The session ID context also lets sessions of verified clients resume.
    builder.set_session_id_context(b"tlslab")?;
    let counters = Arc::<Counters>::default();
    if !settings.client_roots.is_empty() {
        for root in &settings.client_roots {
            let root = X509::from_der(root)?;
            // The context's store verifies client certificates; the CertificateRequest names
            // the root, so a client holding several certificates picks the lab's.
            builder.cert_store_mut().add_cert(root.clone())?;
            builder.add_client_ca(&root)?;
        }
        // Mutual TLS: every full handshake asks, and one without a certificate fails, as
        // nginx's `ssl_verify_client on` does.
        builder.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
        time_client_verification(&mut builder, &counters);
    }
    builder.set_alpn_select_callback(|_, offered| {
        // No common protocol: no ALPN at all (a client without ALPN speaks HTTP/1.1).
        select_next_proto(ALPN, offered).ok_or(AlpnError::NOACK)
    });
    match settings.resumption {
        ServerResumption::Off => {
            builder.set_session_cache_mode(SslSessionCacheMode::OFF);
            builder.set_options(SslOptions::NO_TICKET);
            builder.set_num_tickets(0)?;
        }
        ServerResumption::Tickets => {
            // Tickets decrypt without a cache: TLS 1.2 (RFC 5077) and TLS 1.3 alike.
            builder.set_session_cache_mode(SslSessionCacheMode::OFF);
        }
        ServerResumption::Cache => {
            // No internal cache: ours takes TLS 1.3 tickets out when they are used and counts
            // the replays. NO_TICKET makes TLS 1.2 resume by session ID and TLS 1.3 tickets
            // stateful (a cache key); NO_ANTI_REPLAY because the cache is the protection.
            builder.set_session_cache_mode(
                SslSessionCacheMode::SERVER | SslSessionCacheMode::NO_INTERNAL,
            );
            builder.set_options(
                SslOptions::NO_TICKET
                    | SslOptions::from_bits_retain(ffi::SSL_OP_NO_ANTI_REPLAY as _),
            );
            let cache = Arc::new(SessionCache {
                state: Mutex::default(),
                counters: counters.clone(),
            });
            let stored = cache.clone();
            builder.set_new_session_callback(move |_, session| stored.put(session));
            let found = cache.clone();
            // SAFETY: the sessions handed back come from this context's connections.
            unsafe { builder.set_get_session_callback(move |_, id| found.find(id)) };
            builder.set_remove_session_callback(move |_, session| cache.remove(session.id()));
        }
    }
    let early_data = settings.early_data && settings.resumption == ServerResumption::Cache;
    if early_data {
        builder.set_max_early_data(MAX_EARLY_DATA)?;
    }
    if let Some(key) = ech {
        let store = key.store()?;
        // SAFETY: both are live; the context takes its own copy of the store.
        if unsafe { ffi::SSL_CTX_set1_echstore(builder.as_ptr(), store.0) } != 1 {
            return Err(Error::openssl("OpenSSL did not accept the ECH store"));
        }
    }
    Ok(Arc::new(ServerConfig {
        context: builder.build(),
        site: Site::new(settings.body, counters.clone()),
        counters,
        cache: settings.resumption == ServerResumption::Cache,
        body: settings.body,
        early_data,
    }))
}

/// Mutual TLS: times the server's checks of each client certificate into `counters`: the
/// chain (`X509_verify_cert`, inside the verification callback) and the CertificateVerify
/// signature (from the message callback's report of the client's CertificateVerify, made
/// before OpenSSL checks it, to its report of the next message, the client's Finished, which
/// the client writes in the same flight and so is read in the same call on loopback; on a
/// slow link a Finished split from its CertificateVerify would add that wait).
fn time_client_verification(builder: &mut SslContextBuilder, counters: &Arc<Counters>) {
    // One reference per context, handed to OpenSSL for the context's lifetime: connections
    // hold the context, so it may outlive this `ServerConfig`, and the counters must too.
    // A lab server makes one context, so this is not a growing leak.
    let counters = Arc::into_raw(counters.clone()) as *mut libc::c_void;
    // SAFETY: the context is live; the callbacks only read `counters` through `arg`, which
    // stays valid for the rest of the process.
    unsafe {
        ffi::SSL_CTX_set_cert_verify_callback(builder.as_ptr(), Some(timed_client_chain), counters);
        ffi::SSL_CTX_set_msg_callback(builder.as_ptr(), Some(timed_client_signature));
        openssl_sys::SSL_CTX_ctrl(
            builder.as_ptr(),
            ffi::SSL_CTRL_SET_MSG_CALLBACK_ARG,
            0,
            counters,
        );
    }
}

/// `X509_verify_cert` on the client's chain, timed.
unsafe extern "C" fn timed_client_chain(
    context: *mut openssl_sys::X509_STORE_CTX,
    arg: *mut libc::c_void,
) -> libc::c_int {
    let start = std::time::Instant::now();
    // SAFETY: OpenSSL calls this with its live verification context; `arg` is the server
    // context's counters, which the lab server keeps for as long as the context.
    let result = unsafe { openssl_sys::X509_verify_cert(context) };
    // SAFETY: as above: null or the live counters.
    if let Some(counters) = unsafe { (arg as *const Counters).as_ref() } {
        counters.client_verified(start.elapsed());
    }
    result
}

thread_local! {
    /// The connection whose client CertificateVerify this thread is checking, and since when.
    static CHECKING_SIGNATURE: std::cell::Cell<Option<(usize, std::time::Instant)>> =
        const { std::cell::Cell::new(None) };
}

/// The server's message callback: a received CertificateVerify (15) starts the signature
/// check, the next message received on the same connection ends it.
unsafe extern "C" fn timed_client_signature(
    write_p: libc::c_int,
    _version: libc::c_int,
    content_type: libc::c_int,
    buf: *const libc::c_void,
    len: libc::size_t,
    ssl: *mut openssl_sys::SSL,
    arg: *mut libc::c_void,
) {
    if write_p != 0 || content_type != ffi::SSL3_RT_HANDSHAKE || buf.is_null() || len == 0 {
        return;
    }
    let now = std::time::Instant::now();
    // SAFETY: OpenSSL passes `len` readable bytes; the first is the handshake type.
    let kind = unsafe { *(buf as *const u8) };
    let connection = ssl as usize;
    if let Some((checking, since)) = CHECKING_SIGNATURE.with(std::cell::Cell::take) {
        if checking == connection {
            // SAFETY: `arg` is null or the server context's counters, which the lab server
            // keeps for as long as the context.
            if let Some(counters) = unsafe { (arg as *const Counters).as_ref() } {
                counters.client_verification_continued(now.saturating_duration_since(since));
            }
        }
    }
    if kind == 15 {
        CHECKING_SIGNATURE.with(|cell| cell.set(Some((connection, now))));
    }
}

/// The `Cache` mode's sessions: TLS 1.2 sessions stay until evicted (a session ID resumes any
/// number of times); TLS 1.3 sessions are taken out when their ticket is presented, and the
/// ticket is remembered as spent.
struct SessionCache {
    state: Mutex<CacheState>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct CacheState {
    sessions: HashMap<Vec<u8>, SslSession>,
    spent: HashSet<Vec<u8>>,
}

impl SessionCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn put(&self, session: SslSession) {
        let mut state = self.lock();
        if state.sessions.len() >= CACHED_SESSIONS {
            // Full: forget one; its holder's next handshake is a full one.
            if let Some(evicted) = state.sessions.keys().next().cloned() {
                state.sessions.remove(&evicted);
            }
        }
        state.sessions.insert(session.id().to_vec(), session);
    }

    fn find(&self, id: &[u8]) -> Option<SslSession> {
        let mut state = self.lock();
        let tls13 = match state.sessions.get(id) {
            Some(session) => session.protocol_version() == SslVersion::TLS1_3,
            None => {
                if state.spent.contains(id) {
                    self.counters.replay_rejected();
                }
                return None;
            }
        };
        if !tls13 {
            return state.sessions.get(id).cloned();
        }
        // Bounded memory: forgetting old spent tickets only means a very late replay is
        // counted as an unknown ticket; it is refused either way.
        if state.spent.len() >= REMEMBERED_TICKETS {
            state.spent.clear();
        }
        state.spent.insert(id.to_vec());
        // Counted when taken, as the rustls lab does: a replayed first flight never completes
        // its handshake, and the replay probe must still see a ticket accepted twice.
        self.counters.ticket_redeemed();
        state.sessions.remove(id)
    }

    fn remove(&self, id: &[u8]) {
        self.lock().sessions.remove(id);
    }
}

/// Accepts connections forever, one task each.
pub async fn serve(listener: TcpListener, config: Arc<ServerConfig>) -> io::Result<()> {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let config = config.clone();
                tokio::spawn(async move {
                    let _ = serve_connection(stream, &config).await;
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

/// Runs one connection: hyper over the TLS stream, which drives the handshake (reading early
/// data first when the server accepts it) as hyper reads. Application data that is not HTTP
/// gets a 400 or a closed connection.
pub async fn serve_connection(socket: TcpStream, config: &ServerConfig) -> io::Result<()> {
    server_socket::accepted(&socket)?;
    let mut ssl = Ssl::new(&config.context).map_err(io::Error::other)?;
    ssl.set_accept_state();
    let tls = SslStream::new(ssl, Pipe::default()).map_err(io::Error::other)?;
    let stream = TlsStream {
        socket,
        tls,
        counters: config.counters.clone(),
        cache: config.cache,
        stage: if config.early_data {
            Stage::EarlyData
        } else {
            Stage::Handshake
        },
        counted_early: false,
        held: Vec::new(),
        incoming: vec![0; READ_SIZE].into_boxed_slice(),
        sent: 0,
        failure: None,
        unacknowledged: false,
    };
    // A failed handshake, a client that is not speaking HTTP or one that left: all end the
    // connection alike.
    let _ = config.site.serve_tls(stream).await;
    Ok(())
}

/// How many bytes one read from the socket takes: a full TLS record and its header.
const READ_SIZE: usize = 18 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// `SSL_read_early_data`: the handshake up to the client's Finished, and 0-RTT data.
    EarlyData,
    /// `SSL_accept` until the handshake completes.
    Handshake,
    /// Application data.
    Open,
}

/// One OpenSSL connection of the lab server, seen as plaintext: each read runs OpenSSL as far
/// as the bytes already received allow, then sends what it wrote to the pipe before waiting
/// for more.
struct TlsStream {
    socket: TcpStream,
    tls: SslStream<Pipe>,
    counters: Arc<Counters>,
    /// TLS 1.3 tickets name cache entries, counted as redeemed when taken.
    cache: bool,
    stage: Stage,
    counted_early: bool,
    /// Plaintext written while OpenSSL could not take it (neither early-data writing nor the
    /// handshake finished), sent once the handshake completes.
    held: Vec<u8>,
    incoming: Box<[u8]>,
    /// How much of the pipe's outgoing bytes the socket has taken.
    sent: usize,
    /// A failed handshake's error, returned once the alert OpenSSL queued has been sent.
    failure: Option<io::Error>,
    /// The handshake just ended with the client's message and nothing went back since: the
    /// client's Finished waits for an ACK that no data of ours carries
    /// ([`server_socket::acknowledge_now`] says why that stalls a client with Nagle on).
    unacknowledged: bool,
}

impl Drop for TlsStream {
    fn drop(&mut self) {
        // hyper drops a connection it gave up on (a request that is not HTTP, an error)
        // without shutting it down: the client still gets close_notify, not a bare TCP close
        // it could take for a truncation, as far as the socket takes it without waiting.
        if self.stage == Stage::Open {
            let _ = self.tls.shutdown();
            let outgoing = &self.tls.get_ref().outgoing;
            while self.sent < outgoing.len() {
                match self.socket.try_write(&outgoing[self.sent..]) {
                    Ok(written) if written > 0 => self.sent += written,
                    _ => break,
                }
            }
        }
        // Clients end finished connections with a reset or without close_notify; freed
        // without a shutdown, OpenSSL would remove the session from the cache as if the
        // connection had failed, and no client could resume it.
        self.tls
            .set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
    }
}

fn failed(error: openssl::ssl::Error) -> io::Error {
    io::Error::other(error)
}

/// What one step of OpenSSL gave.
enum Step {
    /// Plaintext for the reader, or the end of the stream.
    Read,
    /// OpenSSL needs more bytes from the client.
    WantRead,
}

impl TlsStream {
    /// Writes what OpenSSL put in the pipe (flights, tickets, alerts, records) to the socket.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let outgoing = &mut self.tls.get_mut().outgoing;
            if self.sent == outgoing.len() {
                outgoing.clear();
                self.sent = 0;
                return Poll::Ready(Ok(()));
            }
            let written =
                ready!(Pin::new(&mut self.socket).poll_write(cx, &outgoing[self.sent..]))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += written;
            // These bytes carry the ACK of everything received.
            self.unacknowledged = false;
        }
    }

    /// Runs OpenSSL one step further with the bytes already received.
    fn step(&mut self, buffer: &mut ReadBuf<'_>) -> io::Result<Step> {
        loop {
            match self.stage {
                Stage::EarlyData => match self.tls.read_early_data(buffer.initialize_unfilled()) {
                    // The end of early data, or none was sent or accepted.
                    Ok(0) => self.stage = Stage::Handshake,
                    Ok(count) => {
                        if !self.counted_early {
                            self.counted_early = true;
                            self.counters.early_data_accepted();
                        }
                        buffer.advance(count);
                        return Ok(Step::Read);
                    }
                    Err(error) if error.code() == ErrorCode::WANT_READ => {
                        return Ok(Step::WantRead)
                    }
                    Err(error) => return Err(failed(error)),
                },
                Stage::Handshake => match self.tls.accept() {
                    Ok(()) => {
                        self.stage = Stage::Open;
                        // Cache tickets were counted when taken (a replay never gets here).
                        let ssl = self.tls.ssl();
                        let taken = self.cache && ssl.version2() == Some(SslVersion::TLS1_3);
                        if ssl.session_reused() && !taken {
                            self.counters.ticket_redeemed();
                        }
                        let held = std::mem::take(&mut self.held);
                        write_all(&held, |data| self.tls.ssl_write(data)).map_err(failed)?;
                        // Ended by the client, with no tickets (nor anything else) to send
                        // back.
                        if self.tls.get_ref().outgoing.len() == self.sent {
                            self.unacknowledged = true;
                        }
                    }
                    Err(error) if error.code() == ErrorCode::WANT_READ => {
                        return Ok(Step::WantRead)
                    }
                    Err(error) => return Err(failed(error)),
                },
                Stage::Open => match self.tls.ssl_read(buffer.initialize_unfilled()) {
                    Ok(count) => {
                        buffer.advance(count);
                        return Ok(Step::Read);
                    }
                    Err(error) if error.code() == ErrorCode::WANT_READ => {
                        return Ok(Step::WantRead)
                    }
                    // The client's close_notify: the end of the stream; ours goes back when
                    // hyper shuts the stream down.
                    Err(error) if error.code() == ErrorCode::ZERO_RETURN => return Ok(Step::Read),
                    Err(error) => return Err(failed(error)),
                },
            }
        }
    }
}

impl ServerStream for TlsStream {
    fn failure(&mut self) -> &mut Option<io::Error> {
        &mut self.failure
    }

    fn advance(&mut self, buffer: &mut ReadBuf<'_>) -> Advance {
        match self.step(buffer) {
            Ok(Step::Read) => Advance::Done(Ok(())),
            Ok(Step::WantRead) => Advance::NeedBytes,
            Err(error) => {
                self.failure = Some(error);
                Advance::Again
            }
        }
    }

    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        TlsStream::poll_send(self, cx)
    }

    fn unacknowledged(&mut self) -> &mut bool {
        &mut self.unacknowledged
    }

    fn socket_and_buffer(&mut self) -> (&mut TcpStream, &mut [u8]) {
        (&mut self.socket, &mut self.incoming)
    }

    fn received(&mut self, count: usize) {
        self.tls.get_mut().push(&self.incoming[..count]);
    }

    fn ended(&mut self, _: &mut ReadBuf<'_>) -> io::Result<()> {
        // The client left (most do without close_notify): the end of the stream.
        Ok(())
    }
}

impl tlslab_site::Negotiated for TlsStream {
    fn protocol(&self) -> Option<&[u8]> {
        self.tls.ssl().selected_alpn_protocol()
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        server_socket::poll_read(self.get_mut(), cx, buffer)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Backpressure: no new plaintext while the previous records are still on their way.
        ready!(this.poll_send(cx))?;
        let written = if this.stage == Stage::Open {
            this.tls.ssl_write(data)
        } else {
            // 0.5-RTT: an answer to early data follows the server's flight at once.
            this.tls.write_early_data(data)
        };
        let taken = match written {
            Ok(count) => count,
            // Not yet: OpenSSL writes early only once early data was read (and not at all
            // without 0-RTT); the rest waits for the handshake to complete.
            Err(_) if this.stage != Stage::Open => {
                this.held.extend_from_slice(data);
                data.len()
            }
            Err(error) => return Poll::Ready(Err(failed(error))),
        };
        // Out now, not at the next flush: that is what answers 0-RTT a round trip early.
        if let Poll::Ready(Err(error)) = this.poll_send(cx) {
            return Poll::Ready(Err(error));
        }
        Poll::Ready(Ok(taken))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.socket).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.stage == Stage::Open {
            // close_notify, once; a second call finds it sent and does nothing.
            let _ = this.tls.shutdown();
        }
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.socket).poll_shutdown(cx)
    }
}

fn write_all(
    mut data: &[u8],
    mut write: impl FnMut(&[u8]) -> Result<usize, openssl::ssl::Error>,
) -> Result<(), openssl::ssl::Error> {
    while !data.is_empty() {
        let written = write(data)?;
        data = &data[written..];
    }
    Ok(())
}

impl ServerConfig {
    /// The site this server serves, for its plain-text port.
    pub fn site(&self) -> &Site {
        &self.site
    }

    /// The raw context, for settings this crate does not wrap.
    pub fn context(&self) -> &SslContext {
        &self.context
    }

    /// What the server has counted so far: resumed handshakes (`tickets_redeemed`, in every
    /// resumption mode; a `Cache` TLS 1.3 ticket counts when it is taken, so an accepted replay
    /// counts even though its handshake never completes), spent `Cache` tickets presented
    /// again (`replays_rejected`),
    /// connections whose early data was read (`early_data_accepted`), and HTTP requests
    /// answered.
    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }
}

// The context is only read after it is built; OpenSSL locks what connections share.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ServerConfig>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_chain_is_refused() {
        let key = PrivateKeyDer::Pkcs8(Vec::<u8>::new().into());
        let error = server_config(&[], &key, &ServerSettings::default(), None).unwrap_err();
        assert!(error.to_string().contains("at least one certificate"));
    }
}
