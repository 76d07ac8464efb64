//! Distributed runs (issue 33): `run --agents N` ([`coordinate`]) stores the plan and the run
//! in a PostgreSQL database and waits for its agents; `agent` ([`agent`]) joins such a run,
//! expands the same plan, measures its clock against the database server's, waits for the
//! common start, and runs the trials it claims with the same engine a local run uses, its
//! samples going into the run as it goes. The database is the only coordinator
//! (tlslab-store's `postgres/agents.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tlslab_core::{Config, Experiment, Plan, RunEnd, RunInfo, Sink, Source, Trial};
use tlslab_engine::{RunError, TrialSource};
use tlslab_store::postgres::agents::{
    unix_ns_now, AgentEnd, AgentRun, ClockOffset, Coordination, Distribution, LostAgent,
    Registration, Work,
};
use tlslab_store::{KeptHandle, Location, NewRun};

use crate::results::{self, Results};
use crate::run::{self, RunOutcome, RunRequest};
use crate::{Control, Invocation, WorkflowError};

/// An agent that has not beaten for this long is lost: its claim is taken over.
pub const STALE_AFTER: Duration = Duration::from_secs(10);
/// How often an agent beats.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How often the coordinator looks at the run's progress.
const POLL: Duration = Duration::from_millis(500);
/// How long an agent waits before asking again when the trials left are all held.
const CLAIM_RETRY: Duration = Duration::from_millis(500);
/// Reads of the database server's clock an agent takes to measure its offset.
const CLOCK_TRIES: usize = 8;

/// `--shard I/N`: which of N agents this one is (its identity in the summary; the work is
/// claimed, not divided, so a fast agent takes more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// From 0.
    pub index: u32,
    /// How many.
    pub count: u32,
}

/// Why a `--shard` is not `I/N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// No `/` between the index and the count.
    #[error("`{0}` is not I/N (say 0/4 for the first of four)")]
    Form(String),
    /// A part that is not a number.
    #[error("`{part}` in `{text}` is not a number")]
    Number {
        /// The part.
        part: String,
        /// The whole.
        text: String,
    },
    /// An index at or past the count, or a count of 0.
    #[error("`{0}`: the index counts from 0 and must be below the count")]
    Range(String),
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| ShardError::Form(text.into()))?;
        let parse = |part: &str| {
            part.trim().parse::<u32>().map_err(|_| ShardError::Number {
                part: part.into(),
                text: text.into(),
            })
        };
        let (index, count) = (parse(index)?, parse(count)?);
        if count == 0 || index >= count {
            return Err(ShardError::Range(text.into()));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}/{}", self.index, self.count)
    }
}

/// What an agent joins and how long it waits for the start.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// The database the run is in.
    pub store: Location,
    /// The run.
    pub run: i64,
    /// Which agent this is, when the engine that started it says (an indexed job, an array).
    pub shard: Option<Shard>,
    /// How long to wait for the common start (the other agents registering).
    pub wait_start: Duration,
    /// The lab's certificate directory; the default one when `None`.
    pub pki_dir: Option<std::path::PathBuf>,
    /// Who runs it.
    pub invocation: Invocation,
}

/// What an agent did.
#[derive(Debug, Clone)]
pub struct AgentOutcome {
    /// The run, and where it is.
    pub results: Results,
    /// The agent's number in the run.
    pub agent: i64,
    /// Its clock against the database server's.
    pub clock: ClockOffset,
    /// How late it started after the common start, ns (negative: early, within the clock's
    /// uncertainty).
    pub late_ns: i64,
    /// Its part of the run.
    pub end: RunEnd,
    /// Trials it ran.
    pub trials: u64,
    /// Trials it took over from lost agents: (trial, agent).
    pub taken_over: Vec<(usize, i64)>,
    /// Agents it found lost and settled.
    pub lost: Vec<LostAgent>,
}

