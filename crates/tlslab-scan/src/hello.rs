//! Our own ClientHello, byte by byte.
//!
//! A raw builder is the only way to ask these questions: no TLS library still speaks SSL 3.0,
//! few offer TLS 1.0 and 1.1 with every legacy suite (export, RC4, 3DES, anonymous, CBC with
//! every MAC), and none lets a caller offer one exact suite list or one exact group list in
//! one exact order, which is what finding a server's suites and its preference takes. The
//! handshake is never completed: each probe stops at the server's first answer (ServerHello,
//! HelloRetryRequest or alert), so a key share needs only the right shape, not a private key.

use tls_parser::{TlsCipherKx, TlsCipherSuite};

/// A protocol version as the wire spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// SSL 3.0, probed to find the servers that still accept it (POODLE).
    Ssl3,
    /// TLS 1.0 (RFC 2246), deprecated by RFC 8996.
    Tls10,
    /// TLS 1.1 (RFC 4346), deprecated by RFC 8996.
    Tls11,
    /// TLS 1.2 (RFC 5246).
    Tls12,
    /// TLS 1.3 (RFC 8446), asked for with supported_versions.
    Tls13,
}

impl Version {
    /// Every version a scan probes, oldest first.
    pub const ALL: [Version; 5] = [
        Version::Ssl3,
        Version::Tls10,
        Version::Tls11,
        Version::Tls12,
        Version::Tls13,
    ];

    /// The version's code point on the wire (`0x0303` for TLS 1.2).
    pub fn code_point(self) -> u16 {
        match self {
            Version::Ssl3 => 0x0300,
            Version::Tls10 => 0x0301,
            Version::Tls11 => 0x0302,
            Version::Tls12 => 0x0303,
            Version::Tls13 => 0x0304,
        }
    }

    /// The version a ServerHello names, if it is one a scan knows.
    pub fn from_code_point(code_point: u16) -> Option<Version> {
        Version::ALL
            .into_iter()
            .find(|version| version.code_point() == code_point)
    }

    /// The name people read: `SSL 3.0`, `TLS 1.2`.
    pub fn name(self) -> &'static str {
        match self {
            Version::Ssl3 => "SSL 3.0",
            Version::Tls10 => "TLS 1.0",
            Version::Tls11 => "TLS 1.1",
            Version::Tls12 => "TLS 1.2",
            Version::Tls13 => "TLS 1.3",
        }
    }

    /// Mozilla's spelling in its guidelines (`TLSv1.2`, `SSLv3`).
    pub fn mozilla_name(self) -> &'static str {
        match self {
            Version::Ssl3 => "SSLv3",
            Version::Tls10 => "TLSv1",
            Version::Tls11 => "TLSv1.1",
            Version::Tls12 => "TLSv1.2",
            Version::Tls13 => "TLSv1.3",
        }
    }
}

/// The five TLS 1.3 suites (RFC 8446, RFC 9150 has no others a server negotiates).
pub const TLS13_SUITES: [u16; 5] = [0x1301, 0x1302, 0x1303, 0x1304, 0x1305];

/// Code points a legacy ClientHello must not offer as suites: TLS_NULL_WITH_NULL_NULL (no
/// server may pick it), the renegotiation and fallback signalling values (not suites).
const NOT_SUITES: [u16; 3] = [0x0000, 0x00ff, 0x5600];

/// Every pre-TLS 1.3 suite in the IANA registry as tls-parser knows it (about 340: every
/// suite OpenSSL, BoringSSL, GnuTLS, SChannel or Java can negotiate is among them), sorted by
/// code point. Offering the whole registry is what lets a scan find a suite nobody expected.
pub fn legacy_suites() -> Vec<u16> {
    let mut suites: Vec<u16> = (0..=u16::MAX)
        .filter(|id| !NOT_SUITES.contains(id))
        .filter_map(TlsCipherSuite::from_id)
        .filter(|suite| suite.kx != TlsCipherKx::Tls13)
        .map(|suite| suite.id.0)
        .collect();
    suites.sort_unstable();
    suites
}

/// The IANA name of a suite (`TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`), or `0x` and four
/// hex digits for one outside the registry.
pub fn suite_name(id: u16) -> String {
    TlsCipherSuite::from_id(id).map_or_else(|| format!("0x{id:04x}"), |suite| suite.name.into())
}

