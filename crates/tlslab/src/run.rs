//! `tlslab run`: flags and experiment file → matrix → plan → engine → store → summary.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tlslab_core::terminal::Escaped;
use tlslab_core::{Experiment, Plan};
use tlslab_engine::{Progress, RunOptions, Stop};
use tlslab_report::{render_text, RunSummary, TextOptions};
use tlslab_store::{Store, StoreError};

use crate::cli::RunArgs;
use crate::failure::{CliError, EXIT_ENVIRONMENT, EXIT_FAILURES, EXIT_INTERRUPTED, EXIT_THRESHOLD};
use crate::files;
use crate::output;

/// The experiment the flags describe: the file's (or `base`), with flags on top.
pub fn experiment(args: &RunArgs, base: Experiment) -> Result<Experiment, CliError> {
    let mut experiment = match &args.experiment {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                CliError::usage(
                    format!("cannot read experiment file {}: {error}", path.display()),
                    "give the path of a TOML experiment file (tlslab run --dump-experiment prints one)",
                )
            })?;
            Experiment::from_toml(&text).map_err(|error| {
                CliError::usage(
                    format!("experiment file {} is invalid: {}", path.display(), error.to_string().trim()),
                    "fix the key or value named above; tlslab run --dump-experiment prints a valid file",
                )
            })?
        }
        None => base,
    };
    let mut overrides = args.overrides();
    if let Some(page) = overrides.page.as_mut() {
        if let Some(path) = page.strip_prefix('@') {
            *page = page_description(std::path::Path::new(path))?;
        }
    }
    experiment.apply(&overrides)?;
    if overrides.client_cert_profile.is_some() && !experiment.mtls.contains(&tlslab_core::Mtls::On)
    {
        crate::output::note(format_args!(
            "warning: --client-cert-profile has no effect without --mtls on (the lab server asks for no client certificate)"
        ));
    }
    if args.rate.is_some() {
        crate::output::note(format_args!(
            "warning: --rate is now --bandwidth; --rate will be removed in the next release"
        ));
    }
    Ok(experiment)
}

/// `--page @FILE`: the page a description file lists (lines of COUNT:SIZE, or a HAR file a
/// browser saved), as the COUNT:SIZE list that is stored with the Config.
fn page_description(path: &std::path::Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        CliError::usage(
            format!("cannot read page description {}: {error}", path.display()),
            "--page @FILE takes a file of COUNT:SIZE lines or a HAR file (saved from a browser's network panel)",
        )
    })?;
    tlslab_core::Page::from_description(&text)
        .map(|page| page.to_string())
        .map_err(|problem| {
            CliError::usage(
                format!("page description {}: {problem}", path.display()),
                "each line is COUNT:SIZE or SIZE (30KB, 1MiB), or the file is a HAR 1.2 JSON file",
            )
        })
}

/// `./tlslab-results/<UTC timestamp>.db`, with a suffix when two runs start in one second.
pub fn default_output() -> PathBuf {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let stamp = tlslab_store::utc_timestamp(now).replace(':', "-");
    let directory = Path::new("tlslab-results");
    let mut path = directory.join(format!("{stamp}.db"));
    let mut suffix = 1;
    while path.exists() {
        path = directory.join(format!("{stamp}-{suffix}.db"));
        suffix += 1;
    }
    path
}

/// The progress bar, naming the running Config by the words of its label that the others
/// do not share (as the summary's table does).
fn progress_bar(labels: &[String]) -> tlslab_engine::ProgressCallback {
    let (_, short) = tlslab_report::distinguishing_words(labels);
    Arc::new(move |progress: &Progress| {
        let mut progress = progress.clone();
        if let Some(config) = progress.config.as_mut() {
            if let Some(words) = short.get(config.number.wrapping_sub(1)) {
                config.label = tlslab_core::terminal::escape(words).into_owned();
            }
        }
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r{}", progress_line(&progress));
        let _ = stderr.flush();
    })
}

