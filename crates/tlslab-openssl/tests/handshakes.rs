//! Real handshakes on 127.0.0.1 between the OpenSSL client and server, and across backends
//! with the rustls client and server.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tlslab_backend::{
    await_ticket, Attempt, Channel, Client as _, ClientSettings, EchMode, Failure, Handshake,
    ServerSettings, Suite, Trust,
};
use tlslab_core::{
    CertProfile, Cipher, CloseMode, Event, Group, LegacySuite, Phase, Resume, TlsVersion,
};
use tlslab_openssl::{server_config, Client, Direction, EchKey, EchStatus, Established};
use tlslab_pki::{Pki, ServedChain};
use tokio::net::{TcpListener, TcpStream};

fn pki() -> Pki {
    Pki::open(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tlslab-openssl-pki")).unwrap()
}

fn chain(profile: CertProfile) -> ServedChain {
    pki().chain(profile, 2).unwrap()
}

async fn openssl_server(
    certificates: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    settings: ServerSettings,
    ech: Option<&EchKey>,
) -> SocketAddr {
    let config = server_config(certificates, key, &settings, ech).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(tlslab_openssl::serve(listener, config));
    address
}

async fn rustls_server(
    certificates: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
) -> SocketAddr {
    let config =
        tlslab_tls::server::server_config(certificates.to_vec(), key.clone_key(), false).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(tlslab_tls::server::serve(listener, config));
    address
}

fn options(version: TlsVersion, group: Group, root: &CertificateDer<'static>) -> ClientSettings {
    ClientSettings::handshake_only(
        version,
        Cipher::Aes128Gcm,
        group,
        "localhost",
        Trust::Roots(vec![root.clone()]),
    )
}

async fn openssl_handshake(
    address: SocketAddr,
    options: &ClientSettings,
) -> (Attempt, Result<Handshake<Established>, Failure>) {
    let client = Client::new(options).unwrap();
    let session = client.agent_session();
    let mut attempt = Attempt::start();
    let stream = TcpStream::connect(address).await.unwrap();
    attempt.mark(Event::TcpConnected);
    let result = client.handshake(&session, &mut attempt, stream).await;
    (attempt, result)
}

async fn rustls_handshake(
    address: SocketAddr,
    version: TlsVersion,
    group: Group,
    root: &CertificateDer<'static>,
) -> Attempt {
    let client = tlslab_tls::Client::new(&ClientSettings::handshake_only(
        version,
        Cipher::Aes128Gcm,
        group,
        "localhost",
        Trust::Roots(vec![root.clone()]),
    ))
    .unwrap();
    let session = client.agent_session();
    let mut attempt = Attempt::start();
    let stream = TcpStream::connect(address).await.unwrap();
    attempt.mark(Event::TcpConnected);
    let handshake = client
        .handshake(&session, &mut attempt, stream)
        .await
        .unwrap();
    handshake.channel.close(CloseMode::Reset).await;
    attempt
}

/// Every event of a verified full handshake is there, in order, and the additive phases add
/// up to the handshake exactly.
fn assert_complete(attempt: &Attempt) {
    let timeline = &attempt.timeline;
    for event in [
        Event::Start,
        Event::TcpConnected,
        Event::ClientHelloSent,
        Event::ServerHelloReceived,
        Event::ServerFlightReceived,
        Event::CertVerifyStart,
        Event::CertVerifyEnd,
        Event::ClientFinishedSent,
        Event::HandshakeDone,
    ] {
        assert!(
            timeline.get(event).is_some(),
            "{} missing: {timeline:?}",
            event.name()
        );
    }
    assert!(timeline.is_ordered(), "{timeline:?}");
    let parts: u64 = Phase::PARTS.iter().filter_map(|p| timeline.phase(*p)).sum();
    assert_eq!(parts, timeline.phase(Phase::Handshake).unwrap());
    assert!(attempt.client_hello_bytes.unwrap() > 0);
    assert!(attempt.bytes_sent >= attempt.client_hello_bytes.unwrap());
}

fn assert_flight(attempt: &Attempt, established: &Established) {
    let flight = attempt.server_flight_bytes.unwrap();
    assert!(flight > 0 && flight <= attempt.bytes_received, "{flight}");
    let messages = &established.observations.messages;
    let first = messages.first().unwrap();
    assert_eq!(
        (first.direction, first.name),
        (Direction::Sent, "client_hello")
    );
    assert!(messages.windows(2).all(|pair| pair[0].at <= pair[1].at));
    assert!(messages
        .iter()
        .any(|m| m.direction == Direction::Received && m.name == "certificate"));
}

#[tokio::test]
async fn openssl_client_and_server_complete_tls12_and_tls13() {
    let chain = chain(CertProfile::EcdsaP256);
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    for (version, suite) in [
        (TlsVersion::Tls13, "TLS13_AES_128_GCM_SHA256"),
        (TlsVersion::Tls12, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ] {
        let (attempt, result) =
            openssl_handshake(address, &options(version, Group::X25519, &chain.root)).await;
        let established = result.unwrap().channel;
        assert_complete(&attempt);
        assert_flight(&attempt, &established);
        let negotiated = &attempt.negotiated;
        assert_eq!(negotiated.version.as_deref(), Some(version.as_str()));
        assert_eq!(negotiated.suite.as_deref(), Some(suite));
        assert_eq!(negotiated.group.as_deref(), Some("x25519"));
        assert_eq!(
            negotiated.signature_scheme.as_deref(),
            Some("ECDSA_NISTP256_SHA256")
        );
        assert_eq!(established.observations.ech, EchStatus::NotOffered);
        established.close(CloseMode::Graceful).await;
    }
}

#[tokio::test]
async fn openssl_client_reports_what_the_rustls_client_reports_against_rustls() {
    for profile in [CertProfile::EcdsaP256, CertProfile::Rsa2048] {
        let chain = chain(profile);
        let address = rustls_server(&chain.certificates, &chain.private_key).await;
        for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
            for group in [Group::X25519, Group::X25519Mlkem768] {
                if version == TlsVersion::Tls12 && group.is_post_quantum() {
                    continue;
                }
                let (attempt, result) =
                    openssl_handshake(address, &options(version, group, &chain.root)).await;
                let established = result.unwrap().channel;
                assert_complete(&attempt);
                assert_flight(&attempt, &established);
                let reference = rustls_handshake(address, version, group, &chain.root).await;
                assert_eq!(
                    attempt.negotiated, reference.negotiated,
                    "{profile} {version} {group}"
                );
                established.close(CloseMode::Reset).await;
            }
        }
    }
}

#[tokio::test]
async fn rustls_client_completes_against_the_openssl_server() {
    let chain = chain(CertProfile::EcdsaP384);
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    for (version, group) in [
        (TlsVersion::Tls13, Group::X25519),
        (TlsVersion::Tls13, Group::X25519Mlkem768),
        (TlsVersion::Tls13, Group::Secp256r1Mlkem768),
        (TlsVersion::Tls13, Group::Mlkem768),
        (TlsVersion::Tls12, Group::Secp256r1),
    ] {
        let attempt = rustls_handshake(address, version, group, &chain.root).await;
        assert_complete(&attempt);
        assert_eq!(attempt.negotiated.group.as_deref(), Some(group.as_str()));
        assert_eq!(
            attempt.negotiated.signature_scheme.as_deref(),
            Some("ECDSA_NISTP384_SHA384")
        );
    }
}

#[tokio::test]
async fn every_group_negotiates_between_openssl_peers() {
    let chain = chain(CertProfile::EcdsaP256);
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    for &group in Group::ALL {
        let (attempt, result) =
            openssl_handshake(address, &options(TlsVersion::Tls13, group, &chain.root)).await;
        result.unwrap_or_else(|failure| panic!("{group}: {failure:?}"));
        assert_complete(&attempt);
        assert_eq!(attempt.negotiated.group.as_deref(), Some(group.as_str()));
    }
}

#[tokio::test]
async fn a_hybrid_key_share_makes_the_client_hello_three_times_larger() {
    let chain = chain(CertProfile::EcdsaP256);
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    let size = |group| {
        let options = options(TlsVersion::Tls13, group, &chain.root);
        async move {
            let (attempt, result) = openssl_handshake(address, &options).await;
            result.unwrap();
            attempt.client_hello_bytes.unwrap()
        }
    };
    let classic = size(Group::X25519).await;
    let hybrid = size(Group::X25519Mlkem768).await;
    assert!(classic < 400, "x25519 ClientHello: {classic} bytes");
    assert!(hybrid > 1_100, "x25519mlkem768 ClientHello: {hybrid} bytes");
}

#[tokio::test]
async fn legacy_tls12_suites_negotiate() {
    let chain = chain(CertProfile::Rsa2048);
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    for suite in LegacySuite::ALL {
        let mut options = options(TlsVersion::Tls12, Group::X25519, &chain.root);
        options.suite = Suite::Legacy(suite);
        let (attempt, result) = openssl_handshake(address, &options).await;
        result.unwrap_or_else(|failure| panic!("{}: {failure:?}", suite.iana_name()));
        assert_complete(&attempt);
        let negotiated = &attempt.negotiated;
        assert_eq!(negotiated.suite.as_deref(), Some(suite.iana_name()));
        match suite {
            // RSA key transport: no key exchange group, no handshake signature.
            LegacySuite::RsaAes256GcmSha384 => {
                assert_eq!(negotiated.group, None);
                assert_eq!(negotiated.signature_scheme, None);
            }
            LegacySuite::EcdheRsaAes128CbcSha => {
                assert_eq!(negotiated.group.as_deref(), Some("x25519"));
                assert!(negotiated.signature_scheme.is_some());
            }
            LegacySuite::DheRsaAes128GcmSha256 => {
                // OpenSSL's automatic parameters for a 2048-bit RSA key: RFC 3526's group.
                assert_eq!(negotiated.group.as_deref(), Some("modp_2048"));
                assert!(negotiated.signature_scheme.is_some());
            }
        }
    }
}

#[tokio::test]
async fn ech_is_accepted_by_the_openssl_server() {
    let chain = chain(CertProfile::EcdsaP256);
    // Without the PEM round trip in EchKey::store, OpenSSL 4.0.3 treats the key as GREASE
    // and this handshake reports `grease` instead of `accepted`.
    let key = EchKey::generate("public.tlslab.test").unwrap();
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        Some(&key),
    )
    .await;
    let mut options = options(TlsVersion::Tls13, Group::X25519, &chain.root);
    options.ech = EchMode::On(key.config_list().unwrap());
    let (attempt, result) = openssl_handshake(address, &options).await;
    let established = result.unwrap().channel;
    assert_complete(&attempt);
    assert_eq!(established.observations.ech, EchStatus::Accepted);
    // The base64 form (`--ech-config`) works as well.
    options.ech = EchMode::On(key.config_list_base64().unwrap().into_bytes());
    let (_, result) = openssl_handshake(address, &options).await;
    assert_eq!(
        result.unwrap().channel.observations.ech,
        EchStatus::Accepted
    );
}

