//! Thresholds for CI use (`--threshold 'p99<5ms'`, as k6 has them): a statistic of a phase,
//! the error rate or the handshake rate, compared with a limit, for every Config or for the
//! Configs whose label contains a given text. Parsed here with every other value a user
//! gives; the run checks them against what it stored.
//!
//! ```
//! use tlslab_core::threshold::{Threshold, Measure, Comparison};
//! let threshold: Threshold = "x25519mlkem768: server_response.p99 <= 2ms".parse().unwrap();
//! assert_eq!(threshold.scope.as_deref(), Some("x25519mlkem768"));
//! assert_eq!(threshold.comparison, Comparison::AtMost);
//! assert!(matches!(threshold.measure, Measure::Time { .. }));
//! ```

use std::fmt;
use std::str::FromStr;

use crate::dimension::InvalidValue;
use crate::sample::Phase;

/// A statistic of a phase's successful samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// The fastest.
    Min,
    /// The middle one.
    Median,
    /// The average.
    Mean,
    /// The slowest.
    Max,
    /// A quantile in (0, 1): `p90` is 0.9, `p99.9` 0.999.
    Quantile(f64),
}

impl Statistic {
    fn parse(text: &str) -> Option<Statistic> {
        match text {
            "min" => Some(Statistic::Min),
            "median" | "p50" => Some(Statistic::Median),
            "mean" | "avg" => Some(Statistic::Mean),
            "max" => Some(Statistic::Max),
            _ => {
                let percent: f64 = text.strip_prefix('p')?.parse().ok()?;
                (percent > 0.0 && percent < 100.0).then_some(Statistic::Quantile(percent / 100.0))
            }
        }
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statistic::Min => f.write_str("min"),
            Statistic::Median => f.write_str("median"),
            Statistic::Mean => f.write_str("mean"),
            Statistic::Max => f.write_str("max"),
            Statistic::Quantile(q) => write!(f, "p{}", q * 100.0),
        }
    }
}

/// What a threshold measures, with its limit in the measure's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// A statistic of a phase, against a limit in nanoseconds.
    Time {
        /// The phase measured.
        phase: Phase,
        /// Which of its samples' statistics.
        statistic: Statistic,
        /// The limit, nanoseconds.
        limit_ns: f64,
    },
    /// The share of measured attempts that failed, against a limit in [0, 1].
    Errors {
        /// The limit, a fraction.
        limit: f64,
    },
    /// Successful handshakes per second, against a limit.
    Rate {
        /// The limit, handshakes per second.
        limit: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// How a measure must stand to its limit for the threshold to pass.
pub enum Comparison {
    /// Strictly below (`<`).
    Below,
    /// Below or at (`<=`).
    AtMost,
    /// Strictly above (`>`).
    Above,
    /// Above or at (`>=`).
    AtLeast,
}

impl Comparison {
    /// Whether `value` keeps the threshold with `limit`.
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Comparison::Below => value < limit,
            Comparison::AtMost => value <= limit,
            Comparison::Above => value > limit,
            Comparison::AtLeast => value >= limit,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Comparison::Below => "<",
            Comparison::AtMost => "<=",
            Comparison::Above => ">",
            Comparison::AtLeast => ">=",
        }
    }
}

/// One threshold, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// Only the Configs whose label contains this text; every Config when `None`.
    pub scope: Option<String>,
    /// What is compared, and its limit.
    pub measure: Measure,
    /// Which side of the limit passes.
    pub comparison: Comparison,
    /// The text as given, for messages.
    pub text: String,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const FORMS: &str = "[LABEL TEXT:] [PHASE.]STATISTIC OP DURATION (p99<5ms, server_response.median<=1ms), errors OP PERCENT (errors<1%), or rate OP NUMBER/s (rate>1000/s); OP is <, <=, > or >=";

