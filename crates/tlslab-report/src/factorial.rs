//! Factorial comparisons (`tlslab compare RESULTS.db --by tls`): the effect of one dimension
//! with every other dimension held fixed. Within each stratum (one combination of the other
//! dimensions' values) each value is compared with the baseline value, so no contrast ever
//! changes two dimensions, unless the Configs change two together everywhere (each suite
//! with its own certificate): then every contrast changes both, and the comparison is named
//! by both (`suite+cert`), never credited to the one asked for. The contrasts are
//! Holm-adjusted as one family. Then one pooled
//! answer per value: the median of the per-stratum ratios of medians with a bootstrap
//! interval over strata, van Elteren's stratified test, and whether the effect depends on
//! another dimension (the ratio at each of its levels, Kruskal-Wallis across them).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use tlslab_core::terminal::escape;
use tlslab_stats::{
    compare, holm_adjust, kruskal_wallis, median, median_ci, van_elteren, CompareOptions,
    Comparison, VanElteren,
};
use tlslab_store::{ConfigRow, Store, StoreError};

use crate::comparison::p_value;
use crate::verdict::{Verdict, VerdictKind};
use crate::ReportError;

use crate::dimensions::{differences, joined, tied, tied_with, varies, Dimension, DIMENSIONS};

/// A Config's value of the dimension named `name` (as `compare --by` names it).
pub(crate) use crate::dimensions::dimension_value;
/// The dimensions the Configs vary (see [`crate::dimensions::varied_dimensions`]).
pub use crate::dimensions::varied_dimensions;

/// One contrast within a stratum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contrast {
    /// The other dimensions' values, as `suite=aes128gcm concurrency=10`.
    pub stratum: String,
    /// The level of `by` set against the baseline in this stratum.
    pub level: String,
    /// Every dimension in which the two Configs differ: the factorial's `dimensions`, and the
    /// effect is theirs together.
    pub dimensions: Vec<String>,
    /// The two Configs' statistics, Holm-adjusted across the factorial's contrasts.
    pub comparison: Comparison,
}

/// How the effect of a value varies with another dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interaction {
    /// The other dimension the effect is read against.
    pub dimension: String,
    /// The median per-stratum ratio at each of its levels.
    pub ratios: Vec<(String, f64)>,
    /// Kruskal-Wallis across the levels' log ratios (each level needs two strata).
    pub p_value: Option<f64>,
    /// The effect depends on the dimension (p below alpha).
    pub depends: bool,
}

/// The pooled answer for one value against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pooled {
    /// The level of `by` pooled.
    pub level: String,
    /// How many strata hold a contrast of it.
    pub strata: usize,
    /// Median of the per-stratum ratios of medians, with its bootstrap interval over strata.
    pub ratio: f64,
    /// The bootstrap interval of `ratio` over the strata.
    pub ratio_ci: [f64; 2],
    /// Van Elteren's stratified test of the contrasts together; `None` when it cannot run.
    pub van_elteren: Option<VanElteren>,
    /// Whether the effect depends on each other dimension.
    pub interactions: Vec<Interaction>,
}

/// The whole factorial comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Factorial {
    /// The dimension asked for (`--by`).
    pub by: String,
    /// `by` and every dimension that changes together with it among these Configs: each
    /// contrast changes them all, so its effect is credited to them together (one name when
    /// `by` changes alone).
    pub dimensions: Vec<String>,
    /// The level every other level is set against.
    pub baseline: String,
    /// Each level of `by` as the values of all `dimensions` (`aes256gcm+ecdsa-p256`; the level
    /// itself when `by` changes alone).
    pub values: BTreeMap<String, String>,
    /// The metric compared.
    pub metric: String,
    /// Every contrast, stratum by stratum.
    pub contrasts: Vec<Contrast>,
    /// Each level pooled over the strata: the answer.
    pub pooled: Vec<Pooled>,
    /// Each value of `by` that no contrast sets against the baseline, and why.
    pub left_out: Vec<String>,
}

/// One stratum: its key (`name=value` of each other dimension) and its Configs by level.
type Stratum<'a> = (Vec<String>, BTreeMap<String, &'a ConfigRow>);

