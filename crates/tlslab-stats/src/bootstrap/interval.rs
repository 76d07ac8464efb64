//! From replicates to intervals: percentile, BCa, and the jackknife acceleration of BCa.

use crate::descriptive::middle_value;
// Both closed forms, bounded (the table in distribution.rs).
use crate::distribution::{normal_cdf, normal_quantile};
use crate::quantile::quantile;

/// The percentile interval: the (1 − confidence)/2 and (1 + confidence)/2 type-7 quantiles of
/// the replicates, which must be sorted ascending.
pub fn percentile_interval(sorted_replicates: &[f64], confidence: f64) -> (f64, f64) {
    let tail = (1.0 - confidence) / 2.0;
    (
        quantile(sorted_replicates, tail),
        quantile(sorted_replicates, 1.0 - tail),
    )
}

/// A BCa interval with the quantities it was built from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BcaInterval {
    /// z₀ = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B).
    pub bias_correction: f64,
    /// The adjusted probability levels (α₁, α₂) at which the replicates are read.
    pub levels: (f64, f64),
    /// The interval: the replicates read at `levels`.
    pub interval: (f64, f64),
}

/// The BCa interval from the estimate θ̂, sorted replicates θ* and the acceleration â (see
/// [`jackknife_acceleration`]), exactly as scipy 1.17's `_bca_interval`:
/// α₁ = Φ(z₀ + (z₀ + z_α) / (1 − â(z₀ + z_α))), α₂ likewise with z₁₋α, endpoints the type-7
/// quantiles of θ* at α₁ and α₂.
///
/// Where BCa is undefined (θ̂ outside every replicate, so z₀ is infinite, or an acceleration so
/// large that the adjusted level folds over) scipy returns NaN; we fall back to the percentile
/// interval, whose levels are then reported.
pub fn bca_interval(
    estimate: f64,
    sorted_replicates: &[f64],
    acceleration: f64,
    confidence: f64,
) -> BcaInterval {
    let count = sorted_replicates.len() as f64;
    let below = sorted_replicates.partition_point(|&value| value < estimate) as f64;
    let not_above = sorted_replicates.partition_point(|&value| value <= estimate) as f64;
    let bias_correction = normal_quantile((below + not_above) / (2.0 * count));
    let acceleration = if acceleration.is_finite() {
        acceleration
    } else {
        0.0
    };
    let tail = (1.0 - confidence) / 2.0;
    let z_tail = normal_quantile(tail);
    let level = |z: f64| {
        let shifted = bias_correction + z;
        let denominator = 1.0 - acceleration * shifted;
        if denominator <= 0.0 {
            f64::NAN
        } else {
            normal_cdf(bias_correction + shifted / denominator)
        }
    };
    let levels = (level(z_tail), level(-z_tail));
    if !bias_correction.is_finite() || levels.0.is_nan() || levels.1.is_nan() {
        return BcaInterval {
            bias_correction,
            levels: (tail, 1.0 - tail),
            interval: percentile_interval(sorted_replicates, confidence),
        };
    }
    BcaInterval {
        bias_correction,
        levels,
        interval: (
            quantile(sorted_replicates, levels.0),
            quantile(sorted_replicates, levels.1),
        ),
    }
}

/// The BCa acceleration â from jackknife changes of the contrast, one slice per sample: for
/// sample j, the changes θ̂₍₋ᵢ₎ − θ̂ when its value i is left out (the others kept whole).
///
/// As scipy: Uⱼᵢ = (nⱼ − 1)(mean of the changes − change i),
/// â = Σⱼ Σᵢ Uⱼᵢ³/nⱼ³ / (6 (Σⱼ Σᵢ Uⱼᵢ²/nⱼ²)^{3/2}). A sample of one value has no jackknife and
/// is skipped; no spread at all gives 0.
pub fn jackknife_acceleration(changes_per_sample: &[&[f64]]) -> f64 {
    let lookups: Vec<_> = changes_per_sample
        .iter()
        .map(|changes| move |index: usize| changes[index])
        .collect();
    let samples: Vec<(usize, &dyn Fn(usize) -> f64)> = changes_per_sample
        .iter()
        .zip(&lookups)
        .map(|(changes, lookup)| (changes.len(), lookup as &dyn Fn(usize) -> f64))
        .collect();
    acceleration_of(&samples)
}

