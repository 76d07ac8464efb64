//! The values each matrix dimension can take, with their command-line spellings.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::causes::{same_cause, Cause};

/// A value of a dimension failed to parse; the message lists the valid spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {dimension} '{given}' (valid: {})", valid.join(", "))]
pub struct ParseError {
    /// The dimension, as its flag names it.
    pub dimension: &'static str,
    /// The value given.
    pub given: String,
    /// The spellings it takes.
    pub valid: Vec<&'static str>,
}

/// A value that is not what its field takes (a duration, a rate, a loss rate, a suite, an
/// experiment file): the message says what was given and what would do; the error that
/// caused it (a TOML or JSON parser's), when there is one, is kept as its
/// [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct InvalidValue {
    /// What was given and what would do.
    pub message: String,
    /// The error under it, its source: a `caused by:` line.
    source: Option<Cause>,
}

impl fmt::Display for InvalidValue {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for InvalidValue {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        crate::causes::as_source(&self.source)
    }
}

impl InvalidValue {
    /// What was given and what would do.
    pub fn new(message: impl Into<String>) -> InvalidValue {
        InvalidValue {
            message: message.into(),
            source: None,
        }
    }

    /// The same, caused by `source` (kept as the error's source).
    pub fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> InvalidValue {
        InvalidValue {
            message: message.into(),
            source: Some(std::sync::Arc::new(source)),
        }
    }
}

impl PartialEq for InvalidValue {
    fn eq(&self, other: &InvalidValue) -> bool {
        self.message == other.message && same_cause(&self.source, &other.source)
    }
}

impl Eq for InvalidValue {}

