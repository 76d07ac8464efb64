//! `plan`: from a pilot run (or any stored run), the handshakes each Config needs for a
//! comparison to detect a given relative difference with a given power, and how long that
//! takes at the rate the pilot measured (the formula is tlslab-stats' `power`).

use serde::Serialize;
use tlslab_report::RunSummary;
use tlslab_stats::power::{handshakes_needed, log_spread};

use crate::results::Results;
use crate::{Control, WorkflowError};

/// The store to plan from, the phase planned for, and the goal.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// A results store's run (a short pilot run is enough): a file, or a database's run.
    pub store: Results,
    /// The phase planned for (`handshake`, `server_response`, `ttfb`, ...).
    pub metric: String,
    /// The difference to detect, with what power, at what significance.
    pub goal: Goal,
}

/// The difference to detect, with what power, at what significance: each a share between
/// 0 and 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Goal {
    /// The relative difference of medians to detect (0.05: 5%).
    pub relative: f64,
    /// The chance of detecting it when it is there.
    pub power: f64,
    /// The significance level of the test.
    pub alpha: f64,
}

impl Goal {
    /// The goal as the command line gives it (`2%` or `0.02` each), each checked.
    pub fn parse(detect: &str, power: &str, alpha: &str) -> Result<Goal, WorkflowError> {
        Ok(Goal {
            relative: fraction(detect, "--detect")?,
            power: fraction(power, "--power")?,
            alpha: fraction(alpha, "--alpha")?,
        })
    }

    /// Each share checked to lie strictly between 0 and 1.
    fn check(&self) -> Result<(), WorkflowError> {
        for (value, name) in [
            (self.relative, "--detect"),
            (self.power, "--power"),
            (self.alpha, "--alpha"),
        ] {
            fraction(&value.to_string(), name)?;
        }
        Ok(())
    }
}

/// `text` (`2%` or `0.02`) as a share strictly between 0 and 1; `name` is the option that
/// gave it, for the message.
fn fraction(text: &str, name: &str) -> Result<f64, WorkflowError> {
    let value = match text.trim().strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|percent| percent / 100.0),
        None => text.trim().parse::<f64>(),
    };
    value
        .ok()
        .filter(|value| *value > 0.0 && *value < 1.0)
        .ok_or_else(|| {
            WorkflowError::usage(
                format!("{name} {text}: not a share between 0 and 1"),
                format!("for example {name} 2% or {name} 0.02"),
            )
        })
}

/// One Config's plan.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigPlan {
    /// The Config's label.
    pub label: String,
    /// The pilot's successful samples of the metric.
    pub pilot_samples: usize,
    /// The spread of their logs (none below 2 samples).
    pub sigma_log: Option<f64>,
    /// The handshakes needed.
    pub handshakes: Option<u64>,
    /// The rate the pilot measured (none for a run cut off before its first block ended).
    pub rate_per_second: Option<f64>,
    /// How long the handshakes take at that rate.
    pub seconds: Option<f64>,
}

/// The plan: each Config's, and the one `-n` to run every Config with.
#[derive(Debug, Clone)]
pub struct PlanOutcome {
    /// The phase planned for.
    pub metric: String,
    /// The goal planned for.
    pub goal: Goal,
    /// Each Config's plan, in the store's order.
    pub configs: Vec<ConfigPlan>,
    /// The most handshakes any Config needs (none when no Config has an estimate).
    pub handshakes: Option<u64>,
    /// How long that many handshakes of every Config take at each one's rate; unknown
    /// (`None`) when a Config recorded no rate.
    pub seconds: Option<f64>,
    /// The Configs that recorded no rate.
    pub unrated: usize,
}

/// Plans as `request` asks. `control`'s notices say when the store holds a run that did not
/// finish.
pub fn plan(request: &PlanRequest, control: &Control) -> Result<PlanOutcome, WorkflowError> {
    request.goal.check()?;
    let store = request.store.open(control)?;
    let configs = config_plans(&store, &request.metric, &request.goal)?;
    let most = configs.iter().filter_map(|plan| plan.handshakes).max();
    // One -n for every Config: the most any needs, at each Config's own rate. A Config
    // without a rate (a run cut off before its first block ended records none) leaves the
    // time unknown: a sum without it would understate the time, and a sum of nothing is
    // -0.0 in Rust, printed as "-0 s".
    let unrated = configs
        .iter()
        .filter(|plan| !plan.rate_per_second.is_some_and(|rate| rate > 0.0))
        .count();
    let seconds = (unrated == 0).then(|| {
        configs
            .iter()
            .filter_map(|plan| plan.rate_per_second)
            .map(|rate| most.unwrap_or(0) as f64 / rate)
            .fold(0.0, |total, seconds| total + seconds)
    });
    Ok(PlanOutcome {
        metric: request.metric.clone(),
        goal: request.goal,
        configs,
        handshakes: most,
        seconds,
        unrated,
    })
}

/// Each Config's plan, from the spread of its `metric` in the store.
fn config_plans(
    store: &tlslab_store::Store,
    metric: &str,
    goal: &Goal,
) -> Result<Vec<ConfigPlan>, WorkflowError> {
    let Goal {
        relative,
        power,
        alpha,
    } = *goal;
    let summary = RunSummary::from_store(store)?;
    let rows = store.configs()?;
    let mut plans = Vec::new();
    for (row, config) in rows.iter().zip(&summary.configs) {
        let values = store.phase_values(row.id, metric)?;
        let sigma_log = log_spread(&values);
        let handshakes =
            sigma_log.and_then(|sigma| handshakes_needed(sigma, relative, alpha, power));
        let rate = config.handshakes_per_second;
        plans.push(ConfigPlan {
            label: config.label.clone(),
            pilot_samples: values.len(),
            sigma_log,
            handshakes,
            rate_per_second: rate,
            seconds: handshakes
                .zip(rate)
                .filter(|(_, rate)| *rate > 0.0)
                .map(|(n, rate)| n as f64 / rate),
        });
    }
    Ok(plans)
}
