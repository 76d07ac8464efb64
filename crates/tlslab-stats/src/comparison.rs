//! Comparisons of configurations against a baseline: every statistic the report shows for a
//! pair, and a one-line verdict.
//!
//! Direction: everything reads "other relative to baseline". Differences are other −
//! baseline, ratios other / baseline, U is the Mann-Whitney statistic of the other sample
//! (scipy's `mannwhitneyu(other, baseline).statistic`), and the rank-biserial correlation
//! `2U/(n_other·n_baseline) − 1` is positive when the other sample tends to be larger, that
//! is slower when the values are durations.
//!
//! # The verdict rule
//!
//! A difference is reported only when two things agree: the BCa bootstrap interval of the
//! difference of medians excludes zero, and the Mann-Whitney p-value (Holm-adjusted across
//! the comparisons of one set) is below `alpha`. Otherwise the verdict is "no detectable
//! difference". The interval alone is the design's rule; requiring the test as well keeps a
//! verdict from calling a difference with a p-value above `alpha` printed next to it, which
//! can happen because the two answer slightly different questions.

use serde::Serialize;

use crate::bootstrap::{
    check_options, contrast_intervals, BootstrapMethod, BootstrapOptions, Contrast,
    SampleBootstrap, Statistic,
};
use crate::descriptive::{sort, Summary};
use crate::effect_size::{delta_of, dominance_counts_sorted, hedges_g, rank_biserial};
use crate::error::{check_open_unit, check_sample, StatsError};
use crate::holm::holm_adjust;
use crate::kruskal::{kruskal_wallis_sorted, KruskalWallis};
use crate::mann_whitney::{mann_whitney_sorted, MannWhitneyOptions, PValueMethod};
use crate::random::DEFAULT_SEED;
use crate::t_test::welch_unchecked;

/// Options of [`compare`] and [`compare_all`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Significance level for the verdict (after Holm's adjustment).
    pub alpha: f64,
    /// Confidence level of the bootstrap intervals.
    pub confidence: f64,
    /// Bootstrap replicates.
    pub resamples: usize,
    /// Seed of the bootstrap: the same seed and data always give the same intervals.
    pub seed: u64,
}

impl Default for CompareOptions {
    /// α = 0.05, 95% intervals, 9,999 replicates, a fixed seed.
    fn default() -> Self {
        CompareOptions {
            alpha: 0.05,
            confidence: 0.95,
            resamples: 9_999,
            seed: DEFAULT_SEED,
        }
    }
}

/// One configuration ("other") against the baseline. Intervals are BCa bootstrap intervals at
/// the requested confidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The baseline's name, as the caller gave it.
    pub baseline: String,
    /// The other configuration's name.
    pub other: String,
    /// The baseline's number of values.
    pub n_baseline: usize,
    /// The other's number of values.
    pub n_other: usize,
    /// The baseline's mean.
    pub mean_baseline: f64,
    /// The other's mean.
    pub mean_other: f64,
    /// The baseline's median: the location the verdict and the ratio speak of.
    pub median_baseline: f64,
    /// The other's median.
    pub median_other: f64,
    /// The baseline's sample standard deviation.
    pub sd_baseline: f64,
    /// The other's sample standard deviation.
    pub sd_other: f64,
    /// The other's 90th percentile, for the tail a median hides.
    pub p90_other: f64,
    /// The other's 99th percentile.
    pub p99_other: f64,
    /// U of the other sample.
    pub mann_whitney_u: f64,
    /// Two-sided p-value of this comparison alone.
    pub mann_whitney_p: f64,
    /// Holm-adjusted across the comparisons of the set (equal to `mann_whitney_p` alone).
    pub mann_whitney_p_holm: f64,
    /// Whether the p-value is exact or from the normal approximation.
    pub mann_whitney_method: PValueMethod,
    /// Rank-biserial correlation: the effect size that goes with Mann-Whitney, from −1 to 1,
    /// positive when the other tends to be larger.
    pub rank_biserial: f64,
    /// Cliff's delta: the share of pairs where the other is larger minus the share where it is
    /// smaller.
    pub cliffs_delta: f64,
    /// Welch's t, for readers who expect the t-test; it assumes near-normal means.
    pub welch_t: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub welch_df: f64,
    /// Welch's two-sided p-value.
    pub welch_p: f64,
    /// Hedges' g: the standardized difference of means, corrected for small samples.
    pub hedges_g: f64,
    /// mean_other − mean_baseline
    pub diff_mean: f64,
    /// BCa bootstrap interval of `diff_mean`.
    pub diff_mean_ci: [f64; 2],
    /// median_other − median_baseline
    pub diff_median: f64,
    /// BCa bootstrap interval of `diff_median`.
    pub diff_median_ci: [f64; 2],
    /// median_other / median_baseline
    pub ratio_median: f64,
    /// BCa bootstrap interval of `ratio_median`: the "± 0.03" of the verdict.
    pub ratio_median_ci: [f64; 2],
    /// One line, e.g. "1.52 ± 0.03 times slower (p < 0.001, r = 0.61)".
    pub verdict: String,
}