#[tokio::test]
async fn ech_grease_is_reported_as_grease_and_costs_bytes() {
    let chain = chain(CertProfile::EcdsaP256);
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    let mut options = options(TlsVersion::Tls13, Group::X25519, &chain.root);
    let (plain, result) = openssl_handshake(address, &options).await;
    result.unwrap();
    options.ech = EchMode::Grease;
    let (greased, result) = openssl_handshake(address, &options).await;
    let established = result.unwrap().channel;
    assert_complete(&greased);
    assert_eq!(established.observations.ech, EchStatus::Grease);
    assert!(greased.client_hello_bytes.unwrap() > plain.client_hello_bytes.unwrap());
}

#[tokio::test]
async fn ech_with_a_configuration_the_server_lacks_is_rejected() {
    let chain = chain(CertProfile::EcdsaP256);
    let served = EchKey::generate("localhost").unwrap();
    let stale = EchKey::generate("localhost").unwrap();
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        Some(&served),
    )
    .await;
    let mut options = options(TlsVersion::Tls13, Group::X25519, &chain.root);
    options.ech = EchMode::On(stale.config_list().unwrap());
    let (attempt, result) = openssl_handshake(address, &options).await;
    // RFC 9849: the client aborts with ech_required after authenticating the outer
    // handshake for the public name; the attempt keeps what it observed.
    let failure = result.map(|handshake| handshake.channel).unwrap_err();
    assert!(failure.detail.contains("ech"), "{failure:?}");
    assert!(attempt.timeline.is_ordered());
}

