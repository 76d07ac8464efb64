//! `compare`: a results store's Configs, or two plain sample files, judged with the
//! statistics a reviewer would ask for, and a regression gate's verdict on them.

use std::path::{Path, PathBuf};

use tlslab_report::factorial::Factorial;
use tlslab_report::{compare_store, Comparisons, Metric, Names};
use tlslab_stats::{compare_all_in_place, CompareOptions, Comparison};

use crate::results::Results;
use crate::{Control, ErrorKind, WorkflowError};

/// What to compare, how, and what a gate refuses.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// A results store file, or two sample files (baseline first unless `baseline` says);
    /// none when `store` names the store.
    pub inputs: Vec<PathBuf>,
    /// The results store compared, a file or a database's run, when `inputs` is empty.
    pub store: Option<Results>,
    /// The baseline: a Config's label, one of the two sample files (its path or file
    /// name), or with `by` the dimension's value.
    pub baseline: Option<String>,
    /// The dimension compared with every other held fixed (`none`: no dimension).
    pub by: Option<String>,
    /// The phase or event compared; the run summary's choice when `None`.
    pub metric: Option<String>,
    /// For sample files: the CSV column holding the values.
    pub column: Option<String>,
    /// Significance level of the verdicts.
    pub alpha: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Bootstrap seed.
    pub seed: u64,
    /// A regression gate: which differences make the comparison fail.
    pub fail_on: Option<Gate>,
    /// Whether a store's incomplete handshakes (a capture's, outcome `incomplete`) are
    /// compared too, each in the phases it has.
    pub include_incomplete: bool,
}

impl CompareRequest {
    /// `inputs` compared with the command line's defaults (alpha 0.05, 9,999 resamples,
    /// seed 12,345), no gate.
    pub fn new(inputs: Vec<PathBuf>) -> CompareRequest {
        CompareRequest {
            inputs,
            store: None,
            baseline: None,
            by: None,
            metric: None,
            column: None,
            alpha: 0.05,
            resamples: 9_999,
            seed: 12_345,
            fail_on: None,
            include_incomplete: false,
        }
    }
}

/// What a regression gate refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The other's median is higher than the baseline's.
    Slower,
    /// The other's median is lower.
    Faster,
    /// Either.
    Different,
}

impl Gate {
    /// The gate's name, as `--fail-on` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Gate::Slower => "slower",
            Gate::Faster => "faster",
            Gate::Different => "different",
        }
    }

    /// Whether a comparison that detects a difference is one this gate refuses.
    fn refuses(self, comparison: &Comparison) -> bool {
        match self {
            Gate::Slower => comparison.diff_median > 0.0,
            Gate::Faster => comparison.diff_median < 0.0,
            Gate::Different => true,
        }
    }
}

/// A comparison made.
#[derive(Debug, Clone)]
pub enum CompareOutcome {
    /// `by`: the Configs of one store compared along a dimension (no gate applies).
    Factorial(Factorial),
    /// Every Config (or the other sample file) against the baseline.
    Comparisons(Compared),
}

/// Every Config (or the other sample file) against the baseline, judged by the gate.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The comparisons.
    pub set: Comparisons,
    /// The unit of the values: `ms` for a store, none for sample files.
    pub unit: &'static str,
    /// The store's names for its Configs (none for sample files).
    pub names: Option<Names>,
    /// The gate's verdict.
    pub verdict: Verdict,
}

/// A gate's verdict on the comparisons.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// No gate was asked for, or it caught nothing.
    Passed,
    /// The gate caught these comparisons.
    Caught {
        /// The gate.
        gate: Gate,
        /// The comparisons it caught, in order.
        caught: Vec<Comparison>,
        /// How many comparisons were judged.
        of: usize,
    },
}

impl Verdict {
    /// The kind of ending that is not a pass: a broken gate is a threshold (exit 4).
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            Verdict::Passed => None,
            Verdict::Caught { .. } => Some(ErrorKind::Threshold),
        }
    }
}