/// The groups a scan asks about, by IANA code point.
pub mod groups {
    /// NIST P-256.
    pub const SECP256R1: u16 = 0x0017;
    /// NIST P-384.
    pub const SECP384R1: u16 = 0x0018;
    /// NIST P-521.
    pub const SECP521R1: u16 = 0x0019;
    /// X25519 (RFC 7748).
    pub const X25519: u16 = 0x001d;
    /// X448 (RFC 7748).
    pub const X448: u16 = 0x001e;
    /// RFC 7919's 2048-bit finite-field group.
    pub const FFDHE2048: u16 = 0x0100;
    /// RFC 7919's 3072-bit finite-field group.
    pub const FFDHE3072: u16 = 0x0101;
    /// RFC 7919's 4096-bit finite-field group.
    pub const FFDHE4096: u16 = 0x0102;
    /// RFC 7919's 6144-bit finite-field group.
    pub const FFDHE6144: u16 = 0x0103;
    /// RFC 7919's 8192-bit finite-field group.
    pub const FFDHE8192: u16 = 0x0104;
    /// ML-KEM-512 alone (FIPS 203), no classical half.
    pub const MLKEM512: u16 = 0x0200;
    /// ML-KEM-768 alone.
    pub const MLKEM768: u16 = 0x0201;
    /// ML-KEM-1024 alone.
    pub const MLKEM1024: u16 = 0x0202;
    /// The hybrid of P-256 and ML-KEM-768.
    pub const SECP256R1MLKEM768: u16 = 0x11eb;
    /// The hybrid of X25519 and ML-KEM-768: what browsers send first today.
    pub const X25519MLKEM768: u16 = 0x11ec;
    /// The hybrid of P-384 and ML-KEM-1024.
    pub const SECP384R1MLKEM1024: u16 = 0x11ed;

    /// What TLS 1.3 probes ask about, in the order a modern client prefers them.
    pub const TLS13: [u16; 16] = [
        X25519MLKEM768,
        SECP256R1MLKEM768,
        SECP384R1MLKEM1024,
        MLKEM768,
        MLKEM1024,
        MLKEM512,
        X25519,
        SECP256R1,
        SECP384R1,
        SECP521R1,
        X448,
        FFDHE2048,
        FFDHE3072,
        FFDHE4096,
        FFDHE6144,
        FFDHE8192,
    ];

    /// What TLS 1.2's ECDHE can use (RFC 8422): the hybrids and finite-field groups are not
    /// ECDHE curves.
    pub const TLS12_ECDHE: [u16; 5] = [X25519, SECP256R1, SECP384R1, SECP521R1, X448];
}

/// A group's name as tlslab spells it everywhere (`x25519mlkem768`).
pub fn group_name(code_point: u16) -> String {
    tlslab_core::names::group(code_point)
}

/// A key share of the right shape for `group`. For the elliptic curves it is the curve's
/// generator (a valid point, which servers that check points accept; the shared secret would
/// be worthless, but the handshake never gets that far); for X25519 and X448 the base point.
/// `None` for groups whose share we cannot shape validly: ML-KEM encapsulation keys fail
/// the FIPS 203 modulus check when random, and finite-field shares are long. Those groups are
/// probed with an empty key_share, which a server that supports them answers with a
/// HelloRetryRequest naming the group (RFC 8446, 4.1.4).
pub fn key_share(group: u16) -> Option<Vec<u8>> {
    match group {
        groups::X25519 => {
            let mut share = vec![0u8; 32];
            share[0] = 9;
            Some(share)
        }
        groups::X448 => {
            let mut share = vec![0u8; 56];
            share[0] = 5;
            Some(share)
        }
        groups::SECP256R1 => Some(P256_GENERATOR.to_vec()),
        _ => None,
    }
}

/// The uncompressed P-256 generator point (SEC 2, 2.4.2).
const P256_GENERATOR: [u8; 65] = [
    0x04, 0x6b, 0x17, 0xd1, 0xf2, 0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6, 0xe5, 0x63, 0xa4, 0x40,
    0xf2, 0x77, 0x03, 0x7d, 0x81, 0x2d, 0xeb, 0x33, 0xa0, 0xf4, 0xa1, 0x39, 0x45, 0xd8, 0x98, 0xc2,
    0x96, 0x4f, 0xe3, 0x42, 0xe2, 0xfe, 0x1a, 0x7f, 0x9b, 0x8e, 0xe7, 0xeb, 0x4a, 0x7c, 0x0f, 0x9e,
    0x16, 0x2b, 0xce, 0x33, 0x57, 0x6b, 0x31, 0x5e, 0xce, 0xcb, 0xb6, 0x40, 0x68, 0x37, 0xbf, 0x51,
    0xf5,
];

