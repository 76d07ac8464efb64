//! Feature parity with the rustls backend over TCP, on 127.0.0.1: HTTP requests, resumption
//! by tickets and by a session cache, 0-RTT and its replay protection, between the OpenSSL
//! client and server, and across backends with the rustls client and lab server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tlslab_backend::{
    await_ticket, exchange, Attempt, Channel, Client as BackendClient, ClientSettings,
    CounterSnapshot, Handshake, ServerSettings, Trust,
};
use tlslab_core::{
    CertProfile, Cipher, CloseMode, Event, Group, Http, Response, Resume, ServerResumption,
    TlsVersion,
};
use tlslab_openssl::{server_config, AgentSession, Client, ServerConfig};
use tlslab_pki::{Pki, ServedChain};
use tlslab_tls::server::Lab;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BODY: u64 = 70_000;
const PATIENCE: Duration = Duration::from_secs(2);

fn chain() -> ServedChain {
    Pki::open(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tlslab-openssl-pki"))
        .unwrap()
        .chain(CertProfile::EcdsaP256, 2)
        .unwrap()
}

async fn openssl_server(chain: &ServedChain, settings: ServerSettings) -> Server {
    let config = server_config(&chain.certificates, &chain.private_key, &settings, None).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(tlslab_openssl::serve(listener, config.clone()));
    Server::OpenSsl(address, config)
}

async fn rustls_lab(chain: &ServedChain, settings: ServerSettings) -> Server {
    let lab = Arc::new(
        Lab::new(
            chain.certificates.clone(),
            chain.private_key.clone_key(),
            &settings,
        )
        .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(tlslab_tls::server::serve_tcp(listener, lab.clone()));
    Server::Rustls(address, lab)
}

/// Both lab servers for the same settings.
async fn both_servers(chain: &ServedChain, settings: ServerSettings) -> [Server; 2] {
    [
        openssl_server(chain, settings.clone()).await,
        rustls_lab(chain, settings).await,
    ]
}

enum Server {
    OpenSsl(SocketAddr, Arc<ServerConfig>),
    Rustls(SocketAddr, Arc<Lab>),
}

impl Server {
    fn address(&self) -> SocketAddr {
        match self {
            Server::OpenSsl(address, _) | Server::Rustls(address, _) => *address,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Server::OpenSsl(..) => "openssl server",
            Server::Rustls(..) => "rustls lab",
        }
    }

    fn counters(&self) -> CounterSnapshot {
        match self {
            Server::OpenSsl(_, config) => config.counters(),
            Server::Rustls(_, lab) => lab.counters(),
        }
    }
}

fn lab_settings(resumption: ServerResumption, early_data: bool, body: u64) -> ServerSettings {
    ServerSettings {
        resumption,
        early_data,
        body,
        client_roots: Vec::new(),
    }
}

/// The settings of a fresh-handshake client without a request, for either backend.
fn options(version: TlsVersion, chain: &ServedChain) -> ClientSettings {
    ClientSettings::handshake_only(
        version,
        Cipher::Aes128Gcm,
        Group::X25519,
        "localhost",
        Trust::Roots(vec![chain.root.clone()]),
    )
}

fn rustls_settings(version: TlsVersion, chain: &ServedChain) -> ClientSettings {
    options(version, chain)
}

/// One OpenSSL attempt as the engine runs it: handshake, request, ticket, close.
async fn openssl_attempt(client: &Client, session: &AgentSession, address: SocketAddr) -> Attempt {
    openssl_capturing(client, session, address, false).await
}

async fn openssl_capturing(
    client: &Client,
    session: &AgentSession,
    address: SocketAddr,
    capture: bool,
) -> Attempt {
    let mut attempt = Attempt::start();
    if capture {
        attempt.captured = Some(Vec::new());
    }
    let stream = TcpStream::connect(address).await.unwrap();
    attempt.mark(Event::TcpConnected);
    let tickets_before = client.tickets_received(session);
    let handshake = client
        .handshake(session, &mut attempt, stream)
        .await
        .unwrap_or_else(|failure| panic!("{failure:?}"));
    // The server's flight, up to the client's answer, is recorded when the handshake ends.
    assert!(attempt.server_flight_bytes.is_some_and(|bytes| bytes > 0));
    after_handshake(client, session, &mut attempt, handshake, tickets_before).await;
    attempt
}

/// The same with the rustls client.
async fn rustls_attempt(
    client: &tlslab_tls::Client,
    session: &tlslab_tls::AgentSession,
    address: SocketAddr,
    capture: bool,
) -> Attempt {
    let mut attempt = Attempt::start();
    if capture {
        attempt.captured = Some(Vec::new());
    }
    let stream = TcpStream::connect(address).await.unwrap();
    attempt.mark(Event::TcpConnected);
    let tickets_before = client.tickets_received(session);
    let handshake = client
        .handshake(session, &mut attempt, stream)
        .await
        .unwrap_or_else(|failure| panic!("{failure:?}"));
    after_handshake(client, session, &mut attempt, handshake, tickets_before).await;
    attempt
}

/// The rest of an attempt, for either client: the request (if the Config sends one) and its
/// response, the session ticket of a resuming TLS 1.3 connection (waiting up to `PATIENCE`),
/// a graceful close; then the timeline must be in order.
async fn after_handshake<C: BackendClient>(
    client: &C,
    agent: &C::Agent,
    attempt: &mut Attempt,
    handshake: Handshake<C::Channel>,
    tickets_before: Option<u64>,
) {
    let Handshake {
        mut channel,
        request_sent,
    } = handshake;
    if let Some(request) = client.request() {
        exchange(&mut channel, attempt, request, request_sent)
            .await
            .unwrap_or_else(|failure| panic!("{failure:?}"));
    }
    if let (Some(before), true) = (tickets_before, channel.is_tls13()) {
        let arrived = || client.tickets_received(agent) != Some(before);
        await_ticket(&mut channel, attempt, PATIENCE, arrived).await;
    }
    channel.close(CloseMode::Graceful).await;
    assert!(attempt.timeline.is_ordered(), "{:?}", attempt.timeline);
}

/// A complete response of `body` bytes, with its events.
fn assert_response(attempt: &Attempt, body: u64, context: &str) {
    assert_eq!(
        attempt.response,
        Some(Response {
            status: Some(200),
            body_bytes: body,
        }),
        "{context}"
    );
    assert!(
        attempt.timeline.get(Event::FirstByte).is_some(),
        "{context}"
    );
    assert!(
        attempt.timeline.get(Event::ResponseDone).is_some(),
        "{context}"
    );
}

/// A response after the handshake is not part of the handshake's bytes.
fn assert_handshake_bytes_exclude_the_response(attempt: &Attempt, context: &str) {
    let (sent, received) = attempt.handshake_bytes();
    assert!(sent >= attempt.client_hello_bytes.unwrap(), "{context}");
    assert!(
        received > 0 && received < BODY,
        "{context}: {received} handshake bytes"
    );
}

fn alpn(http: Http) -> &'static str {
    match http {
        Http::Http2 => "h2",
        _ => "http/1.1",
    }
}

#[tokio::test]
async fn the_openssl_client_fetches_70_kb_over_http1_and_http2_from_both_servers() {
    let chain = chain();
    for server in both_servers(&chain, lab_settings(ServerResumption::Off, false, BODY)).await {
        for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
            for http in [Http::Http11, Http::Http2] {
                let mut options = options(version, &chain);
                options.http = http;
                let client = Client::new(&options).unwrap();
                let attempt =
                    openssl_attempt(&client, &client.agent_session(), server.address()).await;
                let context = format!("{} {version} {http}", server.name());
                assert_response(&attempt, BODY, &context);
                assert_handshake_bytes_exclude_the_response(&attempt, &context);
                assert_eq!(attempt.negotiated.alpn.as_deref(), Some(alpn(http)));
                assert_eq!(attempt.negotiated.resumed, None, "{context}");
                assert!(attempt.client_hello_bytes.is_some_and(|bytes| bytes > 0));
            }
        }
        assert_eq!(server.counters().requests, 4, "{}", server.name());
    }
}

