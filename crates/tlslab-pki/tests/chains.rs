//! Every profile and depth must be usable by the lab's real consumers: rustls (verifier and a
//! full handshake) and OpenSSL. Plus the cache's promises: private modes, reuse, races,
//! damaged directories.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::Instant;

use openssl::pkey::{KeyType, PKey};
use openssl::stack::Stack;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::verify::{X509VerifyFlags, X509VerifyParam};
use openssl::x509::{X509PurposeId, X509StoreContext, X509};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, ServerConfig,
    ServerConnection, SignatureScheme,
};
use tlslab_core::{CertProfile, KeyKind};
use tlslab_pki::{load_certificates, Pki, PkiErrorKind, ServedChain, MAX_CHAIN_DEPTH};

/// One cache for the whole test binary, so each profile (RSA-4096 above all) is generated
/// once per run. Emptied at the start so a run always tests freshly generated material.
fn shared_pki() -> &'static Pki {
    static SHARED: OnceLock<Pki> = OnceLock::new();
    SHARED.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tlslab-pki-chains");
        let _ = fs::remove_dir_all(&dir);
        Pki::open(dir).unwrap()
    })
}

/// A directory of its own for tests about generation itself; removed by the test at the end.
fn fresh_dir(name: &str) -> PathBuf {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "tlslab-pki-{name}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn roots(root: &CertificateDer<'static>) -> Arc<RootCertStore> {
    let mut store = RootCertStore::empty();
    store.add(root.clone()).unwrap();
    Arc::new(store)
}

fn verify(
    chain: &ServedChain,
    root: &CertificateDer<'static>,
    name: &str,
) -> Result<(), rustls::Error> {
    let verifier = WebPkiServerVerifier::builder_with_provider(roots(root), provider())
        .build()
        .unwrap();
    let server_name = ServerName::try_from(name).unwrap().to_owned();
    verifier
        .verify_server_cert(
            &chain.certificates[0],
            &chain.certificates[1..],
            &server_name,
            &[],
            UnixTime::now(),
        )
        .map(|_| ())
}

#[test]
fn every_profile_and_depth_verifies_for_localhost_and_loopback_addresses() {
    let pki = shared_pki();
    for &profile in CertProfile::ALL {
        let started = Instant::now();
        pki.chain(profile, 1).unwrap();
        eprintln!("{profile}: ready in {:.2?}", started.elapsed());
        for depth in 1..=MAX_CHAIN_DEPTH {
            let chain = pki.chain(profile, depth).unwrap();
            assert_eq!(chain.profile, profile);
            assert_eq!(chain.depth, depth);
            assert_eq!(
                chain.certificates.len(),
                depth as usize,
                "{profile} depth {depth}"
            );
            assert!(
                !chain.certificates.contains(&chain.root),
                "{profile} depth {depth}: the root is never sent"
            );
            for name in ["localhost", "127.0.0.1", "::1"] {
                verify(&chain, &chain.root, name)
                    .unwrap_or_else(|error| panic!("{profile} depth {depth} for {name}: {error}"));
            }
            // Verification is not vacuous: another name or another profile's root fails.
            assert!(verify(&chain, &chain.root, "example.com").is_err());
        }
    }
    let ecdsa = pki.chain(CertProfile::EcdsaP256, 2).unwrap();
    let ed25519 = pki.chain(CertProfile::Ed25519, 2).unwrap();
    assert!(verify(&ecdsa, &ed25519.root, "localhost").is_err());
}

/// Runs a complete in-memory handshake; proves the leaf key matches the leaf certificate
/// and that the key type works for the TLS version.
fn handshake(chain: &ServedChain, version: &'static rustls::SupportedProtocolVersion) {
    let client_config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots(&chain.root))
        .with_no_client_auth();
    handshake_with(chain, version, client_config)
        .unwrap_or_else(|error| panic!("{} {version:?}: {error}", chain.profile));
}

