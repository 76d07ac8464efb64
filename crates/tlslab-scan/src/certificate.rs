//! The certificate chain as the server sent it, what each certificate says, whether the chain
//! is trusted and names the server, and the server's HSTS header.
//!
//! TLS 1.2 and older send the chain in the clear, and the certificate probe reads it there.
//! Trust, a TLS 1.3-only server's chain and HSTS need a real handshake: one rustls connection
//! with a verifier that records the chain and the system roots' verdict but never refuses,
//! and one HTTP/1.1 request over it.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{aws_lc_rs, CryptoProvider};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde::Serialize;
use x509_parser::prelude::X509Certificate;
use x509_parser::public_key::PublicKey;

use rustls_pki_types::pem::PemObject;

use crate::probe::{ProbeError, Prober};
use crate::scan::ScanError;

/// One certificate, as a person reads it.
#[derive(Debug, Clone, Serialize)]
pub struct CertificateSummary {
    /// The subject's distinguished name, as a person reads it.
    pub subject: String,
    /// The issuer's distinguished name, which the next certificate of an ordered chain names
    /// as its subject.
    pub issuer: String,
    /// `ECDSA P-256`, `RSA 2048`, `Ed25519`, ...
    pub key: String,
    /// The key's type, which decides the suites the server can negotiate with it.
    #[serde(skip)]
    pub key_kind: KeyKind,
    /// Bits of security-relevant size: the RSA modulus, the EC field.
    pub key_bits: usize,
    /// The signature algorithm the issuer signed with.
    pub signature: String,
    /// The start of the validity period, UTC.
    pub not_before: String,
    /// The end of the validity period, UTC.
    pub not_after: String,
    /// Outside its validity period now: the grade is T.
    pub expired: bool,
    /// From notBefore to notAfter, in whole days.
    pub lifespan_days: Option<u64>,
    /// The DNS names and IP addresses of its subjectAltName, which name matching reads.
    pub names: Vec<String>,
}

/// The key types that decide which suites and signature schemes a server can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyKind {
    /// An RSA key: RSA-authenticated suites and RSA key transport.
    Rsa,
    /// An EC key: ECDSA-authenticated suites.
    Ecdsa,
    /// Any other key (Ed25519, ML-DSA), which no pre-1.3 suite authenticates with.
    #[default]
    Other,
}

/// The chain and what follows from it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Certificates {
    /// Leaf first, as sent.
    pub chain: Vec<CertificateSummary>,
    /// Where the chain was read: `TLS 1.2 Certificate message` or `TLS 1.3 (rustls)`.
    pub source: Option<String>,
    /// Whether the leaf names the server name (SNI, or the host).
    pub name_matches: Option<bool>,
    /// Whether each certificate is issued by the next one, as RFC 8446 (4.4.2) asks.
    pub chain_in_order: Option<bool>,
    /// The trust anchors' verdict; `None` when no verified connection was made.
    pub trusted: Option<bool>,
    /// What the chain was judged by: `system roots`, or `--ca FILE`.
    pub trusted_by: Option<String>,
    /// Why the chain is not trusted, as rustls says it.
    pub trust_error: Option<String>,
    /// The Strict-Transport-Security header of `GET /`, if any.
    pub hsts: Option<String>,
    /// Further chains the server sends to a client that cannot use the first one's key
    /// type (nginx with two `ssl_certificate` lines, ECDSA and RSA, as Mozilla's intermediate
    /// profile recommends); empty when the server has one.
    pub others: Vec<OtherChain>,
}

/// A chain a client gets when it offers only suites (TLS 1.2) or signature schemes (TLS
/// 1.3) for another key type than the first chain's.
#[derive(Debug, Clone, Serialize)]
pub struct OtherChain {
    /// The key type the client asked for: `ECDSA` or `RSA`.
    pub elicited_by: String,
    /// Leaf first, as sent.
    pub chain: Vec<CertificateSummary>,
    /// `TLS 1.2 Certificate message` or `TLS 1.3 (rustls)`.
    pub source: String,
    /// Whether its leaf names the server name, as for the first chain.
    pub name_matches: Option<bool>,
    /// Whether each certificate is issued by the next one.
    pub chain_in_order: Option<bool>,
    /// The same anchors' verdict as the first chain's (`trusted_by`), checked offline.
    pub trusted: Option<bool>,
    /// Why it is not trusted, as rustls says it.
    pub trust_error: Option<String>,
}

