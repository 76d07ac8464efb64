//! The Shapiro-Wilk test of normality, so a report can say when a t-based interval rests on a
//! shaky assumption (handshake times rarely are normal; the rank tests and the bootstrap do
//! not need them to be).
//!
//! Royston's algorithm AS R94 (1995), as scipy's `shapiro` uses: coefficients from normal
//! scores with polynomial corrections for the two extreme ones, W as the squared correlation
//! between the sorted data and the coefficients, and Royston's normalizing transformation of
//! W for the p-value (exact for n = 3).
//!
//! The algorithm comes with its own normal quantile (AS 111) and normal tail (AS 66), good to
//! about 1e-9; scipy keeps them, R replaced them with its accurate `qnorm` and `pnorm`. We keep
//! them too, so that W and p agree with scipy to the last digits rather than to 1e-8. Both are
//! closed forms (rational functions, a continued fraction of fixed depth), so the test ends in
//! bounded work whatever its input (issue 31); it calls no statrs routine.

use serde::Serialize;

use crate::descriptive::sort;
use crate::error::{check_sample, StatsError};

/// Result of a Shapiro-Wilk test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShapiroWilk {
    /// W, between 0 and 1; 1 for a perfectly normal-looking sample.
    pub w: f64,
    /// Small when the sample is unlikely to come from a normal distribution.
    pub p_value: f64,
}

// Royston's polynomial coefficients, lowest order first.
const LIMIT_SMALL_SAMPLES: [f64; 2] = [-2.273, 0.459];
const FIRST_COEFFICIENT: [f64; 6] = [0.0, 0.221157, -0.147981, -2.07119, 4.434685, -2.706056];
const SECOND_COEFFICIENT: [f64; 6] = [0.0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633];
const SMALL_MEAN: [f64; 4] = [0.544, -0.39978, 0.025054, -6.714e-4];
const SMALL_LOG_SD: [f64; 4] = [1.3822, -0.77857, 0.062767, -0.0020322];
const LARGE_MEAN: [f64; 4] = [-1.5861, -0.31082, -0.083751, 0.0038915];
const LARGE_LOG_SD: [f64; 3] = [-0.4803, -0.082676, 0.0030302];

/// Shapiro-Wilk test of a sample of at least 3 finite values that are not all equal. Beyond
/// 5,000 values the p-value is less accurate (Royston's approximation was fitted up to there).
pub fn shapiro_wilk(values: &[f64]) -> Result<ShapiroWilk, StatsError> {
    check_sample("sample", values, 3)?;
    let mut sorted = values.to_vec();
    sort(&mut sorted);
    let count = sorted.len();
    // W does not depend on location; centring keeps the sums well conditioned.
    let center = sorted[count / 2];
    for value in &mut sorted {
        *value -= center;
    }
    if sorted[count - 1] - sorted[0] <= 0.0 {
        return Err(StatsError::InvalidArgument(
            "the Shapiro-Wilk test needs values that are not all equal".to_owned(),
        ));
    }
    let half = half_coefficients(count);
    // The full coefficient vector is antisymmetric: −a₁, −a₂, …, (0), …, a₂, a₁.
    let coefficient = |rank: usize| {
        let mirror = count - 1 - rank;
        match rank.cmp(&mirror) {
            std::cmp::Ordering::Less => -half[rank],
            std::cmp::Ordering::Greater => half[mirror],
            std::cmp::Ordering::Equal => 0.0,
        }
    };
    let n = count as f64;
    let coefficient_mean = (0..count).map(coefficient).sum::<f64>() / n;
    let value_mean = sorted.iter().sum::<f64>() / n;
    let (mut coefficient_squares, mut value_squares, mut cross) = (0.0, 0.0, 0.0);
    for (rank, value) in sorted.iter().enumerate() {
        let a = coefficient(rank) - coefficient_mean;
        let x = value - value_mean;
        coefficient_squares += a * a;
        value_squares += x * x;
        cross += a * x;
    }
    // 1 − W computed directly, which keeps its precision when W is very close to 1.
    let root = (coefficient_squares * value_squares).sqrt();
    let one_minus_w = (root - cross) * (root + cross) / (coefficient_squares * value_squares);
    let w = 1.0 - one_minus_w;
    Ok(ShapiroWilk {
        w,
        p_value: p_value(w, one_minus_w, count),
    })
}

