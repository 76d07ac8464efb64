//! Why a backend cannot measure a primitive or an operation, or why a measurement failed:
//! stored as a row's note (the error and each cause under it, [`SpeedError::described`]).

use std::error::Error;
use std::sync::Arc;

/// See the module's documentation.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SpeedError {
    /// The backend lacks the primitive or operation, said in words (no error lies under it).
    #[error("{0}")]
    Lacks(String),
    /// The library refused what it was asked; its own error is the source. The source is
    /// shared (`Arc`) because a key made once per process hands its failure to every row
    /// that needed it.
    #[error("{library} could not {doing}")]
    Library {
        /// `aws-lc-rs` or `OpenSSL`.
        library: &'static str,
        /// What it was asked to do.
        doing: String,
        /// What it said.
        #[source]
        source: Arc<dyn Error + Send + Sync>,
    },
    /// A word [`select`](crate::select) was given names no primitive, family or kind.
    #[error("{word}: no such primitive")]
    UnknownPrimitive {
        /// The word, trimmed and in lower case.
        word: String,
    },
    /// A measuring thread panicked.
    #[error("a measuring thread panicked")]
    Panicked,
}

impl SpeedError {
    /// `library` refused to do `doing`, saying `source`.
    pub(crate) fn library(
        library: &'static str,
        doing: impl Into<String>,
        source: impl Error + Send + Sync + 'static,
    ) -> SpeedError {
        SpeedError::Library {
            library,
            doing: doing.into(),
            source: Arc::new(source),
        }
    }

    /// The error and each cause under it, on one line: a row's note.
    pub fn described(&self) -> String {
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

impl From<String> for SpeedError {
    fn from(reason: String) -> SpeedError {
        SpeedError::Lacks(reason)
    }
}

impl From<&str> for SpeedError {
    fn from(reason: &str) -> SpeedError {
        SpeedError::Lacks(reason.to_string())
    }
}
