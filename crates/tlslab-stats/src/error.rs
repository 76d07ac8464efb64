//! The one error type of the crate.

/// Why a statistic could not be computed.
///
/// Every variant names the sample it is about, so that a message shown to a user says which
/// configuration is at fault rather than only what went wrong. Nothing lies underneath: the
/// crate does no I/O, so no variant has a source.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The sample has fewer values than the statistic needs (a spread needs two).
    #[error("sample \"{sample}\" has {count} {}; at least {required} are needed", values_noun(*count))]
    TooFewValues {
        /// The sample's name, as the caller gave it.
        sample: String,
        /// How many values it has.
        count: usize,
        /// How many the statistic needs.
        required: usize,
    },
    /// The sample holds a NaN or an infinity, which has no rank and no place in a mean.
    #[error("sample \"{sample}\" holds the non-finite value {value} at index {index}")]
    NonFiniteValue {
        /// The sample's name, as the caller gave it.
        sample: String,
        /// Where the first such value is, so that it can be found in the data.
        index: usize,
        /// The value itself: NaN, inf or -inf.
        value: f64,
    },
    /// An argument is out of its domain (a confidence level outside (0, 1), an index out of range…).
    #[error("{0}")]
    InvalidArgument(String),
}

/// "value" or "values", as `count` asks.
fn values_noun(count: usize) -> &'static str {
    if count == 1 {
        "value"
    } else {
        "values"
    }
}

/// Checks that a sample is usable for two-sample statistics: at least `required` values, all
/// finite.
pub(crate) fn check_sample(
    sample: &str,
    values: &[f64],
    required: usize,
) -> Result<(), StatsError> {
    if values.len() < required {
        return Err(StatsError::TooFewValues {
            sample: sample.to_owned(),
            count: values.len(),
            required,
        });
    }
    if let Some((index, &value)) = values
        .iter()
        .enumerate()
        .find(|(_, value)| !value.is_finite())
    {
        return Err(StatsError::NonFiniteValue {
            sample: sample.to_owned(),
            index,
            value,
        });
    }
    Ok(())
}

/// Checks that a probability-like argument lies strictly between 0 and 1.
pub(crate) fn check_open_unit(name: &str, value: f64) -> Result<(), StatsError> {
    if value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidArgument(format!(
            "{name} must lie strictly between 0 and 1, got {value}"
        )))
    }
}