/// Signature schemes a ClientHello offers: every one a server certificate may need, so that
/// a suite (or a whole version) is never refused for a signature reason the scan did not
/// ask about. That is every scheme either backend's client offers (rustls with aws-lc-rs;
/// OpenSSL 3.0 and 4.0 by default, as read from their ClientHellos, their legacy SHA-1,
/// SHA-224 and DSA ones included) and every one tlslab's lab server can sign with: a server
/// whose only certificate is ML-DSA (FIPS 204; draft-ietf-tls-mldsa) answers TLS 1.3 only
/// to a client that offers its parameter set.
#[rustfmt::skip]
pub const SIGNATURE_SCHEMES: [u16; 30] = [
    // ecdsa_secp256r1_sha256, ecdsa_secp384r1_sha384, ecdsa_secp521r1_sha512
    0x0403, 0x0503, 0x0603,
    // ed25519, ed448
    0x0807, 0x0808,
    // rsa_pss_rsae_sha256, _sha384, _sha512; rsa_pss_pss_sha256, _sha384, _sha512
    0x0804, 0x0805, 0x0806, 0x0809, 0x080a, 0x080b,
    // rsa_pkcs1_sha256, _sha384, _sha512
    0x0401, 0x0501, 0x0601,
    // mldsa44, mldsa65, mldsa87
    0x0904, 0x0905, 0x0906,
    // ecdsa_brainpoolP256r1tls13_sha256, P384r1tls13_sha384, P512r1tls13_sha512
    0x081a, 0x081b, 0x081c,
    // sm2sig_sm3 (RFC 8998; OpenSSL 4 offers it)
    0x0708,
    // TLS 1.2 only: ecdsa_sha224, rsa_pkcs1_sha224, dsa_sha224; dsa_sha256, _sha384, _sha512
    0x0303, 0x0301, 0x0302, 0x0402, 0x0502, 0x0602,
    // TLS 1.2 only: ecdsa_sha1, rsa_pkcs1_sha1, dsa_sha1
    0x0203, 0x0201, 0x0202,
];

/// One ClientHello: exactly what it offers, in order.
#[derive(Debug, Clone)]
pub struct ClientHello {
    /// For TLS 1.3 the legacy_version is TLS 1.2 and supported_versions says 1.3.
    pub version: Version,
    /// Cipher suites, by code point, in the order offered: the order the server's choice is
    /// told against.
    pub suites: Vec<u16>,
    /// supported_groups, in order.
    pub groups: Vec<u16>,
    /// Groups to send a key share for (TLS 1.3; each must have a [`key_share`] shape).
    /// Empty asks the server for a HelloRetryRequest.
    pub key_shares: Vec<u16>,
    /// The server_name sent (SNI); `None` for an IP address, which SNI cannot carry.
    pub server_name: Option<String>,
    /// ALPN protocols offered, in order.
    pub alpn: Vec<String>,
}

impl ClientHello {
    /// A ClientHello for `version` offering `suites`, with every group TLS 1.2's ECDHE (or
    /// TLS 1.3) can use and, for TLS 1.3, key shares for X25519 and P-256.
    pub fn new(version: Version, suites: Vec<u16>, server_name: Option<&str>) -> ClientHello {
        let (groups, key_shares) = if version == Version::Tls13 {
            (
                groups::TLS13.to_vec(),
                vec![groups::X25519, groups::SECP256R1],
            )
        } else {
            (groups::TLS12_ECDHE.to_vec(), Vec::new())
        };
        ClientHello {
            version,
            suites,
            groups,
            key_shares,
            server_name: server_name.map(String::from),
            alpn: Vec::new(),
        }
    }

    /// The whole TLS record that carries this ClientHello.
    pub fn to_record(&self) -> Vec<u8> {
        let body = self.handshake_body();
        let mut handshake = Vec::with_capacity(body.len() + 4);
        handshake.push(1); // client_hello
        push_u24(&mut handshake, body.len());
        handshake.extend_from_slice(&body);
        let mut record = Vec::with_capacity(handshake.len() + 5);
        record.push(22); // handshake
                         // SSL 3.0 servers may refuse a TLS record version; everyone else expects 0x0301
                         // (RFC 8446, 5.1: "for maximal compatibility").
        let record_version = if self.version == Version::Ssl3 {
            0x0300
        } else {
            0x0301
        };
        record.extend_from_slice(&u16::to_be_bytes(record_version));
        push_u16(&mut record, handshake.len());
        record.extend_from_slice(&handshake);
        record
    }

