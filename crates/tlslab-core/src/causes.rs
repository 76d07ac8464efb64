//! [`WithCauses`] and [`Causes`]: an error and the chain of errors under it, on one line of
//! text, for the places that must keep text (a stored error detail, a report field, a message
//! built for an error type that has no source of its own). [`Cause`]: the error under one of
//! core's errors, kept whole as its [`source`](Error::source).

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// The error under one of core's errors ([`ConfigError`](crate::ConfigError),
/// [`InvalidValue`](crate::InvalidValue), [`SinkError`](crate::SinkError)), kept whole so the
/// command line shows it and its own causes as `caused by:` lines. Shared rather than boxed:
/// those errors are `Clone` (a sink's first failure goes to every producer that asks).
pub type Cause = Arc<dyn Error + Send + Sync + 'static>;

/// Two causes are the same when both are absent or both say the same: what comparing two of
/// core's errors needs (an error type has no equality of its own).
pub(crate) fn same_cause(one: &Option<Cause>, other: &Option<Cause>) -> bool {
    match (one, other) {
        (None, None) => true,
        (Some(one), Some(other)) => one.to_string() == other.to_string(),
        _ => false,
    }
}

/// The error a [`Cause`] holds, as itself rather than as the `Arc` around it: what an error's
/// [`source`](Error::source) returns, so that a caller can downcast it to its type.
pub(crate) fn as_source(cause: &Option<Cause>) -> Option<&(dyn Error + 'static)> {
    cause
        .as_deref()
        .map(|cause| cause as &(dyn Error + 'static))
}

/// The constructors, `Display` (the message), `Error` (the cause as its source) and equality
/// of an error that is a `message`, a `hint` and an optional `source` [`Cause`] (core's
/// `ConfigError` and `SinkError`), written once for both.
macro_rules! message_hint_cause {
    ($type:ident) => {
        impl std::fmt::Display for $type {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(&self.message)
            }
        }

        impl std::error::Error for $type {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                $crate::causes::as_source(&self.source)
            }
        }

        impl $type {
            /// The error, and what the user can do about it.
            pub fn new(message: impl Into<String>, hint: impl Into<String>) -> $type {
                $type {
                    message: message.into(),
                    hint: hint.into(),
                    source: None,
                }
            }

            /// The same, caused by `source`: kept as the error's source, a `caused by:` line.
            pub fn with_source(
                message: impl Into<String>,
                hint: impl Into<String>,
                source: impl std::error::Error + Send + Sync + 'static,
            ) -> $type {
                $type {
                    source: Some(std::sync::Arc::new(source)),
                    ..$type::new(message, hint)
                }
            }
        }

        impl PartialEq for $type {
            fn eq(&self, other: &$type) -> bool {
                self.message == other.message
                    && self.hint == other.hint
                    && $crate::causes::same_cause(&self.source, &other.source)
            }
        }

        impl Eq for $type {}
    };
}
pub(crate) use message_hint_cause;

/// Shows `error: cause: cause ...`, every [`source`](Error::source) in order. Where the error
/// can travel whole, keep it as a `#[source]` instead, so the command line shows one
/// `caused by:` line per cause.
#[derive(Clone, Copy)]
pub struct WithCauses<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for WithCauses<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}{}", self.0, Causes(self.0))
    }
}

/// Shows `: cause: cause ...`, the causes under an error without the error itself, for a
/// message that tells the error in its own words (an error whose `Display` carries a hint).
#[derive(Clone, Copy)]
pub struct Causes<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Causes<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cause = self.0.source();
        while let Some(next) = cause {
            write!(formatter, ": {next}")?;
            cause = next.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot open the store")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_follows_its_error_in_order() {
        let error = Outer(std::io::Error::other("the directory is a file"));
        assert_eq!(
            WithCauses(&error).to_string(),
            "cannot open the store: the directory is a file"
        );
        assert_eq!(Causes(&error).to_string(), ": the directory is a file");
    }
}
