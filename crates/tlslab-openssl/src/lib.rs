//! tlslab's OpenSSL backend: an instrumented OpenSSL 4 client that records the same events
//! and negotiated parameters as the rustls client, an OpenSSL lab server, ECH keys, and
//! ML-DSA certificate chains.
//!
//! OpenSSL reaches what rustls does not: ML-KEM-1024 and the finite-field groups, legacy
//! TLS 1.2 suites (CBC with SHA-1, DHE, RSA key transport), Encrypted ClientHello on both
//! sides, and ML-DSA certificates. It links the OpenSSL 4.0.3 that `scripts/openssl` builds
//! (see `.cargo/config.toml`), so the measured library is the same on every machine.
//!
//! The client drives `SSL_connect` through an in-memory pipe from one async loop, so it sees
//! every byte cross the socket; the message callback timestamps each handshake message and a
//! certificate verification callback times `X509_verify_cert`. Nothing in OpenSSL is patched.
//!
//! Over TCP both sides match the rustls ones feature for feature, through the backend
//! contract (`tlslab-backend`), not through the rustls crate: the client fills the same
//! [`Attempt`] from the same [`ClientSettings`] and sends its HTTP/1.1 or HTTP/2 request with
//! the shared exchange (or as 0-RTT early data on resumed TLS 1.3 handshakes); the server
//! resumes by stateless tickets or a single-use session cache, accepts early data, answers
//! requests with a body of a chosen size, and keeps the same [`Counters`].
//!
//! ```no_run
//! # async fn demo(chain: tlslab_pki::ServedChain) -> Result<(), Box<dyn std::error::Error>> {
//! use tlslab_backend::{exchange, Attempt, Channel, ClientSettings, EchMode, ServerSettings};
//! use tlslab_backend::{Client as _, Trust};
//! use tlslab_core::{Cipher, CloseMode, Event, Group, Http, Phase, TlsVersion};
//! use tlslab_openssl::{server_config, serve, Client, EchKey};
//!
//! // A server that accepts ECH and answers requests with 1 kB, on a port of its own.
//! let ech = EchKey::generate("public.example")?;
//! let settings = ServerSettings { body: 1_000, ..Default::default() };
//! let config = server_config(&chain.certificates, &chain.private_key, &settings, Some(&ech))?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let address = listener.local_addr()?;
//! tokio::spawn(serve(listener, config));
//!
//! // One ECH handshake with a post-quantum key share, then an HTTP/2 request.
//! let mut settings = ClientSettings::handshake_only(
//!     TlsVersion::Tls13,
//!     Cipher::Aes128Gcm,
//!     Group::X25519Mlkem768,
//!     "localhost",
//!     Trust::Roots(vec![chain.root.clone()]),
//! );
//! settings.ech = EchMode::On(ech.config_list()?);
//! settings.http = Http::Http2;
//! let client = Client::new(&settings)?;
//! let session = client.agent_session();
//! let mut attempt = Attempt::start();
//! let stream = tokio::net::TcpStream::connect(address).await?;
//! attempt.mark(Event::TcpConnected);
//! let mut handshake = client
//!     .handshake(&session, &mut attempt, stream)
//!     .await
//!     .map_err(|failure| failure.detail)?;
//! let request = client.request().expect("the Config sends a request");
//! exchange(&mut handshake.channel, &mut attempt, request, handshake.request_sent)
//!     .await
//!     .map_err(|failure| failure.detail)?;
//! let established = handshake.channel;
//! println!(
//!     "{:?} ns, ECH {}, {} messages, TTFB {:?} ns, {:?}",
//!     attempt.timeline.phase(Phase::Handshake),
//!     established.observations.ech,
//!     established.observations.messages.len(),
//!     attempt.timeline.phase(Phase::Ttfb),
//!     attempt.response,
//! );
//! established.close(CloseMode::Reset).await;
//! # Ok(())
//! # }
//! ```
//!
//! [`Attempt`]: tlslab_backend::Attempt
//! [`ClientSettings`]: tlslab_backend::ClientSettings
//! [`Counters`]: tlslab_backend::Counters

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod client;
mod ech;
pub(crate) mod ffi;
pub mod names;
mod probe;
mod server;
mod settings;

pub use client::{AgentSession, Client, Established, Message, Observations};
pub use ech::{EchKey, EchStatus};
pub use probe::Direction;
pub use server::{serve, serve_connection, server_config, ServerConfig};
pub use settings::group_openssl_name;

/// The version of the linked OpenSSL (`OpenSSL 4.0.3 …`), for the run's environment record.
pub fn openssl_version() -> &'static str {
    openssl::version::version()
}

/// Something OpenSSL or this crate refused, described for people, with what to do about it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    message: String,
    kind: ErrorKind,
    /// What OpenSSL's error queue held, when it held anything: OpenSSL's own reasons.
    #[source]
    source: Option<openssl::error::ErrorStack>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKind {
    /// OpenSSL refused a setting or an operation.
    Library,
    /// The Config asks for something this backend does not do.
    Unsupported,
    /// The system's root certificates could not be found.
    SystemRoots,
}

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            kind: ErrorKind::Library,
            source: None,
        }
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Unsupported,
            ..Error::new(message)
        }
    }

    pub(crate) fn system_roots(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::SystemRoots,
            ..Error::new(message)
        }
    }

    /// `context`, followed by what OpenSSL's error queue says (and drained from it, so it
    /// does not leak into the next call's error).
    pub(crate) fn openssl(context: impl Into<String>) -> Error {
        let stack = openssl::error::ErrorStack::get();
        Error {
            source: (!stack.errors().is_empty()).then_some(stack),
            ..Error::new(context)
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self.kind {
            ErrorKind::SystemRoots => {
                "install the system CA certificates (ca-certificates) or pass --ca FILE"
            }
            ErrorKind::Unsupported | ErrorKind::Library => {
                "the client library refused the Config's settings; change them or try the other --client-backend"
            }
        }
    }
}

impl From<openssl::error::ErrorStack> for Error {
    fn from(stack: openssl::error::ErrorStack) -> Error {
        Error {
            source: Some(stack),
            ..Error::new("OpenSSL refused a setting or an operation")
        }
    }
}