/// The handshake of [`handshake`] with the client configuration given; the client's error
/// if either side fails.
fn handshake_with(
    chain: &ServedChain,
    version: &'static rustls::SupportedProtocolVersion,
    client_config: ClientConfig,
) -> Result<(), rustls::Error> {
    let server_config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[version])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain.certificates.clone(), chain.private_key.clone_key())
        .unwrap();
    connect(client_config, server_config)
        .unwrap_or_else(|| panic!("{} {version:?}: handshake did not finish", chain.profile))
}

/// Runs a handshake between the two configurations in memory: `None` if it did not finish,
/// else the client's error if either side failed.
fn connect(
    client_config: ClientConfig,
    server_config: ServerConfig,
) -> Option<Result<(), rustls::Error>> {
    let mut client = ClientConnection::new(
        Arc::new(client_config),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut server = ServerConnection::new(Arc::new(server_config)).unwrap();

    for _ in 0..10 {
        let mut bytes = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut bytes).unwrap();
        }
        let mut unread = &bytes[..];
        while !unread.is_empty() {
            server.read_tls(&mut unread).unwrap();
            if let Err(error) = server.process_new_packets() {
                // The server's alert tells the client why; the caller wants that side.
                let mut alert = Vec::new();
                while server.wants_write() {
                    server.write_tls(&mut alert).unwrap();
                }
                let _ = client.read_tls(&mut &alert[..]);
                return Some(Err(client.process_new_packets().err().unwrap_or(error)));
            }
        }
        bytes.clear();
        while server.wants_write() {
            server.write_tls(&mut bytes).unwrap();
        }
        let mut unread = &bytes[..];
        while !unread.is_empty() {
            client.read_tls(&mut unread).unwrap();
            if let Err(error) = client.process_new_packets() {
                return Some(Err(error));
            }
        }
        if !client.is_handshaking() && !server.is_handshaking() {
            return Some(Ok(()));
        }
    }
    None
}

#[test]
fn lab_client_certificates_are_issued_by_the_profile_root_for_client_authentication() {
    let pki = shared_pki();
    for profile in [
        CertProfile::EcdsaP256,
        CertProfile::Rsa2048,
        CertProfile::Ed25519,
        CertProfile::MlDsa44,
    ] {
        let client = pki.client_certificate(profile).unwrap();
        let chain = pki.chain(profile, 2).unwrap();
        assert_eq!(
            client.root, chain.root,
            "{profile}: the server chain's root"
        );
        // OpenSSL: signed by the root, and fit for a TLS client, not a server.
        let certificate = X509::from_der(&client.certificate).unwrap();
        let root = X509::from_der(&client.root).unwrap();
        assert!(certificate.verify(&root.public_key().unwrap()).unwrap());
        let purpose_verifies = |purpose: X509PurposeId| {
            let mut store_builder = X509StoreBuilder::new().unwrap();
            store_builder.add_cert(root.clone()).unwrap();
            let mut param = X509VerifyParam::new().unwrap();
            param.set_purpose(purpose).unwrap();
            store_builder.set_param(&param).unwrap();
            let store = store_builder.build();
            let mut context = X509StoreContext::new().unwrap();
            context
                .init(&store, &certificate, &Stack::new().unwrap(), |context| {
                    context.verify_cert()
                })
                .unwrap()
        };
        assert!(purpose_verifies(X509PurposeId::SSL_CLIENT), "{profile}");
        assert!(!purpose_verifies(X509PurposeId::SSL_SERVER), "{profile}");
        let key = PKey::private_key_from_der(client.private_key.secret_der()).unwrap();
        assert!(
            certificate.public_key().unwrap().public_eq(&key),
            "{profile}"
        );
        assert_eq!(
            fs::metadata(&client.key_pem).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // rustls: a server that requires client certificates from the root accepts it.
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            roots(&client.root),
            provider(),
        )
        .build()
        .unwrap();
        let server_config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.certificates.clone(), chain.private_key.clone_key())
            .unwrap();
        let client_config = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots(&chain.root))
            .with_client_auth_cert(
                vec![client.certificate.clone()],
                client.private_key.clone_key(),
            )
            .unwrap();
        connect(client_config, server_config)
            .unwrap()
            .unwrap_or_else(|error| panic!("{profile}: {error}"));
        // Cached: the second call reads the same certificate back.
        assert_eq!(
            pki.client_certificate(profile).unwrap().certificate,
            client.certificate
        );
    }
}