#[tokio::test]
async fn ml_dsa_65_chains_work_in_both_directions_across_backends() {
    // The leaf alone (depth 1), signed by the root.
    let chain = pki().chain(CertProfile::MlDsa65, 1).unwrap();
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    let (attempt, result) = openssl_handshake(
        address,
        &options(TlsVersion::Tls13, Group::X25519, &chain.root),
    )
    .await;
    result.unwrap();
    assert_complete(&attempt);
    assert_eq!(
        attempt.negotiated.signature_scheme.as_deref(),
        Some("ML_DSA_65")
    );
    let reference = rustls_handshake(address, TlsVersion::Tls13, Group::X25519, &chain.root).await;
    assert_complete(&reference);
    assert_eq!(reference.negotiated, attempt.negotiated);
    // rustls (aws-lc-rs) also signs with the PKCS#8 key OpenSSL wrote (tlslab-pki makes
    // ML-DSA material with OpenSSL).
    let address = rustls_server(&chain.certificates, &chain.private_key).await;
    let (attempt, result) = openssl_handshake(
        address,
        &options(TlsVersion::Tls13, Group::X25519, &chain.root),
    )
    .await;
    result.unwrap();
    assert_complete(&attempt);
    assert_eq!(
        attempt.negotiated.signature_scheme.as_deref(),
        Some("ML_DSA_65")
    );
}