/// Compares as `request` asks. `control`'s notices say when a store holds a run that did
/// not finish.
pub fn compare(
    request: &CompareRequest,
    control: &Control,
) -> Result<CompareOutcome, WorkflowError> {
    let options = options(request)?;
    // `by: none` is the plain baseline comparison, said explicitly (as a script that
    // builds the flag from a variable may).
    if let Some(by) = request.by.as_deref().filter(|by| *by != "none") {
        return factorial(request, by, &options, control).map(CompareOutcome::Factorial);
    }
    let (set, unit, names) = comparisons(request, &options, control)?;
    let verdict = match request.fail_on {
        Some(gate) => judge(request.alpha, gate, &set),
        None => Verdict::Passed,
    };
    Ok(CompareOutcome::Comparisons(Compared {
        set,
        unit,
        names,
        verdict,
    }))
}

/// The metric asked for, or the one the run summary chose for the store's Configs
/// (`tlslab_report::metric`): `total` for requests on kept connections or over plain HTTP,
/// `ttfb` when every Config sends a request and they vary a session technique, the transport
/// or the HTTP version, else `handshake`.
fn metric_of(store: &tlslab_store::Store, asked: Option<&str>) -> Result<String, WorkflowError> {
    Ok(Metric::choose(&store.configs()?, asked).name)
}

/// The comparison's options, checked.
fn options(request: &CompareRequest) -> Result<CompareOptions, WorkflowError> {
    if !(request.alpha > 0.0 && request.alpha < 1.0) {
        return Err(WorkflowError::usage(
            format!("--alpha {} is not a probability", request.alpha),
            "use a significance level between 0 and 1, for example --alpha 0.05",
        ));
    }
    if !(2..=tlslab_stats::MAX_RESAMPLES).contains(&request.resamples) {
        return Err(WorkflowError::usage(
            format!("--resamples {} is out of range", request.resamples),
            format!(
                "give 2 to {} bootstrap resamples (default 9999)",
                tlslab_stats::MAX_RESAMPLES
            ),
        ));
    }
    Ok(CompareOptions {
        alpha: request.alpha,
        resamples: request.resamples,
        seed: request.seed,
        ..CompareOptions::default()
    })
}

/// `by`: the Configs of one store compared along a dimension.
fn factorial(
    request: &CompareRequest,
    by: &str,
    options: &CompareOptions,
    control: &Control,
) -> Result<Factorial, WorkflowError> {
    let Some(store) = the_store(request)? else {
        return Err(WorkflowError::usage(
            "--by compares the Configs of one results store",
            "give one .db file: tlslab compare RESULTS.db --by tls",
        ));
    };
    let store = store.open(control)?;
    if request.include_incomplete {
        store.include_incomplete();
    }
    let metric = metric_of(&store, request.metric.as_deref())?;
    Ok(tlslab_report::factorial::factorial(
        &store,
        by,
        request.baseline.as_deref(),
        &metric,
        options,
    )?)
}

