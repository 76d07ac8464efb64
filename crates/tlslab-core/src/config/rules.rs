//! The combination rules: which points of the matrix can run, and why the others cannot
//! (each reason names the flag that fixes it).

use crate::dimension::{
    Authentication, Backend, CertProfile, Ech, Group, Http, KeyKind, LegacyKeyExchange, Resume,
    Scheme, SuiteSpec, TlsVersion, Transport,
};

/// Why one combination of dimension values cannot run, or `None` when it can.
pub(super) fn invalid_reason(
    version: TlsVersion,
    suite: &SuiteSpec,
    group: Group,
    cert: Option<CertProfile>,
    rsa_transport_group: Option<Group>,
) -> Option<String> {
    if let Some(only) = suite.version {
        if only != version {
            return Some(format!(
                "suite {} exists only in TLS {}, not TLS {}",
                suite.name, only, version
            ));
        }
    }
    if version == TlsVersion::Tls12 && group.is_post_quantum() {
        return Some(format!("group {group} exists only in TLS 1.3"));
    }
    if version == TlsVersion::Tls12 {
        // In TLS 1.2 the suite names the key exchange, and the group must fit it.
        let exchange = suite
            .legacy
            .map_or(LegacyKeyExchange::Ecdhe, |legacy| legacy.key_exchange());
        match exchange {
            LegacyKeyExchange::Dhe if !group.is_finite_field() => {
                return Some(format!(
                    "suite {} agrees on keys over ffdhe2048 or ffdhe3072, not {group}",
                    suite.name
                ))
            }
            // RSA key transport agrees on no group: one Config, not one per group.
            LegacyKeyExchange::Rsa
                if !group.is_finite_field() && Some(group) != rsa_transport_group =>
            {
                return Some(format!(
                    "suite {} uses no key-exchange group; it runs once, with {}",
                    suite.name,
                    rsa_transport_group.map_or("an elliptic-curve group".into(), |g| g.to_string())
                ))
            }
            LegacyKeyExchange::Ecdhe | LegacyKeyExchange::Rsa if group.is_finite_field() => {
                return Some(format!(
                    "group {group} is finite-field; TLS 1.2 uses it only with a DHE suite \
                     (TLS_DHE_RSA_WITH_AES_128_GCM_SHA256)"
                ))
            }
            _ => {}
        }
    }
    if let Some(cert) = cert {
        if version == TlsVersion::Tls12 && cert.key_kind() == KeyKind::MlDsa {
            return Some(format!(
                "{cert} certificates sign TLS 1.3 handshakes only, not TLS 1.2"
            ));
        }
    }
    if let (Some(authentication), Some(cert)) = (suite.authentication, cert) {
        if cert.key_kind().tls12_authentication() != Some(authentication) {
            return Some(format!(
                "suite {} needs a {} certificate, not {}",
                suite.name,
                match authentication {
                    Authentication::Rsa => "RSA",
                    Authentication::Ecdsa => "ECDSA or Ed25519",
                },
                cert
            ));
        }
    }
    None
}

/// The session-level dimensions of one Config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Session {
    pub transport: Transport,
    pub http: Http,
    pub resume: Resume,
    pub early_data: u64,
    pub cert_cache: bool,
    pub hello_retry: bool,
    /// The lab server requires a client certificate, and the client presents the lab's.
    pub mtls: bool,
    pub keep_alive: bool,
    pub scheme: Scheme,
    /// Page mode: the attempt loads a page (a document and its resources).
    pub page: bool,
}

/// The library pair of one Config: the client's, and the lab server's (`None` for a target).
pub(super) type Backends = (Backend, Option<Backend>);

