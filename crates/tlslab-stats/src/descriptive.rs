//! One-sample description: location, spread, quantiles and their uncertainty.

use serde::Serialize;

use crate::bootstrap::{self, BootstrapMethod};
use crate::distribution;
use crate::quantile::quantile;

/// What the report says about one configuration's sample.
///
/// `sd` is the sample standard deviation (divisor n − 1) and `mean_ci` the 95% confidence
/// interval of the mean from Student's t. With a single value there is no spread to estimate,
/// so `sd` and both ends of `mean_ci` are NaN (serialized as `null`), never a misleading 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// The number of values.
    pub n: usize,
    /// The arithmetic mean.
    pub mean: f64,
    /// The sample standard deviation (divisor n − 1); NaN for one value.
    pub sd: f64,
    /// The median, the location handshake times are best told by (they are skewed).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The first quartile (type 7).
    pub p25: f64,
    /// The third quartile (type 7).
    pub p75: f64,
    /// The 90th percentile (type 7).
    pub p90: f64,
    /// The 95th percentile (type 7).
    pub p95: f64,
    /// The 99th percentile (type 7): the tail a user meets one time in a hundred.
    pub p99: f64,
    /// The 95% t-interval of the mean; NaN at both ends for one value.
    pub mean_ci: (f64, f64),
}

impl Summary {
    /// Summarizes a sample in any order. Sorts a copy once (O(n log n)); everything else is
    /// read from the sorted copy.
    ///
    /// Returns `None` when the sample is empty or holds a NaN or an infinity: such a sample
    /// has no meaningful mean or quantiles, and a half-valid summary would hide the problem.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|value| !value.is_finite()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sort(&mut sorted);
        Summary::of_sorted(&sorted)
    }

    /// Summarizes a sample already sorted in ascending order (no check is made), for callers
    /// that keep the sorted sample for other statistics. `None` when empty.
    pub fn of_sorted(sorted: &[f64]) -> Option<Summary> {
        let n = sorted.len();
        if n == 0 {
            return None;
        }
        let mean = mean(sorted);
        let sd = standard_deviation_around(sorted, mean);
        let mean_ci = if n < 2 {
            (f64::NAN, f64::NAN)
        } else {
            // Bounded at any n (issue 31: statrs' quantile looped from n ≈ 1.44·10⁷ on; see
            // the table in distribution.rs).
            let half_width =
                distribution::student_t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt();
            (mean - half_width, mean + half_width)
        };
        Some(Summary {
            n,
            mean,
            sd,
            median: median_of_sorted(sorted),
            min: sorted[0],
            max: sorted[n - 1],
            p25: quantile(sorted, 0.25),
            p75: quantile(sorted, 0.75),
            p90: quantile(sorted, 0.90),
            p95: quantile(sorted, 0.95),
            p99: quantile(sorted, 0.99),
            mean_ci,
        })
    }
}

/// Sorts ascending. `total_cmp` because values are checked finite before we get here, and it
/// is the fastest total order on f64.
pub(crate) fn sort(values: &mut [f64]) {
    values.sort_unstable_by(f64::total_cmp);
}

/// Arithmetic mean (NaN when empty). Compensated summation keeps a million-value mean
/// accurate to the last digits, at no measurable cost.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    compensated_sum(values.iter().copied()) / values.len() as f64
}

/// Sample variance with divisor n − 1 (NaN when fewer than two values).
pub fn variance(values: &[f64]) -> f64 {
    variance_around(values, mean(values))
}

/// Sample standard deviation with divisor n − 1 (NaN when fewer than two values).
pub fn standard_deviation(values: &[f64]) -> f64 {
    variance(values).sqrt()
}

/// Median of a sample in any order (NaN when empty): the middle value, or the mean of the two
/// middle values, as numpy's `median`.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sort(&mut sorted);
    median_of_sorted(&sorted)
}

/// [`median`] without sorting: the middle order statistics are selected in place (`values`
/// is left partly ordered), in linear time where a sort takes n log n. What a summary that
/// needs a column's median and no other quantile uses.
pub fn median_in_place(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let (lower, upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        return upper;
    }
    // The lower middle value is the largest of those below the upper one.
    let lower = lower
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .unwrap_or(upper);
    middle_value(lower, upper)
}

/// Median of a sorted sample. Every median in the crate, bootstrap replicates included, goes
/// through [`middle_value`], so that a replicate equal to the estimate compares equal in
/// floating point (the BCa bias correction counts such ties).
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        middle_value(sorted[n / 2 - 1], sorted[n / 2])
    }
}

/// The mean of the two middle order statistics, computed as numpy does (`(a + b) / 2`).
#[inline]
pub(crate) fn middle_value(lower: f64, upper: f64) -> f64 {
    (lower + upper) / 2.0
}