/// Each level's samples, stratum by stratum, for pooling.
type ByLevel = BTreeMap<String, Vec<StratumSamples>>;

/// One stratum's samples of a value and of the baseline, and their ratio of medians.
struct StratumSamples {
    /// Each other dimension's level, as its position in that dimension's ordered levels.
    positions: Vec<usize>,
    baseline: Vec<f64>,
    other: Vec<f64>,
    ratio: f64,
}

fn input(message: String, hint: String) -> ReportError {
    ReportError::Input { message, hint }
}

/// The factorial comparison of `store`'s Configs by dimension `by` on `metric` (ms).
pub fn factorial(
    store: &Store,
    by: &str,
    baseline: Option<&str>,
    metric: &str,
    options: &CompareOptions,
) -> Result<Factorial, ReportError> {
    let values = |config: &ConfigRow| -> Result<Vec<f64>, StoreError> {
        Ok(store
            .phase_values(config.id, metric)?
            .into_iter()
            .map(|nanos| nanos / 1e6)
            .collect())
    };
    factorial_of(&store.configs()?, by, baseline, metric, options, &values)
}

/// [`factorial`] of `configs`, with `values` giving a Config's values of `metric` (ms): a
/// summary that has read them once passes them in, instead of a pass over the samples for
/// each contrast.
pub fn factorial_of(
    configs: &[ConfigRow],
    by: &str,
    baseline: Option<&str>,
    metric: &str,
    options: &CompareOptions,
    values: &dyn Fn(&ConfigRow) -> Result<Vec<f64>, StoreError>,
) -> Result<Factorial, ReportError> {
    let design = Design::new(configs, by, baseline)?;
    let (mut contrasts, by_level) = design.contrasts(options, values)?;
    if contrasts.is_empty() {
        return Err(design.no_contrast(metric));
    }
    let left_out = design.left_out(&by_level, metric);
    let adjusted = holm_adjust(
        &contrasts
            .iter()
            .map(|contrast| contrast.comparison.mann_whitney_p)
            .collect::<Vec<_>>(),
    );
    for (contrast, holm) in contrasts.iter_mut().zip(adjusted) {
        contrast.comparison.adjust_in_family(holm, options.alpha);
    }
    let pooled = design
        .levels
        .iter()
        .filter(|level| **level != design.baseline)
        .filter_map(|level| Some(design.pooled(level, by_level.get(level)?, options)))
        .collect();
    Ok(Factorial {
        by: by.to_string(),
        dimensions: design
            .together
            .iter()
            .map(|name| name.to_string())
            .collect(),
        baseline: design.baseline,
        values: design.named,
        metric: metric.to_string(),
        contrasts,
        pooled,
        left_out,
    })
}

/// How a factorial comparison of `configs` by one dimension is laid out: the levels of
/// `by`, the strata the other varying dimensions make, and the baseline level.
struct Design<'a> {
    configs: &'a [ConfigRow],
    by: &'a str,
    value_of: fn(&ConfigRow) -> String,
    /// What changes with `by` in every Config: a contrast of `by` changes these too.
    together: Vec<&'static str>,
    /// Each level of `by` named with what changes with it (`aes128gcm+rsa2048`).
    named: BTreeMap<String, String>,
    /// The dimensions other than `by` that vary: they make the strata.
    varying: Vec<&'static Dimension>,
    /// Each varying dimension's levels, in order.
    orders: Vec<Vec<String>>,
    /// The levels of `by`, numbers in numeric order.
    levels: Vec<String>,
    /// Configs by stratum (each varying dimension's level position), then by level.
    strata: BTreeMap<Vec<usize>, Stratum<'a>>,
    baseline: String,
}

