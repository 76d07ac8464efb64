//! The tlslab engine: runs a [`Plan`](tlslab_core::Plan) against lab servers (child processes
//! it starts) or a target, trial by trial with concurrent agents, on an emulated network when
//! the experiment names one; measures server and client CPU per trial; and streams every
//! [`Sample`](tlslab_core::Sample) and run record to a [`Sink`](tlslab_core::Sink).
//!
//! [`run`] is a short composition of steps, one module each: the emulated link
//! (`network`), the lab servers (`servers`, `lab`), where each Config goes and what its client
//! trusts (`routes`), each Config's client in its library (`clients`), the writer thread
//! (`writer`), the trial loop with early stopping (`trials`, `stopping`), the replay probe
//! (`replay`). The trial loop reaches the network only through a [`trials::Connector`], so it
//! is tested without sockets; a producer with its own kind of attempt can drive it too.
//! Signals are the caller's business: it hands the engine a [`Stop`] token.
//!
//! ```no_run
//! use tlslab_core::{Experiment, Plan, Record, RunEnd, RunInfo, Sink, SinkError};
//! use tlslab_engine::{run, RunOptions, Stop};
//!
//! struct Count(u64);
//! impl Sink for Count {
//!     fn begin(&mut self, _: &RunInfo) -> Result<(), SinkError> { Ok(()) }
//!     fn record(&mut self, record: Record) -> Result<(), SinkError> {
//!         if let Record::Sample(_) = record { self.0 += 1 }
//!         Ok(())
//!     }
//!     fn flush(&mut self) -> Result<(), SinkError> { Ok(()) }
//!     fn finish(&mut self, _: &RunEnd) -> Result<(), SinkError> { Ok(()) }
//! }
//!
//! let experiment = Experiment { handshakes: 100, ..Experiment::default() };
//! let configs = experiment.configs().unwrap();
//! let plan = Plan::new(&experiment, &configs, 1);
//! let options = RunOptions {
//!     server_program: "tlslab".into(),
//!     pki: tlslab_pki::Pki::open_default().unwrap(),
//!     environment: tlslab_engine::environment::capture("0.1.0", "unknown"),
//!     command_line: vec![],
//!     seed: 1,
//!     stop: Stop::new(),
//!     progress: None,
//!     key_log: None,
//!     capture: None,
//!     trials: None,
//! };
//! let end = run(&experiment, &configs, &plan, options, Box::new(Count(0))).unwrap();
//! assert_eq!(end.attempted, 120);
//! ```

// Every public item says what it is for: the engine's API is what the binary and the workflow
// library build on, and its doc comments are where they learn what a field or call promises.
#![warn(missing_docs)]
// The three unsafe blocks left (a pre-exec hook, getrusage and its zeroed struct) each say why
// they are sound (clippy holds every new one to a `// SAFETY:` line); an unsafe fn's body gets
// no blanket permission.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod clients;
pub mod environment;
mod error;
pub mod lab;
pub mod network;
mod page;
mod process_tree;
mod progress;
mod recording;
mod replay;
mod routes;
mod run;
mod runtime;
pub mod serve;
mod servers;
mod stop;
pub mod stopping;
pub mod transport;
pub mod trials;
pub mod usage;
mod writer;

pub use error::{Cause, EngineError, EngineErrorKind, RunError, RunErrorKind};
pub use lab::{answer_control_requests, LabServer};
pub use progress::{Progress, ProgressCallback, RunningConfig};
pub use replay::Flights;
pub use run::{run, RunOptions};
pub use stop::Stop;
pub use trials::{PlanOrder, TrialSource};
pub use writer::{Records, Writer};
