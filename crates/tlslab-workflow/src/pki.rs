//! `pki`: the lab's certificate chains and client certificates (their paths, for nginx,
//! openssl or curl), and a certificate file's public-key pin. Each error is said as the
//! command line says it: what was wrong with its causes, and what to give instead.

use std::path::Path;

use tlslab_core::{Causes, CertProfile};
use tlslab_pki::{LabClientCertificate, Pki, ServedChain};

use crate::WorkflowError;

/// The public-key pin (`sha256//…`) of the first certificate in the PEM file `path`.
pub fn pin_of(path: &Path) -> Result<String, WorkflowError> {
    let hint = "give a PEM file with the server's certificate";
    // The file's fault with its causes (`caused by:` lines) and the PKI crate's hint for it.
    let certificates =
        tlslab_pki::load_certificates(path).map_err(|error| WorkflowError::CertificateFile {
            option: "--pin-of",
            path: path.to_path_buf(),
            source: crate::CertificateFileError::Pki(error),
        })?;
    certificates
        .first()
        .and_then(|certificate| tlslab_backend::certificate::pin_of(certificate))
        .ok_or_else(|| {
            WorkflowError::usage(
                format!("{}: no certificate with a readable key", path.display()),
                hint,
            )
        })
}

/// The certificate profile `text` names (`ecdsa-p256`, `rsa2048`, ...).
pub fn profile(text: &str) -> Result<CertProfile, WorkflowError> {
    text.parse().map_err(|error: tlslab_core::ParseError| {
        WorkflowError::usage(error.to_string(), "for example --cert ecdsa-p256")
    })
}

/// The lab's chain of `depth` certificates for `profile`, made on first use.
pub fn chain(pki: &Pki, profile: CertProfile, depth: u8) -> Result<ServedChain, WorkflowError> {
    pki.chain(profile, depth)
        .map_err(|error| WorkflowError::usage(error.message(), error.hint()))
}

/// The lab's client certificate issued by `profile`'s root, made on first use.
pub fn client_certificate(
    pki: &Pki,
    profile: CertProfile,
) -> Result<LabClientCertificate, WorkflowError> {
    pki.client_certificate(profile).map_err(|error| {
        WorkflowError::environment(
            format!("{}{}", error.message(), Causes(&error)),
            error.hint(),
            None,
        )
    })
}
