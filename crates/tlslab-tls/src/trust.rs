//! `--ca FILE` as users have it: the file holds CA certificates, or the server's own
//! self-signed certificate, made the way most labs make one (`openssl req -x509 -newkey ...`,
//! which sets the CA flag, often without a subjectAltName). webpki refuses such a certificate
//! as an end entity (`CaUsedAsEndEntity`) where OpenSSL and curl accept it; here a server
//! that sends exactly one of the given certificates is trusted as that certificate: it must
//! be valid now and name the server (its subjectAltName, or with none its common name, as
//! OpenSSL checks). The handshake signature is still verified with its key, as for any
//! chain, so results stay comparable.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, SignatureScheme};
use tlslab_backend::certificate::{chain_end, describe, outside_validity, pinned};
use tlslab_core::Pins;

/// A rejection that says what the server sent, in words.
#[derive(Debug)]
struct Rejected(String);

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Rejected {}

fn rejected(message: String) -> Error {
    Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(Rejected(
        message,
    )))))
}

/// CA roots through webpki, or one of the given certificates exactly.
#[derive(Debug)]
pub(crate) struct RootsOrExact {
    pub roots: Arc<WebPkiServerVerifier>,
    pub given: Vec<CertificateDer<'static>>,
}

/// Whether `certificate` (a given one, sent by the server) is valid at `now` for `name`.
fn exact_holds(
    certificate: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), Error> {
    let invalid = |error: CertificateError| Error::InvalidCertificate(error);
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate)
        .map_err(|_| invalid(CertificateError::BadEncoding))?;
    let seconds = now.as_secs() as i64;
    let validity = parsed.validity();
    if seconds < validity.not_before.timestamp() {
        return Err(invalid(CertificateError::NotValidYet));
    }
    if seconds > validity.not_after.timestamp() {
        return Err(invalid(CertificateError::Expired));
    }
    let has_alternative_names = parsed
        .subject_alternative_name()
        .ok()
        .flatten()
        .is_some_and(|names| !names.value.general_names.is_empty());
    if has_alternative_names {
        let end_entity = rustls::server::ParsedCertificate::try_from(certificate)?;
        return rustls::client::verify_server_name(&end_entity, name);
    }
    // No subjectAltName: the common name, as OpenSSL (and browsers long ago) read it.
    let wanted = match name {
        ServerName::DnsName(dns) => dns.as_ref().to_ascii_lowercase(),
        ServerName::IpAddress(address) => std::net::IpAddr::from(*address).to_string(),
        _ => String::new(),
    };
    let named = parsed
        .subject()
        .iter_common_name()
        .filter_map(|common_name| common_name.as_str().ok())
        .any(|common_name| common_name.eq_ignore_ascii_case(&wanted));
    if named {
        Ok(())
    } else {
        Err(invalid(CertificateError::NotValidForName))
    }
}

impl ServerCertVerifier for RootsOrExact {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.roots.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => Ok(verified),
            Err(error) => {
                let given = self
                    .given
                    .iter()
                    .any(|certificate| certificate.as_ref() == end_entity.as_ref());
                if !given {
                    let trusted: Vec<String> = self
                        .given
                        .iter()
                        .map(|certificate| describe(certificate))
                        .collect();
                    let trusted = if trusted.is_empty() {
                        "the system's roots".to_string()
                    } else {
                        format!("--ca holds {}", trusted.join(" and "))
                    };
                    let reason = match &error {
                        Error::InvalidCertificate(CertificateError::Other(other)) => {
                            other.0.to_string()
                        }
                        // The dates and the clock, rather than rustls' Debug of two Unix
                        // times (or none); `None` when an intermediate is the one out of
                        // its dates.
                        Error::InvalidCertificate(
                            reason @ (CertificateError::Expired
                            | CertificateError::ExpiredContext { .. }
                            | CertificateError::NotValidYet
                            | CertificateError::NotValidYetContext { .. }),
                        ) => outside_validity(end_entity, now.as_secs() as i64)
                            .unwrap_or_else(|| format!("{reason:?}")),
                        Error::InvalidCertificate(reason) => format!("{reason:?}"),
                        other => other.to_string(),
                    };
                    // An unknown issuer: who issued the last certificate sent, the one
                    // missing from an incomplete chain.
                    let chain = match &error {
                        Error::InvalidCertificate(CertificateError::UnknownIssuer) => chain_end(
                            std::iter::once(end_entity)
                                .chain(intermediates)
                                .map(|certificate| certificate.as_ref()),
                        )
                        .map(|end| format!("; {end}"))
                        .unwrap_or_default(),
                        _ => String::new(),
                    };
                    return Err(rejected(format!(
                        "{reason}: the server sent {}{chain}; trusted: {trusted}",
                        describe(end_entity),
                    )));
                }
                exact_holds(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.roots
            .verify_tls12_signature(message, certificate, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.roots
            .verify_tls13_signature(message, certificate, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.roots.supported_verify_schemes()
    }
}

/// `--pin`: the server's public key must be one of the pins, besides what `inner` checks
/// (nothing more with `--insecure`).
#[derive(Debug)]
pub(crate) struct Pinned {
    pub inner: Arc<dyn ServerCertVerifier>,
    pub pins: Pins,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if !pinned(&self.pins, end_entity) {
            return Err(rejected(format!(
                "the server's public key is not pinned: it sent {}",
                describe(end_entity)
            )));
        }
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner
            .verify_tls12_signature(message, certificate, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner
            .verify_tls13_signature(message, certificate, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