/// The key type a client can ask for when it wants another chain than the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Only ECDSA suites or signature schemes are offered.
    Ecdsa,
    /// Only RSA suites or signature schemes are offered.
    Rsa,
}

impl Wanted {
    /// The key type's name, as the report says it (`ECDSA`, `RSA`).
    pub fn name(self) -> &'static str {
        match self {
            Wanted::Ecdsa => "ECDSA",
            Wanted::Rsa => "RSA",
        }
    }

    /// The other of the two key types a dual-certificate server has, given the first
    /// chain's; `None` for a key type no server pairs (Ed25519, ML-DSA).
    pub fn other_than(kind: KeyKind) -> Option<Wanted> {
        match kind {
            KeyKind::Ecdsa => Some(Wanted::Rsa),
            KeyKind::Rsa => Some(Wanted::Ecdsa),
            KeyKind::Other => None,
        }
    }

    /// TLS 1.3 signature schemes a key of this type signs with (RSA: PSS only, as RFC 8446
    /// allows for CertificateVerify).
    fn schemes(self) -> &'static [SignatureScheme] {
        match self {
            Wanted::Ecdsa => &[
                SignatureScheme::ECDSA_NISTP256_SHA256,
                SignatureScheme::ECDSA_NISTP384_SHA384,
                SignatureScheme::ECDSA_NISTP521_SHA512,
            ],
            Wanted::Rsa => &[
                SignatureScheme::RSA_PSS_SHA256,
                SignatureScheme::RSA_PSS_SHA384,
                SignatureScheme::RSA_PSS_SHA512,
            ],
        }
    }
}

/// Certificates to trust instead of the system's roots (`--ca`): a lab PKI's root, or a
/// self-signed server's own certificate.
#[derive(Debug, Clone)]
pub struct TrustAnchors {
    /// Where they came from, as the report names it (`--ca lab-root.pem`).
    pub source: String,
    /// DER, one per certificate.
    pub certificates: Vec<Vec<u8>>,
}

