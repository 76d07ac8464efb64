//! `tlslab compare`: the flags as a [`CompareRequest`], the comparisons printed, and a
//! `--fail-on` gate's verdict said and turned into the exit code. The comparing is the
//! compare workflow's ([`tlslab_workflow::compare`]).

use tlslab_core::terminal::Escaped;
use tlslab_report::{render_comparisons, render_store_comparisons};
use tlslab_workflow::compare::{CompareOutcome, CompareRequest, Compared, Gate, Verdict};

use crate::cli::{self, CompareArgs};
use crate::failure::{exit_code, CliError};
use crate::output;

/// The request the flags describe: one results store (RESULTS, `--store` or
/// `TLSLAB_STORE`, and `--run`), or two sample files.
fn request(args: &CompareArgs) -> Result<CompareRequest, CliError> {
    let store = match args.inputs.as_slice() {
        [] => Some(crate::location::to_read(None, &args.store)?),
        [store] => Some(crate::location::to_read(Some(store), &args.store)?),
        _ => {
            crate::location::refuse_with_sample_files(&args.store)?;
            None
        }
    };
    Ok(CompareRequest {
        inputs: match store {
            Some(_) => Vec::new(),
            None => args.inputs.clone(),
        },
        store,
        baseline: args.baseline.clone(),
        by: args.by.clone(),
        metric: args.metric.clone(),
        column: args.column.clone(),
        alpha: args.alpha,
        resamples: args.resamples,
        seed: args.seed,
        include_incomplete: args.include_incomplete,
        fail_on: args.fail_on.map(|gate| match gate {
            cli::Gate::Slower => Gate::Slower,
            cli::Gate::Faster => Gate::Faster,
            cli::Gate::Different => Gate::Different,
        }),
    })
}

pub fn compare(args: &CompareArgs) -> Result<i32, CliError> {
    let outcome = tlslab_workflow::compare::compare(&request(args)?, &crate::run::notices())?;
    match outcome {
        CompareOutcome::Factorial(factorial) => {
            if args.json {
                output::print(format_args!("{}\n", output::json(&factorial)))?;
            } else {
                output::print_fitted(&tlslab_report::factorial::render_factorial(&factorial))?;
            }
            Ok(0)
        }
        CompareOutcome::Comparisons(compared) => {
            print_set(&compared, args.json)?;
            Ok(say_verdict(&compared.verdict))
        }
    }
}

fn print_set(compared: &Compared, json: bool) -> Result<(), CliError> {
    let Compared {
        set, unit, names, ..
    } = compared;
    if json {
        output::print(format_args!("{}\n", output::json(set)))
    } else if let Some(names) = names {
        output::print_fitted(&render_store_comparisons(set, unit, names))
    } else {
        output::print_fitted(&render_comparisons(set, unit))
    }
}

/// `--fail-on`: the comparisons the gate caught said as errors; the exit code.
fn say_verdict(verdict: &Verdict) -> i32 {
    let Verdict::Caught { gate, caught, of } = verdict else {
        return 0;
    };
    for comparison in caught {
        output::note(format_args!(
            "error: '{}' against '{}': {}",
            Escaped(&comparison.other),
            Escaped(&comparison.baseline),
            comparison.verdict
        ));
    }
    output::note(format_args!(
        "hint: --fail-on {} caught {} of {} comparisons",
        gate.name(),
        caught.len(),
        of
    ));
    verdict.kind().map_or(0, exit_code)
}
