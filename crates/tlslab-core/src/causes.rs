//! [`WithCauses`] and [`Causes`]: an error and the chain of errors under it, on one line of
//! text, for the places that must keep text (a stored error detail, a report field, a message
//! built for an error type that has no source of its own).

use std::error::Error;
use std::fmt;

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