#[test]
fn every_profile_completes_rustls_handshakes_over_tls12_and_tls13() {
    let pki = shared_pki();
    for &profile in CertProfile::ALL {
        for depth in [1, MAX_CHAIN_DEPTH] {
            let chain = pki.chain(profile, depth).unwrap();
            handshake(&chain, &rustls::version::TLS13);
            // ML-DSA exists in TLS 1.3 only (ml_dsa_chains_are_refused_over_tls12).
            if profile.key_kind() != KeyKind::MlDsa {
                handshake(&chain, &rustls::version::TLS12);
            }
        }
    }
}

#[test]
fn every_profile_and_depth_verifies_with_openssl() {
    if Command::new("openssl").arg("version").output().is_err() {
        eprintln!("skipped: no openssl command");
        return;
    }
    // OpenSSL learned ML-DSA in 3.5; every_profile_and_depth_verifies_with_the_openssl_library
    // checks those profiles with the OpenSSL 4 this crate links whatever the command is.
    let knows_ml_dsa = Command::new("openssl")
        .args(["list", "-signature-algorithms"])
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains("ML-DSA-65"));
    let pki = shared_pki();
    for &profile in CertProfile::ALL {
        if profile.key_kind() == KeyKind::MlDsa && !knows_ml_dsa {
            eprintln!("{profile}: skipped, the openssl command has no ML-DSA");
            continue;
        }
        for depth in 1..=MAX_CHAIN_DEPTH {
            let chain = pki.chain(profile, depth).unwrap();
            // -x509_strict also demands the key identifier extensions OpenSSL builds
            // chains with; the leaf is the first certificate of the chain file.
            let output = Command::new("openssl")
                .arg("verify")
                .args([
                    "-x509_strict",
                    "-purpose",
                    "sslserver",
                    "-verify_hostname",
                    "localhost",
                ])
                .arg("-CAfile")
                .arg(&chain.root_pem)
                .arg("-untrusted")
                .arg(&chain.chain_pem)
                .arg(&chain.chain_pem)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{profile} depth {depth}: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let chain = pki.chain(profile, 1).unwrap();
        let public_key = |arguments: &[&str], file: &Path| {
            let output = Command::new("openssl")
                .args(arguments)
                .arg(file)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{profile}: openssl {arguments:?} failed"
            );
            output.stdout
        };
        assert_eq!(
            public_key(&["x509", "-noout", "-pubkey", "-in"], &chain.chain_pem),
            public_key(&["pkey", "-pubout", "-in"], &chain.key_pem),
            "{profile}: leaf.key belongs to the leaf certificate"
        );
    }
}

/// `openssl verify -x509_strict -purpose sslserver -verify_hostname localhost -CAfile root.pem
/// -untrusted chainN.pem chainN.pem`, done with the OpenSSL 4 library this crate links.
fn openssl_verify(chain: &ServedChain, root: &CertificateDer<'_>) -> Result<(), String> {
    let mut store = X509StoreBuilder::new().unwrap();
    store.add_cert(X509::from_der(root).unwrap()).unwrap();
    let mut parameters = X509VerifyParam::new().unwrap();
    parameters.set_flags(X509VerifyFlags::X509_STRICT).unwrap();
    parameters.set_purpose(X509PurposeId::SSL_SERVER).unwrap();
    parameters.set_host("localhost").unwrap();
    store.set_param(&parameters).unwrap();
    let store = store.build();

    let sent = X509::stack_from_pem(&fs::read(&chain.chain_pem).unwrap()).unwrap();
    let mut untrusted = Stack::new().unwrap();
    for certificate in &sent[1..] {
        untrusted.push(certificate.clone()).unwrap();
    }
    let mut context = X509StoreContext::new().unwrap();
    context
        .init(&store, &sent[0], &untrusted, |context| {
            Ok(if context.verify_cert()? {
                Ok(context.chain().map_or(0, |built| built.len()))
            } else {
                Err(format!(
                    "{} at depth {}",
                    context.error(),
                    context.error_depth()
                ))
            })
        })
        .unwrap()
        .map(|built| assert_eq!(built, chain.certificates.len() + 1, "sent and root"))
}