/// The fields of a [`Comparison`], under the names it serializes with: what `tlslab compare
/// --json` and the run summary promise for every comparison.
pub const COMPARISON_FIELDS: &[&str] = &[
    "baseline",
    "other",
    "n_baseline",
    "n_other",
    "mean_baseline",
    "mean_other",
    "median_baseline",
    "median_other",
    "sd_baseline",
    "sd_other",
    "p90_other",
    "p99_other",
    "mann_whitney_u",
    "mann_whitney_p",
    "mann_whitney_p_holm",
    "mann_whitney_method",
    "rank_biserial",
    "cliffs_delta",
    "welch_t",
    "welch_df",
    "welch_p",
    "hedges_g",
    "diff_mean",
    "diff_mean_ci",
    "diff_median",
    "diff_median_ci",
    "ratio_median",
    "ratio_median_ci",
    "verdict",
];

impl Comparison {
    /// Sets the Holm-adjusted p from a larger family of comparisons (a factorial contrast's
    /// strata) and words the verdict again with it.
    pub fn adjust_in_family(&mut self, holm_p: f64, alpha: f64) {
        self.mann_whitney_p_holm = holm_p;
        self.verdict = verdict(self, alpha);
    }

    /// Whether the verdict rule (see the module documentation) finds a difference at `alpha`.
    pub fn detects_difference(&self, alpha: f64) -> bool {
        let [low, high] = self.diff_median_ci;
        let interval_excludes_zero = low > 0.0 || high < 0.0;
        interval_excludes_zero && self.mann_whitney_p_holm < alpha
    }
}

/// Every other group against the baseline, Holm-adjusted, with a Kruskal-Wallis test across all
/// groups when there are more than two.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonSet {
    /// The baseline every comparison is against.
    pub baseline: String,
    /// In the order of the groups, the baseline left out.
    pub comparisons: Vec<Comparison>,
    /// Whether the groups differ at all; `None` with only two groups, where it would repeat
    /// the one comparison.
    pub kruskal_wallis: Option<KruskalWallis>,
}

/// Compares `other` with `baseline` (each at least two finite values, any order).
///
/// ```
/// use tlslab_stats::{compare, CompareOptions};
/// let rsa = [2.31, 2.28, 2.40, 2.35, 2.29, 2.33, 2.38, 2.30, 2.36, 2.32];
/// let ecdsa = [1.52, 1.49, 1.58, 1.55, 1.50, 1.53, 1.57, 1.51, 1.56, 1.54];
/// let comparison = compare("rsa2048", &rsa, "ecdsa-p256", &ecdsa, &CompareOptions::default())?;
/// assert!(comparison.diff_median < 0.0);
/// assert!(comparison.verdict.contains("times faster"));
/// # Ok::<(), tlslab_stats::StatsError>(())
/// ```
pub fn compare(
    baseline_name: &str,
    baseline: &[f64],
    other_name: &str,
    other: &[f64],
    options: &CompareOptions,
) -> Result<Comparison, StatsError> {
    let mut set = compare_groups(
        0,
        &[(baseline_name, baseline), (other_name, other)],
        options,
    )?;
    Ok(set.comparisons.remove(0))
}