impl<'a> Design<'a> {
    fn new(
        configs: &'a [ConfigRow],
        by: &'a str,
        baseline: Option<&str>,
    ) -> Result<Design<'a>, ReportError> {
        let Some(&(_, value_of)) = crate::dimensions::find(by) else {
            return Err(input(
                format!("--by {by}: not a dimension"),
                format!("give one of: {}", crate::dimensions::names().join(", ")),
            ));
        };
        let together = tied_with(configs, by);
        let named: BTreeMap<String, String> = configs
            .iter()
            .map(|config| {
                let parts: Vec<String> = together
                    .iter()
                    .filter_map(|name| dimension_value(name, config))
                    .collect();
                (value_of(config), joined(&parts))
            })
            .collect();
        // One dimension that changes exactly when `by` does is `by` under another name
        // (`--backend` sets both libraries): as a stratum it would leave each stratum one
        // value of `by`.
        let varying: Vec<&Dimension> = DIMENSIONS
            .iter()
            .filter(|(name, value)| {
                *name != by && varies(configs, *value) && !tied(configs, value_of, *value)
            })
            .collect();
        // Numbers in numeric order (concurrency 1, 20, 100), as everywhere levels are listed.
        let levels = crate::levels::distinct_ordered(configs.iter().map(value_of));
        if levels.len() < 2 {
            return Err(input(
                format!(
                    "the run has one value of {by} ({})",
                    escape(&levels.join(""))
                ),
                "compare by a dimension the run varied (its labels show which)".into(),
            ));
        }
        if let Some(wanted) = baseline.filter(|wanted| !levels.iter().any(|level| level == wanted))
        {
            return Err(input(
                format!("--baseline {}: the run has no such {by}", escape(wanted)),
                format!("give one of: {}", escape(&levels.join(", "))),
            ));
        }
        let orders: Vec<Vec<String>> = varying
            .iter()
            .map(|(_, value)| crate::levels::distinct_ordered(configs.iter().map(value)))
            .collect();
        let strata = strata(configs, &varying, &orders, value_of);
        // Whether some Config with `level` has a partner that differs from it in `by` (and
        // what changes with it) alone.
        let partnered = |level: &String| {
            strata
                .values()
                .any(|(_, members)| members.len() >= 2 && members.contains_key(level))
        };
        // The first level as listed, or the first that has a partner when it has none (a
        // TLS 1.2 suite that only TLS 1.2 runs): its contrasts are the comparison's.
        let baseline = match baseline {
            Some(wanted) => wanted.to_string(),
            None => levels
                .iter()
                .find(|level| partnered(level))
                .unwrap_or(&levels[0])
                .clone(),
        };
        Ok(Design {
            configs,
            by,
            value_of,
            together,
            named,
            varying,
            orders,
            levels,
            strata,
            baseline,
        })
    }

    /// Every contrast of a level with the baseline within a stratum, and each level's
    /// strata samples for pooling.
    fn contrasts(
        &self,
        options: &CompareOptions,
        values: &dyn Fn(&ConfigRow) -> Result<Vec<f64>, StoreError>,
    ) -> Result<(Vec<Contrast>, ByLevel), ReportError> {
        let mut contrasts = Vec::new();
        let mut by_level = ByLevel::new();
        for (positions, (key, members)) in &self.strata {
            let Some(base) = members.get(&self.baseline) else {
                continue;
            };
            let base_values = values(base)?;
            for level in self.levels.iter().filter(|level| **level != self.baseline) {
                let Some(other) = members.get(level) else {
                    continue;
                };
                // Held fixed by the strata: every other dimension that varies on its own.
                // What is left to differ is `by` and what changes with it; anything else
                // would credit the contrast to a dimension it did not change alone, so it
                // is no contrast.
                let differ = differences(base, other);
                if differ != self.together {
                    continue;
                }
                let other_values = values(other)?;
                let Ok(comparison) = compare(
                    &base.label,
                    &base_values,
                    &other.label,
                    &other_values,
                    options,
                ) else {
                    // Fewer than two samples on a side: nothing to say for this stratum.
                    continue;
                };
                by_level
                    .entry(level.clone())
                    .or_default()
                    .push(StratumSamples {
                        positions: positions.clone(),
                        baseline: base_values.clone(),
                        other: other_values,
                        ratio: comparison.ratio_median,
                    });
                contrasts.push(Contrast {
                    stratum: if key.is_empty() {
                        "(one stratum)".into()
                    } else {
                        key.join(" ")
                    },
                    level: level.clone(),
                    dimensions: differ.iter().map(|name| name.to_string()).collect(),
                    comparison,
                });
            }
        }
        Ok((contrasts, by_level))
    }

    /// Why there is no contrast at all: no samples beside the baseline, no partner of the
    /// baseline, or no two Configs that change `by` alone (then what else the closest
    /// pairs change).
    fn no_contrast(&self, metric: &str) -> ReportError {
        let (by, baseline) = (self.by, &self.baseline);
        let paired = |with_baseline: bool| {
            self.strata.values().any(|(_, members)| {
                members.len() >= 2 && (!with_baseline || members.contains_key(baseline))
            })
        };
        if paired(true) {
            return input(
                format!("no stratum has both {baseline} and another {by} with samples of {metric}"),
                "every Config needs at least 2 successful measured samples of the metric".into(),
            );
        }
        if paired(false) {
            return input(
                format!("no Config with {by} {baseline} differs from another in {by} alone"),
                "give --baseline a value that some Config shares everything else with".into(),
            );
        }
        let also: Vec<String> = self
            .closest_extras()
            .iter()
            .map(|extra| crate::dimensions::in_words(extra))
            .collect();
        input(
            format!(
                "no two Configs differ in {} alone: the closest pairs that change it also change {}",
                crate::dimensions::in_words(&self.together),
                also.join(", or ")
            ),
            "no effect can be credited to it; compare without --by (each Config against the first, naming every dimension that differs) or by a dimension the Configs cross".into(),
        )
    }

    /// What else the pairs of Configs that change `by` with the fewest other changes
    /// change, each set once.
    fn closest_extras(&self) -> Vec<Vec<&'static str>> {
        let value_of = self.value_of;
        let mut closest: Vec<Vec<&str>> = Vec::new();
        for (index, one) in self.configs.iter().enumerate() {
            for other in &self.configs[index + 1..] {
                if value_of(one) == value_of(other) {
                    continue;
                }
                let extra: Vec<&str> = differences(one, other)
                    .into_iter()
                    .filter(|name| !self.together.contains(name))
                    .collect();
                match closest.first().map(Vec::len) {
                    Some(fewest) if extra.len() > fewest => {}
                    Some(fewest) if extra.len() < fewest => closest = vec![extra],
                    _ if !closest.contains(&extra) => closest.push(extra),
                    _ => {}
                }
            }
        }
        closest
    }

    /// Each other level without a contrast, and why.
    fn left_out(&self, by_level: &ByLevel, metric: &str) -> Vec<String> {
        let baseline = &self.baseline;
        self.levels
            .iter()
            .filter(|level| *level != baseline && !by_level.contains_key(*level))
            .map(|level| {
                let value = self
                    .named
                    .get(level)
                    .cloned()
                    .unwrap_or_else(|| level.clone());
                let together_with_baseline = self.strata.values().any(|(_, members)| {
                    members.contains_key(level) && members.contains_key(baseline)
                });
                if together_with_baseline {
                    format!(
                        "{value}: fewer than 2 successful samples of {metric} beside its baseline"
                    )
                } else {
                    format!(
                        "{value}: no Config with it differs from one with {} in {} alone",
                        self.named.get(baseline).unwrap_or(baseline),
                        crate::dimensions::in_words(&self.together)
                    )
                }
            })
            .collect()
    }

    /// `level`'s contrasts pooled over the strata: the median ratio and its interval, the
    /// van Elteren test, and whether the ratio depends on each varying dimension.
    fn pooled(&self, level: &str, rows: &[StratumSamples], options: &CompareOptions) -> Pooled {
        let ratios: Vec<f64> = rows.iter().map(|row| row.ratio).collect();
        let (low, high) = if ratios.len() > 1 {
            median_ci(&ratios, options.confidence, options.resamples, options.seed)
        } else {
            (ratios[0], ratios[0])
        };
        let pairs: Vec<(&[f64], &[f64])> = rows
            .iter()
            .map(|row| (row.baseline.as_slice(), row.other.as_slice()))
            .collect();
        let interactions = self
            .varying
            .iter()
            .zip(&self.orders)
            .enumerate()
            .filter_map(|(position, ((name, _), order))| {
                interaction(name, order, position, rows, options.alpha)
            })
            .collect();
        Pooled {
            level: level.to_string(),
            strata: ratios.len(),
            ratio: median(&ratios),
            ratio_ci: [low, high],
            van_elteren: van_elteren(&pairs).ok(),
            interactions,
        }
    }
}