impl TrustAnchors {
    /// Every certificate in the PEM file at `path`; a file with none is an error, since
    /// trusting nothing would grade every server T for a typing mistake.
    pub fn load(path: &std::path::Path) -> Result<TrustAnchors, ScanError> {
        let path_buf = || path.to_path_buf();
        let text = std::fs::read(path).map_err(|source| ScanError::TrustFile {
            path: path_buf(),
            source,
        })?;
        let certificates = CertificateDer::pem_slice_iter(&text)
            .map(|certificate| certificate.map(|der| der.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| ScanError::TrustPem {
                path: path_buf(),
                source,
            })?;
        if certificates.is_empty() {
            return Err(ScanError::TrustEmpty { path: path_buf() });
        }
        for (index, der) in certificates.iter().enumerate() {
            if let Err(error) = x509_parser::parse_x509_certificate(der) {
                return Err(ScanError::TrustCertificate {
                    path: path_buf(),
                    number: index + 1,
                    source: match error {
                        x509_parser::nom::Err::Error(error)
                        | x509_parser::nom::Err::Failure(error) => error,
                        x509_parser::nom::Err::Incomplete(_) => {
                            x509_parser::error::X509Error::InvalidCertificate
                        }
                    },
                });
            }
        }
        Ok(TrustAnchors {
            source: format!("--ca {}", path.display()),
            certificates,
        })
    }
}

impl Certificates {
    /// The leaf (the server's own certificate), which names and validity are judged on.
    pub fn leaf(&self) -> Option<&CertificateSummary> {
        self.chain.first()
    }
}

/// Summarizes `flight` (a chain read in the clear) and, when the server speaks TLS 1.2 or
/// 1.3, makes the rustls connection for trust, HSTS, and a TLS 1.3-only server's chain.
/// `other_flights` are chains read in the clear for another key type (see
/// [`OtherChain`]); those whose leaf differs from the first chain's are reported. A TLS
/// 1.3-only server is asked once more, over rustls, for the key type its first chain is not.
pub fn inspect(
    prober: &Prober,
    server_name: &str,
    flight: Vec<Vec<u8>>,
    other_flights: Vec<(Wanted, Vec<Vec<u8>>)>,
    rustls_can_connect: bool,
    anchors: Option<&TrustAnchors>,
) -> Certificates {
    let mut certificates = Certificates::default();
    let mut chain = flight;
    if !chain.is_empty() {
        certificates.source = Some("TLS 1.2 Certificate message".into());
    }
    if rustls_can_connect {
        let verified = prober.limiter.with_permit(|| {
            connect(
                prober,
                server_name,
                anchors.map(|anchors| anchors.certificates.as_slice()),
                None,
            )
        });
        match verified {
            Ok(connection) => {
                if chain.is_empty() && !connection.chain.is_empty() {
                    chain = connection.chain;
                    certificates.source = Some("TLS 1.3 (rustls)".into());
                }
                certificates.trusted = connection.trust.as_ref().map(Result::is_ok);
                if certificates.trusted.is_some() {
                    certificates.trusted_by = Some(anchors.map_or_else(
                        || "system roots".to_string(),
                        |anchors| anchors.source.clone(),
                    ));
                }
                certificates.trust_error = connection
                    .trust
                    .and_then(Result::err)
                    .map(|error| error.to_string());
                certificates.hsts = connection.hsts;
            }
            Err(error) => prober.note("rustls connection", &error),
        }
    }
    let summary = summarize_chain(&chain, server_name);
    certificates.chain = summary.chain;
    certificates.name_matches = summary.name_matches;
    certificates.chain_in_order = summary.chain_in_order;

    let mut other_flights: Vec<(Wanted, Vec<Vec<u8>>, &str)> = other_flights
        .into_iter()
        .map(|(wanted, flight)| (wanted, flight, "TLS 1.2 Certificate message"))
        .collect();
    let tls13_only = rustls_can_connect
        && certificates.source.as_deref() == Some("TLS 1.3 (rustls)")
        && other_flights.is_empty();
    if let Some(wanted) = certificates
        .leaf()
        .and_then(|leaf| Wanted::other_than(leaf.key_kind))
        .filter(|_| tls13_only)
    {
        // A server with no certificate for these schemes refuses the handshake, and one
        // that sends its only chain anyway sends the same leaf: neither is reported.
        let asked = prober
            .limiter
            .with_permit(|| connect(prober, server_name, Some(&[]), Some(wanted.schemes())));
        if let Ok(connection) = asked {
            other_flights.push((wanted, connection.chain, "TLS 1.3 (rustls)"));
        }
    }
    for (wanted, flight, source) in other_flights {
        if flight.is_empty() || flight.first() == chain.first() {
            continue;
        }
        let summary = summarize_chain(&flight, server_name);
        let trust = judge(&flight, server_name, anchors);
        certificates.others.push(OtherChain {
            elicited_by: wanted.name().into(),
            chain: summary.chain,
            source: source.into(),
            name_matches: summary.name_matches,
            chain_in_order: summary.chain_in_order,
            trusted: trust.as_ref().map(Result::is_ok),
            trust_error: trust.and_then(Result::err).map(|error| error.to_string()),
        });
    }
    certificates
}

/// What a chain says, read from its DER.
struct ChainSummary {
    chain: Vec<CertificateSummary>,
    name_matches: Option<bool>,
    chain_in_order: Option<bool>,
}

fn summarize_chain(chain: &[Vec<u8>], server_name: &str) -> ChainSummary {
    let parsed: Vec<Option<X509Certificate<'_>>> = chain
        .iter()
        .map(|der| {
            x509_parser::parse_x509_certificate(der)
                .ok()
                .map(|(_, c)| c)
        })
        .collect();
    let summaries: Vec<CertificateSummary> = parsed
        .iter()
        .map(|certificate| match certificate {
            Some(certificate) => summarize(certificate),
            None => CertificateSummary {
                subject: "(does not parse)".into(),
                issuer: String::new(),
                key: String::new(),
                key_kind: KeyKind::Other,
                key_bits: 0,
                signature: String::new(),
                not_before: String::new(),
                not_after: String::new(),
                expired: false,
                lifespan_days: None,
                names: Vec::new(),
            },
        })
        .collect();
    let (name_matches, chain_in_order) = match summaries.first() {
        Some(leaf) => (
            Some(name_matches(&leaf.names, &leaf.subject, server_name)),
            Some(parsed.windows(2).all(|pair| match pair {
                [Some(child), Some(parent)] => child.issuer() == parent.subject(),
                _ => false,
            })),
        ),
        None => (None, None),
    };
    ChainSummary {
        chain: summaries,
        name_matches,
        chain_in_order,
    }
}

/// The anchors' verdict on a chain read without a rustls connection (a further chain: the
/// connection judged the first); `None` when there are no anchors to judge by or the chain
/// is empty.
fn judge(
    chain: &[Vec<u8>],
    server_name: &str,
    anchors: Option<&TrustAnchors>,
) -> Option<Result<(), rustls::Error>> {
    let verifier = trust_verifier(
        &every_algorithm(),
        anchors.map(|anchors| anchors.certificates.as_slice()),
    )?;
    let (leaf, intermediates) = chain.split_first()?;
    let intermediates: Vec<CertificateDer<'_>> = intermediates
        .iter()
        .map(|der| CertificateDer::from(der.as_slice()))
        .collect();
    let name = ServerName::try_from(server_name.to_string()).ok()?;
    Some(
        verifier
            .verify_server_cert(
                &CertificateDer::from(leaf.as_slice()),
                &intermediates,
                &name,
                &[],
                UnixTime::now(),
            )
            .map(|_| ()),
    )
}

fn summarize(certificate: &X509Certificate<'_>) -> CertificateSummary {
    let (key, key_kind, key_bits) = key_of(certificate);
    let validity = certificate.validity();
    CertificateSummary {
        subject: certificate.subject().to_string(),
        issuer: certificate.issuer().to_string(),
        key,
        key_kind,
        key_bits,
        signature: signature_name(&certificate.signature_algorithm.algorithm.to_id_string()),
        not_before: validity.not_before.to_string(),
        not_after: validity.not_after.to_string(),
        expired: !validity.is_valid(),
        lifespan_days: u64::try_from(
            validity.not_after.timestamp() - validity.not_before.timestamp(),
        )
        .ok()
        .map(|seconds| seconds / 86_400),
        names: tlslab_core::certificate::subject_alternative_names(certificate),
    }
}

fn key_of(certificate: &X509Certificate<'_>) -> (String, KeyKind, usize) {
    let info = certificate.public_key();
    match info.parsed() {
        Ok(PublicKey::RSA(rsa)) => {
            let bits = rsa.key_size();
            (format!("RSA {bits}"), KeyKind::Rsa, bits)
        }
        Ok(PublicKey::EC(_)) => {
            let curve = info
                .algorithm
                .parameters
                .as_ref()
                .and_then(|parameters| parameters.as_oid().ok())
                .map(|oid| oid.to_id_string());
            let (name, bits) = match curve.as_deref() {
                Some("1.2.840.10045.3.1.7") => ("P-256", 256),
                Some("1.3.132.0.34") => ("P-384", 384),
                Some("1.3.132.0.35") => ("P-521", 521),
                _ => ("unknown curve", 0),
            };
            (format!("ECDSA {name}"), KeyKind::Ecdsa, bits)
        }
        _ => {
            let name = match info.algorithm.algorithm.to_id_string().as_str() {
                "1.3.101.112" => "Ed25519".to_string(),
                "1.3.101.113" => "Ed448".to_string(),
                "2.16.840.1.101.3.4.3.17" => "ML-DSA-44".to_string(),
                "2.16.840.1.101.3.4.3.18" => "ML-DSA-65".to_string(),
                "2.16.840.1.101.3.4.3.19" => "ML-DSA-87".to_string(),
                other => format!("key {other}"),
            };
            (name, KeyKind::Other, 0)
        }
    }
}

/// OpenSSL's names for the signature algorithms (Mozilla's guidelines use them).
fn signature_name(oid: &str) -> String {
    match oid {
        "1.2.840.113549.1.1.5" => "sha1WithRSAEncryption",
        "1.2.840.113549.1.1.11" => "sha256WithRSAEncryption",
        "1.2.840.113549.1.1.12" => "sha384WithRSAEncryption",
        "1.2.840.113549.1.1.13" => "sha512WithRSAEncryption",
        "1.2.840.113549.1.1.10" => "rsassaPss",
        "1.2.840.10045.4.3.2" => "ecdsa-with-SHA256",
        "1.2.840.10045.4.3.3" => "ecdsa-with-SHA384",
        "1.2.840.10045.4.3.4" => "ecdsa-with-SHA512",
        "1.3.101.112" => "ED25519",
        "1.3.101.113" => "ED448",
        "2.16.840.1.101.3.4.3.17" => "ML-DSA-44",
        "2.16.840.1.101.3.4.3.18" => "ML-DSA-65",
        "2.16.840.1.101.3.4.3.19" => "ML-DSA-87",
        other => return other.to_string(),
    }
    .into()
}

/// RFC 6125: a SAN equal to the name, or a wildcard for exactly one leftmost label. The
/// subject's CN counts only when there are no SANs (browsers ignore it otherwise).
pub fn name_matches(names: &[String], subject: &str, server_name: &str) -> bool {
    let wanted = server_name.trim_end_matches('.').to_ascii_lowercase();
    let matches = |pattern: &str| {
        let pattern = pattern.trim_end_matches('.').to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(suffix) => wanted
                .split_once('.')
                .is_some_and(|(label, rest)| !label.is_empty() && rest == suffix),
            None => pattern == wanted,
        }
    };
    if names.is_empty() {
        return subject
            .split(',')
            .filter_map(|part| part.trim().strip_prefix("CN="))
            .any(matches);
    }
    names.iter().any(|name| matches(name))
}

