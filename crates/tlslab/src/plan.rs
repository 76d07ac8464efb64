//! `tlslab plan`: from a pilot run (or any stored run), the handshakes each Config needs for
//! a comparison to detect a given relative difference with a given power, and how long that
//! takes at the rate the pilot measured (the formula is tlslab-stats' `power`).

use serde::Serialize;
use tlslab_core::terminal::Escaped;
use tlslab_report::RunSummary;
use tlslab_stats::power::{handshakes_needed, log_spread};

use crate::cli::PlanArgs;
use crate::failure::CliError;
use crate::output;

#[derive(Debug, Serialize)]
struct ConfigPlan {
    label: String,
    pilot_samples: usize,
    sigma_log: Option<f64>,
    handshakes: Option<u64>,
    rate_per_second: Option<f64>,
    seconds: Option<f64>,
}

fn fraction(text: &str, name: &str) -> Result<f64, CliError> {
    let value = match text.trim().strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|percent| percent / 100.0),
        None => text.trim().parse::<f64>(),
    };
    value
        .ok()
        .filter(|value| *value > 0.0 && *value < 1.0)
        .ok_or_else(|| {
            CliError::usage(
                format!("{name} {text}: not a share between 0 and 1"),
                format!("for example {name} 2% or {name} 0.02"),
            )
        })
}

pub fn plan(args: &PlanArgs) -> Result<i32, CliError> {
    let goal = Goal {
        relative: fraction(&args.detect, "--detect")?,
        power: fraction(&args.power, "--power")?,
        alpha: fraction(&args.alpha, "--alpha")?,
    };
    let store = output::open_store(&args.store)?;
    let plans = config_plans(&store, &args.metric, &goal)?;
    let most = plans.iter().filter_map(|plan| plan.handshakes).max();
    // One -n for every Config: the most any needs, at each Config's own rate. A Config
    // without a rate (a run cut off before its first block ended records none) leaves the
    // time unknown: a sum without it would understate the time, and a sum of nothing is
    // -0.0 in Rust, printed as "-0 s".
    let unrated = plans
        .iter()
        .filter(|plan| !plan.rate_per_second.is_some_and(|rate| rate > 0.0))
        .count();
    let total: Option<f64> = (unrated == 0).then(|| {
        plans
            .iter()
            .filter_map(|plan| plan.rate_per_second)
            .map(|rate| most.unwrap_or(0) as f64 / rate)
            .fold(0.0, |total, seconds| total + seconds)
    });
    if args.json {
        output::print(format_args!(
            "{}\n",
            output::json(&serde_json::json!({
                "metric": args.metric,
                "detect": goal.relative,
                "power": goal.power,
                "alpha": goal.alpha,
                "configs": plans,
                "handshakes": most,
                "seconds": total,
            }))
        ))?;
        return Ok(0);
    }
    output::print_fitted(&render(args, &goal, &plans, (most, total, unrated)))?;
    Ok(0)
}

/// The difference to detect, with what power, at what significance.
struct Goal {
    relative: f64,
    power: f64,
    alpha: f64,
}

/// Each Config's plan, from the spread of its `metric` in the store.
fn config_plans(
    store: &tlslab_store::Store,
    metric: &str,
    goal: &Goal,
) -> Result<Vec<ConfigPlan>, CliError> {
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

/// The plans for a person: each Config's, then the -n to run with and how long it takes.
fn render(
    args: &PlanArgs,
    goal: &Goal,
    plans: &[ConfigPlan],
    (most, total, unrated): (Option<u64>, Option<f64>, usize),
) -> String {
    let Goal {
        relative,
        power,
        alpha,
    } = *goal;
    let mut out = format!(
        "{}: handshakes per Config to detect a {:.1}% difference of medians with power {:.0}% (two-sided, alpha {}), from the spread of this run's logs\n",
        args.metric,
        relative * 100.0,
        power * 100.0,
        alpha
    );
    for plan in plans {
        out.push_str(&match (plan.sigma_log, plan.handshakes) {
            (Some(sigma), Some(n)) => format!(
                "  {}: spread {:.3} (log sd, {} samples) → {} handshakes{}\n",
                Escaped(&plan.label),
                sigma,
                plan.pilot_samples,
                n,
                plan.seconds
                    .map(|seconds| format!(
                        ", {seconds:.1} s at {:.0}/s",
                        plan.rate_per_second.unwrap_or(0.0)
                    ))
                    .unwrap_or_default()
            ),
            _ => format!(
                "  {}: fewer than 2 successful samples of {}: no estimate\n",
                Escaped(&plan.label),
                Escaped(&args.metric)
            ),
        });
    }
    if let Some(most) = most {
        out.push_str(&match total {
            Some(total) => format!(
                "run with -n {most} (the most any Config needs): about {total:.0} s of handshakes at the rates measured\n"
            ),
            None => format!(
                "run with -n {most} (the most any Config needs); how long that takes is unknown: {unrated} of {} Configs recorded no rate (a run cut off before its first block ended records none)\n",
                plans.len()
            ),
        });
    }
    out
}
