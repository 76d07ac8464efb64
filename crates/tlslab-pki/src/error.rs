//! The one error type of this crate: what went wrong, and what the user can do about it.

use std::error::Error;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// What kind of problem a [`PkiError`] reports, so callers can choose an exit code
/// (a bad depth or CA file is the user's input; an unwritable cache is the environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PkiErrorKind {
    /// A chain depth outside `1..=MAX_CHAIN_DEPTH`.
    InvalidDepth,
    /// No cache directory could be chosen (no `TLSLAB_PKI_DIR`, `XDG_CACHE_HOME` or `HOME`).
    NoCacheDirectory,
    /// Reading or writing the cache directory failed.
    CacheIo,
    /// The cache directory exists but is missing files or holds unreadable ones.
    DamagedCache,
    /// The cryptography library refused to generate a key or sign a certificate.
    Generation,
    /// A user-supplied CA file is missing, not PEM, or holds no certificate.
    CaFile,
    /// A user-supplied client certificate or key is missing, not PEM, or the two do not
    /// belong together.
    ClientCredentials,
}

/// An error with a hint. `Display` prints the problem alone, as every error of the
/// workspace does (the hint is [`hint`](PkiError::hint): the command line prints it on its
/// own `hint:` line, once, after the causes); the error underneath (the I/O error, the PEM
/// parser's, OpenSSL's) is the [`source`](Error::source).
#[derive(Debug, Clone)]
pub struct PkiError {
    kind: PkiErrorKind,
    message: String,
    hint: String,
    source: Option<Arc<dyn Error + Send + Sync>>,
}

impl PkiError {
    /// An error of `kind` with no cause underneath it.
    pub fn new(kind: PkiErrorKind, message: impl Into<String>, hint: impl Into<String>) -> Self {
        PkiError {
            kind,
            message: message.into(),
            hint: hint.into(),
            source: None,
        }
    }

    /// The same error, with `source` as the cause underneath it.
    pub fn caused_by(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Whose problem it is, for the caller's exit code.
    pub fn kind(&self) -> PkiErrorKind {
        self.kind
    }

    /// What went wrong, without the hint.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What to do about it.
    pub fn hint(&self) -> &str {
        &self.hint
    }

    /// A file or directory in the cache could not be read or written.
    pub(crate) fn cache_io(action: &str, path: &Path, error: std::io::Error) -> Self {
        PkiError::new(
            PkiErrorKind::CacheIo,
            format!("cannot {action} {}", path.display()),
            "check that the certificate cache directory is writable, or choose another one \
             with the TLSLAB_PKI_DIR environment variable",
        )
        .caused_by(error)
    }

    /// The published material of a profile is not what this crate wrote there.
    pub(crate) fn damaged_cache(profile_dir: &Path, detail: impl fmt::Display) -> Self {
        PkiError::new(
            PkiErrorKind::DamagedCache,
            format!(
                "the certificate cache {} is incomplete or damaged: {detail}",
                profile_dir.display()
            ),
            format!(
                "delete the directory {} (rm -r); tlslab regenerates it on next use",
                profile_dir.display()
            ),
        )
    }

    /// rcgen or OpenSSL refused to generate a key or sign a certificate.
    pub(crate) fn generation(what: &str, error: impl Error + Send + Sync + 'static) -> Self {
        PkiError::generation_failed(what, "the cryptography library refused").caused_by(error)
    }

    /// Generating `what` went wrong in a way no library error describes.
    pub(crate) fn generation_failed(what: &str, reason: &str) -> Self {
        PkiError::new(
            PkiErrorKind::Generation,
            format!("cannot generate {what}: {reason}"),
            "this is a bug in tlslab or its cryptography library; please report it",
        )
    }
}

impl fmt::Display for PkiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for PkiError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn Error + 'static))
    }
}

/// A PEM file's fault as people read it (a section without its END line, base64 that does
/// not decode, a file that is missing), with the PEM parser's own error kept for a caller that
/// branches on it. The description says all the parser's error does, without its raw bytes.
#[derive(Debug)]
pub struct PemError {
    description: String,
    parser: rustls_pki_types::pem::Error,
}

impl PemError {
    pub(crate) fn new(parser: rustls_pki_types::pem::Error) -> PemError {
        PemError {
            description: crate::cache::describe_pem_error(&parser),
            parser,
        }
    }

    /// The PEM parser's error.
    pub fn parser_error(&self) -> &rustls_pki_types::pem::Error {
        &self.parser
    }
}

impl fmt::Display for PemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)
    }
}

impl Error for PemError {}

/// Equal when the kind, the message and the hint are: the causes are the system's and the
/// libraries' words for the same problem.
impl PartialEq for PkiError {
    fn eq(&self, other: &PkiError) -> bool {
        (self.kind, &self.message, &self.hint) == (other.kind, &other.message, &other.hint)
    }
}

impl Eq for PkiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_problem_and_the_hint_is_apart() {
        let error = PkiError::new(PkiErrorKind::InvalidDepth, "bad depth 9", "use 1 to 5");
        assert_eq!(error.to_string(), "bad depth 9");
        assert_eq!(error.hint(), "use 1 to 5");
        assert_eq!(error.kind(), PkiErrorKind::InvalidDepth);
    }
}