#[test]
fn every_profile_and_depth_verifies_with_the_openssl_library() {
    let pki = shared_pki();
    for &profile in CertProfile::ALL {
        for depth in 1..=MAX_CHAIN_DEPTH {
            let chain = pki.chain(profile, depth).unwrap();
            openssl_verify(&chain, &chain.root)
                .unwrap_or_else(|error| panic!("{profile} depth {depth}: {error}"));
        }
        let chain = pki.chain(profile, 1).unwrap();
        let leaf = X509::from_der(&chain.certificates[0]).unwrap();
        let key = PKey::private_key_from_pem(&fs::read(&chain.key_pem).unwrap()).unwrap();
        assert!(
            leaf.public_key().unwrap().public_eq(&key),
            "{profile}: leaf.key belongs to the leaf certificate"
        );
    }
    let ml_dsa = pki.chain(CertProfile::MlDsa65, 3).unwrap();
    let other = pki.chain(CertProfile::MlDsa44, 3).unwrap();
    assert!(openssl_verify(&ml_dsa, &other.root).is_err());
}

const ML_DSA: [(CertProfile, KeyType, SignatureScheme); 3] = [
    (
        CertProfile::MlDsa44,
        KeyType::ML_DSA_44,
        SignatureScheme::ML_DSA_44,
    ),
    (
        CertProfile::MlDsa65,
        KeyType::ML_DSA_65,
        SignatureScheme::ML_DSA_65,
    ),
    (
        CertProfile::MlDsa87,
        KeyType::ML_DSA_87,
        SignatureScheme::ML_DSA_87,
    ),
];

/// The client's ordinary verifier, noting the scheme of every TLS 1.3 CertificateVerify.
#[derive(Debug)]
struct SchemeRecorder {
    verifier: Arc<WebPkiServerVerifier>,
    schemes: Mutex<Vec<SignatureScheme>>,
}

impl ServerCertVerifier for SchemeRecorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier
            .verify_tls12_signature(message, certificate, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.schemes.lock().unwrap().push(signature.scheme);
        self.verifier
            .verify_tls13_signature(message, certificate, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verifier.supported_verify_schemes()
    }
}

#[test]
fn ml_dsa_profiles_complete_tls13_handshakes_signed_with_ml_dsa() {
    let dir = fresh_dir("ml-dsa");
    let pki = Pki::open(&dir).unwrap();
    for (profile, key_type, scheme) in ML_DSA {
        let started = Instant::now();
        pki.chain(profile, 1).unwrap();
        eprintln!("{profile}: ready in {:.2?}", started.elapsed());
        for depth in [1, 3] {
            let chain = pki.chain(profile, depth).unwrap();
            assert_eq!(chain.certificates.len(), depth as usize);
            assert!(matches!(
                chain.private_key,
                rustls::pki_types::PrivateKeyDer::Pkcs8(_)
            ));
            for certificate in chain.certificates.iter().chain([&chain.root]) {
                let certificate = X509::from_der(certificate).unwrap();
                assert!(
                    certificate.public_key().unwrap().is_a(key_type),
                    "{profile}"
                );
            }
            openssl_verify(&chain, &chain.root)
                .unwrap_or_else(|error| panic!("{profile} depth {depth}: {error}"));

            let recorder = Arc::new(SchemeRecorder {
                verifier: WebPkiServerVerifier::builder_with_provider(
                    roots(&chain.root),
                    provider(),
                )
                .build()
                .unwrap(),
                schemes: Mutex::new(Vec::new()),
            });
            let client_config = ClientConfig::builder_with_provider(provider())
                .with_protocol_versions(&[&rustls::version::TLS13])
                .unwrap()
                .dangerous()
                .with_custom_certificate_verifier(recorder.clone())
                .with_no_client_auth();
            handshake_with(&chain, &rustls::version::TLS13, client_config)
                .unwrap_or_else(|error| panic!("{profile} depth {depth}: {error}"));
            assert_eq!(
                *recorder.schemes.lock().unwrap(),
                [scheme],
                "{profile} depth {depth}"
            );
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ml_dsa_chains_are_refused_over_tls12() {
    let chain = shared_pki().chain(CertProfile::MlDsa65, 1).unwrap();
    let client_config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS12])
        .unwrap()
        .with_root_certificates(roots(&chain.root))
        .with_no_client_auth();
    let error = handshake_with(&chain, &rustls::version::TLS12, client_config).unwrap_err();
    // The server finds no TLS 1.2 signature scheme for its key and says so.
    assert_eq!(
        error,
        rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure)
    );
}

