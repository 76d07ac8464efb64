//! tlslab's rustls backend (aws-lc-rs provider): an instrumented client and the lab server,
//! over TCP and over QUIC (quinn). rustls is the default library, and the only one tlslab
//! runs QUIC on.
//!
//! The client drives rustls' sans-IO `ClientConnection` by hand and timestamps every phase of
//! the handshake around `write_tls`, `read_tls` and `process_new_packets`; a wrapped
//! certificate verifier times verification and a key-log probe marks the moment the client's
//! Finished is due. Nothing in rustls is patched.
//!
//! The client fills the backend contract (`tlslab-backend`): the same [`Attempt`] record,
//! [`ClientSettings`] and post-handshake exchange as every other library.
//!
//! ```no_run
//! # async fn demo(root: rustls::pki_types::CertificateDer<'static>) {
//! use std::time::Duration;
//! use tlslab_backend::{attempt_over_tcp, Attempt, ClientSettings, Trust};
//! use tlslab_core::{Cipher, CloseMode, Event, Group, Phase, TlsVersion};
//! use tlslab_tls::Client;
//!
//! let client = Client::new(&ClientSettings::handshake_only(
//!     TlsVersion::Tls13,
//!     Cipher::Aes128Gcm,
//!     Group::X25519,
//!     "localhost",
//!     Trust::Roots(vec![root]),
//! )).unwrap();
//! let agent = client.agent_session();
//! let mut attempt = Attempt::start();
//! let stream = tokio::net::TcpStream::connect("127.0.0.1:8443").await.unwrap();
//! attempt.mark(Event::TcpConnected);
//! attempt_over_tcp(&client, &agent, &mut attempt, stream, CloseMode::Reset, Duration::from_secs(1))
//!     .await
//!     .unwrap();
//! println!("{:?}", attempt.timeline.phase(Phase::Handshake));
//! # }
//! ```
//!
//! [`Attempt`]: tlslab_backend::Attempt
//! [`ClientSettings`]: tlslab_backend::ClientSettings

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
mod error;
mod probe;
pub mod provider;
pub mod quic;
pub mod server;
mod trust;

pub use client::{replay_tcp, AgentSession, Client, Established};
pub use error::Error;
pub use quic::{replay_quic, QuicAttemptOptions, QuicSession};
pub use quinn;
pub use rustls;