/// Why a combination of libraries and ECH cannot run, or `None` when it can. rustls has no
/// legacy suites, no finite-field groups and no ECH server; the OpenSSL backend runs over TCP
/// and has no certificate cache.
pub(super) fn invalid_backend_reason(
    version: TlsVersion,
    suite: &SuiteSpec,
    group: Group,
    (client, server): Backends,
    ech: Ech,
    session: Session,
) -> Option<String> {
    let sides = [("client", Some(client)), ("server", server)];
    for (side, backend) in sides {
        if backend != Some(Backend::Rustls) {
            continue;
        }
        if let Some(legacy) = suite.legacy {
            return Some(format!(
                "legacy suite {} needs OpenSSL (--{side}-backend openssl)",
                legacy.iana_name()
            ));
        }
        if group.is_finite_field() {
            return Some(format!(
                "rustls has no finite-field groups; {group} needs OpenSSL (--{side}-backend openssl)"
            ));
        }
    }
    for backend in [Some(client), server] {
        if backend == Some(Backend::Openssl) && session.transport == Transport::Quic {
            return Some(
                "the OpenSSL backend measures TLS over TCP; QUIC runs on rustls (quinn)".into(),
            );
        }
    }
    if client == Backend::Openssl && session.cert_cache {
        return Some("the certificate cache is a rustls client feature".into());
    }
    if session.hello_retry && client == Backend::Openssl {
        return Some("--hello-retry on is a rustls client feature (its key-share hint)".into());
    }
    if session.hello_retry && server == Some(Backend::Openssl) {
        return Some(
            "the OpenSSL lab server takes any key share it supports; a HelloRetryRequest needs the rustls lab server"
                .into(),
        );
    }
    if ech != Ech::Off {
        if version == TlsVersion::Tls12 {
            return Some("Encrypted ClientHello exists only in TLS 1.3".into());
        }
        if session.transport == Transport::Quic {
            return Some("tlslab offers Encrypted ClientHello over TCP only".into());
        }
    }
    if ech != Ech::Off && session.scheme == Scheme::Http {
        return Some("plain HTTP (--scheme http) has no ClientHello to encrypt".into());
    }
    if ech == Ech::On && server == Some(Backend::Rustls) {
        return Some(
            "rustls cannot serve Encrypted ClientHello; the lab server needs --server-backend openssl"
                .into(),
        );
    }
    None
}

