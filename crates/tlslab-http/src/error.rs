//! The crate's one error type.

use std::fmt;

/// Why bytes could not be read as the HTTP exchange this crate expects.
///
/// The message names the protocol version, the frame or line concerned and what was wrong
/// with it, so it can go into a report as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    message: String,
}

impl HttpError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        HttpError {
            message: message.into(),
        }
    }

    /// What was wrong, as one sentence without a trailing period.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for HttpError {}

/// Up to 60 bytes of `bytes` as printable ASCII, for quoting a peer's garbage in a message.
pub(crate) fn quote(bytes: &[u8]) -> String {
    let mut text: String = bytes
        .iter()
        .take(60)
        .flat_map(|&byte| std::ascii::escape_default(byte))
        .map(char::from)
        .collect();
    if bytes.len() > 60 {
        text.push_str("...");
    }
    format!("\"{text}\"")
}
