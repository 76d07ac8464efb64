//! The scan's cost table: every supported version × suite × group a scan found, timed
//! by a short run of tlslab's engine against the target (the same machinery as `tlslab run
//! --target HOST:PORT --tls V --suite S --group G`, one Config per choice, interleaved in
//! shuffled rounds), its samples kept in memory rather than in a store.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tlslab_core::{
    ArrivalRate, Backend, Config, Experiment, Group, Phase, Plan, Record, RunEnd, RunInfo, Sink,
    SinkError, SuiteSpec, TlsVersion,
};
use tlslab_engine::{RunOptions, Stop};
use tlslab_scan::cost::{choices, Choice, Cost, Costs};
use tlslab_scan::{Report, Target, Version};

use crate::{Invocation, WorkflowError};

/// How the choices are timed.
pub struct TimingOptions {
    /// Measured handshakes per choice (`--timing-handshakes`); `None`: [`DEFAULT_HANDSHAKES`],
    /// fewer when that would take the table past [`CONNECTION_BUDGET`].
    pub handshakes: Option<u64>,
    /// The pause between two handshakes to the target (`--delay`): an open-loop schedule
    /// at one attempt per delay, one block per choice (the first handshake of a choice
    /// follows the last of the one before without it). `None`: the next starts when the
    /// last ends.
    pub delay: Option<Duration>,
    /// Per handshake (`--timeout`).
    pub timeout: Duration,
    /// What the clients trust (`--ca`); the system roots when `None`.
    pub ca: Option<PathBuf>,
    /// Who runs it: stored with nothing (the samples stay in memory), but the engine needs
    /// the program and the environment.
    pub invocation: Invocation,
}

/// Measured handshakes per choice unless told otherwise.
pub const DEFAULT_HANDSHAKES: u64 = 20;

/// The connections a cost table makes at most unless `--timing-handshakes` is given: a full
/// scan stays within a few hundred connections (issue 17's politeness rule), so a server
/// with many choices gets fewer handshakes per choice, never fewer than [`MIN_HANDSHAKES`].
pub const CONNECTION_BUDGET: u64 = 400;

/// The fewest measured handshakes per choice the budget leaves: a median of fewer is noise.
pub const MIN_HANDSHAKES: u64 = 5;

/// Measured handshakes per choice for `choices` timed choices.
fn handshakes_for(asked: Option<u64>, choices: u64) -> u64 {
    asked.unwrap_or_else(|| {
        (CONNECTION_BUDGET / choices.max(1))
            .saturating_sub(WARMUP)
            .clamp(MIN_HANDSHAKES, DEFAULT_HANDSHAKES)
    })
}

/// One warm-up handshake per choice: it pays for the first connection's one-time costs
/// (the server's session cache entry, page faults on both sides) outside the medians.
const WARMUP: u64 = 1;

/// A sample's part in the table, as the sink sees it.
struct Timed {
    config: usize,
    warmup: bool,
    ok: bool,
    handshake: Option<u64>,
    server_response: Option<u64>,
}

/// A Sink that keeps what the table needs of each sample in memory: a scan's timing is a
/// figure in its report, not a run of its own in a store.
struct Collector(Arc<Mutex<Vec<Timed>>>);

