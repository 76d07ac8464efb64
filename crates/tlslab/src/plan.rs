//! `tlslab plan`: the flags as a [`PlanRequest`], and the plan printed. The planning is the
//! plan workflow's ([`tlslab_workflow::plan`]).

use tlslab_core::terminal::Escaped;
use tlslab_workflow::plan::{Goal, PlanOutcome, PlanRequest};

use crate::cli::PlanArgs;
use crate::failure::CliError;
use crate::output;

pub fn plan(args: &PlanArgs) -> Result<i32, CliError> {
    let request = PlanRequest {
        store: crate::location::to_read(args.results.as_deref(), &args.store)?,
        metric: args.metric.clone(),
        goal: Goal::parse(&args.detect, &args.power, &args.alpha)?,
    };
    let plan = tlslab_workflow::plan::plan(&request, &crate::run::notices())?;
    if args.json {
        output::print(format_args!(
            "{}\n",
            output::json(&serde_json::json!({
                "metric": plan.metric,
                "detect": plan.goal.relative,
                "power": plan.goal.power,
                "alpha": plan.goal.alpha,
                "configs": plan.configs,
                "handshakes": plan.handshakes,
                "seconds": plan.seconds,
            }))
        ))?;
        return Ok(0);
    }
    output::print_fitted(&render(&plan))?;
    Ok(0)
}

/// The plans for a person: each Config's, then the -n to run with and how long it takes.
fn render(plan: &PlanOutcome) -> String {
    let Goal {
        relative,
        power,
        alpha,
    } = plan.goal;
    let mut out = format!(
        "{}: handshakes per Config to detect a {:.1}% difference of medians with power {:.0}% (two-sided, alpha {}), from the spread of this run's logs\n",
        plan.metric,
        relative * 100.0,
        power * 100.0,
        alpha
    );
    for config in &plan.configs {
        out.push_str(&match (config.sigma_log, config.handshakes) {
            (Some(sigma), Some(n)) => format!(
                "  {}: spread {:.3} (log sd, {} samples) → {} handshakes{}\n",
                Escaped(&config.label),
                sigma,
                config.pilot_samples,
                n,
                config
                    .seconds
                    .map(|seconds| format!(
                        ", {seconds:.1} s at {:.0}/s",
                        config.rate_per_second.unwrap_or(0.0)
                    ))
                    .unwrap_or_default()
            ),
            _ => format!(
                "  {}: fewer than 2 successful samples of {}: no estimate\n",
                Escaped(&config.label),
                Escaped(&plan.metric)
            ),
        });
    }
    if let Some(most) = plan.handshakes {
        out.push_str(&match plan.seconds {
            Some(total) => format!(
                "run with -n {most} (the most any Config needs): about {total:.0} s of handshakes at the rates measured\n"
            ),
            None => format!(
                "run with -n {most} (the most any Config needs); how long that takes is unknown: {} of {} Configs recorded no rate (a run cut off before its first block ended records none)\n",
                plan.unrated,
                plan.configs.len()
            ),
        });
    }
    out
}
