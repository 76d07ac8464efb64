//! The trial loop: each trial of the plan in order, its block of handshakes shared by the
//! Config's agents, every attempt a [`Sample`], Configs stopped early between rounds.
//!
//! The loop reaches the network only through a [`Connector`] (one attempt of one Config) and
//! [`Surroundings`] (what happens around each trial: the emulated link, the lab server's CPU),
//! so it runs in tests with neither sockets nor servers.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tlslab_backend::{Attempt, Failure};
use tlslab_core::{
    ArrivalTimes, Arrivals, ClientVerifications, Clock, Config, ErrorClass, Event, LinkUsage,
    Outcome, Phase, Plan, Record, Sample, Trial, TrialRecord, Usage,
};

use crate::error::RunError;
use crate::replay::Flights;
use crate::stop::Stop;
use crate::stopping::{Durations, EarlyStopping};
use crate::usage;
use crate::writer::Records;

/// One Config's client, as the trial loop needs it.
pub trait Connector: Send + Sync + 'static {
    /// One agent's state (its sessions, when the Config resumes).
    type Agent: Clone + Send + Sync + 'static;

    /// A new agent: its first handshake is full.
    fn agent(&self) -> Self::Agent;

    /// One attempt, filling `attempt` as it goes: the loop cancels it at the Config's time
    /// limit and keeps what it recorded.
    fn attempt<'a>(
        &'a self,
        agent: &'a Self::Agent,
        attempt: &'a mut Attempt,
    ) -> impl Future<Output = Result<(), Failure>> + Send + 'a;
}

/// What happens around each trial of a real run.
pub trait Surroundings {
    /// Whether the run can go on (its lab servers are alive, its client threads in their
    /// namespace); checked before each trial and once after the last.
    fn check(&mut self) -> Result<(), RunError>;

    /// Readies the network for `config`'s trial; an error ends the run, keeping what it
    /// measured.
    fn prepare(&mut self, config: &Config) -> Result<(), RunError>;

    /// The CPU time `config`'s lab server has used so far; `None` without a lab server.
    fn server_usage(&mut self, config: &Config) -> Option<Usage>;

    /// Starts counting what the emulated link carries afresh, as a trial starts.
    fn link_reset(&mut self) {}

    /// What the emulated link carried since [`link_reset`](Self::link_reset); `None` without
    /// a link whose forwarder counts.
    fn link_usage(&mut self, _config: &Config) -> Option<LinkUsage> {
        None
    }

    /// Mutual TLS: the client certificates `config`'s lab server has verified so far, and
    /// the time that took; `None` when it asks for none (or there is no lab server).
    fn server_client_verifications(&mut self, _config: &Config) -> Option<ClientVerifications> {
        None
    }
}

/// Attempts done and failed so far, for a progress display.
#[derive(Debug, Default)]
pub struct Counts {
    /// Attempts finished, warm-up ones included.
    pub done: AtomicU64,
    /// Of `done`, the attempts that failed.
    pub errors: AtomicU64,
    /// Of `done`, the warm-up blocks' attempts.
    pub warmup_done: AtomicU64,
    /// The block running: 0 before the first, else (Config index + 1) × 2, plus 1 when it
    /// is a warm-up block (one word, so a display never reads a Config with another block's
    /// warm-up flag).
    pub current: AtomicU64,
}

impl Counts {
    /// The running block's Config index, and whether it is a warm-up block.
    pub fn current(&self) -> Option<(usize, bool)> {
        match self.current.load(Ordering::Relaxed) {
            0 => None,
            word => Some(((word / 2 - 1) as usize, word % 2 == 1)),
        }
    }
}

/// Where the trial loop takes its trials from: the plan in its order (a run on its own,
/// [`PlanOrder`]), or, for an agent of a distributed run, a database it claims trials from
/// one at a time, so that agents share a plan and faster ones take more of it.
pub trait TrialSource: Send {
    /// The next trial of `plan` to run (a claimed trial may have fewer attempts left than
    /// planned: another agent made the rest), or `None` when none is left. An error ends the
    /// run as the surroundings' failures do.
    fn next(&mut self, plan: &Plan) -> Result<Option<Trial>, RunError>;
}

/// Every trial of the plan, in its order.
#[derive(Debug, Default)]
pub struct PlanOrder {
    next: usize,
}

impl TrialSource for PlanOrder {
    fn next(&mut self, plan: &Plan) -> Result<Option<Trial>, RunError> {
        let trial = plan.trials.get(self.next).copied();
        self.next += 1;
        Ok(trial)
    }
}

/// How the loop ended.
#[derive(Debug)]
pub struct Ended {
    /// A stop was requested before the plan was done.
    pub stopped: bool,
    /// The run's surroundings failed; the loop stopped there.
    pub failure: Option<RunError>,
}

/// Everything the loop shares with its agents.
pub struct TrialLoop<'a, C: Connector> {
    /// The run's Configs, in order; a trial names one by its index.
    pub configs: &'a [Config],
    /// One per Config, in order.
    pub connectors: &'a [Arc<C>],
    /// `--until-ci`: the relative half-width of the median's interval at which a Config stops.
    pub until_ci: Option<f64>,
    /// Requested by the caller (SIGINT, SIGTERM): the loop ends after the attempts in
    /// flight, keeping their samples.
    pub stop: Stop,
    /// Requested when the surroundings failed mid-trial (a lab server exited): attempts in
    /// flight are cancelled and [`Surroundings::check`] says why.
    pub halt: Stop,
    /// Attempts done and failed so far, for a progress display.
    pub counts: Arc<Counts>,
    /// Where schedules, block lengths and `--duration` deadlines read the time (and where
    /// the schedule sleeps): the system clock in a run, a simulated one in tests.
    pub clock: Arc<dyn Clock>,
    /// Sample times count from here (a time of `clock`).
    pub origin: Instant,
    /// How open loops space their arrivals.
    pub arrivals: Arrivals,
    /// Where every Sample, trial record and early stop goes, in order.
    pub records: Records,
    /// Where 0-RTT first flights go, one per Config, when the run ends with a replay probe.
    pub flights: Option<&'a [Flights]>,
}

/// What the loop carries from one trial to the next.
struct Carried<A> {
    /// Each Config's agents that keep state between its blocks.
    agents: Vec<Vec<A>>,
    /// Each open-loop Config's schedule, where its last block left it.
    schedules: Vec<Option<ArrivalTimes>>,
    /// `--until-ci`: what each Config measured, and which stopped.
    early: EarlyStopping,
}

/// The resources a block used, as its surroundings and the process count them, read as it
/// starts.
struct UsageBefore {
    server: Option<Usage>,
    client_certificates: Option<ClientVerifications>,
    client: Usage,
}

impl UsageBefore {
    /// Reads the counters (and starts the link's afresh) as `config`'s block starts.
    fn read(surroundings: &mut dyn Surroundings, config: &Config) -> UsageBefore {
        let server = surroundings.server_usage(config);
        surroundings.link_reset();
        let client_certificates = surroundings.server_client_verifications(config);
        UsageBefore {
            server,
            client_certificates,
            client: usage::current(),
        }
    }
}

