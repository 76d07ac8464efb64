//! Comparisons between Configs (or two sample files): numbers from `tlslab-stats`, words here.

use std::fmt::Write;

use serde::Serialize;
use tlslab_core::terminal::escape;
use tlslab_stats::{
    compare_all, CompareOptions, Comparison, ComparisonSet, KruskalWallis, PValueMethod,
};
use tlslab_store::{ConfigRow, Store, StoreError};

use crate::verdict::{Verdict, VerdictKind};
use crate::ReportError;

/// Each Config against a baseline on one metric: every comparison's statistics, and the
/// dimensions in which each Config differs from the baseline (none for sample files).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparisons {
    /// The baseline's label.
    pub baseline: String,
    /// The metric compared (`handshake`, `ttfb`, ...).
    pub metric: String,
    /// In the order of the Configs, the baseline left out.
    pub comparisons: Vec<Compared>,
    /// Whether the Configs differ at all; `None` with two, where it repeats the comparison.
    pub kruskal_wallis: Option<KruskalWallis>,
}

/// One Config against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compared {
    /// The statistics, flattened into the JSON object beside `dimensions`.
    #[serde(flatten)]
    pub comparison: Comparison,
    /// Every dimension in which the Config differs from the baseline (by `--by` name): the
    /// difference is theirs together, never one's alone unless it is the only one.
    pub dimensions: Vec<String>,
}

impl Comparisons {
    /// `set` on `metric`, each comparison named by the dimensions in which its Config differs
    /// from the baseline among `configs` (found by label; none when no Config has it).
    pub fn new(set: ComparisonSet, metric: &str, configs: &[ConfigRow]) -> Comparisons {
        let find = |label: &str| configs.iter().find(|config| config.label == label);
        let baseline = find(&set.baseline);
        Comparisons {
            comparisons: set
                .comparisons
                .into_iter()
                .map(|comparison| Compared {
                    dimensions: match (baseline, find(&comparison.other)) {
                        (Some(baseline), Some(other)) => {
                            crate::dimensions::differences(baseline, other)
                                .into_iter()
                                .map(String::from)
                                .collect()
                        }
                        _ => Vec::new(),
                    },
                    comparison,
                })
                .collect(),
            baseline: set.baseline,
            metric: metric.to_string(),
            kruskal_wallis: set.kruskal_wallis,
        }
    }

    /// Each comparison as the verdict the summary prints.
    pub fn verdicts(&self, alpha: f64) -> Vec<Verdict> {
        self.comparisons
            .iter()
            .map(|compared| {
                let comparison = &compared.comparison;
                Verdict {
                    kind: VerdictKind::Config,
                    dimensions: compared.dimensions.clone(),
                    other: comparison.other.clone(),
                    baseline: comparison.baseline.clone(),
                    metric: self.metric.clone(),
                    verdict: verdict_in_words(
                        comparison.ratio_median,
                        comparison.detects_difference(alpha),
                        Some(comparison.mann_whitney_p_holm),
                        alpha,
                    ),
                    ratio: comparison.ratio_median,
                    ratio_ci: comparison.ratio_median_ci,
                    p_value: Some(comparison.mann_whitney_p_holm),
                    strata: None,
                    depends_on: Vec::new(),
                }
            })
            .collect()
    }
}