/// Declares a dimension enum whose variants have fixed spellings (plus accepted aliases).
macro_rules! spelled_enum {
    ($(#[$meta:meta])* $name:ident, $dimension:literal, { $($variant:ident => $text:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $(#[doc = concat!("Spelled `", $text, "`.")] $variant),+ }

        impl $name {
            /// Every value, in the order the documentation lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The canonical spelling used in labels, the store and output.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl FromStr for $name {
            type Err = ParseError;
            fn from_str(text: &str) -> Result<Self, ParseError> {
                let lower = text.trim().to_ascii_lowercase();
                match lower.as_str() {
                    $($text $(| $alias)* => Ok($name::$variant),)+
                    _ => Err(ParseError {
                        dimension: $dimension,
                        given: text.to_string(),
                        valid: vec![$($text),+],
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

spelled_enum!(
    /// A TLS protocol version.
    TlsVersion, "TLS version", {
        Tls12 => "1.2" | "tls1.2" | "tlsv1.2" | "12",
        Tls13 => "1.3" | "tls1.3" | "tlsv1.3" | "13",
    }
);

impl TlsVersion {
    /// The label form: `tls1.2`, `tls1.3`.
    pub fn label(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "tls1.2",
            TlsVersion::Tls13 => "tls1.3",
        }
    }
}

spelled_enum!(
    /// The bulk cipher of a cipher suite. The key exchange and authentication parts of a TLS 1.2
    /// suite follow from the certificate, so `aes128gcm` means `TLS13_AES_128_GCM_SHA256` under
    /// TLS 1.3 and `TLS_ECDHE_{ECDSA,RSA}_WITH_AES_128_GCM_SHA256` under TLS 1.2.
    Cipher, "cipher", {
        Aes128Gcm => "aes128gcm" | "aes-128-gcm" | "aes128",
        Aes256Gcm => "aes256gcm" | "aes-256-gcm" | "aes256",
        Chacha20 => "chacha20" | "chacha20-poly1305" | "chacha20poly1305",
    }
);

spelled_enum!(
    /// A key-exchange group.
    Group, "group", {
        X25519 => "x25519",
        Secp256r1 => "secp256r1" | "p256" | "p-256" | "prime256v1",
        Secp384r1 => "secp384r1" | "p384" | "p-384",
        X25519Mlkem768 => "x25519mlkem768",
        Secp256r1Mlkem768 => "secp256r1mlkem768",
        Mlkem768 => "mlkem768",
        Mlkem1024 => "mlkem1024",
        Ffdhe2048 => "ffdhe2048",
        Ffdhe3072 => "ffdhe3072",
    }
);

impl Group {
    /// Post-quantum and hybrid groups exist only in TLS 1.3.
    pub fn is_post_quantum(self) -> bool {
        matches!(
            self,
            Group::X25519Mlkem768 | Group::Secp256r1Mlkem768 | Group::Mlkem768 | Group::Mlkem1024
        )
    }

    /// The RFC 7919 finite-field groups: TLS 1.3 key shares, or the DHE parameters of a
    /// TLS 1.2 DHE suite.
    pub fn is_finite_field(self) -> bool {
        matches!(self, Group::Ffdhe2048 | Group::Ffdhe3072)
    }
}

spelled_enum!(
    /// The TLS library on one side of a handshake.
    Backend, "backend", {
        Rustls => "rustls",
        Openssl => "openssl" | "ossl",
    }
);

spelled_enum!(
    /// Encrypted ClientHello: not offered, offered with the server's ECHConfigList, or a
    /// GREASE extension of the same shape without a configuration.
    Ech, "ECH mode", {
        Off => "off" | "no" | "false",
        On => "on" | "yes" | "true",
        Grease => "grease",
    }
);

/// A TLS 1.2 suite outside tlslab's ECDHE-with-AEAD set, kept to measure what legacy
/// configurations cost; only the OpenSSL backend offers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LegacySuite {
    /// `TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA`: CBC with HMAC-SHA1.
    EcdheRsaAes128CbcSha,
    /// `TLS_DHE_RSA_WITH_AES_128_GCM_SHA256`: finite-field Diffie-Hellman (ffdhe2048/3072).
    DheRsaAes128GcmSha256,
    /// `TLS_RSA_WITH_AES_256_GCM_SHA384`: RSA key transport, no forward secrecy.
    RsaAes256GcmSha384,
}

impl LegacySuite {
    /// Every legacy suite, in the order the documentation lists them.
    pub const ALL: [LegacySuite; 3] = [
        LegacySuite::EcdheRsaAes128CbcSha,
        LegacySuite::DheRsaAes128GcmSha256,
        LegacySuite::RsaAes256GcmSha384,
    ];

    /// The IANA name, as stored.
    pub fn iana_name(self) -> &'static str {
        match self {
            LegacySuite::EcdheRsaAes128CbcSha => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            LegacySuite::DheRsaAes128GcmSha256 => "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
            LegacySuite::RsaAes256GcmSha384 => "TLS_RSA_WITH_AES_256_GCM_SHA384",
        }
    }

    /// OpenSSL's name (`ECDHE-RSA-AES128-SHA`).
    pub fn openssl_name(self) -> &'static str {
        match self {
            LegacySuite::EcdheRsaAes128CbcSha => "ECDHE-RSA-AES128-SHA",
            LegacySuite::DheRsaAes128GcmSha256 => "DHE-RSA-AES128-GCM-SHA256",
            LegacySuite::RsaAes256GcmSha384 => "AES256-GCM-SHA384",
        }
    }

    /// How the suite agrees on keys, which decides the groups that fit it.
    pub fn key_exchange(self) -> LegacyKeyExchange {
        match self {
            LegacySuite::EcdheRsaAes128CbcSha => LegacyKeyExchange::Ecdhe,
            LegacySuite::DheRsaAes128GcmSha256 => LegacyKeyExchange::Dhe,
            LegacySuite::RsaAes256GcmSha384 => LegacyKeyExchange::Rsa,
        }
    }
}

/// The key exchange of a legacy TLS 1.2 suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LegacyKeyExchange {
    /// Elliptic-curve Diffie-Hellman over the Config's group.
    Ecdhe,
    /// Finite-field Diffie-Hellman over the Config's ffdhe group (RFC 7919).
    Dhe,
    /// The client encrypts the premaster secret to the server's RSA key: no group at all.
    Rsa,
}

spelled_enum!(
    /// The lab server's certificate key type.
    CertProfile, "certificate profile", {
        Rsa2048 => "rsa2048" | "rsa-2048",
        Rsa3072 => "rsa3072" | "rsa-3072",
        Rsa4096 => "rsa4096" | "rsa-4096",
        EcdsaP256 => "ecdsa-p256" | "ecdsap256" | "p256-ecdsa",
        EcdsaP384 => "ecdsa-p384" | "ecdsap384" | "p384-ecdsa",
        Ed25519 => "ed25519",
        MlDsa44 => "mldsa44" | "ml-dsa-44",
        MlDsa65 => "mldsa65" | "ml-dsa-65",
        MlDsa87 => "mldsa87" | "ml-dsa-87",
    }
);

/// The family of a certificate key, which decides the TLS 1.2 suite's authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// RSA keys.
    Rsa,
    /// ECDSA keys on the NIST curves.
    Ecdsa,
    /// Ed25519 keys (EdDSA).
    Ed25519,
    /// ML-DSA (FIPS 204), which signs TLS 1.3 handshakes only.
    MlDsa,
}

impl KeyKind {
    /// TLS 1.2 suites name ECDSA for both ECDSA and EdDSA keys (RFC 8422); ML-DSA keys have
    /// no TLS 1.2 suite.
    pub fn tls12_authentication(self) -> Option<Authentication> {
        match self {
            KeyKind::Rsa => Some(Authentication::Rsa),
            KeyKind::Ecdsa | KeyKind::Ed25519 => Some(Authentication::Ecdsa),
            KeyKind::MlDsa => None,
        }
    }
}

/// The authentication part of a TLS 1.2 cipher suite name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Authentication {
    /// `..._RSA_...` suites.
    Rsa,
    /// `..._ECDSA_...` suites, for ECDSA and EdDSA keys.
    Ecdsa,
}

impl CertProfile {
    /// The family of the profile's key.
    pub fn key_kind(self) -> KeyKind {
        match self {
            CertProfile::Rsa2048 | CertProfile::Rsa3072 | CertProfile::Rsa4096 => KeyKind::Rsa,
            CertProfile::EcdsaP256 | CertProfile::EcdsaP384 => KeyKind::Ecdsa,
            CertProfile::Ed25519 => KeyKind::Ed25519,
            CertProfile::MlDsa44 | CertProfile::MlDsa65 | CertProfile::MlDsa87 => KeyKind::MlDsa,
        }
    }

    /// The TLS signature scheme a handshake with this certificate uses under `version`
    /// (rustls prefers RSA-PSS; TLS 1.3 forbids PKCS#1 v1.5 signatures in the handshake).
    pub fn signature_scheme(self) -> &'static str {
        match self {
            CertProfile::Rsa2048 | CertProfile::Rsa3072 | CertProfile::Rsa4096 => "RSA_PSS_SHA256",
            CertProfile::EcdsaP256 => "ECDSA_NISTP256_SHA256",
            CertProfile::EcdsaP384 => "ECDSA_NISTP384_SHA384",
            CertProfile::Ed25519 => "ED25519",
            CertProfile::MlDsa44 => "ML_DSA_44",
            CertProfile::MlDsa65 => "ML_DSA_65",
            CertProfile::MlDsa87 => "ML_DSA_87",
        }
    }
}