/// The coefficients a₁ ≥ a₂ ≥ … of the lower half of the sample, largest first.
fn half_coefficients(count: usize) -> Vec<f64> {
    let pairs = count / 2;
    if count == 3 {
        return vec![std::f64::consts::FRAC_1_SQRT_2];
    }
    let n = count as f64;
    let scores: Vec<f64> = (1..=pairs)
        .map(|i| royston_normal_quantile((i as f64 - 0.375) / (n + 0.25)))
        .collect();
    let sum_squares = 2.0 * scores.iter().map(|score| score * score).sum::<f64>();
    let root_sum = sum_squares.sqrt();
    let reciprocal_root_n = 1.0 / n.sqrt();
    let first = polynomial(&FIRST_COEFFICIENT, reciprocal_root_n) - scores[0] / root_sum;
    let mut coefficients = vec![0.0; pairs];
    coefficients[0] = first;
    if count > 5 {
        let second = polynomial(&SECOND_COEFFICIENT, reciprocal_root_n) - scores[1] / root_sum;
        coefficients[1] = second;
        let factor = ((sum_squares - 2.0 * scores[0] * scores[0] - 2.0 * scores[1] * scores[1])
            / (1.0 - 2.0 * first * first - 2.0 * second * second))
            .sqrt();
        for index in 2..pairs {
            coefficients[index] = -scores[index] / factor;
        }
    } else {
        let factor =
            ((sum_squares - 2.0 * scores[0] * scores[0]) / (1.0 - 2.0 * first * first)).sqrt();
        for index in 1..pairs {
            coefficients[index] = -scores[index] / factor;
        }
    }
    coefficients
}

fn p_value(w: f64, one_minus_w: f64, count: usize) -> f64 {
    let n = count as f64;
    if count == 3 {
        // Exact: W of three values is at least ¾. The acos form cannot go negative through
        // rounding, unlike the published asin form (scipy gh-18322).
        if w < 0.75 {
            return 0.0;
        }
        return 1.0 - 6.0 / std::f64::consts::PI * w.sqrt().acos();
    }
    let mut y = one_minus_w.ln();
    let (mean, deviation) = if count <= 11 {
        let limit = polynomial(&LIMIT_SMALL_SAMPLES, n);
        if y >= limit {
            // Beyond the range of the small-sample transformation; scipy reports this floor.
            return 1e-19;
        }
        y = -(limit - y).ln();
        (
            polynomial(&SMALL_MEAN, n),
            polynomial(&SMALL_LOG_SD, n).exp(),
        )
    } else {
        let log_n = n.ln();
        (
            polynomial(&LARGE_MEAN, log_n),
            polynomial(&LARGE_LOG_SD, log_n).exp(),
        )
    };
    royston_normal_upper_tail((y - mean) / deviation)
}

/// c₀ + c₁x + c₂x² + …: Horner's rule on the terms above c₀, then c₀ added last (the order of
/// AS 181.2, kept for bit-level agreement).
fn polynomial(coefficients: &[f64], x: f64) -> f64 {
    let (&constant, rest) = coefficients
        .split_first()
        .expect("at least one coefficient");
    constant + rest.iter().rev().fold(0.0, |sum, &c| (sum + c) * x)
}

/// The normal quantile of Beasley and Springer, algorithm AS 111 (1977), part of AS R94.
fn royston_normal_quantile(probability: f64) -> f64 {
    const CENTRAL_NUMERATOR: [f64; 4] = [
        2.50662823884,
        -18.61500062529,
        41.39119773534,
        -25.44106049637,
    ];
    const CENTRAL_DENOMINATOR: [f64; 4] = [
        -8.47351093090,
        23.08336743743,
        -21.06224101826,
        3.13082909833,
    ];
    const TAIL_NUMERATOR: [f64; 4] = [-2.78718931138, -2.29796479134, 4.85014127135, 2.32121276858];
    const TAIL_DENOMINATOR: [f64; 2] = [3.54388924762, 1.63706781897];
    let offset = probability - 0.5;
    if offset.abs() <= 0.42 {
        let r = offset * offset;
        let [a0, a1, a2, a3] = CENTRAL_NUMERATOR;
        let [b1, b2, b3, b4] = CENTRAL_DENOMINATOR;
        let numerator = offset * (((a3 * r + a2) * r + a1) * r + a0);
        return numerator / ((((b4 * r + b3) * r + b2) * r + b1) * r + 1.0);
    }
    let tail = if offset > 0.0 {
        1.0 - probability
    } else {
        probability
    };
    if tail <= 0.0 {
        return 0.0;
    }
    let r = (-tail.ln()).sqrt();
    let [c0, c1, c2, c3] = TAIL_NUMERATOR;
    let [d1, d2] = TAIL_DENOMINATOR;
    let value = (((c3 * r + c2) * r + c1) * r + c0) / ((d2 * r + d1) * r + 1.0);
    if offset < 0.0 {
        -value
    } else {
        value
    }
}

