//! `tlslab compare`: a results store's configs, or two plain sample files, judged with the
//! statistics a reviewer would ask for.

use std::path::Path;

use tlslab_core::terminal::Escaped;
use tlslab_report::{
    compare_store, render_comparisons, render_store_comparisons, Comparisons, Metric, Names,
};
use tlslab_stats::{compare_all_in_place, CompareOptions};

use crate::cli::{CompareArgs, Gate};
use crate::failure::{exit_code, CliError};
use crate::output;

/// The metric asked for, or the one the run summary chose for the store's Configs
/// (`tlslab_report::metric`): `total` for requests on kept connections or over plain HTTP,
/// `ttfb` when every Config sends a request and they vary a session technique, the transport
/// or the HTTP version, else `handshake`.
fn metric_of(store: &tlslab_store::Store, asked: Option<&str>) -> Result<String, CliError> {
    Ok(Metric::choose(&store.configs()?, asked).name)
}

/// The comparison's options, checked.
fn options(args: &CompareArgs) -> Result<CompareOptions, CliError> {
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
    Ok(CompareOptions {
        alpha: args.alpha,
        resamples: args.resamples,
        seed: args.seed,
        ..CompareOptions::default()
    })
}

pub fn compare(args: &CompareArgs) -> Result<i32, CliError> {
    let options = options(args)?;
    // `--by none` is the plain baseline comparison, said explicitly (as a script that
    // builds the flag from a variable may).
    if let Some(by) = args.by.as_deref().filter(|by| *by != "none") {
        factorial(args, by, &options)?;
        return Ok(0);
    }
    let (set, unit, names) = comparisons(args, &options)?;
    print_set(&set, unit, names.as_ref(), args.json)?;
    let Some(gate) = args.fail_on else {
        return Ok(0);
    };
    Ok(judge(args, gate, &set))
}

/// `--by`: the Configs of one store compared along a dimension.
fn factorial(args: &CompareArgs, by: &str, options: &CompareOptions) -> Result<(), CliError> {
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
        options,
    )?;
    if args.json {
        output::print(format_args!("{}\n", output::json(&factorial)))
    } else {
        output::print_fitted(&tlslab_report::factorial::render_factorial(&factorial))
    }
}

/// The comparisons of a store's Configs or of two sample files, their unit and the store's
/// names.
fn comparisons(
    args: &CompareArgs,
    options: &CompareOptions,
) -> Result<(Comparisons, &'static str, Option<Names>), CliError> {
    Ok(match args.inputs.as_slice() {
        [store] => {
            let store = output::open_store(store)?;
            let metric = metric_of(&store, args.metric.as_deref())?;
            let set = compare_store(&store, args.baseline.as_deref(), &metric, options)?;
            // Each Config named by the dimensions in which it differs from the baseline, and
            // by the name the run's summary showed.
            (
                Comparisons::new(set, &metric, &store.configs()?),
                "ms",
                Some(Names::of_store(&store)?),
            )
        }
        [first, second] => {
            let (baseline, other) = file_baseline(first, second, args.baseline.as_deref())?;
            // Memory: 8 bytes per value, held once (sorted in place, no copy): 160 MB for
            // two files of ten million values; while a file is read, its vector may hold
            // up to twice its values (it grows by doubling). The statistics add nothing
            // that grows with n beyond O(√n): the bootstrap draws each replicate without
            // resampling (tlslab-stats' `bootstrap` module), and the BCa jackknife is
            // summed, not stored.
            let mut groups = vec![
                (
                    name_of(baseline),
                    read_samples(baseline, args.column.as_deref())?,
                ),
                (name_of(other), read_samples(other, args.column.as_deref())?),
            ];
            let set = compare_all_in_place(0, &mut groups, options).map_err(|error| {
                CliError::usage(error, "each file needs at least 2 finite numbers")
            })?;
            let metric = args.column.clone().unwrap_or_else(|| "value".into());
            (Comparisons::new(set, &metric, &[]), "", None)
        }
        _ => unreachable!("clap allows one or two inputs"),
    })
}

