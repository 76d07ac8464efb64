//! Running a [`Plan`]: lab servers up, trials in order, samples streamed to a [`Sink`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tlslab_core::{
    Config, Ech, Endpoint, ErrorClass, Event, Experiment, Outcome, Plan, Sample, ServerKey,
    Transport, Trial,
};
use tlslab_pki::Pki;
use tlslab_tls::{Attempt, EchMode, Failure, Trust};

use crate::backend::{Agent, ConfigClient};
use crate::environment::Environment;
use crate::lab::LabServer;
use crate::network::{EmulatedNetwork, ExternalServer};
use crate::stopping::{relative_median_half_width, EarlyStop};
use crate::usage::Usage;

/// What a run is, written once before the first sample.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub experiment: Experiment,
    pub configs: Vec<Config>,
    pub plan: Plan,
    pub environment: Environment,
    pub command_line: Vec<String>,
    pub started_at_unix_ns: u64,
    /// Where each Config's handshakes went.
    pub addresses: Vec<String>,
    /// The emulator that carried emulated Configs' packets (netem, tun, relay).
    pub emulator: Option<String>,
}

/// One executed block.
#[derive(Debug, Clone, Serialize)]
pub struct TrialRecord {
    pub trial: Trial,
    pub concurrency: u32,
    /// Nanoseconds since the run started.
    pub started_at: u64,
    pub duration_ns: u64,
    pub attempted: u64,
    /// CPU the lab server spent during the trial (`None` for external targets).
    pub server: Option<Usage>,
    /// CPU this process spent during the trial: the load generator's own cost.
    pub client: Usage,
}

/// Something the engine streams to the sink.
#[derive(Debug, Clone)]
pub enum Record {
    Sample(Box<Sample>),
    Trial(TrialRecord),
    /// A Config met the `--until-ci` target and runs no more blocks.
    Stopped(EarlyStop),
    /// The replay probe's result for one Config.
    Replay(ReplayRecord),
}

/// What the lab server did with re-sent 0-RTT flights (`--replay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReplayRecord {
    pub config: usize,
    /// Captured first flights re-sent.
    pub sent: u64,
    /// Replays the server recognised as a spent ticket and refused.
    pub rejected: u64,
    /// Tickets the server redeemed during the probe: a replay it accepted (should be 0).
    pub accepted: u64,
}

/// How the run ended.
#[derive(Debug, Clone, Serialize)]
pub struct RunEnd {
    pub complete: bool,
    /// Why it stopped early, when it did.
    pub reason: Option<String>,
    pub duration_ns: u64,
    pub attempted: u64,
    pub errors: u64,
}

/// Where samples go: the results store, or anything else that wants them.
pub trait Sink: Send {
    fn begin(&mut self, info: &RunInfo) -> Result<(), String>;
    fn record(&mut self, record: Record) -> Result<(), String>;
    /// Called when no record arrived for a while: a chance to commit a partial batch.
    fn flush(&mut self) -> Result<(), String>;
    fn finish(&mut self, end: &RunEnd) -> Result<(), String>;
}

/// Live counters for a progress display.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub errors: u64,
    pub total: u64,
    pub elapsed: Duration,
}

pub type ProgressCallback = Arc<dyn Fn(&Progress) + Send + Sync>;

/// What the engine needs besides the experiment.
pub struct RunOptions {
    /// The tlslab binary, started as `serve --control` for each lab server.
    pub server_program: PathBuf,
    pub pki: Pki,
    pub environment: Environment,
    pub command_line: Vec<String>,
    pub seed: u64,
    /// Set to stop after the attempts in flight (Ctrl-C).
    pub stop: Arc<AtomicBool>,
    pub progress: Option<ProgressCallback>,
}

