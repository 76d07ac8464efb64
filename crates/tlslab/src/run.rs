//! `tlslab run`: flags and experiment file → matrix → plan → engine → store → summary.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tlslab_core::{duration, Experiment, Plan};
use tlslab_engine::{Environment, Progress, RunErrorKind, RunOptions};
use tlslab_report::{render_text, RunSummary};
use tlslab_store::Store;

use crate::cli::RunArgs;
use crate::failure::{CliError, EXIT_FAILURES};

fn parse_list<T: FromStr>(values: &[String]) -> Result<Vec<T>, CliError>
where
    T::Err: std::fmt::Display,
{
    values
        .iter()
        .map(|value| {
            value.parse::<T>().map_err(|error| {
                CliError::usage(
                    error,
                    "comma-separated values make a matrix dimension, for example --tls 1.2,1.3",
                )
            })
        })
        .collect()
}

fn parse_durations(values: &[String], example: &str) -> Result<Vec<Duration>, CliError> {
    values
        .iter()
        .map(|value| {
            duration::parse(value)
                .map_err(|error| CliError::usage(error, format!("for example {example}")))
        })
        .collect()
}

/// The experiment the flags describe: the file's (or the default), with flags on top.
pub fn experiment(args: &RunArgs) -> Result<Experiment, CliError> {
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
                    format!("experiment file {} is invalid: {}", path.display(), error.trim()),
                    "fix the key or value named above; tlslab run --dump-experiment prints a valid file",
                )
            })?
        }
        None => Experiment::default(),
    };
    if let Some(values) = &args.tls {
        experiment.tls = parse_list(values)?;
    }
    if let Some(values) = &args.suite {
        experiment.suite = parse_list(values)?;
    }
    if let Some(values) = &args.group {
        experiment.group = parse_list(values)?;
    }
    if let Some(values) = &args.cert {
        experiment.cert = parse_list(values)?;
    }
    if let Some(values) = &args.chain {
        experiment.chain = values.clone();
    }
    if let Some(values) = &args.concurrency {
        experiment.concurrency = values.clone();
    }
    if let Some(value) = args.handshakes {
        experiment.handshakes = value;
    }
    if let Some(value) = args.warmup {
        experiment.warmup = value;
    }
    if args.block.is_some() {
        experiment.block = args.block;
    }
    if args.seed.is_some() {
        experiment.seed = args.seed;
    }
    if let Some(text) = &args.timeout {
        experiment.timeout = duration::parse(text)
            .map_err(|error| CliError::usage(error, "for example --timeout 5s"))?;
    }
    if let Some(values) = &args.resume {
        experiment.resume = parse_list(values)?;
    }
    if let Some(values) = &args.early_data {
        experiment.early_data = values.clone();
    }
    if let Some(values) = &args.cert_cache {
        experiment.cert_cache = parse_list(values)?;
    }
    if let Some(values) = &args.transport {
        experiment.transport = parse_list(values)?;
    }
    if let Some(values) = &args.http {
        experiment.http = parse_list(values)?;
    }
    if let Some(values) = &args.backend {
        experiment.backend = parse_list(values)?;
    }
    if let Some(values) = &args.client_backend {
        experiment.client_backend = parse_list(values)?;
    }
    if let Some(values) = &args.server_backend {
        experiment.server_backend = parse_list(values)?;
    }
    if let Some(values) = &args.ech {
        experiment.ech = parse_list(values)?;
    }
    if let Some(text) = &args.ech_config {
        experiment.ech_config = Some(text.clone());
    }
    if let Some(name) = &args.ech_public_name {
        experiment.ech_public_name = name.clone();
    }
    if let Some(path) = &args.path {
        experiment.path = path.clone();
    }
    if let Some(body) = args.body {
        experiment.body = body;
    }
    if args.replay {
        experiment.replay = true;
    }
    if let Some(text) = &args.close {
        experiment.close = text
            .parse()
            .map_err(|error| CliError::usage(error, "--close reset or --close graceful"))?;
    }
    if args.target.is_some() {
        experiment.target = args.target.clone();
    }
    if args.sni.is_some() {
        experiment.sni = args.sni.clone();
    }
    if args.ca.is_some() {
        experiment.ca = args.ca.clone();
    }
    if args.insecure {
        experiment.insecure = true;
    }
    if let Some(labels) = &args.label {
        experiment.labels = labels.clone();
    }
    if args.skip_invalid {
        experiment.skip_invalid = true;
    }
    if let Some(text) = &args.until_ci {
        let trimmed = text.trim();
        let (number, scale) = match trimmed.strip_suffix('%') {
            Some(number) => (number, 100.0),
            None => (trimmed, 1.0),
        };
        let value: f64 = number.trim().parse().map_err(|_| {
            CliError::usage(
                format!("--until-ci '{text}' is not a percentage"),
                "for example --until-ci 2% or --until-ci 0.02",
            )
        })?;
        experiment.until_ci = Some(value / scale);
    }
    if let Some(rate) = args.max_error_rate {
        experiment.max_error_rate = rate;
    }
    if let Some(values) = &args.rtt {
        experiment.rtt = parse_durations(values, "--rtt 30ms,150ms")?;
    }
    if let Some(values) = &args.jitter {
        experiment.jitter = parse_durations(values, "--jitter 2ms")?;
    }
    if let Some(values) = &args.loss {
        experiment.loss = parse_list(values)?;
    }
    if let Some(values) = &args.rate {
        experiment.rate = parse_list(values)?;
    }
    if let Some(text) = &args.emulator {
        experiment.emulator = text.parse().map_err(|error| {
            CliError::usage(
                error,
                "--emulator auto picks the best one this machine supports",
            )
        })?;
    }
    if args.server_cmd.is_some() {
        experiment.server_cmd = args.server_cmd.clone();
    }
    Ok(experiment)
}