impl Sink for Collector {
    fn begin(&mut self, _: &RunInfo) -> Result<(), SinkError> {
        Ok(())
    }

    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        if let Record::Sample(sample) = record {
            let timed = Timed {
                config: sample.config,
                warmup: sample.warmup,
                ok: sample.is_ok(),
                handshake: sample.timeline.phase(Phase::Handshake),
                server_response: sample.timeline.phase(Phase::ServerResponse),
            };
            self.0
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .push(timed);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    fn finish(&mut self, _: &RunEnd) -> Result<(), SinkError> {
        Ok(())
    }
}

/// The experiment every choice shares: the target, its name, what to trust, how many.
fn base_experiment(report: &Report, target: &Target, options: &TimingOptions) -> Experiment {
    let verified = report.certificates.trusted == Some(true);
    let delay = options.delay.filter(|delay| !delay.is_zero());
    Experiment {
        target: Some(target.to_string()),
        sni: report.server_name.clone(),
        ca: options.ca.clone(),
        // A chain the scan found untrusted would fail every verified handshake.
        insecure: !verified,
        // Set once the number of choices is known (`time_choices`).
        handshakes: DEFAULT_HANDSHAKES,
        warmup: WARMUP,
        concurrency: vec![1],
        arrival_rate: vec![match delay {
            Some(delay) => ArrivalRate::PerSecond(1.0 / delay.as_secs_f64()),
            None => ArrivalRate::Closed,
        }],
        // The open loop spaces the attempts of one block; a block starts at once after the
        // one before it. With a delay each choice is then one block, so only the step from
        // one choice (or its warm-up) to the next goes without the pause.
        block: delay.map(|_| DEFAULT_HANDSHAKES),
        timeout: options.timeout,
        // Every handshake is timed; a failed one is counted, not a reason to stop.
        max_error_rate: 1.0,
        ..Experiment::default()
    }
}

/// Why a choice is not timed: said in its row of the table.
struct NotTimed(String);

/// The one Config that times `choice`, with rustls when it can and OpenSSL otherwise, or
/// why neither can.
fn config_of(base: &Experiment, choice: &Choice) -> Result<(Config, Backend), NotTimed> {
    let version = match choice.version {
        Version::Tls13 => TlsVersion::Tls13,
        Version::Tls12 => TlsVersion::Tls12,
        other => {
            return Err(NotTimed(format!(
                "tlslab's clients speak TLS 1.2 and 1.3, not {}",
                other.name()
            )))
        }
    };
    let suite: SuiteSpec = choice
        .suite
        .parse()
        .map_err(|_| NotTimed(format!("tlslab's clients do not offer {}", choice.suite)))?;
    let group = match &choice.group {
        Some(name) => name
            .parse::<Group>()
            .map_err(|_| NotTimed(format!("tlslab's clients do not offer group {name}")))?,
        // RSA key transport agrees on no group; the Config still names one it ignores.
        None => Group::X25519,
    };
    let mut why = String::new();
    for backend in [Backend::Rustls, Backend::Openssl] {
        let experiment = Experiment {
            tls: vec![version],
            suite: vec![suite.clone()],
            group: vec![group],
            client_backend: vec![backend],
            ..base.clone()
        };
        match experiment.configs() {
            Ok(mut configs) if configs.len() == 1 => return Ok((configs.remove(0), backend)),
            Ok(configs) => why = format!("{} Configs where one was expected", configs.len()),
            Err(error) => why = error.message,
        }
    }
    Err(NotTimed(why))
}

/// A row's Config (its index) and the client library timing it, or why it has none.
type Planned = Result<(usize, Backend), NotTimed>;

/// Times every choice `report` found; rows in the order of [`choices`].
pub fn time_choices(report: &Report, target: &Target, options: &TimingOptions) -> Costs {
    let started = Instant::now();
    let mut base = base_experiment(report, target, options);
    let mut costs = Costs {
        warmup_per_choice: WARMUP,
        certificate: report
            .certificates
            .chain
            .first()
            .map(|leaf| leaf.key.clone()),
        verified: !base.insecure,
        ..Costs::default()
    };
    let mut configs: Vec<Config> = Vec::new();
    let mut planned: Vec<(Choice, Planned)> = Vec::new();
    for choice in choices(report) {
        let entry = config_of(&base, &choice).map(|(mut config, backend)| {
            config.index = configs.len();
            config.label = format!(
                "{} {} {}",
                choice.version.name(),
                choice.suite,
                choice.group.as_deref().unwrap_or("-")
            );
            configs.push(config);
            (configs.len() - 1, backend)
        });
        planned.push((choice, entry));
    }
    let handshakes = handshakes_for(options.handshakes, configs.len() as u64);
    costs.handshakes_per_choice = handshakes;
    base.handshakes = handshakes;
    if base.block.is_some() {
        base.block = Some(handshakes);
    }
    let samples = Arc::new(Mutex::new(Vec::new()));
    if !configs.is_empty() {
        if let Err(error) = run(&base, &configs, samples.clone(), &options.invocation) {
            costs.error = Some(error.to_string());
        }
    }
    let samples = samples.lock().unwrap_or_else(|poison| poison.into_inner());
    costs.connections = samples.len() as u64;
    for (choice, entry) in planned {
        let row = match entry {
            Err(NotTimed(why)) => Cost::not_timed(&choice, why),
            Ok(_) if costs.error.is_some() => {
                Cost::not_timed(&choice, "the timed run failed (see timing.error)")
            }
            Ok((index, backend)) => {
                let measured: Vec<&Timed> = samples
                    .iter()
                    .filter(|timed| timed.config == index && !timed.warmup)
                    .collect();
                let median = |values: Vec<u64>| {
                    (!values.is_empty()).then(|| {
                        let millis: Vec<f64> = values.iter().map(|ns| *ns as f64 / 1e6).collect();
                        tlslab_stats::descriptive::median(&millis)
                    })
                };
                let ok: Vec<&&Timed> = measured.iter().filter(|timed| timed.ok).collect();
                Cost {
                    version: choice.version.name().into(),
                    suite: choice.suite.clone(),
                    group: choice.group.clone(),
                    backend: Some(backend.as_str().into()),
                    handshakes: ok.len() as u64,
                    errors: (measured.len() - ok.len()) as u64,
                    median_handshake_ms: median(ok.iter().filter_map(|t| t.handshake).collect()),
                    median_server_response_ms: median(
                        ok.iter().filter_map(|t| t.server_response).collect(),
                    ),
                    not_timed: None,
                }
            }
        };
        costs.rows.push(row);
    }
    costs.seconds = started.elapsed().as_secs_f64();
    costs
}

/// One engine run of `configs`, its samples into `samples`.
fn run(
    experiment: &Experiment,
    configs: &[Config],
    samples: Arc<Mutex<Vec<Timed>>>,
    invocation: &Invocation,
) -> Result<(), WorkflowError> {
    let seed = fastrand::u64(..);
    let plan = Plan::new(experiment, configs, seed);
    // The lab's certificate cache is not used against a target, but the engine opens one;
    // a machine without a home directory still scans.
    let pki = tlslab_pki::Pki::open_default()
        .or_else(|_| tlslab_pki::Pki::open(std::env::temp_dir().join("tlslab-scan-pki")))
        .map_err(WorkflowError::Pki)?;
    let options = RunOptions {
        server_program: invocation.program.clone(),
        pki,
        environment: invocation.environment(),
        command_line: invocation.stored_command_line(),
        seed,
        stop: Stop::new(),
        progress: None,
        key_log: None,
        capture: None,
        trials: None,
    };
    tlslab_engine::run(
        experiment,
        configs,
        &plan,
        options,
        Box::new(Collector(samples)),
    )
    .map(|_| ())
    .map_err(|source| WorkflowError::Engine {
        source,
        results: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_choices_get_fewer_handshakes_unless_told() {
        assert_eq!(handshakes_for(None, 18), 20);
        assert_eq!(handshakes_for(None, 25), 15);
        assert_eq!(handshakes_for(None, 200), MIN_HANDSHAKES);
        assert_eq!(handshakes_for(Some(50), 200), 50);
    }
}
