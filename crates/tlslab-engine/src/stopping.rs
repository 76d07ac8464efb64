//! Sequential stopping (`--until-ci`): a Config stops once the 95% confidence interval of its
//! median is narrow enough relative to the median.
//!
//! The interval is the distribution-free one from order statistics (the ranks
//! n/2 ∓ 1.96·√n/2 of the sorted sample, the normal approximation to the binomial): it needs
//! no resampling, so it can be checked after every round at any sample size. The check runs
//! only between rounds, when every active Config has run the same number of blocks, so every
//! Config still sees the same drift; a Config needs at least [`MINIMUM_SAMPLES`] measured
//! handshakes.

use tlslab_core::EarlyStop;

/// Below this many samples the order-statistic interval is too coarse to trust.
pub const MINIMUM_SAMPLES: usize = 20;

/// The 95% CI half-width of the median, relative to the median, or `None` when there are too
/// few samples or the median is 0.
pub fn relative_median_half_width(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < MINIMUM_SAMPLES {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let spread = 1.959_963_984_540_054 * (n as f64).sqrt() / 2.0;
    let half = n as f64 / 2.0;
    // 1-based ranks, clamped to the sample.
    let lower = ((half - spread).floor().max(1.0) as usize).min(n);
    let upper = ((half + spread).ceil().max(1.0) as usize).min(n);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    if median <= 0.0 {
        return None;
    }
    Some((sorted[upper - 1] - sorted[lower - 1]) / 2.0 / median)
}

/// Each Config's measured handshakes so far, and which Configs met the target.
#[derive(Debug)]
pub struct EarlyStopping {
    target: Option<f64>,
    measured: Vec<Vec<f64>>,
    finished: Vec<bool>,
}

impl EarlyStopping {
    /// For `configs` Configs; without a `target` no Config ever stops early.
    pub fn new(configs: usize, target: Option<f64>) -> EarlyStopping {
        EarlyStopping {
            target,
            measured: vec![Vec::new(); configs],
            finished: vec![false; configs],
        }
    }

    /// Adds a trial's measured handshake durations.
    pub fn add(&mut self, config: usize, handshakes: Vec<f64>) {
        if let Some(measured) = self.measured.get_mut(config) {
            measured.extend(handshakes);
        }
    }

    /// Whether `config` met the target and runs no more blocks.
    pub fn is_finished(&self, config: usize) -> bool {
        self.finished.get(config).copied().unwrap_or(false)
    }

    /// Judges every active Config after `round`: those whose interval is narrow enough
    /// finish now.
    pub fn judge(&mut self, round: u32) -> Vec<EarlyStop> {
        let Some(target) = self.target else {
            return Vec::new();
        };
        let mut stopped = Vec::new();
        for (config, values) in self.measured.iter().enumerate() {
            if self.finished[config] {
                continue;
            }
            if let Some(width) = relative_median_half_width(values) {
                if width <= target {
                    self.finished[config] = true;
                    stopped.push(EarlyStop {
                        config,
                        round,
                        samples: values.len(),
                        relative_half_width: width,
                    });
                }
            }
        }
        stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize) -> Vec<f64> {
        let mut random = fastrand::Rng::with_seed(3);
        (0..n).map(|_| 100.0 + random.f64() * 20.0).collect()
    }

    #[test]
    fn narrows_with_more_samples_and_needs_a_minimum() {
        assert_eq!(
            relative_median_half_width(&values(MINIMUM_SAMPLES - 1)),
            None
        );
        let small = relative_median_half_width(&values(50)).unwrap();
        let large = relative_median_half_width(&values(5000)).unwrap();
        assert!(large < small / 5.0, "{small} vs {large}");
        // Uniform on [100, 120]: the median's CI half-width at n = 5000 is about
        // 1.96 · 20 / (2·√5000) ≈ 0.28, i.e. 0.25% of 110.
        assert!((0.0015..0.0040).contains(&large), "{large}");
        assert_eq!(relative_median_half_width(&vec![0.0; 100]), None);
    }

    #[test]
    fn configs_finish_once_when_their_interval_meets_the_target() {
        let mut stopping = EarlyStopping::new(2, Some(0.01));
        stopping.add(0, values(5000));
        stopping.add(1, values(50));
        let stopped = stopping.judge(3);
        assert_eq!(stopped.len(), 1);
        assert_eq!(
            (stopped[0].config, stopped[0].round, stopped[0].samples),
            (0, 3, 5000)
        );
        assert!(stopping.is_finished(0) && !stopping.is_finished(1));
        assert!(
            stopping.judge(4).is_empty(),
            "a finished Config is not judged again"
        );
        let mut never = EarlyStopping::new(1, None);
        never.add(0, values(5000));
        assert!(never.judge(1).is_empty());
    }
}