/// Why a run could not start or had to stop; `kind` decides the exit code.
#[derive(Debug, Clone)]
pub struct RunError {
    pub kind: RunErrorKind,
    pub message: String,
    pub hint: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunErrorKind {
    /// The user asked for something that cannot work (exit 2).
    Configuration,
    /// The machine lacks something (exit 3).
    Environment,
}

fn environment_error(message: impl Into<String>, hint: impl Into<String>) -> RunError {
    RunError {
        kind: RunErrorKind::Environment,
        message: message.into(),
        hint: hint.into(),
    }
}

enum Message {
    Record(Record),
    Finish(RunEnd),
}

/// Runs every trial of `plan` and streams samples to `sink`. Returns when the plan is done or
/// `options.stop` was set; samples taken so far are in the sink either way.
pub fn run(
    experiment: &Experiment,
    configs: &[Config],
    plan: &Plan,
    options: RunOptions,
    mut sink: Box<dyn Sink>,
) -> Result<RunEnd, RunError> {
    let _ = tlslab_net::raise_file_limit();
    let mut environment = options.environment.clone();
    // The emulated link comes first: lab servers start inside it, client threads join it.
    let emulated = if configs.iter().any(|config| config.network.is_some()) {
        let run_id = format!("{:08x}", options.seed as u32);
        let network = EmulatedNetwork::create(experiment, &run_id)?;
        environment.network = network.description.clone();
        Some(network)
    } else {
        None
    };
    let namespace_failure: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let client_namespace = emulated.as_ref().map(EmulatedNetwork::client_namespace);
    let failure_slot = namespace_failure.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Every runtime thread, blocking ones included, lives in the client namespace; the
        // thread that drives the runtime only awaits agents, so it can stay where it is.
        .on_thread_start(move || {
            if let Some(namespace) = &client_namespace {
                if let Err(error) = namespace.enter_client_namespace() {
                    let mut slot = failure_slot.lock().unwrap_or_else(|e| e.into_inner());
                    slot.get_or_insert(error.to_string());
                }
            }
        })
        .build()
        .map_err(|error| {
            environment_error(
                format!("cannot start the runtime: {error}"),
                "check the process limits (ulimit -u)",
            )
        })?;

    let mut servers: HashMap<ServerKey, LabServer> = HashMap::new();
    let mut roots: HashMap<ServerKey, Trust> = HashMap::new();
    for config in configs {
        let Some(key) = config.server_key(experiment.body) else {
            continue;
        };
        if servers.contains_key(&key) {
            continue;
        }
        let chain = options.pki.chain(key.cert, key.chain).map_err(|error| {
            environment_error(
                format!("cannot prepare the {} certificate chain: {error}", key.cert),
                format!(
                    "check that {} is writable, or set TLSLAB_PKI_DIR",
                    options.pki.dir().display()
                ),
            )
        })?;
        roots.insert(key, Trust::Roots(vec![chain.root.clone()]));
        let server = LabServer::spawn(
            &options.server_program,
            options.pki.dir(),
            key,
            &experiment.ech_public_name,
            emulated.as_ref().map(|emulated| &emulated.network),
        )
        .map_err(|error| {
            environment_error(
                error,
                "run `tlslab serve --cert ... --chain ...` by hand to see why",
            )
        })?;
        servers.insert(key, server);
    }

    let mut target_addresses: HashMap<String, SocketAddr> = HashMap::new();
    // `--server-cmd`: the user's server, started where the lab server would run; the target
    // names its port (and, without emulation, its host).
    let mut external_server = None;
    if let (Some(command), Some(target)) = (&experiment.server_cmd, &experiment.target) {
        let given = runtime
            .block_on(tlslab_net::resolve(target))
            .map_err(|error| RunError {
                kind: RunErrorKind::Configuration,
                message: format!("cannot resolve target '{target}': {error}"),
                hint: "with --server-cmd, give the port the server listens on: --target 127.0.0.1:8443".into(),
            })?;
        let listening = match &emulated {
            Some(emulated) => SocketAddr::new(emulated.network.server_ip(), given.port()),
            None => given,
        };
        external_server = Some(ExternalServer::start(
            command,
            listening,
            emulated.as_ref(),
        )?);
        let reach = match &emulated {
            Some(emulated) => emulated
                .network
                .route(listening)
                .map_err(|error| environment_error(error.message, error.hint))?,
            None => listening,
        };
        target_addresses.insert(target.clone(), reach);
    }
    let mut clients = Vec::with_capacity(configs.len());
    let mut addresses = Vec::with_capacity(configs.len());
    for config in configs {
        let (address, server_name, trust) = match (
            &config.endpoint,
            config.server_key(experiment.body),
        ) {
            (Endpoint::Lab { .. }, Some(key)) => (
                match &emulated {
                    Some(emulated) => emulated
                        .network
                        .route(servers[&key].address)
                        .map_err(|error| environment_error(error.message, error.hint))?,
                    None => servers[&key].address,
                },
                "localhost".to_string(),
                roots[&key].clone(),
            ),
            (Endpoint::Lab { .. }, None) => unreachable!("a lab endpoint has a server key"),
            (Endpoint::Target { address, sni, ca }, _) => {
                let resolved = match target_addresses.get(address) {
                    Some(resolved) => *resolved,
                    None => {
                        let resolved = runtime.block_on(tlslab_net::resolve(address)).map_err(|error| RunError {
                            kind: RunErrorKind::Configuration,
                            message: format!("cannot resolve target '{address}': {error}"),
                            hint: "check the host name, or give an IP address: --target 127.0.0.1:8443".into(),
                        })?;
                        // Through the relay when the experiment emulates a network.
                        let resolved = match &emulated {
                            Some(emulated) => emulated
                                .network
                                .route(resolved)
                                .map_err(|error| environment_error(error.message, error.hint))?,
                            None => resolved,
                        };
                        target_addresses.insert(address.clone(), resolved);
                        resolved
                    }
                };
                let trust = if let Some(ca) = ca {
                    let roots = tlslab_pki::load_certificates(ca).map_err(|error| RunError {
                        kind: RunErrorKind::Configuration,
                        message: format!("cannot use --ca {}: {error}", ca.display()),
                        hint: "give a PEM file with the CA certificate(s) that issued the server's chain".into(),
                    })?;
                    Trust::Roots(roots)
                } else {
                    Trust::System
                };
                (resolved, sni.clone(), trust)
            }
        };
        let trust = if config.insecure {
            Trust::Insecure
        } else {
            trust
        };
        let ech = match config.ech {
            Ech::Off => EchMode::Off,
            Ech::Grease => EchMode::Grease,
            Ech::On => EchMode::On(ech_config_list(
                config,
                &servers,
                experiment.ech_config.as_deref(),
                experiment.body,
            )?),
        };
        let client = ConfigClient::new(config, server_name, trust, ech).map_err(|error| {
            environment_error(
                format!("cannot set up the client for '{}': {error}", config.label),
                if error.contains("root certificates") {
                    "install the system CA certificates (ca-certificates) or pass --ca FILE"
                } else {
                    "the client library refused the Config's settings; change them or try the other --client-backend"
                },
            )
        })?;
        clients.push(Arc::new(client));
        addresses.push(address);
    }

    let run_origin = Instant::now();
    let info = RunInfo {
        experiment: experiment.clone(),
        configs: configs.to_vec(),
        plan: plan.clone(),
        environment,
        command_line: options.command_line.clone(),
        started_at_unix_ns: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        addresses: addresses.iter().map(|a| a.to_string()).collect(),
        emulator: emulated
            .as_ref()
            .map(|emulated| emulated.kind().to_string()),
    };
    sink.begin(&info).map_err(|error| {
        environment_error(
            format!("cannot write results: {error}"),
            "check the --out path and free disk space",
        )
    })?;

    let (sender, receiver) = mpsc::channel::<Message>();
    let writer = std::thread::Builder::new()
        .name("tlslab-sink".into())
        .spawn(move || -> Result<(), String> {
            let mut failed: Option<String> = None;
            loop {
                match receiver.recv_timeout(Duration::from_millis(200)) {
                    Ok(Message::Record(record)) => {
                        if failed.is_none() {
                            if let Err(error) = sink.record(record) {
                                failed = Some(error);
                            }
                        }
                    }
                    Ok(Message::Finish(end)) => {
                        sink.finish(&end)?;
                        return failed.map_or(Ok(()), Err);
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if failed.is_none() {
                            if let Err(error) = sink.flush() {
                                failed = Some(error);
                            }
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return failed.map_or(Ok(()), Err),
                }
            }
        })
        .map_err(|error| {
            environment_error(
                format!("cannot start the writer thread: {error}"),
                "check the process limits",
            )
        })?;

    let stop = options.stop.clone();
    {
        let stop = stop.clone();
        runtime.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.store(true, Ordering::SeqCst);
            }
        });
    }
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    if let Some(progress) = options.progress.clone() {
        let (done, errors, stop) = (done.clone(), errors.clone(), stop.clone());
        let total = plan.total_handshakes();
        runtime.spawn(async move {
            let mut ticker = tokio::time::interval(Duration::from_millis(100));
            while !stop.load(Ordering::Relaxed) {
                ticker.tick().await;
                progress(&Progress {
                    done: done.load(Ordering::Relaxed),
                    errors: errors.load(Ordering::Relaxed),
                    total,
                    elapsed: run_origin.elapsed(),
                });
            }
        });
    }

