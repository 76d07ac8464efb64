//! Reading a user's client certificate and key (`--client-cert FILE --client-key FILE`), with
//! errors that say which file is wrong and how, before the run starts: a pair that cannot be
//! used would otherwise fail every attempt the same way.

use std::fs;
use std::path::Path;

use openssl::pkey::{PKey, Private};
use openssl::x509::X509;
use rustls_pki_types::pem::{PemObject, SectionKind};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{PemError, PkiError, PkiErrorKind};

const CERTIFICATE_HINT: &str = "give --client-cert a PEM file of -----BEGIN CERTIFICATE----- \
                                sections, the client's certificate first";
const KEY_HINT: &str =
    "give --client-key an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----, \
                        EC PRIVATE KEY or RSA PRIVATE KEY)";

/// A client certificate chain (leaf first) and the leaf's private key, checked to belong
/// together.
#[derive(Debug)]
pub struct ClientCredentials {
    /// The client's certificate first, then any intermediates, as the client sends them.
    pub chain: Vec<CertificateDer<'static>>,
    /// The key of the first certificate, checked to match it.
    pub key: PrivateKeyDer<'static>,
}

/// Reads `--client-cert` and `--client-key` and checks that the key is the certificate's.
pub fn load_client_credentials(
    certificate: &Path,
    key: &Path,
) -> Result<ClientCredentials, PkiError> {
    let chain = read_chain(certificate)?;
    let key_der = read_key(key)?;
    let mismatch = |detail: String| {
        PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!(
                "the key {} does not belong to the certificate {}: {detail}",
                key.display(),
                certificate.display()
            ),
            "give the private key the client certificate was issued for; compare \
             `openssl x509 -noout -pubkey -in CERT` with `openssl pkey -pubout -in KEY`",
        )
    };
    let leaf = X509::from_der(&chain[0]).map_err(|error| {
        PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!(
                "the first certificate in {} cannot be parsed",
                certificate.display()
            ),
            CERTIFICATE_HINT,
        )
        .caused_by(error)
    })?;
    let public = leaf
        .public_key()
        .map_err(|error| mismatch("its public key cannot be read".to_string()).caused_by(error))?;
    let private = private_key(&key_der).map_err(|error| {
        PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!("the key {} cannot be parsed", key.display()),
            KEY_HINT,
        )
        .caused_by(error)
    })?;
    if !public.public_eq(&private) {
        return Err(mismatch(
            "the certificate carries another public key".to_string(),
        ));
    }
    Ok(ClientCredentials {
        chain,
        key: key_der,
    })
}

/// Each PEM form in its own parser, so a key is never guessed at.
fn private_key(key: &PrivateKeyDer<'_>) -> Result<PKey<Private>, openssl::error::ErrorStack> {
    match key {
        PrivateKeyDer::Pkcs8(der) => PKey::private_key_from_pkcs8(der.secret_pkcs8_der()),
        PrivateKeyDer::Pkcs1(der) => PKey::from_rsa(openssl::rsa::Rsa::private_key_from_der(
            der.secret_pkcs1_der(),
        )?),
        PrivateKeyDer::Sec1(der) => PKey::from_ec_key(openssl::ec::EcKey::private_key_from_der(
            der.secret_sec1_der(),
        )?),
        // A future form: OpenSSL's own detection is the best remaining guess.
        other => PKey::private_key_from_der(other.secret_der()),
    }
}

fn read(path: &Path, what: &str, hint: &str) -> Result<Vec<u8>, PkiError> {
    fs::read(path).map_err(|error| {
        PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!("cannot read the client {what} {}", path.display()),
            hint,
        )
        .caused_by(error)
    })
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    let contents = read(path, "certificate", CERTIFICATE_HINT)?;
    let mut chain = Vec::new();
    for certificate in CertificateDer::pem_slice_iter(&contents) {
        chain.push(certificate.map_err(|error| {
            PkiError::new(
                PkiErrorKind::ClientCredentials,
                format!("the client certificate {} is not valid PEM", path.display()),
                CERTIFICATE_HINT,
            )
            .caused_by(PemError::new(error))
        })?);
    }
    if chain.is_empty() {
        return Err(PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!(
                "the client certificate {} holds no certificate",
                path.display()
            ),
            CERTIFICATE_HINT,
        ));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, PkiError> {
    let contents = read(path, "key", KEY_HINT)?;
    let mut keys = Vec::new();
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(&contents) {
        let (kind, der) = section.map_err(|error| {
            PkiError::new(
                PkiErrorKind::ClientCredentials,
                format!("the client key {} is not valid PEM", path.display()),
                KEY_HINT,
            )
            .caused_by(PemError::new(error))
        })?;
        // Certificates and other sections beside the key are allowed (a combined file).
        if let Some(key) = PrivateKeyDer::from_pem(kind, der) {
            keys.push(key);
        }
    }
    // Encrypted keys are sections the parser skips; saying so beats "no key".
    let encrypted = contents.windows(9).any(|window| window == b"ENCRYPTED");
    match keys.len() {
        1 => Ok(keys.remove(0)),
        0 if encrypted => Err(PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!(
                "the client key {} is encrypted, and tlslab does not ask for passphrases",
                path.display()
            ),
            "decrypt a copy for the run: openssl pkey -in KEY -out KEY.plain.pem",
        )),
        0 => Err(PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!("the client key {} holds no private key", path.display()),
            KEY_HINT,
        )),
        count => Err(PkiError::new(
            PkiErrorKind::ClientCredentials,
            format!(
                "the client key {} holds {count} private keys; which one signs is ambiguous",
                path.display()
            ),
            "give a file with the client certificate's key alone",
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_client_file_that_cannot_be_read_or_is_not_pem_keeps_why() {
        let directory =
            std::env::temp_dir().join(format!("tlslab-client-file-{}", std::process::id()));
        fs::create_dir_all(&directory).unwrap();
        let missing = directory.join("missing.pem");
        let error = read_chain(&missing).unwrap_err();
        assert_eq!(error.kind(), PkiErrorKind::ClientCredentials);
        let io = error
            .source()
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .expect("the I/O error is kept");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);

        let truncated = directory.join("key.pem");
        fs::write(&truncated, "-----BEGIN PRIVATE KEY-----\nMIIB\n").unwrap();
        let error = read_key(&truncated).unwrap_err();
        assert!(error.message().ends_with("is not valid PEM"), "{error}");
        let pem = error
            .source()
            .and_then(|source| source.downcast_ref::<PemError>())
            .expect("the PEM parser's error is kept");
        assert!(matches!(
            pem.parser_error(),
            rustls_pki_types::pem::Error::MissingSectionEnd { .. }
        ));
        fs::remove_dir_all(&directory).unwrap();
    }
}