#[tokio::test]
async fn the_rustls_client_fetches_70_kb_over_http1_and_http2_from_the_openssl_server() {
    let chain = chain();
    let server = openssl_server(
        &chain,
        ServerSettings {
            body: BODY,
            ..ServerSettings::default()
        },
    )
    .await;
    for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
        for http in [Http::Http11, Http::Http2] {
            let mut settings = rustls_settings(version, &chain);
            settings.http = http;
            let client = tlslab_tls::Client::new(&settings).unwrap();
            let attempt =
                rustls_attempt(&client, &client.agent_session(), server.address(), false).await;
            let context = format!("{version} {http}");
            assert_response(&attempt, BODY, &context);
            assert_handshake_bytes_exclude_the_response(&attempt, &context);
            assert_eq!(attempt.negotiated.alpn.as_deref(), Some(alpn(http)));
        }
    }
    assert_eq!(server.counters().requests, 4);
    assert_eq!(server.counters().tickets_redeemed, 0);
}

#[tokio::test]
async fn the_openssl_client_resumes_by_tickets_and_by_cache_on_both_servers_and_versions() {
    let chain = chain();
    for mode in [ServerResumption::Tickets, ServerResumption::Cache] {
        for server in both_servers(&chain, lab_settings(mode, false, 100)).await {
            for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
                let mut options = options(version, &chain);
                options.resume = Resume::Tickets;
                options.http = Http::Http11;
                let client = Client::new(&options).unwrap();
                let session = client.agent_session();
                let mut resumed = Vec::new();
                for _ in 0..3 {
                    let attempt = openssl_attempt(&client, &session, server.address()).await;
                    assert_response(&attempt, 100, &format!("{} {mode:?}", server.name()));
                    resumed.push(attempt.negotiated.resumed);
                }
                assert_eq!(
                    resumed,
                    [Some(false), Some(true), Some(true)],
                    "{} {mode:?} {version}",
                    server.name()
                );
            }
            if let Server::OpenSsl(..) = server {
                let counters = server.counters();
                assert_eq!(counters.tickets_redeemed, 4, "{mode:?}");
                assert_eq!(counters.replays_rejected, 0, "{mode:?}");
                assert_eq!(counters.requests, 6, "{mode:?}");
            }
        }
    }
}

