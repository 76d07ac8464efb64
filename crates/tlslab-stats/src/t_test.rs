//! Student's t-tests for the difference of two means: Welch's (the default, no equal-variance
//! assumption) and the pooled-variance test (for reference and for checking against tools
//! that default to it).

use serde::Serialize;

use crate::descriptive::{mean, variance};
use crate::distribution;
use crate::error::{check_open_unit, check_sample, StatsError};

/// Result of a two-sample t-test of `mean(first) − mean(second)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TTest {
    /// The t statistic.
    pub t: f64,
    /// Degrees of freedom: Welch–Satterthwaite for Welch's test, n₁ + n₂ − 2 for the pooled test.
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// mean(first) − mean(second).
    pub mean_difference: f64,
    /// The standard error of the difference, which t divides it by.
    pub standard_error: f64,
    /// Confidence interval of the difference of means at the requested level.
    pub ci: (f64, f64),
}

/// Welch's t-test of `first` against `second` (at least two finite values each), with a
/// confidence interval of the difference of means at level `confidence` (e.g. 0.95).
///
/// When both samples have zero variance the statistic is undefined and `t`, `p_value` and the
/// interval come out NaN or infinite, as in scipy.
pub fn welch_t_test(first: &[f64], second: &[f64], confidence: f64) -> Result<TTest, StatsError> {
    check_sample("first", first, 2)?;
    check_sample("second", second, 2)?;
    check_open_unit("confidence", confidence)?;
    Ok(welch_unchecked(first, second, confidence))
}

pub(crate) fn welch_unchecked(first: &[f64], second: &[f64], confidence: f64) -> TTest {
    let (n1, n2) = (first.len() as f64, second.len() as f64);
    let first_share = variance(first) / n1;
    let second_share = variance(second) / n2;
    let squared_error = first_share + second_share;
    let df = squared_error * squared_error
        / (first_share * first_share / (n1 - 1.0) + second_share * second_share / (n2 - 1.0));
    finish(
        mean(first) - mean(second),
        squared_error.sqrt(),
        df,
        confidence,
    )
}

/// The pooled-variance (Student's) t-test, which assumes equal variances.
pub fn student_t_test(first: &[f64], second: &[f64], confidence: f64) -> Result<TTest, StatsError> {
    check_sample("first", first, 2)?;
    check_sample("second", second, 2)?;
    check_open_unit("confidence", confidence)?;
    let (n1, n2) = (first.len() as f64, second.len() as f64);
    let df = n1 + n2 - 2.0;
    let pooled = ((n1 - 1.0) * variance(first) + (n2 - 1.0) * variance(second)) / df;
    let standard_error = (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
    Ok(finish(
        mean(first) - mean(second),
        standard_error,
        df,
        confidence,
    ))
}

fn finish(mean_difference: f64, standard_error: f64, df: f64, confidence: f64) -> TTest {
    let t = mean_difference / standard_error;
    // Both bounded at any df (issue 31: statrs' quantile looped forever from df ≈ 1.44·10⁷,
    // two samples of 7.2 million values; see the table in distribution.rs).
    let critical = distribution::student_t_quantile((1.0 + confidence) / 2.0, df);
    let half_width = critical * standard_error;
    TTest {
        t,
        df,
        p_value: distribution::student_t_two_sided(t, df),
        mean_difference,
        standard_error,
        ci: (mean_difference - half_width, mean_difference + half_width),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_samples_give_zero_t_and_p_one() {
        let sample = [1.0, 2.0, 3.0, 4.0];
        let test = welch_t_test(&sample, &sample, 0.95).unwrap();
        assert_eq!(test.t, 0.0);
        assert!((test.p_value - 1.0).abs() < 1e-15);
        assert!(test.ci.0 < 0.0 && test.ci.1 > 0.0);
    }

    #[test]
    fn rejects_short_samples_and_bad_confidence() {
        assert!(welch_t_test(&[1.0], &[1.0, 2.0], 0.95).is_err());
        assert!(welch_t_test(&[1.0, 2.0], &[1.0, 2.0], 1.0).is_err());
    }
}