    let mut sessions: Vec<Vec<Agent>> = vec![Vec::new(); configs.len()];
    // First flights of 0-RTT attempts, kept for the replay probe.
    let flights: Vec<Flights> = configs.iter().map(|_| Flights::default()).collect();
    let mut measured: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut finished_early = vec![false; configs.len()];
    let mut last_round = 0;
    let mut stopped = false;
    // A failure of the emulated network mid-run: the run stops, keeping what it measured.
    let mut failure: Option<RunError> = None;
    for trial in &plan.trials {
        if stop.load(Ordering::SeqCst) {
            stopped = true;
            break;
        }
        // Sequential stopping is judged between rounds, when every active Config has run
        // the same number of blocks.
        if let (Some(target), true) = (experiment.until_ci, trial.round > last_round) {
            for (index, values) in measured.iter().enumerate() {
                if finished_early[index] {
                    continue;
                }
                if let Some(width) = relative_median_half_width(values) {
                    if width <= target {
                        finished_early[index] = true;
                        let _ = sender.send(Message::Record(Record::Stopped(EarlyStop {
                            config: index,
                            round: last_round,
                            samples: values.len(),
                            relative_half_width: width,
                        })));
                    }
                }
            }
        }
        last_round = trial.round;
        if finished_early[trial.config] {
            continue;
        }
        let config = &configs[trial.config];
        if let Some(emulated) = &emulated {
            if let Some(error) = namespace_failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                failure = Some(environment_error(
                    format!("a client thread could not join the client network namespace: {error}"),
                    "run as root or with CAP_SYS_ADMIN and CAP_NET_ADMIN, or use --emulator relay",
                ));
                break;
            }
            if let Err(error) = emulated.apply(config.network.as_ref()) {
                failure = Some(error);
                break;
            }
        }
        let client = clients[trial.config].clone();
        let agents = &mut sessions[trial.config];
        while agents.len() < config.concurrency as usize {
            agents.push(client.agent_session());
        }
        let mut server = config
            .server_key(experiment.body)
            .and_then(|key| servers.get_mut(&key));
        let server_before = server.as_mut().and_then(|s| s.usage());
        let client_before = Usage::current();
        let trial_start = Instant::now();
        let context = TrialContext {
            trial: *trial,
            config: Arc::new(config.clone()),
            client,
            address: addresses[trial.config],
            run_origin,
            stop: stop.clone(),
            done: done.clone(),
            errors: errors.clone(),
            flights: experiment.replay.then(|| flights[trial.config].clone()),
        };
        let (attempted, handshakes) =
            runtime.block_on(run_trial(context, agents.clone(), sender.clone()));
        if !trial.warmup {
            measured[trial.config].extend(handshakes);
        }
        let duration = trial_start.elapsed();
        let client_usage = Usage::current().since(&client_before);
        let server_usage = match (server_before, server.as_mut().and_then(|s| s.usage())) {
            (Some(before), Some(after)) => Some(after.since(&before)),
            _ => None,
        };
        let _ = sender.send(Message::Record(Record::Trial(TrialRecord {
            trial: *trial,
            concurrency: config.concurrency,
            started_at: trial_start.duration_since(run_origin).as_nanos() as u64,
            duration_ns: duration.as_nanos() as u64,
            attempted,
            server: server_usage,
            client: client_usage,
        })));
    }
    if experiment.replay && !stopped && failure.is_none() {
        for (index, config) in configs.iter().enumerate() {
            let Some(server) = config
                .server_key(experiment.body)
                .and_then(|key| servers.get_mut(&key))
            else {
                continue;
            };
            let captured =
                std::mem::take(&mut *flights[index].lock().unwrap_or_else(|e| e.into_inner()));
            if captured.is_empty() {
                continue;
            }
            let before = server.counters();
            let address = addresses[index];
            let transport = config.transport;
            let patience = config
                .network
                .map_or(Duration::ZERO, |network| network.rtt * 2)
                + Duration::from_millis(50);
            // On a runtime thread: those are in the client namespace, this one is not.
            let replays = runtime.spawn(async move {
                let mut sent = 0;
                for flight in &captured {
                    let replayed = match transport {
                        Transport::Tcp => {
                            tlslab_tls::replay_tcp(address, &flight.concat(), patience).await
                        }
                        Transport::Quic => tlslab_tls::replay_quic(address, flight, patience).await,
                    };
                    sent += u64::from(replayed.is_ok());
                }
                sent
            });
            let sent = runtime.block_on(replays).unwrap_or(0);
            // The server handles each replay on its own task; give the last ones a moment.
            std::thread::sleep(patience);
            if let (Some(before), Some(after)) = (before, server.counters()) {
                let _ = sender.send(Message::Record(Record::Replay(ReplayRecord {
                    config: index,
                    sent,
                    rejected: after.replays_rejected - before.replays_rejected,
                    accepted: after.tickets_redeemed - before.tickets_redeemed,
                })));
            }
        }
    }
    stopped |= stop.swap(true, Ordering::SeqCst) || failure.is_some();
    let end = RunEnd {
        complete: !stopped,
        reason: stopped.then(|| match &failure {
            Some(failure) => failure.message.clone(),
            None => "interrupted".to_string(),
        }),
        duration_ns: run_origin.elapsed().as_nanos() as u64,
        attempted: done.load(Ordering::SeqCst),
        errors: errors.load(Ordering::SeqCst),
    };
    let _ = sender.send(Message::Finish(end.clone()));
    drop(sender);
    runtime.shutdown_timeout(Duration::from_millis(100));
    drop(servers);
    drop(external_server);
    if let Some(emulated) = emulated {
        if let Err(error) = emulated.network.close() {
            eprintln!("warning: {} ({})", error.message, error.hint);
        }
    }
    match writer.join() {
        Ok(Ok(())) if failure.is_some() => Err(failure.expect("checked")),
        Ok(Ok(())) => Ok(end),
        Ok(Err(error)) => Err(environment_error(
            format!("writing results failed: {error}"),
            "check free disk space; samples committed before the failure are kept",
        )),
        Err(_) => Err(environment_error(
            "the results writer crashed",
            "report this as a bug",
        )),
    }
}