spelled_enum!(
    /// How a client closes a connection after a handshake.
    CloseMode, "close mode", {
        Reset => "reset" | "rst",
        Graceful => "graceful" | "fin",
    }
);

spelled_enum!(
    /// When a target's name is resolved: `once` per run, before any attempt (attempts time
    /// no lookups), or `per-attempt`, each attempt before it connects (the `dns` phase, as
    /// curl's `time_namelookup`).
    DnsMode, "dns mode", {
        Once => "once",
        PerAttempt => "per-attempt" | "per_attempt" | "attempt",
    }
);

spelled_enum!(
    /// Which network emulator carries the packets of emulated Configs: `auto` picks the most
    /// faithful one the machine supports (netem, then tun, then relay).
    Emulator, "emulator", {
        Auto => "auto",
        Netem => "netem",
        Tun => "tun",
        Relay => "relay",
    }
);

spelled_enum!(
    /// What carries TLS: a TCP connection, or QUIC (TLS 1.3 inside QUIC packets over UDP).
    Transport, "transport", {
        Tcp => "tcp",
        Quic => "quic",
    }
);

spelled_enum!(
    /// The request sent after the handshake, if any: HTTP/1.1 and HTTP/2 over TLS (chosen by
    /// ALPN), HTTP/3 over QUIC.
    Http, "HTTP version", {
        None => "none" | "off",
        Http11 => "1.1" | "http/1.1" | "http1.1" | "h1",
        Http2 => "2" | "h2" | "http/2" | "http2",
        Http3 => "3" | "h3" | "http/3" | "http3",
    }
);

impl Http {
    /// The word used in labels (`h1`, `h2`, `h3`).
    pub fn label(self) -> &'static str {
        match self {
            Http::None => "",
            Http::Http11 => "h1",
            Http::Http2 => "h2",
            Http::Http3 => "h3",
        }
    }

    /// The request a Config sends by default when it needs one (early data carries it).
    pub fn default_for(transport: Transport) -> Http {
        match transport {
            Transport::Tcp => Http::Http11,
            Transport::Quic => Http::Http3,
        }
    }
}

