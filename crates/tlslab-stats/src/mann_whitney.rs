//! The Mann-Whitney U test (Wilcoxon rank-sum test) for two independent samples.
//!
//! Conventions follow scipy ≥ 1.7 (`scipy.stats.mannwhitneyu`), so that a p-value can be
//! checked against it:
//!
//! - the statistic is U of the **first** sample, `R₁ − n₁(n₁+1)/2`, with ties given their
//!   average rank;
//! - `Auto` chooses the exact null distribution when one sample has at most 8 values and the
//!   pooled sample has no ties, the normal approximation otherwise (scipy's rule: asymptotic
//!   as soon as both samples exceed 8 values, or when there are ties);
//! - the normal approximation uses the tie-corrected variance and, by default, a continuity
//!   correction of ½;
//! - the two-sided p-value is `2·P(U ≥ max(U₁, U₂))`, clipped to 1.
//!
//! The exact distribution is computed here (statrs has none): the number of arrangements with
//! U = u is the coefficient of qᵘ in the Gaussian binomial coefficient
//! `[n₁+n₂ choose n₁]_q = ∏ᵢ (1 − q^{n+i}) / (1 − qⁱ)`, built one factor at a time up to the
//! degree the p-value needs, in O(min(n₁,n₂) · n₁n₂) operations.

use serde::Serialize;

use crate::distribution;
use crate::error::{check_sample, StatsError};
use crate::rank::pooled_ranks;

/// Which alternative hypothesis the p-value is for, about the **first** sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Alternative {
    /// The distributions differ.
    #[default]
    TwoSided,
    /// The first sample is stochastically smaller than the second.
    Less,
    /// The first sample is stochastically larger than the second.
    Greater,
}

/// How to compute the p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MannWhitneyMethod {
    /// scipy's rule: exact for a sample of at most 8 values without ties, else asymptotic.
    #[default]
    Auto,
    /// The exact null distribution. It assumes no ties; with ties, U is truncated to an
    /// integer as scipy does, and the result is only an approximation.
    Exact,
    /// The normal approximation with tie correction.
    Asymptotic,
}

/// How a p-value was actually computed (serialized as `"exact"` or `"asymptotic"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PValueMethod {
    /// From the exact distribution of U: small samples without ties.
    Exact,
    /// From the normal approximation, corrected for ties: large samples or ties.
    Asymptotic,
}

impl PValueMethod {
    /// `"exact"` or `"asymptotic"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PValueMethod::Exact => "exact",
            PValueMethod::Asymptotic => "asymptotic",
        }
    }
}

/// Options of [`mann_whitney_u`]. The default is scipy's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitneyOptions {
    /// Which difference the test looks for.
    pub alternative: Alternative,
    /// How the p-value is computed; `Auto` chooses as scipy does.
    pub method: MannWhitneyMethod,
    /// Apply the continuity correction of ½ in the normal approximation.
    pub continuity: bool,
}

impl Default for MannWhitneyOptions {
    fn default() -> Self {
        MannWhitneyOptions {
            alternative: Alternative::TwoSided,
            method: MannWhitneyMethod::Auto,
            continuity: true,
        }
    }
}

/// Result of a Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample: the number of pairs (first, second) where the first value is
    /// larger, ties counting ½.
    pub u: f64,
    /// U of the second sample, `n₁n₂ − u`.
    pub u_second: f64,
    /// Mean of U under the null hypothesis, n₁n₂/2.
    pub u_mean: f64,
    /// Standard deviation of U under the null hypothesis, corrected for ties.
    pub u_standard_deviation: f64,
    /// The standardized statistic of the normal approximation for the chosen alternative
    /// (computed even when the p-value is exact; 0 when every value is tied).
    pub z: f64,
    /// The p-value for the chosen alternative.
    pub p_value: f64,
    /// Whether `p_value` is exact or approximate.
    pub method: PValueMethod,
}

/// Mann-Whitney U test of `first` against `second` (samples in any order, at least one finite
/// value each).
///
/// ```
/// use tlslab_stats::{mann_whitney_u, MannWhitneyOptions, PValueMethod};
/// let test = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], &MannWhitneyOptions::default())?;
/// assert_eq!(test.u, 0.0);
/// assert_eq!(test.method, PValueMethod::Exact);
/// assert!((test.p_value - 0.1).abs() < 1e-12);
/// # Ok::<(), tlslab_stats::StatsError>(())
/// ```
pub fn mann_whitney_u(
    first: &[f64],
    second: &[f64],
    options: &MannWhitneyOptions,
) -> Result<MannWhitney, StatsError> {
    check_sample("first", first, 1)?;
    check_sample("second", second, 1)?;
    let mut first_sorted = first.to_vec();
    let mut second_sorted = second.to_vec();
    crate::descriptive::sort(&mut first_sorted);
    crate::descriptive::sort(&mut second_sorted);
    mann_whitney_sorted(&first_sorted, &second_sorted, options)
}