/// `configs` by stratum, then by level of `by` (`value_of`). Strata go in the order of
/// their levels (each dimension's position in its ordered levels), not as text:
/// concurrency=100 would come before concurrency=20.
fn strata<'a>(
    configs: &'a [ConfigRow],
    varying: &[&Dimension],
    orders: &[Vec<String>],
    value_of: fn(&ConfigRow) -> String,
) -> BTreeMap<Vec<usize>, Stratum<'a>> {
    let mut strata: BTreeMap<Vec<usize>, Stratum> = BTreeMap::new();
    for config in configs {
        let positions: Vec<usize> = varying
            .iter()
            .zip(orders)
            .map(|((_, value), order)| {
                let level = value(config);
                order.iter().position(|known| *known == level).unwrap_or(0)
            })
            .collect();
        let key: Vec<String> = varying
            .iter()
            .map(|(name, value)| format!("{name}={}", value(config)))
            .collect();
        strata
            .entry(positions)
            .or_insert_with(|| (key, BTreeMap::new()))
            .1
            .insert(value_of(config), config);
    }
    strata
}

/// Whether a level's ratio depends on the varying dimension `name` (at `position` among
/// them): its median ratio at each of that dimension's levels, and Kruskal-Wallis on their
/// logarithms. `None` when the contrasts span one of its levels only.
fn interaction(
    name: &str,
    order: &[String],
    position: usize,
    rows: &[StratumSamples],
    alpha: f64,
) -> Option<Interaction> {
    // By the level's position, so that the ratios are listed in the levels' order.
    let mut groups: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for row in rows {
        groups
            .entry(row.positions[position])
            .or_default()
            .push(row.ratio);
    }
    if groups.len() < 2 {
        return None;
    }
    let logs: Vec<Vec<f64>> = groups
        .values()
        .map(|ratios| ratios.iter().map(|ratio| ratio.ln()).collect())
        .collect();
    let p_value = (groups.values().all(|ratios| ratios.len() >= 2))
        .then(|| {
            let slices: Vec<&[f64]> = logs.iter().map(Vec::as_slice).collect();
            kruskal_wallis(&slices).ok().map(|test| test.p_value)
        })
        .flatten();
    Some(Interaction {
        dimension: name.to_string(),
        ratios: groups
            .iter()
            .map(|(level, ratios)| {
                (
                    order.get(*level).cloned().unwrap_or_default(),
                    median(ratios),
                )
            })
            .collect(),
        depends: p_value.is_some_and(|p| p < alpha),
        p_value,
    })
}