/// Compares every group with the group at `baseline_index`.
///
/// The Mann-Whitney p-values are Holm-adjusted across the comparisons (`mann_whitney_p_holm`,
/// and the verdicts use the adjusted value). Each group is resampled once, with its own
/// stream of the seed, and shared by all comparisons; the result of two groups equals
/// [`compare`].
pub fn compare_all(
    baseline_index: usize,
    groups: &[(String, Vec<f64>)],
    options: &CompareOptions,
) -> Result<ComparisonSet, StatsError> {
    let borrowed: Vec<(&str, &[f64])> = groups
        .iter()
        .map(|(name, values)| (name.as_str(), values.as_slice()))
        .collect();
    compare_groups(baseline_index, &borrowed, options)
}

/// [`compare_all`] without a copy of the values: each group's values are sorted in place
/// (their order is all that changes) and the statistics read them there. What a caller that
/// owns millions of values and needs them no more uses: the comparison then holds no sample
/// twice, so two groups of ten million values need 160 MB, not 320 MB.
pub fn compare_all_in_place(
    baseline_index: usize,
    groups: &mut [(String, Vec<f64>)],
    options: &CompareOptions,
) -> Result<ComparisonSet, StatsError> {
    check_groups(baseline_index, groups.len(), options)?;
    for (name, values) in groups.iter() {
        check_sample(name, values, 2)?;
    }
    for (_, values) in groups.iter_mut() {
        sort(values);
    }
    let sorted: Vec<(&str, &[f64])> = groups
        .iter()
        .map(|(name, values)| (name.as_str(), values.as_slice()))
        .collect();
    compare_sorted(baseline_index, &sorted, options)
}

struct PreparedGroup<'a> {
    name: &'a str,
    sorted: &'a [f64],
    summary: Summary,
    bootstrap: SampleBootstrap<'a>,
}

fn bootstrap_options(options: &CompareOptions) -> BootstrapOptions {
    BootstrapOptions {
        confidence: options.confidence,
        resamples: options.resamples,
        seed: options.seed,
        method: BootstrapMethod::Auto,
    }
}

fn check_groups(
    baseline_index: usize,
    count: usize,
    options: &CompareOptions,
) -> Result<(), StatsError> {
    check_open_unit("alpha", options.alpha)?;
    check_options(&bootstrap_options(options))?;
    if count < 2 {
        return Err(StatsError::InvalidArgument(format!(
            "a comparison needs at least 2 groups, got {count}"
        )));
    }
    if baseline_index >= count {
        return Err(StatsError::InvalidArgument(format!(
            "baseline index {baseline_index} is out of range for {count} groups"
        )));
    }
    Ok(())
}

fn compare_groups(
    baseline_index: usize,
    groups: &[(&str, &[f64])],
    options: &CompareOptions,
) -> Result<ComparisonSet, StatsError> {
    check_groups(baseline_index, groups.len(), options)?;
    for (name, values) in groups {
        check_sample(name, values, 2)?;
    }
    let copies: Vec<Vec<f64>> = groups
        .iter()
        .map(|(_, values)| {
            let mut sorted = values.to_vec();
            sort(&mut sorted);
            sorted
        })
        .collect();
    let sorted: Vec<(&str, &[f64])> = groups
        .iter()
        .zip(&copies)
        .map(|(&(name, _), sorted)| (name, sorted.as_slice()))
        .collect();
    compare_sorted(baseline_index, &sorted, options)
}

/// The comparisons of checked groups, each sorted ascending.
fn compare_sorted(
    baseline_index: usize,
    groups: &[(&str, &[f64])],
    options: &CompareOptions,
) -> Result<ComparisonSet, StatsError> {
    let bootstrap_options = bootstrap_options(options);
    let prepared: Vec<PreparedGroup> = groups
        .iter()
        .enumerate()
        .map(|(index, &(name, sorted))| PreparedGroup {
            name,
            sorted,
            summary: Summary::of_sorted(sorted).expect("checked non-empty"),
            bootstrap: SampleBootstrap::new(sorted, &bootstrap_options, index as u64),
        })
        .collect();

    let baseline = &prepared[baseline_index];
    let mut comparisons = Vec::with_capacity(groups.len() - 1);
    for (index, other) in prepared.iter().enumerate() {
        if index != baseline_index {
            comparisons.push(compare_prepared(baseline, other, options)?);
        }
    }
    let raw: Vec<f64> = comparisons.iter().map(|c| c.mann_whitney_p).collect();
    for (comparison, adjusted) in comparisons.iter_mut().zip(holm_adjust(&raw)) {
        comparison.mann_whitney_p_holm = adjusted;
        comparison.verdict = verdict(comparison, options.alpha);
    }
    let kruskal_wallis = if prepared.len() > 2 {
        let sorted: Vec<&[f64]> = prepared.iter().map(|group| group.sorted).collect();
        Some(kruskal_wallis_sorted(&sorted))
    } else {
        None
    };
    Ok(ComparisonSet {
        baseline: baseline.name.to_owned(),
        comparisons,
        kruskal_wallis,
    })
}