spelled_enum!(
    /// Session resumption: none (every handshake full), TLS tickets, or a server-side session
    /// cache (TLS 1.2 session IDs; in TLS 1.3, where every resumption is a ticket, single-use
    /// tickets that only name an entry of the server's cache).
    Resume, "resumption", {
        Off => "off" | "no" | "none" | "false",
        Tickets => "tickets" | "ticket" | "on" | "true" | "yes",
        SessionId => "session-id" | "sessionid" | "session_id" | "id" | "cache",
    }
);

spelled_enum!(
    /// Whether the client skips re-verifying a certificate chain it has already verified.
    CertCache, "certificate cache", {
        Off => "off" | "no" | "false",
        On => "on" | "yes" | "true",
    }
);

spelled_enum!(
    /// Whether an agent keeps its connection open for its next request (HTTP keep-alive):
    /// `off`, every attempt opens a connection and shakes hands; `on`, an agent's first
    /// request opens one and the rest reuse it, as browsers and `ab -k` do.
    KeepAlive, "keep-alive", {
        Off => "off" | "no" | "false",
        On => "on" | "yes" | "true",
    }
);

spelled_enum!(
    /// HTTP over TLS, or plain HTTP on the same host (the lab server's plain port): what TLS
    /// costs a request, side by side.
    Scheme, "scheme", {
        Https => "https",
        Http => "http",
    }
);

spelled_enum!(
    /// Whether the lab server requires a client certificate (mutual TLS): `on` adds the
    /// server's CertificateRequest, the client's Certificate and CertificateVerify (a
    /// signature on the client) and the server's verification of them to every handshake.
    Mtls, "mutual TLS", {
        Off => "off" | "no" | "false",
        On => "on" | "yes" | "true",
    }
);

spelled_enum!(
    /// Whether the client's first key share is for another group than the Config's, so that a
    /// TLS 1.3 server answers with a HelloRetryRequest and the handshake takes one more round
    /// trip (what a client that guessed wrong pays).
    HelloRetry, "HelloRetryRequest", {
        Off => "off" | "no" | "false",
        On => "on" | "yes" | "true",
    }
);

/// A cipher suite as the user asked for it: a bulk cipher, optionally pinned to a version and,
/// for TLS 1.2, an authentication (when given by its full IANA or OpenSSL name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SuiteSpec {
    /// The bulk cipher. For a legacy suite, the AEAD cipher of the same key size: only
    /// `legacy` decides what a legacy Config offers.
    pub cipher: Cipher,
    /// A legacy TLS 1.2 suite (CBC, DHE, RSA key transport), offered by OpenSSL only.
    pub legacy: Option<LegacySuite>,
    /// The version the name pins, if it pins one.
    pub version: Option<TlsVersion>,
    /// The TLS 1.2 authentication the name pins, if it pins one.
    pub authentication: Option<Authentication>,
    /// The spelling used in labels: the short cipher name, or the full name as given.
    pub name: String,
}

/// Full suite names accepted in addition to the short cipher names.
const FULL_SUITES: &[(&str, &str, Cipher, TlsVersion, Option<Authentication>)] = &[
    (
        "TLS13_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
        Cipher::Aes128Gcm,
        TlsVersion::Tls13,
        None,
    ),
    (
        "TLS13_AES_256_GCM_SHA384",
        "TLS_AES_256_GCM_SHA384",
        Cipher::Aes256Gcm,
        TlsVersion::Tls13,
        None,
    ),
    (
        "TLS13_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
        Cipher::Chacha20,
        TlsVersion::Tls13,
        None,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        Cipher::Aes128Gcm,
        TlsVersion::Tls12,
        Some(Authentication::Ecdsa),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        Cipher::Aes256Gcm,
        TlsVersion::Tls12,
        Some(Authentication::Ecdsa),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        Cipher::Chacha20,
        TlsVersion::Tls12,
        Some(Authentication::Ecdsa),
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        Cipher::Aes128Gcm,
        TlsVersion::Tls12,
        Some(Authentication::Rsa),
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        Cipher::Aes256Gcm,
        TlsVersion::Tls12,
        Some(Authentication::Rsa),
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305",
        Cipher::Chacha20,
        TlsVersion::Tls12,
        Some(Authentication::Rsa),
    ),
];

