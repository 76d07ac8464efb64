//! TLS to the database over rustls (aws-lc-rs, as everywhere in tlslab), checking the
//! server's certificate as libpq's `sslmode` says:
//!
//! - `verify-full`: rustls's own WebPKI verifier, chain and host name;
//! - `verify-ca`, and `require`/`prefer`/`allow` with a root certificate: the same verifier,
//!   with a name mismatch forgiven (libpq checks the chain only);
//! - `require`/`prefer`/`allow` without one: no check of the certificate at all, only of the
//!   handshake's signatures (libpq encrypts against eavesdropping there, not against a man
//!   in the middle).
//!
//! The last two need rustls's `danger` API: rustls checks a certificate fully or not at all
//! by design, and libpq's weaker modes are what PostgreSQL users have configured, so tlslab
//! must offer them to reach the same servers.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::{ConnectError, RootCertificate, SslMode};

/// The client configuration for `mode` (not `Disable`), with `root` read now.
pub(super) fn client_config(
    mode: SslMode,
    root: Option<&RootCertificate>,
) -> Result<ClientConfig, ConnectError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|error| ConnectError::Other {
            endpoint: "TLS setup".into(),
            source: Box::new(error),
        })?;
    let verifier = |root: &RootCertificate| {
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots(root)?), Arc::clone(&provider))
            .build()
            .map_err(|error| ConnectError::RootCertificate {
                location: root.to_string(),
                reason: "cannot check certificates with it".into(),
                source: Some(Box::new(error)),
            })
    };
    let config = match (mode, root) {
        (SslMode::VerifyFull, Some(root)) => builder.with_webpki_verifier(verifier(root)?),
        (SslMode::VerifyFull | SslMode::VerifyCa, None) => {
            return Err(ConnectError::RootCertificate {
                location: "~/.postgresql/root.crt".into(),
                reason: format!(
                    "sslmode={mode} checks the server's certificate against a root certificate, and none is given (sslrootcert, PGSSLROOTCERT) or at libpq's default place"
                ),
                source: None,
            })
        }
        (_, Some(root)) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly {
                inner: verifier(root)?,
            })),
        (_, None) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly {
                algorithms: provider.signature_verification_algorithms,
            })),
    };
    Ok(config.with_no_client_auth())
}

/// The certificates of `root`: every one in the PEM file, or the system's.
fn roots(root: &RootCertificate) -> Result<RootCertStore, ConnectError> {
    let failure = |reason: &str, source: Option<Box<dyn std::error::Error + Send + Sync>>| {
        ConnectError::RootCertificate {
            location: root.to_string(),
            reason: reason.into(),
            source,
        }
    };
    let mut store = RootCertStore::empty();
    match root {
        RootCertificate::File(path) => {
            let certificates = CertificateDer::pem_file_iter(path)
                .map_err(|error| failure("cannot be read", Some(Box::new(error))))?;
            for certificate in certificates {
                let certificate = certificate
                    .map_err(|error| failure("is not a PEM file", Some(Box::new(error))))?;
                store.add(certificate).map_err(|error| {
                    failure(
                        "holds a certificate that cannot be a root",
                        Some(Box::new(error)),
                    )
                })?;
            }
            if store.is_empty() {
                return Err(failure("holds no PEM certificate", None));
            }
        }
        RootCertificate::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                let cause = found
                    .errors
                    .into_iter()
                    .next()
                    .map(|error| Box::new(error) as Box<dyn std::error::Error + Send + Sync>);
                return Err(failure(
                    "no trusted root certificate found on this system",
                    cause,
                ));
            }
        }
    }
    Ok(store)
}

/// libpq's `verify-ca` (and `require` with a root certificate): the chain must lead to a
/// root given, the host name need not be in the certificate. rustls's verifier checks the
/// chain before the name, so a name error means the chain passed.
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner
            .verify_tls12_signature(message, certificate, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner
            .verify_tls13_signature(message, certificate, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// libpq's `require` without a root certificate: any certificate is accepted, and the
/// handshake's signatures are still checked against it, so the session's keys are the
/// holder's of that certificate (whoever that is).
#[derive(Debug)]
struct EncryptOnly {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, certificate, signature, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, certificate, signature, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
