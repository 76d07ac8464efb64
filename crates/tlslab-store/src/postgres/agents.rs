//! A distributed run's coordination, with the database as the only coordinator (issue 33):
//! the coordinator publishes one claim per trial of its plan; agents register (taking the
//! run's next writer number), measure their clock against the database server's, wait for
//! the common start, and claim trials one at a time (`FOR UPDATE SKIP LOCKED`, so faster
//! agents take more and no two take one). A trial is done when its `trials` row is written,
//! in the transaction of its last samples (which marks its claim done); a claim whose agent stopped beating (killed, or
//! cut off) is taken over for the attempts the trial still lacks, so the run ends with the
//! plan's attempts stored, each sample under the agent that took it.
//!
//! Every time here is on the database server's clock (nanoseconds since the Unix epoch), the
//! one clock every agent can read.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::Client;
use tlslab_core::Trial;

use super::PostgresError;
use crate::{Location, StoreError};

/// The database server's clock now, in nanoseconds since the Unix epoch (PostgreSQL keeps
/// microseconds).
const SERVER_NOW: &str = "(extract(epoch from clock_timestamp()) * 1000000000)::BIGINT";

/// How a distributed run's agents share its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Each trial whole, to whichever agent claims it next: faster agents take more.
    Claims,
    /// Every trial by every agent at once, each its share of the Config's clients and
    /// attempts, all starting a trial together: the load of one Config from many machines.
    Gang,
}

impl Distribution {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Distribution::Claims => "claims",
            Distribution::Gang => "gang",
        }
    }
}

/// A distributed run's coordination, on a connection of its own.
pub struct Coordination {
    client: Client,
    database: String,
}

/// What an agent tells the run about itself as it registers.
#[derive(Debug, Clone)]
pub struct Registration {
    /// `I/N` from `--shard`, when given.
    pub shard: Option<String>,
    /// The machine's name.
    pub host: String,
    /// The agent's process.
    pub process_id: u32,
    /// The agent's tlslab version and commit: they must be the coordinator's, whose plan
    /// the agent expands again.
    pub tool_version: String,
    /// The commit it was built from.
    pub commit_id: String,
}

/// The run an agent registered for, as its coordinator stored it.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// The run.
    pub run: i64,
    /// The agent's number in the run (its writer number; the coordinator is 0).
    pub agent: i64,
    /// How many agents registered before it: its place in a gang, from 0.
    pub index: i64,
    /// How many agents the run's start waits for.
    pub agents: i64,
    /// When the run was made, on the database server's clock: samples count from here.
    pub started_at_unix_ns: u64,
    /// The experiment, as stored (JSON).
    pub experiment: String,
    /// The plan, as stored (JSON).
    pub plan: String,
    /// How its agents share the plan.
    pub distribution: Distribution,
}

/// An agent's clock against the database server's, NTP-style: the server's clock read
/// between two of the agent's, the best of several tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    /// What the agent adds to its clock to read the server's.
    pub offset_ns: i64,
    /// Half the round trip of the best try (plus the server clock's microsecond): the
    /// offset is right within this.
    pub uncertainty_ns: i64,
}

/// What an agent asking for work gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// A trial to run.
    Trial(Claim),
    /// Every trial left is held by a live agent: one may be freed if its agent is lost.
    Wait,
    /// Every trial is done.
    Done,
}

/// A trial an agent claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The trial's index in the plan.
    pub trial: usize,
    /// The attempts left to make: the trial's, less those a lost agent stored before it
    /// stopped (0 for a timed trial, which runs for its time).
    pub handshakes: u64,
    /// The lost agent whose claim this took over.
    pub taken_over_from: Option<i64>,
}

/// How an agent ended, for its row.
#[derive(Debug, Clone, Default)]
pub struct AgentEnd {
    /// Its part ran to the end of the work (no stop, no failure).
    pub complete: bool,
    /// Why not, when it did not.
    pub reason: Option<String>,
    /// Trials it ran.
    pub trials: u64,
    /// Attempts it made, and how many failed.
    pub attempted: u64,
    /// Failed attempts.
    pub errors: u64,
    /// Its CPU time in its trials, user and system.
    pub client_user_ns: u64,
    /// System CPU time.
    pub client_system_ns: u64,
}

