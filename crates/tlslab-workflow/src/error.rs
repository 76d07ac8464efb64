//! [`WorkflowError`]: why a workflow could not start or had to stop, with the library error
//! that caused it kept as its source, a hint, and the [`ErrorKind`] a caller maps to an exit
//! code.
//!
//! The library crates' errors are read here only (their kinds and hints), so a change to
//! their shape is met in this one file.

use std::path::PathBuf;

use crate::files::FileError;

/// Whose problem an error is, or how a workflow ended: what a caller branches on (the
/// binary maps each to its exit code, README "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request cannot work as given: an option, a file the user named (exit 2).
    Usage,
    /// The machine lacks something, or a file could not be written (exit 3).
    Environment,
    /// The work was done but attempts failed, or answers could not be read (exit 1).
    Failures,
    /// The run completed and a threshold was broken (exit 4).
    Threshold,
    /// Stopped before its end by the caller's stop token (exit 130).
    Interrupted,
}

/// Why a workflow could not start or had to stop. Each variant that wraps a library error
/// keeps it as its [`source`](std::error::Error::source), so the whole chain can be shown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// An option or an input that cannot work as given, found by the workflow itself.
    #[error("{message}")]
    Usage {
        /// What is wrong.
        message: String,
        /// What to give instead.
        hint: String,
        /// Why, when another error said so (the system's, on a file that cannot be read).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// Something the machine lacks or refuses, found by the workflow itself.
    #[error("{message}")]
    Environment {
        /// What failed.
        message: String,
        /// What to do about it.
        hint: String,
        /// The system's reason, when there is one.
        #[source]
        source: Option<std::io::Error>,
    },
    /// An output the file rule refuses, or one that could not be written.
    #[error(transparent)]
    File(#[from] FileError),
    /// The experiment cannot run as written.
    #[error(transparent)]
    Config(#[from] tlslab_core::ConfigError),
    /// The results store could not be created where it was asked for.
    #[error("cannot create the results store {}", path.display())]
    StoreCreate {
        /// The store's path.
        path: PathBuf,
        /// Why.
        #[source]
        source: tlslab_store::StoreError,
    },
    /// A results store could not be read or written.
    #[error(transparent)]
    Store(#[from] tlslab_store::StoreError),
    /// A certificate file (`--ca`) that cannot be used.
    #[error("cannot use {option} {}", path.display())]
    CertificateFile {
        /// The option that named it.
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it cannot be used.
        #[source]
        source: CertificateFileError,
    },
    /// The lab's certificate directory cannot be used.
    #[error("cannot use the lab's certificate directory")]
    Pki(#[source] tlslab_pki::PkiError),
    /// The engine could not start the run, or had to stop it. The engine's message is the
    /// message; `results` says where the samples taken so far are.
    #[error("{source}")]
    Engine {
        /// The engine's error.
        #[source]
        source: tlslab_engine::RunError,
        /// The store holding the samples taken before it stopped, if one was begun.
        results: Option<PathBuf>,
    },
    /// A report or summary could not be made.
    #[error(transparent)]
    Report(#[from] tlslab_report::ReportError),
    /// A scan could not be made at all.
    #[error(transparent)]
    Scan(#[from] tlslab_scan::ScanError),
    /// A capture could not be opened, read or written. `usage`: the input was the user's
    /// (a capture file that does not parse), not the machine.
    #[error("{source}")]
    Capture {
        /// The capture crate's error.
        #[source]
        source: tlslab_capture::CaptureError,
        /// Whether the user's input is at fault (exit 2) rather than the machine (exit 3).
        usage: bool,
        /// The store holding the handshakes read before it failed, if one was begun.
        results: Option<PathBuf>,
    },
    /// Monitoring (metrics, InfluxDB) could not start.
    #[error(transparent)]
    Telemetry(#[from] tlslab_telemetry::TelemetryError),
    /// The results could not be written as they came.
    #[error("writing results failed")]
    Sink(#[source] tlslab_core::SinkError),
}

/// The reason a certificate file cannot be used: the PKI crate's or the scanner's reading of
/// it.
#[derive(Debug, thiserror::Error)]
pub enum CertificateFileError {
    /// Read by the PKI crate (`tlslab run --ca`).
    #[error("{}", .0.message())]
    Pki(#[source] tlslab_pki::PkiError),
    /// Read by the scanner (`tlslab scan --ca`).
    #[error(transparent)]
    Scan(tlslab_scan::ScanError),
}

impl WorkflowError {
    /// A request that cannot work as given.
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> WorkflowError {
        WorkflowError::Usage {
            message: message.into(),
            hint: hint.into(),
            source: None,
        }
    }

    /// A request that cannot work as given, because of `source` (kept as its source).
    pub fn usage_because(
        message: impl Into<String>,
        hint: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> WorkflowError {
        WorkflowError::Usage {
            message: message.into(),
            hint: hint.into(),
            source: Some(Box::new(source)),
        }
    }

    /// Something the machine lacks, with the system's reason.
    pub fn environment(
        message: impl Into<String>,
        hint: impl Into<String>,
        source: Option<std::io::Error>,
    ) -> WorkflowError {
        WorkflowError::Environment {
            message: message.into(),
            hint: hint.into(),
            source,
        }
    }

    /// Whose problem it is.
    pub fn kind(&self) -> ErrorKind {
        use ErrorKind::{Environment, Usage};
        match self {
            WorkflowError::Usage { .. }
            | WorkflowError::Config(_)
            | WorkflowError::CertificateFile { .. } => Usage,
            WorkflowError::Environment { .. } | WorkflowError::Pki(_) | WorkflowError::Sink(_) => {
                Environment
            }
            WorkflowError::Report(error) => match error.is_input() {
                true => Usage,
                false => Environment,
            },
            WorkflowError::File(FileError::Refused { .. }) => Usage,
            WorkflowError::File(FileError::CannotWrite { .. }) => Environment,
            WorkflowError::Store(error) | WorkflowError::StoreCreate { source: error, .. } => {
                match error.kind() {
                    tlslab_store::StoreErrorKind::Input => Usage,
                    tlslab_store::StoreErrorKind::Environment => Environment,
                }
            }
            WorkflowError::Engine { source, .. } => match source.kind() {
                tlslab_engine::RunErrorKind::Configuration => Usage,
                tlslab_engine::RunErrorKind::Environment => Environment,
            },
            WorkflowError::Scan(error) => match error.kind() {
                tlslab_scan::ScanErrorKind::Usage => Usage,
                tlslab_scan::ScanErrorKind::Environment => Environment,
            },
            WorkflowError::Capture { usage, .. } => match usage {
                true => Usage,
                false => Environment,
            },
            WorkflowError::Telemetry(error) => match error.usage {
                true => Usage,
                false => Environment,
            },
        }
    }

    /// What to do about it: the library's own hint, with where the results taken so far are
    /// when the work stopped part way.
    pub fn hint(&self) -> String {
        let owned: String;
        let (hint, results): (&str, Option<&PathBuf>) = match self {
            WorkflowError::Usage { hint, .. } | WorkflowError::Environment { hint, .. } => {
                (hint, None)
            }
            WorkflowError::File(error) => (error.hint(), None),
            WorkflowError::Config(error) => (&error.hint, None),
            WorkflowError::StoreCreate { source, .. } | WorkflowError::Store(source) => {
                owned = source.hint();
                (&owned, None)
            }
            WorkflowError::CertificateFile { source, .. } => match source {
                CertificateFileError::Pki(error) => (error.hint(), None),
                CertificateFileError::Scan(error) => (error.hint(), None),
            },
            WorkflowError::Pki(_) => (
                "set TLSLAB_PKI_DIR or --pki-dir to a writable directory",
                None,
            ),
            WorkflowError::Engine { source, results } => (source.hint(), results.as_ref()),
            WorkflowError::Report(error) => {
                owned = error.hint();
                (&owned, None)
            }
            WorkflowError::Scan(error) => (error.hint(), None),
            WorkflowError::Capture {
                source, results, ..
            } => (&source.hint, results.as_ref()),
            WorkflowError::Telemetry(error) => (&error.hint, None),
            WorkflowError::Sink(error) => (&error.hint, None),
        };
        match (self, results) {
            (WorkflowError::Capture { usage: true, .. }, Some(results)) => format!(
                "{hint} (the handshakes of the captures before it are stored in {})",
                results.display()
            ),
            (WorkflowError::Capture { .. }, Some(results)) => format!(
                "{hint} (the handshakes captured until then are stored in {})",
                results.display()
            ),
            (_, Some(results)) => format!("{hint} (results so far: {})", results.display()),
            (_, None) => hint.to_string(),
        }
    }
}
