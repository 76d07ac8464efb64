//! `tlslab load`: the flags become a request for the load workflow (tlslab-workflow); its
//! figures are printed here, as tlslab's layout, ab's (`--format ab`) or JSON.

use tlslab_core::terminal::Escaped;
use tlslab_report::load::{render_ab, render_load_text, LoadSummary};
use tlslab_report::RunSummary;
use tlslab_workflow::load::{defaults, Url};

use crate::cli::LoadArgs;
use crate::failure::CliError;
use crate::output;

pub fn load(args: &LoadArgs) -> Result<i32, CliError> {
    let run = &args.run;
    if run.agents.is_some() {
        return Err(CliError::usage(
            "--agents is for tlslab run: a distributed load is not built yet",
            "run the load from one machine, or a handshake plan with tlslab run --agents N",
        ));
    }
    tlslab_workflow::load::check_metric(run.metric.as_deref())?;
    let mut experiment = crate::run::experiment(run, defaults(run.page.is_some()))?;
    if let Some(text) = &args.url {
        Url::parse(text)?.aim(&mut experiment, run.path.is_some(), run.scheme.is_some());
    }
    if run.dump_experiment {
        output::print(experiment.to_toml())?;
        return Ok(0);
    }
    let control = crate::run::control(crate::run::progress(run, &experiment));
    let request = crate::run::request(run, experiment)?;
    let quiet = crate::run::quiet(run);
    let outcome = tlslab_workflow::load::load(&request, &control, !quiet);
    crate::run::clear_progress(run);
    let outcome = outcome?;
    if let Some(figures) = outcome.figures {
        print(args, &figures?, &outcome.run.summary)?;
    }
    crate::run::finish(run, &outcome.run)
}

/// The load figures (ab's layout with `--format ab`, JSON with `--json`).
fn print(args: &LoadArgs, load: &LoadSummary, summary: &RunSummary) -> Result<(), CliError> {
    if args.run.json {
        return output::print(format_args!("{}\n", output::json(load)));
    }
    if args.format == "ab" {
        return output::print(render_ab(load));
    }
    let mut text = render_load_text(load);
    if args.run.verbose {
        // What the run summary knows beyond the load figures: phases, limit, bytes.
        text.push_str(&tlslab_report::render_details_of_each(summary));
    }
    for warning in &summary.warnings {
        text.push_str(&format!("warning: {}\n", Escaped(warning)));
    }
    text.push_str(&format!(
        "{} requests, {} errors · results: {}\n",
        summary.attempted,
        summary.errors,
        Escaped(&summary.store)
    ));
    output::print_fitted(&text)
}