/// [`mann_whitney_u`] on samples already sorted ascending and checked.
pub(crate) fn mann_whitney_sorted(
    first: &[f64],
    second: &[f64],
    options: &MannWhitneyOptions,
) -> Result<MannWhitney, StatsError> {
    let n_first = first.len();
    let n_second = second.len();
    let ranks = pooled_ranks(&[first, second]);
    let n_first_f = n_first as f64;
    let u = ranks.rank_sums[0] - n_first_f * (n_first_f + 1.0) / 2.0;
    let pairs = n_first_f * n_second as f64;
    let method = match options.method {
        MannWhitneyMethod::Exact => PValueMethod::Exact,
        MannWhitneyMethod::Asymptotic => PValueMethod::Asymptotic,
        MannWhitneyMethod::Auto => choose_method(n_first, n_second, ranks.has_ties),
    };
    let asymptotic = asymptotic_test(
        u,
        n_first,
        n_second,
        ranks.tie_term,
        options.alternative,
        options.continuity,
    );
    let p_value = match method {
        PValueMethod::Asymptotic => asymptotic.p_value,
        PValueMethod::Exact => exact_p_value(u, n_first, n_second, options.alternative)?,
    };
    Ok(MannWhitney {
        u,
        u_second: pairs - u,
        u_mean: pairs / 2.0,
        u_standard_deviation: asymptotic.standard_deviation,
        z: asymptotic.z,
        p_value,
        method,
    })
}

/// scipy's `method='auto'` rule.
pub fn choose_method(n_first: usize, n_second: usize, has_ties: bool) -> PValueMethod {
    if (n_first > 8 && n_second > 8) || has_ties {
        PValueMethod::Asymptotic
    } else {
        PValueMethod::Exact
    }
}

struct Asymptotic {
    standard_deviation: f64,
    z: f64,
    p_value: f64,
}

/// The p-value of the normal approximation for a given U of the first sample, with `tie_term`
/// = Σ (t³ − t) over the tie groups of the pooled sample (0 without ties).
///
/// Public so that a published result ("U = …, p = …") can be checked from its summary numbers.
pub fn asymptotic_p_value(
    u_first: f64,
    n_first: usize,
    n_second: usize,
    tie_term: f64,
    alternative: Alternative,
    continuity: bool,
) -> f64 {
    asymptotic_test(
        u_first,
        n_first,
        n_second,
        tie_term,
        alternative,
        continuity,
    )
    .p_value
}

fn asymptotic_test(
    u_first: f64,
    n_first: usize,
    n_second: usize,
    tie_term: f64,
    alternative: Alternative,
    continuity: bool,
) -> Asymptotic {
    let (n1, n2) = (n_first as f64, n_second as f64);
    let total = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    let standard_deviation = variance.max(0.0).sqrt();
    let (u, factor) = statistic_for(u_first, n1 * n2, alternative);
    if standard_deviation == 0.0 || !standard_deviation.is_finite() {
        // Every value tied (or a single pair): the data carry no evidence either way.
        return Asymptotic {
            standard_deviation: 0.0,
            z: 0.0,
            p_value: 1.0,
        };
    }
    let mut numerator = u - mean;
    if continuity {
        numerator -= 0.5;
    }
    let z = numerator / standard_deviation;
    // Cody's normal tail: closed form, bounded (distribution.rs).
    let p_value = (factor * distribution::normal_upper_tail(z)).clamp(0.0, 1.0);
    Asymptotic {
        standard_deviation,
        z,
        p_value,
    }
}

/// The U whose upper tail is the p-value, and the factor for two sides (scipy's choice: the
/// upper tail of U₂ stands for the lower tail of U₁ by symmetry).
fn statistic_for(u_first: f64, pairs: f64, alternative: Alternative) -> (f64, f64) {
    match alternative {
        Alternative::Greater => (u_first, 1.0),
        Alternative::Less => (pairs - u_first, 1.0),
        Alternative::TwoSided => (u_first.max(pairs - u_first), 2.0),
    }
}

