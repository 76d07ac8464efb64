//! `tlslab run`: the flags become a request for the run workflow (tlslab-workflow), whose
//! outcome is printed here: the summary, the report's path, the verdict and its exit code.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use tlslab_core::terminal::Escaped;
use tlslab_core::Experiment;
use tlslab_engine::Progress;
use tlslab_report::{render_text, RunSummary, TextOptions};
use tlslab_workflow::results::Results;
use tlslab_workflow::run::{LostKeyLog, RunOutcome, RunRequest, Verdict};
use tlslab_workflow::{Control, Invocation, Notice, Stop};

use crate::cli::RunArgs;
use crate::failure::{exit_code, CliError};
use crate::output;

/// Who runs the workflows: this binary (it is also the lab server a run starts), its
/// version and commit, and its command line to store.
pub fn invocation() -> Result<Invocation, CliError> {
    let program = std::env::current_exe().map_err(|error| {
        CliError::environment(
            format!("cannot locate the tlslab binary: {error}"),
            "run tlslab from its installed path",
        )
    })?;
    Ok(Invocation {
        program,
        version: env!("CARGO_PKG_VERSION").into(),
        commit: env!("TLSLAB_COMMIT").into(),
        // A password in a URL (`--store postgres://user:secret@…`) is never stored.
        command_line: std::env::args()
            .map(|argument| tlslab_store::postgres::connection::redact_url(&argument))
            .collect(),
    })
}

/// What a workflow says while it works, said on stderr.
pub fn print_notice(notice: &Notice) {
    match notice {
        Notice::KeyLog(path) => output::note(format_args!(
            "key log: {} (the secrets of every handshake: keep it private)",
            path.display()
        )),
        Notice::KeyLogLost(lost) => say_key_log_lost(lost),
        Notice::Warning(warning) => output::note(format_args!("warning: {warning}")),
        Notice::Unfinished { store, reason } => output::note(format_args!(
            "note: {} holds a run that did not finish: {}",
            Escaped(&store.display().to_string()),
            Escaped(reason.as_deref().unwrap_or("no reason was recorded"))
        )),
        Notice::ChartsWritten { count, directory } => output::note(format_args!(
            "wrote {count} charts to {}",
            directory.display()
        )),
        Notice::Capturing {
            interface,
            store,
            until_stopped,
            metrics,
        } => {
            output::note(format_args!(
                "capturing TLS handshakes on {interface} into {}{}",
                store.display(),
                if *until_stopped { " until Ctrl-C" } else { "" }
            ));
            if let Some(address) = metrics {
                output::note(format_args!("serving metrics at http://{address}/metrics"));
            }
        }
        _ => {}
    }
}

/// The control of a workflow started from the terminal: stopped by SIGINT or SIGTERM,
/// its notices said on stderr, and `progress` when given.
pub fn control(progress: Option<tlslab_engine::ProgressCallback>) -> Control {
    Control {
        stop: stop_on_signals(),
        progress,
        notices: Some(Arc::new(print_notice)),
    }
}

/// The control of a workflow that only reads and writes files: its notices said on stderr,
/// and no signal handling of its own (Ctrl-C ends it at once, as it ends any such tool).
pub fn notices() -> Control {
    Control {
        notices: Some(Arc::new(print_notice)),
        ..Control::default()
    }
}

/// The experiment the flags describe (the file's, or `base`, with flags on top), its
/// warnings said.
pub fn experiment(args: &RunArgs, base: Experiment) -> Result<Experiment, CliError> {
    let (experiment, warnings) =
        tlslab_workflow::experiment::build(args.experiment.as_deref(), base, args.overrides())?;
    for warning in warnings {
        output::note(format_args!("warning: {warning}"));
    }
    if args.rate.is_some() {
        output::note(format_args!(
            "warning: --rate is now --bandwidth; --rate will be removed in the next release"
        ));
    }
    Ok(experiment)
}

/// The run workflow's request for `experiment` as `args` ask.
pub fn request(args: &RunArgs, experiment: Experiment) -> Result<RunRequest, CliError> {
    Ok(RunRequest {
        experiment,
        experiment_file: args.experiment.clone(),
        store: crate::location::to_write(args.store.as_deref(), args.out.as_deref())?,
        key_log: key_log_path(args),
        capture: args.capture.clone(),
        report: args.report,
        force: args.force,
        metric: args.metric.clone(),
        pki_dir: args.pki_dir.clone(),
        invocation: invocation()?,
    })
}

/// The key log `--keylog` names, else `$SSLKEYLOGFILE` (as curl and browsers read it), and
/// the name it was given by.
fn key_log_path(args: &RunArgs) -> Option<tlslab_workflow::run::KeyLogRequest> {
    let (path, option) = match &args.keylog {
        Some(path) => (path.clone(), "--keylog"),
        None => (
            PathBuf::from(std::env::var_os("SSLKEYLOGFILE").filter(|value| !value.is_empty())?),
            "SSLKEYLOGFILE",
        ),
    };
    Some(tlslab_workflow::run::KeyLogRequest { path, option })
}

/// Whether the progress bar is drawn: on a terminal, unless `--quiet`.
pub fn shows_progress(args: &RunArgs) -> bool {
    !args.quiet && std::io::stderr().is_terminal()
}

