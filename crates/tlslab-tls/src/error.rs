//! [`Error`]: why the rustls backend cannot set up a client or a lab server, with the hint
//! that helps.

/// Why a rustls client or lab server cannot be set up as asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Config asks for something rustls does not have.
    #[error("{0}")]
    Unsupported(String),
    /// The operating system's roots could not be loaded; the first reason the loader gave,
    /// if it gave one.
    #[error("no system root certificates could be loaded")]
    NoSystemRoots(#[source] Option<rustls_native_certs::Error>),
    /// None of the trusted certificates given could be used.
    #[error("none of the {0} trusted certificates could be parsed")]
    UnusableRoots(usize),
    /// `--sni` is neither a DNS name nor an IP address.
    #[error("'{0}' is not a valid server name")]
    ServerName(String),
    /// The ECHConfigList given cannot be used.
    #[error("the ECH configuration is unusable")]
    Ech(#[source] rustls::Error),
    /// rustls cannot present the `--client-cert` and `--client-key` given.
    #[error("rustls cannot use the client certificate and key")]
    ClientCertificate(#[source] rustls::Error),
    /// The lab server cannot verify client certificates with the roots it was given.
    #[error("the lab server cannot verify client certificates against the lab root")]
    ClientRoots(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// rustls cannot build a verifier of server certificates from the trusted roots.
    #[error("cannot verify server certificates with the trusted roots")]
    Verifier(#[source] rustls::client::VerifierBuilderError),
    /// rustls refused the configuration.
    #[error(transparent)]
    Rustls(#[from] rustls::Error),
    /// quinn refused the configuration.
    #[error("cannot configure QUIC")]
    Quic(#[source] quinn::crypto::rustls::NoInitialCipherSuite),
}

impl Error {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Error::NoSystemRoots(_) => {
                "install the system CA certificates (ca-certificates) or pass --ca FILE"
            }
            Error::UnusableRoots(_) => "give --ca a PEM file of CA certificates",
            Error::ServerName(_) => "give a DNS name or an IP address with --sni",
            Error::Ech(_) => {
                "give the ECHConfigList as base64, as in the ech= value of an HTTPS DNS record"
            }
            Error::ClientCertificate(_) => {
                "rustls signs with RSA (2048 bits or more), ECDSA P-256/P-384/P-521 and Ed25519 keys; give such a pair, or try --client-backend openssl"
            }
            Error::ClientRoots(_) => {
                "delete the profile's directory in the PKI cache (tlslab pki prints it) to regenerate it"
            }
            Error::Unsupported(_) | Error::Rustls(_) | Error::Quic(_) | Error::Verifier(_) => {
                "the client library refused the Config's settings; change them or try the other --client-backend"
            }
        }
    }
}