impl Factorial {
    /// The comparison's name: `by`, or `by` and what changes with it (`suite+cert`).
    pub fn name(&self) -> String {
        joined(&self.dimensions)
    }

    /// A level of `by` as the values of every dimension of the comparison.
    pub fn value(&self, level: &str) -> String {
        self.values
            .get(level)
            .cloned()
            .unwrap_or_else(|| level.to_string())
    }
}

/// The factorial comparison as text: one answer line per value, the interactions, then one
/// line per stratum; labels and values escaped for a terminal.
pub fn render_factorial(factorial: &Factorial) -> String {
    let factorial = &crate::terminal::factorial(factorial);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} by {}: each value against {} with every other dimension held fixed",
        factorial.metric,
        factorial.name(),
        factorial.value(&factorial.baseline)
    );
    if factorial.dimensions.len() > 1 {
        let _ = writeln!(
            out,
            "  ({} change together in every Config: no contrast tells their effects apart)",
            crate::dimensions::in_words(&factorial.dimensions)
        );
    }
    for pooled in &factorial.pooled {
        let depends: Vec<&str> = pooled
            .interactions
            .iter()
            .filter(|interaction| interaction.depends)
            .map(|interaction| interaction.dimension.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  {} vs {}: ratio {:.3} [{:.3}, {:.3}] of {} medians across {} {}{}{}",
            factorial.value(&pooled.level),
            factorial.value(&factorial.baseline),
            pooled.ratio,
            pooled.ratio_ci[0],
            pooled.ratio_ci[1],
            factorial.metric,
            pooled.strata,
            if pooled.strata == 1 {
                "stratum"
            } else {
                "strata"
            },
            pooled.van_elteren.map_or(String::new(), |test| format!(
                "; van Elteren z = {:.2}, p {}",
                test.z,
                p_value(test.p_value)
            )),
            if depends.is_empty() {
                String::new()
            } else {
                format!("; depends on {}", depends.join(" and "))
            }
        );
        for interaction in &pooled.interactions {
            let levels: Vec<String> = interaction
                .ratios
                .iter()
                .map(|(level, ratio)| format!("{ratio:.3} at {level}"))
                .collect();
            let _ = writeln!(
                out,
                "      by {}: {}{}",
                interaction.dimension,
                levels.join(", "),
                interaction.p_value.map_or(String::new(), |p| format!(
                    " (Kruskal-Wallis p {})",
                    p_value(p)
                ))
            );
        }
    }
    for reason in &factorial.left_out {
        let _ = writeln!(out, "  left out: {reason}");
    }
    let _ = writeln!(
        out,
        "  per stratum (Holm across all {}):",
        factorial.contrasts.len()
    );
    for contrast in &factorial.contrasts {
        let comparison = &contrast.comparison;
        let _ = writeln!(
            out,
            "    {} · {}: median {} {:.4} vs {:.4} ms, ratio {:.3} [{:.3}, {:.3}], {}",
            contrast.stratum,
            factorial.value(&contrast.level),
            factorial.metric,
            comparison.median_other,
            comparison.median_baseline,
            comparison.ratio_median,
            comparison.ratio_median_ci[0],
            comparison.ratio_median_ci[1],
            comparison.verdict
        );
    }
    out
}