/// The lines of OpenSSL's text form that an ML-DSA certificate must share with the
/// rcgen-made Ed25519 certificate in the same place: version, names, validity and every
/// extension with its criticality, in order. Key identifiers are masked and profile names
/// replaced; serial numbers, keys and signatures differ by nature.
fn comparable_text(certificate: &CertificateDer<'_>, profile: CertProfile) -> Vec<String> {
    let text = X509::from_der(certificate).unwrap().to_text().unwrap();
    let text = String::from_utf8(text).unwrap();
    let is_key_identifier = |line: &str| {
        line.len() > 20
            && line
                .split(':')
                .all(|byte| byte.len() == 2 && byte.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let mut lines = Vec::new();
    let mut in_extensions = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("X509v3 extensions:") {
            in_extensions = true;
        } else if trimmed.starts_with("Signature Algorithm:") {
            in_extensions = false;
        }
        let kept = in_extensions
            || ["Version:", "Issuer:", "Subject:", "Not Before", "Not After"]
                .iter()
                .any(|start| trimmed.starts_with(start));
        if !kept {
            continue;
        }
        if is_key_identifier(trimmed) {
            lines.push("<key identifier>".to_string());
        } else {
            lines.push(trimmed.replace(profile.as_str(), "<profile>"));
        }
    }
    lines
}

#[test]
fn ml_dsa_certificates_carry_the_fields_of_the_rcgen_profiles() {
    let pki = shared_pki();
    let reference = pki.chain(CertProfile::Ed25519, 3).unwrap();
    for (profile, _, _) in ML_DSA {
        let chain = pki.chain(profile, 3).unwrap();
        let sent = chain.certificates.iter().chain([&chain.root]);
        let reference_sent = reference.certificates.iter().chain([&reference.root]);
        for (position, (certificate, expected)) in sent.zip(reference_sent).enumerate() {
            let lines = comparable_text(certificate, profile);
            assert_eq!(
                lines,
                comparable_text(expected, CertProfile::Ed25519),
                "{profile}, certificate {position} of leaf, intermediates, root"
            );
            assert!(lines.iter().any(|line| line.contains("Key Usage")));
        }
        // Issuer and serial identify a certificate: unique across the whole profile.
        let mut serials: Vec<Vec<u8>> = (1..=MAX_CHAIN_DEPTH)
            .flat_map(|depth| pki.chain(profile, depth).unwrap().certificates)
            .chain([chain.root.clone()])
            .map(|certificate| {
                let certificate = X509::from_der(&certificate).unwrap();
                let mut serial = certificate.issuer_name().to_der().unwrap();
                serial.extend(certificate.serial_number().to_bn().unwrap().to_vec());
                serial
            })
            .collect();
        let count = serials.len();
        serials.sort();
        serials.dedup();
        assert_eq!(serials.len(), count, "{profile}: issuer and serial repeat");
    }
}

#[test]
fn key_files_are_private_and_directories_owner_only() {
    let pki = shared_pki();
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(pki.dir()), 0o700);
    // One profile of each generator: rcgen and OpenSSL (ML-DSA).
    for profile in [CertProfile::EcdsaP256, CertProfile::MlDsa65] {
        let chain = pki.chain(profile, 1).unwrap();
        let profile_dir = chain.key_pem.parent().unwrap();
        assert_eq!(mode(profile_dir), 0o700);
        let mut keys = 0;
        for entry in fs::read_dir(profile_dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|extension| extension == "key") {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
                keys += 1;
            }
        }
        assert_eq!(keys, 6, "{profile}: root, four intermediates, leaf");
    }
}