/// Why a combination of transport, request and resumption cannot run, or `None`.
pub(super) fn invalid_session_reason(version: TlsVersion, session: Session) -> Option<String> {
    let Session {
        transport,
        http,
        resume,
        early_data,
        cert_cache,
        hello_retry,
        mtls,
        keep_alive,
        scheme,
        page,
    } = session;
    if page {
        if transport == Transport::Quic || !matches!(http, Http::Http11 | Http::Http2) {
            return Some(
                "page mode loads pages over HTTP/1.1 or HTTP/2 on TCP for now: give --http 1.1 or 2"
                    .into(),
            );
        }
        if resume != Resume::Off || early_data > 0 || keep_alive {
            return Some(
                "page mode opens its own connections for each page (six over HTTP/1.1, one over \
                 HTTP/2): drop --resume, --early-data and --keep-alive on"
                    .into(),
            );
        }
    }
    if scheme == Scheme::Http {
        if transport == Transport::Quic {
            return Some(
                "plain HTTP (--scheme http) runs over TCP; QUIC always carries TLS".into(),
            );
        }
        if http == Http::None {
            return Some(
                "plain HTTP (--scheme http) measures a request: give --http 1.1 or 2".into(),
            );
        }
        if resume != Resume::Off || early_data > 0 || cert_cache || hello_retry || mtls {
            return Some(
                "plain HTTP (--scheme http) has no TLS session to resume, no 0-RTT, certificate, \
                 client certificate or key share"
                    .into(),
            );
        }
    }
    if keep_alive {
        if http == Http::None {
            return Some("keep-alive reuses a connection for requests: give --http 1.1".into());
        }
        // HTTP/1.1 and HTTP/2 keep a TCP connection, HTTP/3 a QUIC one; a version on the
        // other transport is refused below.
        if resume != Resume::Off || early_data > 0 {
            return Some(
                "keep-alive keeps one connection per agent, so there is no next handshake to \
                 resume: drop --resume or --keep-alive on"
                    .into(),
            );
        }
    }
    if hello_retry && version == TlsVersion::Tls12 {
        return Some("a HelloRetryRequest exists only in TLS 1.3".into());
    }
    if transport == Transport::Quic && version == TlsVersion::Tls12 {
        return Some("QUIC carries TLS 1.3 only, not TLS 1.2".into());
    }
    match (transport, http) {
        (Transport::Quic, Http::Http11 | Http::Http2) => {
            return Some(format!("HTTP/{http} runs over TCP; QUIC carries HTTP/3"))
        }
        (Transport::Tcp, Http::Http3) => {
            return Some("HTTP/3 needs QUIC (--transport quic)".into())
        }
        _ => {}
    }
    if early_data > 0 && version == TlsVersion::Tls12 {
        return Some("early data (0-RTT) exists only in TLS 1.3".into());
    }
    if early_data > 0 && resume == Resume::Off {
        return Some("early data (0-RTT) needs a resumed session (--resume tickets)".into());
    }
    if cert_cache && resume != Resume::Off {
        return Some(
            "the certificate cache has nothing to save on resumed handshakes, which verify no certificate"
                .into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(transport: Transport, http: Http, resume: Resume, early_data: u64) -> Session {
        Session {
            transport,
            http,
            resume,
            early_data,
            cert_cache: false,
            hello_retry: false,
            mtls: false,
            keep_alive: false,
            scheme: Scheme::Https,
            page: false,
        }
    }

    #[test]
    fn each_rule_names_what_is_wrong() {
        let tls13 = TlsVersion::Tls13;
        assert_eq!(
            invalid_session_reason(tls13, session(Transport::Tcp, Http::Http11, Resume::Off, 0)),
            None
        );
        let reason = invalid_session_reason(
            tls13,
            session(Transport::Tcp, Http::Http11, Resume::Off, 10),
        );
        assert!(reason.unwrap().contains("--resume tickets"));
        let reason =
            invalid_session_reason(tls13, session(Transport::Quic, Http::Http2, Resume::Off, 0));
        assert!(reason.unwrap().contains("QUIC carries HTTP/3"));
        let quic = session(Transport::Quic, Http::Http3, Resume::Off, 0);
        let reason = invalid_backend_reason(
            tls13,
            &SuiteSpec::of(crate::dimension::Cipher::Aes128Gcm),
            Group::X25519,
            (Backend::Openssl, Some(Backend::Rustls)),
            Ech::Off,
            quic,
        );
        assert!(reason.unwrap().contains("QUIC runs on rustls"));
        let reason = invalid_reason(
            TlsVersion::Tls12,
            &SuiteSpec::of(crate::dimension::Cipher::Aes128Gcm),
            Group::Mlkem768,
            Some(CertProfile::EcdsaP256),
            Some(Group::X25519),
        );
        assert!(reason.unwrap().contains("only in TLS 1.3"));
    }

    #[test]
    fn a_hello_retry_needs_tls13_and_the_rustls_client_and_lab_server() {
        let retry = Session {
            hello_retry: true,
            ..session(Transport::Tcp, Http::None, Resume::Off, 0)
        };
        let reason = invalid_session_reason(TlsVersion::Tls12, retry);
        assert!(reason.unwrap().contains("only in TLS 1.3"));
        assert_eq!(invalid_session_reason(TlsVersion::Tls13, retry), None);
        let backends = |pair| {
            invalid_backend_reason(
                TlsVersion::Tls13,
                &SuiteSpec::of(crate::dimension::Cipher::Aes128Gcm),
                Group::X25519,
                pair,
                Ech::Off,
                retry,
            )
        };
        assert_eq!(backends((Backend::Rustls, Some(Backend::Rustls))), None);
        assert_eq!(backends((Backend::Rustls, None)), None);
        assert!(backends((Backend::Openssl, Some(Backend::Rustls)))
            .unwrap()
            .contains("rustls client"));
        assert!(backends((Backend::Rustls, Some(Backend::Openssl)))
            .unwrap()
            .contains("rustls lab server"));
    }
}