impl Pooled {
    /// The pooled verdict rule, as a contrast's: the interval over strata excludes 1 and
    /// van Elteren's p (when the strata allowed the test) is below `alpha`.
    pub fn detects_difference(&self, alpha: f64) -> bool {
        let [low, high] = self.ratio_ci;
        (low > 1.0 || high < 1.0) && self.van_elteren.is_none_or(|test| test.p_value < alpha)
    }
}

/// Every pooled answer of `factorials`, in order, as verdicts: each credited to the
/// factorial's dimensions together.
pub(crate) fn answers(factorials: &[Factorial], alpha: f64) -> Vec<Verdict> {
    let mut answers = Vec::new();
    for factorial in factorials {
        for pooled in &factorial.pooled {
            // One stratum has no spread of ratios to give an interval: its own contrast's
            // interval and verdict are the answer.
            let single = (pooled.strata == 1)
                .then(|| {
                    factorial
                        .contrasts
                        .iter()
                        .find(|contrast| contrast.level == pooled.level)
                })
                .flatten();
            let (interval, detected, p_value) = match single {
                Some(contrast) => (
                    contrast.comparison.ratio_median_ci,
                    contrast.comparison.detects_difference(alpha),
                    Some(contrast.comparison.mann_whitney_p),
                ),
                None => (
                    pooled.ratio_ci,
                    pooled.detects_difference(alpha),
                    pooled.van_elteren.map(|test| test.p_value),
                ),
            };
            answers.push(Verdict {
                kind: VerdictKind::Dimension,
                dimensions: factorial.dimensions.clone(),
                other: factorial.value(&pooled.level),
                baseline: factorial.value(&factorial.baseline),
                metric: factorial.metric.clone(),
                verdict: crate::comparison::verdict_in_words(
                    pooled.ratio,
                    detected,
                    p_value,
                    alpha,
                ),
                ratio: pooled.ratio,
                ratio_ci: interval,
                p_value,
                strata: Some(pooled.strata),
                depends_on: pooled
                    .interactions
                    .iter()
                    .filter(|interaction| interaction.depends)
                    .map(|interaction| interaction.dimension.clone())
                    .collect(),
            });
        }
    }
    answers
}