#[tokio::test]
async fn the_rustls_client_resumes_by_tickets_and_by_cache_against_the_openssl_server() {
    let chain = chain();
    for (mode, resume) in [
        (ServerResumption::Tickets, Resume::Tickets),
        (ServerResumption::Cache, Resume::SessionId),
        (ServerResumption::Cache, Resume::Tickets),
    ] {
        let server = openssl_server(
            &chain,
            ServerSettings {
                resumption: mode,
                ..ServerSettings::default()
            },
        )
        .await;
        for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
            let mut settings = rustls_settings(version, &chain);
            settings.resume = resume;
            // The response comes after the server counted the handshake.
            settings.http = Http::Http11;
            let client = tlslab_tls::Client::new(&settings).unwrap();
            let session = client.agent_session();
            let mut resumed = Vec::new();
            for _ in 0..2 {
                let attempt = rustls_attempt(&client, &session, server.address(), false).await;
                resumed.push(attempt.negotiated.resumed);
            }
            assert_eq!(
                resumed,
                [Some(false), Some(true)],
                "{mode:?} {resume} {version}"
            );
        }
        assert_eq!(server.counters().tickets_redeemed, 2, "{mode:?} {resume}");
    }
}

/// A TCP relay to `upstream` that keeps the first TLS record each client sends: its
/// ClientHello.
async fn recording_relay(upstream: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let hellos = Arc::new(Mutex::new(Vec::new()));
    let kept = hellos.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut server = TcpStream::connect(upstream).await?;
                let hello = read_record(&mut client).await?;
                server.write_all(&hello).await?;
                kept.lock().unwrap().push(hello);
                tokio::io::copy_bidirectional(&mut client, &mut server).await?;
                Ok::<_, std::io::Error>(())
            });
        }
    });
    (address, hellos)
}

