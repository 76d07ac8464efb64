//! The contract every TLS library in tlslab fills and obeys, so samples mean the same thing
//! whichever library measured them: the attempt recorder ([`Attempt`]), failures
//! ([`Failure`]), what a client offers and trusts ([`ClientSettings`], [`Trust`],
//! [`EchMode`]), what a lab server offers ([`ServerSettings`]) and counts ([`Counters`]),
//! and the part of an attempt written once for every library: the request, the wait for the
//! server to accept a TLS 1.3 handshake ([`AcceptanceWait`]), the wait for a ticket and the
//! close ([`attempt_over_tcp`], over a library's [`Client`] and [`Channel`]).
//!
//! The rustls backend (`tlslab-tls`) and the OpenSSL backend (`tlslab-openssl`) depend on
//! this crate and not on each other; a new library attaches here.
//!
//! ```
//! use std::time::Duration;
//! use tlslab_backend::Attempt;
//! use tlslab_core::{Event, Phase};
//!
//! // What a client reports as its handshake goes (here by hand), and the phases it gives.
//! let mut attempt = Attempt::start();
//! let origin = attempt.origin;
//! let at = |micros| origin + Duration::from_micros(micros);
//! let (hello, answer, finished) = (at(50), at(400), at(480));
//! attempt.sent(310, hello);
//! attempt.received(2_800, answer);
//! attempt.server_flight_received();
//! attempt.server_flight_answered();
//! attempt.finished_due();
//! attempt.sent(80, finished);
//! attempt.handshake_done();
//! assert_eq!(attempt.timeline.phase(Phase::ServerResponse), Some(350_000));
//! assert_eq!(attempt.timeline.get(Event::ClientFinishedSent), Some(480_000));
//! assert_eq!(attempt.server_flight_bytes, Some(2_800));
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod acceptance;
mod attempt;
pub mod certificate;
mod counters;
mod exchange;
mod failure;
mod key_log;
pub mod server_socket;
mod settings;
mod timer;
pub mod wire;

pub use acceptance::AcceptanceWait;
pub use attempt::{Attempt, Observer};
pub use counters::{CounterSnapshot, Counters};
pub use exchange::{
    attempt_over_tcp, await_acceptance, await_ticket, exchange, open_over_tcp, Channel, Client,
    Handshake, PlainChannel, Plaintext,
};
pub use failure::Failure;
pub use key_log::{KeyLogFile, KeyLogOutcome, Tally};
pub use settings::{
    ClientCertificate, ClientSettings, EchMode, Request, ServerSettings, Suite, Trust,
};
pub use wire::{TimestampedStream, WireTime};