/// [`jackknife_acceleration`] with each sample's changes given as a count and a function of
/// the index, so that ten million changes need not be stored. Same sums in the same order,
/// so the same result to the last bit.
pub(crate) fn acceleration_of(samples: &[(usize, &dyn Fn(usize) -> f64)]) -> f64 {
    let mut numerator = 0.0;
    let mut denominator = 0.0;
    for &(length, change) in samples {
        if length < 2 {
            continue;
        }
        let count = length as f64;
        let average = (0..length).map(change).sum::<f64>() / count;
        let (mut cubes, mut squares) = (0.0, 0.0);
        for index in 0..length {
            let u = (count - 1.0) * (average - change(index));
            squares += u * u;
            cubes += u * u * u;
        }
        numerator += cubes / (count * count * count);
        denominator += squares / (count * count);
    }
    if denominator == 0.0 {
        return 0.0;
    }
    numerator / (6.0 * denominator.powf(1.5))
}

/// mean(sample without value i) − mean(sample) = (mean − xᵢ)/(n − 1), for a sample of at
/// least two values.
#[inline]
pub(super) fn mean_jackknife_change(sorted: &[f64], mean: f64, left_out: usize) -> f64 {
    (mean - sorted[left_out]) / (sorted.len() - 1) as f64
}

/// median(sample without value i) − median(sample), in O(1), for a sorted sample of at least
/// two values: leaving out one value only shifts the positions above it by one.
#[inline]
pub(super) fn median_jackknife_change(sorted: &[f64], median: f64, left_out: usize) -> f64 {
    let remaining = sorted.len() - 1;
    let at = |rank: usize| {
        if rank < left_out {
            sorted[rank]
        } else {
            sorted[rank + 1]
        }
    };
    let leave_one_out = if remaining % 2 == 1 {
        at(remaining / 2)
    } else {
        middle_value(at(remaining / 2 - 1), at(remaining / 2))
    };
    leave_one_out - median
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptive::median;

    #[test]
    fn median_jackknife_matches_recomputation() {
        let sorted = [1.0, 2.0, 2.0, 5.0, 9.0, 10.0];
        let full = median(&sorted);
        for index in 0..sorted.len() {
            let mut rest = sorted.to_vec();
            rest.remove(index);
            assert_eq!(
                median_jackknife_change(&sorted, full, index),
                median(&rest) - full
            );
        }
    }

    #[test]
    fn symmetric_changes_have_no_acceleration() {
        assert_eq!(jackknife_acceleration(&[&[-1.0, 0.0, 1.0]]), 0.0);
        assert_eq!(jackknife_acceleration(&[&[0.0, 0.0]]), 0.0);
    }

    #[test]
    fn without_bias_or_acceleration_bca_is_percentile() {
        let replicates: Vec<f64> = (0..1001).map(|i| f64::from(i) / 1000.0).collect();
        let bca = bca_interval(0.5, &replicates, 0.0, 0.9);
        assert!(bca.bias_correction.abs() < 1e-12);
        let percentile = percentile_interval(&replicates, 0.9);
        assert!((bca.interval.0 - percentile.0).abs() < 1e-12);
        assert!((bca.interval.1 - percentile.1).abs() < 1e-12);
    }

    #[test]
    fn estimate_outside_replicates_falls_back_to_percentile() {
        let replicates = [1.0, 2.0, 3.0];
        let bca = bca_interval(10.0, &replicates, 0.0, 0.95);
        assert_eq!(bca.interval, percentile_interval(&replicates, 0.95));
    }
}