/// The ECHConfigList a Config with ECH offers: its lab server's, or the target's from
/// `--ech-config`.
fn ech_config_list(
    config: &Config,
    servers: &HashMap<ServerKey, LabServer>,
    given: Option<&str>,
    body: u64,
) -> Result<Vec<u8>, RunError> {
    if let Some(key) = config.server_key(body) {
        return servers[&key].ech_config.clone().ok_or_else(|| {
            environment_error(
                format!(
                    "the lab server of '{}' offers no ECH configuration",
                    config.label
                ),
                "ECH needs the OpenSSL lab server: --server-backend openssl",
            )
        });
    }
    // HTTPS records use standard base64; accept the URL-safe alphabet and missing padding
    // too, as the experiment's check does.
    let mut text: String = given
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            other => other,
        })
        .collect();
    while text.len() % 4 != 0 {
        text.push('=');
    }
    openssl::base64::decode_block(&text).map_err(|_| RunError {
        kind: RunErrorKind::Configuration,
        message: "--ech-config is not valid base64".into(),
        hint: "give the ECHConfigList as base64, as in the ech= value of an HTTPS DNS record"
            .into(),
    })
}

/// Captured first flights of one Config's 0-RTT attempts (each a list of datagrams or one
/// TCP write).
type Flights = Arc<std::sync::Mutex<Vec<Vec<Vec<u8>>>>>;

