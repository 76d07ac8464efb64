//! [`RunError`]: why a run could not start or had to stop, with its hint and the kind that
//! decides the exit code.

/// Why a run could not start or had to stop. `Display` prints the message; `hint` says what
/// to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RunError {
    pub kind: RunErrorKind,
    pub message: String,
    pub hint: String,
}

/// Whose problem it is: the user's request, or the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunErrorKind {
    /// The user asked for something that cannot work (exit 2).
    Configuration,
    /// The machine lacks something (exit 3).
    Environment,
}

impl RunError {
    /// The machine lacks something.
    pub fn environment(message: impl Into<String>, hint: impl Into<String>) -> RunError {
        RunError {
            kind: RunErrorKind::Environment,
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// The user asked for something that cannot work.
    pub fn configuration(message: impl Into<String>, hint: impl Into<String>) -> RunError {
        RunError {
            kind: RunErrorKind::Configuration,
            message: message.into(),
            hint: hint.into(),
        }
    }
}

impl From<tlslab_emulation::EmulationError> for RunError {
    /// The emulated network failed: the machine's problem (what the user asked for is
    /// checked before the network is built).
    fn from(error: tlslab_emulation::EmulationError) -> RunError {
        RunError::environment(tlslab_core::WithCauses(&error).to_string(), error.hint)
    }
}
