//! Running a [`Plan`]: a short composition of the steps in the other modules. The emulated
//! link comes first (lab servers start inside it, client threads join it), then the lab
//! servers, the routes and clients, the writer, the trial loop, the replay probe, teardown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use tlslab_core::{
    Config, Environment, Experiment, LinkUsage, Plan, RunEnd, RunInfo, Sink, Source, Usage,
};
use tlslab_emulation::EmulatorKind;
use tlslab_pki::Pki;

use crate::clients::ConfigClient;
use crate::error::RunError;
use crate::network::{EmulatedNetwork, ExternalServer};
use crate::progress::{self, ProgressCallback};
use crate::recording::Recording;
use crate::replay::{self, Flights};
use crate::routes::{routes, start_external_server, Route};
use crate::runtime::{client_runtime, NamespaceFailure};
use crate::servers::LabServers;
use crate::stop::Stop;
use crate::transport::raise_file_limit;
use crate::trials::{Counts, Ended, PlanOrder, Surroundings, TrialLoop, TrialSource};
use crate::writer::Writer;

/// What the engine needs besides the experiment.
pub struct RunOptions {
    /// The tlslab binary, started as `serve --control` for each lab server.
    pub server_program: PathBuf,
    /// Where the lab servers' certificates and keys are made and kept.
    pub pki: Pki,
    /// The machine, the build and the libraries, recorded with the run.
    pub environment: Environment,
    /// The command as typed, recorded with the run so it can be repeated.
    pub command_line: Vec<String>,
    /// The run's seed (the plan's): it names the emulated network's namespaces and devices,
    /// so runs side by side do not collide.
    pub seed: u64,
    /// Requested (on SIGINT or SIGTERM, by the binary): stop after the attempts in flight.
    pub stop: Stop,
    /// Called every 100 ms with the counts so far, for a display; `None`: no display.
    pub progress: Option<ProgressCallback>,
    /// Where every client writes its handshakes' secrets (`--keylog`, `SSLKEYLOGFILE`).
    pub key_log: Option<Arc<tlslab_backend::KeyLogFile>>,
    /// Where the run's own packets are recorded (`--capture`).
    pub capture: Option<PathBuf>,
    /// Where the trials come from: the plan in its order when `None`; an agent of a
    /// distributed run claims them from the run's database.
    pub trials: Option<Box<dyn TrialSource>>,
}

/// Runs every trial of `plan` and streams samples to `sink`. Returns when the plan is done or
/// `options.stop` was requested; samples taken so far are in the sink either way.
pub fn run(
    experiment: &Experiment,
    configs: &[Config],
    plan: &Plan,
    mut options: RunOptions,
    sink: Box<dyn Sink>,
) -> Result<RunEnd, RunError> {
    // Thousands of agents need as many sockets; a lower limit only means fewer agents fit.
    let _ = raise_file_limit();
    // Raised by whatever must stop the trials at once: a lab server that died, a sink that
    // refused a record.
    let halt = Stop::new();
    let mut setup = Setup::start(experiment, configs, &options, halt.clone())?;

    // Both clocks read together: a sample's wall-clock time (started_at_unix_ns plus its
    // started_at) then lines up with packet timestamps to within these reads (a thread
    // preempted between two reads would shift every sample's wall-clock time).
    let (origin, origin_wall) = tlslab_backend::wire::clocks_now();
    let origin_unix_ns = origin_wall
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64);
    let mut info = run_info(
        experiment,
        configs,
        plan,
        &options,
        setup.emulated.as_ref(),
        &setup.addresses,
        origin_unix_ns,
    );
    info.environment.name_resolution = std::mem::take(&mut setup.resolutions);
    let writer = Writer::start(sink, &info, halt.clone())?;
    let counts = Arc::new(Counts::default());
    let ticker = Stop::new();
    if let Some(callback) = options.progress.clone() {
        report_progress(
            &setup.runtime,
            callback,
            configs,
            plan,
            &counts,
            origin,
            &ticker,
        );
    }
    let measured = Measured {
        counts: &counts,
        origin,
        halt,
    };
    let mut source = options
        .trials
        .take()
        .unwrap_or_else(|| Box::new(PlanOrder::default()));
    let ended = setup.measure(
        (experiment, configs, plan),
        &options,
        source.as_mut(),
        &writer,
        measured,
    );
    ticker.request();
    // The last handshakes' closing packets are in flight still: a moment for them.
    let recorded = setup.recording.take().map(|recording| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        recording.finish()
    });

    let end = end_of(&ended, options.stop.is_requested(), &counts, origin);
    setup.teardown();
    let written = writer.finish(end.clone());
    // A capture that failed is the run's failure too, once its samples are written.
    let ended_failure = ended
        .failure
        .or_else(|| recorded.and_then(|recorded| recorded.err()));
    match ended_failure {
        Some(failure) => Err(failure),
        None => written.map(|()| end),
    }
}