/// The comparisons of a store's Configs or of two sample files, their unit and the store's
/// names.
fn comparisons(
    request: &CompareRequest,
    options: &CompareOptions,
    control: &Control,
) -> Result<(Comparisons, &'static str, Option<Names>), WorkflowError> {
    if let Some(store) = the_store(request)? {
        let store = store.open(control)?;
        if request.include_incomplete {
            store.include_incomplete();
        }
        let metric = metric_of(&store, request.metric.as_deref())?;
        let set = compare_store(&store, request.baseline.as_deref(), &metric, options)?;
        // Each Config named by the dimensions in which it differs from the baseline, and by
        // the name the run's summary showed.
        return Ok((
            Comparisons::new(set, &metric, &store.configs()?),
            "ms",
            Some(Names::of_store(&store)?),
        ));
    }
    Ok(match request.inputs.as_slice() {
        [first, second] => {
            let (baseline, other) = file_baseline(first, second, request.baseline.as_deref())?;
            let column = request.column.as_deref();
            // Memory: 8 bytes per value, held once (sorted in place, no copy): 160 MB for
            // two files of ten million values; while a file is read, its vector may hold
            // up to twice its values (it grows by doubling). The statistics add nothing
            // that grows with n beyond O(√n): the bootstrap draws each replicate without
            // resampling (tlslab-stats' `bootstrap` module), and the BCa jackknife is
            // summed, not stored.
            let mut groups = vec![
                (name_of(baseline), read_samples(baseline, column)?),
                (name_of(other), read_samples(other, column)?),
            ];
            let set = compare_all_in_place(0, &mut groups, options).map_err(|error| {
                WorkflowError::usage(
                    error.to_string(),
                    "each file needs at least 2 finite numbers",
                )
            })?;
            let metric = request.column.clone().unwrap_or_else(|| "value".into());
            (Comparisons::new(set, &metric, &[]), "", None)
        }
        _ => {
            return Err(WorkflowError::usage(
                format!("{} inputs given", request.inputs.len()),
                "give one results store, or two sample files BASELINE OTHER",
            ))
        }
    })
}

/// The one results store compared: `store`, or the one input; `None` for two sample
/// files (or none).
fn the_store(request: &CompareRequest) -> Result<Option<Results>, WorkflowError> {
    match (&request.store, request.inputs.as_slice()) {
        (Some(_), [_, ..]) => Err(WorkflowError::usage(
            format!(
                "a results store and {} more inputs given",
                request.inputs.len()
            ),
            "give one results store (a file or --store URL), or two sample files BASELINE OTHER",
        )),
        (Some(store), []) => Ok(Some(store.clone())),
        (None, [store]) => Ok(Some(Results::file(store))),
        (None, _) => Ok(None),
    }
}

/// The gate's verdict: the comparisons it catches by the verdict rule of the printed lines
/// (the median's interval excludes 0 and the Holm-adjusted Mann-Whitney p is below alpha).
fn judge(alpha: f64, gate: Gate, set: &Comparisons) -> Verdict {
    let caught: Vec<Comparison> = set
        .comparisons
        .iter()
        .map(|compared| &compared.comparison)
        .filter(|comparison| comparison.detects_difference(alpha) && gate.refuses(comparison))
        .cloned()
        .collect();
    match caught.is_empty() {
        true => Verdict::Passed,
        false => Verdict::Caught {
            gate,
            caught,
            of: set.comparisons.len(),
        },
    }
}

/// The two sample files as (baseline, other): the first given, or the one `asked` names by
/// its path as given or its file name. A name that is neither is a usage error, not
/// ignored: a gate (`--fail-on slower`) compared the wrong way round passes what it should
/// catch.
fn file_baseline<'a>(
    first: &'a Path,
    second: &'a Path,
    asked: Option<&str>,
) -> Result<(&'a Path, &'a Path), WorkflowError> {
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
        (true, true) => Err(WorkflowError::usage(
            format!("--baseline '{asked}' names both sample files"),
            format!("give the baseline's path: one of {valid}"),
        )),
        (false, false) => Err(WorkflowError::usage(
            format!("--baseline '{asked}' is neither sample file"),
            format!(
                "with two sample files the baseline is one of them: use one of {valid}, or give the baseline first"
            ),
        )),
    }
}

/// A sample file's name in the comparisons: its file name, else its path.
fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Reads one number per line, or the named column of a CSV file with a header line.
/// The values of a sample file (see [`tlslab_report::parse_samples`]), read as a stream: the
/// file's bytes are never held whole beside its values.
pub fn read_samples(path: &Path, column: Option<&str>) -> Result<Vec<f64>, WorkflowError> {
    let file = std::fs::File::open(path).map_err(|error| {
        WorkflowError::usage_because(
            format!("cannot read {}", path.display()),
            "give a text file of numbers, one per line, or a CSV file with --column",
            error,
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