/// An agent that stopped beating before its end, settled by another writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostAgent {
    /// Its number.
    pub agent: i64,
    /// Its shard, when it had one.
    pub shard: Option<String>,
    /// Its machine.
    pub host: String,
    /// The samples it stored before it was lost (kept).
    pub samples: u64,
}

/// Where a distributed run's work stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkStatus {
    /// Trials in the plan.
    pub trials: u64,
    /// Trials done.
    pub done: u64,
    /// Agents registered.
    pub registered: u64,
    /// Agents that ended (lost ones included).
    pub finished: u64,
    /// Agents the start waits for.
    pub expected: u64,
    /// The common start, once set.
    pub start_at_unix_ns: Option<i64>,
}

impl WorkStatus {
    /// Every trial is done.
    pub fn is_done(&self) -> bool {
        self.done >= self.trials
    }
}

/// One agent of a run, as the summary lists it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentRow {
    /// Its number.
    pub agent: i64,
    /// `I/N`, when given.
    pub shard: Option<String>,
    /// Its machine and address.
    pub host: String,
    /// The address it measures from (its way to the target).
    pub address: Option<String>,
    /// Its clock against the database server's.
    pub clock: Option<ClockOffset>,
    /// How late it started after the common start (ns; negative: early, within its clock's
    /// uncertainty).
    pub late_ns: Option<i64>,
    /// It ended (lost ones are ended by another writer).
    pub finished: bool,
    /// Its part was complete.
    pub complete: bool,
    /// Why not.
    pub reason: Option<String>,
    /// Trials it ran (from the trials table).
    pub trials: u64,
    /// Samples it stored, and how many failed.
    pub samples: u64,
    /// Failed samples.
    pub errors: u64,
    /// Measured (non-warm-up) samples' span: first start to last start, ns.
    pub span_ns: u64,
    /// CPU time, user plus system, ns: the agent's process while it measured (its claims
    /// and beats included), or, for one lost before its end, its trials'.
    pub cpu_ns: u64,
}

impl Coordination {
    /// A connection to the database at `location` for a distributed run's coordination; a
    /// file cannot coordinate agents.
    pub fn connect(location: &Location) -> Result<Coordination, StoreError> {
        let Location::Database(settings) = location else {
            return Err(StoreError::AgentsNeedDatabase);
        };
        let database = settings.to_string();
        let mut client = settings.connect()?;
        super::prepare(&mut client, &database)?;
        Ok(Coordination { client, database })
    }

