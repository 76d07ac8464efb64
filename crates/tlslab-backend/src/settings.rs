//! What a client offers and trusts, and what a lab server offers: the same settings for every
//! TLS library, so a Config means the same thing whichever library runs it.

use std::fmt;
use std::str::FromStr;

use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tlslab_core::{
    Cipher, Config, Group, Http, InvalidValue, LegacySuite, Resume, ServerKey, ServerResumption,
    TlsVersion, Transport,
};

/// Which certificates the client accepts.
#[derive(Debug, Clone)]
pub enum Trust {
    /// These roots only (the lab root, or `--ca`).
    Roots(Vec<CertificateDer<'static>>),
    /// The operating system's roots.
    System,
    /// Anything (`--insecure`): handshake signatures are still parsed, not checked.
    Insecure,
}

/// The certificate chain (leaf first) and private key a client presents when the server
/// asks for a certificate (mutual TLS), read and checked before the run.
#[derive(Debug)]
pub struct ClientCertificate {
    /// The certificates, leaf first, as the client sends them.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's key, for the CertificateVerify signature.
    pub key: PrivateKeyDer<'static>,
}

/// Encrypted ClientHello, as a client offers it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EchMode {
    /// No ECH extension.
    #[default]
    Off,
    /// Real ECH with this ECHConfigList (the binary list, as in an HTTPS DNS record).
    On(Vec<u8>),
    /// A GREASE ECH extension: the size and shape of ECH without a configuration.
    Grease,
}

/// The suite a client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suite {
    /// A bulk cipher: under TLS 1.3 its one suite, under TLS 1.2 its ECDHE-ECDSA and
    /// ECDHE-RSA suites, so the certificate decides.
    Cipher(Cipher),
    /// One legacy TLS 1.2 suite (the Config must be TLS 1.2; OpenSSL only).
    Legacy(LegacySuite),
}

impl From<Cipher> for Suite {
    fn from(cipher: Cipher) -> Suite {
        Suite::Cipher(cipher)
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Suite::Cipher(cipher) => f.write_str(cipher.as_str()),
            Suite::Legacy(suite) => f.write_str(suite.openssl_name()),
        }
    }
}

impl FromStr for Suite {
    type Err = InvalidValue;

    /// Accepts tlslab's cipher names (`aes128gcm`) and the legacy suites by IANA or OpenSSL
    /// name. Full names of the AEAD suites pin a version and authentication, which is the
    /// Config's business: give those as their cipher.
    fn from_str(text: &str) -> Result<Suite, InvalidValue> {
        let trimmed = text.trim();
        if let Ok(cipher) = trimmed.parse::<Cipher>() {
            return Ok(Suite::Cipher(cipher));
        }
        LegacySuite::ALL
            .into_iter()
            .find(|suite| {
                trimmed.eq_ignore_ascii_case(suite.iana_name())
                    || trimmed.eq_ignore_ascii_case(suite.openssl_name())
            })
            .map(Suite::Legacy)
            .ok_or_else(|| {
                let mut valid: Vec<&str> = Cipher::ALL.iter().map(|c| c.as_str()).collect();
                valid.extend(LegacySuite::ALL.iter().map(|suite| suite.openssl_name()));
                InvalidValue::new(format!(
                    "unknown suite '{text}' (valid: {})",
                    valid.join(", ")
                ))
            })
    }
}

/// One Config's worth of client-side settings, for any library.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The one TLS version offered.
    pub version: TlsVersion,
    /// The one cipher suite offered (a legacy suite only OpenSSL has).
    pub suite: Suite,
    /// The key exchange group of the key share.
    pub group: Group,
    /// SNI, and the name the certificate must carry.
    pub server_name: String,
    /// What verifies the server's certificate.
    pub trust: Trust,
    /// Each agent's first handshake is full, the rest resume (by ticket, or by TLS 1.2
    /// session ID alone with [`Resume::SessionId`]).
    pub resume: Resume,
    /// Bytes of early data (the request, padded) on resumed TLS 1.3 handshakes; 0 for none.
    pub early_data: u64,
    /// Skip re-verifying chains this client already verified.
    pub cert_cache: bool,
    /// TLS 1.3: the first key share is for another group ([`ClientSettings::key_share_guess`]),
    /// so the server asks again with a HelloRetryRequest.
    pub hello_retry: bool,
    /// TCP, or QUIC (rustls only).
    pub transport: Transport,
    /// The request after the handshake, if any, and its path.
    pub http: Http,
    /// The request's path.
    pub path: String,
    /// Encrypted ClientHello (TLS 1.3 only).
    pub ech: EchMode,
    /// Where the handshakes' secrets go (`--keylog`, `SSLKEYLOGFILE`), if anywhere.
    pub key_log: Option<std::sync::Arc<crate::KeyLogFile>>,
    /// Public keys the server's certificate must carry, checked besides `trust`.
    pub pins: Option<tlslab_core::Pins>,
    /// What the client presents when the server asks for a certificate; `None` sends none.
    /// Shared: a private key is not cloned per Config or agent.
    pub client_certificate: Option<std::sync::Arc<ClientCertificate>>,
}