/// The upper normal tail of Hill, algorithm AS 66 (1973), part of AS R94.
fn royston_normal_upper_tail(x: f64) -> f64 {
    const CENTRAL: [f64; 7] = [
        0.398942280444,
        0.399903438504,
        5.75885480458,
        29.8213557808,
        2.62433121679,
        48.6959930692,
        5.92885724438,
    ];
    const TAIL: [f64; 12] = [
        0.398942280385,
        3.8052e-8,
        1.00000615302,
        3.98064794e-4,
        1.98615381364,
        0.151679116635,
        5.29330324926,
        4.8385912808,
        15.1508972451,
        0.742380924027,
        30.789933034,
        3.99019417011,
    ];
    // NaN goes to the lower side, as in the original.
    let upper = x > 0.0;
    let z = x.abs();
    if !(z <= 7.0 || (upper && z <= 38.0)) {
        return if upper { 0.0 } else { 1.0 };
    }
    let y = 0.5 * z * z;
    let tail = if z <= 1.28 {
        let [a1, a2, a3, a4, a5, a6, a7] = CENTRAL;
        0.5 - z * (a1 - a2 * y / (y + a3 - a4 / (y + a5 + a6 / (y + a7))))
    } else {
        let [b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12] = TAIL;
        b1 * (-y).exp()
            / (z - b2
                + b3 / (z + b4 + b5 / (z - b6 + b7 / (z + b8 - b9 / (z + b10 + b11 / (z + b12))))))
    };
    if upper {
        tail
    } else {
        1.0 - tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_scores_look_normal() {
        let values: Vec<f64> = (1..=50)
            .map(|i| crate::distribution::normal_quantile((f64::from(i) - 0.5) / 50.0))
            .collect();
        let result = shapiro_wilk(&values).unwrap();
        assert!(result.w > 0.98 && result.p_value > 0.5, "{result:?}");
    }

    #[test]
    fn exponential_is_not_normal() {
        let values: Vec<f64> = (1..=200)
            .map(|i| -(1.0 - f64::from(i) / 201.0).ln())
            .collect();
        assert!(shapiro_wilk(&values).unwrap().p_value < 1e-6);
    }

    #[test]
    fn three_values_are_exact() {
        // Equally spaced: W = 1, p = 1.
        let result = shapiro_wilk(&[1.0, 2.0, 3.0]).unwrap();
        assert!((result.w - 1.0).abs() < 1e-7);
        assert!(result.p_value > 0.99);
    }

    #[test]
    fn royston_approximations_are_close_to_exact() {
        for p in [0.001, 0.02, 0.3, 0.5, 0.77, 0.999] {
            let exact = crate::distribution::normal_quantile(p);
            assert!((royston_normal_quantile(p) - exact).abs() < 1e-6, "{p}");
        }
        for x in [-3.0, -0.5, 0.0, 1.0, 1.5, 4.0, 9.0] {
            let exact = crate::distribution::normal_upper_tail(x);
            assert!(
                (royston_normal_upper_tail(x) - exact).abs() < 1e-9 * exact.max(1e-3),
                "{x}"
            );
        }
    }

    #[test]
    fn refuses_constant_or_tiny_samples() {
        assert!(shapiro_wilk(&[1.0, 1.0, 1.0]).is_err());
        assert!(shapiro_wilk(&[1.0, 2.0]).is_err());
    }
}