/// `./tlslab-results/<UTC timestamp>.db`, with a suffix when two runs start in one second.
fn default_output() -> PathBuf {
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

fn progress_bar() -> tlslab_engine::ProgressCallback {
    Arc::new(|progress: &Progress| {
        let fraction = progress.done as f64 / progress.total.max(1) as f64;
        let width = 30;
        let filled = (fraction * width as f64).round() as usize;
        let seconds = progress.elapsed.as_secs_f64();
        let rate = if seconds > 0.0 {
            progress.done as f64 / seconds
        } else {
            0.0
        };
        let eta = if rate > 0.0 {
            format!(
                "{:.0}s",
                (progress.total - progress.done.min(progress.total)) as f64 / rate
            )
        } else {
            "?".to_string()
        };
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r[{}{}] {}/{} handshakes  {:.0}/s  ETA {}  errors {}   ",
            "#".repeat(filled.min(width)),
            " ".repeat(width - filled.min(width)),
            progress.done,
            progress.total,
            rate,
            eta,
            progress.errors
        );
        let _ = stderr.flush();
    })
}

pub fn open_pki(dir: &Option<PathBuf>) -> Result<tlslab_pki::Pki, CliError> {
    match dir {
        Some(dir) => tlslab_pki::Pki::open(dir.clone()),
        None => tlslab_pki::Pki::open_default(),
    }
    .map_err(|error| {
        CliError::environment(
            error.to_string(),
            "set TLSLAB_PKI_DIR or --pki-dir to a writable directory",
        )
    })
}

pub fn run(args: &RunArgs) -> Result<i32, CliError> {
    let experiment = experiment(args)?;
    if args.dump_experiment {
        print!("{}", experiment.to_toml());
        return Ok(0);
    }
    let configs = experiment
        .configs()
        .map_err(|error| CliError::usage(error.message, error.hint))?;
    let seed = experiment.seed.unwrap_or_else(|| fastrand::u64(..));
    let plan = Plan::new(&experiment, &configs, seed);
    let mut recorded = experiment.clone();
    recorded.seed = Some(seed);

    let path = args.out.clone().unwrap_or_else(default_output);
    let store = Store::create(&path)?;
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let options = RunOptions {
        server_program: std::env::current_exe().map_err(|error| {
            CliError::environment(
                format!("cannot locate the tlslab binary: {error}"),
                "run tlslab from its installed path",
            )
        })?,
        pki: open_pki(&args.pki_dir)?,
        environment: Environment::capture(env!("CARGO_PKG_VERSION"), env!("TLSLAB_COMMIT")),
        command_line: std::env::args().collect(),
        seed,
        stop: Arc::new(AtomicBool::new(false)),
        progress: show_progress.then(progress_bar),
    };
    let result = tlslab_engine::run(
        &recorded,
        &configs,
        &plan,
        options,
        Box::new(store.into_sink()),
    );
    if show_progress {
        eprint!("\r{}\r", " ".repeat(100));
    }
    let end = result.map_err(|error| {
        let hint = format!("{} (results so far: {})", error.hint, path.display());
        match error.kind {
            RunErrorKind::Configuration => CliError::usage(error.message, hint),
            RunErrorKind::Environment => CliError::environment(error.message, hint),
        }
    })?;

    let store = Store::open(&path)?;
    let summary = RunSummary::from_store(&store)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).expect("serializable")
        );
    } else {
        print!("{}", render_text(&summary));
    }
    if args.report {
        match crate::report::report_beside(&path) {
            Ok(report) => eprintln!("report: {}", report.display()),
            // The samples are stored whatever happens to the report; say how to retry.
            Err(error) => {
                error.print();
                eprintln!("hint: retry with: tlslab report {}", path.display());
            }
        }
    }

    let error_rate = if end.attempted == 0 {
        0.0
    } else {
        summary.errors as f64 / summary.attempted.max(1) as f64
    };
    if !end.complete {
        eprintln!(
            "error: the run was interrupted after {} attempts",
            end.attempted
        );
        eprintln!("hint: the samples taken are stored in {}", path.display());
        return Ok(EXIT_FAILURES);
    }
    if error_rate > experiment.max_error_rate {
        let mut classes: Vec<String> = Vec::new();
        for config in &summary.configs {
            for (class, count) in &config.errors {
                classes.push(format!("{count} {class} in '{}'", config.label));
            }
        }
        eprintln!(
            "error: {} of {} measured attempts failed ({:.1}%, above --max-error-rate {}): {}",
            summary.errors,
            summary.attempted,
            error_rate * 100.0,
            experiment.max_error_rate,
            classes.join(", ")
        );
        let refused = summary
            .configs
            .iter()
            .any(|c| c.errors.contains_key("refused"));
        eprintln!(
            "hint: {}",
            if refused {
                "nothing accepted connections on the target port: check the address and that the server runs"
            } else {
                "the error classes and examples above say what failed; raise --max-error-rate to tolerate failures"
            }
        );
        return Ok(EXIT_FAILURES);
    }
    Ok(0)
}