impl FromStr for SuiteSpec {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        let trimmed = text.trim();
        if let Ok(cipher) = trimmed.parse::<Cipher>() {
            return Ok(SuiteSpec::of(cipher));
        }
        for (iana, openssl, cipher, version, authentication) in FULL_SUITES {
            if trimmed.eq_ignore_ascii_case(iana) || trimmed.eq_ignore_ascii_case(openssl) {
                return Ok(SuiteSpec {
                    cipher: *cipher,
                    legacy: None,
                    version: Some(*version),
                    authentication: *authentication,
                    name: iana.to_string(),
                });
            }
        }
        for legacy in LegacySuite::ALL {
            if trimmed.eq_ignore_ascii_case(legacy.iana_name())
                || trimmed.eq_ignore_ascii_case(legacy.openssl_name())
            {
                return Ok(SuiteSpec {
                    cipher: match legacy {
                        LegacySuite::RsaAes256GcmSha384 => Cipher::Aes256Gcm,
                        _ => Cipher::Aes128Gcm,
                    },
                    legacy: Some(legacy),
                    version: Some(TlsVersion::Tls12),
                    authentication: Some(Authentication::Rsa),
                    name: legacy.iana_name().to_string(),
                });
            }
        }
        let mut valid: Vec<&'static str> = Cipher::ALL.iter().map(|c| c.as_str()).collect();
        valid.extend(FULL_SUITES.iter().map(|suite| suite.0));
        valid.extend(LegacySuite::ALL.iter().map(|suite| suite.iana_name()));
        Err(ParseError {
            dimension: "cipher suite",
            given: text.to_string(),
            valid,
        })
    }
}

impl SuiteSpec {
    /// The suite (or the TLS 1.2 pair of suites) of a bulk cipher, by its short name.
    pub fn of(cipher: Cipher) -> SuiteSpec {
        SuiteSpec {
            cipher,
            legacy: None,
            version: None,
            authentication: None,
            name: cipher.as_str().to_string(),
        }
    }
}

impl fmt::Display for SuiteSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Serialize for SuiteSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name)
    }
}

impl<'de> Deserialize<'de> for SuiteSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The IANA name of the suite a Config negotiates: what the store records after a handshake.
pub fn iana_suite_name(
    cipher: Cipher,
    version: TlsVersion,
    authentication: Authentication,
) -> &'static str {
    FULL_SUITES
        .iter()
        .find(|suite| {
            suite.2 == cipher
                && suite.3 == version
                && (version == TlsVersion::Tls13 || suite.4 == Some(authentication))
        })
        .map(|suite| suite.0)
        .expect("every cipher exists in both versions and both authentications")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_aliases_and_rejects_unknown_values_with_the_valid_list() {
        assert_eq!("TLS1.3".parse::<TlsVersion>().unwrap(), TlsVersion::Tls13);
        assert_eq!("p256".parse::<Group>().unwrap(), Group::Secp256r1);
        let error = "rsa1024".parse::<CertProfile>().unwrap_err();
        assert!(error.to_string().contains("rsa2048"), "{error}");
    }

    #[test]
    fn full_suite_names_pin_version_and_authentication() {
        let suite: SuiteSpec = "ECDHE-RSA-AES128-GCM-SHA256".parse().unwrap();
        assert_eq!(suite.cipher, Cipher::Aes128Gcm);
        assert_eq!(suite.version, Some(TlsVersion::Tls12));
        assert_eq!(suite.authentication, Some(Authentication::Rsa));
        assert_eq!(suite.name, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
        let short: SuiteSpec = "chacha20".parse().unwrap();
        assert_eq!(short.version, None);
    }

    #[test]
    fn legacy_suites_parse_by_either_name_and_pin_tls12_with_rsa() {
        for legacy in LegacySuite::ALL {
            for name in [legacy.iana_name(), legacy.openssl_name()] {
                let suite: SuiteSpec = name.to_ascii_lowercase().parse().unwrap();
                assert_eq!(suite.legacy, Some(legacy));
                assert_eq!(suite.version, Some(TlsVersion::Tls12));
                assert_eq!(suite.authentication, Some(Authentication::Rsa));
                assert_eq!(suite.name, legacy.iana_name());
            }
        }
        let error = "RC4-MD5".parse::<SuiteSpec>().unwrap_err();
        assert!(error
            .to_string()
            .contains("TLS_RSA_WITH_AES_256_GCM_SHA384"));
    }

    #[test]
    fn iana_names_follow_version_and_authentication() {
        assert_eq!(
            iana_suite_name(Cipher::Chacha20, TlsVersion::Tls13, Authentication::Rsa),
            "TLS13_CHACHA20_POLY1305_SHA256"
        );
        assert_eq!(
            iana_suite_name(Cipher::Aes256Gcm, TlsVersion::Tls12, Authentication::Ecdsa),
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
        );
    }
}