    fn handshake_body(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let legacy_version = self.version.min(Version::Tls12).code_point();
        body.extend_from_slice(&legacy_version.to_be_bytes());
        body.extend((0..32).map(|_| fastrand::u8(..)));
        // TLS 1.3 servers expect a 32-byte session id in compatibility mode (RFC 8446, D.4);
        // older versions get an empty one so they do not try to resume.
        if self.version == Version::Tls13 {
            body.push(32);
            body.extend((0..32).map(|_| fastrand::u8(..)));
        } else {
            body.push(0);
        }
        push_u16(&mut body, self.suites.len() * 2);
        for suite in &self.suites {
            body.extend_from_slice(&suite.to_be_bytes());
        }
        body.extend_from_slice(&[1, 0]); // compression: null only
        let extensions = self.extensions();
        push_u16(&mut body, extensions.len());
        body.extend_from_slice(&extensions);
        body
    }

    fn extensions(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(name) = self.server_name.as_deref().filter(|name| is_dns_name(name)) {
            let mut list = vec![0]; // host_name
            push_u16(&mut list, name.len());
            list.extend_from_slice(name.as_bytes());
            let mut data = Vec::new();
            push_u16(&mut data, list.len());
            data.extend_from_slice(&list);
            push_extension(&mut out, 0x0000, &data);
        }
        if !self.groups.is_empty() {
            push_extension(&mut out, 0x000a, &u16_list(&self.groups));
            push_extension(&mut out, 0x000b, &[1, 0]); // ec_point_formats: uncompressed
        }
        if self.version >= Version::Tls12 {
            push_extension(&mut out, 0x000d, &u16_list(&SIGNATURE_SCHEMES));
        }
        if !self.alpn.is_empty() {
            let mut list = Vec::new();
            for protocol in &self.alpn {
                list.push(protocol.len() as u8);
                list.extend_from_slice(protocol.as_bytes());
            }
            let mut data = Vec::new();
            push_u16(&mut data, list.len());
            data.extend_from_slice(&list);
            push_extension(&mut out, 0x0010, &data);
        }
        if self.version != Version::Ssl3 {
            push_extension(&mut out, 0x0017, &[]); // extended_master_secret
        }
        if self.version == Version::Tls13 {
            push_extension(&mut out, 0x002b, &[2, 0x03, 0x04]); // supported_versions: 1.3
            push_extension(&mut out, 0x002d, &[1, 1]); // psk_key_exchange_modes: psk_dhe_ke
            let mut shares = Vec::new();
            for &group in &self.key_shares {
                if let Some(share) = key_share(group) {
                    shares.extend_from_slice(&group.to_be_bytes());
                    push_u16(&mut shares, share.len());
                    shares.extend_from_slice(&share);
                }
            }
            let mut data = Vec::new();
            push_u16(&mut data, shares.len());
            data.extend_from_slice(&shares);
            push_extension(&mut out, 0x0033, &data);
        }
        // renegotiation_info, empty: servers that insist on secure renegotiation answer.
        push_extension(&mut out, 0xff01, &[0]);
        out
    }
}

/// SNI carries host names only (RFC 6066, 3): never an IP address literal.
fn is_dns_name(name: &str) -> bool {
    !name.is_empty() && name.parse::<std::net::IpAddr>().is_err() && name.len() < 256
}

fn push_u16(out: &mut Vec<u8>, value: usize) {
    out.extend_from_slice(&(value as u16).to_be_bytes());
}

fn push_u24(out: &mut Vec<u8>, value: usize) {
    out.extend_from_slice(&(value as u32).to_be_bytes()[1..]);
}

fn u16_list(values: &[u16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 2 + 2);
    push_u16(&mut out, values.len() * 2);
    for value in values {
        out.extend_from_slice(&value.to_be_bytes());
    }
    out
}