/// Joins run `request.run` as an agent and runs the trials it claims until none is left.
/// Stopping `control.stop` ends it after the attempts in flight; its unfinished trial is
/// taken over by another agent.
pub fn agent(request: &AgentRequest, control: &Control) -> Result<AgentOutcome, WorkflowError> {
    let mut coordination = Coordination::connect(&request.store)?;
    let registration = Registration {
        shard: request.shard.map(|shard| shard.to_string()),
        host: host_name(),
        process_id: std::process::id(),
        tool_version: request.invocation.version.clone(),
        commit_id: request.invocation.commit.clone(),
    };
    let joined = coordination.register(request.run, &registration)?;
    let (experiment, mut configs, plan) = expand(&joined.experiment, &joined.plan, request.run)?;
    let planned_clients: Vec<u64> = configs
        .iter()
        .map(|config| u64::from(config.concurrency.max(1)))
        .collect();
    let gang = gang_of(&joined, &mut configs);
    let clock = coordination.measure_clock(CLOCK_TRIES)?;
    let address = measuring_address(experiment.target.as_deref());
    coordination.record_clock((joined.run, joined.agent), clock, address)?;
    let heartbeat = Heartbeat::start(&request.store, joined.run, joined.agent)?;
    let start = wait_for_start(&mut coordination, request, clock, control)?;
    let started = unix_ns_now() + clock.offset_ns;
    coordination.started(joined.run, joined.agent, started)?;
    let sink = tlslab_store::Store::agent_sink(
        &request.store,
        joined.run,
        (joined.agent, gang.is_some()),
        joined.started_at_unix_ns,
        clock.offset_ns,
    )?;
    let claims = Claims {
        coordination: Coordination::connect(&request.store)?,
        run: joined.run,
        agent: joined.agent,
        shared: Arc::new(Mutex::new(Claimed::default())),
        stop: control.stop.clone(),
        gang: gang.map(|gang| (gang, 0)),
        planned_clients,
    };
    let claimed = claims.shared.clone();
    let usage_before = tlslab_engine::usage::current();
    let options = tlslab_engine::RunOptions {
        server_program: request.invocation.program.clone(),
        pki: crate::open_pki(request.pki_dir.as_deref())?,
        environment: request.invocation.environment(),
        command_line: request.invocation.stored_command_line(),
        seed: plan.seed,
        stop: control.stop.clone(),
        progress: control.progress.clone(),
        key_log: None,
        capture: None,
        trials: Some(Box::new(claims)),
    };
    let ran = tlslab_engine::run(&experiment, &configs, &plan, options, sink);
    heartbeat.stop();
    let usage = tlslab_engine::usage::current().since(&usage_before);
    let claimed = std::mem::take(&mut *claimed.lock().unwrap_or_else(|e| e.into_inner()));
    let (end, lost) = end_agent(&mut coordination, &joined, (&ran, usage), &claimed)?;
    ran.map_err(|source| WorkflowError::Engine {
        source,
        results: Some(std::path::PathBuf::from(request.store.to_string())),
    })?;
    Ok(AgentOutcome {
        results: Results::new(request.store.clone(), Some(joined.run)),
        agent: joined.agent,
        clock,
        late_ns: started - start,
        end,
        trials: claimed.trials,
        taken_over: claimed.taken_over,
        lost,
    })
}

/// In a gang, this agent's place in it (the order it registered in, from 0), and each of
/// `configs` made its share of the Config's clients, and of its attempts and arrival rate
/// with them; `None` when the run's trials are claimed.
fn gang_of(joined: &AgentRun, configs: &mut [Config]) -> Option<Gang> {
    let gang = (joined.distribution == Distribution::Gang).then(|| Gang {
        index: joined.index.max(0) as u64,
        count: joined.agents.max(1) as u64,
    })?;
    for config in configs {
        gang.share_config(config);
    }
    Some(gang)
}