/// Everything a run sets up before its first trial and tears down after its last. The fields
/// are in the reverse of the order they are made, so a run that fails before its teardown
/// drops them as its steps' locals would drop: the recording first, the emulated link last.
struct Setup {
    recording: Option<Recording>,
    connectors: Vec<Arc<ConfigClient>>,
    /// Each Config's server address, in order.
    addresses: Vec<SocketAddr>,
    /// How the run's names resolved, for the run's environment record.
    resolutions: Vec<tlslab_core::NameResolution>,
    external: Option<ExternalServer>,
    servers: LabServers,
    namespace_failure: NamespaceFailure,
    runtime: tokio::runtime::Runtime,
    emulated: Option<EmulatedNetwork>,
}

/// What the trial loop counts into, and the time its samples count from.
struct Measured<'a> {
    counts: &'a Arc<Counts>,
    origin: Instant,
    halt: Stop,
}

impl Setup {
    /// The emulated link first (lab servers start inside it, client threads join it), then
    /// the client's runtime, the lab servers, the `--server-cmd` server, the routes, the
    /// clients and the `--capture` recording.
    fn start(
        experiment: &Experiment,
        configs: &[Config],
        options: &RunOptions,
        halt: Stop,
    ) -> Result<Setup, RunError> {
        let emulated = emulate(experiment, configs, options.seed)?;
        let (runtime, namespace_failure) = client_runtime(emulated.as_ref())?;
        let network = emulated.as_ref().map(|emulated| &emulated.network);
        let servers = LabServers::start(
            configs,
            &options.server_program,
            &options.pki,
            network,
            halt.clone(),
        )?;
        let external = start_external_server(experiment, &runtime, emulated.as_ref())?;
        let external_route = external
            .as_ref()
            .map(|(_, target, address)| (target.as_str(), *address));
        let (routes, resolutions) = routes(
            configs,
            &servers,
            &runtime,
            emulated.as_ref(),
            external_route,
            &experiment.resolve,
        )?;
        let addresses: Vec<SocketAddr> = routes.iter().map(|route| route.address).collect();
        let connectors = clients(configs, routes, options.key_log.as_ref())?;
        let recording = options
            .capture
            .as_deref()
            .map(|path| {
                let external = experiment.target.is_some();
                Recording::start(path, emulated.as_ref(), external, halt)
            })
            .transpose()?;
        Ok(Setup {
            recording,
            connectors,
            addresses,
            resolutions,
            external: external.map(|(server, _, _)| server),
            servers,
            namespace_failure,
            runtime,
            emulated,
        })
    }

    /// The trial loop over `plan`, then, when the experiment asks for it and the loop ran to
    /// its end, the replay probe.
    fn measure(
        &mut self,
        (experiment, configs, plan): (&Experiment, &[Config], &Plan),
        options: &RunOptions,
        source: &mut dyn TrialSource,
        writer: &Writer,
        measured: Measured<'_>,
    ) -> Ended {
        let flights: Vec<Flights> = configs.iter().map(|_| Flights::default()).collect();
        let trials = TrialLoop {
            configs,
            connectors: &self.connectors,
            until_ci: experiment.until_ci,
            stop: options.stop.clone(),
            halt: measured.halt,
            counts: measured.counts.clone(),
            clock: Arc::new(tlslab_core::SystemClock),
            origin: measured.origin,
            arrivals: experiment.arrivals,
            records: writer.records(),
            flights: experiment.replay.then_some(&flights[..]),
        };
        let mut surroundings = RunSurroundings {
            emulated: self.emulated.as_ref(),
            namespace_failure: self.namespace_failure.clone(),
            servers: &mut self.servers,
            writer,
            recording: self.recording.as_ref(),
        };
        let ended = trials.run_from(&self.runtime, plan, source, &mut surroundings);
        if experiment.replay && !ended.stopped && ended.failure.is_none() {
            let records = writer.records();
            replay::probe(
                &self.runtime,
                configs,
                &self.addresses,
                &flights,
                &mut self.servers,
                &records,
            );
        }
        ended
    }

    /// Stops the client, the lab servers, the `--server-cmd` server and the emulated link.
    fn teardown(self) {
        teardown(self.runtime, self.servers, self.external, self.emulated);
    }
}

/// Reports progress to `callback` every 100 ms on `runtime` until `ticker` is requested.
fn report_progress(
    runtime: &tokio::runtime::Runtime,
    callback: ProgressCallback,
    configs: &[Config],
    plan: &Plan,
    counts: &Arc<Counts>,
    origin: Instant,
    ticker: &Stop,
) {
    progress::report(
        runtime,
        callback,
        counts.clone(),
        progress::Planned {
            labels: configs.iter().map(|config| config.label.clone()).collect(),
            total: plan.total_handshakes(),
            timed: plan.timed_duration(),
        },
        origin,
        ticker.clone(),
    );
}

/// Each Config's client in its library, on its route.
fn clients(
    configs: &[Config],
    routes: Vec<Route>,
    key_log: Option<&Arc<tlslab_backend::KeyLogFile>>,
) -> Result<Vec<Arc<ConfigClient>>, RunError> {
    configs
        .iter()
        .zip(routes)
        .map(|(config, route)| ConfigClient::new(config, route, key_log.cloned()).map(Arc::new))
        .collect()
}