    fn failed(&self, doing: &'static str) -> impl Fn(postgres::Error) -> StoreError + '_ {
        move |source| {
            StoreError::Postgres(PostgresError::Statement {
                database: self.database.clone(),
                doing,
                source,
            })
        }
    }

    /// Publishes run `run`'s work (made by the coordinator's sink, its Configs written): one
    /// claim per trial, by binary `COPY`, and the number of agents its start waits for.
    pub fn publish(
        &mut self,
        run: i64,
        (agents, distribution): (u32, Distribution),
        trials: &[Trial],
    ) -> Result<(), StoreError> {
        let database = self.database.clone();
        let failed = move |source| {
            StoreError::Postgres(PostgresError::Statement {
                database: database.clone(),
                doing: "publishing the run's trials",
                source,
            })
        };
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let copy = "COPY claims (run_id, id, config_id, handshakes) FROM STDIN (FORMAT binary)";
        let writer = transaction.copy_in(copy).map_err(&failed)?;
        let mut writer = BinaryCopyInWriter::new(writer, &[Type::INT8; 4]);
        for trial in trials {
            let row: [i64; 4] = [
                run,
                trial.index as i64,
                trial.config as i64,
                trial.handshakes as i64,
            ];
            writer
                .write(&[&row[0], &row[1], &row[2], &row[3]])
                .map_err(&failed)?;
        }
        writer.finish().map_err(&failed)?;
        transaction
            .execute(
                "UPDATE runs SET agents = $1, distribution = $2 WHERE id = $3",
                &[&i64::from(agents), &distribution.as_str(), &run],
            )
            .map_err(&failed)?;
        transaction.commit().map_err(&failed)
    }

    /// The database server's clock now.
    pub fn server_now(&mut self) -> Result<i64, StoreError> {
        let row = self
            .client
            .query_one(&format!("SELECT {SERVER_NOW}"), &[])
            .map_err(self.failed("reading its clock"))?;
        Ok(row.get(0))
    }

    /// Registers an agent for run `run`: refused when the run is not there, not distributed,
    /// has no work left, or was planned by another tlslab. The agent whose registration
    /// completes the count the start waits for sets the start, a second from now.
    pub fn register(
        &mut self,
        run: i64,
        registration: &Registration,
    ) -> Result<AgentRun, StoreError> {
        let database = self.database.clone();
        let failed = move |source| {
            StoreError::Postgres(PostgresError::Statement {
                database: database.clone(),
                doing: "registering the agent",
                source,
            })
        };
        let refused = |why: String| {
            StoreError::Postgres(PostgresError::NoWork {
                database: self.database.clone(),
                run,
                why,
            })
        };
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let found = transaction
            .query_opt(
                "SELECT agents, tool_version, commit_id, experiment, plan, started_at_unix_ns, distribution \
                 FROM runs WHERE id = $1 FOR UPDATE",
                &[&run],
            )
            .map_err(&failed)?;
        let Some(row) = found else {
            return Err(refused("no run of that number".into()));
        };
        let Some(agents) = row.get::<_, Option<i64>>(0) else {
            return Err(refused(
                "a run that is not distributed (made without --agents)".into(),
            ));
        };
        same_build(run, (row.get(1), row.get(2)), registration)?;
        let left: i64 = transaction
            .query_one(
                "SELECT count(*) FROM claims WHERE run_id = $1 AND done = 0",
                &[&run],
            )
            .map_err(&failed)?
            .get(0);
        if left == 0 {
            return Err(refused("a run whose trials are all done".into()));
        }
        let distribution = match row.get::<_, Option<String>>(6).as_deref() {
            Some("gang") => Distribution::Gang,
            _ => Distribution::Claims,
        };
        let registered: i64 = transaction
            .query_one("SELECT count(*) FROM agents WHERE run_id = $1", &[&run])
            .map_err(&failed)?
            .get(0);
        if distribution == Distribution::Gang && registered >= agents {
            return Err(refused(format!(
                "a gang of {agents} agents that is whole already"
            )));
        }
        let agent: i64 = transaction
            .query_one(
                "UPDATE runs SET writers = writers + 1 WHERE id = $1 RETURNING writers - 1",
                &[&run],
            )
            .map_err(&failed)?
            .get(0);
        enroll(&mut transaction, (run, agent), registration).map_err(&failed)?;
        transaction.commit().map_err(&failed)?;
        Ok(AgentRun {
            run,
            agent,
            agents,
            started_at_unix_ns: row.get::<_, i64>(5).max(0) as u64,
            experiment: row.get(3),
            plan: row.get(4),
            distribution,
            index: registered,
        })
    }

    /// This machine's clock against the database server's: the best of `tries` reads (the
    /// one with the shortest round trip).
    pub fn measure_clock(&mut self, tries: usize) -> Result<ClockOffset, StoreError> {
        let statement = self
            .client
            .prepare(&format!("SELECT {SERVER_NOW}"))
            .map_err(self.failed("reading its clock"))?;
        let mut best: Option<ClockOffset> = None;
        for _ in 0..tries.max(1) {
            let before = unix_ns_now();
            let row = self
                .client
                .query_one(&statement, &[])
                .map_err(self.failed("reading its clock"))?;
            let after = unix_ns_now();
            let server: i64 = row.get(0);
            let half = (after - before) / 2;
            let offset = ClockOffset {
                offset_ns: server - (before + half),
                // The server reads microseconds.
                uncertainty_ns: half + 1_000,
            };
            if best.is_none_or(|best| offset.uncertainty_ns < best.uncertainty_ns) {
                best = Some(offset);
            }
        }
        Ok(best.unwrap_or(ClockOffset {
            offset_ns: 0,
            uncertainty_ns: i64::MAX,
        }))
    }

    /// Stores agent `agent`'s clock offset, and the address it measures from.
    pub fn record_clock(
        &mut self,
        (run, agent): (i64, i64),
        clock: ClockOffset,
        address: Option<String>,
    ) -> Result<(), StoreError> {
        self.client
            .execute(
                "UPDATE agents SET clock_offset_ns = $1, clock_uncertainty_ns = $2, address = $3 WHERE run_id = $4 AND id = $5",
                &[&clock.offset_ns, &clock.uncertainty_ns, &address, &run, &agent],
            )
            .map(drop)
            .map_err(self.failed("storing the agent's clock"))
    }

    /// The run's common start, once set, and the server's clock now.
    pub fn start_at(&mut self, run: i64) -> Result<(Option<i64>, i64), StoreError> {
        let row = self
            .client
            .query_one(
                &format!("SELECT start_at_unix_ns, {SERVER_NOW} FROM runs WHERE id = $1"),
                &[&run],
            )
            .map_err(self.failed("reading the run's start"))?;
        Ok((row.get(0), row.get(1)))
    }

    /// Agent `agent` started measuring at `unix_ns` (the server's clock).
    pub fn started(&mut self, run: i64, agent: i64, unix_ns: i64) -> Result<(), StoreError> {
        self.client
            .execute(
                "UPDATE agents SET started_at_unix_ns = $1 WHERE run_id = $2 AND id = $3",
                &[&unix_ns, &run, &agent],
            )
            .map(drop)
            .map_err(self.failed("storing the agent's start"))
    }

    /// Agent `agent` is alive.
    pub fn heartbeat(&mut self, run: i64, agent: i64) -> Result<(), StoreError> {
        self.client
            .execute(
                &format!(
                    "UPDATE agents SET heartbeat_at_unix_ns = {SERVER_NOW} WHERE run_id = $1 AND id = $2"
                ),
                &[&run, &agent],
            )
            .map(drop)
            .map_err(self.failed("storing the agent's heartbeat"))
    }

    /// The next trial for agent `agent`: the first one nobody claimed, or whose agent ended
    /// or has not beaten for `stale` (its claim is taken over for the attempts the trial
    /// still lacks); [`Work::Wait`] while the trials left are held by live agents.
    pub fn claim(&mut self, run: i64, agent: i64, stale: Duration) -> Result<Work, StoreError> {
        let database = self.database.clone();
        let failed = move |source| {
            StoreError::Postgres(PostgresError::Statement {
                database: database.clone(),
                doing: "claiming a trial",
                source,
            })
        };
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let claimed = transaction
            .query_opt(
                &format!(
                    "WITH candidate AS ( \
                       SELECT k.run_id, k.id, k.agent_id AS previous FROM claims k \
                       WHERE k.run_id = $1 AND k.done = 0 \
                         AND (k.agent_id IS NULL OR EXISTS ( \
                           SELECT 1 FROM agents a WHERE a.run_id = k.run_id AND a.id = k.agent_id AND a.id <> $2 \
                             AND (a.finished_at_unix_ns IS NOT NULL OR a.heartbeat_at_unix_ns < {SERVER_NOW} - $3))) \
                       ORDER BY k.id LIMIT 1 FOR UPDATE OF k SKIP LOCKED) \
                     UPDATE claims c SET agent_id = $2, claimed_at_unix_ns = {SERVER_NOW}, claims = c.claims + 1 \
                     FROM candidate WHERE c.run_id = candidate.run_id AND c.id = candidate.id \
                     RETURNING c.id, c.handshakes, candidate.previous"
                ),
                &[&run, &agent, &(stale.as_nanos() as i64)],
            )
            .map_err(&failed)?;
        let Some(row) = claimed else {
            let left: bool = transaction
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM claims WHERE run_id = $1 AND done = 0)",
                    &[&run],
                )
                .map_err(&failed)?
                .get(0);
            transaction.commit().map_err(&failed)?;
            return Ok(if left { Work::Wait } else { Work::Done });
        };
        let (trial, planned, previous): (i64, i64, Option<i64>) =
            (row.get(0), row.get(1), row.get(2));
        let mut handshakes = planned.max(0) as u64;
        if previous.is_some() && handshakes > 0 {
            let stored: i64 = transaction
                .query_one(
                    "SELECT count(*) FROM samples WHERE run_id = $1 AND trial_id = $2",
                    &[&run, &trial],
                )
                .map_err(&failed)?
                .get(0);
            handshakes = handshakes.saturating_sub(stored.max(0) as u64);
        }
        transaction.commit().map_err(&failed)?;
        Ok(Work::Trial(Claim {
            trial: trial.max(0) as usize,
            handshakes,
            taken_over_from: previous,
        }))
    }

    /// In a gang: agent `agent` is ready for trial `position`; waits until every agent of
    /// the gang still beating is (a lost one is left behind), or `stopped` says to stop.
    /// Whether every one is.
    pub fn gang_ready(
        &mut self,
        (run, agent): (i64, i64),
        position: usize,
        stale: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> Result<bool, StoreError> {
        let position = position as i64;
        self.client
            .execute(
                "UPDATE agents SET position = $1 WHERE run_id = $2 AND id = $3",
                &[&position, &run, &agent],
            )
            .map_err(self.failed("storing the agent's place in the gang"))?;
        let statement = self
            .client
            .prepare(&format!(
                "SELECT count(*) FROM agents WHERE run_id = $1 AND finished_at_unix_ns IS NULL \
                 AND heartbeat_at_unix_ns >= {SERVER_NOW} - $3 AND COALESCE(position, -1) < $2"
            ))
            .map_err(self.failed("waiting for the gang"))?;
        loop {
            let behind: i64 = self
                .client
                .query_one(&statement, &[&run, &position, &(stale.as_nanos() as i64)])
                .map_err(self.failed("waiting for the gang"))?
                .get(0);
            if behind == 0 {
                return Ok(true);
            }
            if stopped() {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A remote lab server reporting its resources into run `run`: refused unless the run is
    /// a distributed one. When the run was made, on the database server's clock.
    pub fn register_server(&mut self, run: i64) -> Result<u64, StoreError> {
        let row = self
            .client
            .query_opt(
                "SELECT agents, started_at_unix_ns FROM runs WHERE id = $1",
                &[&run],
            )
            .map_err(self.failed("finding the run"))?;
        let refused = |why: &str| {
            StoreError::Postgres(PostgresError::NoWork {
                database: self.database.clone(),
                run,
                why: why.into(),
            })
        };
        let Some(row) = row else {
            return Err(refused("no run of that number"));
        };
        if row.get::<_, Option<i64>>(0).is_none() {
            return Err(refused(
                "a run that is not distributed (made without --agents)",
            ));
        }
        Ok(row.get::<_, i64>(1).max(0) as u64)
    }

    /// Adds a remote lab server's readings to run `run`: (when, on the database server's
    /// clock; user and system CPU and peak memory so far).
    pub fn add_server_usage(
        &mut self,
        run: i64,
        readings: &[(i64, tlslab_core::Usage)],
    ) -> Result<(), StoreError> {
        if readings.is_empty() {
            return Ok(());
        }
        let values: Vec<String> = readings
            .iter()
            .map(|(at, usage)| {
                format!(
                    "({run}, {at}, {}, {}, {})",
                    usage.user_ns, usage.system_ns, usage.peak_rss_bytes
                )
            })
            .collect();
        // Integers formatted by this code, nothing a user gave: no parameters needed.
        self.client
            .batch_execute(&format!(
                "INSERT INTO server_usage (run_id, id, user_ns, system_ns, peak_rss_bytes) VALUES {} ON CONFLICT DO NOTHING",
                values.join(", ")
            ))
            .map_err(self.failed("storing the lab server's usage"))
    }

    /// Fills each done trial of run `run` with the remote lab server's CPU time across its
    /// span (interpolated between readings) and its peak memory by then, when no other
    /// trial ran at the same time (the server's time could not be told apart) and readings
    /// cover the span. Trials already filled keep their figures. How many it filled.
    pub fn attribute_server_usage(&mut self, run: i64) -> Result<u64, StoreError> {
        let spans: Vec<(i64, i64, i64, bool)> = self
            .client
            .query(
                "SELECT t.id, r.started_at_unix_ns + t.started_at_ns, t.duration_ns, t.server_user_ns IS NULL \
                 FROM trials t JOIN runs r ON r.id = t.run_id WHERE t.run_id = $1 ORDER BY 2",
                &[&run],
            )
            .map_err(self.failed("reading the run's trials"))?
            .iter()
            .map(|row| {
                let start: i64 = row.get(1);
                (row.get(0), start, start + row.get::<_, i64>(2), row.get(3))
            })
            .collect();
        // The trials to price: not priced yet, and alone on the server while they ran.
        let candidates: Vec<(i64, i64, i64)> = spans
            .iter()
            .enumerate()
            .filter(|(index, (_, start, end, empty))| {
                *empty
                    && !spans.iter().enumerate().any(|(other, (_, from, to, _))| {
                        other != *index && from < end && start < to
                    })
            })
            .map(|(_, (trial, start, end, _))| (*trial, *start, *end))
            .collect();
        let (Some(first), Some(last)) = (
            candidates.iter().map(|candidate| candidate.1).min(),
            candidates.iter().map(|candidate| candidate.2).max(),
        ) else {
            return Ok(0);
        };
        // The readings around them only: a long run holds hundreds of thousands.
        let margin = 1_000_000_000;
        let readings: Vec<(i64, tlslab_core::Usage)> = self
            .client
            .query(
                "SELECT id, user_ns, system_ns, peak_rss_bytes FROM server_usage \
                 WHERE run_id = $1 AND id BETWEEN $2 AND $3 ORDER BY id",
                &[&run, &(first - margin), &(last + margin)],
            )
            .map_err(self.failed("reading the lab server's usage"))?
            .iter()
            .map(|row| {
                let count = |index: usize| row.get::<_, i64>(index).max(0) as u64;
                (
                    row.get(0),
                    tlslab_core::Usage {
                        user_ns: count(1),
                        system_ns: count(2),
                        peak_rss_bytes: count(3),
                    },
                )
            })
            .collect();
        let mut filled = 0;
        for (trial, start, end) in candidates {
            let (Some(before), Some(after)) =
                (usage_at(&readings, start), usage_at(&readings, end))
            else {
                continue;
            };
            let used = after.since(&before);
            self.client
                .execute(
                    "UPDATE trials SET server_user_ns = $1, server_system_ns = $2, server_peak_rss_bytes = $3 WHERE run_id = $4 AND id = $5",
                    &[
                        &(used.user_ns as i64),
                        &(used.system_ns as i64),
                        &(after.peak_rss_bytes as i64),
                        &run,
                        &trial,
                    ],
                )
                .map_err(self.failed("storing the trials' server usage"))?;
            filled += 1;
        }
        Ok(filled)
    }

    /// Agent `agent` ended as `end` says.
    pub fn finish(&mut self, run: i64, agent: i64, end: &AgentEnd) -> Result<(), StoreError> {
        let integer = |value: u64| value as i64;
        self.client
            .execute(
                &format!(
                    "UPDATE agents SET finished_at_unix_ns = {SERVER_NOW}, complete = $1, reason = $2, \
                     trials = $3, attempted = $4, errors = $5, client_user_ns = $6, client_system_ns = $7 \
                     WHERE run_id = $8 AND id = $9"
                ),
                &[
                    &i64::from(end.complete),
                    &end.reason,
                    &integer(end.trials),
                    &integer(end.attempted),
                    &integer(end.errors),
                    &integer(end.client_user_ns),
                    &integer(end.client_system_ns),
                    &run,
                    &agent,
                ],
            )
            .map(drop)
            .map_err(self.failed("storing the agent's end"))
    }

    /// Ends the agents of run `run` that stopped beating `stale` ago without ending (killed,
    /// or cut off for good): each is marked lost, and the samples it stored are added to the
    /// run's attempts (its own end, which would have added them, never came). Done once per
    /// lost agent, whichever writer comes first.
    pub fn settle_lost(&mut self, run: i64, stale: Duration) -> Result<Vec<LostAgent>, StoreError> {
        let database = self.database.clone();
        let failed = move |source| {
            StoreError::Postgres(PostgresError::Statement {
                database: database.clone(),
                doing: "settling lost agents",
                source,
            })
        };
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let lost = transaction
            .query(
                &format!(
                    "UPDATE agents SET finished_at_unix_ns = {SERVER_NOW}, complete = 0, \
                     reason = 'lost: no heartbeat for ' || (({SERVER_NOW} - heartbeat_at_unix_ns) / 1000000000) || ' s; its samples are kept' || \
                       CASE WHEN (SELECT distribution FROM runs WHERE id = $1) = 'gang' \
                         THEN '; its shares of the trials from there on were not made' \
                         ELSE '; its unfinished trial was taken over' END \
                     WHERE run_id = $1 AND finished_at_unix_ns IS NULL AND heartbeat_at_unix_ns < {SERVER_NOW} - $2 \
                     RETURNING id, shard, host"
                ),
                &[&run, &(stale.as_nanos() as i64)],
            )
            .map_err(&failed)?;
        let mut settled = Vec::new();
        for row in lost {
            let agent: i64 = row.get(0);
            let counts = transaction
                .query_one(
                    "SELECT count(*), count(*) FILTER (WHERE outcome <> 'ok') FROM samples WHERE run_id = $1 AND agent_id = $2",
                    &[&run, &agent],
                )
                .map_err(&failed)?;
            let (samples, errors): (i64, i64) = (counts.get(0), counts.get(1));
            transaction
                .execute(
                    "UPDATE agents SET attempted = $1, errors = $2 WHERE run_id = $3 AND id = $4",
                    &[&samples, &errors, &run, &agent],
                )
                .map_err(&failed)?;
            transaction
                .execute(
                    "UPDATE runs SET attempted = COALESCE(attempted, 0) + $1, errors = COALESCE(errors, 0) + $2 WHERE id = $3",
                    &[&samples, &errors, &run],
                )
                .map_err(&failed)?;
            settled.push(LostAgent {
                agent,
                shard: row.get(1),
                host: row.get(2),
                samples: samples.max(0) as u64,
            });
        }
        transaction.commit().map_err(&failed)?;
        Ok(settled)
    }

    /// Where run `run`'s work stands.
    pub fn status(&mut self, run: i64) -> Result<WorkStatus, StoreError> {
        let row = self
            .client
            .query_one(
                "SELECT \
                   (SELECT count(*) FROM claims WHERE run_id = $1), \
                   (SELECT count(*) FROM claims WHERE run_id = $1 AND done = 1), \
                   (SELECT count(*) FROM agents WHERE run_id = $1), \
                   (SELECT count(*) FROM agents WHERE run_id = $1 AND finished_at_unix_ns IS NOT NULL), \
                   (SELECT COALESCE(agents, 0) FROM runs WHERE id = $1), \
                   (SELECT start_at_unix_ns FROM runs WHERE id = $1)",
                &[&run],
            )
            .map_err(self.failed("reading the run's progress"))?;
        let count = |index: usize| row.get::<_, Option<i64>>(index).unwrap_or(0).max(0) as u64;
        Ok(WorkStatus {
            trials: count(0),
            done: count(1),
            registered: count(2),
            finished: count(3),
            expected: count(4),
            start_at_unix_ns: row.get(5),
        })
    }

    /// The agents of run `run` that ended with their part incomplete (lost ones
    /// included), by number.
    pub fn unfinished_agents(&mut self, run: i64) -> Result<Vec<i64>, StoreError> {
        Ok(self
            .client
            .query(
                "SELECT id FROM agents WHERE run_id = $1 AND finished_at_unix_ns IS NOT NULL \
                 AND COALESCE(complete, 0) = 0 ORDER BY id",
                &[&run],
            )
            .map_err(self.failed("reading the run's agents"))?
            .iter()
            .map(|row| row.get(0))
            .collect())
    }
}

/// Refuses an agent of another build than the run's coordinator (`version`, `commit`): it
/// expands the plan again, and another build may expand it otherwise. A build without its
/// commit (an image built without `.git`) says `unknown`: the version must match then, and
/// the agent checks the plan's expansion anyway.
fn same_build(
    run: i64,
    (version, commit): (String, String),
    registration: &Registration,
) -> Result<(), StoreError> {
    let known = |commit: &str| commit != "unknown";
    let commits_differ =
        commit != registration.commit_id && known(&commit) && known(&registration.commit_id);
    if version != registration.tool_version || commits_differ {
        return Err(StoreError::Postgres(PostgresError::AgentVersion {
            run,
            coordinator: format!("{version} ({commit})"),
            agent: format!("{} ({})", registration.tool_version, registration.commit_id),
        }));
    }
    Ok(())
}

/// Agent `agent`'s row in run `run`, beating from now; the agent that completes the count
/// the run's start waits for sets the start, a second from now.
fn enroll(
    transaction: &mut postgres::Transaction<'_>,
    (run, agent): (i64, i64),
    registration: &Registration,
) -> Result<(), postgres::Error> {
    transaction.execute(
        &format!(
            "INSERT INTO agents (run_id, id, shard, host, process_id, tool_version, commit_id, \
             registered_at_unix_ns, heartbeat_at_unix_ns) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, {SERVER_NOW}, {SERVER_NOW})"
        ),
        &[
            &run,
            &agent,
            &registration.shard,
            &registration.host,
            &i64::from(registration.process_id),
            &registration.tool_version,
            &registration.commit_id,
        ],
    )?;
    transaction.execute(
        &format!(
            "UPDATE runs SET start_at_unix_ns = {SERVER_NOW} + 1000000000 \
             WHERE id = $1 AND start_at_unix_ns IS NULL AND $2 >= agents"
        ),
        &[&run, &agent],
    )?;
    Ok(())
}

/// This machine's clock, nanoseconds since the Unix epoch.
pub fn unix_ns_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as i64)
}

/// The server's usage at `at`, read between the two readings around it (CPU time grows
/// steadily between readings a few milliseconds apart); `None` outside them.
fn usage_at(readings: &[(i64, tlslab_core::Usage)], at: i64) -> Option<tlslab_core::Usage> {
    let after = readings.partition_point(|(time, _)| *time < at);
    let (later_at, later) = readings.get(after)?;
    if *later_at == at {
        return Some(*later);
    }
    let (earlier_at, earlier) = readings.get(after.checked_sub(1)?)?;
    let share = (at - earlier_at) as f64 / (later_at - earlier_at).max(1) as f64;
    let between = |from: u64, to: u64| from + (to.saturating_sub(from) as f64 * share) as u64;
    Some(tlslab_core::Usage {
        user_ns: between(earlier.user_ns, later.user_ns),
        system_ns: between(earlier.system_ns, later.system_ns),
        peak_rss_bytes: between(earlier.peak_rss_bytes, later.peak_rss_bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::Usage;

    #[test]
    fn the_servers_usage_between_readings_is_read_on_the_line_between_them() {
        let usage = |user_ns| Usage {
            user_ns,
            system_ns: user_ns / 10,
            peak_rss_bytes: 1000,
        };
        let readings = [(100, usage(0)), (200, usage(1000)), (300, usage(1000))];
        assert_eq!(usage_at(&readings, 150).map(|u| u.user_ns), Some(500));
        assert_eq!(usage_at(&readings, 200).map(|u| u.user_ns), Some(1000));
        assert_eq!(usage_at(&readings, 250).map(|u| u.user_ns), Some(1000));
        // Outside the readings nothing can be said.
        assert_eq!(usage_at(&readings, 99), None);
        assert_eq!(usage_at(&readings, 301), None);
    }
}
