//! The summaries as a terminal shows them: a copy of each with every string that came from
//! outside (a label, a peer's error text, a `Server` field, a store's path or reason) passed
//! through [`tlslab_core::terminal::escape`], made where a renderer for people begins. The
//! summaries themselves, which `--json` prints, keep the text as the store has it.
//!
//! Every string field is escaped, ours included (escaping text without controls changes
//! nothing): a label quoted inside a warning is then escaped exactly as the label itself,
//! so the text summary still finds it there to shorten it.

use std::collections::BTreeMap;

use tlslab_core::terminal::escape;

use crate::comparison::Comparisons;
use crate::factorial::Factorial;
use crate::load::LoadSummary;
use crate::summary::{ConfigSummary, Gain, RunSummary};
use crate::verdict::Verdict;

/// A value whose text can be escaped where it is.
trait Escape {
    fn escape(&mut self);
}

impl Escape for String {
    fn escape(&mut self) {
        if let std::borrow::Cow::Owned(escaped) = escape(self) {
            *self = escaped;
        }
    }
}

impl<T: Escape> Escape for Option<T> {
    fn escape(&mut self) {
        if let Some(value) = self {
            value.escape();
        }
    }
}

impl<T: Escape> Escape for Vec<T> {
    fn escape(&mut self) {
        self.iter_mut().for_each(Escape::escape);
    }
}

/// A name with its count or figure (`ech`'s statuses, an interaction's levels).
impl<T> Escape for (String, T) {
    fn escape(&mut self) {
        self.0.escape();
    }
}

/// Keys are text too (error classes from a store, a factorial's levels).
impl<T> Escape for BTreeMap<String, T> {
    fn escape(&mut self) {
        if self
            .keys()
            .all(|key| matches!(escape(key), std::borrow::Cow::Borrowed(_)))
        {
            return;
        }
        *self = std::mem::take(self)
            .into_iter()
            .map(|(key, value)| (escape(&key).into_owned(), value))
            .collect();
    }
}

/// Keys and values (error examples, diagnoses, a factorial's values).
fn escape_map(map: &mut BTreeMap<String, String>) {
    map.escape();
    map.values_mut().for_each(Escape::escape);
}

/// `summary` as the text summary shows it.
pub(crate) fn run_summary(summary: &RunSummary) -> RunSummary {
    let mut summary = summary.clone();
    let RunSummary {
        store,
        started_at,
        reason,
        configs,
        warnings,
        comparisons,
        dimensions,
        factorials,
        metric,
        metric_reason,
        verdicts,
        left_out,
        gains,
        knees,
        names,
        phase_change,
        // Numbers and flags: nothing to escape. Named, not `..`, so that a new text field
        // cannot reach the terminal without a decision here.
        complete: _,
        seed: _,
        duration_s: _,
        attempted: _,
        errors: _,
        incomplete: _,
        insecure: _,
    } = &mut summary;
    store.escape();
    started_at.escape();
    reason.escape();
    configs.iter_mut().for_each(config);
    warnings.escape();
    if let Some(comparisons) = comparisons {
        escape_comparisons(comparisons);
    }
    dimensions.escape();
    factorials.iter_mut().for_each(escape_factorial);
    metric.escape();
    metric_reason.escape();
    verdicts.iter_mut().for_each(verdict);
    left_out.escape();
    gains.iter_mut().for_each(gain);
    for knee in knees {
        knee.family.escape();
    }
    // Label and name alike, so that a name is still found by the escaped label.
    names.common.escape();
    for (label, name) in &mut names.shown {
        label.escape();
        name.escape();
    }
    if let Some(change) = phase_change {
        change.phase.escape();
        change.other.escape();
        change.baseline.escape();
        change.dimensions.escape();
        if let Some(crossed) = &mut change.crossed {
            crossed.other.escape();
            crossed.baseline.escape();
            crossed.held.escape();
        }
    }
    summary
}

fn config(config: &mut ConfigSummary) {
    let ConfigSummary {
        label,
        errors,
        error_examples,
        diagnoses,
        transport,
        ech,
        trust,
        stopping,
        network,
        bottleneck,
        ..
    } = config;
    label.escape();
    errors.escape();
    escape_map(error_examples);
    escape_map(diagnoses);
    transport.escape();
    ech.escape();
    trust.escape();
    stopping.escape();
    if let Some(network) = network {
        network.emulator.escape();
        network.physics.escape();
    }
    if let Some(bottleneck) = bottleneck {
        bottleneck.limit.escape();
    }
}

fn verdict(verdict: &mut Verdict) {
    verdict.dimensions.escape();
    verdict.other.escape();
    verdict.baseline.escape();
    verdict.metric.escape();
    verdict.verdict.escape();
    verdict.depends_on.escape();
}

fn gain(gain: &mut Gain) {
    gain.technique.escape();
    gain.dimensions.escape();
    gain.label.escape();
    gain.baseline.escape();
    gain.metric.escape();
}

fn escape_comparisons(set: &mut Comparisons) {
    set.baseline.escape();
    set.metric.escape();
    for compared in &mut set.comparisons {
        compared.comparison.baseline.escape();
        compared.comparison.other.escape();
        compared.dimensions.escape();
    }
}

/// `set` as `compare` shows it (labels, or sample files' names and columns).
pub(crate) fn comparisons(set: &Comparisons) -> Comparisons {
    let mut set = set.clone();
    escape_comparisons(&mut set);
    set
}

fn escape_factorial(factorial: &mut Factorial) {
    factorial.by.escape();
    factorial.dimensions.escape();
    factorial.baseline.escape();
    escape_map(&mut factorial.values);
    factorial.metric.escape();
    for contrast in &mut factorial.contrasts {
        contrast.stratum.escape();
        contrast.level.escape();
        contrast.dimensions.escape();
        contrast.comparison.baseline.escape();
        contrast.comparison.other.escape();
    }
    for pooled in &mut factorial.pooled {
        pooled.level.escape();
        for interaction in &mut pooled.interactions {
            interaction.dimension.escape();
            interaction.ratios.escape();
        }
    }
    factorial.left_out.escape();
}

/// `factorial` as `compare --by` shows it.
pub(crate) fn factorial(factorial: &Factorial) -> Factorial {
    let mut factorial = factorial.clone();
    escape_factorial(&mut factorial);
    factorial
}

/// `summary` as `tlslab load` shows it, in its own layout or ab's.
pub(crate) fn load_summary(summary: &LoadSummary) -> LoadSummary {
    let mut summary = summary.clone();
    for config in &mut summary.configs {
        config.label.escape();
        config.scheme.escape();
        config.http.escape();
        config.address.escape();
        config.path.escape();
        config.failures.escape();
        config.tls_protocol.escape();
        config.temp_key.escape();
        config.server_name.escape();
        config.server_software.escape();
    }
    for increase in &mut summary.increases {
        increase.https.escape();
        increase.http.escape();
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_escape_their_keys_and_leave_clean_ones_alone() {
        let mut map: BTreeMap<String, String> = [
            ("not_tls".to_string(), "peer said \u{1b}[2J".to_string()),
            ("odd\nclass".to_string(), "fine".to_string()),
        ]
        .into();
        escape_map(&mut map);
        assert_eq!(map["not_tls"], "peer said \\x1b[2J");
        assert_eq!(map["odd\\nclass"], "fine");
    }
}