async fn read_record(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut record = vec![0u8; 5];
    stream.read_exact(&mut record).await?;
    let length = u16::from_be_bytes([record[3], record[4]]) as usize;
    record.resize(5 + length, 0);
    stream.read_exact(&mut record[5..]).await?;
    Ok(record)
}

/// Sends a ClientHello on a new connection and tells whether the ServerHello accepts its
/// pre-shared key (a TLS 1.3 resumption).
async fn server_accepts_psk(address: SocketAddr, client_hello: &[u8]) -> bool {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(client_hello).await.unwrap();
    let record = read_record(&mut stream).await.unwrap();
    assert_eq!(record[0], 22, "a handshake record");
    let hello = &record[5..];
    assert_eq!(hello[0], 2, "a ServerHello");
    let u16_at = |at: usize| u16::from_be_bytes([hello[at], hello[at + 1]]) as usize;
    // Header, legacy version, random, session ID, suite, compression.
    let mut at = 4 + 2 + 32;
    at += 1 + hello[at] as usize + 2 + 1;
    let end = at + 2 + u16_at(at);
    at += 2;
    while at < end {
        if u16_at(at) == 41 {
            return true;
        }
        at += 4 + u16_at(at + 2);
    }
    false
}

#[tokio::test]
async fn a_cache_ticket_resumes_once_and_a_stateless_ticket_again() {
    let chain = chain();
    for (mode, reusable) in [
        (ServerResumption::Cache, false),
        (ServerResumption::Tickets, true),
    ] {
        let server = openssl_server(
            &chain,
            ServerSettings {
                resumption: mode,
                ..ServerSettings::default()
            },
        )
        .await;
        let (relay, hellos) = recording_relay(server.address()).await;
        let mut options = options(TlsVersion::Tls13, &chain);
        options.resume = Resume::Tickets;
        options.http = Http::Http11;
        let client = Client::new(&options).unwrap();
        let session = client.agent_session();
        openssl_attempt(&client, &session, relay).await;
        let resumed = openssl_attempt(&client, &session, relay).await;
        assert_eq!(resumed.negotiated.resumed, Some(true), "{mode:?}");
        // The resumed handshake's ClientHello, presented again.
        let hello = hellos.lock().unwrap()[1].clone();
        assert_eq!(
            server_accepts_psk(server.address(), &hello).await,
            reusable,
            "{mode:?}"
        );
        let counters = server.counters();
        assert_eq!(counters.tickets_redeemed, 1, "{mode:?}");
        assert_eq!(
            counters.replays_rejected,
            if reusable { 0 } else { 1 },
            "{mode:?}"
        );
    }
}

#[tokio::test]
async fn openssl_client_0rtt_is_accepted_by_both_servers_over_http1_and_http2() {
    let chain = chain();
    for server in both_servers(&chain, lab_settings(ServerResumption::Cache, true, 2_000)).await {
        for http in [Http::Http11, Http::Http2] {
            let mut options = options(TlsVersion::Tls13, &chain);
            options.resume = Resume::Tickets;
            options.http = http;
            options.early_data = 1_000;
            let client = Client::new(&options).unwrap();
            let session = client.agent_session();
            let context = format!("{} {http}", server.name());
            let first = openssl_attempt(&client, &session, server.address()).await;
            assert_eq!(first.negotiated.early_data, None, "{context}");
            assert_response(&first, 2_000, &context);
            let second = openssl_attempt(&client, &session, server.address()).await;
            assert_eq!(second.negotiated.resumed, Some(true), "{context}");
            assert_eq!(second.negotiated.early_data, Some(true), "{context}");
            assert_eq!(second.negotiated.alpn.as_deref(), Some(alpn(http)));
            assert_response(&second, 2_000, &context);
            // The padded request went out with the ClientHello.
            assert!(
                second.client_hello_bytes.unwrap() > first.client_hello_bytes.unwrap() + 1_000,
                "{context}"
            );
        }
        // TLS 1.2 clients are served by the same early-data-reading server.
        let mut options = options(TlsVersion::Tls12, &chain);
        options.resume = Resume::Tickets;
        options.http = Http::Http2;
        options.early_data = 1_000;
        let client = Client::new(&options).unwrap();
        let session = client.agent_session();
        for resumed in [false, true] {
            let attempt = openssl_attempt(&client, &session, server.address()).await;
            assert_eq!(
                attempt.negotiated.resumed,
                Some(resumed),
                "{}",
                server.name()
            );
            assert_eq!(attempt.negotiated.early_data, None, "{}", server.name());
            assert_response(&attempt, 2_000, server.name());
        }
        let counters = server.counters();
        assert_eq!(counters.early_data_accepted, 2, "{}", server.name());
        assert_eq!(counters.requests, 6, "{}", server.name());
        assert_eq!(counters.replays_rejected, 0, "{}", server.name());
    }
}

