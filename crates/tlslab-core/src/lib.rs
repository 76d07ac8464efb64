//! The vocabulary of tlslab: what a user asks for ([`Experiment`]), the axes it varies
//! ([`dimension`]), the labelled points of the matrix ([`Config`]), the order they run in
//! ([`Plan`] of [`Trial`]s), and the record of one handshake attempt ([`Sample`]) with the
//! phase model every backend and transport shares ([`Event`], [`Phase`]).
//!
//! This crate does no network I/O; everything here can be built and checked in a unit test.
//!
//! ```
//! use tlslab_core::{Experiment, Plan};
//!
//! let experiment: Experiment = toml::from_str(r#"
//!     tls = ["1.2", "1.3"]
//!     handshakes = 100
//!     concurrency = [4]
//! "#).unwrap();
//! let configs = experiment.configs().unwrap();
//! assert_eq!(configs[0].label, "tls1.2 aes128gcm x25519 ecdsa-p256 chain1 c4");
//! let plan = Plan::new(&experiment, &configs, 42);
//! assert_eq!(plan.measured_handshakes(0), 100);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arrival;
pub mod causes;
pub mod certificate;
pub mod clock;
pub mod config;
pub mod dimension;
pub mod duration;
pub mod experiment;
pub mod names;
pub mod network;
pub mod overrides;
pub mod page;
pub mod pins;
pub mod plan;
pub mod record;
pub mod resolution;
pub mod sample;
pub mod sink_thread;
pub mod terminal;
pub mod threshold;

pub use arrival::{ArrivalRate, ArrivalTimes, Arrivals};
pub use causes::{Cause, Causes, WithCauses};
pub use clock::{Clock, SimulatedClock, SystemClock};
pub use config::{ClientIdentity, Config, ConfigError, Endpoint, ServerKey, ServerResumption};
pub use dimension::{
    Authentication, Backend, CertCache, CertProfile, Cipher, CloseMode, DnsMode, Ech, Emulator,
    Group, HelloRetry, Http, InvalidValue, KeepAlive, KeyKind, LegacyKeyExchange, LegacySuite,
    Mtls, ParseError, Resume, Scheme, SuiteSpec, TlsVersion, Transport,
};
pub use experiment::Experiment;
pub use network::{Loss, Network, NetworkDimensions, Rate};
pub use overrides::Overrides;
pub use page::Page;
pub use pins::Pins;
pub use plan::{Plan, Trial};
pub use record::{
    ClientVerifications, ConfigRecord, EarlyStop, Environment, LinkUsage, Record, ReplayRecord,
    RunEnd, RunInfo, Sink, SinkError, Source, TrialRecord, Usage,
};
pub use resolution::{NameResolution, PinnedAddress};
pub use sample::{
    ClientCertificateStatus, ConnectionUse, EchStatus, ErrorClass, Event, Negotiated, Observed,
    Offered, Outcome, Phase, QuicPath, Response, ResponseFlights, Sample, SampleBuilder, Timeline,
    Vantage, WireClock,
};
pub use sink_thread::{Producers, Records, SinkThread};
