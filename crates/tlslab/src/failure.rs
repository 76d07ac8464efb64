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
        if error.usage {
            CliError::usage(error.message, error.hint)
        } else {
            CliError::environment(error.message, error.hint)
        }
    }
}

impl From<tlslab_store::StoreError> for CliError {
    fn from(error: tlslab_store::StoreError) -> Self {
        match error.kind() {
            tlslab_store::StoreErrorKind::Input => {
                CliError::usage(with_causes(&error), error.hint())
            }
            tlslab_store::StoreErrorKind::Environment => {
                CliError::environment(with_causes(&error), error.hint())
            }
        }
    }
}

/// `error` and each of its causes, joined by colons, as the one `error:` line shows them.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        line.push_str(": ");
        line.push_str(&error.to_string());
        cause = error.source();
    }
    line
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

/// A question the store cannot answer is the user's; a report that cannot be drawn, the
/// machine's (or a bug).
impl From<tlslab_report::ReportError> for CliError {
    fn from(error: tlslab_report::ReportError) -> Self {
        if error.is_input() {
            CliError::usage(with_causes(&error), error.hint())
        } else {
            CliError::environment(with_causes(&error), error.hint())
        }
    }
}
