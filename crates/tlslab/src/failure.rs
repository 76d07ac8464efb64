//! Errors the user sees: an `error:` line, a `caused by:` line for each cause in the error's
//! [`source`](std::error::Error::source) chain, a `hint:` line, and an exit code. Every
//! library error type carries its hint; this is the one place that maps each (and each
//! workflow's ending, [`ErrorKind`]) to its exit code.

use std::fmt::Display;

use tlslab_workflow::{ErrorKind, WorkflowError};

/// Exit codes (README, "Exit codes").
pub const EXIT_FAILURES: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_ENVIRONMENT: i32 = 3;
/// The run completed and stored everything, and a `--threshold` was broken.
pub const EXIT_THRESHOLD: i32 = 4;
/// Interrupted by SIGINT or SIGTERM, as shells report a process that a Ctrl-C ended.
pub const EXIT_INTERRUPTED: i32 = 130;

/// The exit code of a workflow's ending or error kind.
pub fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::Usage => EXIT_USAGE,
        ErrorKind::Environment => EXIT_ENVIRONMENT,
        ErrorKind::Failures => EXIT_FAILURES,
        ErrorKind::Threshold => EXIT_THRESHOLD,
        ErrorKind::Interrupted => EXIT_INTERRUPTED,
    }
}

#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
    /// The error's causes, outermost first: one `caused by:` line each.
    pub causes: Vec<String>,
    pub hint: String,
}

/// The causes of `error`, outermost first, each its first line (a cause that carries its
/// own `hint:` line shows it in the hint instead); a cause the line above it already quotes
/// (a wrapper that shows its source's message, or names it after a colon) is shown once.
pub fn causes(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut causes: Vec<String> = Vec::new();
    let mut above = first_line(&error.to_string()).to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        let line = first_line(&text).to_string();
        if !line.is_empty() && !above.contains(&line) {
            causes.push(line.clone());
        }
        above = line;
        next = cause.source();
    }
    causes
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

impl CliError {
    pub fn usage(message: impl Display, hint: impl Display) -> CliError {
        CliError {
            code: EXIT_USAGE,
            message: message.to_string(),
            causes: Vec::new(),
            hint: hint.to_string(),
        }
    }

    pub fn environment(message: impl Display, hint: impl Display) -> CliError {
        CliError {
            code: EXIT_ENVIRONMENT,
            message: message.to_string(),
            causes: Vec::new(),
            hint: hint.to_string(),
        }
    }

    pub fn print(&self) {
        crate::output::note(format_args!("error: {}", self.message));
        for cause in &self.causes {
            crate::output::note(format_args!("caused by: {cause}"));
        }
        if !self.hint.is_empty() {
            crate::output::note(format_args!("hint: {}", self.hint));
        }
    }
}

/// A workflow's error: its kind's exit code, its whole cause chain, its hint.
impl From<WorkflowError> for CliError {
    fn from(error: WorkflowError) -> CliError {
        CliError::of(&error)
    }
}

impl CliError {
    /// A workflow's error as the user sees it (it may go on: a report that failed after a
    /// run that did not).
    pub fn of(error: &WorkflowError) -> CliError {
        CliError {
            code: exit_code(error.kind()),
            message: error.to_string(),
            causes: causes(error),
            hint: error.hint(),
        }
    }
}

/// An output the file rule refuses (the user's path), or one that could not be written.
impl From<tlslab_workflow::files::FileError> for CliError {
    fn from(error: tlslab_workflow::files::FileError) -> CliError {
        CliError::from(WorkflowError::from(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::SinkError;

    #[test]
    fn every_cause_under_an_error_is_a_line_unless_the_line_above_quotes_it() {
        let error = WorkflowError::Sink(SinkError::with_source(
            "cannot write x.db",
            "free some space",
            std::io::Error::from_raw_os_error(20),
        ));
        let shown = CliError::of(&error);
        assert_eq!(shown.message, "writing results failed");
        assert_eq!(
            shown.causes,
            ["cannot write x.db", "Not a directory (os error 20)"]
        );
        assert_eq!(shown.hint, "free some space");
        assert_eq!(shown.code, EXIT_ENVIRONMENT);
        // A message that already names its cause after a colon does not repeat it.
        let quoted = WorkflowError::Sink(SinkError::with_source(
            "cannot write x.db: Not a directory (os error 20)",
            "",
            std::io::Error::from_raw_os_error(20),
        ));
        assert_eq!(
            causes(&quoted),
            ["cannot write x.db: Not a directory (os error 20)"]
        );
    }
}
