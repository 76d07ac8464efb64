//! Reading user-supplied CA files (`--ca FILE`), with errors that say which mistake was made.

use std::fs;
use std::path::Path;

use rustls_pki_types::pem::{PemObject, SectionKind};
use rustls_pki_types::CertificateDer;

use crate::error::{PemError, PkiError, PkiErrorKind};

const PEM_HINT: &str = "give a PEM file of -----BEGIN CERTIFICATE----- sections; \
                        convert a DER certificate with \
                        `openssl x509 -inform der -in FILE -out FILE.pem`";

/// Reads every certificate from a PEM file, in file order.
///
/// Other PEM sections (keys, CRLs) are skipped, so a combined file works, but a file without
/// any certificate is an error: it is almost always the wrong file.
pub fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    let contents = fs::read(path).map_err(|error| {
        PkiError::new(
            PkiErrorKind::CaFile,
            format!("cannot read the CA file {}", path.display()),
            "check the path of the CA file",
        )
        .caused_by(error)
    })?;

    // Iterating over sections of every kind, not only certificates, lets a file of keys be
    // told apart from a file that is not PEM at all.
    let mut certificates = Vec::new();
    let mut other_kinds = Vec::new();
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(&contents) {
        let (kind, der) = section.map_err(|error| {
            PkiError::new(
                PkiErrorKind::CaFile,
                format!("the CA file {} is not valid PEM", path.display()),
                PEM_HINT,
            )
            .caused_by(PemError::new(error))
        })?;
        match kind {
            SectionKind::Certificate => certificates.push(CertificateDer::from(der)),
            other => other_kinds.push(section_name(other)),
        }
    }

    if !certificates.is_empty() {
        return Ok(certificates);
    }
    // The parser skips sections it does not know (for example OpenSSL's TRUSTED
    // CERTIFICATE), so a BEGIN line is the better test for "this is PEM".
    let looks_like_pem = contents.windows(11).any(|window| window == b"-----BEGIN ");
    let message = if !other_kinds.is_empty() {
        format!(
            "the CA file {} holds no certificate (it holds: {})",
            path.display(),
            other_kinds.join(", ")
        )
    } else if looks_like_pem {
        format!(
            "the CA file {} holds no certificate (only PEM sections of other kinds)",
            path.display()
        )
    } else if contents.first() == Some(&0x30) {
        format!(
            "the CA file {} is not PEM (it looks like binary DER)",
            path.display()
        )
    } else {
        format!("the CA file {} is not PEM", path.display())
    };
    Err(PkiError::new(PkiErrorKind::CaFile, message, PEM_HINT))
}

fn section_name(kind: SectionKind) -> &'static str {
    match kind {
        SectionKind::Certificate => "certificate",
        SectionKind::PublicKey => "public key",
        SectionKind::RsaPrivateKey | SectionKind::PrivateKey | SectionKind::EcPrivateKey => {
            "private key"
        }
        SectionKind::Crl => "certificate revocation list",
        SectionKind::Csr => "certificate signing request",
        _ => "other PEM section",
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// The error under `error`, as the type it is.
    fn cause<T: std::error::Error + 'static>(error: &PkiError) -> &T {
        error
            .source()
            .and_then(|source| source.downcast_ref::<T>())
            .unwrap_or_else(|| panic!("{error:?} keeps no {}", std::any::type_name::<T>()))
    }

    #[test]
    fn a_ca_file_that_is_not_pem_keeps_the_parsers_error_and_a_missing_one_the_systems() {
        let directory = std::env::temp_dir().join(format!("tlslab-ca-file-{}", std::process::id()));
        fs::create_dir_all(&directory).unwrap();

        let truncated = directory.join("truncated.pem");
        fs::write(&truncated, "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
        let error = load_certificates(&truncated).unwrap_err();
        assert_eq!(error.kind(), PkiErrorKind::CaFile);
        assert!(error.message().contains("is not valid PEM"), "{error}");
        let pem = cause::<PemError>(&error);
        assert_eq!(
            pem.to_string(),
            "a PEM section has no END line (truncated?)"
        );
        assert!(matches!(
            pem.parser_error(),
            rustls_pki_types::pem::Error::MissingSectionEnd { .. }
        ));

        let missing = directory.join("missing.pem");
        let error = load_certificates(&missing).unwrap_err();
        assert_eq!(
            cause::<std::io::Error>(&error).kind(),
            std::io::ErrorKind::NotFound
        );
        assert!(!error.message().contains("No such file"), "{error}");
        fs::remove_dir_all(&directory).unwrap();
    }
}
