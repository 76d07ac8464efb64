//! Sample quantiles, the way numpy computes them by default.

/// Quantile `q` (between 0 and 1) of a sample already sorted in ascending order, by linear
/// interpolation between order statistics: Hyndman and Fan's type 7, numpy's `'linear'`.
///
/// Type 7 is what numpy, R and spreadsheets report by default, so the numbers agree with the
/// tools a reader will check them with. Returns NaN for an empty sample; `q` is clamped to
/// [0, 1].
///
/// ```
/// let sorted = [1.0, 2.0, 3.0, 4.0];
/// assert_eq!(tlslab_stats::quantile(&sorted, 0.5), 2.5);
/// assert_eq!(tlslab_stats::quantile(&sorted, 0.25), 1.75);
/// ```
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let count = sorted.len();
    if count == 0 || q.is_nan() {
        return f64::NAN;
    }
    let q = q.clamp(0.0, 1.0);
    let position = (count - 1) as f64 * q;
    let below = position.floor();
    let lower_index = below as usize;
    let upper_index = (lower_index + 1).min(count - 1);
    let fraction = position - below;
    interpolate(sorted[lower_index], sorted[upper_index], fraction)
}

/// numpy's `_lerp`: interpolating from the nearer end keeps the result exact at both ends and
/// monotone in `fraction`, and matching it bit for bit keeps our quantiles equal to numpy's.
fn interpolate(lower: f64, upper: f64, fraction: f64) -> f64 {
    let difference = upper - lower;
    if fraction >= 0.5 {
        upper - difference * (1.0 - fraction)
    } else {
        lower + difference * fraction
    }
}

/// A distribution-free confidence interval for quantile `q` of the population a sorted
/// sample came from: the order statistics `[x₍ₗ₎, x₍ᵤ₎]` whose ranks the binomial
/// distribution of "samples at or below the quantile", Binomial(n, q), puts around nq with
/// at least `confidence` between them (the classic order-statistic interval; no assumption on
/// the shape of the distribution, which for handshake tails is anything but normal).
///
/// `None` when the sample is too small for such an interval: at q = 0.99 and 95% the upper
/// end needs about 300 samples, since below that even the largest sample has too great a
/// chance of lying under the true p99.
///
/// ```
/// let sorted: Vec<f64> = (1..=1000).map(f64::from).collect();
/// let (low, high) = tlslab_stats::quantile::quantile_interval(&sorted, 0.99, 0.95).unwrap();
/// assert!(low < 990.0 && 990.0 < high && high <= 1000.0);
/// assert!(tlslab_stats::quantile::quantile_interval(&sorted[..100], 0.99, 0.95).is_none());
/// ```
pub fn quantile_interval(sorted: &[f64], q: f64, confidence: f64) -> Option<(f64, f64)> {
    // Bounded (issue 31): statrs' binomial cdf is its incomplete beta function, a continued
    // fraction cut at 140 terms, and each walk below moves one rank per step and stops at 1
    // or n; in practice it takes about 2·1.96·√(nq(1 − q)) steps (1,234 for p99 of ten
    // million values, 12,334 for a billion; the intervals checked against the normal
    // approximation of the binomial up to a billion values).
    use statrs::distribution::{Binomial, DiscreteCDF};
    let count = sorted.len();
    if count == 0 || !(0.0..1.0).contains(&q) || q <= 0.0 || !(0.0..1.0).contains(&confidence) {
        return None;
    }
    let below = Binomial::new(q, count as u64).ok()?;
    let tail = (1.0 - confidence) / 2.0;
    // x₍ⱼ₎ (1-based) lies at or below the quantile when at least j samples do: P(B ≥ j).
    // The interval [x₍ₗ₎, x₍ᵤ₎] misses it below with P(B ≤ l − 1) and above with P(B ≥ u),
    // so l is the largest rank with cdf(l − 1) ≤ tail and u the smallest with cdf(u − 1) ≥
    // 1 − tail. The ranks are searched from the expected one outwards.
    let expected = (q * count as f64).floor() as u64;
    let mut lower = expected.max(1);
    while lower > 1 && below.cdf(lower - 1) > tail {
        lower -= 1;
    }
    if below.cdf(lower - 1) > tail {
        return None;
    }
    let mut upper = expected.max(1);
    while upper <= count as u64 && below.cdf(upper - 1) < 1.0 - tail {
        upper += 1;
    }
    if upper > count as u64 {
        return None;
    }
    Some((sorted[lower as usize - 1], sorted[upper as usize - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_statistic_interval_of_the_tables() {
        // The textbook 95% interval for the median of 100 samples is x(40) to x(61).
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile_interval(&sorted, 0.5, 0.95), Some((40.0, 61.0)));
        // p99 needs enough samples for its upper end; with them, the interval holds p99.
        assert_eq!(quantile_interval(&sorted, 0.99, 0.95), None);
        let many: Vec<f64> = (1..=10_000).map(f64::from).collect();
        let (low, high) = quantile_interval(&many, 0.99, 0.95).unwrap();
        assert!((9_870.0..9_900.0).contains(&low) && (9_900.0..9_930.0).contains(&high));
        // Coverage, by simulation: uniform samples of 500, the true p99 is 0.99.
        let mut rng = fastrand::Rng::with_seed(7);
        let mut covered = 0;
        let mut tried = 0;
        for _ in 0..400 {
            let mut sample: Vec<f64> = (0..500).map(|_| rng.f64()).collect();
            sample.sort_by(f64::total_cmp);
            if let Some((low, high)) = quantile_interval(&sample, 0.99, 0.95) {
                tried += 1;
                covered += usize::from(low <= 0.99 && 0.99 <= high);
            }
        }
        assert_eq!(tried, 400);
        assert!(covered >= 367, "{covered} of 400 covered"); // 95% less three standard errors
    }

    #[test]
    fn ends_and_middle() {
        let sorted = [10.0, 20.0, 30.0];
        assert_eq!(quantile(&sorted, 0.0), 10.0);
        assert_eq!(quantile(&sorted, 1.0), 30.0);
        assert_eq!(quantile(&sorted, 0.5), 20.0);
        assert_eq!(quantile(&sorted, 0.75), 25.0);
    }

    #[test]
    fn single_and_empty() {
        assert_eq!(quantile(&[7.0], 0.3), 7.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn type_seven_matches_numpy() {
        // numpy.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95) == 9.55
        let sorted: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((quantile(&sorted, 0.95) - 9.55).abs() < 1e-12);
        assert!((quantile(&sorted, 0.9) - 9.1).abs() < 1e-12);
    }
}
