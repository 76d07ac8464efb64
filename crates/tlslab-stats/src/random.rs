//! Seeded random variates for the bootstrap, on top of fastrand's generator.
//!
//! Only what the bootstrap needs, each by an exact method: standard normals (Box–Muller),
//! gammas (Marsaglia–Tsang), uniform order statistics (ratio of gammas) and geometric skips
//! (inversion). Every stream is derived from the user's seed, so results never depend on the
//! number of threads.

use fastrand::Rng;

/// The seed used when the caller gives none: "tlslab" in ASCII.
pub const DEFAULT_SEED: u64 = 0x746c_736c_6162;

/// An independent seed for sub-stream `stream` of `seed` (SplitMix64 finalizer), so that
/// samples and chunks of work each get their own reproducible generator.
pub fn stream_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Uniform on (0, 1]: never 0, so its logarithm is finite.
#[inline]
pub(crate) fn open_unit(rng: &mut Rng) -> f64 {
    1.0 - rng.f64()
}

/// A standard normal variate (Box–Muller, one of the pair).
pub(crate) fn standard_normal(rng: &mut Rng) -> f64 {
    let radius = (-2.0 * open_unit(rng).ln()).sqrt();
    let angle = std::f64::consts::TAU * rng.f64();
    radius * angle.cos()
}

/// A Gamma(shape, 1) variate for shape ≥ 1 (Marsaglia and Tsang 2000, exact by rejection;
/// accepts about 98% of proposals whatever the shape, at least 95%). The loop has no count,
/// as every exact rejection sampler: 100 rejections in a row have a probability below
/// 1e-130, so it ends after a few proposals; it calls no crate's numeric routine.
pub(crate) fn gamma(rng: &mut Rng, shape: f64) -> f64 {
    debug_assert!(shape >= 1.0);
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = standard_normal(rng);
        let base = 1.0 + c * x;
        if base <= 0.0 {
            continue;
        }
        let v = base * base * base;
        let u = open_unit(rng);
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// The `rank`-th smallest (1-based) of `count` independent uniforms on (0, 1), which is
/// Beta(rank, count − rank + 1): drawn in O(1) whatever `count` is.
pub(crate) fn uniform_order_statistic(rng: &mut Rng, rank: usize, count: usize) -> f64 {
    debug_assert!(rank >= 1 && rank <= count);
    let below = gamma(rng, rank as f64);
    let above = gamma(rng, (count - rank + 1) as f64);
    below / (below + above)
}

/// The smallest of `count` uniforms on (`lower`, 1): the next order statistic after `lower`.
pub(crate) fn next_uniform_order_statistic(rng: &mut Rng, lower: f64, count: usize) -> f64 {
    // 1 − V^{1/count} = −expm1(ln V / count), which keeps its precision for large `count`.
    let fraction = -(open_unit(rng).ln() / count as f64).exp_m1();
    lower + (1.0 - lower) * fraction
}

/// Trials up to and including the first success, with `log_failure` = ln(1 − p): the gap
/// between successes of a Bernoulli(p) sequence (geometric on 1, 2, …), by inversion.
#[inline]
pub(crate) fn geometric_gap(rng: &mut Rng, log_failure: f64) -> f64 {
    (open_unit(rng).ln() / log_failure).floor() + 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(values: &[f64]) -> (f64, f64) {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let variance =
            values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / values.len() as f64;
        (mean, variance)
    }

    #[test]
    fn streams_differ() {
        assert_ne!(stream_seed(1, 0), stream_seed(1, 1));
        assert_ne!(stream_seed(1, 0), stream_seed(2, 0));
    }

    #[test]
    fn normal_moments() {
        let mut rng = Rng::with_seed(3);
        let values: Vec<f64> = (0..100_000).map(|_| standard_normal(&mut rng)).collect();
        let (mean, variance) = moments(&values);
        assert!(mean.abs() < 0.02);
        assert!((variance - 1.0).abs() < 0.02);
    }

    #[test]
    fn gamma_moments() {
        let mut rng = Rng::with_seed(5);
        for shape in [1.0, 3.5, 5e5] {
            let values: Vec<f64> = (0..50_000).map(|_| gamma(&mut rng, shape)).collect();
            let (mean, variance) = moments(&values);
            assert!((mean / shape - 1.0).abs() < 0.03, "{shape} {mean}");
            assert!((variance / shape - 1.0).abs() < 0.05, "{shape} {variance}");
        }
    }

    #[test]
    fn order_statistics_moments() {
        let mut rng = Rng::with_seed(9);
        // The 3rd of 10 uniforms: Beta(3, 8), mean 3/11.
        let values: Vec<f64> = (0..50_000)
            .map(|_| uniform_order_statistic(&mut rng, 3, 10))
            .collect();
        let (mean, variance) = moments(&values);
        assert!((mean - 3.0 / 11.0).abs() < 0.005);
        assert!((variance - 24.0 / (121.0 * 12.0)).abs() < 0.001);
        // The next one after 0.5 among 4 uniforms on (0.5, 1): mean 0.5 + 0.5/5.
        let next: Vec<f64> = (0..50_000)
            .map(|_| next_uniform_order_statistic(&mut rng, 0.5, 4))
            .collect();
        let (mean, _) = moments(&next);
        assert!((mean - 0.6).abs() < 0.003);
    }

    #[test]
    fn geometric_gap_mean() {
        let mut rng = Rng::with_seed(11);
        let p: f64 = 0.01;
        let log_failure = (-p).ln_1p();
        let values: Vec<f64> = (0..100_000)
            .map(|_| geometric_gap(&mut rng, log_failure))
            .collect();
        let (mean, _) = moments(&values);
        assert!((mean - 100.0).abs() < 1.5);
        assert!(values.iter().all(|&gap| gap >= 1.0));
    }
}