fn push_extension(out: &mut Vec<u8>, kind: u16, data: &[u8]) {
    out.extend_from_slice(&kind.to_be_bytes());
    push_u16(out, data.len());
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tls_parser::{
        parse_tls_plaintext, TlsExtension, TlsMessage, TlsMessageHandshake, TlsVersion,
    };

    fn parsed_extensions(hello: &ClientHello) -> (u16, Vec<u16>, Vec<u8>) {
        let record = hello.to_record();
        let (rest, plaintext) = parse_tls_plaintext(&record).unwrap();
        assert!(rest.is_empty());
        let TlsMessage::Handshake(TlsMessageHandshake::ClientHello(contents)) = &plaintext.msg[0]
        else {
            panic!("not a ClientHello: {plaintext:?}");
        };
        let suites = contents.ciphers.iter().map(|suite| suite.0).collect();
        (
            contents.version.0,
            suites,
            contents.ext.unwrap_or_default().to_vec(),
        )
    }

    #[test]
    fn a_tls13_hello_parses_with_what_it_offers() {
        let hello = ClientHello::new(Version::Tls13, TLS13_SUITES.to_vec(), Some("example.com"));
        let (version, suites, extensions) = parsed_extensions(&hello);
        assert_eq!(version, 0x0303);
        assert_eq!(suites, TLS13_SUITES);
        let (_, extensions) = tls_parser::parse_tls_client_hello_extensions(&extensions).unwrap();
        let mut seen = 0;
        for extension in extensions {
            match extension {
                TlsExtension::SNI(names) => {
                    assert_eq!(names[0].1, b"example.com");
                    seen += 1;
                }
                TlsExtension::SupportedVersions(versions) => {
                    assert_eq!(versions, vec![TlsVersion::Tls13]);
                    seen += 1;
                }
                TlsExtension::EllipticCurves(curves) => {
                    let curves: Vec<u16> = curves.iter().map(|curve| curve.0).collect();
                    assert_eq!(curves, groups::TLS13);
                    seen += 1;
                }
                TlsExtension::KeyShare(data) => {
                    // x25519 (2 + 2 + 32) and P-256 (2 + 2 + 65) behind the list length.
                    assert_eq!(data.len(), 2 + 36 + 69);
                    assert_eq!(&data[2..4], &[0x00, 0x1d]);
                    assert_eq!(&data[38..40], &[0x00, 0x17]);
                    seen += 1;
                }
                _ => {}
            }
        }
        assert_eq!(seen, 4);
    }

    #[test]
    fn a_legacy_hello_offers_the_registry_and_no_tls13_extensions() {
        let suites = legacy_suites();
        assert!(suites.len() > 300, "{}", suites.len());
        assert!(suites.contains(&0xc02b) && suites.contains(&0x000a) && suites.contains(&0x0005));
        assert!(!suites.iter().any(|suite| TLS13_SUITES.contains(suite)));
        assert!(!suites.contains(&0x00ff));
        let hello = ClientHello::new(Version::Tls10, suites.clone(), Some("127.0.0.1"));
        let record = hello.to_record();
        assert_eq!(&record[..3], &[22, 0x03, 0x01]);
        let (version, offered, extensions) = parsed_extensions(&hello);
        assert_eq!(version, 0x0301);
        assert_eq!(offered, suites);
        let (_, extensions) = tls_parser::parse_tls_client_hello_extensions(&extensions).unwrap();
        // No SNI for an address, no signature_algorithms before TLS 1.2, no 1.3 extensions.
        assert!(!extensions.iter().any(|extension| matches!(
            extension,
            TlsExtension::SNI(_)
                | TlsExtension::SignatureAlgorithms(_)
                | TlsExtension::SupportedVersions(_)
                | TlsExtension::KeyShare(_)
        )));
        let ssl3 = ClientHello::new(Version::Ssl3, vec![0x000a], None).to_record();
        assert_eq!(&ssl3[..3], &[22, 0x03, 0x00]);
        assert_eq!(&ssl3[9..11], &[0x03, 0x00]);
    }

    #[test]
    fn every_signature_scheme_rustls_verifies_is_offered() {
        let offered: Vec<u16> = SIGNATURE_SCHEMES.to_vec();
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        for scheme in provider
            .signature_verification_algorithms
            .supported_schemes()
        {
            assert!(
                offered.contains(&u16::from(scheme)),
                "{scheme:?} not offered"
            );
        }
        // The three ML-DSA parameter sets tlslab's lab server signs with (`--cert mldsa44`,
        // `mldsa65`, `mldsa87`).
        for scheme in [0x0904, 0x0905, 0x0906] {
            assert!(offered.contains(&scheme), "0x{scheme:04x}");
        }
        let mut unique = offered.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), offered.len());
        let hello = ClientHello::new(Version::Tls13, TLS13_SUITES.to_vec(), None);
        let (_, _, extensions) = parsed_extensions(&hello);
        let (_, extensions) = tls_parser::parse_tls_client_hello_extensions(&extensions).unwrap();
        let sent = extensions
            .iter()
            .find_map(|extension| match extension {
                TlsExtension::SignatureAlgorithms(schemes) => Some(schemes.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(sent, offered);
    }

    #[test]
    fn names_come_from_the_registry() {
        assert_eq!(suite_name(0x1301), "TLS_AES_128_GCM_SHA256");
        assert_eq!(
            suite_name(0xcca9),
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        );
        assert_eq!(suite_name(0xfefe), "0xfefe");
        assert_eq!(group_name(groups::X25519MLKEM768), "x25519mlkem768");
    }
}
