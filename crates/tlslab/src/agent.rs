//! Distributed runs from the command line: `tlslab run --agents N` (the coordinator: the run
//! stored and published, then waited for and summarized, or `--detach`) and `tlslab agent`
//! (one agent). The work is tlslab-workflow's `agents.rs`; this prints it.

use std::time::Duration;

use tlslab_core::terminal::Escaped;
use tlslab_core::Experiment;
use tlslab_report::{render_text, TextOptions};
use tlslab_store::postgres::agents::{AgentRow, Distribution};
use tlslab_workflow::agents::{AgentRequest, Coordinated, Shard, Waiting};

use crate::cli::{AgentArgs, RunArgs};
use crate::failure::CliError;
use crate::output;

/// `tlslab run --agents N`: the run stored and its trials published, then (unless
/// `--detach`) waited for, its summary and each agent's part printed, judged as any run.
pub fn coordinate(args: &RunArgs, experiment: Experiment, agents: u32) -> Result<i32, CliError> {
    let control = crate::run::control(None);
    let request = crate::run::request(args, experiment)?;
    let quiet = crate::run::quiet(args);
    let waiting = |waiting: Waiting| {
        if !quiet && !args.json {
            output::note(format_args!(
                "agents: {} registered of {}; trials: {} of {} done",
                waiting.registered, waiting.expected, waiting.done, waiting.trials
            ));
        }
    };
    let distribution = match args.gang {
        true => Distribution::Gang,
        false => Distribution::Claims,
    };
    let coordinated = tlslab_workflow::agents::coordinate(
        &request,
        (agents, distribution),
        args.detach,
        &control,
        &waiting,
    )?;
    let outcome = match coordinated {
        Coordinated::Detached(results) => {
            output::note(format_args!(
                "run stored in {results}; start {agents} agents with: tlslab agent {}",
                results.as_arguments()
            ));
            output::print(format_args!("{}\n", results.run.unwrap_or_default()))?;
            return Ok(0);
        }
        Coordinated::Finished(outcome) => outcome,
    };
    if !quiet {
        if args.json {
            let mut summary = serde_json::to_value(&outcome.summary).unwrap_or_default();
            if let Some(object) = summary.as_object_mut() {
                object.insert("agents".into(), agents_json(&outcome.agents));
            }
            output::print(format_args!("{summary}\n"))?;
        } else {
            let options = TextOptions {
                verbose: args.verbose,
                width: output::width(),
            };
            output::print_fitted(&render_text(&outcome.summary, &options))?;
            output::print(agents_table(&outcome.agents))?;
        }
    }
    crate::run::finish(args, &outcome)
}

/// `tlslab agent`: joins the run, runs what it claims, says what it did.
pub fn agent(args: &AgentArgs) -> Result<i32, CliError> {
    let store = crate::location::to_write(args.store.as_deref(), None)?.ok_or_else(|| {
        CliError::usage(
            "tlslab agent needs the run's database: give --store postgres://… or set TLSLAB_STORE",
            "use the URL the coordinator (`tlslab run --agents N --store URL`) was given",
        )
    })?;
    let run = match args.run {
        Some(run) => run,
        None => from_environment("TLSLAB_RUN", "--run")?.ok_or_else(|| {
            CliError::usage(
                "tlslab agent needs the run to join: give --run ID or set TLSLAB_RUN",
                "`tlslab run --agents N --detach` prints the run's number",
            )
        })?,
    };
    let shard = match &args.shard {
        Some(text) => Some(text.parse::<Shard>().map_err(|why| {
            CliError::usage(
                format!("--shard {why}"),
                "say --shard 0/4 for the first of four",
            )
        })?),
        None => from_environment("TLSLAB_SHARD", "--shard")?,
    };
    let request = AgentRequest {
        store,
        run,
        shard,
        wait_start: Duration::from_secs(args.wait_start),
        pki_dir: args.pki_dir.clone(),
        invocation: crate::run::invocation()?,
    };
    let control = crate::run::control(None);
    let outcome = tlslab_workflow::agents::agent(&request, &control)?;
    let taken_over: Vec<String> = outcome
        .taken_over
        .iter()
        .map(|(trial, agent)| format!("trial {trial} from agent {agent}"))
        .collect();
    if args.json {
        let value = serde_json::json!({
            "run": run,
            "agent": outcome.agent,
            "clock_offset_ns": outcome.clock.offset_ns,
            "clock_uncertainty_ns": outcome.clock.uncertainty_ns,
            "late_ns": outcome.late_ns,
            "trials": outcome.trials,
            "attempted": outcome.end.attempted,
            "errors": outcome.end.errors,
            "complete": outcome.end.complete,
            "taken_over": outcome.taken_over.iter().map(|(trial, agent)| serde_json::json!({"trial": trial, "agent": agent})).collect::<Vec<_>>(),
            "lost": outcome.lost.iter().map(|lost| lost.agent).collect::<Vec<_>>(),
        });
        output::print(format_args!("{value}\n"))?;
    } else {
        output::print(format_args!(
            "agent {} of run {}: {} trials, {} attempts ({} failed); clock {:+.3} ms ± {:.3} ms against the database server, started {:.1} ms after the common start{}\n",
            outcome.agent,
            outcome.results,
            outcome.trials,
            outcome.end.attempted,
            outcome.end.errors,
            outcome.clock.offset_ns as f64 / 1e6,
            outcome.clock.uncertainty_ns as f64 / 1e6,
            outcome.late_ns as f64 / 1e6,
            match taken_over.is_empty() {
                true => String::new(),
                false => format!("; took over {}", taken_over.join(", ")),
            }
        ))?;
    }
    Ok(match outcome.end.complete {
        true => 0,
        false => crate::failure::exit_code(tlslab_workflow::ErrorKind::Interrupted),
    })
}

