//! Sample size: how many handshakes per Config a comparison needs to detect a relative
//! difference of medians with a given power, from a pilot's spread.
//!
//! Handshake times are skewed and roughly log-normal, so a relative difference `d` is a shift
//! of ln(1 + d) on the log scale, where the spread `σ` is the pilot's standard deviation of
//! log values. The two-sample normal approximation gives
//! `n = 2 (z₁₋α/₂ + z₁₋β)² σ² / ln(1 + d)²` per group, and tlslab's verdicts use the
//! Mann-Whitney test, whose efficiency relative to the t-test is 3/π for normal data: the
//! count is divided by it (Lehmann, Nonparametrics, 2.4). A planning figure, not a promise:
//! heavy tails need more.

// statrs' closed-form inverse error function: bounded (the table in distribution.rs).
use crate::distribution::normal_quantile;

/// Handshakes per group to detect a relative difference `relative` (0.02 for 2%) between two
/// groups whose log values spread as `sigma_log`, two-sided at `alpha`, with `power`.
pub fn handshakes_needed(sigma_log: f64, relative: f64, alpha: f64, power: f64) -> Option<u64> {
    let usable = sigma_log.is_finite()
        && sigma_log >= 0.0
        && relative > 0.0
        && relative.is_finite()
        && alpha > 0.0
        && alpha < 1.0
        && power > 0.0
        && power < 1.0;
    if !usable {
        return None;
    }
    let shift = (1.0 + relative).ln();
    let z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power);
    let normal = 2.0 * z * z * sigma_log * sigma_log / (shift * shift);
    let mann_whitney = normal / (3.0 / std::f64::consts::PI);
    let needed = mann_whitney.ceil().max(2.0);
    (needed < 1e15).then_some(needed as u64)
}

/// The standard deviation of the logs of positive `values` (others are left out).
pub fn log_spread(values: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = values
        .iter()
        .filter(|value| **value > 0.0 && value.is_finite())
        .map(|value| value.ln())
        .collect();
    (logs.len() >= 2).then(|| crate::standard_deviation(&logs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_textbook_case_and_its_limits() {
        // σ = 0.1 on the log scale, 5% to detect, α = 0.05, power 0.8: the normal formula
        // gives 2 · 7.849 · 0.01 / 0.002380 = 65.9, and Mann-Whitney needs π/3 of that.
        let n = handshakes_needed(0.1, 0.05, 0.05, 0.8).unwrap();
        assert_eq!(n, 70);
        // Half the difference, four times the handshakes.
        let smaller = handshakes_needed(0.1, 0.025, 0.05, 0.8).unwrap();
        assert!((smaller as f64 / n as f64 - 3.9).abs() < 0.2, "{smaller}");
        assert_eq!(handshakes_needed(0.1, 0.0, 0.05, 0.8), None);
        assert_eq!(handshakes_needed(0.1, 0.05, 0.05, 1.0), None);
        assert!((log_spread(&[1.0, std::f64::consts::E]).unwrap() - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(log_spread(&[1.0, -1.0]), None);
    }
}
