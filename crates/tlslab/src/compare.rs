//! `tlslab compare`: a results store's configs, or two plain sample files, judged with the
//! statistics a reviewer would ask for.

use std::path::Path;

use tlslab_core::terminal::Escaped;
use tlslab_report::{compare_store, render_comparisons, Comparisons, Metric};
use tlslab_stats::{compare_all, CompareOptions};

use crate::cli::{CompareArgs, Gate};
use crate::failure::{CliError, EXIT_THRESHOLD};
use crate::output;

/// The metric asked for, or the one the run summary chose for the store's Configs
/// (`tlslab_report::metric`): `total` for requests on kept connections or over plain HTTP,
/// `ttfb` when every Config sends a request and they vary a session technique, the transport
/// or the HTTP version, else `handshake`.
fn metric_of(store: &tlslab_store::Store, asked: Option<&str>) -> Result<String, CliError> {
    Ok(Metric::choose(&store.configs()?, asked).name)
}

pub fn compare(args: &CompareArgs) -> Result<i32, CliError> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(CliError::usage(
            format!("--alpha {} is not a probability", args.alpha),
            "use a significance level between 0 and 1, for example --alpha 0.05",
        ));
    }
    if !(2..=tlslab_stats::MAX_RESAMPLES).contains(&args.resamples) {
        return Err(CliError::usage(
            format!("--resamples {} is out of range", args.resamples),
            format!(
                "give 2 to {} bootstrap resamples (default 9999)",
                tlslab_stats::MAX_RESAMPLES
            ),
        ));
    }
    let options = CompareOptions {
        alpha: args.alpha,
        resamples: args.resamples,
        seed: args.seed,
        ..CompareOptions::default()
    };
    // `--by none` is the plain baseline comparison, said explicitly (as a script that
    // builds the flag from a variable may).
    if let Some(by) = args.by.as_deref().filter(|by| *by != "none") {
        let [store] = args.inputs.as_slice() else {
            return Err(CliError::usage(
                "--by compares the Configs of one results store",
                "give one .db file: tlslab compare RESULTS.db --by tls",
            ));
        };
        let store = output::open_store(store)?;
        let metric = metric_of(&store, args.metric.as_deref())?;
        let factorial = tlslab_report::factorial::factorial(
            &store,
            by,
            args.baseline.as_deref(),
            &metric,
            &options,
        )?;
        if args.json {
            output::print(format_args!("{}\n", output::json(&factorial)))?;
        } else {
            output::print_fitted(&tlslab_report::factorial::render_factorial(&factorial))?;
        }
        return Ok(0);
    }
    let (set, unit) = match args.inputs.as_slice() {
        [store] => {
            let store = output::open_store(store)?;
            let metric = metric_of(&store, args.metric.as_deref())?;
            let set = compare_store(&store, args.baseline.as_deref(), &metric, &options)?;
            // Each Config named by the dimensions in which it differs from the baseline.
            (Comparisons::new(set, &metric, &store.configs()?), "ms")
        }
        [baseline, other] => {
            let groups = vec![
                (
                    name_of(baseline),
                    read_samples(baseline, args.column.as_deref())?,
                ),
                (name_of(other), read_samples(other, args.column.as_deref())?),
            ];
            let set = compare_all(0, &groups, &options).map_err(|error| {
                CliError::usage(error, "each file needs at least 2 finite numbers")
            })?;
            let metric = args.column.clone().unwrap_or_else(|| "value".into());
            (Comparisons::new(set, &metric, &[]), "")
        }
        _ => unreachable!("clap allows one or two inputs"),
    };
    print_set(&set, unit, args.json)?;
    let Some(gate) = args.fail_on else {
        return Ok(0);
    };
    // The verdict rule of the printed lines: the median's interval excludes 0 and the
    // Holm-adjusted Mann-Whitney p is below alpha.
    let caught: Vec<_> = set
        .comparisons
        .iter()
        .map(|compared| &compared.comparison)
        .filter(|comparison| {
            comparison.detects_difference(args.alpha)
                && match gate {
                    Gate::Slower => comparison.diff_median > 0.0,
                    Gate::Faster => comparison.diff_median < 0.0,
                    Gate::Different => true,
                }
        })
        .collect();
    for comparison in &caught {
        output::note(format_args!(
            "error: '{}' against '{}': {}",
            Escaped(&comparison.other),
            Escaped(&comparison.baseline),
            comparison.verdict
        ));
    }
    if caught.is_empty() {
        return Ok(0);
    }
    output::note(format_args!(
        "hint: --fail-on {} caught {} of {} comparisons",
        match gate {
            Gate::Slower => "slower",
            Gate::Faster => "faster",
            Gate::Different => "different",
        },
        caught.len(),
        set.comparisons.len()
    ));
    Ok(EXIT_THRESHOLD)
}

fn print_set(set: &Comparisons, unit: &str, json: bool) -> Result<(), CliError> {
    if json {
        output::print(format_args!("{}\n", output::json(set)))
    } else {
        output::print_fitted(&render_comparisons(set, unit))
    }
}

fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Reads one number per line, or the named column of a CSV file with a header line.
/// The values of a sample file (see [`tlslab_report::parse_samples`]).
pub fn read_samples(path: &Path, column: Option<&str>) -> Result<Vec<f64>, CliError> {
    let bytes = std::fs::read(path).map_err(|error| {
        CliError::usage(
            format!("cannot read {}: {error}", path.display()),
            "give a text file of numbers, one per line, or a CSV file with --column",
        )
    })?;
    tlslab_report::parse_samples(&bytes, column, &path.display().to_string())
        .map_err(|error| CliError::usage(error.message, error.hint))
}
