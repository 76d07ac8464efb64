//! Thresholds checked against a stored run: which Config broke which threshold, and by how
//! much (`tlslab run --threshold`, exit code 4).

use tlslab_core::threshold::{Measure, Statistic, Threshold};
use tlslab_stats::quantile::quantile;
use tlslab_store::Store;

use crate::{ReportError, RunSummary};

/// A threshold one Config did not keep.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Breach {
    /// The Config's label.
    pub config: String,
    /// The threshold as the user wrote it (`handshake p99 < 50ms`).
    pub threshold: String,
    /// What the Config measured, in words with its unit.
    pub measured: String,
}

fn statistic(sorted: &[f64], statistic: Statistic) -> f64 {
    match statistic {
        Statistic::Min => sorted[0],
        Statistic::Max => sorted[sorted.len() - 1],
        Statistic::Median => quantile(sorted, 0.5),
        Statistic::Quantile(q) => quantile(sorted, q),
        Statistic::Mean => sorted.iter().sum::<f64>() / sorted.len() as f64,
    }
}

/// A duration in nanoseconds, in the unit that reads best.
fn time(nanos: f64) -> String {
    if nanos < 1e3 {
        format!("{nanos:.0} ns")
    } else if nanos < 1e6 {
        format!("{:.1} µs", nanos / 1e3)
    } else if nanos < 1e9 {
        format!("{:.3} ms", nanos / 1e6)
    } else {
        format!("{:.3} s", nanos / 1e9)
    }
}

/// Every (Config, threshold) pair in scope that does not hold. A Config without what a
/// threshold measures (no successful handshake, no rate) breaks it.
pub fn check(
    store: &Store,
    summary: &RunSummary,
    thresholds: &[Threshold],
) -> Result<Vec<Breach>, ReportError> {
    let rows = store.configs()?;
    let mut breaches = Vec::new();
    for (row, config) in rows.iter().zip(&summary.configs) {
        for threshold in thresholds {
            if threshold
                .scope
                .as_deref()
                .is_some_and(|scope| !config.label.contains(scope))
            {
                continue;
            }
            let (value, measured) = match threshold.measure {
                Measure::Time {
                    phase,
                    statistic: wanted,
                    limit_ns,
                } => {
                    let mut values = store.phase_values(row.id, phase.name())?;
                    values.sort_by(f64::total_cmp);
                    if values.is_empty() {
                        (None, format!("no successful {}", phase.name()))
                    } else {
                        let value = statistic(&values, wanted);
                        (
                            Some((value, limit_ns)),
                            format!("{} {wanted} {}", phase.name(), time(value)),
                        )
                    }
                }
                Measure::Errors { limit } => {
                    let failed: i64 = config.errors.values().sum();
                    let share = failed as f64 / config.attempted.max(1) as f64;
                    (
                        Some((share, limit)),
                        format!(
                            "errors {:.2}% ({failed} of {})",
                            share * 100.0,
                            config.attempted
                        ),
                    )
                }
                Measure::Rate { limit } => match config.handshakes_per_second {
                    Some(rate) => (Some((rate, limit)), format!("rate {rate:.1}/s")),
                    None => (None, "no rate (nothing succeeded)".to_string()),
                },
            };
            let kept = value.is_some_and(|(value, limit)| threshold.comparison.holds(value, limit));
            if !kept {
                breaches.push(Breach {
                    config: config.label.clone(),
                    threshold: threshold.to_string(),
                    measured,
                });
            }
        }
    }
    Ok(breaches)
}
