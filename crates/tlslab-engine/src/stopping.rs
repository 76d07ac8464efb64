//! Sequential stopping (`--until-ci`): a Config stops once the 95% confidence interval of its
//! median is narrow enough relative to the median.
//!
//! The interval is the distribution-free one from order statistics (the ranks
//! n/2 ∓ 1.96·√n/2 of the sorted sample, the normal approximation to the binomial): it needs
//! no resampling, so it can be checked after every round at any sample size. The check runs
//! only between rounds, when every active Config has run the same number of blocks, so every
//! Config still sees the same drift; a Config needs at least [`MINIMUM_SAMPLES`] measured
//! handshakes.
//!
//! Handshake times are kept in a histogram per Config (HdrHistogram, three significant
//! digits: order statistics to 0.1%, far finer than any target a run takes), so memory
//! stays bounded however many handshakes a run measures.

use hdrhistogram::Histogram;
use tlslab_core::EarlyStop;

/// Below this many samples the order-statistic interval is too coarse to trust.
pub const MINIMUM_SAMPLES: u64 = 20;

/// Handshake durations in nanoseconds, in bounded memory.
#[derive(Debug, Clone)]
pub struct Durations(Histogram<u64>);

impl Default for Durations {
    fn default() -> Durations {
        // Three significant digits; the range grows as values arrive.
        Durations(Histogram::new(3).unwrap_or_else(|_| {
            unreachable!("3 significant digits is within HdrHistogram's 0..=5")
        }))
    }
}

impl Durations {
    /// Adds one handshake's duration (0 is counted as 1 ns: the histogram has no zero).
    pub fn record(&mut self, nanos: u64) {
        // Auto-resizing histograms take any u64; saturate rather than fail if that changes.
        let _ = self.0.record(nanos.max(1));
    }

    /// Adds every duration `other` holds.
    pub fn add(&mut self, other: &Durations) {
        let _ = self.0.add(&other.0);
    }

    /// How many durations it holds.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `rank`-th smallest value (1-based), to the histogram's precision.
    fn ranked(&self, rank: u64) -> f64 {
        // Half a rank below: the histogram rounds the count at a quantile up, and rank / n
        // in floating point may land a hair above the rank.
        let quantile = (rank as f64 - 0.5) / self.0.len().max(1) as f64;
        self.0.value_at_quantile(quantile.clamp(0.0, 1.0)) as f64
    }
}

/// The 95% CI half-width of the median, relative to the median, or `None` when there are too
/// few samples or the median is 0.
pub fn relative_median_half_width(values: &Durations) -> Option<f64> {
    let n = values.len();
    if n < MINIMUM_SAMPLES {
        return None;
    }
    let spread = 1.959_963_984_540_054 * (n as f64).sqrt() / 2.0;
    let half = n as f64 / 2.0;
    // 1-based ranks, clamped to the sample.
    let lower = ((half - spread).floor().max(1.0) as u64).min(n);
    let upper = ((half + spread).ceil().max(1.0) as u64).min(n);
    let median = if n % 2 == 1 {
        values.ranked(n / 2 + 1)
    } else {
        (values.ranked(n / 2) + values.ranked(n / 2 + 1)) / 2.0
    };
    if median <= 0.0 {
        return None;
    }
    Some((values.ranked(upper) - values.ranked(lower)) / 2.0 / median)
}

/// Each Config's measured handshakes so far, and which Configs met the target.
#[derive(Debug)]
pub struct EarlyStopping {
    target: Option<f64>,
    measured: Vec<Durations>,
    finished: Vec<bool>,
}

impl EarlyStopping {
    /// For `configs` Configs; without a `target` no Config ever stops early.
    pub fn new(configs: usize, target: Option<f64>) -> EarlyStopping {
        EarlyStopping {
            target,
            measured: vec![Durations::default(); configs],
            finished: vec![false; configs],
        }
    }

    /// Whether handshake times are wanted at all (only with a target).
    pub fn is_active(&self) -> bool {
        self.target.is_some()
    }

    /// Adds a trial's measured handshake durations.
    pub fn add(&mut self, config: usize, handshakes: &Durations) {
        if let (Some(measured), true) = (self.measured.get_mut(config), self.target.is_some()) {
            measured.add(handshakes);
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
                        samples: values.len() as usize,
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

    fn values(n: usize) -> Durations {
        let mut random = fastrand::Rng::with_seed(3);
        let mut durations = Durations::default();
        for _ in 0..n {
            // Uniform on [100, 120] µs, in nanoseconds.
            durations.record(100_000 + random.u64(0..20_000));
        }
        durations
    }

    #[test]
    fn narrows_with_more_samples_and_needs_a_minimum() {
        assert_eq!(
            relative_median_half_width(&values(MINIMUM_SAMPLES as usize - 1)),
            None
        );
        let small = relative_median_half_width(&values(50)).unwrap();
        let large = relative_median_half_width(&values(5000)).unwrap();
        assert!(large < small / 5.0, "{small} vs {large}");
        // Uniform on [100, 120]: the median's CI half-width at n = 5000 is about
        // 1.96 · 20 / (2·√5000) ≈ 0.28, i.e. 0.25% of 110.
        assert!((0.0015..0.0040).contains(&large), "{large}");
    }

    #[test]
    fn order_statistics_match_a_sorted_sample_to_the_histograms_precision() {
        let mut durations = Durations::default();
        let mut sorted: Vec<u64> = (1..=1001).map(|i| i * 997 % 1_000_003 + 50_000).collect();
        for &value in &sorted {
            durations.record(value);
        }
        sorted.sort_unstable();
        for rank in [1, 10, 500, 501, 990, 1001] {
            let exact = sorted[rank as usize - 1] as f64;
            let approximate = durations.ranked(rank);
            assert!(
                (approximate - exact).abs() <= exact * 0.001,
                "rank {rank}: {approximate} vs {exact}"
            );
        }
    }

    #[test]
    fn configs_finish_once_when_their_interval_meets_the_target() {
        let mut stopping = EarlyStopping::new(2, Some(0.01));
        stopping.add(0, &values(5000));
        stopping.add(1, &values(50));
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
        never.add(0, &values(5000));
        assert!(never.judge(1).is_empty());
    }
}