fn compare_prepared(
    baseline: &PreparedGroup,
    other: &PreparedGroup,
    options: &CompareOptions,
) -> Result<Comparison, StatsError> {
    let mann_whitney = mann_whitney_sorted(
        other.sorted,
        baseline.sorted,
        &MannWhitneyOptions::default(),
    )?;
    let n_other = other.sorted.len();
    let n_baseline = baseline.sorted.len();
    let dominance = dominance_counts_sorted(other.sorted, baseline.sorted);
    let welch = welch_unchecked(other.sorted, baseline.sorted, options.confidence);
    let interval = |statistic, contrast| {
        contrast_intervals(
            &other.bootstrap,
            &baseline.bootstrap,
            statistic,
            contrast,
            options.confidence,
        )
    };
    let mean_difference = interval(Statistic::Mean, Contrast::Difference);
    let median_difference = interval(Statistic::Median, Contrast::Difference);
    let median_ratio = interval(Statistic::Median, Contrast::Ratio);
    let mut comparison = Comparison {
        baseline: baseline.name.to_owned(),
        other: other.name.to_owned(),
        n_baseline,
        n_other,
        mean_baseline: baseline.summary.mean,
        mean_other: other.summary.mean,
        median_baseline: baseline.summary.median,
        median_other: other.summary.median,
        sd_baseline: baseline.summary.sd,
        sd_other: other.summary.sd,
        p90_other: other.summary.p90,
        p99_other: other.summary.p99,
        mann_whitney_u: mann_whitney.u,
        mann_whitney_p: mann_whitney.p_value,
        mann_whitney_p_holm: mann_whitney.p_value,
        mann_whitney_method: mann_whitney.method,
        rank_biserial: rank_biserial(mann_whitney.u, n_other, n_baseline),
        cliffs_delta: delta_of(dominance, n_other, n_baseline),
        welch_t: welch.t,
        welch_df: welch.df,
        welch_p: welch.p_value,
        hedges_g: hedges_g(other.sorted, baseline.sorted),
        diff_mean: mean_difference.estimate,
        diff_mean_ci: [mean_difference.bca.0, mean_difference.bca.1],
        diff_median: median_difference.estimate,
        diff_median_ci: [median_difference.bca.0, median_difference.bca.1],
        ratio_median: median_ratio.estimate,
        ratio_median_ci: [median_ratio.bca.0, median_ratio.bca.1],
        verdict: String::new(),
    };
    comparison.verdict = verdict(&comparison, options.alpha);
    Ok(comparison)
}

/// The one-line verdict, hyperfine style. Larger values are read as slower.
fn verdict(comparison: &Comparison, alpha: f64) -> String {
    let evidence = format!(
        "({}, r = {})",
        format_p(comparison.mann_whitney_p_holm),
        format_signed(comparison.rank_biserial, 2)
    );
    if !comparison.detects_difference(alpha) {
        return format!("no detectable difference {evidence}");
    }
    let ratio = comparison.ratio_median;
    let [ratio_low, ratio_high] = comparison.ratio_median_ci;
    let ratio_usable = comparison.median_baseline > 0.0
        && comparison.median_other > 0.0
        && ratio_low > 0.0
        && ratio_high.is_finite();
    if ratio_usable {
        let (factor, low, high, word) = if ratio >= 1.0 {
            (ratio, ratio_low, ratio_high, "slower")
        } else {
            (1.0 / ratio, 1.0 / ratio_high, 1.0 / ratio_low, "faster")
        };
        let uncertainty = (high - low) / 2.0;
        let decimals = decimals_for(uncertainty);
        return format!("{factor:.decimals$} ± {uncertainty:.decimals$} times {word} {evidence}");
    }
    let difference = comparison.diff_median;
    let [low, high] = comparison.diff_median_ci;
    let uncertainty = (high - low) / 2.0;
    let decimals = decimals_for(uncertainty);
    let word = if difference >= 0.0 {
        "larger"
    } else {
        "smaller"
    };
    format!(
        "{word} by {:.decimals$} ± {uncertainty:.decimals$} {evidence}",
        difference.abs()
    )
}