/// `--fail-on`: the comparisons the gate catches said as errors; the exit code.
fn judge(args: &CompareArgs, gate: Gate, set: &Comparisons) -> i32 {
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
        return 0;
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
    exit_code(tlslab_workflow::ErrorKind::Threshold)
}

fn print_set(
    set: &Comparisons,
    unit: &str,
    names: Option<&Names>,
    json: bool,
) -> Result<(), CliError> {
    if json {
        output::print(format_args!("{}\n", output::json(set)))
    } else if let Some(names) = names {
        output::print_fitted(&render_store_comparisons(set, unit, names))
    } else {
        output::print_fitted(&render_comparisons(set, unit))
    }
}

/// The two sample files as (baseline, other): the first given, or the one `--baseline`
/// names by its path as given or its file name. A name that is neither is a usage error, not
/// ignored: a gate (`--fail-on slower`) compared the wrong way round passes what it should
/// catch.
fn file_baseline<'a>(
    first: &'a Path,
    second: &'a Path,
    asked: Option<&str>,
) -> Result<(&'a Path, &'a Path), CliError> {
    let Some(asked) = asked else {
        return Ok((first, second));
    };
    let valid = [first, second]
        .map(|path| format!("'{}'", path.display()))
        .join(", ");
    let is = |path: &Path| path.display().to_string() == asked;
    let is_named = |path: &Path| name_of(path) == asked;
    match (is(first), is(second)) {
        // The same file twice is its own baseline.
        (true, _) => return Ok((first, second)),
        (false, true) => return Ok((second, first)),
        (false, false) => {}
    }
    match (is_named(first), is_named(second)) {
        (true, false) => Ok((first, second)),
        (false, true) => Ok((second, first)),
        // Two files of one name in two directories: only the path tells them apart.
        (true, true) => Err(CliError::usage(
            format!("--baseline '{asked}' names both sample files"),
            format!("give the baseline's path: one of {valid}"),
        )),
        (false, false) => Err(CliError::usage(
            format!("--baseline '{asked}' is neither sample file"),
            format!(
                "with two sample files the baseline is one of them: use one of {valid}, or give the baseline first"
            ),
        )),
    }
}

fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Reads one number per line, or the named column of a CSV file with a header line.
/// The values of a sample file (see [`tlslab_report::parse_samples`]), read as a stream: the
/// file's bytes are never held whole beside its values.
pub fn read_samples(path: &Path, column: Option<&str>) -> Result<Vec<f64>, CliError> {
    let file = std::fs::File::open(path).map_err(|error| {
        CliError::usage(
            format!("cannot read {}: {error}", path.display()),
            "give a text file of numbers, one per line, or a CSV file with --column",
        )
    })?;
    let mut values = tlslab_report::read_samples(
        LineLimited {
            inner: file,
            line: 0,
        },
        column,
        &path.display().to_string(),
    )?;
    // The vector grew by doubling: give back the unused part (up to half of it) before the
    // next file is read.
    values.shrink_to_fit();
    Ok(values)
}

/// The longest line a sample file may have. A line holds a number or a CSV row; a longer one
/// means the file is not a sample file (`/dev/zero`, a binary), and the CSV reader would
/// otherwise hold the whole "line" in memory.
const LONGEST_LINE: usize = 1 << 20;

/// A reader that fails once a line exceeds [`LONGEST_LINE`] bytes, so reading any file
/// takes bounded memory besides its values.
struct LineLimited<R> {
    inner: R,
    /// Bytes since the last newline.
    line: usize,
}

impl<R: std::io::Read> std::io::Read for LineLimited<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let count = self.inner.read(buffer)?;
        let read = &buffer[..count];
        self.line = match read.iter().rposition(|&byte| byte == b'\n') {
            Some(last) => count - last - 1,
            None => self.line + count,
        };
        if self.line > LONGEST_LINE {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than {} MiB", LONGEST_LINE >> 20),
            ));
        }
        Ok(count)
    }
}