impl FromStr for Threshold {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<Threshold, InvalidValue> {
        let trimmed = text.trim();
        let (scope, expression) = match trimmed.rsplit_once(':') {
            Some((scope, expression)) if !scope.trim().is_empty() => {
                (Some(scope.trim().to_string()), expression.trim())
            }
            _ => (None, trimmed),
        };
        let at = expression
            .find(['<', '>'])
            .ok_or_else(|| InvalidValue::new(format!("'{text}' compares nothing: {FORMS}")))?;
        let (left, rest) = expression.split_at(at);
        let (comparison, right) = if let Some(right) = rest.strip_prefix("<=") {
            (Comparison::AtMost, right)
        } else if let Some(right) = rest.strip_prefix(">=") {
            (Comparison::AtLeast, right)
        } else if let Some(right) = rest.strip_prefix('<') {
            (Comparison::Below, right)
        } else {
            (Comparison::Above, &rest[1..])
        };
        let (left, right) = (left.trim(), right.trim());
        let measure = match left {
            "errors" => {
                let percent: f64 = right
                    .strip_suffix('%')
                    .and_then(|number| number.trim().parse().ok())
                    .filter(|percent: &f64| (0.0..=100.0).contains(percent))
                    .ok_or_else(|| {
                        InvalidValue::new(format!(
                            "'{text}': errors take a percentage, 0% to 100% (errors<1%)"
                        ))
                    })?;
                Measure::Errors {
                    limit: percent / 100.0,
                }
            }
            "rate" => {
                let limit: f64 = right
                    .strip_suffix("/s")
                    .and_then(|number| number.trim().parse().ok())
                    .filter(|limit: &f64| limit.is_finite() && *limit >= 0.0)
                    .ok_or_else(|| {
                        InvalidValue::new(format!(
                            "'{text}': a rate is handshakes per second (rate>1000/s)"
                        ))
                    })?;
                Measure::Rate { limit }
            }
            _ => {
                let (phase, statistic) = match left.split_once('.') {
                    // `p99.9` has a dot of its own: a phase name has none.
                    Some((phase, statistic)) if Phase::from_name(phase).is_some() => {
                        (Phase::from_name(phase), statistic)
                    }
                    _ => (Some(Phase::Handshake), left),
                };
                let phase = phase.unwrap_or(Phase::Handshake);
                let statistic = Statistic::parse(statistic).ok_or_else(|| {
                    InvalidValue::new(format!(
                        "'{text}': unknown statistic '{statistic}': {FORMS}"
                    ))
                })?;
                let limit = crate::duration::parse(right)
                    .map_err(|problem| InvalidValue::new(format!("'{text}': {problem}")))?;
                Measure::Time {
                    phase,
                    statistic,
                    limit_ns: limit.as_nanos() as f64,
                }
            }
        };
        Ok(Threshold {
            scope,
            measure,
            comparison,
            text: format!(
                "{}{}{}{}",
                scope_prefix(text),
                left,
                comparison.symbol(),
                right
            ),
        })
    }
}

fn scope_prefix(text: &str) -> String {
    match text.trim().rsplit_once(':') {
        Some((scope, _)) if !scope.trim().is_empty() => format!("{}: ", scope.trim()),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_read_as_written() {
        let threshold: Threshold = "p99<5ms".parse().unwrap();
        assert_eq!(threshold.scope, None);
        assert_eq!(
            threshold.measure,
            Measure::Time {
                phase: Phase::Handshake,
                statistic: Statistic::Quantile(0.99),
                limit_ns: 5e6
            }
        );
        let threshold: Threshold = "tls1.3 : ttfb.p99.9 >= 1us".parse().unwrap();
        assert_eq!(threshold.scope.as_deref(), Some("tls1.3"));
        assert_eq!(threshold.comparison, Comparison::AtLeast);
        assert!(matches!(
            threshold.measure,
            Measure::Time { phase: Phase::Ttfb, statistic: Statistic::Quantile(q), .. }
                if (q - 0.999).abs() < 1e-12
        ));
        assert_eq!(
            "errors<1%".parse::<Threshold>().unwrap().measure,
            Measure::Errors { limit: 0.01 }
        );
        assert_eq!(
            "rate>1000/s".parse::<Threshold>().unwrap().measure,
            Measure::Rate { limit: 1000.0 }
        );
    }

    #[test]
    fn what_is_not_a_threshold_says_which_forms_are() {
        for wrong in [
            "p99",
            "p99<5",
            "p100<5ms",
            "errors<5",
            "rate>fast",
            "q99<5ms",
            "errors<200%",
        ] {
            assert!(wrong.parse::<Threshold>().is_err(), "{wrong}");
        }
        assert!("p99=5ms"
            .parse::<Threshold>()
            .unwrap_err()
            .message
            .contains("OP is"));
    }

    #[test]
    fn comparisons_hold_as_their_symbols_say() {
        assert!(Comparison::Below.holds(1.0, 2.0));
        assert!(!Comparison::Below.holds(2.0, 2.0));
        assert!(Comparison::AtMost.holds(2.0, 2.0));
        assert!(Comparison::Above.holds(3.0, 2.0));
        assert!(Comparison::AtLeast.holds(2.0, 2.0));
    }
}