/// The agent's end written (how its engine run ended, its CPU and trials), the agents found
/// lost settled, and the trials done so far priced from a remote lab server's readings.
fn end_agent(
    coordination: &mut Coordination,
    joined: &AgentRun,
    (ran, usage): (&Result<RunEnd, RunError>, tlslab_core::Usage),
    claimed: &Claimed,
) -> Result<(RunEnd, Vec<LostAgent>), WorkflowError> {
    let end = match ran {
        Ok(end) => end.clone(),
        Err(error) => RunEnd {
            complete: false,
            reason: Some(tlslab_core::WithCauses(error).to_string()),
            ..RunEnd::default()
        },
    };
    coordination.finish(
        joined.run,
        joined.agent,
        &AgentEnd {
            complete: end.complete,
            reason: end.reason.clone(),
            trials: claimed.trials,
            attempted: end.attempted,
            errors: end.errors,
            client_user_ns: usage.user_ns,
            client_system_ns: usage.system_ns,
        },
    )?;
    let lost = coordination.settle_lost(joined.run, STALE_AFTER)?;
    coordination.attribute_server_usage(joined.run)?;
    Ok((end, lost))
}

/// The experiment, Configs and plan of a run as its coordinator stored them, expanded again
/// here: refused unless the plan comes out the same (the same build does).
fn expand(
    experiment: &str,
    stored_plan: &str,
    run: i64,
) -> Result<(Experiment, Vec<Config>, Plan), WorkflowError> {
    let unreadable = |what: &str| {
        WorkflowError::usage(
            format!("run {run}'s {what} cannot be read by this tlslab"),
            "run the agents and the coordinator from one build of tlslab",
        )
    };
    let experiment = Experiment::from_toml(experiment).map_err(|_| unreadable("experiment"))?;
    let configs = experiment.configs().map_err(|_| unreadable("experiment"))?;
    let seed = experiment.seed.ok_or_else(|| unreadable("seed"))?;
    let plan = Plan::new(&experiment, &configs, seed);
    let expanded = serde_json::to_string(&Some(&plan)).map_err(|_| unreadable("plan"))?;
    if expanded != stored_plan {
        return Err(unreadable("plan (it expands to another here)"));
    }
    Ok((experiment, configs, plan))
}

