//! Van Elteren's stratified rank-sum test: whether `other` tends to be larger than `baseline`
//! across strata (for example "TLS 1.3 against TLS 1.2" within each suite × concurrency),
//! without mixing values of different strata. It sums each stratum's Wilcoxon rank-sum
//! deviation weighted by 1 / (N + 1) (the locally most powerful weights when the shift is
//! the same in every stratum), with each stratum's tie-corrected variance, and reads the
//! standardized sum on the normal distribution (van Elteren 1960; Lehmann, Nonparametrics,
//! 3.3). No crate we use has it, so it is written here, on the same pooled ranks as the
//! Mann-Whitney test.

use serde::Serialize;

// Cody's normal tail: closed form, bounded (the table in distribution.rs).
use crate::distribution::normal_cdf;
use crate::rank::pooled_ranks;
use crate::StatsError;

/// The test's result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VanElteren {
    /// The standardized statistic: positive when `other` ranks above `baseline`.
    pub z: f64,
    /// Two-sided p-value from the normal distribution.
    pub p_value: f64,
    /// Strata that contributed (each needs a value on both sides).
    pub strata: usize,
}

/// Tests `(baseline, other)` pairs of samples, one pair per stratum.
pub fn van_elteren(strata: &[(&[f64], &[f64])]) -> Result<VanElteren, StatsError> {
    let mut deviation = 0.0;
    let mut variance = 0.0;
    let mut used = 0;
    for (baseline, other) in strata {
        let mut first: Vec<f64> = baseline.iter().copied().filter(|v| v.is_finite()).collect();
        let mut second: Vec<f64> = other.iter().copied().filter(|v| v.is_finite()).collect();
        if first.is_empty() || second.is_empty() {
            continue;
        }
        first.sort_by(f64::total_cmp);
        second.sort_by(f64::total_cmp);
        let (n1, n2) = (first.len() as f64, second.len() as f64);
        let total = n1 + n2;
        let ranks = pooled_ranks(&[&first, &second]);
        let expected = n2 * (total + 1.0) / 2.0;
        let stratum_variance = if total > 1.0 {
            n1 * n2 / 12.0 * ((total + 1.0) - ranks.tie_term / (total * (total - 1.0)))
        } else {
            0.0
        };
        let weight = 1.0 / (total + 1.0);
        deviation += weight * (ranks.rank_sums[1] - expected);
        variance += weight * weight * stratum_variance;
        used += 1;
    }
    if used == 0 || variance <= 0.0 {
        return Err(StatsError::InvalidArgument(
            "van Elteren's test needs a stratum with values on both sides that are not all equal"
                .into(),
        ));
    }
    let z = deviation / variance.sqrt();
    Ok(VanElteren {
        z,
        p_value: (2.0 * normal_cdf(-z.abs())).min(1.0),
        strata: used,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stratum_is_the_rank_sum_test() {
        // With one stratum the weights cancel: z is the Mann-Whitney normal approximation
        // without continuity correction. x below y everywhere: U = 0 for y's complement.
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [5.0, 6.0, 7.0, 8.0];
        let result = van_elteren(&[(&x, &y)]).unwrap();
        // W = 26, E = 18, Var = 16·9/12 = 12: z = 8 / √12.
        assert!((result.z - 8.0 / 12f64.sqrt()).abs() < 1e-12);
        assert!(result.p_value < 0.03);
    }

    #[test]
    fn a_shift_in_every_stratum_adds_up_and_opposite_shifts_cancel() {
        let low = [1.0, 2.0, 3.0];
        let high = [4.0, 5.0, 6.0];
        let same = van_elteren(&[(&low, &high), (&low, &high), (&low, &high)]).unwrap();
        let one = van_elteren(&[(&low, &high)]).unwrap();
        assert!(same.z > one.z);
        assert_eq!(same.strata, 3);
        let opposite = van_elteren(&[(&low, &high), (&high, &low)]).unwrap();
        assert!(opposite.z.abs() < 1e-12);
        assert!(van_elteren(&[(&[1.0], &[1.0])]).is_err());
    }
}