pub(crate) fn variance_around(values: &[f64], center: f64) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let squares = compensated_sum(
        values
            .iter()
            .map(|value| (value - center) * (value - center)),
    );
    squares / (values.len() - 1) as f64
}

fn standard_deviation_around(values: &[f64], center: f64) -> f64 {
    variance_around(values, center).sqrt()
}

/// Neumaier's compensated sum.
pub(crate) fn compensated_sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0f64;
    let mut compensation = 0.0f64;
    for value in values {
        let next = sum + value;
        if sum.abs() >= value.abs() {
            compensation += (sum - next) + value;
        } else {
            compensation += (value - next) + sum;
        }
        sum = next;
    }
    sum + compensation
}

/// Percentile bootstrap confidence interval of the median at level `confidence` (e.g. 0.95),
/// from `resamples` resamples drawn with a generator seeded by `seed` (same inputs, same
/// interval).
///
/// Small samples are resampled literally; large ones draw each replicate median from its
/// exact bootstrap distribution (see [`crate::bootstrap`]), so a million values cost no more
/// than a thousand. Returns (NaN, NaN) when the sample is empty, holds a non-finite value,
/// `confidence` is not strictly between 0 and 1, or `resamples` is 0.
pub fn median_ci(values: &[f64], confidence: f64, resamples: usize, seed: u64) -> (f64, f64) {
    let usable = !values.is_empty()
        && values.iter().all(|value| value.is_finite())
        && confidence > 0.0
        && confidence < 1.0
        && resamples > 0;
    if !usable {
        return (f64::NAN, f64::NAN);
    }
    let mut sorted = values.to_vec();
    sort(&mut sorted);
    let replicates = bootstrap::resample_sorted(
        &sorted,
        resamples,
        bootstrap::stream_seed(seed, 0),
        BootstrapMethod::Auto,
    );
    let mut medians = replicates.medians;
    sort(&mut medians);
    let tail = (1.0 - confidence) / 2.0;
    (quantile(&medians, tail), quantile(&medians, 1.0 - tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_small_sample() {
        let summary = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(summary.n, 4);
        assert_eq!(summary.mean, 2.5);
        assert_eq!(summary.median, 2.5);
        assert_eq!(summary.min, 1.0);
        assert_eq!(summary.max, 4.0);
        assert_eq!(summary.p25, 1.75);
        assert!((summary.sd - 1.290_994_448_735_805_6).abs() < 1e-15);
        // t(0.975, 3) = 3.182446305284263
        let half = 3.182_446_305_284_263 * summary.sd / 2.0;
        assert!((summary.mean_ci.0 - (2.5 - half)).abs() < 1e-12);
        assert!((summary.mean_ci.1 - (2.5 + half)).abs() < 1e-12);
    }

    #[test]
    fn the_median_selected_in_place_is_the_sorted_median() {
        assert!(median_in_place(&mut []).is_nan());
        assert_eq!(median_in_place(&mut [7.0]), 7.0);
        assert_eq!(median_in_place(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median_in_place(&mut [2.0, 2.0, 1.0, 2.0]), 2.0);
        // Odd and even lengths of scrambled values with ties.
        for n in 1..60u64 {
            let values: Vec<f64> = (0..n).map(|i| ((i * 37 + 11) % 23) as f64 * 0.5).collect();
            assert_eq!(median_in_place(&mut values.clone()), median(&values), "{n}");
        }
    }

    #[test]
    fn single_value_has_no_spread() {
        let summary = Summary::of(&[5.0]).unwrap();
        assert_eq!(summary.median, 5.0);
        assert_eq!(summary.p99, 5.0);
        assert!(summary.sd.is_nan());
        assert!(summary.mean_ci.0.is_nan() && summary.mean_ci.1.is_nan());
    }

    #[test]
    fn empty_or_non_finite_has_no_summary() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        assert!(Summary::of(&[1.0, f64::INFINITY]).is_none());
    }

    #[test]
    fn compensated_mean_is_exact_where_naive_is_not() {
        let values = [1e16, 1.0, -1e16, 1.0];
        assert_eq!(mean(&values), 0.5);
    }

    #[test]
    fn median_ci_brackets_the_median_and_is_reproducible() {
        let values: Vec<f64> = (0..200)
            .map(|i| f64::from(i % 37) + 0.01 * f64::from(i))
            .collect();
        let first = median_ci(&values, 0.95, 999, 7);
        let second = median_ci(&values, 0.95, 999, 7);
        assert_eq!(first, second);
        let center = median(&values);
        assert!(first.0 <= center && center <= first.1, "{first:?} {center}");
        assert!(median_ci(&[], 0.95, 999, 7).0.is_nan());
        assert!(median_ci(&[1.0, 2.0], 1.5, 999, 7).0.is_nan());
    }
}
