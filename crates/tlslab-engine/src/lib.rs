//! The tlslab engine: starts lab servers as child processes, runs a [`Plan`](tlslab_core::Plan)
//! trial by trial with concurrent agents (on an emulated network when the experiment names
//! one), measures server and client CPU per trial, and streams every [`Sample`](tlslab_core::Sample) to a [`Sink`] (the results store).
//!
//! ```no_run
//! use std::sync::{atomic::AtomicBool, Arc};
//! use tlslab_core::{Experiment, Plan};
//! use tlslab_engine::{run, Environment, Record, RunEnd, RunInfo, RunOptions, Sink};
//!
//! struct Count(u64);
//! impl Sink for Count {
//!     fn begin(&mut self, _: &RunInfo) -> Result<(), String> { Ok(()) }
//!     fn record(&mut self, record: Record) -> Result<(), String> {
//!         if let Record::Sample(_) = record { self.0 += 1 }
//!         Ok(())
//!     }
//!     fn flush(&mut self) -> Result<(), String> { Ok(()) }
//!     fn finish(&mut self, _: &RunEnd) -> Result<(), String> { Ok(()) }
//! }
//!
//! let experiment = Experiment { handshakes: 100, ..Experiment::default() };
//! let configs = experiment.configs().unwrap();
//! let plan = Plan::new(&experiment, &configs, 1);
//! let options = RunOptions {
//!     server_program: "tlslab".into(),
//!     pki: tlslab_pki::Pki::open_default().unwrap(),
//!     environment: Environment::capture("0.1.0", "unknown"),
//!     command_line: vec![],
//!     seed: 1,
//!     stop: Arc::new(AtomicBool::new(false)),
//!     progress: None,
//! };
//! let end = run(&experiment, &configs, &plan, options, Box::new(Count(0))).unwrap();
//! assert_eq!(end.attempted, 120);
//! ```

mod backend;
pub mod environment;
pub mod lab;
pub mod network;
pub mod run;
pub mod stopping;
pub mod usage;

pub use environment::Environment;
pub use lab::{answer_control_requests, LabServer};
pub use run::{
    run, Progress, ProgressCallback, Record, RunEnd, RunError, RunErrorKind, RunInfo, RunOptions,
    Sink, TrialRecord,
};
pub use stopping::EarlyStop;
pub use usage::Usage;