/// A variable's value parsed, naming the variable and the flag it stands for when it does
/// not parse; `None` when unset or empty.
fn from_environment<T: std::str::FromStr>(
    variable: &str,
    flag: &str,
) -> Result<Option<T>, CliError> {
    match std::env::var(variable) {
        Ok(text) if !text.is_empty() => text.parse().map(Some).map_err(|_| {
            CliError::usage(
                format!("{variable}={} is not a valid {flag}", Escaped(&text)),
                format!("give {flag} instead, or fix {variable}"),
            )
        }),
        _ => Ok(None),
    }
}

/// Each agent's part of a distributed run, one line each.
pub fn agents_table(agents: &[AgentRow]) -> String {
    if agents.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\nagent  shard  host (address)                trials  samples  errors   rate/s  CPU/handshake  clock offset         late\n",
    );
    for agent in agents {
        let rate = match agent.span_ns {
            0 => String::from("-"),
            span => format!("{:.0}", agent.samples as f64 / (span as f64 / 1e9)),
        };
        let cpu = match agent.samples {
            0 => String::from("-"),
            samples => format!("{:.0} µs", agent.cpu_ns as f64 / samples as f64 / 1e3),
        };
        let clock = agent.clock.map_or(String::from("-"), |clock| {
            format!(
                "{:+.3} ± {:.3} ms",
                clock.offset_ns as f64 / 1e6,
                clock.uncertainty_ns as f64 / 1e6
            )
        });
        let late = agent.late_ns.map_or(String::from("-"), |late| {
            format!("{:.1} ms", late as f64 / 1e6)
        });
        text.push_str(&format!(
            "{:>5}  {:<5}  {:<28}  {:>6}  {:>7}  {:>6}  {:>7}  {:>13}  {:<19}  {}{}\n",
            agent.agent,
            Escaped(agent.shard.as_deref().unwrap_or("-")),
            Escaped(&match &agent.address {
                Some(address) => format!("{} ({address})", agent.host),
                None => agent.host.clone(),
            }),
            agent.trials,
            agent.samples,
            agent.errors,
            rate,
            cpu,
            clock,
            late,
            match (&agent.reason, agent.complete) {
                (Some(reason), _) => format!("  {}", Escaped(reason)),
                (None, false) if agent.finished => String::from("  incomplete"),
                (None, false) => String::from("  running"),
                (None, true) => String::new(),
            }
        ));
    }
    text
}

/// The agents as JSON, beside the summary's own fields.
fn agents_json(agents: &[AgentRow]) -> serde_json::Value {
    agents
        .iter()
        .map(|agent| {
            serde_json::json!({
                "agent": agent.agent,
                "shard": agent.shard,
                "host": agent.host,
                "address": agent.address,
                "trials": agent.trials,
                "samples": agent.samples,
                "errors": agent.errors,
                "span_ns": agent.span_ns,
                "cpu_ns": agent.cpu_ns,
                "clock_offset_ns": agent.clock.map(|clock| clock.offset_ns),
                "clock_uncertainty_ns": agent.clock.map(|clock| clock.uncertainty_ns),
                "late_ns": agent.late_ns,
                "complete": agent.complete,
                "reason": agent.reason,
            })
        })
        .collect()
}
