//! tlslab's workflows as library calls: [`run`](run::run) and [`load`](load::load) (an
//! experiment measured into a results store, its summary and its verdict),
//! [`scan`](scan::scan) (what a server supports, graded, with its cost table),
//! [`pcap`](pcap::pcap) and [`capture`](capture::capture) (handshakes read from packets into
//! a store), [`serve`](serve::serve) (the lab server until stopped), [`speed`](speed::speed)
//! (what each cryptographic primitive costs this machine, per backend), and
//! [`compare`](compare::compare), [`plan`](plan::plan), [`report`](report::report) and
//! [`export`](export::export) (a results store, or sample files, read: compared and gated,
//! planned from, written out as a report or as rows).
//!
//! Each takes a typed request and a [`Control`] (the stop token, a progress callback, a
//! callback for what is said while it works) and returns a typed outcome or a
//! [`WorkflowError`] whose [`kind`](WorkflowError::kind) a caller maps to an exit code. None
//! prints, exits or reads the process's arguments: the command line to store is given in
//! the [`Invocation`]. The `tlslab` binary is one caller; an agent or a test is another.
//!
//! ```no_run
//! use tlslab_core::Experiment;
//! use tlslab_workflow::{run, Control, Invocation};
//!
//! let experiment = Experiment {
//!     handshakes: 100,
//!     ..Experiment::default()
//! };
//! let request = run::RunRequest::new(experiment, Invocation::new("tlslab", "0.1.0"));
//! match run::run(&request, &Control::default()) {
//!     Ok(outcome) => println!(
//!         "{} attempts stored in {} ({:?})",
//!         outcome.summary.attempted,
//!         outcome.results,
//!         outcome.verdict.kind()
//!     ),
//!     Err(error) => eprintln!("error: {error}\nhint: {}", error.hint()),
//! }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agents;
pub mod capture;
pub mod compare;
pub mod crosscheck;
mod error;
pub mod experiment;
pub mod export;
pub mod files;
pub mod load;
mod passive;
pub mod pcap;
pub mod pki;
pub mod plan;
pub mod report;
pub mod results;
pub mod run;
pub mod scan;
pub mod scan_cost;
pub mod serve;
pub mod speed;
pub mod store;

use std::path::PathBuf;
use std::sync::Arc;

pub use error::{CertificateFileError, ErrorKind, WorkflowError};
pub use tlslab_engine::{Progress, ProgressCallback, Stop};

/// Who runs the workflow: what is stored with its results, and the program that runs lab
/// servers.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The tlslab binary, started as `serve --control` for each lab server of a run.
    pub program: PathBuf,
    /// The tool's version, stored with every run and scan.
    pub version: String,
    /// The commit it was built from.
    pub commit: String,
    /// The command line stored with the results (the binary's arguments; whatever names
    /// the request for another caller). It is stored as [`Invocation::stored_command_line`]
    /// gives it: a password in a URL among it (`--store postgres://user:secret@…`) never.
    pub command_line: Vec<String>,
}

impl Invocation {
    /// `program` at `version`, of an unknown commit, with an empty command line.
    pub fn new(program: impl Into<PathBuf>, version: impl Into<String>) -> Invocation {
        Invocation {
            program: program.into(),
            version: version.into(),
            commit: "unknown".into(),
            command_line: Vec::new(),
        }
    }

    /// The command line as it is stored with results: each argument with any password in a
    /// URL in it replaced by `***` (tlslab-store's `redact_url`).
    pub fn stored_command_line(&self) -> Vec<String> {
        self.command_line
            .iter()
            .map(|argument| tlslab_store::postgres::connection::redact_url(argument))
            .collect()
    }

    /// The machine and libraries a run is measured on, with this tool's version and commit.
    pub(crate) fn environment(&self) -> tlslab_core::Environment {
        tlslab_engine::environment::capture(&self.version, &self.commit)
    }
}

/// What a workflow says while it works, for its caller to show (or not).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Notice {
    /// A key log is being written: it holds the secrets of every handshake.
    KeyLog(PathBuf),
    /// A live capture has begun.
    Capturing {
        /// The interface.
        interface: String,
        /// The store it writes (a database's URL and run as [`results::Results`] shows
        /// them, without a password).
        store: PathBuf,
        /// Whether it runs until stopped (no duration was given).
        until_stopped: bool,
        /// Where its metrics are served, if they are.
        metrics: Option<std::net::SocketAddr>,
    },
    /// A key log could not be written whole (said when the run then fails; a finished
    /// run's outcome holds it).
    KeyLogLost(run::LostKeyLog),
    /// A lab server is listening.
    Serving(serve::Serving),
    /// Something worth a warning that does not stop the work.
    Warning(String),
    /// A results store read holds a run that did not finish (it was interrupted, its lab
    /// server died, the disk filled, or it was cut off): numbers from it are not a complete
    /// run's.
    Unfinished {
        /// The store (a database's URL and run as [`results::Results`] shows them, without
        /// a password).
        store: PathBuf,
        /// The reason stored with the run, if one was.
        reason: Option<String>,
    },
    /// A report's charts are written (said before the report itself is rendered, which
    /// may still fail).
    ChartsWritten {
        /// How many.
        count: usize,
        /// The directory they are in.
        directory: PathBuf,
    },
}

/// A callback for [`Notice`]s.
pub type NoticeCallback = Arc<dyn Fn(&Notice) + Send + Sync>;

/// How a caller steers a workflow while it runs.
#[derive(Clone, Default)]
pub struct Control {
    /// Requested: stop after the work in flight (what was done is kept).
    pub stop: Stop,
    /// Called as a run progresses (a run's attempts).
    pub progress: Option<ProgressCallback>,
    /// Called with what the workflow says while it works.
    pub notices: Option<NoticeCallback>,
}

impl Control {
    pub(crate) fn notice(&self, notice: Notice) {
        if let Some(notices) = &self.notices {
            notices(&notice);
        }
    }
}

/// `./tlslab-results/<UTC timestamp>.db`, with a suffix when two runs start in one second:
/// where a run, a load, a pcap or a capture stores its results unless told (by `--store`,
/// `--out` or `TLSLAB_STORE`).
pub fn default_output() -> PathBuf {
    let stamp = tlslab_store::utc_timestamp(now_unix_ns()).replace(':', "-");
    let directory = std::path::Path::new("tlslab-results");
    let mut path = directory.join(format!("{stamp}.db"));
    let mut suffix = 1;
    while path.exists() {
        path = directory.join(format!("{stamp}-{suffix}.db"));
        suffix += 1;
    }
    path
}

/// The wall clock, in nanoseconds since the Unix epoch (0 before it).
pub(crate) fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

/// The lab's certificate directory: `dir`, or the default (`TLSLAB_PKI_DIR`, else the
/// user's cache).
pub fn open_pki(dir: Option<&std::path::Path>) -> Result<tlslab_pki::Pki, WorkflowError> {
    match dir {
        Some(dir) => tlslab_pki::Pki::open(dir),
        None => tlslab_pki::Pki::open_default(),
    }
    .map_err(WorkflowError::Pki)
}

/// Opens a results file for reading, and says so ([`Notice::Unfinished`]) when its run did
/// not finish ([`results::Results::open`], which also opens a database's run).
pub fn open_store(
    path: &std::path::Path,
    control: &Control,
) -> Result<tlslab_store::Store, WorkflowError> {
    results::Results::file(path).open(control)
}
