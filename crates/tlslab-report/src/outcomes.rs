//! What the default summary says in a line each beside its table, so that a run's point is
//! seen without `--verbose`: the phase that moved most between Configs (where a difference
//! went: the phase model is the tool's point), what became of ECH, and how many replayed
//! 0-RTT flights the server refused. `--verbose` shows each in full, per Config.

use serde::Serialize;
use tlslab_core::Phase;
use tlslab_store::ConfigRow;

use crate::dimensions::{differences, dimension_value, joined, tied_with, varied_dimensions};
use crate::summary::ConfigSummary;

/// The phase whose median moved most between two Configs, credited as the summary's
/// verdicts are: to the dimensions in which the two differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseChange {
    /// The phase, by name (`cert_validation`).
    pub phase: String,
    /// The Config set against `baseline`: of the two, the later in the run's order.
    pub other: String,
    /// The Config it is set against: the earlier in the run's order.
    pub baseline: String,
    /// `other`'s median of the phase minus `baseline`'s, in ms.
    pub change_ms: f64,
    /// Every dimension in which the two Configs differ (by `--by` name).
    pub dimensions: Vec<String>,
    /// When the Configs cross dimensions: the two Configs' values of `dimensions`
    /// (`1.3`, `1.2`) and the other dimensions' values they share (`concurrency 4`), so the
    /// line reads as the by-dimension verdicts do, never as one Config against another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crossed: Option<Crossed>,
}

/// A change read by dimension: its values, and where the other dimensions were held.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Crossed {
    /// The other Config's values of the dimensions (`1.3`).
    pub other: String,
    /// The baseline's values of the dimensions (`1.2`).
    pub baseline: String,
    /// The other dimensions' values both share (`concurrency 4`).
    pub held: String,
}

/// Above this many Configs, each is set against the first only: every pair would be too
/// many to weigh.
const PAIRS_UP_TO: usize = 100;

/// Over the phases of the handshake and the pairs of Configs that differ in one dimension
/// (or dimensions that change together), the phase and pair whose medians lie furthest
/// apart; when no pair differs in one dimension (hand-picked Configs), any pair, named with
/// everything it changes. `crossed`: the Configs cross dimensions, and the change is said
/// by dimension. `None` with fewer than two Configs timed.
pub fn most_changed(
    configs: &[ConfigSummary],
    rows: &[ConfigRow],
    crossed: bool,
) -> Option<PhaseChange> {
    if configs.len() != rows.len() {
        return None;
    }
    let pairs: Vec<(usize, usize)> = if configs.len() <= PAIRS_UP_TO {
        (0..configs.len())
            .flat_map(|one| (one + 1..configs.len()).map(move |other| (one, other)))
            .collect()
    } else {
        (1..configs.len()).map(|other| (0, other)).collect()
    };
    let differing: Vec<((usize, usize), Vec<&'static str>)> = pairs
        .into_iter()
        .map(|(one, other)| ((one, other), differences(&rows[one], &rows[other])))
        .filter(|(_, dimensions)| !dimensions.is_empty())
        .collect();
    let alone = |dimensions: &[&'static str]| tied_with(rows, dimensions[0]) == dimensions;
    let any_alone = differing.iter().any(|(_, dimensions)| alone(dimensions));
    let median = |index: usize, phase: Phase| {
        configs[index]
            .phase_medians_ms
            .get(phase.name())
            .copied()
            .filter(|median| median.is_finite())
    };
    // The change, its phase, and which pair of `differing`.
    let mut best: Option<(f64, Phase, usize)> = None;
    for (pair, ((one, other), dimensions)) in differing.iter().enumerate() {
        if any_alone && !alone(dimensions) {
            continue;
        }
        for phase in Phase::PARTS {
            let (Some(baseline), Some(changed)) = (median(*one, phase), median(*other, phase))
            else {
                continue;
            };
            let change = changed - baseline;
            if best.is_none_or(|(most, ..)| change.abs() > most.abs()) {
                best = Some((change, phase, pair));
            }
        }
    }
    let (change_ms, phase, pair) = best?;
    let ((one, other), dimensions) = &differing[pair];
    let (one, other) = (*one, *other);
    let crossed = (crossed && alone(dimensions)).then(|| {
        let values = |row: &ConfigRow| {
            let parts: Vec<String> = dimensions
                .iter()
                .filter_map(|dimension| dimension_value(dimension, row))
                .collect();
            joined(&parts)
        };
        // Each other dimension by the name its verdicts use (`backend`, `transport+http`).
        let held: Vec<String> = varied_dimensions(rows)
            .into_iter()
            .map(|dimension| tied_with(rows, dimension))
            .filter(|group| !group.contains(&dimensions[0]))
            .map(|group| {
                let values: Vec<String> = group
                    .iter()
                    .filter_map(|dimension| dimension_value(dimension, &rows[one]))
                    .collect();
                format!("{} {}", joined(&group), joined(&values))
            })
            .collect();
        Crossed {
            other: values(&rows[other]),
            baseline: values(&rows[one]),
            held: held.join(", "),
        }
    });
    Some(PhaseChange {
        phase: phase.name().to_string(),
        other: configs[other].label.clone(),
        baseline: configs[one].label.clone(),
        change_ms,
        dimensions: dimensions.iter().map(|name| name.to_string()).collect(),
        crossed,
    })
}

impl PhaseChange {
    /// `most changed phase: server_finish -79.6 µs (tls1.3 vs tls1.2 [tls])`, each Config
    /// by `name`; in a crossed matrix `(tls 1.3 vs 1.2 at concurrency 4)`.
    pub fn line(&self, name: &dyn Fn(&str) -> String) -> String {
        let between = match &self.crossed {
            Some(crossed) => format!(
                "{} {} vs {}{}",
                joined(&self.dimensions),
                crossed.other,
                crossed.baseline,
                if crossed.held.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", crossed.held)
                }
            ),
            None => format!(
                "{} vs {} [{}]",
                name(&self.other),
                name(&self.baseline),
                joined(&self.dimensions)
            ),
        };
        format!(
            "most changed phase: {} {}{} ({between})",
            self.phase,
            if self.change_ms < 0.0 { "-" } else { "+" },
            crate::text::duration(self.change_ms.abs()),
        )
    }
}

/// `'name' ` before what a line says of one Config; nothing for a lone Config, whose label
/// is above the table.
fn quoted(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!("'{name}' ")
    }
}