impl ClientSettings {
    /// A fresh-handshake TLS-over-TCP client with no request: what most Configs are.
    pub fn handshake_only(
        version: TlsVersion,
        suite: impl Into<Suite>,
        group: Group,
        server_name: impl Into<String>,
        trust: Trust,
    ) -> ClientSettings {
        ClientSettings {
            version,
            suite: suite.into(),
            group,
            server_name: server_name.into(),
            trust,
            resume: Resume::Off,
            early_data: 0,
            cert_cache: false,
            hello_retry: false,
            transport: Transport::Tcp,
            http: Http::None,
            path: "/".into(),
            ech: EchMode::Off,
            key_log: None,
            pins: None,
            client_certificate: None,
        }
    }

    /// What `config`'s client offers, reaching `server_name` with `trust` and `ech`.
    pub fn for_config(
        config: &Config,
        server_name: String,
        trust: Trust,
        ech: EchMode,
    ) -> ClientSettings {
        ClientSettings {
            version: config.version,
            suite: match config.suite.legacy {
                Some(legacy) => Suite::Legacy(legacy),
                None => Suite::Cipher(config.suite.cipher),
            },
            group: config.group,
            server_name,
            trust,
            resume: config.resume,
            early_data: config.early_data,
            cert_cache: config.cert_cache,
            hello_retry: config.hello_retry,
            transport: config.transport,
            http: config.http,
            path: config.path.clone(),
            ech,
            key_log: None,
            pins: config.pins.clone(),
            client_certificate: None,
        }
    }

    /// The groups the client offers, most preferred first. TLS 1.3 offers the requested
    /// group alone (it is the key share), and so does a TLS 1.2 DHE suite's finite-field
    /// group (the server must not fall back to its own choice). Otherwise TLS 1.2 lists
    /// P-256 and P-384 after the requested group: servers built on OpenSSL (nginx) accept an
    /// ECDSA certificate only when its curve is in the client's supported groups (the
    /// RFC 4492 rule they still apply), and servers that follow the client's order still
    /// negotiate the requested group; every sample records the group negotiated.
    pub fn offered_groups(&self) -> Vec<Group> {
        let mut groups = vec![self.group];
        // Listed after the Config's group, so the server picks that one; the client's first
        // key share is for this one, so the server asks again.
        groups.extend(self.key_share_guess());
        if self.version == TlsVersion::Tls12 && !self.group.is_finite_field() {
            for curve in [Group::Secp256r1, Group::Secp384r1] {
                if !groups.contains(&curve) {
                    groups.push(curve);
                }
            }
        }
        groups
    }

    /// The group of a wrong first key share (`--hello-retry on`, TLS 1.3): one the lab
    /// server accepts but the client lists after the Config's group.
    pub fn key_share_guess(&self) -> Option<Group> {
        (self.hello_retry && self.version == TlsVersion::Tls13).then_some(
            if self.group == Group::X25519 {
                Group::Secp256r1
            } else {
                Group::X25519
            },
        )
    }

    /// Whether agents resume sessions.
    pub fn resumes(&self) -> bool {
        self.resume != Resume::Off
    }

    /// The wire version of the request, if the Config sends one.
    pub fn http_version(&self) -> Option<tlslab_http::Version> {
        match self.http {
            Http::None => None,
            Http::Http11 => Some(tlslab_http::Version::Http11),
            Http::Http2 => Some(tlslab_http::Version::Http2),
            Http::Http3 => Some(tlslab_http::Version::Http3),
        }
    }

    /// The request, encoded once: padded to `early_data` bytes, so a 0-RTT Config's request
    /// fills the early data it promises.
    pub fn request(&self) -> Option<Request> {
        self.http_version().map(|version| Request {
            version,
            bytes: tlslab_http::encode_request(
                version,
                &tlslab_http::Request {
                    authority: &self.server_name,
                    path: &self.path,
                    min_size: self.early_data as usize,
                },
            ),
        })
    }
}

/// An encoded HTTP request and the version it speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The HTTP version, which decides how the response is read.
    pub version: tlslab_http::Version,
    /// The request as it goes on the wire (HTTP/2 and HTTP/3 framed).
    pub bytes: Vec<u8>,
}