/// How the run ended: complete unless the loop stopped early, the surroundings failed, or a
/// stop was requested at any time (also after the last trial).
fn end_of(ended: &Ended, stop_requested: bool, counts: &Counts, origin: Instant) -> RunEnd {
    let stopped = ended.stopped || ended.failure.is_some() || stop_requested;
    RunEnd {
        complete: !stopped,
        reason: stopped.then(|| match &ended.failure {
            Some(failure) => failure.message_with_causes(),
            None => "interrupted".to_string(),
        }),
        duration_ns: origin.elapsed().as_nanos() as u64,
        attempted: counts.done.load(Ordering::SeqCst),
        errors: counts.errors.load(Ordering::SeqCst),
    }
}

/// The emulated link, when any Config runs on one; `seed` names its namespaces and devices.
fn emulate(
    experiment: &Experiment,
    configs: &[Config],
    seed: u64,
) -> Result<Option<EmulatedNetwork>, RunError> {
    if !configs.iter().any(|config| config.network.is_some()) {
        return Ok(None);
    }
    let run_id = format!("{:08x}", seed as u32);
    EmulatedNetwork::create(experiment, &run_id).map(Some)
}

/// What the run is, written once before the first sample.
fn run_info(
    experiment: &Experiment,
    configs: &[Config],
    plan: &Plan,
    options: &RunOptions,
    emulated: Option<&EmulatedNetwork>,
    addresses: &[SocketAddr],
    started_at_unix_ns: u64,
) -> RunInfo {
    let mut environment = options.environment.clone();
    if let Some(emulated) = emulated {
        environment.network = emulated.description.clone();
    }
    let emulator = emulated.map(|emulated| emulated.kind().to_string());
    RunInfo {
        source: Source::Active,
        experiment: Some(experiment.clone()),
        configs: configs
            .iter()
            .zip(addresses)
            .map(|(config, address)| config.record(address.to_string(), emulator.clone()))
            .collect(),
        plan: Some(plan.clone()),
        environment,
        command_line: options.command_line.clone(),
        started_at_unix_ns,
    }
}

/// What surrounds each trial of a run: the emulated link's profile, and the lab server's CPU.
struct RunSurroundings<'a> {
    emulated: Option<&'a EmulatedNetwork>,
    namespace_failure: NamespaceFailure,
    servers: &'a mut LabServers,
    writer: &'a Writer,
    recording: Option<&'a Recording>,
}

impl Surroundings for RunSurroundings<'_> {
    fn check(&mut self) -> Result<(), RunError> {
        let failure = self.writer.failure();
        match failure
            .or_else(|| self.recording.and_then(Recording::failure))
            .or_else(|| self.servers.failure())
            .or_else(|| self.namespace_failure.take())
        {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }

    fn prepare(&mut self, config: &Config) -> Result<(), RunError> {
        match self.emulated {
            Some(emulated) => emulated.apply(config.network.as_ref()),
            None => Ok(()),
        }
    }

    fn server_usage(&mut self, config: &Config) -> Option<Usage> {
        self.servers.of(config)?.usage()
    }

    fn link_reset(&mut self) {
        if let Some(emulated) = self.emulated {
            emulated.network.reset_statistics();
        }
    }

    fn link_usage(&mut self, config: &Config) -> Option<LinkUsage> {
        let emulated = self.emulated?;
        // netem's forwarder is the kernel: its statistics are not the forwarder's (empty).
        if config.network.is_none() || emulated.network.kind() == EmulatorKind::Netem {
            return None;
        }
        let statistics = emulated.network.statistics();
        Some(LinkUsage {
            bytes_to_server: statistics.client_to_server.bytes_forwarded,
            bytes_to_client: statistics.server_to_client.bytes_forwarded,
            queue_drops: statistics.client_to_server.dropped_queue_full
                + statistics.server_to_client.dropped_queue_full,
        })
    }

    fn server_client_verifications(
        &mut self,
        config: &Config,
    ) -> Option<tlslab_core::ClientVerifications> {
        // Only servers that ask for client certificates verify any: others are not asked.
        config.mtls.as_ref()?;
        let counters = self.servers.of(config)?.counters()?;
        Some(tlslab_core::ClientVerifications {
            count: counters.client_verifications,
            nanos: counters.client_verify_ns,
        })
    }
}

/// Stops the client, the lab servers, the `--server-cmd` server and the emulated link.
fn teardown(
    runtime: tokio::runtime::Runtime,
    servers: LabServers,
    external: Option<ExternalServer>,
    emulated: Option<EmulatedNetwork>,
) {
    runtime.shutdown_timeout(Duration::from_millis(100));
    drop(servers);
    drop(external);
    if let Some(emulated) = emulated {
        if let Err(error) = emulated.network.close() {
            crate::network::note(format_args!("warning: {} ({})", error.message, error.hint));
        }
    }
}
