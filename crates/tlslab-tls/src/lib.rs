//! TLS backends for tlslab, behind one client and one server API. rustls (aws-lc-rs
//! provider) is the first backend, over TCP and over QUIC (quinn).
//!
//! The client drives rustls' sans-IO `ClientConnection` by hand and timestamps every phase of
//! the handshake around `write_tls`, `read_tls` and `process_new_packets`; a wrapped
//! certificate verifier times verification and a key-log probe marks the moment the client's
//! Finished is due. Nothing in rustls is patched.
//!
//! ```no_run
//! # async fn demo(root: rustls::pki_types::CertificateDer<'static>) {
//! use tlslab_core::{Cipher, CloseMode, Group, TlsVersion};
//! use tlslab_tls::{Attempt, Client, ClientSettings, Trust};
//!
//! let client = Client::new(&ClientSettings::handshake_only(
//!     TlsVersion::Tls13,
//!     Cipher::Aes128Gcm,
//!     Group::X25519,
//!     "localhost",
//!     Trust::Roots(vec![root]),
//! )).unwrap();
//! let session = client.agent_session();
//! let mut attempt = Attempt::start();
//! let stream = tokio::net::TcpStream::connect("127.0.0.1:8443").await.unwrap();
//! attempt.mark(tlslab_core::Event::TcpConnected);
//! let established = client.handshake(&session, &mut attempt, stream).await.unwrap();
//! established.close(CloseMode::Reset).await;
//! println!("{:?}", attempt.timeline.phase(tlslab_core::Phase::Handshake));
//! # }
//! ```

pub mod client;
mod probe;
pub mod provider;
pub mod quic;
pub mod server;

pub use client::{
    replay_tcp, AgentSession, Attempt, Client, ClientSettings, EchMode, Established, Failure, Trust,
};
pub use quic::{replay_quic, QuicAttemptOptions};
pub use quinn;
pub use rustls;
