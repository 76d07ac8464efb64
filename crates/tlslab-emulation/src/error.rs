//! The one error type of the crate: what went wrong, and what the user can do about it.

use std::fmt;

/// An emulation failure. [`Display`](fmt::Display) prints only `message`; `hint` tells how to
/// fix it (for example "run as root or with CAP_NET_ADMIN, or use --emulator relay"), so a CLI
/// can print it on its own line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmulationError {
    pub message: String,
    pub hint: String,
}

impl EmulationError {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> EmulationError {
        EmulationError {
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// Wraps an operating-system error with what was being attempted. The hint depends on the
    /// error: a permission error is fixed by privileges, anything else needs a look at the
    /// message.
    pub(crate) fn io(context: impl fmt::Display, error: &std::io::Error) -> EmulationError {
        let hint = match error.kind() {
            std::io::ErrorKind::PermissionDenied => PRIVILEGE_HINT,
            _ => "check the system log and the message above, or use --emulator relay",
        };
        EmulationError::new(format!("{context}: {error}"), hint)
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

impl std::error::Error for EmulationError {}
