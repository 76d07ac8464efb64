//! The Kruskal-Wallis H test: do several independent samples come from one distribution?

use serde::Serialize;

use crate::descriptive::sort;
use crate::distribution;
use crate::error::{check_sample, StatsError};
use crate::rank::pooled_ranks;

/// Result of a Kruskal-Wallis test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KruskalWallis {
    /// H, corrected for ties.
    pub h: f64,
    /// Degrees of freedom, groups − 1.
    pub df: usize,
    /// Upper tail of chi-squared with `df` degrees of freedom at `h` (scipy's p-value).
    pub p_value: f64,
}

/// Kruskal-Wallis H test over two or more groups (each at least one finite value).
///
/// When every value of every group is the same, H is 0/0; scipy raises an error there, we
/// report H = 0 and p = 1 instead, since such data carry no evidence of a difference and a
/// comparison of identical timings should still produce a report.
pub fn kruskal_wallis(groups: &[&[f64]]) -> Result<KruskalWallis, StatsError> {
    if groups.len() < 2 {
        return Err(StatsError::InvalidArgument(format!(
            "the Kruskal-Wallis test needs at least 2 groups, got {}",
            groups.len()
        )));
    }
    let mut sorted_groups = Vec::with_capacity(groups.len());
    for (index, group) in groups.iter().enumerate() {
        check_sample(&format!("group {index}"), group, 1)?;
        let mut sorted = group.to_vec();
        sort(&mut sorted);
        sorted_groups.push(sorted);
    }
    let borrowed: Vec<&[f64]> = sorted_groups.iter().map(Vec::as_slice).collect();
    Ok(kruskal_wallis_sorted(&borrowed))
}

/// [`kruskal_wallis`] on groups sorted ascending and checked.
pub(crate) fn kruskal_wallis_sorted(sorted_groups: &[&[f64]]) -> KruskalWallis {
    let ranks = pooled_ranks(sorted_groups);
    let total: f64 = sorted_groups.iter().map(|group| group.len() as f64).sum();
    let between: f64 = ranks
        .rank_sums
        .iter()
        .zip(sorted_groups)
        .map(|(sum, group)| sum * sum / group.len() as f64)
        .sum();
    let df = sorted_groups.len() - 1;
    let uncorrected = 12.0 / (total * (total + 1.0)) * between - 3.0 * (total + 1.0);
    let tie_correction = 1.0 - ranks.tie_term / (total * total * total - total);
    if tie_correction <= 0.0 {
        return KruskalWallis {
            h: 0.0,
            df,
            p_value: 1.0,
        };
    }
    let h = uncorrected / tie_correction;
    KruskalWallis {
        h,
        df,
        // A finite sum of ⌊df/2⌋ terms: bounded (distribution.rs).
        p_value: distribution::chi_squared_upper_tail(h, df),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_values_everywhere() {
        let result = kruskal_wallis(&[&[1.0, 1.0], &[1.0], &[1.0, 1.0, 1.0]]).unwrap();
        assert_eq!(result.h, 0.0);
        assert_eq!(result.p_value, 1.0);
        assert_eq!(result.df, 2);
    }

    #[test]
    fn needs_two_groups() {
        assert!(kruskal_wallis(&[&[1.0, 2.0]]).is_err());
        assert!(kruskal_wallis(&[&[1.0, 2.0], &[]]).is_err());
    }

    #[test]
    fn separated_groups_are_significant() {
        let low: Vec<f64> = (0..20).map(f64::from).collect();
        let middle: Vec<f64> = (100..120).map(f64::from).collect();
        let high: Vec<f64> = (200..220).map(f64::from).collect();
        let result = kruskal_wallis(&[&low, &middle, &high]).unwrap();
        assert!(result.p_value < 1e-10);
    }
}
