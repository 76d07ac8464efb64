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
//! Over TCP both sides match the rustls ones feature for feature: the client sends an
//! HTTP/1.1 or HTTP/2 request after the handshake (or as 0-RTT early data on resumed TLS 1.3
//! handshakes) and reads the response; the server resumes by stateless tickets or a
//! single-use session cache, accepts early data, answers requests with a body of a chosen
//! size, and keeps the rustls lab server's [`tlslab_tls::server::Counters`].
//!
//! ```no_run
//! # async fn demo(chain: tlslab_pki::ServedChain) -> Result<(), Box<dyn std::error::Error>> {
//! use tlslab_core::{Cipher, CloseMode, Event, Http, Phase, TlsVersion};
//! use tlslab_openssl::{server_config, serve, Client, ClientOptions, EchKey, EchMode};
//! use tlslab_openssl::{Group, ServerSettings, Suite};
//! use tlslab_tls::{Attempt, Trust};
//!
//! // A server that accepts ECH and answers requests with 1 kB, on a port of its own.
//! let ech = EchKey::generate("public.example")?;
//! let settings = ServerSettings { body: 1_000, ech: Some(ech.clone()), ..Default::default() };
//! let config = server_config(&chain.certificates, &chain.private_key, &settings)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let address = listener.local_addr()?;
//! tokio::spawn(serve(listener, config));
//!
//! // One ECH handshake with a post-quantum key share, then an HTTP/2 request.
//! let client = Client::new(&ClientOptions {
//!     version: TlsVersion::Tls13,
//!     suite: Suite::Cipher(Cipher::Aes128Gcm),
//!     group: Group::X25519Mlkem768,
//!     server_name: "localhost".into(),
//!     trust: Trust::Roots(vec![chain.root.clone()]),
//!     ech: EchMode::On(ech.config_list()?),
//!     resume: false,
//!     session_id_only: false,
//!     http: Http::Http2,
//!     path: "/".into(),
//!     early_data: 0,
//! })?;
//! let session = client.agent_session();
//! let mut attempt = Attempt::start();
//! let stream = tokio::net::TcpStream::connect(address).await?;
//! attempt.mark(Event::TcpConnected);
//! let mut established = client
//!     .handshake(&session, &mut attempt, stream)
//!     .await
//!     .map_err(|failure| failure.detail)?;
//! established.exchange(&mut attempt).await.map_err(|failure| failure.detail)?;
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

mod certificates;
mod client;
mod ech;
pub mod ffi;
pub mod names;
mod probe;
mod server;
mod settings;

use std::fmt;

pub use certificates::{ml_dsa_chain, MlDsa, MlDsaChain};
pub use client::{AgentSession, Client, Established, Message, Observations};
pub use ech::{EchKey, EchStatus};
pub use probe::Direction;
pub use server::{serve, serve_connection, server_config, ServerConfig, ServerSettings};
pub use settings::{ClientOptions, EchMode, Group, LegacySuite, Suite};

/// The version of the linked OpenSSL (`OpenSSL 4.0.3 …`), for the run's environment record.
pub fn openssl_version() -> &'static str {
    openssl::version::version()
}

/// Something OpenSSL or this crate refused, described for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }

    /// `context`, followed by what OpenSSL's error queue says (and drained from it, so it
    /// does not leak into the next call's error).
    pub(crate) fn openssl(context: impl Into<String>) -> Error {
        let stack = openssl::error::ErrorStack::get();
        let context = context.into();
        if stack.errors().is_empty() {
            Error::new(context)
        } else {
            Error::new(format!("{context}: {stack}"))
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<openssl::error::ErrorStack> for Error {
    fn from(stack: openssl::error::ErrorStack) -> Error {
        Error::new(stack.to_string())
    }
}