#[test]
fn the_layout_is_the_documented_one() {
    let pki = shared_pki();
    // The same files whichever generator made the profile (rcgen, or OpenSSL for ML-DSA).
    for (profile, name) in [
        (CertProfile::Ed25519, "ed25519"),
        (CertProfile::MlDsa44, "mldsa44"),
    ] {
        let chain = pki.chain(profile, 4).unwrap();
        // Made here whatever other tests of the shared cache did, so the listing is fixed.
        let client = pki.client_certificate(profile).unwrap();
        let profile_dir = pki.dir().join(name);
        assert_eq!(chain.chain_pem, profile_dir.join("chain4.pem"));
        assert_eq!(chain.key_pem, profile_dir.join("leaf.key"));
        assert_eq!(chain.root_pem, profile_dir.join("root.pem"));
        assert_eq!(
            client.certificate_pem,
            profile_dir.join("client").join("client.pem")
        );
        assert_eq!(
            client.key_pem,
            profile_dir.join("client").join("client.key")
        );
        assert_eq!(client.root_pem, chain.root_pem);
        let mut names: Vec<String> = fs::read_dir(&profile_dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "chain1.pem",
                "chain2.pem",
                "chain3.pem",
                "chain4.pem",
                "chain5.pem",
                "client",
                "intermediate1.key",
                "intermediate2.key",
                "intermediate3.key",
                "intermediate4.key",
                "leaf.key",
                "root.key",
                "root.pem",
            ],
            "{profile}"
        );
    }
}