#[tokio::test]
async fn a_replayed_0rtt_flight_is_rejected_by_the_openssl_server() {
    let chain = chain();
    let server = openssl_server(
        &chain,
        ServerSettings {
            resumption: ServerResumption::Cache,
            early_data: true,
            body: 500,
            client_roots: Vec::new(),
        },
    )
    .await;
    // The OpenSSL client's flight, then the rustls client's.
    let mut flights = Vec::new();
    let mut options = options(TlsVersion::Tls13, &chain);
    options.resume = Resume::Tickets;
    options.http = Http::Http11;
    options.early_data = 600;
    let client = Client::new(&options).unwrap();
    let session = client.agent_session();
    openssl_attempt(&client, &session, server.address()).await;
    let zero_rtt = openssl_capturing(&client, &session, server.address(), true).await;
    assert_eq!(zero_rtt.negotiated.early_data, Some(true));
    assert_response(&zero_rtt, 500, "openssl client");
    flights.push(zero_rtt.captured.unwrap().concat());

    let mut settings = rustls_settings(TlsVersion::Tls13, &chain);
    settings.resume = Resume::Tickets;
    settings.http = Http::Http2;
    settings.early_data = 600;
    let client = tlslab_tls::Client::new(&settings).unwrap();
    let session = client.agent_session();
    rustls_attempt(&client, &session, server.address(), false).await;
    let zero_rtt = rustls_attempt(&client, &session, server.address(), true).await;
    assert_eq!(zero_rtt.negotiated.early_data, Some(true));
    assert_response(&zero_rtt, 500, "rustls client");
    flights.push(zero_rtt.captured.unwrap().concat());

    let before = server.counters();
    assert_eq!(before.early_data_accepted, 2);
    assert_eq!(before.requests, 4);
    assert_eq!(before.replays_rejected, 0);
    for flight in &flights {
        assert!(flight.len() > 600);
        tlslab_tls::replay_tcp(server.address(), flight, PATIENCE)
            .await
            .unwrap();
    }
    let after = server.counters();
    assert_eq!(after.replays_rejected, 2);
    assert_eq!(after.early_data_accepted, 2);
    assert_eq!(after.requests, 4);
    assert_eq!(after.tickets_redeemed, 2);
}

#[tokio::test]
async fn stateless_tickets_and_a_server_without_early_data_get_the_request_after_the_handshake() {
    let chain = chain();
    for settings in [
        // Stateless tickets never allow early data (as in the rustls lab server).
        lab_settings(ServerResumption::Tickets, true, 300),
        lab_settings(ServerResumption::Cache, false, 300),
    ] {
        for server in both_servers(&chain, settings.clone()).await {
            let mut options = options(TlsVersion::Tls13, &chain);
            options.resume = Resume::Tickets;
            options.http = Http::Http11;
            options.early_data = 400;
            let client = Client::new(&options).unwrap();
            let session = client.agent_session();
            let context = format!("{} {settings:?}", server.name());
            openssl_attempt(&client, &session, server.address()).await;
            let second = openssl_attempt(&client, &session, server.address()).await;
            assert_eq!(second.negotiated.resumed, Some(true), "{context}");
            assert_eq!(second.negotiated.early_data, None, "{context}");
            assert_response(&second, 300, &context);
            assert_eq!(server.counters().early_data_accepted, 0, "{context}");
        }
    }
}