/// The seed of the Config numbered `index`'s arrival schedule: the plan's seed spread over
/// the Configs (Fibonacci hashing), so every Config draws its own Poisson gaps and a run's
/// recorded seed reproduces them all.
fn schedule_seed(plan_seed: u64, index: usize) -> u64 {
    plan_seed.wrapping_add((index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

impl<C: Connector> TrialLoop<'_, C> {
    /// Runs every trial of `plan` on `runtime`, in order, until the plan is done, a stop is
    /// requested or the surroundings fail.
    pub fn run(
        &self,
        runtime: &tokio::runtime::Runtime,
        plan: &Plan,
        surroundings: &mut dyn Surroundings,
    ) -> Ended {
        self.run_from(runtime, plan, &mut PlanOrder::default(), surroundings)
    }

    /// [`TrialLoop::run`], taking each trial from `source` until it has none left.
    pub fn run_from(
        &self,
        runtime: &tokio::runtime::Runtime,
        plan: &Plan,
        source: &mut dyn TrialSource,
        surroundings: &mut dyn Surroundings,
    ) -> Ended {
        let mut carried = self.carried(plan);
        let mut last_round = 0;
        loop {
            let trial = match source.next(plan) {
                Ok(Some(trial)) => trial,
                Ok(None) => break,
                Err(failure) => {
                    return Ended {
                        stopped: true,
                        failure: Some(failure),
                    }
                }
            };
            let trial = &trial;
            if let Err(failure) = surroundings.check() {
                return Ended {
                    stopped: true,
                    failure: Some(failure),
                };
            }
            if self.stop.is_requested() {
                return Ended {
                    stopped: true,
                    failure: None,
                };
            }
            if trial.round > last_round {
                for stopped in carried.early.judge(last_round) {
                    self.records.send(Record::Stopped(stopped));
                }
            }
            last_round = trial.round;
            let (Some(config), Some(connector)) = (
                self.configs.get(trial.config),
                self.connectors.get(trial.config),
            ) else {
                continue;
            };
            if carried.early.is_finished(trial.config) {
                continue;
            }
            if let Err(failure) = surroundings.prepare(config) {
                return Ended {
                    stopped: true,
                    failure: Some(failure),
                };
            }
            self.run_trial(
                runtime,
                trial,
                config,
                connector,
                &mut carried,
                surroundings,
            );
        }
        // A stop or a server that died during the last trial still ends the run incomplete.
        let failure = surroundings.check().err();
        Ended {
            stopped: failure.is_some() || self.stop.is_requested(),
            failure,
        }
    }

    /// What the loop starts with: no agents yet, each open-loop Config's schedule at its
    /// start, and nothing measured.
    fn carried(&self, plan: &Plan) -> Carried<C::Agent> {
        // Each open-loop Config's schedule runs on across its blocks: a block of k arrivals
        // lasts exactly as long as those k arrivals' share of the schedule, so the blocks of
        // one Config laid end to end keep its rate (DESIGN.md, measurement rule 10).
        let schedules = self
            .configs
            .iter()
            .map(|config| {
                config.arrival_rate.map(|rate| {
                    let seed = schedule_seed(plan.seed, config.index);
                    ArrivalTimes::new(rate, self.arrivals, seed)
                })
            })
            .collect();
        Carried {
            agents: vec![Vec::new(); self.configs.len()],
            schedules,
            early: EarlyStopping::new(self.configs.len(), self.until_ci),
        }
    }

    /// One trial: its block on `runtime`, then its record with the resources it used.
    fn run_trial(
        &self,
        runtime: &tokio::runtime::Runtime,
        trial: &Trial,
        config: &Config,
        connector: &Arc<C>,
        carried: &mut Carried<C::Agent>,
        surroundings: &mut dyn Surroundings,
    ) {
        // Only the agents this block can use are made (`-c 50000 -n 1` makes one), and
        // only Configs whose agents keep state between blocks keep them: an agent of a
        // fresh-handshake Config is a few bytes to make again, and a matrix of thousands
        // of concurrencies would otherwise hold every Config's agents to the run's end.
        let wanted = agents_for(trial, config);
        let pool = &mut carried.agents[trial.config];
        while pool.len() < wanted {
            pool.push(connector.agent());
        }
        let working: Vec<C::Agent> = if config.agents_keep_state() {
            pool[..wanted].to_vec()
        } else {
            std::mem::take(pool)
        };
        let before = UsageBefore::read(surroundings, config);
        self.counts.current.store(
            (trial.config as u64 + 1) * 2 + u64::from(trial.warmup),
            Ordering::Relaxed,
        );
        let started = self.clock.now();
        let schedule = carried
            .schedules
            .get_mut(trial.config)
            .and_then(Option::take)
            .map(|times| BlockSchedule::new(times, started));
        let block = self.block(trial, config, connector);
        let (attempted, handshakes, schedule) =
            runtime.block_on(block.run(working, carried.early.is_active(), schedule));
        if !trial.warmup {
            carried.early.add(trial.config, &handshakes);
        }
        let mut record = self.trial_record(trial, config, attempted, before, surroundings);
        // An open-loop block ends when its share of the schedule does, not when its last
        // attempt does: blocks laid end to end then keep the rate, with no arrivals
        // crowded into the gap between them. The block's accounting above is done in
        // that idle tail, so the next block starts as close as it can to this one's end.
        if let Some(schedule) = schedule {
            self.sleep_until(schedule.end());
            if let Some(slot) = carried.schedules.get_mut(trial.config) {
                *slot = Some(schedule.times);
            }
        }
        let duration = self.clock.now().saturating_duration_since(started);
        record.started_at = started.saturating_duration_since(self.origin).as_nanos() as u64;
        record.duration_ns = duration.as_nanos() as u64;
        self.records.send(Record::Trial(record));
    }

    /// `trial`'s block, for `config` on `connector`.
    fn block(&self, trial: &Trial, config: &Config, connector: &Arc<C>) -> Block<C> {
        Block {
            trial: *trial,
            config: Arc::new(config.clone()),
            connector: connector.clone(),
            clock: self.clock.clone(),
            origin: self.origin,
            stop: self.stop.clone(),
            halt: self.halt.clone(),
            counts: self.counts.clone(),
            records: self.records.clone(),
            flights: self
                .flights
                .and_then(|flights| flights.get(trial.config).cloned()),
        }
    }

    /// The trial's record, with what its block used since `before` (its times are filled in
    /// once the block's share of its schedule has ended).
    fn trial_record(
        &self,
        trial: &Trial,
        config: &Config,
        attempted: u64,
        before: UsageBefore,
        surroundings: &mut dyn Surroundings,
    ) -> TrialRecord {
        let client = usage::current().since(&before.client);
        let server = match (before.server, surroundings.server_usage(config)) {
            (Some(before), Some(after)) => Some(after.since(&before)),
            _ => None,
        };
        let server_client_verifications = match (
            before.client_certificates,
            surroundings.server_client_verifications(config),
        ) {
            (Some(before), Some(after)) => Some(after.since(&before)),
            _ => None,
        };
        TrialRecord {
            trial: *trial,
            concurrency: config.concurrency,
            started_at: 0,
            duration_ns: 0,
            attempted,
            server,
            client,
            link: surroundings.link_usage(config),
            server_client_verifications,
        }
    }

    /// Waits until `deadline`, or until a stop or halt is requested.
    fn sleep_until(&self, deadline: Instant) {
        while !self.stop.is_requested() && !self.halt.is_requested() {
            let now = self.clock.now();
            if now >= deadline {
                break;
            }
            self.clock.sleep_until(deadline.min(now + STOP_CHECK));
        }
    }
}

/// How many agents `trial`'s block can keep busy: its Config's concurrency, but no more than
/// its attempts (a block of 20 attempts at `-c 50000` needs 20). A timed block takes
/// attempts until its time is up, so it uses them all.
fn agents_for(trial: &Trial, config: &Config) -> usize {
    let concurrency = u64::from(config.concurrency);
    let wanted = match trial.time_limit {
        Some(_) => concurrency,
        None => concurrency.min(trial.handshakes),
    };
    usize::try_from(wanted).unwrap_or(usize::MAX)
}

/// One trial's block, shared by its agents.
struct Block<C: Connector> {
    trial: Trial,
    config: Arc<Config>,
    connector: Arc<C>,
    clock: Arc<dyn Clock>,
    origin: Instant,
    stop: Stop,
    halt: Stop,
    counts: Arc<Counts>,
    records: Records,
    flights: Option<Flights>,
}

/// An open-loop block's part of its Config's schedule: the schedule where the block takes
/// it up, and when the block starts. The block's first arrival is due at its start.
struct BlockSchedule {
    times: ArrivalTimes,
    start: Instant,
    /// The schedule's time of the block's first arrival.
    first: Duration,
}

impl BlockSchedule {
    fn new(times: ArrivalTimes, start: Instant) -> BlockSchedule {
        let first = times.peek();
        BlockSchedule {
            times,
            start,
            first,
        }
    }

    /// Takes the next arrival: when it is due.
    fn next_due(&mut self) -> Instant {
        self.start + self.times.next_due().saturating_sub(self.first)
    }

    /// When the block's share of the schedule ends: where its Config's next arrival is due.
    fn end(&self) -> Instant {
        self.start + self.times.peek().saturating_sub(self.first)
    }
}

/// Open loop: the intended start times of one block's attempts, released by a thread of
/// their own at those times (the block's share of its Config's schedule, [`BlockSchedule`])
/// into a queue the agents take from.
///
/// A thread, not a tokio timer: tokio's timers tick in whole milliseconds, which would start
/// attempts up to a millisecond late at any rate and count that in their latency; a sleeping
/// thread wakes within the kernel's timer slack (about 50 µs). An agent that takes a start
/// late (all agents were busy) still measures from the intended time, so the wait is counted,
/// never omitted.
struct Schedule {
    starts: tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Instant>>,
    /// The thread, which hands the schedule back (where the block left it) when it ends.
    releaser: std::sync::Mutex<Option<std::thread::JoinHandle<BlockSchedule>>>,
}

impl Schedule {
    fn start<C: Connector>(
        mut schedule: BlockSchedule,
        attempts: u64,
        block: Arc<Block<C>>,
    ) -> Arc<Schedule> {
        let (sender, starts) = tokio::sync::mpsc::unbounded_channel();
        let releaser = std::thread::spawn(move || {
            for _ in 0..attempts {
                let intended = schedule.next_due();
                loop {
                    if block.stopping() {
                        return schedule;
                    }
                    let now = block.clock.now();
                    if now >= intended {
                        break;
                    }
                    // Wake at least every STOP_CHECK to see a stop request.
                    block.clock.sleep_until(intended.min(now + STOP_CHECK));
                }
                // Every agent gone (the block was cancelled): nobody takes the rest.
                if sender.send(intended).is_err() {
                    return schedule;
                }
            }
            schedule
        });
        Arc::new(Schedule {
            starts: tokio::sync::Mutex::new(starts),
            releaser: std::sync::Mutex::new(Some(releaser)),
        })
    }

    /// The next intended start, once it is due; `None` when the block's schedule is done or
    /// the block was cancelled.
    async fn next(&self, cancelled: &mut tokio::sync::watch::Receiver<bool>) -> Option<Instant> {
        tokio::select! {
            next = async { self.starts.lock().await.recv().await } => next,
            _ = cancelled.wait_for(|cancelled| *cancelled) => None,
        }
    }

    /// The schedule where the block left it, once its thread has ended (every agent has
    /// left the block, so the thread has released all its starts or seen the stop).
    fn finish(&self) -> Option<BlockSchedule> {
        let releaser = self.releaser.lock().ok()?.take()?;
        releaser.join().ok()
    }
}

/// How often a block looks for a stop or halt request: attempts in flight are cancelled within
/// this time (and the loop's own overhead per block is one such timer).
const STOP_CHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// What a block's agents share.
struct Shared {
    /// A closed loop's attempts not yet taken.
    remaining: AtomicU64,
    /// A timed block's end, on the block's clock.
    deadline: Option<Instant>,
    /// Open loop: the schedule that releases the intended starts.
    schedule: Option<Arc<Schedule>>,
    attempted: AtomicU64,
    /// Whether the successful handshakes' durations are wanted (for sequential stopping).
    timed: bool,
    /// One histogram for the block, not one per agent: a histogram is kilobytes, and a
    /// block of 50,000 agents held one each. An attempt takes the lock once, at its end.
    handshakes: std::sync::Mutex<Durations>,
}

impl<C: Connector> Block<C> {
    /// `agents` share the block's handshakes, started by `schedule` in an open loop.
    /// Returns how many were attempted, (when `timed`, for sequential stopping) the
    /// handshake durations of the successful ones, and the open loop's schedule where the
    /// block left it.
    async fn run(
        self,
        agents: Vec<C::Agent>,
        timed: bool,
        schedule: Option<BlockSchedule>,
    ) -> (u64, Durations, Option<BlockSchedule>) {
        let block = Arc::new(self);
        // Warm-up of agents that keep state (a kept connection, a session): each agent's
        // first attempt is its own, so every agent has opened its connection (or resumed
        // once) before the measured part; the plan gives such a block one attempt per agent
        // at least. It runs as a closed loop: no measured value comes from it.
        let each_first = block.trial.warmup && block.config.agents_keep_state();
        let reserved = if each_first { agents.len() as u64 } else { 0 };
        // A timed block (a closed loop given --duration) takes attempts until its time is up.
        let remaining = AtomicU64::new(match block.trial.time_limit {
            Some(_) => u64::MAX,
            None => block.trial.handshakes.saturating_sub(reserved),
        });
        let deadline = block
            .trial
            .time_limit
            .map(|limit| block.clock.now() + limit);
        let (cancel, cancelled) = tokio::sync::watch::channel(false);
        let watcher = block.clone().watch(cancel);
        // Open loop: the schedule hands out intended start times; closed loop: each agent
        // takes the next of the block's attempts as soon as its last one ends.
        let (schedule, unused) = if each_first {
            (None, schedule)
        } else {
            let started = schedule
                .map(|schedule| Schedule::start(schedule, block.trial.handshakes, block.clone()));
            (started, None)
        };
        let shared = Arc::new(Shared {
            remaining,
            deadline,
            schedule,
            attempted: AtomicU64::new(0),
            timed,
            handshakes: std::sync::Mutex::new(Durations::default()),
        });
        let mut tasks = tokio::task::JoinSet::new();
        for (index, agent) in agents.into_iter().enumerate() {
            let agent_loop = block.clone().agent_loop(
                agent,
                index as u32,
                shared.clone(),
                cancelled.clone(),
                each_first,
            );
            tasks.spawn(agent_loop);
        }
        drop(cancelled);
        while tasks.join_next().await.is_some() {}
        watcher.abort();
        let handshakes =
            std::mem::take(&mut *shared.handshakes.lock().unwrap_or_else(|e| e.into_inner()));
        // The thread ends once every agent has left (it has released its starts, or seen
        // the stop within STOP_CHECK); joined off the runtime's threads.
        let schedule = match shared.schedule.clone() {
            Some(schedule) => tokio::task::spawn_blocking(move || schedule.finish())
                .await
                .ok()
                .flatten(),
            None => unused,
        };
        (
            shared.attempted.load(Ordering::SeqCst),
            handshakes,
            schedule,
        )
    }

    /// Turns `cancel` true once a stop or halt is requested (or every agent has left),
    /// looking every [`STOP_CHECK`].
    fn watch(
        self: Arc<Self>,
        cancel: tokio::sync::watch::Sender<bool>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(STOP_CHECK);
            while !self.stopping() && !cancel.is_closed() {
                ticker.tick().await;
            }
            let _ = cancel.send(true);
        })
    }

    /// One agent's part of the block: attempts until the block's attempts, time or schedule
    /// run out, or it is stopped. With `own_first`, its first attempt is its own (a warm-up
    /// of an agent that keeps state).
    async fn agent_loop(
        self: Arc<Self>,
        agent: C::Agent,
        index: u32,
        shared: Arc<Shared>,
        mut cancelled: tokio::sync::watch::Receiver<bool>,
        mut own_first: bool,
    ) {
        while !self.stopping() {
            let intended = match &shared.schedule {
                _ if std::mem::take(&mut own_first) => None,
                Some(schedule) => match schedule.next(&mut cancelled).await {
                    Some(intended) => Some(intended),
                    None => break,
                },
                None if self.takes_another(&shared) => None,
                None => break,
            };
            // Boxed: the attempt's future (the library's handshake, the request, their
            // buffers' places) is kilobytes, and an agent waiting for its next arrival
            // should not hold it; it exists only while an attempt runs.
            let sample = Box::pin(self.attempt(&agent, index, &mut cancelled, intended)).await;
            shared.attempted.fetch_add(1, Ordering::Relaxed);
            if !sample.is_ok() {
                self.counts.errors.fetch_add(1, Ordering::Relaxed);
            } else if let Some(nanos) = sample.timeline.phase(Phase::Handshake) {
                if shared.timed {
                    shared
                        .handshakes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record(nanos);
                }
            }
            if self.trial.warmup {
                self.counts.warmup_done.fetch_add(1, Ordering::Relaxed);
            }
            self.counts.done.fetch_add(1, Ordering::Relaxed);
            self.records.send(Record::Sample(Box::new(sample)));
        }
    }

    /// Closed loop: whether an agent takes another attempt (the block's time is not up and
    /// it has attempts left, one of which is now taken).
    fn takes_another(&self, shared: &Shared) -> bool {
        if shared
            .deadline
            .is_some_and(|deadline| self.clock.now() >= deadline)
        {
            return false;
        }
        shared
            .remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(1)
            })
            .is_ok()
    }

    /// A stop was requested, or the surroundings failed.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.is_requested() || self.halt.is_requested()
    }

    /// One handshake attempt, always producing a Sample; cancelled (and recorded as such)
    /// when `cancelled` turns true.
    async fn attempt(
        &self,
        agent: &C::Agent,
        index: u32,
        cancelled: &mut tokio::sync::watch::Receiver<bool>,
        intended: Option<Instant>,
    ) -> Sample {
        let config = &self.config;
        let mut attempt = Attempt::start_at(self.clock.now());
        let started_at = attempt.origin.duration_since(self.origin).as_nanos() as u64;
        if let Some(intended) = intended {
            let delay = attempt.origin.saturating_duration_since(intended);
            attempt.timeline.set_schedule_delay(delay.as_nanos() as u64);
        }
        if self.flights.is_some() && config.early_data > 0 {
            attempt.captured = Some(Vec::new());
        }
        // Biased: a finished attempt wins a tie with the stop, and no random number is drawn
        // for each attempt to choose which branch to poll first.
        let result = tokio::select! {
            biased;
            // The deadline from the attempt's start, which is already read: `timeout` would
            // read the clock again. (A time limit is at most a day, `tlslab_core::duration`,
            // so the sum cannot overflow.) The time limit bounds real I/O, so tokio's real
            // timer keeps it: on a simulated clock the deadline is simulated time read as
            // real, which is why tests on one use connectors that finish when first polled
            // (`timeout_at` polls the attempt before its timer).
            result = tokio::time::timeout_at(
                (attempt.origin + config.timeout).into(),
                self.connector.attempt(agent, &mut attempt),
            ) => Some(result),
            _ = cancelled.wait_for(|cancelled| *cancelled) => None,
        };
        attempt.settle();
        let failure = match result {
            None => Some(Failure::new(
                ErrorClass::Cancelled,
                "the run stopped while the attempt was in flight",
            )),
            Some(Ok(Ok(()))) => None,
            Some(Ok(Err(failure))) => Some(failure),
            Some(Err(_)) => Some(Failure::new(
                ErrorClass::Timeout,
                timed_out(config, &attempt),
            )),
        };
        if let (Some(flights), Some(captured), Some(true)) = (
            &self.flights,
            attempt.captured.take(),
            attempt.negotiated.early_data,
        ) {
            flights.keep(captured);
        }
        attempt.negotiated.client_certificate = attempt.client_certificate_status();
        let (bytes_sent, bytes_received) = attempt.handshake_bytes();
        let wire_clock = attempt.wire_clock();
        // Everything read after the handshake belongs to the response (a QUIC connection
        // that closes at once also reads its close and tickets, so only a kept one reports
        // them; page mode adds what each of its connections read after its handshake).
        let response_wire_bytes = (attempt.response.is_some()
            && (config.transport == tlslab_core::Transport::Tcp || config.keep_alive))
            .then(|| attempt.bytes_received.saturating_sub(bytes_received));
        Sample {
            config: config.index,
            trial: self.trial.index,
            round: self.trial.round,
            agent: index,
            warmup: self.trial.warmup,
            started_at,
            timeline: attempt.timeline,
            outcome: if failure.is_none() {
                Outcome::Ok
            } else {
                Outcome::Error
            },
            error: failure.as_ref().map(|failure| failure.class),
            error_detail: failure.map(|failure| failure.detail),
            negotiated: attempt.negotiated,
            bytes_sent,
            bytes_received,
            client_hello_bytes: attempt.client_hello_bytes,
            server_flight_bytes: attempt.server_flight_bytes,
            client_certificate_bytes: attempt.client_certificate_bytes,
            response: attempt.response,
            quic: attempt.quic,
            insecure: config.insecure,
            client_address: attempt.local_address,
            server_address: attempt.peer_address,
            connection: attempt.connection,
            response_wire_bytes,
            wire_clock,
            server_software: attempt.server_software,
            observed: None,
        }
    }
}