/// The replay probe re-sends at most this many flights per Config.
const REPLAYED_FLIGHTS: usize = 100;

struct TrialContext {
    trial: Trial,
    config: Arc<Config>,
    client: Arc<ConfigClient>,
    address: SocketAddr,
    run_origin: Instant,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
    /// Where 0-RTT first flights go when the run ends with a replay probe.
    flights: Option<Flights>,
}

/// Runs one block: `concurrency` agents share the block's handshakes. Returns how many were
/// attempted, and the handshake durations (ns) of the successful ones.
async fn run_trial(
    context: TrialContext,
    agents: Vec<Agent>,
    sender: mpsc::Sender<Message>,
) -> (u64, Vec<f64>) {
    let context = Arc::new(context);
    let remaining = Arc::new(AtomicU64::new(context.trial.handshakes));
    let attempted = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for (agent, session) in agents.into_iter().enumerate() {
        let (context, remaining, attempted, sender) = (
            context.clone(),
            remaining.clone(),
            attempted.clone(),
            sender.clone(),
        );
        tasks.spawn(async move {
            let mut handshakes = Vec::new();
            while !context.stop.load(Ordering::Relaxed)
                && remaining
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                        left.checked_sub(1)
                    })
                    .is_ok()
            {
                let sample = attempt(&context, &session, agent as u32).await;
                attempted.fetch_add(1, Ordering::Relaxed);
                if !sample.is_ok() {
                    context.errors.fetch_add(1, Ordering::Relaxed);
                } else if let Some(nanos) = sample.timeline.phase(tlslab_core::Phase::Handshake) {
                    handshakes.push(nanos as f64);
                }
                context.done.fetch_add(1, Ordering::Relaxed);
                let _ = sender.send(Message::Record(Record::Sample(Box::new(sample))));
            }
            handshakes
        });
    }
    let mut handshakes = Vec::new();
    while let Some(result) = tasks.join_next().await {
        handshakes.extend(result.unwrap_or_default());
    }
    (attempted.load(Ordering::SeqCst), handshakes)
}