/// Compares every Config's `metric` with the baseline's (default: the first Config). Values
/// are the successful measured samples, in milliseconds.
pub fn compare_store(
    store: &Store,
    baseline: Option<&str>,
    metric: &str,
    options: &CompareOptions,
) -> Result<ComparisonSet, ReportError> {
    let configs = store.configs()?;
    let baseline_index = match baseline {
        None => 0,
        Some(label) => {
            // The full label, or the name the summary shows it by.
            let names = crate::Names::of_store(store)?;
            let label = match configs.iter().any(|c| c.label == label) {
                true => label,
                false => names.label_of(label).unwrap_or(label),
            };
            configs
                .iter()
                .position(|c| c.label == label)
                .ok_or_else(|| {
                    let quoted = |name: &dyn Fn(&str) -> String| {
                        configs
                            .iter()
                            .map(|c| format!("'{}'", escape(&name(&c.label))))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    let shown = quoted(&|label| names.name(label));
                    let full = quoted(&|label| label.to_string());
                    ReportError::Input {
                        message: format!("no config is labelled '{}'", escape(label)),
                        hint: if shown == full {
                            format!("use one of: {full}")
                        } else {
                            format!(
                                "use one of the names the summary shows: {shown}; or a full \
                                 label: {full}"
                            )
                        },
                    }
                })?
        }
    };
    let groups = metric_groups(store, &configs, metric)?;
    compare_all(baseline_index, &groups, options).map_err(|source| ReportError::Compare {
        metric: metric.to_string(),
        hint: "every config needs at least 2 successful measured samples of this metric",
        source,
    })
}

/// Each Config's label and `metric` values in milliseconds, in the store's order.
fn metric_groups(
    store: &Store,
    configs: &[tlslab_store::ConfigRow],
    metric: &str,
) -> Result<Vec<(String, Vec<f64>)>, StoreError> {
    // Every Config's in one read (a database's run in one pass over its samples).
    let mut by_config = store.phase_values_by_config(metric)?;
    let mut groups = Vec::with_capacity(configs.len());
    for config in configs {
        let values: Vec<f64> = by_config
            .remove(&config.id)
            .unwrap_or_default()
            .into_iter()
            .map(|nanos| nanos / 1e6)
            .collect();
        groups.push((config.label.clone(), values));
    }
    Ok(groups)
}

/// What a run's summary compares: every Config with at least 2 successful measured samples
/// of `metric` against the first such Config. A Config whose handshakes all failed has
/// nothing to compare, and must not take the comparison of the others with it; its label is
/// returned among those left out.
pub fn compare_comparable(
    store: &Store,
    metric: &str,
    options: &CompareOptions,
) -> Result<(ComparisonSet, Vec<String>), ReportError> {
    let configs = store.configs()?;
    compare_groups(metric_groups(store, &configs, metric)?, metric, options)
}

/// [`compare_comparable`] of each Config's label and values of `metric` (ms), read already.
pub fn compare_groups(
    groups: Vec<(String, Vec<f64>)>,
    metric: &str,
    options: &CompareOptions,
) -> Result<(ComparisonSet, Vec<String>), ReportError> {
    let (groups, left_out): (Vec<_>, Vec<_>) = groups
        .into_iter()
        .partition(|(_, values)| values.len() >= 2);
    let left_out: Vec<String> = left_out.into_iter().map(|(label, _)| label).collect();
    if groups.len() < 2 && !left_out.is_empty() {
        return Err(ReportError::Input {
            message: format!(
                "fewer than 2 configs have 2 or more successful measured samples of {metric} \
                 (too few: {})",
                escape(&left_out.join(", "))
            ),
            hint: "see why their attempts failed above".into(),
        });
    }
    let set = compare_all(0, &groups, options).map_err(|source| ReportError::Compare {
        metric: metric.to_string(),
        hint: "a comparison needs at least 2 configs with 2 or more successful measured samples",
        source,
    })?;
    Ok((set, left_out))
}

pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        format!("= {p:.3}")
    }
}

/// The comparison as text: one verdict line per Config (naming the dimensions in which it
/// differs from the baseline, when it is a Config), details indented below it; labels and
/// file names escaped for a terminal.
pub fn render_comparisons(set: &Comparisons, unit: &str) -> String {
    render_named_comparisons(set, unit, &|label| label.to_string())
}

/// [`render_comparisons`] of a store's Configs, each by the name its summary shows (the
/// words every Config shares said once, first).
pub fn render_store_comparisons(set: &Comparisons, unit: &str, names: &crate::Names) -> String {
    names.common_line() + &render_named_comparisons(set, unit, &|label| names.name(label))
}