/// Products of sizes above this make the exact distribution take minutes; callers must use
/// the normal approximation instead (which `Auto` does long before).
const EXACT_WORK_LIMIT: f64 = 2e10;

/// The p-value from the exact null distribution of U (no ties assumed), for U of the first
/// sample. A fractional U (ties) is truncated as scipy does.
pub fn exact_p_value(
    u_first: f64,
    n_first: usize,
    n_second: usize,
    alternative: Alternative,
) -> Result<f64, StatsError> {
    let pairs = n_first as u64 * n_second as u64;
    let (u, factor) = statistic_for(u_first, pairs as f64, alternative);
    let smaller = n_first.min(n_second) as f64;
    if smaller * pairs as f64 / 2.0 > EXACT_WORK_LIMIT {
        return Err(StatsError::InvalidArgument(format!(
            "the exact Mann-Whitney distribution for samples of {n_first} and {n_second} values \
             is too costly; use the asymptotic method"
        )));
    }
    if u.is_nan() || u < 0.0 {
        return Ok(f64::NAN);
    }
    let u = (u.floor() as u64).min(pairs);
    // P(U ≥ u), summed from whichever tail is shorter: by symmetry P(U ≥ u) = P(U ≤ n₁n₂ − u).
    let complement = pairs - u;
    let upper_tail = if u > complement {
        let pmf = exact_pmf(n_first, n_second, complement as usize);
        pmf.iter().sum::<f64>()
    } else if u == 0 {
        1.0
    } else {
        let pmf = exact_pmf(n_first, n_second, (u - 1) as usize);
        1.0 - pmf.iter().sum::<f64>()
    };
    Ok((factor * upper_tail).clamp(0.0, 1.0))
}

