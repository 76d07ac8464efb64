//! The one error type of the crate: what went wrong, and what the user can do about it.

use std::fmt;
use std::sync::Arc;

/// An emulation failure. [`Display`](fmt::Display) prints only `message`; `hint` tells how to
/// fix it (for example "run as root or with CAP_NET_ADMIN, or use --emulator relay"), so a CLI
/// can print it on its own line; the system's error, when there is one, is the
/// [`source`](std::error::Error::source).
#[derive(Clone, Debug)]
pub struct EmulationError {
    /// What could not be done.
    pub message: String,
    /// What the user can do about it.
    pub hint: String,
    /// The operating system's error underneath, when there is one.
    pub source: Option<Arc<std::io::Error>>,
}

impl EmulationError {
    /// An error with no system error underneath it.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> EmulationError {
        EmulationError {
            message: message.into(),
            hint: hint.into(),
            source: None,
        }
    }

    /// Wraps an operating-system error with what was being attempted. The hint depends on the
    /// error: a permission error is fixed by privileges, anything else needs a look at the
    /// message.
    pub(crate) fn io(context: impl fmt::Display, error: std::io::Error) -> EmulationError {
        let hint = match error.kind() {
            std::io::ErrorKind::PermissionDenied => PRIVILEGE_HINT,
            _ => "check the system log and the message above, or use --emulator relay",
        };
        EmulationError {
            source: Some(Arc::new(error)),
            ..EmulationError::new(context.to_string(), hint)
        }
    }
}

/// The fix for every privilege failure: namespaces and TUN devices need both capabilities.
pub(crate) const PRIVILEGE_HINT: &str =
    "run as root (CAP_NET_ADMIN and CAP_SYS_ADMIN are needed), or use --emulator relay";

impl fmt::Display for EmulationError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for EmulationError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|error| error as &(dyn std::error::Error + 'static))
    }
}

/// Equal when the message and the hint are: the system's error is its word for the same
/// failure.
impl PartialEq for EmulationError {
    fn eq(&self, other: &EmulationError) -> bool {
        (&self.message, &self.hint) == (&other.message, &other.hint)
    }
}

impl Eq for EmulationError {}