/// The progress bar's line: the bar, attempts (the warm-up ones apart), rate, time left,
/// errors, and which Config is running (its number, then its label) and whether it is warming
/// up. Kept within 80 columns (the line is redrawn in place, and a wrapped line would scroll
/// instead).
fn progress_line(progress: &Progress) -> String {
    let seconds = progress.elapsed.as_secs_f64();
    let rate = if seconds > 0.0 {
        progress.done as f64 / seconds
    } else {
        0.0
    };
    // Timed blocks (a closed loop given --duration) take as many attempts as fit: the
    // bar follows the clock, and says how many were done, not out of how many.
    let (fraction, count, eta) = match progress.timed {
        Some(timed) => {
            let planned = timed.as_secs_f64().max(f64::MIN_POSITIVE);
            (
                seconds / planned,
                format!("{} attempts  {seconds:.0}/{planned:.0} s", progress.done),
                format!("{:.0}s", (planned - seconds).max(0.0)),
            )
        }
        None => (
            progress.done as f64 / progress.total.max(1) as f64,
            format!("{}/{}", progress.done, progress.total),
            if rate > 0.0 {
                format!(
                    "{:.0}s",
                    (progress.total - progress.done.min(progress.total)) as f64 / rate
                )
            } else {
                "?".to_string()
            },
        ),
    };
    let warmup = if progress.warmup_done > 0 {
        format!(" ({} warm-up)", progress.warmup_done)
    } else {
        String::new()
    };
    let width = 12;
    let filled = ((fraction.clamp(0.0, 1.0)) * width as f64).round() as usize;
    let mut line = format!(
        "[{}{}] {count}{warmup} {rate:.0}/s ETA {eta} errors {}",
        "#".repeat(filled.min(width)),
        " ".repeat(width - filled.min(width)),
        progress.errors
    );
    if let Some(config) = &progress.config {
        let phase = if config.warmup { " warm-up" } else { "" };
        let room = 79usize.saturating_sub(line.chars().count());
        let mut running = format!(" ·{phase} {}/{}", config.number, progress.configs);
        if progress.configs > 1 {
            running.push(' ');
            running.push_str(&config.label);
        }
        if running.chars().count() > room {
            running = running.chars().take(room.saturating_sub(1)).collect();
            running.push('…');
        }
        line.push_str(&running);
    }
    // Spaces to the 79th column wipe what a longer earlier line left.
    let used = line.chars().count();
    line.push_str(&" ".repeat(79usize.saturating_sub(used)));
    line
}

pub fn open_pki(dir: &Option<PathBuf>) -> Result<tlslab_pki::Pki, CliError> {
    match dir {
        Some(dir) => tlslab_pki::Pki::open(dir.clone()),
        None => tlslab_pki::Pki::open_default(),
    }
    .map_err(|error| {
        CliError::environment(
            format!("{error}{}", tlslab_core::Causes(&error)),
            "set TLSLAB_PKI_DIR or --pki-dir to a writable directory",
        )
    })
}

/// A stop token that SIGINT (Ctrl-C) and SIGTERM request. A second signal ends the process
/// at once (exit 130), for a run that does not stop by itself.
pub fn stop_on_signals() -> Stop {
    let stop = Stop::new();
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registering fails only for signals that cannot be caught; these two can.
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 130, stop.flag());
        let _ = signal_hook::flag::register(signal, stop.flag());
    }
    stop
}

/// The key log `--keylog` names, else `$SSLKEYLOGFILE` (as curl and browsers read it), and
/// the name it was given by.
fn key_log_path(args: &RunArgs) -> Option<(PathBuf, &'static str)> {
    if let Some(path) = &args.keylog {
        return Some((path.clone(), "--keylog"));
    }
    std::env::var_os("SSLKEYLOGFILE")
        .filter(|value| !value.is_empty())
        .map(|path| (PathBuf::from(path), "SSLKEYLOGFILE"))
}