/// What one lab server instance offers, for any library: every suite and group it has, so
/// the client alone decides what a Config negotiates, plus these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// `Off`: no tickets and no cache, so fresh-handshake measurements hold no ticket-issuing
    /// work. `Tickets`: stateless TLS 1.3 and RFC 5077 TLS 1.2 tickets. `Cache`: a server-side
    /// session cache; TLS 1.2 resumes by session ID, and TLS 1.3 tickets only name a cache
    /// entry and are accepted once.
    pub resumption: ServerResumption,
    /// Accept TLS 1.3 early data (0-RTT) and answer a request it carries right after the
    /// server's flight (0.5-RTT). Only with `Cache`: stateless tickets could be replayed.
    pub early_data: bool,
    /// Body bytes of every HTTP response.
    pub body: u64,
    /// Mutual TLS: the roots a client's certificate must chain to; the server then requires
    /// one on every full handshake. Empty: the server asks for no client certificate.
    pub client_roots: Vec<CertificateDer<'static>>,
}

impl Default for ServerSettings {
    /// No resumption, no early data, empty bodies.
    fn default() -> ServerSettings {
        ServerSettings {
            resumption: ServerResumption::Off,
            early_data: false,
            body: 0,
            client_roots: Vec::new(),
        }
    }
}

impl From<&ServerKey> for ServerSettings {
    fn from(key: &ServerKey) -> ServerSettings {
        ServerSettings {
            resumption: key.resumption,
            early_data: key.early_data,
            body: key.body,
            // The key names the profile whose root issues client certificates; the caller
            // reads that root from the PKI and fills this.
            client_roots: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_parse_from_every_spelling() {
        assert_eq!(
            "ECDHE-RSA-AES128-SHA".parse::<Suite>().unwrap(),
            Suite::Legacy(LegacySuite::EcdheRsaAes128CbcSha)
        );
        assert_eq!(
            "tls_rsa_with_aes_256_gcm_sha384".parse::<Suite>().unwrap(),
            Suite::Legacy(LegacySuite::RsaAes256GcmSha384)
        );
        assert_eq!(
            "chacha20".parse::<Suite>().unwrap(),
            Suite::Cipher(Cipher::Chacha20)
        );
        assert!("rc4"
            .parse::<Suite>()
            .unwrap_err()
            .to_string()
            .contains("AES256-GCM-SHA384"));
    }

    #[test]
    fn a_config_becomes_the_same_settings_for_every_library() {
        let experiment = tlslab_core::Experiment {
            tls: vec![TlsVersion::Tls12],
            suite: vec!["ECDHE-RSA-AES128-SHA".parse().unwrap()],
            cert: vec![tlslab_core::CertProfile::Rsa2048],
            backend: vec![tlslab_core::Backend::Openssl],
            resume: vec![Resume::SessionId],
            http: vec![Http::Http2],
            path: "/file?size=10".into(),
            ..tlslab_core::Experiment::default()
        };
        let config = &experiment.configs().unwrap()[0];
        let settings =
            ClientSettings::for_config(config, "lab.test".into(), Trust::Insecure, EchMode::Grease);
        assert_eq!(
            settings.suite,
            Suite::Legacy(LegacySuite::EcdheRsaAes128CbcSha)
        );
        assert!(settings.resumes());
        assert_eq!(settings.ech, EchMode::Grease);
        let request = settings.request().unwrap();
        assert_eq!(request.version, tlslab_http::Version::Http2);
        let plain = ClientSettings::handshake_only(
            TlsVersion::Tls13,
            Cipher::Aes128Gcm,
            Group::X25519,
            "lab.test",
            Trust::System,
        );
        assert!(plain.request().is_none() && !plain.resumes());
    }

    #[test]
    fn tls12_offers_the_certificate_curves_after_the_requested_group() {
        let offered = |version, group| {
            ClientSettings::handshake_only(version, Cipher::Aes128Gcm, group, "a", Trust::System)
                .offered_groups()
        };
        assert_eq!(offered(TlsVersion::Tls13, Group::X25519), [Group::X25519]);
        assert_eq!(
            offered(TlsVersion::Tls12, Group::X25519),
            [Group::X25519, Group::Secp256r1, Group::Secp384r1]
        );
        assert_eq!(
            offered(TlsVersion::Tls12, Group::Secp384r1),
            [Group::Secp384r1, Group::Secp256r1]
        );
        assert_eq!(
            offered(TlsVersion::Tls12, Group::Ffdhe2048),
            [Group::Ffdhe2048]
        );
    }

    #[test]
    fn early_data_pads_the_request_to_its_size() {
        let mut settings = ClientSettings::handshake_only(
            TlsVersion::Tls13,
            Cipher::Aes128Gcm,
            Group::X25519,
            "lab.test",
            Trust::System,
        );
        settings.http = Http::Http11;
        settings.early_data = 1_500;
        assert!(settings.request().unwrap().bytes.len() >= 1_500);
    }
}
