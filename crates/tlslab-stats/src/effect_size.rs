//! Effect sizes: how large a difference is, as opposed to whether it is detectable.
//!
//! Direction: every effect size is about the **first** sample relative to the second and is
//! positive when the first tends to be larger (pingouin ≥ 0.5.5). In a comparison the first
//! sample is the "other" configuration and the second the baseline, so a positive effect
//! means the other configuration is slower.

use statrs::function::gamma::ln_gamma;

use crate::descriptive::{mean, sort, variance};

/// How many of the n₁·n₂ pairs (first, second) have the first value greater, smaller or equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DominanceCounts {
    /// Pairs where the first value is larger.
    pub greater: u64,
    /// Pairs where the first value is smaller.
    pub less: u64,
    /// Pairs of equal values: ties, which count ½ in U.
    pub equal: u64,
}

/// Counts the pairs by ordering, in O(n log n) rather than comparing all n₁·n₂ pairs.
pub fn dominance_counts(first: &[f64], second: &[f64]) -> DominanceCounts {
    let mut first_sorted = first.to_vec();
    let mut second_sorted = second.to_vec();
    sort(&mut first_sorted);
    sort(&mut second_sorted);
    dominance_counts_sorted(&first_sorted, &second_sorted)
}

/// [`dominance_counts`] of samples sorted ascending, in one merge pass.
pub(crate) fn dominance_counts_sorted(first: &[f64], second: &[f64]) -> DominanceCounts {
    let mut below = 0usize; // second values < current first value
    let mut not_above = 0usize; // second values <= current first value
    let mut counts = DominanceCounts {
        greater: 0,
        less: 0,
        equal: 0,
    };
    for &value in first {
        while below < second.len() && second[below] < value {
            below += 1;
        }
        not_above = not_above.max(below);
        while not_above < second.len() && second[not_above] <= value {
            not_above += 1;
        }
        counts.greater += below as u64;
        counts.equal += (not_above - below) as u64;
        counts.less += (second.len() - not_above) as u64;
    }
    counts
}

/// Cliff's delta, (#{first > second} − #{first < second}) / (n₁n₂), between −1 and 1. Equal
/// to the rank-biserial correlation; computed from pair counts rather than ranks. NaN when a
/// sample is empty.
pub fn cliffs_delta(first: &[f64], second: &[f64]) -> f64 {
    let counts = dominance_counts(first, second);
    delta_of(counts, first.len(), second.len())
}

pub(crate) fn delta_of(counts: DominanceCounts, n_first: usize, n_second: usize) -> f64 {
    let pairs = n_first as f64 * n_second as f64;
    (counts.greater as f64 - counts.less as f64) / pairs
}

/// Rank-biserial correlation `2U₁/(n₁n₂) − 1` from U of the first sample (pingouin ≥ 0.5.5;
/// pingouin ≤ 0.5.4 returned the negated value).
pub fn rank_biserial(u_first: f64, n_first: usize, n_second: usize) -> f64 {
    2.0 * u_first / (n_first as f64 * n_second as f64) - 1.0
}

/// Common-language effect size: P(first > second) + ½ P(first = second) = U₁/(n₁n₂).
pub fn common_language_effect_size(u_first: f64, n_first: usize, n_second: usize) -> f64 {
    u_first / (n_first as f64 * n_second as f64)
}

/// Cohen's d: difference of means over the pooled standard deviation (variances with divisor
/// n − 1). NaN when a sample has fewer than two values.
pub fn cohen_d(first: &[f64], second: &[f64]) -> f64 {
    let (n1, n2) = (first.len() as f64, second.len() as f64);
    let pooled_variance =
        ((n1 - 1.0) * variance(first) + (n2 - 1.0) * variance(second)) / (n1 + n2 - 2.0);
    (mean(first) - mean(second)) / pooled_variance.sqrt()
}

/// Hedges' g: Cohen's d times the small-sample correction J = 1 − 3/(4(n₁+n₂) − 9), the
/// approximation pingouin uses (within 0.02% of the exact J from 20 values on).
pub fn hedges_g(first: &[f64], second: &[f64]) -> f64 {
    cohen_d(first, second) * hedges_correction(first.len(), second.len())
}

/// Hedges' g with the exact correction `Γ(ν/2) / (√(ν/2) Γ((ν−1)/2))`, ν = n₁ + n₂ − 2.
pub fn hedges_g_exact(first: &[f64], second: &[f64]) -> f64 {
    cohen_d(first, second) * hedges_correction_exact(first.len(), second.len())
}

/// pingouin's approximation of Hedges' correction factor J.
pub fn hedges_correction(n_first: usize, n_second: usize) -> f64 {
    1.0 - 3.0 / (4.0 * (n_first + n_second) as f64 - 9.0)
}

/// The exact Hedges correction factor J (through log-gamma, so it holds for millions of values).
/// statrs' `ln_gamma` is a Lanczos approximation, closed form: no loop (issue 31). The
/// difference of two log-gammas of size ν ln ν keeps about 1e-8 relative at ν = 2·10⁷.
pub fn hedges_correction_exact(n_first: usize, n_second: usize) -> f64 {
    let freedom = (n_first + n_second) as f64 - 2.0;
    (ln_gamma(freedom / 2.0) - ln_gamma((freedom - 1.0) / 2.0)).exp() / (freedom / 2.0).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dominance_counts_with_ties() {
        let counts = dominance_counts(&[1.0, 2.0, 3.0], &[2.0, 2.0, 0.0]);
        // 1: >0 once, <2 twice; 2: >0, =2 twice; 3: > all three
        assert_eq!(
            counts,
            DominanceCounts {
                greater: 5,
                less: 2,
                equal: 2
            }
        );
        assert!((cliffs_delta(&[1.0, 2.0, 3.0], &[2.0, 2.0, 0.0]) - 3.0 / 9.0).abs() < 1e-15);
    }

    #[test]
    fn direction_is_first_larger_positive() {
        let larger = [5.0, 6.0, 7.0];
        let smaller = [1.0, 2.0, 3.0];
        assert_eq!(cliffs_delta(&larger, &smaller), 1.0);
        assert_eq!(cliffs_delta(&smaller, &larger), -1.0);
        assert!(cohen_d(&larger, &smaller) > 0.0);
        assert_eq!(rank_biserial(9.0, 3, 3), 1.0);
    }

    #[test]
    fn exact_correction_approaches_approximation() {
        let exact = hedges_correction_exact(100, 100);
        let approximate = hedges_correction(100, 100);
        assert!((exact - approximate).abs() < 1e-6);
    }
}