/// What the rustls connection learned.
struct Connection {
    chain: Vec<Vec<u8>>,
    trust: Option<Result<(), rustls::Error>>,
    hsts: Option<String>,
}

/// Records the chain and the system roots' verdict, and lets the handshake go on either way
/// (the scan reports an untrusted chain; it does not stop at one).
#[derive(Debug)]
struct RecordingVerifier {
    inner: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
    /// The signature schemes offered, when not every one the provider verifies: asking
    /// for one key type's chain.
    schemes: Option<&'static [SignatureScheme]>,
    seen: Mutex<Seen>,
}

/// The chain a verifier saw (DER, leaf first) and the system roots' verdict on it.
type Seen = (Vec<Vec<u8>>, Option<Result<(), rustls::Error>>);

impl ServerCertVerifier for RecordingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = self.inner.as_ref().map(|inner| {
            inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
                .map(|_| ())
        });
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        seen.0 = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|certificate| certificate.to_vec())
            .collect();
        seen.1 = verdict;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            certificate,
            signature,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            certificate,
            signature,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        match self.schemes {
            Some(schemes) => schemes.to_vec(),
            None => self
                .provider
                .signature_verification_algorithms
                .supported_schemes(),
        }
    }
}

/// The trust anchors a chain is judged by: `--ca`'s certificates when given, else the
/// system's; `None` when there are none to judge by.
fn trust_verifier(
    provider: &Arc<CryptoProvider>,
    anchors: Option<&[Vec<u8>]>,
) -> Option<Arc<WebPkiServerVerifier>> {
    let mut roots = RootCertStore::empty();
    let added = match anchors {
        Some(anchors) => {
            roots
                .add_parsable_certificates(
                    anchors
                        .iter()
                        .map(|der| CertificateDer::from(der.as_slice()).into_owned()),
                )
                .0
        }
        None => {
            let loaded = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(loaded.certs).0
        }
    };
    if added == 0 {
        return None;
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .ok()
}

/// Every suite and group aws-lc-rs has: the scan's rustls connections must reach any server
/// rustls can talk to, not only one with a default configuration.
fn every_algorithm() -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        cipher_suites: aws_lc_rs::ALL_CIPHER_SUITES.to_vec(),
        kx_groups: aws_lc_rs::ALL_KX_GROUPS.to_vec(),
        ..aws_lc_rs::default_provider()
    })
}