/// What did not arrive within the time limit, said by the last step the attempt reached.
/// Plain HTTP has no handshake: its attempt waits for a connection, then for the response.
fn timed_out(config: &Config, attempt: &Attempt) -> String {
    let timeout = config.timeout;
    let reached = |event| attempt.timeline.get(event).is_some();
    if config.scheme != tlslab_core::Scheme::Http {
        return if reached(Event::HandshakeDone) {
            format!("the handshake completed, but the request did not within {timeout:?}")
        } else {
            format!("no handshake within {timeout:?}")
        };
    }
    // A request on a kept connection connects nothing: its connection is already open.
    let connected =
        reached(Event::TcpConnected) || attempt.connection.is_some_and(|used| used.request > 1);
    if reached(Event::FirstByte) {
        format!("the response started but did not end within {timeout:?}")
    } else if connected {
        format!("connected, but no response within {timeout:?}")
    } else {
        format!("no TCP connection within {timeout:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use tlslab_core::{EarlyStop, Experiment, Plan};

    use crate::writer::tests::{info, Memory};
    use crate::writer::Writer;

    /// A client that needs no network: each attempt reports a scripted handshake of
    /// `nanos(n)` nanoseconds (n counts attempts), fails every `fail_every`th, and, with
    /// `hang_after_handshake`, never finishes its request.
    struct Scripted {
        attempts: AtomicU64,
        nanos: fn(u64) -> u64,
        fail_every: u64,
        hang_after_handshake: bool,
    }

    impl Scripted {
        fn new(nanos: fn(u64) -> u64) -> Scripted {
            Scripted {
                attempts: AtomicU64::new(0),
                nanos,
                fail_every: 0,
                hang_after_handshake: false,
            }
        }
    }

    impl Connector for Scripted {
        type Agent = ();

        fn agent(&self) {}

        async fn attempt(&self, _: &(), attempt: &mut Attempt) -> Result<(), Failure> {
            let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
            let origin = attempt.origin;
            let at = |nanos: u64| origin + Duration::from_nanos(nanos);
            let total = (self.nanos)(n);
            attempt
                .timeline
                .mark_once(Event::TcpConnected, origin, at(total / 10));
            attempt.sent(300, at(total / 5));
            attempt.received(2_000, at(total / 2));
            attempt.server_flight_received();
            attempt.server_flight_answered();
            attempt.finished_due();
            attempt.sent(80, at(total * 9 / 10));
            attempt
                .timeline
                .mark_once(Event::HandshakeDone, origin, at(total));
            if self.fail_every > 0 && n.is_multiple_of(self.fail_every) {
                return Err(Failure::new(ErrorClass::Reset, "scripted reset"));
            }
            if self.hang_after_handshake {
                std::future::pending::<()>().await;
            }
            Ok(())
        }
    }

    /// Surroundings that count trials, report a growing server CPU time, and can fail or
    /// request a stop at a given trial.
    #[derive(Default)]
    struct Lab {
        prepared: u64,
        fail_at: Option<u64>,
        stop_at: Option<(u64, Stop)>,
        cpu_ns: u64,
    }

    impl Surroundings for Lab {
        fn check(&mut self) -> Result<(), RunError> {
            Ok(())
        }

        fn prepare(&mut self, _: &Config) -> Result<(), RunError> {
            self.prepared += 1;
            if let Some((at, stop)) = &self.stop_at {
                if self.prepared == *at {
                    stop.request();
                }
            }
            if self.fail_at == Some(self.prepared) {
                return Err(RunError::environment("the link broke", "fix it"));
            }
            Ok(())
        }

        fn server_usage(&mut self, _: &Config) -> Option<Usage> {
            self.cpu_ns += 1_000;
            Some(Usage {
                user_ns: self.cpu_ns,
                ..Usage::default()
            })
        }
    }

    struct Outcome {
        ended: Ended,
        records: Vec<Record>,
        counts: Arc<Counts>,
    }

    fn run<C: Connector>(
        experiment: &Experiment,
        connectors: Vec<C>,
        lab: &mut Lab,
        stop: Stop,
        flights: Option<&[Flights]>,
    ) -> Outcome {
        run_on(
            Arc::new(tlslab_core::SystemClock),
            experiment,
            connectors,
            lab,
            stop,
            flights,
        )
    }

    /// [`run`] reading `clock`.
    fn run_on<C: Connector>(
        clock: Arc<dyn Clock>,
        experiment: &Experiment,
        connectors: Vec<C>,
        lab: &mut Lab,
        stop: Stop,
        flights: Option<&[Flights]>,
    ) -> Outcome {
        let memory = Memory::default();
        let (ended, counts) = drive(
            clock,
            experiment,
            connectors,
            lab,
            stop,
            flights,
            Box::new(memory.clone()),
        );
        let records = std::mem::take(&mut *memory.records.lock().unwrap());
        Outcome {
            ended,
            records,
            counts,
        }
    }

    /// The trial loop over `experiment`'s plan (seed 7) on `clock`, writing into `sink`.
    fn drive<C: Connector>(
        clock: Arc<dyn Clock>,
        experiment: &Experiment,
        connectors: Vec<C>,
        lab: &mut Lab,
        stop: Stop,
        flights: Option<&[Flights]>,
        sink: Box<dyn tlslab_core::Sink>,
    ) -> (Ended, Arc<Counts>) {
        let configs = experiment.configs().unwrap();
        let plan = Plan::new(experiment, &configs, PLAN_SEED);
        let writer = Writer::start(sink, &info(), Stop::new()).unwrap();
        let connectors: Vec<Arc<C>> = connectors.into_iter().map(Arc::new).collect();
        let counts = Arc::new(Counts::default());
        let trials = TrialLoop {
            configs: &configs,
            connectors: &connectors,
            until_ci: experiment.until_ci,
            stop,
            halt: Stop::new(),
            counts: counts.clone(),
            origin: clock.now(),
            clock,
            arrivals: experiment.arrivals,
            records: writer.records(),
            flights,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let ended = trials.run(&runtime, &plan, lab);
        writer
            .finish(tlslab_core::RunEnd {
                complete: true,
                reason: None,
                duration_ns: 0,
                attempted: 0,
                errors: 0,
            })
            .unwrap();
        (ended, counts)
    }

    /// The plan's seed in these tests: open loops' Poisson schedules derive from it.
    const PLAN_SEED: u64 = 7;

    fn samples(records: &[Record]) -> Vec<&Sample> {
        records
            .iter()
            .filter_map(|record| match record {
                Record::Sample(sample) => Some(sample.as_ref()),
                _ => None,
            })
            .collect()
    }

    fn two_versions(handshakes: u64) -> Experiment {
        Experiment {
            tls: vec![
                tlslab_core::TlsVersion::Tls12,
                tlslab_core::TlsVersion::Tls13,
            ],
            handshakes,
            warmup: 6,
            concurrency: vec![3],
            ..Experiment::default()
        }
    }

    #[test]
    fn every_planned_attempt_is_one_sample_and_the_counts_reconcile() {
        let experiment = two_versions(60);
        let mut failing = Scripted::new(|_| 1_000_000);
        failing.fail_every = 4;
        let mut lab = Lab::default();
        let outcome = run(
            &experiment,
            vec![Scripted::new(|_| 2_000_000), failing],
            &mut lab,
            Stop::new(),
            None,
        );
        assert!(!outcome.ended.stopped && outcome.ended.failure.is_none());
        let samples = samples(&outcome.records);
        // Per Config: 60 measured and 6 warm-up attempts.
        assert_eq!(samples.len(), 2 * 66);
        assert_eq!(outcome.counts.done.load(Ordering::SeqCst), 132);
        let errors: Vec<_> = samples.iter().filter(|sample| !sample.is_ok()).collect();
        assert_eq!(
            errors.len() as u64,
            outcome.counts.errors.load(Ordering::SeqCst)
        );
        assert_eq!(errors.len(), 66 / 4);
        assert!(errors
            .iter()
            .all(|sample| sample.config == 1 && sample.error == Some(ErrorClass::Reset)));
        assert_eq!(samples.iter().filter(|sample| sample.warmup).count(), 12);
        // What a progress display reads: the warm-up attempts apart, and the last block's
        // Config (the plan's last block is a measured one).
        assert_eq!(outcome.counts.warmup_done.load(Ordering::SeqCst), 12);
        assert!(matches!(outcome.counts.current(), Some((_, false))));
        let first = samples.iter().find(|sample| sample.config == 0).unwrap();
        assert_eq!(first.timeline.phase(Phase::Handshake), Some(2_000_000));
        assert_eq!((first.bytes_sent, first.bytes_received), (380, 2_000));
        // Every trial is recorded with the CPU its server spent during it.
        let trials: Vec<&TrialRecord> = outcome
            .records
            .iter()
            .filter_map(|record| match record {
                Record::Trial(trial) => Some(trial),
                _ => None,
            })
            .collect();
        assert_eq!(trials.len() as u64, lab.prepared);
        assert_eq!(trials.iter().map(|trial| trial.attempted).sum::<u64>(), 132);
        assert!(trials
            .iter()
            .all(|trial| trial.server.unwrap().user_ns == 1_000 && trial.concurrency == 3));
    }

    #[test]
    fn a_config_whose_median_is_known_stops_early_and_the_other_runs_on() {
        let experiment = Experiment {
            until_ci: Some(0.02),
            ..two_versions(400)
        };
        // Config 0 always takes 1 ms; config 1 anything from 1 to 100 ms.
        let spread = |n: u64| 1_000_000 + (n * 7_919 % 100) * 1_000_000;
        let outcome = run(
            &experiment,
            vec![Scripted::new(|_| 1_000_000), Scripted::new(spread)],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        let stops: Vec<&EarlyStop> = outcome
            .records
            .iter()
            .filter_map(|record| match record {
                Record::Stopped(stop) => Some(stop),
                _ => None,
            })
            .collect();
        assert_eq!(stops.len(), 1, "{stops:?}");
        assert_eq!(stops[0].config, 0);
        let measured = |config: usize| {
            samples(&outcome.records)
                .iter()
                .filter(|sample| sample.config == config && !sample.warmup)
                .count()
        };
        assert_eq!(measured(0), stops[0].samples);
        assert!(measured(0) < 400, "{}", measured(0));
        assert_eq!(measured(1), 400);
    }

    #[test]
    fn a_stop_request_ends_the_loop_between_trials_keeping_what_was_taken() {
        let stop = Stop::new();
        let mut lab = Lab {
            stop_at: Some((2, stop.clone())),
            ..Lab::default()
        };
        let outcome = run(
            &two_versions(60),
            vec![Scripted::new(|_| 1_000), Scripted::new(|_| 1_000)],
            &mut lab,
            stop,
            None,
        );
        assert!(outcome.ended.stopped);
        // The stop came while the second trial was being prepared: its agents saw it before
        // their first attempt, so only the first trial's block (6 warm-up attempts) ran.
        assert_eq!(lab.prepared, 2);
        assert_eq!(samples(&outcome.records).len(), 6);
    }

    #[test]
    fn a_failing_network_ends_the_run_with_its_error() {
        let mut lab = Lab {
            fail_at: Some(3),
            ..Lab::default()
        };
        let outcome = run(
            &two_versions(60),
            vec![Scripted::new(|_| 1_000), Scripted::new(|_| 1_000)],
            &mut lab,
            Stop::new(),
            None,
        );
        assert!(outcome.ended.stopped);
        assert_eq!(outcome.ended.failure.unwrap().to_string(), "the link broke");
        // Two warm-up blocks of 6 ran before the third trial's preparation failed.
        assert_eq!(samples(&outcome.records).len(), 12);
    }

    #[test]
    fn an_attempt_over_its_time_limit_is_a_timeout_that_keeps_its_events() {
        let experiment = Experiment {
            timeout: Duration::from_millis(20),
            handshakes: 3,
            warmup: 0,
            ..Experiment::default()
        };
        let mut hanging = Scripted::new(|_| 1_000);
        hanging.hang_after_handshake = true;
        let outcome = run(
            &experiment,
            vec![hanging],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        let samples = samples(&outcome.records);
        assert_eq!(samples.len(), 3);
        for sample in samples {
            assert_eq!(sample.error, Some(ErrorClass::Timeout));
            assert!(
                sample
                    .error_detail
                    .as_deref()
                    .unwrap()
                    .contains("handshake completed"),
                "{:?}",
                sample.error_detail
            );
            assert_eq!(sample.timeline.phase(Phase::Handshake), Some(1_000));
        }
    }

    /// A client whose handshakes each take `millis` of real time.
    struct Slow {
        millis: u64,
    }

    impl Connector for Slow {
        type Agent = ();

        fn agent(&self) {}

        async fn attempt(&self, _: &(), attempt: &mut Attempt) -> Result<(), Failure> {
            tokio::time::sleep(Duration::from_millis(self.millis)).await;
            attempt.handshake_done();
            Ok(())
        }
    }

    #[test]
    fn an_open_loop_counts_the_wait_for_a_busy_agent_in_the_latency() {
        // Two agents at 20 ms each manage 100 attempts/s; the schedule asks for 200/s, so
        // attempts start ever later, and each one's latency includes its wait.
        let experiment = Experiment {
            arrival_rate: vec!["200/s".parse().unwrap()],
            concurrency: vec![2],
            handshakes: 40,
            block: Some(40),
            warmup: 0,
            ..Experiment::default()
        };
        let outcome = run(
            &experiment,
            vec![Slow { millis: 20 }],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        let taken = samples(&outcome.records);
        assert_eq!(taken.len(), 40);
        let mut delays: Vec<u64> = Vec::new();
        for sample in &taken {
            let delay = sample.timeline.phase(Phase::ScheduleDelay).unwrap();
            let handshake = sample.timeline.phase(Phase::Handshake).unwrap();
            assert!(handshake >= 20_000_000, "{handshake}");
            assert_eq!(
                sample.timeline.phase(Phase::Latency),
                Some(delay + handshake)
            );
            delays.push(delay);
        }
        // 40 attempts take two agents at least 400 ms; the schedule meant them to start
        // within 195 ms, so the last start is at least 400 - 20 - 195 ms late.
        let latest = delays.iter().max().copied().unwrap();
        assert!(latest >= 150_000_000, "{latest}");

        // The same client in a closed loop has no schedule to be late for.
        let closed = Experiment {
            arrival_rate: vec![tlslab_core::ArrivalRate::Closed],
            handshakes: 4,
            block: None,
            ..experiment
        };
        let outcome = run(
            &closed,
            vec![Slow { millis: 1 }],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        for sample in samples(&outcome.records) {
            assert_eq!(sample.timeline.phase(Phase::ScheduleDelay), None);
            assert_eq!(sample.timeline.phase(Phase::Latency), None);
        }
    }

    /// A client that takes no time at all and counts its attempts, for schedules run in
    /// simulated time; with `clock`, each attempt moves it on by `millis` (a closed loop's
    /// deadline then ends the block after a known count).
    struct Instantaneous {
        clock: Option<(Arc<tlslab_core::SimulatedClock>, u64)>,
    }

    impl Connector for Instantaneous {
        type Agent = ();

        fn agent(&self) {}

        async fn attempt(&self, _: &(), attempt: &mut Attempt) -> Result<(), Failure> {
            if let Some((clock, millis)) = &self.clock {
                clock.advance(Duration::from_millis(*millis));
            }
            attempt
                .timeline
                .mark_once(Event::HandshakeDone, attempt.origin, attempt.origin);
            Ok(())
        }
    }

    /// Each sample's intended start (its start less how late it was), in ns since the run's
    /// origin, in order.
    fn intended_starts(records: &[Record], config: usize) -> Vec<u64> {
        let mut starts: Vec<u64> = samples(records)
            .into_iter()
            .filter(|sample| sample.config == config)
            .map(|sample| sample.started_at - sample.timeline.phase(Phase::ScheduleDelay).unwrap())
            .collect();
        starts.sort_unstable();
        starts
    }

    fn trials(records: &[Record], config: usize) -> Vec<TrialRecord> {
        records
            .iter()
            .filter_map(|record| match record {
                Record::Trial(trial) if trial.trial.config == config => Some(trial.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_open_loop_keeps_its_rate_across_blocks_and_configs_in_simulated_time() {
        // 200/s for 10 s, two Configs interleaved in 10 blocks each: every Config's 2,000
        // arrivals are due exactly 5 ms apart within its blocks, each block lasts exactly its
        // arrivals' share of the schedule, and the blocks add up to the 10 s asked.
        let experiment = Experiment {
            tls: vec![
                tlslab_core::TlsVersion::Tls12,
                tlslab_core::TlsVersion::Tls13,
            ],
            arrival_rate: vec!["200/s".parse().unwrap()],
            duration: Some(Duration::from_secs(10)),
            concurrency: vec![4],
            warmup: 0,
            ..Experiment::default()
        };
        let clock = Arc::new(tlslab_core::SimulatedClock::new());
        let outcome = run_on(
            clock.clone(),
            &experiment,
            vec![Instantaneous { clock: None }, Instantaneous { clock: None }],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        assert!(!outcome.ended.stopped);
        // The whole run took the two Configs' 10 s each, not a moment less.
        assert_eq!(clock.elapsed(), Duration::from_secs(20));
        for config in 0..2 {
            let blocks = trials(&outcome.records, config);
            assert_eq!(blocks.len(), 10);
            let mut total = 0;
            for block in &blocks {
                assert_eq!(block.duration_ns, block.attempted * 5_000_000, "{block:?}");
                total += block.duration_ns;
            }
            assert_eq!(total, 10_000_000_000);
            let starts = intended_starts(&outcome.records, config);
            assert_eq!(starts.len(), 2_000);
            // Within a block, 5 ms apart; from one block's last arrival to the next block's
            // first, 5 ms plus the other Config's block in between.
            for block in &blocks {
                let inside: Vec<u64> = starts
                    .iter()
                    .copied()
                    .filter(|&start| {
                        start >= block.started_at && start < block.started_at + block.duration_ns
                    })
                    .collect();
                assert_eq!(inside.len() as u64, block.attempted);
                assert_eq!(inside[0], block.started_at);
                assert!(inside.windows(2).all(|pair| pair[1] - pair[0] == 5_000_000));
            }
        }
    }

    #[test]
    fn a_ramp_gives_each_step_its_share_of_the_duration_exactly() {
        let experiment = Experiment {
            arrival_rate: vec!["100/s..1000/s:4".parse().unwrap()],
            duration: Some(Duration::from_secs(8)),
            concurrency: vec![8],
            warmup: 0,
            ..Experiment::default()
        };
        let clock = Arc::new(tlslab_core::SimulatedClock::new());
        let outcome = run_on(
            clock.clone(),
            &experiment,
            (0..4).map(|_| Instantaneous { clock: None }).collect(),
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        assert_eq!(clock.elapsed(), Duration::from_secs(8));
        for (config, expected) in [200, 800, 1400, 2000].into_iter().enumerate() {
            assert_eq!(intended_starts(&outcome.records, config).len(), expected);
            let time: u64 = trials(&outcome.records, config)
                .iter()
                .map(|block| block.duration_ns)
                .sum();
            assert_eq!(time, 2_000_000_000, "step {config}");
        }
    }

    #[test]
    fn poisson_arrivals_keep_the_mean_rate_with_exponential_gaps() {
        let experiment = Experiment {
            arrival_rate: vec!["1000/s".parse().unwrap()],
            arrivals: tlslab_core::Arrivals::Poisson,
            duration: Some(Duration::from_secs(20)),
            concurrency: vec![4],
            warmup: 0,
            ..Experiment::default()
        };
        let clock = Arc::new(tlslab_core::SimulatedClock::new());
        let outcome = run_on(
            clock.clone(),
            &experiment,
            vec![Instantaneous { clock: None }],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        let starts = intended_starts(&outcome.records, 0);
        assert_eq!(starts.len(), 20_000);
        // Blocks end where the schedule's next arrival is due, so the run lasts the sum of
        // 20,000 gaps of mean 1 ms: 20 s within a few standard errors (0.7%).
        let elapsed = clock.elapsed().as_secs_f64();
        assert!((elapsed - 20.0).abs() < 0.4, "{elapsed} s");
        let gaps: Vec<f64> = starts
            .windows(2)
            .map(|pair| (pair[1] - pair[0]) as f64)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let share_below_mean =
            gaps.iter().filter(|&&gap| gap < mean).count() as f64 / gaps.len() as f64;
        // An exponential distribution has 1 − 1/e ≈ 63% of its values below its mean (a
        // uniform schedule: none).
        assert!(
            (share_below_mean - 0.632).abs() < 0.02,
            "{share_below_mean}"
        );
    }

    /// A sink that keeps only what the schedule tests check: each sample's intended start
    /// (ns since the origin) by Config, and the trial records in the order written. Ten
    /// minutes at 1,000/s kept whole would be 600,000 samples of a kilobyte each.
    #[derive(Default, Clone)]
    struct Starts {
        starts: Arc<std::sync::Mutex<Vec<Vec<u64>>>>,
        trials: Arc<std::sync::Mutex<Vec<TrialRecord>>>,
    }

    impl tlslab_core::Sink for Starts {
        fn begin(&mut self, _: &tlslab_core::RunInfo) -> Result<(), tlslab_core::SinkError> {
            Ok(())
        }

        fn record(&mut self, record: Record) -> Result<(), tlslab_core::SinkError> {
            match record {
                Record::Sample(sample) => {
                    let delay = sample.timeline.phase(Phase::ScheduleDelay).unwrap();
                    let mut starts = self.starts.lock().unwrap();
                    if starts.len() <= sample.config {
                        starts.resize(sample.config + 1, Vec::new());
                    }
                    starts[sample.config].push(sample.started_at - delay);
                }
                Record::Trial(trial) => self.trials.lock().unwrap().push(trial),
                _ => {}
            }
            Ok(())
        }

        fn flush(&mut self) -> Result<(), tlslab_core::SinkError> {
            Ok(())
        }

        fn finish(&mut self, _: &tlslab_core::RunEnd) -> Result<(), tlslab_core::SinkError> {
            Ok(())
        }
    }

    /// What an open-loop run in simulated time left: each Config's intended starts in order,
    /// the trial records, and how much simulated time the run took.
    struct Scheduled {
        starts: Vec<Vec<u64>>,
        trials: Vec<TrialRecord>,
        elapsed: Duration,
    }

    /// Runs `experiment` with clients that take no time, on a simulated clock.
    fn scheduled(experiment: &Experiment) -> Scheduled {
        let clock = Arc::new(tlslab_core::SimulatedClock::new());
        let sink = Starts::default();
        let configs = experiment.configs().unwrap().len();
        let (ended, _) = drive(
            clock.clone(),
            experiment,
            (0..configs)
                .map(|_| Instantaneous { clock: None })
                .collect(),
            &mut Lab::default(),
            Stop::new(),
            None,
            Box::new(sink.clone()),
        );
        assert!(!ended.stopped && ended.failure.is_none());
        let mut starts = std::mem::take(&mut *sink.starts.lock().unwrap());
        starts.iter_mut().for_each(|starts| starts.sort_unstable());
        let trials = std::mem::take(&mut *sink.trials.lock().unwrap());
        Scheduled {
            starts,
            trials,
            elapsed: clock.elapsed(),
        }
    }

    /// Ten simulated minutes of one Config at 1,000 arrivals/s, 64 agents.
    fn ten_minutes_at_a_thousand_per_second(arrivals: tlslab_core::Arrivals) -> Scheduled {
        scheduled(&Experiment {
            arrival_rate: vec!["1000/s".parse().unwrap()],
            arrivals,
            duration: Some(Duration::from_secs(600)),
            concurrency: vec![64],
            warmup: 0,
            ..Experiment::default()
        })
    }

    #[test]
    fn ten_simulated_minutes_of_uniform_arrivals_start_every_attempt_on_its_millisecond() {
        let run = ten_minutes_at_a_thousand_per_second(tlslab_core::Arrivals::Uniform);
        let starts = &run.starts[0];
        assert_eq!(starts.len(), 600_000);
        // Every one of the 600,000 intended starts, exactly: arrival i at i ms, across all
        // the blocks (none lost, none doubled, no drift where one block hands over to the
        // next).
        for (index, &start) in starts.iter().enumerate() {
            assert_eq!(start, index as u64 * 1_000_000, "arrival {index}");
        }
        // The blocks lie end to end, each exactly as long as its arrivals' share.
        let mut next = 0;
        for block in &run.trials {
            assert_eq!(block.started_at, next, "{block:?}");
            assert_eq!(block.duration_ns, block.attempted * 1_000_000, "{block:?}");
            next += block.duration_ns;
        }
        assert_eq!(next, 600_000_000_000);
        assert_eq!(run.elapsed, Duration::from_secs(600));
    }

    #[test]
    fn ten_simulated_minutes_of_poisson_arrivals_follow_the_seeded_schedule() {
        let run = ten_minutes_at_a_thousand_per_second(tlslab_core::Arrivals::Poisson);
        let starts = &run.starts[0];
        // The plan fixes the count (rate × duration); the schedule's gaps are random.
        assert_eq!(starts.len(), 600_000);
        // Every intended start is the schedule drawn from the plan's seed and the Config's
        // index (so a run's recorded seed reproduces it), to the nanosecond.
        let seed = PLAN_SEED.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut expected = ArrivalTimes::new(1000.0, tlslab_core::Arrivals::Poisson, seed);
        for (index, &start) in starts.iter().enumerate() {
            assert_eq!(
                u128::from(start),
                expected.next_due().as_nanos(),
                "arrival {index}"
            );
        }
        // And that schedule has the asked rate. The run lasts the sum of 600,000 gaps of mean
        // 1 ms and standard deviation 1 ms: 600 s with a standard deviation of √600,000 ms
        // ≈ 0.775 s. Five of them (3.9 s) is a bound a correct generator breaks for about one
        // seed in 1.7 million; a rate off by 1% breaks it by 6 s.
        let elapsed = run.elapsed.as_secs_f64();
        assert!((elapsed - 600.0).abs() < 3.9, "{elapsed} s");
        // Each whole minute holds a Poisson count of mean 60,000 (standard deviation 245):
        // within five of them.
        for minute in 0..9u64 {
            let window = minute * 60_000_000_000..(minute + 1) * 60_000_000_000;
            let count = starts.iter().filter(|start| window.contains(start)).count();
            assert!(count.abs_diff(60_000) < 1_225, "minute {minute}: {count}");
        }
        // Exponential gaps: 1 − 1/e ≈ 63.2% of them below the mean (a uniform schedule has
        // none), ± five standard errors of a proportion over 600,000 (0.3%).
        let mean = starts[starts.len() - 1] as f64 / (starts.len() - 1) as f64;
        let below = starts
            .windows(2)
            .filter(|pair| ((pair[1] - pair[0]) as f64) < mean)
            .count() as f64
            / (starts.len() - 1) as f64;
        assert!((below - 0.632).abs() < 0.003, "{below}");
    }

    #[test]
    fn a_rate_sweep_from_100_to_1500_per_second_keeps_every_step_on_its_schedule() {
        // The README's sweep: ten steps of 2 s each, every step a Config at its own rate,
        // interleaved with the others in blocks.
        let experiment = Experiment {
            arrival_rate: vec!["100/s..1500/s".parse().unwrap()],
            duration: Some(Duration::from_secs(20)),
            concurrency: vec![64],
            warmup: 0,
            ..Experiment::default()
        };
        let configs = experiment.configs().unwrap();
        let rates: Vec<f64> = configs
            .iter()
            .map(|config| config.arrival_rate.unwrap())
            .collect();
        assert_eq!(rates.len(), 10);
        assert_eq!((rates[0], rates[9]), (100.0, 1500.0));
        assert!(rates.windows(2).all(|pair| pair[1] > pair[0]));
        let run = scheduled(&experiment);
        let mut total = 0;
        for (config, &rate) in rates.iter().enumerate() {
            // Arrival i of the step is due T(i) = i / rate after the step's first; a block
            // taking arrivals s.. starts them at T(i) − T(s) after its own start.
            let due = |i: u64| (i as f64 * 1e9 / rate).round() as u64;
            let arrivals = (rate * 2.0).ceil() as u64;
            let starts = &run.starts[config];
            assert_eq!(starts.len() as u64, arrivals, "step {rate}/s");
            let mut first = 0;
            for block in run.trials.iter().filter(|t| t.trial.config == config) {
                let taken = &starts[first as usize..(first + block.attempted) as usize];
                for (offset, &start) in taken.iter().enumerate() {
                    let i = first + offset as u64;
                    assert_eq!(
                        start,
                        block.started_at + due(i) - due(first),
                        "step {rate}/s"
                    );
                }
                assert_eq!(block.duration_ns, due(first + block.attempted) - due(first));
                first += block.attempted;
            }
            assert_eq!(first, arrivals);
            // The step's blocks add up to its whole schedule: its arrivals at its rate.
            total += due(arrivals);
        }
        assert_eq!(run.elapsed, Duration::from_nanos(total));
    }

    #[test]
    fn until_ci_stops_in_the_first_round_whose_median_interval_is_narrow_enough() {
        // Handshakes drawn uniformly from [1 ms, 3 ms): the median's 95% interval spans
        // 2 · 0.98 √n ranks, so its relative half-width is about 0.98 / √n and a target of 2%
        // is met near n = 2,401, in round 25 of blocks of 100. The span of k ≈ 100 ranks
        // varies by about 1/√k = 10% from sample to sample, so three of those either side
        // put the stop between n = 2,401 / 1.3² and 2,401 / 0.7²: rounds 14 to 49.
        let experiment = Experiment {
            until_ci: Some(0.02),
            handshakes: 20_000,
            block: Some(100),
            concurrency: vec![4],
            warmup: 0,
            ..Experiment::default()
        };
        let drawn = |n: u64| 1_000_000 + fastrand::Rng::with_seed(n).u64(0..2_000_000);
        let clock = Arc::new(tlslab_core::SimulatedClock::new());
        let outcome = run_on(
            clock,
            &experiment,
            vec![Scripted::new(drawn)],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        let stops: Vec<&EarlyStop> = outcome
            .records
            .iter()
            .filter_map(|record| match record {
                Record::Stopped(stop) => Some(stop),
                _ => None,
            })
            .collect();
        assert_eq!(stops.len(), 1, "{stops:?}");
        let stop = stops[0];
        assert!((14..=49).contains(&stop.round), "{stop:?}");
        // Judged after every round on everything measured so far: wider than the target in
        // every round before the stop, within it at the stop, and no block after it.
        let taken = samples(&outcome.records);
        let last = taken.iter().map(|sample| sample.round).max().unwrap();
        assert_eq!(last, stop.round);
        let mut measured = Durations::default();
        let mut all = Vec::new();
        for round in 1..=stop.round {
            for sample in taken.iter().filter(|sample| sample.round == round) {
                let nanos = sample.timeline.phase(Phase::Handshake).unwrap();
                measured.record(nanos);
                all.push(nanos);
            }
            let width = crate::stopping::relative_median_half_width(&measured);
            if round < stop.round {
                assert!(width.is_none_or(|width| width > 0.02), "round {round}");
            } else {
                assert_eq!(width, Some(stop.relative_half_width));
            }
        }
        assert!(stop.relative_half_width <= 0.02);
        assert_eq!(stop.samples, all.len());
        // The reported width is the order statistics' of the exact sample, to the
        // histogram's precision (0.1% of 2 ms on each value is 0.001 of the median).
        all.sort_unstable();
        let n = all.len() as f64;
        let spread = 1.959_963_984_540_054 * n.sqrt() / 2.0;
        let rank = |rank: f64| all[rank as usize - 1] as f64;
        let exact = (rank((n / 2.0 + spread).ceil()) - rank((n / 2.0 - spread).floor()))
            / 2.0
            / ((rank(n / 2.0) + rank(n / 2.0 + 1.0)) / 2.0);
        assert!(
            (exact - stop.relative_half_width).abs() < 0.0015,
            "{exact} vs {stop:?}"
        );
    }

    #[test]
    fn a_keep_alive_warm_up_gives_every_agent_its_connection() {
        // 20 warm-up requests among 64 agents used to open at most 20 connections, and the
        // other 44 agents opened theirs inside the measured part.
        let experiment = Experiment {
            http: vec![tlslab_core::Http::Http11],
            keep_alive: vec![tlslab_core::KeepAlive::On],
            concurrency: vec![64],
            handshakes: 640,
            warmup: 20,
            ..Experiment::default()
        };
        let outcome = run(
            &experiment,
            vec![Slow { millis: 1 }],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        let taken = samples(&outcome.records);
        let mut warmed: Vec<u32> = taken
            .iter()
            .filter(|sample| sample.warmup)
            .map(|sample| sample.agent)
            .collect();
        warmed.sort_unstable();
        warmed.dedup();
        assert_eq!(warmed, (0..64).collect::<Vec<u32>>());
        assert_eq!(taken.iter().filter(|sample| !sample.warmup).count(), 640);
    }

    #[test]
    fn a_closed_loops_duration_is_a_deadline_on_the_callers_clock() {
        // Each attempt takes 1 ms of simulated time; 1 s in 10 blocks of 100 ms is 1,000
        // attempts for one agent, whatever the machine's speed.
        let experiment = Experiment {
            duration: Some(Duration::from_secs(1)),
            concurrency: vec![1],
            warmup: 0,
            ..Experiment::default()
        };
        let clock = Arc::new(tlslab_core::SimulatedClock::new());
        let outcome = run_on(
            clock.clone(),
            &experiment,
            vec![Instantaneous {
                clock: Some((clock.clone(), 1)),
            }],
            &mut Lab::default(),
            Stop::new(),
            None,
        );
        assert_eq!(samples(&outcome.records).len(), 1_000);
        assert_eq!(clock.elapsed(), Duration::from_secs(1));
    }

    /// A client whose server never answers.
    struct Silent;

    impl Connector for Silent {
        type Agent = ();

        fn agent(&self) {}

        async fn attempt(&self, _: &(), attempt: &mut Attempt) -> Result<(), Failure> {
            attempt.mark(Event::TcpConnected);
            std::future::pending().await
        }
    }

    /// Surroundings whose check fails once `dead` is requested, as a run's does when its lab
    /// server exits.
    struct Dying {
        dead: Stop,
    }

    impl Surroundings for Dying {
        fn check(&mut self) -> Result<(), RunError> {
            match self.dead.is_requested() {
                true => Err(RunError::environment("the lab server exited", "look")),
                false => Ok(()),
            }
        }

        fn prepare(&mut self, _: &Config) -> Result<(), RunError> {
            Ok(())
        }

        fn server_usage(&mut self, _: &Config) -> Option<Usage> {
            None
        }
    }

    /// Runs a silent client under a 60 s time limit and requests `trigger` after 200 ms;
    /// returns how the loop ended, its samples and how long it took.
    fn interrupt(
        trigger: impl Fn(&Stop, &Stop) + Send + 'static,
    ) -> (Ended, Vec<Record>, Duration) {
        let experiment = Experiment {
            timeout: Duration::from_secs(60),
            handshakes: 4,
            warmup: 0,
            concurrency: vec![4],
            ..Experiment::default()
        };
        let configs = experiment.configs().unwrap();
        let plan = Plan::new(&experiment, &configs, 1);
        let memory = Memory::default();
        let writer = Writer::start(Box::new(memory.clone()), &info(), Stop::new()).unwrap();
        let (stop, halt) = (Stop::new(), Stop::new());
        let mut surroundings = Dying { dead: halt.clone() };
        let trials = TrialLoop {
            configs: &configs,
            connectors: &[Arc::new(Silent)],
            until_ci: None,
            stop: stop.clone(),
            halt: halt.clone(),
            counts: Arc::default(),
            clock: Arc::new(tlslab_core::SystemClock),
            origin: Instant::now(),
            arrivals: tlslab_core::Arrivals::Uniform,
            records: writer.records(),
            flights: None,
        };
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            trigger(&stop, &halt);
        });
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let started = Instant::now();
        let ended = trials.run(&runtime, &plan, &mut surroundings);
        let took = started.elapsed();
        drop(trials);
        writer
            .finish(tlslab_core::RunEnd {
                complete: false,
                reason: None,
                duration_ns: 0,
                attempted: 0,
                errors: 0,
            })
            .unwrap();
        let records = std::mem::take(&mut *memory.records.lock().unwrap());
        (ended, records, took)
    }

    #[test]
    fn a_stop_cancels_the_attempts_in_flight_instead_of_waiting_out_their_time_limit() {
        let (ended, records, took) = interrupt(|stop, _| stop.request());
        assert!(ended.stopped && ended.failure.is_none());
        // The time limit is 60 s; cancellation is checked every 50 ms.
        assert!(took < Duration::from_secs(30), "{took:?}");
        let samples = samples(&records);
        assert_eq!(samples.len(), 4);
        for sample in samples {
            assert_eq!(sample.error, Some(ErrorClass::Cancelled));
            assert!(sample.timeline.get(Event::TcpConnected).is_some());
        }
    }

    #[test]
    fn a_halt_cancels_the_attempts_in_flight_and_the_check_says_why() {
        let (ended, records, took) = interrupt(|_, halt| halt.request());
        assert!(took < Duration::from_secs(30), "{took:?}");
        let samples = samples(&records);
        assert_eq!(samples.len(), 4);
        assert!(samples
            .iter()
            .all(|sample| sample.error == Some(ErrorClass::Cancelled)));
        assert!(ended.stopped);
        assert_eq!(ended.failure.unwrap().to_string(), "the lab server exited");
    }

    /// A 0-RTT client whose early data the server accepts: the loop keeps its first flight
    /// for the replay probe.
    struct EarlyData;

    impl Connector for EarlyData {
        type Agent = ();

        fn agent(&self) {}

        async fn attempt(&self, _: &(), attempt: &mut Attempt) -> Result<(), Failure> {
            if let Some(captured) = &mut attempt.captured {
                captured.push(vec![22, 3, 1]);
            }
            attempt.negotiated.early_data = Some(true);
            attempt.handshake_done();
            Ok(())
        }
    }

    #[test]
    fn accepted_first_flights_are_kept_for_the_replay_probe() {
        let experiment = Experiment {
            resume: vec![tlslab_core::Resume::Tickets],
            early_data: vec![100],
            handshakes: 5,
            warmup: 0,
            ..Experiment::default()
        };
        let configs = experiment.configs().unwrap();
        let plan = Plan::new(&experiment, &configs, 1);
        let memory = Memory::default();
        let writer = Writer::start(Box::new(memory.clone()), &info(), Stop::new()).unwrap();
        let flights = vec![Flights::default()];
        let trials = TrialLoop {
            configs: &configs,
            connectors: &[Arc::new(EarlyData)],
            until_ci: None,
            stop: Stop::new(),
            halt: Stop::new(),
            counts: Arc::default(),
            clock: Arc::new(tlslab_core::SystemClock),
            origin: Instant::now(),
            arrivals: tlslab_core::Arrivals::Uniform,
            records: writer.records(),
            flights: Some(&flights),
        };
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let ended = trials.run(&runtime, &plan, &mut Lab::default());
        assert!(!ended.stopped);
        assert_eq!(flights[0].take(), vec![vec![vec![22, 3, 1]]; 5]);
    }
}
