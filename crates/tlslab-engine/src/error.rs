//! [`EngineError`]: why a run or a lab server could not start or had to stop. It says what
//! failed (its `Display`), what to do about it ([`EngineError::hint`]), the error it came
//! from (its [`source`](std::error::Error::source), kept for the binary's `caused by:`
//! lines), and whose problem it is ([`EngineError::kind`], which decides the exit code).

use std::error::Error;

use tlslab_core::SinkError;
use tlslab_emulation::EmulationError;

/// The error a failure came from, kept whole under an [`EngineError`] (a caller can
/// downcast it: `error.source()?.downcast_ref::<std::io::Error>()`).
pub type Cause = Box<dyn Error + Send + Sync + 'static>;

/// Whose problem an [`EngineError`] is: the binary maps each kind to its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineErrorKind {
    /// The user asked for something that cannot work (exit 2).
    Configuration,
    /// The machine lacks something (exit 3).
    Environment,
}

/// Why a run or a lab server could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The user asked for something that cannot work: a flag, a file, a `--server-cmd`.
    #[error("{message}")]
    Configuration {
        /// What failed, without its cause.
        message: String,
        /// What the user can do about it.
        hint: String,
        /// The error it came from, when another library's error said why.
        #[source]
        cause: Option<Cause>,
    },
    /// The machine lacks something or failed: privileges, limits, a lab server that died.
    #[error("{message}")]
    Environment {
        /// What failed, without its cause.
        message: String,
        /// What the user can do about it.
        hint: String,
        /// The error it came from, when another library's error said why.
        #[source]
        cause: Option<Cause>,
    },
    /// The emulated network could not be built or changed (the machine's problem: what the
    /// user asked for is checked before the network is built).
    #[error(transparent)]
    Emulation(#[from] EmulationError),
    /// The sink refused a record (a full disk): the run stops, keeping what it wrote.
    #[error("writing results failed")]
    Writing(#[source] SinkError),
}

/// The engine's error under the name the binary has used for it.
pub type RunError = EngineError;

/// The engine's error kinds under the name the binary has used for them.
pub type RunErrorKind = EngineErrorKind;

impl EngineError {
    /// The machine lacks something.
    pub fn environment(message: impl Into<String>, hint: impl Into<String>) -> EngineError {
        EngineError::Environment {
            message: message.into(),
            hint: hint.into(),
            cause: None,
        }
    }

    /// The user asked for something that cannot work.
    pub fn configuration(message: impl Into<String>, hint: impl Into<String>) -> EngineError {
        EngineError::Configuration {
            message: message.into(),
            hint: hint.into(),
            cause: None,
        }
    }

    /// The same error, caused by `error` (kept as its source). For the kinds that carry no
    /// cause of their own (emulation, writing), the error is returned as it was.
    pub fn because(mut self, error: impl Error + Send + Sync + 'static) -> EngineError {
        if let EngineError::Configuration { cause, .. } | EngineError::Environment { cause, .. } =
            &mut self
        {
            *cause = Some(Box::new(error));
        }
        self
    }

    /// Whose problem it is, which decides the exit code.
    pub fn kind(&self) -> EngineErrorKind {
        match self {
            EngineError::Configuration { .. } => EngineErrorKind::Configuration,
            EngineError::Environment { .. }
            | EngineError::Emulation(_)
            | EngineError::Writing(_) => EngineErrorKind::Environment,
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> &str {
        match self {
            EngineError::Configuration { hint, .. } | EngineError::Environment { hint, .. } => hint,
            EngineError::Emulation(error) => &error.hint,
            EngineError::Writing(error) => &error.hint,
        }
    }

    /// The message followed by each of its causes, joined with `: ` (as one `error:` line
    /// shows it when a terminal gives no room for `caused by:` lines).
    pub fn message_with_causes(&self) -> String {
        let mut text = self.to_string();
        let mut cause = self.source();
        while let Some(error) = cause {
            text.push_str(": ");
            text.push_str(&error.to_string());
            cause = error.source();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_kept_as_the_source_and_joins_the_message() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "address in use");
        let error =
            EngineError::environment("cannot listen on 127.0.0.1:1", "choose a port").because(io);
        assert_eq!(error.to_string(), "cannot listen on 127.0.0.1:1");
        let source = error.source().unwrap();
        let io = source.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::AddrInUse);
        assert_eq!(
            error.message_with_causes(),
            "cannot listen on 127.0.0.1:1: address in use"
        );
        assert_eq!(error.kind(), EngineErrorKind::Environment);
        assert_eq!(error.hint(), "choose a port");
    }

    #[test]
    fn each_kind_of_failure_has_its_exit_codes_kind_and_hint() {
        let usage = EngineError::configuration("no such file", "give a PEM file");
        assert_eq!(usage.kind(), EngineErrorKind::Configuration);
        let emulation = EngineError::from(EmulationError::new("no TUN device", "run as root"));
        assert_eq!(
            (emulation.kind(), emulation.hint()),
            (EngineErrorKind::Environment, "run as root")
        );
        assert_eq!(emulation.message_with_causes(), "no TUN device");
        let writing = EngineError::Writing(SinkError::new("disk full", "free some space"));
        assert_eq!(
            writing.message_with_causes(),
            "writing results failed: disk full"
        );
        assert_eq!(writing.hint(), "free some space");
        // The sink's own cause (the database's, the system's) follows it in the chain.
        let writing = EngineError::Writing(SinkError::with_source(
            "cannot write x.db",
            "free some space",
            std::io::Error::from_raw_os_error(28),
        ));
        let chain: Vec<String> = std::iter::successors(writing.source(), |&cause| cause.source())
            .map(ToString::to_string)
            .collect();
        assert_eq!(chain.len(), 2, "{chain:?}");
        assert_eq!(chain[0], "cannot write x.db");
        assert!(chain[1].contains("No space left on device"), "{chain:?}");
    }
}