/// The lines beside the table: the phase that moved most, ECH's status where a Config
/// offered it, the replay result where the run replayed 0-RTT flights, and a capture's
/// incomplete handshakes per Config. `name` names a Config as the table does.
pub fn lines(
    configs: &[ConfigSummary],
    change: Option<&PhaseChange>,
    name: &dyn Fn(&str) -> String,
) -> Vec<String> {
    let mut lines: Vec<String> = change.map(|change| change.line(name)).into_iter().collect();
    let ech: Vec<String> = configs
        .iter()
        .filter(|config| !config.ech.is_empty())
        .map(|config| {
            let counts: Vec<String> = config
                .ech
                .iter()
                .map(|(status, count)| format!("{status} {count}"))
                .collect();
            format!(
                "{}{} of {} successful handshakes",
                quoted(&name(&config.label)),
                counts.join(", "),
                config.ok
            )
        })
        .collect();
    if !ech.is_empty() {
        lines.push(format!("ech: {}", ech.join("; ")));
    }
    let replays: Vec<String> = configs
        .iter()
        .filter_map(|config| {
            let replay = config.replay.as_ref()?;
            Some(format!(
                "{}{} 0-RTT flights re-sent: {} rejected, {} accepted",
                quoted(&name(&config.label)),
                replay.sent,
                replay.rejected,
                replay.accepted
            ))
        })
        .collect();
    if !replays.is_empty() {
        lines.push(format!("replay: {}", replays.join("; ")));
    }
    let incomplete: Vec<String> = configs
        .iter()
        .filter(|config| config.incomplete > 0)
        .map(|config| format!("{}{}", quoted(&name(&config.label)), config.incomplete))
        .collect();
    if !incomplete.is_empty() {
        lines.push(format!(
            "incomplete (the capture shows only their start; neither ok nor failed, in no \
             statistic): {}",
            incomplete.join("; ")
        ));
    }
    lines
}