/// The progress bar for `experiment`'s Configs, when it is drawn.
pub fn progress(
    args: &RunArgs,
    experiment: &Experiment,
) -> Option<tlslab_engine::ProgressCallback> {
    if !shows_progress(args) {
        return None;
    }
    // An experiment that does not expand fails in the workflow, with its error.
    let configs = experiment.configs().ok()?;
    let labels: Vec<String> = configs.iter().map(|config| config.label.clone()).collect();
    Some(progress_bar(&labels))
}

/// Wipes the progress bar's line.
pub fn clear_progress(args: &RunArgs) {
    if shows_progress(args) {
        let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(100));
    }
}

pub fn run(args: &RunArgs) -> Result<i32, CliError> {
    tlslab_workflow::experiment::check_metric(args.metric.as_deref())?;
    let experiment = experiment(args, Experiment::default())?;
    if args.dump_experiment {
        output::print(experiment.to_toml())?;
        return Ok(0);
    }
    if let Some(agents) = args.agents {
        return crate::agent::coordinate(args, experiment, agents);
    }
    let control = control(progress(args, &experiment));
    let request = request(args, experiment)?;
    let outcome = tlslab_workflow::run::run(&request, &control);
    clear_progress(args);
    let outcome = outcome?;
    if !quiet(args) {
        if args.json {
            output::print(format_args!("{}\n", output::json(&outcome.summary)))?;
        } else {
            let options = TextOptions {
                verbose: args.verbose,
                width: output::width(),
            };
            output::print_fitted(&render_text(&outcome.summary, &options))?;
        }
    }
    finish(args, &outcome)
}

/// `--quiet` (without `--json`, which is output a script asked for) keeps stdout to the one
/// line a script reads, after the report so that it can name that too; warnings go to
/// stderr, as errors do.
pub fn quiet(args: &RunArgs) -> bool {
    args.quiet && !args.json
}

/// What follows the printed summary: the capture's cross-check, the report, the result line
/// (`--quiet`), a key log that lost lines, the verdict; the exit code.
pub fn finish(args: &RunArgs, outcome: &RunOutcome) -> Result<i32, CliError> {
    let quiet = quiet(args);
    if quiet {
        for warning in tlslab_report::quiet_warnings(&outcome.summary) {
            output::note(warning);
        }
    } else if let Some(capture) = &args.capture {
        crate::crosscheck::print(&outcome.store, capture)?;
    }
    let mut result_line = tlslab_report::result_line(&outcome.summary);
    match &outcome.report {
        Some(Ok(report)) if quiet => {
            result_line.push_str(&format!(" · report: {}", report.display()))
        }
        Some(Ok(report)) => output::note(format_args!("report: {}", report.display())),
        // The samples are stored whatever happens to the report; say how to retry.
        Some(Err(error)) => {
            CliError::of(error).print();
            output::note(format_args!(
                "hint: retry with: tlslab report {}",
                outcome.results.as_arguments()
            ));
        }
        None => {}
    }
    if quiet {
        output::print(format_args!("{result_line}\n"))?;
    }
    if let Some(lost) = &outcome.key_log_lost {
        say_key_log_lost(lost);
    }
    say_verdict(&outcome.verdict, &outcome.summary, &outcome.results);
    Ok(outcome.kind().map_or(0, exit_code))
}

/// Says what a key log that could not be written holds and what it lost.
fn say_key_log_lost(lost: &LostKeyLog) {
    let outcome = &lost.outcome;
    output::note(format_args!(
        "warning: the key log {} holds the secrets of {} handshakes ({} lines): writing it failed \
         ({}), and those of {} more handshakes ({} lines) are not in it",
        lost.path.display(),
        outcome.written.handshakes,
        outcome.written.lines,
        outcome.failure.as_deref().unwrap_or("unknown"),
        outcome.lost.handshakes,
        outcome.lost.lines
    ));
    output::note(
        "hint: free space on its disk or give --keylog a file on another; the samples are stored",
    );
}

/// The verdict's `error:` and `hint:` lines, when the run did not pass.
fn say_verdict(verdict: &Verdict, summary: &RunSummary, results: &Results) {
    match verdict {
        Verdict::Passed => {}
        Verdict::Interrupted { attempted } => {
            output::note(format_args!(
                "error: the run was interrupted after {attempted} attempts"
            ));
            output::note(format_args!(
                "hint: the samples taken are stored in {results}"
            ));
        }
        Verdict::Failures(failures) => {
            let classes: Vec<String> = failures
                .classes
                .iter()
                .map(|(count, class, config)| {
                    format!("{count} {} in '{}'", Escaped(class), Escaped(config))
                })
                .collect();
            output::note(format_args!(
                "error: {} of {} measured attempts failed ({:.1}%, above --max-error-rate {}): {}",
                failures.errors,
                failures.attempted,
                failures.rate * 100.0,
                failures.allowed,
                classes.join(", ")
            ));
            // The first failure said in the server's terms, or where to look.
            output::note(format_args!(
                "hint: {}",
                Escaped(failures.diagnosis.as_deref().unwrap_or(
                    "the error classes and examples above say what failed; raise --max-error-rate to tolerate failures"
                ))
            ));
        }
        Verdict::Thresholds(breaches) => {
            for breach in breaches {
                output::note(format_args!(
                    "error: threshold '{}' broken by '{}': {}",
                    breach.threshold,
                    Escaped(&breach.config),
                    breach.measured
                ));
            }
            let configs: std::collections::BTreeSet<&String> =
                breaches.iter().map(|breach| &breach.config).collect();
            output::note(format_args!(
                "hint: {} of {} Configs broke a threshold; the samples are stored in {results}",
                configs.len(),
                summary.configs.len(),
            ));
        }
    }
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