/// [`render_comparisons`] with each Config named by `name`.
pub(crate) fn render_named_comparisons(
    set: &Comparisons,
    unit: &str,
    name: &dyn Fn(&str) -> String,
) -> String {
    // Names are looked up by the labels as stored, then escaped with the rest of the text.
    let named = |label: &str| escape(&name(label)).into_owned();
    let unit = escape(unit);
    let escaped = crate::terminal::comparisons(set);
    let mut out = String::new();
    let Some(first) = escaped.comparisons.first() else {
        return out;
    };
    let metric = &escaped.metric;
    let _ = writeln!(
        out,
        "{metric}: each config against baseline '{}' (n = {}, median {:.4} {unit})",
        named(&set.baseline),
        first.comparison.n_baseline,
        first.comparison.median_baseline
    );
    for (
        Compared {
            comparison,
            dimensions,
        },
        stored,
    ) in escaped.comparisons.iter().zip(&set.comparisons)
    {
        let differs = if dimensions.is_empty() {
            String::new()
        } else {
            format!(" [{}]", crate::dimensions::joined(dimensions))
        };
        let _ = writeln!(
            out,
            "  {}{differs}: {metric} {}",
            named(&stored.comparison.other),
            comparison.verdict
        );
        let method = match comparison.mann_whitney_method {
            PValueMethod::Exact => "exact",
            PValueMethod::Asymptotic => "asymptotic",
        };
        let _ = writeln!(
            out,
            "      median {:.4} vs {:.4} {unit}, difference {:+.4} (95% CI {:+.4} to {:+.4}), ratio {:.3} (95% CI {:.3}–{:.3})",
            comparison.median_other,
            comparison.median_baseline,
            comparison.diff_median,
            comparison.diff_median_ci[0],
            comparison.diff_median_ci[1],
            comparison.ratio_median,
            comparison.ratio_median_ci[0],
            comparison.ratio_median_ci[1],
        );
        let _ = writeln!(
            out,
            "      Mann-Whitney U = {:.1}, p {} ({method}), Holm p {}, rank-biserial {:+.3}; Welch t = {:.2}, df = {:.1}, p {}; Hedges' g = {:+.3}; mean difference {:+.4} (95% CI {:+.4} to {:+.4})",
            comparison.mann_whitney_u,
            p_value(comparison.mann_whitney_p),
            p_value(comparison.mann_whitney_p_holm),
            comparison.rank_biserial,
            comparison.welch_t,
            comparison.welch_df,
            p_value(comparison.welch_p),
            comparison.hedges_g,
            comparison.diff_mean,
            comparison.diff_mean_ci[0],
            comparison.diff_mean_ci[1],
        );
    }
    if let Some(kruskal) = &set.kruskal_wallis {
        let _ = writeln!(
            out,
            "  Kruskal-Wallis across {} configs: H = {:.2}, df = {}, p {}",
            kruskal.df + 1,
            kruskal.h,
            kruskal.df,
            p_value(kruskal.p_value)
        );
    }
    out
}

/// A ratio of medians (other / baseline) in words: a share when the change is under twice,
/// a factor above, and "no detectable difference" when the verdict rule found none.
pub(crate) fn change_in_words(ratio: f64, detected: bool) -> String {
    if !detected {
        return "no detectable difference".into();
    }
    if !(ratio.is_finite() && ratio > 0.0) {
        return "different".into();
    }
    if ratio >= 2.0 {
        format!("{ratio:.2}× slower")
    } else if ratio >= 1.0 {
        format!("{:.1}% slower", (ratio - 1.0) * 100.0)
    } else if ratio > 0.5 {
        format!("{:.1}% faster", (1.0 - ratio) * 100.0)
    } else {
        format!("{:.2}× faster", 1.0 / ratio)
    }
}

/// [`change_in_words`], saying when the test and the interval disagree: a rank test below
/// `alpha` while the median's interval still holds 1 means the distributions differ (their
/// tails or spread) but no change of the median was found, which "no detectable difference"
/// next to "p < 0.001" would leave a reader to puzzle out.
pub(crate) fn verdict_in_words(
    ratio: f64,
    detected: bool,
    p_value: Option<f64>,
    alpha: f64,
) -> String {
    match p_value {
        Some(p) if !detected && p < alpha => {
            "no detectable change of the median (the distributions differ)".into()
        }
        _ => change_in_words(ratio, detected),
    }
}

/// A ratio and its interval as `×0.982 [0.951, 1.013]`.
pub(crate) fn ratio_with_interval(ratio: f64, interval: [f64; 2]) -> String {
    format!("×{ratio:.3} [{:.3}, {:.3}]", interval[0], interval[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_as_shares_or_factors() {
        assert_eq!(change_in_words(1.018, true), "1.8% slower");
        assert_eq!(change_in_words(0.8, true), "20.0% faster");
        assert_eq!(change_in_words(3.42, true), "3.42× slower");
        assert_eq!(change_in_words(0.25, true), "4.00× faster");
        assert_eq!(change_in_words(3.42, false), "no detectable difference");
        assert_eq!(change_in_words(f64::NAN, true), "different");
        assert_eq!(change_in_words(0.0, true), "different");
        // The interval holds 1 but the ranks differ: said so, not "no difference".
        assert_eq!(
            verdict_in_words(0.976, false, Some(0.0001), 0.05),
            "no detectable change of the median (the distributions differ)"
        );
        assert_eq!(
            verdict_in_words(0.976, false, Some(0.4), 0.05),
            "no detectable difference"
        );
        assert_eq!(
            verdict_in_words(0.8, true, Some(0.0001), 0.05),
            "20.0% faster"
        );
    }
}
