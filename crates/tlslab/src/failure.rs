//! Errors the user sees: `error:` and `hint:` lines and an exit code. Every library error
//! type carries its hint; this is the one place that maps each to its exit code.

use std::fmt::Display;

/// Exit codes (README, "Exit codes").
pub const EXIT_FAILURES: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_ENVIRONMENT: i32 = 3;
/// The run completed and stored everything, and a `--threshold` was broken.
pub const EXIT_THRESHOLD: i32 = 4;
/// Interrupted by SIGINT or SIGTERM, as shells report a process that a Ctrl-C ended.
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
    pub hint: String,
}

impl CliError {
    pub fn usage(message: impl Display, hint: impl Display) -> CliError {
        CliError {
            code: EXIT_USAGE,
            message: message.to_string(),
            hint: hint.to_string(),
        }
    }

    pub fn environment(message: impl Display, hint: impl Display) -> CliError {
        CliError {
            code: EXIT_ENVIRONMENT,
            message: message.to_string(),
            hint: hint.to_string(),
        }
    }

    pub fn print(&self) {
        crate::output::note(format_args!("error: {}", self.message));
        if !self.hint.is_empty() {
            crate::output::note(format_args!("hint: {}", self.hint));
        }
    }
}

/// A results file that cannot be read is the user's input; one that cannot be written, the
/// machine's.
impl From<tlslab_telemetry::TelemetryError> for CliError {
    fn from(error: tlslab_telemetry::TelemetryError) -> CliError {
        let message = tlslab_core::WithCauses(&error).to_string();
        if error.usage {
            CliError::usage(message, error.hint)
        } else {
            CliError::environment(message, error.hint)
        }
    }
}

impl From<tlslab_store::StoreError> for CliError {
    fn from(error: tlslab_store::StoreError) -> Self {
        match error.kind {
            tlslab_store::StoreErrorKind::Input => CliError::usage(error.message, error.hint),
            tlslab_store::StoreErrorKind::Environment => {
                CliError::environment(error.message, error.hint)
            }
        }
    }
}

/// An experiment that cannot run as written.
impl From<tlslab_core::ConfigError> for CliError {
    fn from(error: tlslab_core::ConfigError) -> Self {
        CliError::usage(error.message, error.hint)
    }
}

/// A run that could not start or had to stop: the user's request, or the machine.
impl From<tlslab_engine::RunError> for CliError {
    fn from(error: tlslab_engine::RunError) -> Self {
        match error.kind {
            tlslab_engine::RunErrorKind::Configuration => {
                CliError::usage(error.message, error.hint)
            }
            tlslab_engine::RunErrorKind::Environment => {
                CliError::environment(error.message, error.hint)
            }
        }
    }
}

/// A report that cannot be written: the machine (disk, permissions).
impl From<tlslab_report::ReportError> for CliError {
    fn from(error: tlslab_report::ReportError) -> Self {
        CliError::environment(error.message, error.hint)
    }
}