/// Opens the key log, as the rule allowed (appended to, or replaced with --force).
fn key_log(
    path: Option<&(PathBuf, &'static str)>,
    write: Option<files::Disposition>,
) -> Result<Option<Arc<tlslab_backend::KeyLogFile>>, CliError> {
    let (Some((path, _)), Some(write)) = (path, write) else {
        return Ok(None);
    };
    files::make_room(path, write)?;
    let file = tlslab_backend::KeyLogFile::open(path).map_err(|error| {
        CliError::environment(
            format!("cannot write the key log {}: {error}", path.display()),
            "give --keylog (or SSLKEYLOGFILE) a file in a directory you can write",
        )
    })?;
    output::note(format_args!(
        "key log: {} (the secrets of every handshake: keep it private)",
        path.display()
    ));
    Ok(Some(Arc::new(file)))
}

/// Says what a key log that could not be written holds and what it lost; whether it lost
/// any (the run then exits 3: its samples are stored, its capture cannot be decrypted whole).
fn key_log_lost(file: Option<&tlslab_backend::KeyLogFile>) -> bool {
    let Some(file) = file else {
        return false;
    };
    let outcome = file.outcome();
    let Some(failure) = outcome.failure else {
        return false;
    };
    output::note(format_args!(
        "warning: the key log {} holds the secrets of {} handshakes ({} lines): writing it failed \
         ({failure}), and those of {} more handshakes ({} lines) are not in it",
        file.path().display(),
        outcome.written.handshakes,
        outcome.written.lines,
        outcome.lost.handshakes,
        outcome.lost.lines
    ));
    output::note(
        "hint: free space on its disk or give --keylog a file on another; the samples are stored",
    );
    true
}

/// How the rule lets the run write its store and its key log (`None` when none is asked
/// for); the capture and the report are checked with them, before anything is written.
struct Writes {
    store: files::Disposition,
    key_log: Option<files::Disposition>,
}

fn claim_outputs(
    args: &RunArgs,
    store: &Path,
    key_log: Option<&(PathBuf, &'static str)>,
    report: Option<&Path>,
) -> Result<Writes, CliError> {
    let mut outputs = vec![files::Output::new("--out", store, files::Kind::Results)];
    if let Some((path, option)) = key_log {
        outputs.push(files::Output::new(option, path, files::Kind::KeyLog));
    }
    if let Some(path) = &args.capture {
        outputs.push(files::Output::new("--capture", path, files::Kind::Capture));
    }
    if let Some(path) = report {
        outputs.push(files::Output::new("--report", path, files::Kind::Report));
    }
    let inputs: Vec<&Path> = [
        &args.experiment,
        &args.ca,
        &args.client_cert,
        &args.client_key,
    ]
    .into_iter()
    .filter_map(|input| input.as_deref())
    .collect();
    let writes = files::claim_all(&outputs, &inputs, args.force)?;
    Ok(Writes {
        store: writes[0],
        key_log: key_log.map(|_| writes[1]),
    })
}

/// What a finished run prints: the run summary, or (`tlslab load`) the load figures.
pub trait Printer: Sync {
    /// Reads what the printout needs besides the run summary from `store` (the run's, on a
    /// connection of its own), on a thread of its own while the run summary is read (its
    /// samples are then read twice at once rather than one pass after the other). Nothing
    /// by default; a printer whose preparation did not run reads it in [`Printer::print`].
    fn prepare(&self, _store: Result<Store, StoreError>) {}

    /// Whether [`Printer::prepare`] reads anything (no thread is started for nothing).
    fn prepares(&self) -> bool {
        false
    }

    fn print(&self, store: &Store, summary: &RunSummary) -> Result<(), CliError>;
}

impl<F: Fn(&Store, &RunSummary) -> Result<(), CliError> + Sync> Printer for F {
    fn print(&self, store: &Store, summary: &RunSummary) -> Result<(), CliError> {
        self(store, summary)
    }
}

/// `--metric`, checked before anything runs (a misspelt phase found after a long run would
/// cost the run its summary): a phase or an event.
pub fn checked_metric(metric: Option<&str>) -> Result<Option<&str>, CliError> {
    let Some(name) = metric else {
        return Ok(None);
    };
    let known = tlslab_core::Phase::from_name(name).is_some()
        || tlslab_core::Event::ALL
            .iter()
            .any(|event| event.name() == name);
    if !known {
        let phases: Vec<&str> = tlslab_core::Phase::ALL
            .iter()
            .map(|phase| phase.name())
            .collect();
        return Err(CliError::usage(
            format!("--metric {name}: not a phase or event"),
            format!(
                "give a phase ({}) or an event (first_byte, response_done, ...)",
                phases.join(", ")
            ),
        ));
    }
    Ok(Some(name))
}

pub fn run(args: &RunArgs) -> Result<i32, CliError> {
    checked_metric(args.metric.as_deref())?;
    let experiment = experiment(args, Experiment::default())?;
    let print = |_: &Store, summary: &RunSummary| -> Result<(), CliError> {
        if args.json {
            output::print(format_args!("{}\n", output::json(summary)))?;
        } else {
            let options = TextOptions {
                verbose: args.verbose,
                width: output::width(),
            };
            output::print_fitted(&render_text(summary, &options))?;
        }
        Ok(())
    };
    execute(args, experiment, &print)
}

/// Runs `experiment` as `args` ask (store, progress, report), prints what `print` makes of
/// the result, and returns the exit code.
pub fn execute(
    args: &RunArgs,
    experiment: Experiment,
    print: &dyn Printer,
) -> Result<i32, CliError> {
    if args.dump_experiment {
        output::print(experiment.to_toml())?;
        return Ok(0);
    }
    let configs = experiment.configs()?;
    let seed = experiment.seed.unwrap_or_else(|| fastrand::u64(..));
    let plan = Plan::new(&experiment, &configs, seed);
    let mut recorded = experiment.clone();
    recorded.seed = Some(seed);

    let path = args.out.clone().unwrap_or_else(default_output);
    // The report goes beside the results, with .html: never onto them.
    let report = args.report.then(|| crate::report::beside(&path));
    if report.as_ref() == Some(&path) {
        return Err(CliError::usage(
            format!(
                "--report would write its HTML over the results file {}",
                path.display()
            ),
            "give --out a name ending in .db",
        ));
    }
    let key_log_path = key_log_path(args);
    let writes = claim_outputs(args, &path, key_log_path.as_ref(), report.as_deref())?;
    files::make_room(&path, writes.store)?;
    // The summaries read the values the writer kept rather than every row back (unless the
    // run plans more measured samples than they may take).
    let planned = plan
        .trials
        .iter()
        .filter(|trial| !trial.warmup)
        .fold(0u64, |sum, trial| sum.saturating_add(trial.handshakes));
    let key_log = key_log(key_log_path.as_ref(), writes.key_log)?;
    let (sink, kept) = Store::create(&path)?.into_sink_keeping(planned);
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let options = RunOptions {
        server_program: std::env::current_exe().map_err(|error| {
            CliError::environment(
                format!("cannot locate the tlslab binary: {error}"),
                "run tlslab from its installed path",
            )
        })?,
        pki: open_pki(&args.pki_dir)?,
        environment: tlslab_engine::environment::capture(
            env!("CARGO_PKG_VERSION"),
            env!("TLSLAB_COMMIT"),
        ),
        command_line: std::env::args().collect(),
        seed,
        stop: stop_on_signals(),
        progress: show_progress.then(|| {
            let labels: Vec<String> = configs.iter().map(|config| config.label.clone()).collect();
            progress_bar(&labels)
        }),
        key_log: key_log.clone(),
        capture: args.capture.clone(),
    };
    let sink = Box::new(sink.without_index());
    let result = tlslab_engine::run(&recorded, &configs, &plan, options, sink);
    if show_progress {
        let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(100));
    }
    let end = result.map_err(|error| {
        key_log_lost(key_log.as_deref());
        // The samples stored so far are read as fast as a finished run's.
        let _ = Store::build_index(&path);
        let mut error = CliError::from(error);
        error.hint = format!("{} (results so far: {})", error.hint, path.display());
        error
    })?;

    let open = || Store::open(&path).map(|store| store.with_kept(kept.get()));
    let store = match open() {
        Ok(store) => store,
        Err(error) => {
            let _ = Store::build_index(&path);
            return Err(error.into());
        }
    };
    // --quiet (without --json, which is output a script asked for) keeps stdout to the one
    // line a script reads, after the report so that it can name that too; warnings go to
    // stderr, as errors do.
    let quiet = args.quiet && !args.json;
    let summary = std::thread::scope(|scope| {
        // The readers' index is built while the summaries read the kept values (and before
        // --report reads the store); the scope waits for it.
        let index = std::thread::Builder::new()
            .name("tlslab-index".into())
            .spawn_scoped(scope, || Store::build_index(&path));
        if index.is_err() {
            let _ = Store::build_index(&path);
        }
        if !quiet && print.prepares() {
            // Without a thread (the process's limit), the printer reads it all itself.
            let _ = std::thread::Builder::new()
                .name("tlslab-summary".into())
                .spawn_scoped(scope, || print.prepare(open()));
        }
        RunSummary::from_store_on(&store, args.metric.as_deref())
    })?;
    if quiet {
        for warning in tlslab_report::quiet_warnings(&summary) {
            output::note(warning);
        }
    } else {
        print.print(&store, &summary)?;
        if let Some(capture) = &args.capture {
            crate::crosscheck::print(&store, capture)?;
        }
    }
    let mut result_line = tlslab_report::result_line(&summary);
    if args.report {
        match crate::report::report_beside(&path, args.metric.as_deref(), args.force) {
            Ok(report) if quiet => {
                result_line.push_str(&format!(" · report: {}", report.display()))
            }
            Ok(report) => output::note(format_args!("report: {}", report.display())),
            // The samples are stored whatever happens to the report; say how to retry.
            Err(error) => {
                error.print();
                output::note(format_args!(
                    "hint: retry with: tlslab report {}",
                    path.display()
                ));
            }
        }
    }

    if quiet {
        output::print(format_args!("{result_line}\n"))?;
    }
    let key_log_lost = key_log_lost(key_log.as_deref());

    let error_rate = if end.attempted == 0 {
        0.0
    } else {
        summary.errors as f64 / summary.attempted.max(1) as f64
    };
    if !end.complete {
        output::note(format_args!(
            "error: the run was interrupted after {} attempts",
            end.attempted
        ));
        output::note(format_args!(
            "hint: the samples taken are stored in {}",
            path.display()
        ));
        return Ok(EXIT_INTERRUPTED);
    }
    if error_rate > experiment.max_error_rate {
        let mut classes: Vec<String> = Vec::new();
        for config in &summary.configs {
            for (class, count) in &config.errors {
                classes.push(format!(
                    "{} {} in '{}'",
                    count,
                    Escaped(class),
                    Escaped(&config.label)
                ));
            }
        }
        output::note(format_args!(
            "error: {} of {} measured attempts failed ({:.1}%, above --max-error-rate {}): {}",
            summary.errors,
            summary.attempted,
            error_rate * 100.0,
            experiment.max_error_rate,
            classes.join(", ")
        ));
        // The first failure said in the server's terms, or where to look.
        let diagnosis = summary
            .configs
            .iter()
            .find_map(|config| config.diagnoses.values().next());
        output::note(format_args!(
            "hint: {}",
            Escaped(diagnosis.map_or(
                "the error classes and examples above say what failed; raise --max-error-rate to tolerate failures",
                String::as_str
            ))
        ));
        return Ok(EXIT_FAILURES);
    }
    let thresholds: Vec<tlslab_core::threshold::Threshold> = experiment
        .thresholds
        .iter()
        .filter_map(|text| text.parse().ok())
        .collect();
    let breaches = tlslab_report::thresholds::check(&store, &summary, &thresholds)?;
    if !breaches.is_empty() {
        for breach in &breaches {
            output::note(format_args!(
                "error: threshold '{}' broken by '{}': {}",
                breach.threshold,
                Escaped(&breach.config),
                breach.measured
            ));
        }
        output::note(format_args!(
            "hint: {} of {} Configs broke a threshold; the samples are stored in {}",
            breaches
                .iter()
                .map(|breach| &breach.config)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            summary.configs.len(),
            path.display()
        ));
        return Ok(EXIT_THRESHOLD);
    }
    Ok(if key_log_lost { EXIT_ENVIRONMENT } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tlslab_engine::RunningConfig;

    fn progress(warmup_done: u64, config: Option<RunningConfig>) -> Progress {
        Progress {
            done: 120,
            errors: 2,
            warmup_done,
            config,
            configs: 4,
            total: 400,
            timed: None,
            elapsed: Duration::from_secs(2),
        }
    }

    #[test]
    fn the_progress_line_says_warm_up_apart_and_which_config_runs() {
        let line = progress_line(&progress(
            20,
            Some(RunningConfig {
                label:
                    "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c4 and a label far too long to fit"
                        .to_string(),
                number: 3,
                warmup: true,
            }),
        ));
        assert!(
            line.starts_with("[####        ] 120/400 (20 warm-up) 60/s ETA 5s errors 2"),
            "{line}"
        );
        assert!(line.contains("errors 2 · warm-up 3/4 tls1.3"), "{line}");
        assert!(line.trim_end().ends_with('…'), "{line}");
        assert_eq!(line.chars().count(), 79, "{line}");
        let measuring = progress_line(&progress(
            20,
            Some(RunningConfig {
                label: "tls1.2".to_string(),
                number: 4,
                warmup: false,
            }),
        ));
        assert!(measuring.contains("errors 2 · 4/4 tls1.2"), "{measuring}");
        // Before the first block, and without warm-up, neither is said.
        let starting = progress_line(&progress(0, None));
        assert!(!starting.contains("warm-up") && !starting.contains('·'));
        assert_eq!(starting.chars().count(), 79);
    }
}