/// P(U = u) for u = 0 ..= `highest` under the null hypothesis, for samples of `n_first` and
/// `n_second` values without ties.
///
/// Multiplies the Gaussian binomial factors `(1 − q^{n+i}) / (1 − qⁱ)` one at a time, as
/// probabilities (each step scaled by i/(n+i), so nothing overflows). Only the lower half of
/// each intermediate polynomial is computed by the division and subtraction; the upper half
/// is copied from it by symmetry, because there the subtraction would cancel catastrophically.
pub(crate) fn exact_pmf(n_first: usize, n_second: usize, highest: usize) -> Vec<f64> {
    let smaller = n_first.min(n_second);
    let larger = n_first.max(n_second);
    let length = highest.min(smaller * larger) + 1;
    let mut coefficients = vec![0.0f64; length];
    coefficients[0] = 1.0;
    for step in 1..=smaller {
        let degree = step * larger;
        let half = degree / 2;
        let computed = half.min(length - 1);
        // Divide by (1 − q^step): running sums with stride `step`.
        for index in step..=computed {
            coefficients[index] += coefficients[index - step];
        }
        // Multiply by (1 − q^{larger+step}); descending so the subtrahend is still a pre-step value.
        let shift = larger + step;
        if computed >= shift {
            for index in (shift..=computed).rev() {
                coefficients[index] -= coefficients[index - shift];
            }
        }
        let top = degree.min(length - 1);
        for index in (computed + 1)..=top {
            coefficients[index] = coefficients[degree - index];
        }
        for value in coefficients.iter_mut().skip(top + 1) {
            *value = 0.0;
        }
        let scale = step as f64 / shift as f64;
        for value in coefficients.iter_mut().take(top + 1) {
            *value *= scale;
        }
    }
    coefficients
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts by brute force over all subsets, for checking the recursion.
    fn brute_force_pmf(n_first: usize, n_second: usize) -> Vec<f64> {
        let total = n_first + n_second;
        let mut counts = vec![0u64; n_first * n_second + 1];
        let mut subsets = 0u64;
        for mask in 0u32..(1 << total) {
            if mask.count_ones() as usize != n_first {
                continue;
            }
            subsets += 1;
            // U of the first sample: pairs where a first-sample position is above a second one.
            let mut u = 0;
            let mut seconds_below = 0;
            for position in 0..total {
                if mask & (1 << position) != 0 {
                    u += seconds_below;
                } else {
                    seconds_below += 1;
                }
            }
            counts[u] += 1;
        }
        counts
            .iter()
            .map(|&count| count as f64 / subsets as f64)
            .collect()
    }

    #[test]
    fn exact_pmf_matches_brute_force() {
        for (n_first, n_second) in [(1, 1), (2, 3), (3, 5), (4, 4), (5, 7), (6, 2), (8, 8)] {
            let expected = brute_force_pmf(n_first, n_second);
            let computed = exact_pmf(n_first, n_second, n_first * n_second);
            for (u, (a, b)) in computed.iter().zip(&expected).enumerate() {
                assert!(
                    (a - b).abs() < 1e-14,
                    "{n_first}x{n_second} u={u}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn exact_pmf_sums_to_one_for_unequal_sizes() {
        let pmf = exact_pmf(7, 300, 7 * 300);
        let total: f64 = pmf.iter().sum();
        assert!((total - 1.0).abs() < 1e-12);
        // Symmetry of the null distribution.
        assert!((pmf[10] - pmf[2100 - 10]).abs() < 1e-18);
    }

    #[test]
    fn smallest_possible_exact_p_value() {
        // Complete separation of 3 and 3 values: p = 2 / C(6, 3) = 0.1.
        let p = exact_p_value(0.0, 3, 3, Alternative::TwoSided).unwrap();
        assert!((p - 0.1).abs() < 1e-15);
        let p = exact_p_value(9.0, 3, 3, Alternative::Greater).unwrap();
        assert!((p - 0.05).abs() < 1e-15);
        let p = exact_p_value(9.0, 3, 3, Alternative::Less).unwrap();
        assert!((p - 1.0).abs() < 1e-15);
    }

    #[test]
    fn auto_rule() {
        assert_eq!(choose_method(8, 1000, false), PValueMethod::Exact);
        assert_eq!(choose_method(9, 9, false), PValueMethod::Asymptotic);
        assert_eq!(choose_method(3, 4, true), PValueMethod::Asymptotic);
    }

    #[test]
    fn all_values_tied_gives_p_one() {
        let test = mann_whitney_u(&[2.0; 20], &[2.0; 30], &MannWhitneyOptions::default()).unwrap();
        assert_eq!(test.u, 300.0);
        assert_eq!(test.p_value, 1.0);
        assert_eq!(test.method, PValueMethod::Asymptotic);
    }

    #[test]
    fn exact_is_refused_when_too_costly() {
        assert!(exact_p_value(1.0, 100_000, 100_000, Alternative::TwoSided).is_err());
    }

    /// P(S ≤ x) for S the sum of `count` uniforms (Irwin–Hall), the limit of U/n₂ for a
    /// sample of `count` values against a very large one.
    fn irwin_hall_cdf(x: f64, count: u32) -> f64 {
        let mut sum = 0.0;
        let mut binomial = 1.0;
        let mut factorial = 1.0;
        for k in 0..=count {
            if k > 0 {
                binomial *= f64::from(count - k + 1) / f64::from(k);
            }
            if f64::from(k) <= x {
                let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
                sum += sign * binomial * (x - f64::from(k)).powi(count as i32);
            }
        }
        for i in 1..=count {
            factorial *= f64::from(i);
        }
        sum / factorial
    }

    #[test]
    fn small_sample_against_large_stays_exact() {
        // Five values spread through 100,000: exact (one sample ≤ 8, no ties), and equal to
        // the Irwin–Hall limit up to O(1/n).
        let first: Vec<f64> = (1..=5)
            .map(|k| (f64::from(k) * 19_000.0 + 0.5) * 1e-4)
            .collect();
        let second: Vec<f64> = (0..100_000).map(|i| f64::from(i) * 1e-4).collect();
        let exact = mann_whitney_u(&first, &second, &MannWhitneyOptions::default()).unwrap();
        assert_eq!(exact.method, PValueMethod::Exact);
        let lower = 5.0 - exact.u / 100_000.0;
        let limit = 2.0 * irwin_hall_cdf(lower, 5);
        assert!((exact.p_value - limit).abs() < 2e-4, "{exact:?} {limit}");
        // Complete separation: p = 2 / C(100005, 5).
        let above: Vec<f64> = second.iter().map(|value| value + 100.0).collect();
        let separated = mann_whitney_u(&first, &above, &MannWhitneyOptions::default()).unwrap();
        let combinations: f64 = (1..=5)
            .map(|i| (100_000.0 + f64::from(i)) / f64::from(i))
            .product();
        let expected = 2.0 / combinations;
        assert!((separated.p_value - expected).abs() < 1e-12 * expected);
    }
}