#[tokio::test]
async fn a_request_too_large_for_the_ticket_goes_after_the_handshake() {
    let chain = chain();
    let server = openssl_server(
        &chain,
        ServerSettings {
            resumption: ServerResumption::Cache,
            early_data: true,
            body: 10,
            client_roots: Vec::new(),
        },
    )
    .await;
    let mut options = options(TlsVersion::Tls13, &chain);
    options.resume = Resume::Tickets;
    options.http = Http::Http11;
    // More than the 16,384 bytes the server's tickets allow.
    options.early_data = 17_000;
    let client = Client::new(&options).unwrap();
    let session = client.agent_session();
    openssl_attempt(&client, &session, server.address()).await;
    let second = openssl_attempt(&client, &session, server.address()).await;
    assert_eq!(second.negotiated.resumed, Some(true));
    assert_eq!(second.negotiated.early_data, Some(false));
    assert_response(&second, 10, "oversized early data");
    assert_eq!(server.counters().early_data_accepted, 0);
}

/// A rustls connection without ALPN: what `openssl s_client` or `ab` look like to the server.
fn plain_rustls_exchange(chain: &ServedChain, address: SocketAddr, data: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    use tlslab_tls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(chain.root.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut connection =
        rustls::ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap()).unwrap();
    let mut socket = std::net::TcpStream::connect(address).unwrap();
    socket.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut stream = rustls::Stream::new(&mut connection, &mut socket);
    stream.write_all(data).unwrap();
    stream.conn.send_close_notify();
    stream.flush().unwrap();
    // Everything until the server's close_notify; a server that gave up on the connection
    // would close it without one, and reading would fail.
    let mut received = Vec::new();
    stream.read_to_end(&mut received).unwrap();
    received
}

#[tokio::test]
async fn without_alpn_the_openssl_server_speaks_http1_and_refuses_what_is_not_http() {
    let chain = chain();
    let server = openssl_server(
        &chain,
        ServerSettings {
            body: 1_234,
            ..ServerSettings::default()
        },
    )
    .await;
    let address = server.address();
    let request = tlslab_http::encode_request(
        tlslab_http::Version::Http11,
        &tlslab_http::Request {
            authority: "localhost",
            path: "/",
            min_size: 0,
        },
    );
    let chain_copy = chain.clone();
    let answer =
        tokio::task::spawn_blocking(move || plain_rustls_exchange(&chain_copy, address, &request))
            .await
            .unwrap();
    let mut reader = tlslab_http::ResponseReader::new(tlslab_http::Version::Http11);
    let progress = reader.feed(&answer).unwrap();
    assert!(progress.complete);
    assert_eq!(progress.status, Some(200));
    assert_eq!(progress.body_bytes, 1_234);
    // Not HTTP: hyper refuses it (a 400, or nothing when it saw the client's close_notify
    // first), and the connection still ends with close_notify (read_to_end succeeded).
    let answer = tokio::task::spawn_blocking(move || {
        plain_rustls_exchange(&chain, address, b"\x00\x01 not http\r\n\r\n")
    })
    .await
    .unwrap();
    if !answer.is_empty() {
        let mut reader = tlslab_http::ResponseReader::new(tlslab_http::Version::Http11);
        let status = reader.feed(&answer).map(|progress| progress.status);
        assert!(
            matches!(status, Ok(Some(400))),
            "{:?}",
            String::from_utf8_lossy(&answer)
        );
    }
    // Only the site's answers count as requests.
    assert_eq!(server.counters().requests, 1);
}

#[tokio::test]
async fn the_openssl_client_refuses_http3() {
    let chain = chain();
    let mut options = options(TlsVersion::Tls13, &chain);
    options.http = Http::Http3;
    assert!(Client::new(&options)
        .unwrap_err()
        .to_string()
        .contains("QUIC"));
}