/// One handshake attempt, always producing a Sample.
async fn attempt(context: &TrialContext, session: &Agent, agent: u32) -> Sample {
    let config = &context.config;
    let mut attempt = Attempt::start();
    let started_at = attempt.origin.duration_since(context.run_origin).as_nanos() as u64;
    if context.flights.is_some() && config.early_data > 0 {
        attempt.captured = Some(Vec::new());
    }
    let result = tokio::time::timeout(
        config.timeout,
        context
            .client
            .attempt(config, session, &mut attempt, context.address),
    )
    .await;
    attempt.settle();
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(failure),
        Err(_) if attempt.timeline.get(Event::HandshakeDone).is_some() => Some(Failure::new(
            ErrorClass::Timeout,
            format!(
                "the handshake completed, but the request did not within {:?}",
                config.timeout
            ),
        )),
        Err(_) => Some(Failure::new(
            ErrorClass::Timeout,
            format!("no handshake within {:?}", config.timeout),
        )),
    };
    if let (Some(flights), Some(captured), Some(true)) = (
        &context.flights,
        attempt.captured.take(),
        attempt.negotiated.early_data,
    ) {
        let mut flights = flights.lock().unwrap_or_else(|e| e.into_inner());
        if flights.len() < REPLAYED_FLIGHTS && !captured.is_empty() {
            flights.push(captured);
        }
    }
    let (bytes_sent, bytes_received) = attempt.handshake_bytes();
    Sample {
        config: config.index,
        trial: context.trial.index,
        round: context.trial.round,
        agent,
        warmup: context.trial.warmup,
        started_at,
        timeline: attempt.timeline,
        outcome: if failure.is_none() {
            Outcome::Ok
        } else {
            Outcome::Error
        },
        error: failure.as_ref().map(|f| f.class),
        error_detail: failure.map(|f| f.detail),
        negotiated: attempt.negotiated,
        bytes_sent,
        bytes_received,
        client_hello_bytes: attempt.client_hello_bytes,
        server_flight_bytes: attempt.server_flight_bytes,
        response: attempt.response,
        quic: attempt.quic,
        insecure: config.insecure,
    }
}