#[test]
fn a_second_call_reads_the_cache_instead_of_regenerating() {
    let dir = fresh_dir("reuse");
    let first = Pki::open(&dir)
        .unwrap()
        .chain(CertProfile::EcdsaP256, 2)
        .unwrap();
    let second = Pki::open(&dir)
        .unwrap()
        .chain(CertProfile::EcdsaP256, 2)
        .unwrap();
    // Regeneration would make new keys, so equal bytes mean the cache was read.
    assert_eq!(first.certificates, second.certificates);
    assert_eq!(first.root, second.root);
    assert_eq!(
        first.private_key.secret_der(),
        second.private_key.secret_der()
    );
    // Other depths come from the same generation: same root.
    let deeper = Pki::open(&dir)
        .unwrap()
        .chain(CertProfile::EcdsaP256, 5)
        .unwrap();
    assert_eq!(deeper.root, first.root);
    assert_eq!(
        deeper.private_key.secret_der(),
        first.private_key.secret_der()
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn threads_racing_on_a_fresh_directory_end_with_one_consistent_set() {
    let dir = fresh_dir("race");
    let threads = 4;
    let barrier = Arc::new(Barrier::new(threads));
    let chains: Vec<ServedChain> = (0..threads)
        .map(|_| {
            let dir = dir.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let pki = Pki::open(&dir).unwrap();
                barrier.wait();
                pki.chain(CertProfile::EcdsaP384, 3).unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|thread| thread.join().unwrap())
        .collect();
    for chain in &chains[1..] {
        assert_eq!(chain.root, chains[0].root);
        assert_eq!(chain.certificates, chains[0].certificates);
        assert_eq!(
            chain.private_key.secret_der(),
            chains[0].private_key.secret_der()
        );
    }
    verify(&chains[0], &chains[0].root, "localhost").unwrap();
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp-"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary directories left: {leftovers:?}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn depths_zero_and_six_are_errors_naming_the_valid_range() {
    let pki = shared_pki();
    for depth in [0, MAX_CHAIN_DEPTH + 1] {
        let error = pki.chain(CertProfile::Ed25519, depth).unwrap_err();
        assert_eq!(error.kind(), PkiErrorKind::InvalidDepth);
        assert!(error.to_string().contains("out of range"), "{error}");
        assert!(
            error.hint().starts_with("use a depth from 1 to 5"),
            "{}",
            error.hint()
        );
    }
}

#[test]
fn a_damaged_cache_names_the_directory_and_says_to_delete_it() {
    let dir = fresh_dir("damaged");
    let pki = Pki::open(&dir).unwrap();
    let profile_dir = pki.dir().join("ed25519");
    pki.chain(CertProfile::Ed25519, 3).unwrap();

    fs::remove_file(profile_dir.join("chain3.pem")).unwrap();
    let error = pki.chain(CertProfile::Ed25519, 3).unwrap_err();
    assert_eq!(error.kind(), PkiErrorKind::DamagedCache);
    assert!(
        error.message().contains(&profile_dir.display().to_string()),
        "{error}"
    );
    assert!(
        error.message().contains("chain3.pem: file is missing"),
        "{error}"
    );
    assert!(error.hint().starts_with("delete the directory"), "{error}");
    // Depths whose files are intact still work.
    pki.chain(CertProfile::Ed25519, 2).unwrap();

    let key = profile_dir.join("leaf.key");
    let truncated = fs::read_to_string(&key).unwrap()[..40].to_string();
    fs::write(&key, truncated).unwrap();
    let error = pki.chain(CertProfile::Ed25519, 2).unwrap_err();
    assert_eq!(error.kind(), PkiErrorKind::DamagedCache);
    assert!(error.message().contains("leaf.key"), "{error}");

    // Following the hint works: the next use regenerates.
    fs::remove_dir_all(&profile_dir).unwrap();
    assert_eq!(
        pki.chain(CertProfile::Ed25519, 3)
            .unwrap()
            .certificates
            .len(),
        3
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn load_certificates_reads_every_certificate_of_a_pem_file() {
    let chain = shared_pki().chain(CertProfile::EcdsaP256, 5).unwrap();
    assert_eq!(
        load_certificates(&chain.chain_pem).unwrap(),
        chain.certificates
    );
    assert_eq!(
        load_certificates(&chain.root_pem).unwrap(),
        vec![chain.root.clone()]
    );

    // Keys mixed in are skipped.
    let dir = fresh_dir("ca-mixed");
    fs::create_dir_all(&dir).unwrap();
    let mixed = dir.join("mixed.pem");
    let contents =
        fs::read_to_string(&chain.key_pem).unwrap() + &fs::read_to_string(&chain.root_pem).unwrap();
    fs::write(&mixed, contents).unwrap();
    assert_eq!(load_certificates(&mixed).unwrap(), vec![chain.root.clone()]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn load_certificates_explains_each_kind_of_wrong_file() {
    let chain = shared_pki().chain(CertProfile::Ed25519, 1).unwrap();
    let dir = fresh_dir("ca-errors");
    fs::create_dir_all(&dir).unwrap();
    let check = |path: &Path, expected: &str| {
        let error = load_certificates(path).unwrap_err();
        assert_eq!(error.kind(), PkiErrorKind::CaFile);
        let text = error.to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains(expected), "expected '{expected}' in: {text}");
        assert!(!error.hint().is_empty(), "{text}");
    };

    check(&dir.join("missing.pem"), "cannot read the CA file");

    let text = dir.join("notes.txt");
    fs::write(&text, "just some notes\n").unwrap();
    check(&text, "is not PEM");

    let der = dir.join("root.der");
    fs::write(&der, chain.root.as_ref()).unwrap();
    check(&der, "looks like binary DER");

    check(
        &chain.key_pem,
        "holds no certificate (it holds: private key)",
    );

    let empty = dir.join("empty.pem");
    fs::write(&empty, "").unwrap();
    check(&empty, "is not PEM");

    let truncated = dir.join("truncated.pem");
    let root_pem = fs::read_to_string(&chain.root_pem).unwrap();
    fs::write(&truncated, &root_pem[..root_pem.len() / 2]).unwrap();
    check(&truncated, "is not valid PEM");

    fs::remove_dir_all(&dir).unwrap();
}
