//! Comparisons between Configs (or two sample files): numbers from `tlslab-stats`, words here.

use std::fmt::Write;

use tlslab_stats::{compare_all, CompareOptions, ComparisonSet, PValueMethod};
use tlslab_store::{Store, StoreError};

/// Compares every Config's `metric` with the baseline's (default: the first Config). Values
/// are the successful measured samples, in milliseconds.
pub fn compare_store(
    store: &Store,
    baseline: Option<&str>,
    metric: &str,
    options: &CompareOptions,
) -> Result<ComparisonSet, StoreError> {
    let configs = store.configs()?;
    let baseline_index = match baseline {
        None => 0,
        Some(label) => configs
            .iter()
            .position(|c| c.label == label)
            .ok_or_else(|| {
                StoreError::input(
                    format!("no config is labelled '{label}'"),
                    format!(
                        "use one of: {}",
                        configs
                            .iter()
                            .map(|c| format!("'{}'", c.label))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
    };
    let mut groups = Vec::with_capacity(configs.len());
    for config in &configs {
        let values: Vec<f64> = store
            .phase_values(config.id, metric)?
            .into_iter()
            .map(|nanos| nanos / 1e6)
            .collect();
        groups.push((config.label.clone(), values));
    }
    compare_all(baseline_index, &groups, options).map_err(|error| {
        StoreError::input(
            format!("cannot compare {metric}: {error}"),
            "every config needs at least 2 successful measured samples of this metric",
        )
    })
}

pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        format!("= {p:.3}")
    }
}

/// The comparison as text: one verdict line per Config, details indented below it.
pub fn render_comparisons(set: &ComparisonSet, metric: &str, unit: &str) -> String {
    let mut out = String::new();
    let Some(first) = set.comparisons.first() else {
        return out;
    };
    let _ = writeln!(
        out,
        "{metric}: each config against baseline '{}' (n = {}, median {:.4} {unit})",
        set.baseline, first.n_baseline, first.median_baseline
    );
    for comparison in &set.comparisons {
        let _ = writeln!(out, "  {}: {}", comparison.other, comparison.verdict);
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