/// A rustls client for `versions` whose verifier records the chain and the anchors' verdict.
fn recording_client(
    server_name: &str,
    versions: &[&'static rustls::SupportedProtocolVersion],
    anchors: Option<&[Vec<u8>]>,
    alpn: Vec<Vec<u8>>,
    schemes: Option<&'static [SignatureScheme]>,
) -> Result<(rustls::ClientConnection, Arc<RecordingVerifier>), ProbeError> {
    let provider = every_algorithm();
    let verifier = Arc::new(RecordingVerifier {
        inner: trust_verifier(&provider, anchors),
        provider: provider.clone(),
        schemes,
        seen: Mutex::new((Vec::new(), None)),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(ProbeError::Client)?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    config.alpn_protocols = alpn;
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|error| ProbeError::ServerName(Arc::new(error)))?;
    let client =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(ProbeError::Client)?;
    Ok((client, verifier))
}

/// The ALPN protocol a TLS 1.3 server selects when a client offers only `protocol`:
/// `Some(protocol)`, or `None` when it selects none (or refuses the handshake with
/// no_application_protocol, RFC 7301, 3.2). TLS 1.3 sends the choice in the encrypted
/// EncryptedExtensions, so a raw ClientHello cannot read it: this completes a real rustls
/// handshake (certificate not checked: the trust connection judges that) and closes.
pub fn tls13_alpn(prober: &Prober, protocol: &str) -> Result<Option<String>, ProbeError> {
    let server_name = prober.server_name.as_deref().unwrap_or("localhost");
    let (client, _) = recording_client(
        server_name,
        &[&rustls::version::TLS13],
        Some(&[]),
        vec![protocol.as_bytes().to_vec()],
        None,
    )?;
    let stream = prober.connect()?;
    let mut tls = rustls::StreamOwned::new(client, stream);
    while tls.conn.is_handshaking() {
        if let Err(error) = tls.conn.complete_io(&mut tls.sock) {
            let refused = error
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .is_some_and(|inner| {
                    matches!(
                        inner,
                        rustls::Error::AlertReceived(
                            rustls::AlertDescription::NoApplicationProtocol
                        )
                    )
                });
            return if refused {
                Ok(None)
            } else {
                Err(handshake_failed(error))
            };
        }
    }
    let selected = tls
        .conn
        .alpn_protocol()
        .map(|selected| String::from_utf8_lossy(selected).into_owned());
    tls.conn.send_close_notify();
    let _ = tls.conn.complete_io(&mut tls.sock);
    Ok(selected)
}

/// One rustls handshake (every suite and group aws-lc-rs has; `schemes` limits the
/// signature schemes offered) and `GET /` over HTTP/1.1.
fn connect(
    prober: &Prober,
    server_name: &str,
    anchors: Option<&[Vec<u8>]>,
    schemes: Option<&'static [SignatureScheme]>,
) -> Result<Connection, ProbeError> {
    let (client, verifier) = recording_client(
        server_name,
        rustls::ALL_VERSIONS,
        anchors,
        Vec::new(),
        schemes,
    )?;
    let stream = prober.connect()?;
    let mut tls = rustls::StreamOwned::new(client, stream);
    let host = if server_name.contains(':') {
        format!("[{server_name}]")
    } else {
        server_name.to_string()
    };
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {host}\r\nUser-Agent: tlslab-scan\r\nConnection: close\r\n\r\n"
    );
    let wrote = tls.write_all(request.as_bytes()).and_then(|()| tls.flush());
    let mut response = Vec::new();
    if wrote.is_ok() {
        let mut buffer = [0u8; 4096];
        // The headers are all we want; a server that keeps sending is cut off at 64 KiB.
        while response.len() < 64 * 1024 && !contains(&response, b"\r\n\r\n") {
            match tls.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => response.extend_from_slice(&buffer[..read]),
            }
        }
    }
    if tls.conn.is_handshaking() {
        // A failed handshake: send the alert rustls queued, and read nothing more (a flush
        // would go on with the handshake and wait the whole timeout for a peer that stays
        // silent after its broken answer).
        let _ = tls.conn.write_tls(&mut tls.sock);
    } else {
        tls.conn.send_close_notify();
        let _ = tls.flush();
    }
    let (chain, trust) = std::mem::take(
        &mut *verifier
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()),
    );
    if chain.is_empty() {
        return Err(match wrote {
            Err(error) => handshake_failed(error),
            Ok(()) => ProbeError::Handshake(None),
        });
    }
    Ok(Connection {
        chain,
        trust,
        hsts: hsts_header(&response),
    })
}