/// Two decimals, or as many as show the first significant digit of a smaller uncertainty.
fn decimals_for(uncertainty: f64) -> usize {
    if !uncertainty.is_finite() || uncertainty >= 0.005 || uncertainty <= 0.0 {
        2
    } else {
        ((-uncertainty.log10()).ceil() as usize).clamp(2, 6)
    }
}

fn format_p(p: f64) -> String {
    if p.is_nan() {
        "p = n/a".to_owned()
    } else if p < 0.001 {
        "p < 0.001".to_owned()
    } else if p < 0.01 {
        format!("p = {p:.3}")
    } else {
        format!("p = {p:.2}")
    }
}

/// Fixed decimals without a "-0.00".
fn format_signed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.starts_with('-') && text[1..].chars().all(|c| c == '0' || c == '.') {
        text[1..].to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(count: usize, start: f64, step: f64) -> Vec<f64> {
        (0..count).map(|i| start + step * i as f64).collect()
    }

    /// A field added to, renamed in or removed from `Comparison` must be listed (or unlisted)
    /// in `COMPARISON_FIELDS`, which the tests of both the statistics and the CLI check.
    #[test]
    fn comparison_fields_are_exactly_the_serialized_keys() {
        let comparison = compare(
            "base",
            &ramp(10, 1.0, 0.1),
            "new",
            &ramp(10, 1.5, 0.1),
            &CompareOptions::default(),
        )
        .unwrap();
        let json = serde_json::to_value(&comparison).unwrap();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut fields = COMPARISON_FIELDS.to_vec();
        keys.sort_unstable();
        fields.sort_unstable();
        // Sorted lists rather than sets, so that a name listed twice fails too.
        assert_eq!(keys, fields);
    }

    #[test]
    fn formats() {
        assert_eq!(format_p(0.0004), "p < 0.001");
        assert_eq!(format_p(0.0031), "p = 0.003");
        assert_eq!(format_p(0.584), "p = 0.58");
        assert_eq!(format_signed(-0.001, 2), "0.00");
        assert_eq!(format_signed(-0.204, 2), "-0.20");
        assert_eq!(decimals_for(0.03), 2);
        assert_eq!(decimals_for(0.003), 3);
    }

    #[test]
    fn slower_verdict() {
        let baseline = ramp(50, 10.0, 0.01);
        let other = ramp(50, 15.0, 0.015);
        let comparison =
            compare("base", &baseline, "new", &other, &CompareOptions::default()).unwrap();
        assert!(
            comparison.verdict.contains("times slower"),
            "{}",
            comparison.verdict
        );
        assert!(
            comparison.verdict.contains("p < 0.001"),
            "{}",
            comparison.verdict
        );
        assert!(
            comparison.verdict.contains("r = 1.00"),
            "{}",
            comparison.verdict
        );
        assert!(
            comparison.verdict.starts_with("1.50 ± "),
            "{}",
            comparison.verdict
        );
    }

    #[test]
    fn no_difference_verdict() {
        let baseline = ramp(40, 10.0, 0.1);
        let other: Vec<f64> = baseline.iter().rev().map(|value| value + 0.01).collect();
        let comparison = compare(
            "base",
            &baseline,
            "same",
            &other,
            &CompareOptions::default(),
        )
        .unwrap();
        assert!(
            comparison
                .verdict
                .starts_with("no detectable difference (p = "),
            "{}",
            comparison.verdict
        );
    }

    #[test]
    fn negative_values_use_difference_wording() {
        let baseline = ramp(30, -10.0, 0.01);
        let other = ramp(30, -5.0, 0.01);
        let comparison =
            compare("base", &baseline, "new", &other, &CompareOptions::default()).unwrap();
        assert!(
            comparison.verdict.starts_with("larger by 5.00"),
            "{}",
            comparison.verdict
        );
    }
}