/// Waits for the run's common start (set when the last expected agent registers), then until
/// it comes on this machine's clock; the start, on the database server's clock.
fn wait_for_start(
    coordination: &mut Coordination,
    request: &AgentRequest,
    clock: ClockOffset,
    control: &Control,
) -> Result<i64, WorkflowError> {
    let waiting = Instant::now();
    let start = loop {
        if let (Some(start), _) = coordination.start_at(request.run)? {
            break start;
        }
        if control.stop.is_requested() {
            return Err(WorkflowError::usage(
                "stopped while waiting for the run's start",
                "the run starts when every agent it waits for has registered",
            ));
        }
        if waiting.elapsed() >= request.wait_start {
            return Err(WorkflowError::usage(
                format!(
                    "run {} did not start within {} s: fewer agents registered than it waits for",
                    request.run,
                    request.wait_start.as_secs()
                ),
                "start every agent the run was made for (`--agents N`), or give --wait-start a longer time",
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let local_start = start - clock.offset_ns;
    let wait = local_start - unix_ns_now();
    if wait > 0 {
        std::thread::sleep(Duration::from_nanos(wait as u64));
    }
    Ok(start)
}

/// What an agent claimed, for its outcome.
#[derive(Debug, Default)]
struct Claimed {
    trials: u64,
    taken_over: Vec<(usize, i64)>,
}

/// The trials an agent claims from the run's database, one at a time.
struct Claims {
    coordination: Coordination,
    run: i64,
    agent: i64,
    shared: Arc<Mutex<Claimed>>,
    stop: tlslab_engine::Stop,
    /// In a gang: this agent's place, and the next trial.
    gang: Option<(Gang, usize)>,
    /// Each Config's clients as planned (the gang's, not this agent's share).
    planned_clients: Vec<u64>,
}

/// Agent `index` of a gang of `count`: its share of each trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gang {
    index: u64,
    count: u64,
}

impl Gang {
    /// This agent's clients of `clients`: a block of them, the first `clients % count`
    /// agents taking one more (its first client's number, and how many).
    fn clients(&self, clients: u64) -> (u64, u64) {
        let (each, extra) = (clients / self.count, clients % self.count);
        let start = self.index * each + self.index.min(extra);
        (start, each + u64::from(self.index < extra))
    }

    /// This agent's attempts of a trial of `handshakes` over `clients`: those its clients
    /// would make, each client `handshakes / clients` and the first `handshakes % clients`
    /// one more, so that the gang's shares add up to the trial exactly.
    fn handshakes(&self, handshakes: u64, clients: u64) -> u64 {
        let clients = clients.max(1);
        let (start, count) = self.clients(clients);
        let extra = handshakes % clients;
        count * (handshakes / clients) + extra.min(start + count).saturating_sub(start)
    }

    /// `config` as this agent runs it: its share of the clients (at least one: an agent
    /// with no share runs none of its attempts) and of the arrival rate.
    fn share_config(&self, config: &mut Config) {
        let clients = u64::from(config.concurrency.max(1));
        let (_, count) = self.clients(clients);
        if let Some(rate) = &mut config.arrival_rate {
            *rate *= count as f64 / clients as f64;
        }
        config.concurrency = count.max(1) as u32;
    }
}

impl Claims {
    /// In a gang: the next trial of the plan, once every agent of the gang is ready for it,
    /// with this agent's share of its attempts.
    fn next_together(&mut self, plan: &Plan) -> Result<Option<Trial>, RunError> {
        let Some((gang, next)) = &mut self.gang else {
            return Ok(None);
        };
        let Some(trial) = plan.trials.get(*next).copied() else {
            return Ok(None);
        };
        let stop = self.stop.clone();
        let ready = self
            .coordination
            .gang_ready((self.run, self.agent), *next, STALE_AFTER, &|| {
                stop.is_requested()
            })
            .map_err(|error| claim_failed(self.run, &error))?;
        if !ready {
            return Ok(None);
        }
        *next += 1;
        let clients = self.planned_clients.get(trial.config).copied().unwrap_or(1);
        let (_, mine) = gang.clients(clients);
        let mut claimed = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        claimed.trials += 1;
        Ok(Some(match (mine, trial.time_limit) {
            (0, _) => Trial {
                handshakes: 0,
                time_limit: None,
                ..trial
            },
            (_, Some(_)) => trial,
            (_, None) => Trial {
                handshakes: gang.handshakes(trial.handshakes, clients),
                ..trial
            },
        }))
    }
}

/// A claim the database refused, as the run's failure.
fn claim_failed(run: i64, error: &tlslab_store::StoreError) -> RunError {
    RunError::environment(
        format!(
            "claiming run {run}'s next trial failed: {}",
            tlslab_core::WithCauses(error)
        ),
        error.hint(),
    )
}

impl TrialSource for Claims {
    fn next(&mut self, plan: &Plan) -> Result<Option<Trial>, RunError> {
        if self.gang.is_some() {
            return self.next_together(plan);
        }
        let claim = loop {
            let work = self
                .coordination
                .claim(self.run, self.agent, STALE_AFTER)
                .map_err(|error| claim_failed(self.run, &error))?;
            match work {
                Work::Trial(claim) => break claim,
                Work::Done => return Ok(None),
                // A trial held by an agent that may be lost: wait to take it over (or to see
                // it done), as long as this agent is not stopped.
                Work::Wait if self.stop.is_requested() => return Ok(None),
                Work::Wait => std::thread::sleep(CLAIM_RETRY),
            }
        };
        let Some(planned) = plan.trials.get(claim.trial) else {
            return Err(RunError::environment(
                format!("run {} has no trial {} in its plan", self.run, claim.trial),
                "the run's claims were not written by its coordinator",
            ));
        };
        let mut claimed = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        claimed.trials += 1;
        if let Some(previous) = claim.taken_over_from {
            claimed.taken_over.push((claim.trial, previous));
        }
        Ok(Some(Trial {
            handshakes: claim.handshakes,
            ..*planned
        }))
    }
}

/// An agent's heartbeat: a thread with a connection of its own, beating every second until
/// stopped, so a long trial never looks like a lost agent.
struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn start(location: &Location, run: i64, agent: i64) -> Result<Heartbeat, WorkflowError> {
        let mut coordination = Coordination::connect(location)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tlslab-heartbeat".into())
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    // A beat the database refuses is not fatal: the samples spool, and a
                    // database away for long enough makes the agent look lost, its trial
                    // taken over (its own trial row then adds nothing).
                    let _ = coordination.heartbeat(run, agent);
                    let slept = Instant::now();
                    while slept.elapsed() < HEARTBEAT && !stopping.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            })
            .map_err(|error| {
                WorkflowError::environment(
                    "cannot start the agent's heartbeat thread",
                    "raise the process's thread limit",
                    Some(error),
                )
            })?;
        Ok(Heartbeat {
            stop,
            thread: Some(thread),
        })
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The address this machine measures `target` from: the source address its routes choose
/// (a UDP socket connected, nothing sent).
fn measuring_address(target: Option<&str>) -> Option<String> {
    use std::net::ToSocketAddrs;
    let target = target?.to_socket_addrs().ok()?.next()?;
    let local: std::net::SocketAddr = match target {
        std::net::SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        std::net::SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = std::net::UdpSocket::bind(local).ok()?;
    socket.connect(target).ok()?;
    Some(socket.local_addr().ok()?.ip().to_string())
}

/// This machine's name, for the agents' table.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// A distributed run as its coordinator leaves it: detached (the agents run on), or waited
/// for and summarized as any run.
pub enum Coordinated {
    /// `--detach`: the run is stored and published; its agents run it.
    Detached(Results),
    /// The run, waited for, summarized and judged, with its agents.
    Finished(Box<RunOutcome>),
}

/// What the coordinator says while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// Agents registered, and expected.
    pub registered: u64,
    /// Agents the start waits for.
    pub expected: u64,
    /// Trials done, of all.
    pub done: u64,
    /// Trials in the plan.
    pub trials: u64,
}

/// `run --agents N`: stores the plan and the run in the database, publishes its trials for
/// `agents` agents, and (unless `detach`) waits until they are all done, then summarizes and
/// judges the run as [`run::run`] does. Stopping `control.stop` ends the wait: the run is
/// marked incomplete, and agents still running finish the trials they hold.
pub fn coordinate(
    request: &RunRequest,
    (agents, distribution): (u32, Distribution),
    detach: bool,
    control: &Control,
    waiting: &dyn Fn(Waiting),
) -> Result<Coordinated, WorkflowError> {
    let experiment = &request.experiment;
    let location = check_distributable(request, agents)?;
    crate::experiment::check_metric(request.metric.as_deref())?;
    let configs = experiment.configs()?;
    let seed = experiment.seed.unwrap_or_else(|| fastrand::u64(..));
    let plan = Plan::new(experiment, &configs, seed);
    let mut coordination = Coordination::connect(location)?;
    let (created, results) = results::create(location, control)?;
    let NewRun::Database(mut sink) = created else {
        return Err(tlslab_store::StoreError::AgentsNeedDatabase.into());
    };
    let run = sink.run();
    let mut recorded = experiment.clone();
    recorded.seed = Some(seed);
    let target = experiment.target.clone().unwrap_or_default();
    let info = RunInfo {
        source: Source::Active,
        experiment: Some(recorded),
        configs: configs
            .iter()
            .map(|config| config.record(target.clone(), None))
            .collect(),
        plan: Some(plan.clone()),
        environment: request.invocation.environment(),
        command_line: request.invocation.stored_command_line(),
        started_at_unix_ns: coordination.server_now()?.max(0) as u64,
    };
    let began = Instant::now();
    sink.begin(&info).map_err(WorkflowError::Sink)?;
    coordination.publish(run, (agents, distribution), &plan.trials)?;
    if detach {
        return Ok(Coordinated::Detached(results));
    }
    let interrupted = wait_for_agents(&mut coordination, run, control, waiting)?;
    let (complete, reason) = how_it_ended(&mut coordination, (run, distribution), interrupted)?;
    let coordinator_end = RunEnd {
        complete,
        reason,
        duration_ns: began.elapsed().as_nanos() as u64,
        attempted: 0,
        errors: 0,
    };
    sink.finish(&coordinator_end).map_err(WorkflowError::Sink)?;
    let (store, summary) = run::summarize(
        &results,
        KeptHandle::default(),
        request.metric.as_deref(),
        None,
    )?;
    let agents = store.agents()?;
    let end = RunEnd {
        attempted: agents.iter().map(|agent| agent.samples).sum(),
        errors: agents.iter().map(|agent| agent.errors).sum(),
        ..coordinator_end
    };
    let verdict = run::judge(experiment, &end, &store, &summary)?;
    Ok(Coordinated::Finished(Box::new(RunOutcome {
        results,
        store,
        summary,
        end,
        verdict,
        key_log_lost: None,
        report: None,
        agents,
    })))
}

/// How a distributed run ended, once its coordinator stopped waiting: complete when every
/// trial is done, the wait was not interrupted, and (in a gang) no agent was lost; else why
/// not. The trials done are priced from a remote lab server's readings first.
fn how_it_ended(
    coordination: &mut Coordination,
    (run, distribution): (i64, Distribution),
    interrupted: bool,
) -> Result<(bool, Option<String>), WorkflowError> {
    coordination.attribute_server_usage(run)?;
    let status = coordination.status(run)?;
    // A gang's lost agent leaves its shares unmade: the run is not the plan.
    let short: Vec<String> = match distribution {
        Distribution::Gang => coordination
            .unfinished_agents(run)?
            .iter()
            .map(i64::to_string)
            .collect(),
        Distribution::Claims => Vec::new(),
    };
    let complete = status.is_done() && !interrupted && short.is_empty();
    let reason = (!complete).then(|| match (interrupted, status.is_done()) {
        (true, _) => format!(
            "the coordinator was interrupted with {} of {} trials done; agents still running finish the trials they hold",
            status.done, status.trials
        ),
        (false, true) => format!(
            "agents {} of the gang did not finish their shares",
            short.join(", ")
        ),
        (false, false) => format!(
            "{} of {} trials done: every agent ended before the rest",
            status.done, status.trials
        ),
    });
    Ok((complete, reason))
}

/// What a distributed run cannot do: measure a lab server of its own per agent (each agent
/// would measure its own), stop early on a shared interval, or write one key log or capture;
/// the database the agents meet in.
fn check_distributable(request: &RunRequest, agents: u32) -> Result<&Location, WorkflowError> {
    if agents == 0 {
        return Err(WorkflowError::usage(
            "--agents 0: a distributed run needs at least one agent",
            "give --agents the number of agent processes you will start",
        ));
    }
    let experiment = &request.experiment;
    if experiment.target.is_none() {
        return Err(WorkflowError::usage(
            "--agents needs --target: agents measure one server",
            "start a lab server the agents can reach (`tlslab serve --listen 0.0.0.0:8443`) and give it with --target HOST:PORT",
        ));
    }
    let refused = |what: &str| {
        WorkflowError::usage(
            format!("{what} cannot be used with --agents"),
            "leave it out: each agent is its own process, on its own machine",
        )
    };
    if experiment.until_ci.is_some() {
        return Err(refused("--until-ci"));
    }
    if request.key_log.is_some() {
        return Err(refused("--keylog"));
    }
    if request.capture.is_some() {
        return Err(refused("--capture"));
    }
    if request.report {
        return Err(refused("--report"));
    }
    match &request.store {
        Some(location @ Location::Database(_)) => Ok(location),
        _ => Err(tlslab_store::StoreError::AgentsNeedDatabase.into()),
    }
}

/// Waits until every trial is done and every registered agent ended (lost ones are settled
/// as they are found), or a stop is requested; whether it was.
fn wait_for_agents(
    coordination: &mut Coordination,
    run: i64,
    control: &Control,
    waiting: &dyn Fn(Waiting),
) -> Result<bool, WorkflowError> {
    let mut last = None;
    loop {
        coordination.settle_lost(run, STALE_AFTER)?;
        let status = coordination.status(run)?;
        let now = Waiting {
            registered: status.registered,
            expected: status.expected,
            done: status.done,
            trials: status.trials,
        };
        if last != Some(now) {
            waiting(now);
            last = Some(now);
        }
        if status.is_done() && status.finished >= status.registered {
            return Ok(false);
        }
        if control.stop.is_requested() {
            return Ok(true);
        }
        std::thread::sleep(POLL);
    }
}

/// How often a remote lab server reads its own CPU time and memory, and how often it writes
/// the readings.
const USAGE_EVERY: Duration = Duration::from_millis(10);
const USAGE_WRITES: Duration = Duration::from_secs(1);

/// A remote lab server's resources reported into a distributed run: a thread reading this
/// process's CPU time and peak memory every [`USAGE_EVERY`] on the database server's clock,
/// writing them every second; the run's trials are then priced from them
/// (`Coordination::attribute_server_usage`).
pub(crate) struct UsageReporter {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), WorkflowError>>>,
}

impl UsageReporter {
    pub(crate) fn start(location: &Location, run: i64) -> Result<UsageReporter, WorkflowError> {
        let mut coordination = Coordination::connect(location)?;
        coordination.register_server(run)?;
        let clock = coordination.measure_clock(CLOCK_TRIES)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tlslab-usage".into())
            .spawn(move || -> Result<(), WorkflowError> {
                let mut readings = Vec::new();
                let mut written = Instant::now();
                loop {
                    let stopped = stopping.load(Ordering::Relaxed);
                    readings.push((
                        unix_ns_now() + clock.offset_ns,
                        tlslab_engine::usage::current(),
                    ));
                    if stopped || written.elapsed() >= USAGE_WRITES {
                        coordination.add_server_usage(run, &readings)?;
                        readings.clear();
                        written = Instant::now();
                        // The trials these readings now cover are priced at once: the
                        // agents may have ended before the server wrote them.
                        coordination.attribute_server_usage(run)?;
                    }
                    if stopped {
                        return Ok(());
                    }
                    std::thread::sleep(USAGE_EVERY);
                }
            })
            .map_err(|error| {
                WorkflowError::environment(
                    "cannot start the lab server's usage thread",
                    "raise the process's thread limit",
                    Some(error),
                )
            })?;
        Ok(UsageReporter {
            stop,
            thread: Some(thread),
        })
    }

    /// Writes the last readings and ends: whether the database took them all.
    pub(crate) fn finish(mut self) -> Result<(), WorkflowError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(written)) => written,
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gangs_shares_add_up_to_the_trial_exactly() {
        for (handshakes, clients, count) in [(100, 10, 3), (7, 25, 4), (2500, 50, 8), (1, 1, 3)] {
            let gangs = (0..count).map(|index| Gang { index, count });
            let shares: Vec<(u64, u64)> = gangs
                .clone()
                .map(|gang| {
                    (
                        gang.clients(clients).1,
                        gang.handshakes(handshakes, clients),
                    )
                })
                .collect();
            assert_eq!(shares.iter().map(|share| share.0).sum::<u64>(), clients);
            assert_eq!(shares.iter().map(|share| share.1).sum::<u64>(), handshakes);
            // The blocks of clients follow each other.
            let mut next = 0;
            for gang in gangs {
                let (start, count) = gang.clients(clients);
                assert_eq!(start, next);
                next += count;
            }
        }
        // Ten clients over three agents: 4, 3 and 3, and the attempts with them.
        let gang = |index| Gang { index, count: 3 };
        assert_eq!(gang(0).clients(10), (0, 4));
        assert_eq!(gang(2).clients(10), (7, 3));
        assert_eq!(gang(0).handshakes(105, 10), 44);
    }

    #[test]
    fn a_shard_is_an_index_below_its_count() {
        assert_eq!("2/8".parse(), Ok(Shard { index: 2, count: 8 }));
        assert!(matches!("8/8".parse::<Shard>(), Err(ShardError::Range(_))));
        assert!(matches!("0/0".parse::<Shard>(), Err(ShardError::Range(_))));
        assert!(matches!("3".parse::<Shard>(), Err(ShardError::Form(_))));
        assert!(matches!(
            "a/4".parse::<Shard>(),
            Err(ShardError::Number { .. })
        ));
    }
}