/// A rustls handshake's failure as a probe error: a message rustls could not decode (a
/// ServerHello whose extensions run past its end) is a malformed answer, as the raw
/// probes' reader calls it; anything else (an alert, a reset, a timeout) as rustls says it.
fn handshake_failed(error: std::io::Error) -> ProbeError {
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(inner @ rustls::Error::InvalidMessage(_)) => {
            ProbeError::Malformed(format!("rustls: {inner}"))
        }
        _ => ProbeError::Handshake(Some(Arc::new(error))),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The Strict-Transport-Security value from an HTTP/1.1 response head.
fn hsts_header(response: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(response);
    let head = text.split("\r\n\r\n").next()?;
    head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("strict-transport-security")
            .then(|| value.trim().to_string())
    })
}

/// `max-age` in seconds from an HSTS value.
pub fn hsts_max_age(value: &str) -> Option<u64> {
    value.split(';').find_map(|directive| {
        let (name, age) = directive.trim().split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("max-age")
            .then(|| age.trim().trim_matches('"').parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_as_rfc_6125_says() {
        let names = vec!["localhost".to_string(), "*.example.com".to_string()];
        assert!(name_matches(&names, "", "localhost"));
        assert!(name_matches(&names, "", "www.example.com"));
        assert!(!name_matches(&names, "", "example.com"));
        assert!(!name_matches(&names, "", "a.b.example.com"));
        assert!(!name_matches(&names, "CN=other", "other"));
        assert!(name_matches(&[], "CN=other", "other"));
    }

    #[test]
    fn a_ca_file_that_cannot_be_used_keeps_what_failed_underneath() {
        use std::error::Error as _;
        let directory = std::env::temp_dir().join(format!("tlslab-scan-ca-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        // Not there: the system's error, whole.
        let error = TrustAnchors::load(&directory.join("missing.pem"))
            .err()
            .unwrap();
        assert!(matches!(error, ScanError::TrustFile { .. }), "{error:?}");
        let io = error
            .source()
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .expect("the io::Error is kept");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        // A PEM block whose base64 is broken: the PEM reader's error.
        let broken = directory.join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let error = TrustAnchors::load(&broken).err().unwrap();
        assert!(matches!(error, ScanError::TrustPem { .. }), "{error:?}");
        assert!(error
            .source()
            .is_some_and(|source| source.is::<rustls_pki_types::pem::Error>()));
        // A CERTIFICATE block that is no certificate: the X.509 reader's error.
        let junk = directory.join("junk.pem");
        std::fs::write(
            &junk,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let error = TrustAnchors::load(&junk).err().unwrap();
        assert!(
            matches!(error, ScanError::TrustCertificate { number: 1, .. }),
            "{error:?}"
        );
        assert!(error
            .source()
            .is_some_and(|source| source.is::<x509_parser::error::X509Error>()));
        assert_eq!(error.kind(), crate::ScanErrorKind::Usage);
        assert!(error.hint().contains("PEM"), "{}", error.hint());
        std::fs::remove_dir_all(directory).unwrap();
    }

    #[test]
    fn hsts_is_read_from_the_head() {
        let response = b"HTTP/1.1 200 OK\r\nStrict-Transport-Security: max-age=63072000; includeSubDomains\r\n\r\nbody";
        let value = hsts_header(response).unwrap();
        assert_eq!(hsts_max_age(&value), Some(63072000));
        assert_eq!(hsts_header(b"HTTP/1.1 200 OK\r\n\r\n"), None);
    }
}