#[tokio::test]
async fn a_wrong_root_fails_as_a_certificate_error() {
    let chain = chain(CertProfile::EcdsaP256);
    let other = chain_of_other_profile();
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        None,
    )
    .await;
    let (attempt, result) =
        openssl_handshake(address, &options(TlsVersion::Tls13, Group::X25519, &other)).await;
    let failure = result.map(|handshake| handshake.channel).unwrap_err();
    assert_eq!(
        failure.class,
        tlslab_core::ErrorClass::Certificate,
        "{failure:?}"
    );
    assert!(attempt.timeline.get(Event::CertVerifyEnd).is_some());
    assert!(attempt.timeline.is_ordered());
    // Insecure trusts anything and verifies nothing.
    let mut insecure = options(TlsVersion::Tls13, Group::X25519, &other);
    insecure.trust = Trust::Insecure;
    let (attempt, result) = openssl_handshake(address, &insecure).await;
    result.unwrap();
    assert_eq!(attempt.timeline.get(Event::CertVerifyStart), None);
    assert!(attempt.timeline.get(Event::ClientFinishedSent).is_some());
    assert!(attempt.timeline.is_ordered());
}

fn chain_of_other_profile() -> CertificateDer<'static> {
    chain(CertProfile::Ed25519).root
}

#[tokio::test]
async fn resumption_resumes_the_second_handshake() {
    let chain = chain(CertProfile::EcdsaP256);
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings {
            resumption: tlslab_core::ServerResumption::Tickets,
            ..ServerSettings::default()
        },
        None,
    )
    .await;
    for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
        let mut options = options(version, Group::X25519, &chain.root);
        options.resume = Resume::Tickets;
        let client = Arc::new(Client::new(&options).unwrap());
        let session = client.agent_session();
        let mut resumed = Vec::new();
        for _ in 0..2 {
            let mut attempt = Attempt::start();
            let stream = TcpStream::connect(address).await.unwrap();
            attempt.mark(Event::TcpConnected);
            let before = client.tickets_received(&session);
            let mut established = client
                .handshake(&session, &mut attempt, stream)
                .await
                .unwrap()
                .channel;
            // The TLS 1.3 ticket follows the handshake (a TLS 1.2 session comes with it).
            if let (Some(before), true) = (before, established.is_tls13()) {
                let arrived = || client.tickets_received(&session) != Some(before);
                await_ticket(
                    &mut established,
                    &mut attempt,
                    std::time::Duration::from_secs(2),
                    arrived,
                )
                .await;
            }
            assert!(attempt.timeline.is_ordered());
            resumed.push(attempt.negotiated.resumed);
            established.close(CloseMode::Graceful).await;
        }
        assert_eq!(resumed, [Some(false), Some(true)], "{version}");
    }
}

#[tokio::test]
async fn a_rustls_client_with_ech_is_accepted_by_the_openssl_server() {
    use tlslab_tls::rustls;
    let chain = chain(CertProfile::EcdsaP256);
    let key = EchKey::generate("public.tlslab.test").unwrap();
    let address = openssl_server(
        &chain.certificates,
        &chain.private_key,
        ServerSettings::default(),
        Some(&key),
    )
    .await;
    let ech = rustls::client::EchConfig::new(
        key.config_list().unwrap().into(),
        rustls::crypto::aws_lc_rs::hpke::ALL_SUPPORTED_SUITES,
    )
    .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(chain.root.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_ech(rustls::client::EchMode::Enable(ech))
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let status = tokio::task::spawn_blocking(move || {
        let mut connection =
            rustls::ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap())
                .unwrap();
        let mut socket = std::net::TcpStream::connect(address).unwrap();
        while connection.is_handshaking() {
            connection.complete_io(&mut socket).unwrap();
        }
        connection.ech_status()
    })
    .await
    .unwrap();
    assert_eq!(status, rustls::client::EchStatus::Accepted);
}
