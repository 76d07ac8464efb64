//! The PostgreSQL store as a [`Sink`]: samples go in by binary `COPY` (one statement for a
//! batch of thousands, each value in PostgreSQL's own binary form, nothing parsed as text),
//! the run's other records by plain inserts in the same transaction, one transaction per
//! [`BATCH_SAMPLES`] samples or [`BATCH_TIME`].

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::{Client, Transaction};
use rusqlite::types::Value;
use tlslab_core::{Record, RunEnd, RunInfo, Sample, Sink, SinkError};

use crate::columns::{quoted, stored_sample_columns, Addresses, Fill};
pub(crate) use crate::parameter::Parameter;
use crate::sink::{config_values, positional_insert, run_values, trial_values, utc_timestamp};
use crate::{Store, StoreSink};

use super::connection::Settings;
use super::spool;

/// Samples per transaction. Larger than SQLite's 1,000: a commit here is a round trip and a
/// WAL flush on the server, and one `COPY` of 10,000 rows costs little more than of 1,000.
const BATCH_SAMPLES: usize = 10_000;

/// The longest a sample waits before it is committed, so that a slow run is stored as it goes.
const BATCH_TIME: Duration = Duration::from_millis(200);

/// How often a sink whose database went away tries to reach it again.
const RETRY: Duration = Duration::from_secs(1);

/// The most a spool may grow to on the local disk. Past it the run stops (as on a full disk):
/// what was taken is kept, in the database and the spool.
pub const SPOOL_LIMIT_BYTES: u64 = 4 << 30;

/// Spooled samples between two looks at the spool's size.
const SPOOL_CHECK_SAMPLES: u64 = 10_000;

/// What the sink tells its producer besides its records: that the database went away and
/// came back, and what it did meanwhile. Shared with the producer, who shows it.
#[derive(Clone, Default, Debug)]
pub struct Notices(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Notices {
    /// Every notice so far, in order.
    pub fn all(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn push(&self, notice: String) {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(notice);
    }
}

/// The local store records go to while the database is away.
struct Spooling {
    sink: StoreSink,
    path: std::path::PathBuf,
    since: Instant,
    last_attempt: Instant,
    samples: u64,
}

/// Writes one run into a PostgreSQL store, under the run number the database gave it. When
/// the database goes away (stopped, unreachable, its disk full), the records go to a local
/// spool (`spool.rs`) and the sink tries every second to reach the database again; when it
/// can, the spool is appended to the run and the sink goes on writing the database.
pub struct PostgresSink {
    client: Client,
    /// The database as shown to users (no password).
    database: String,
    run: i64,
    /// Samples of the open batch, and the other records in the order they came. The samples
    /// stay in the boxes they came in: taking them out would copy each one.
    #[allow(clippy::vec_box)]
    samples: Vec<Box<Sample>>,
    others: Vec<Record>,
    batch_started: Instant,
    /// Samples committed: what a failure says is kept.
    stored: u64,
    /// The samples table's measured columns: each one's name (quoted), type and fill.
    columns: Vec<Column>,
    address_fills: Vec<fn(&Sample) -> Option<std::net::SocketAddr>>,
    addresses: Addresses,
    /// How to reach the database again (none: a failure is final).
    settings: Option<Settings>,
    /// The run as it began, for a spool's own beginning.
    info: Option<RunInfo>,
    spooling: Option<Spooling>,
    /// Where a spool goes, and how large it may grow.
    spool_directory: std::path::PathBuf,
    spool_limit: u64,
    notices: Notices,
    /// Set when the sink joined a run another writer made: the run's row is not its own.
    joined: Option<super::Joined>,
    /// Set when the sink writes for an agent of a distributed run.
    agent: Option<AgentWriter>,
}

/// An agent of a distributed run, as its sink writes for it.
#[derive(Debug, Clone, Copy)]
struct AgentWriter {
    /// The agent's number: every sample and trial it writes carries it.
    id: i64,
    /// When the run was made, on the database server's clock.
    run_started_at_unix_ns: u64,
    /// What the agent adds to its clock to read the database server's.
    clock_offset_ns: i64,
    /// What turns the agent's own times (from its start) into the run's (from the run's
    /// start, on the server's clock): set as the run begins.
    shift_ns: i64,
    /// A gang's agent: every agent runs every trial, and the trial's row adds them up.
    gang: bool,
}

/// How a gang's agents add their parts of one trial into its row: attempts, clients and
/// CPU summed, the span from the first start to the last end; no one agent's any more.
const GANG_TRIAL: &str = " ON CONFLICT (run_id, id) DO UPDATE SET \
    handshakes = trials.handshakes + EXCLUDED.handshakes, \
    attempted = trials.attempted + EXCLUDED.attempted, \
    concurrency = trials.concurrency + EXCLUDED.concurrency, \
    client_user_ns = trials.client_user_ns + EXCLUDED.client_user_ns, \
    client_system_ns = trials.client_system_ns + EXCLUDED.client_system_ns, \
    client_peak_rss_bytes = GREATEST(trials.client_peak_rss_bytes, EXCLUDED.client_peak_rss_bytes), \
    duration_ns = GREATEST(trials.started_at_ns + trials.duration_ns, EXCLUDED.started_at_ns + EXCLUDED.duration_ns) \
        - LEAST(trials.started_at_ns, EXCLUDED.started_at_ns), \
    started_at_ns = LEAST(trials.started_at_ns, EXCLUDED.started_at_ns), \
    agent_id = NULL";

impl PostgresSink {
    /// A sink writing run `run` (from [`reserve_run`](super::reserve_run)) through `client`,
    /// whose database has the schema ([`prepare`](super::prepare)).
    pub fn new(client: Client, database: String, run: i64) -> PostgresSink {
        let columns: Vec<(&str, &str, Fill)> = stored_sample_columns().collect();
        PostgresSink {
            client,
            database,
            run,
            samples: Vec::new(),
            others: Vec::new(),
            batch_started: Instant::now(),
            stored: 0,
            columns: columns
                .iter()
                .map(|(name, sql, fill)| Column {
                    name: quoted(name),
                    type_: column_type(sql),
                    fill: *fill,
                })
                .collect(),
            address_fills: columns
                .iter()
                .filter_map(|(_, _, fill)| match fill {
                    Fill::Address(fill) => Some(*fill),
                    _ => None,
                })
                .collect(),
            addresses: Addresses::default(),
            settings: None,
            info: None,
            spooling: None,
            spool_directory: spool::DIRECTORY.into(),
            spool_limit: SPOOL_LIMIT_BYTES,
            notices: Notices::default(),
            joined: None,
            agent: None,
        }
    }

    /// This sink, spooling into `directory` (rather than [`spool::DIRECTORY`]).
    pub fn spooling_into(mut self, directory: impl Into<std::path::PathBuf>) -> PostgresSink {
        self.spool_directory = directory.into();
        self
    }

    /// This sink, letting a spool grow to `bytes` (rather than [`SPOOL_LIMIT_BYTES`]).
    pub fn spool_limit(mut self, bytes: u64) -> PostgresSink {
        self.spool_limit = bytes;
        self
    }

    /// This sink, reaching the database again through `settings` when it goes away.
    pub fn reconnecting(mut self, settings: Settings) -> PostgresSink {
        self.settings = Some(settings);
        self
    }

    /// This sink, writing into a run another writer made, which it joined as `joined` says
    /// ([`join_run`](super::join_run)): it adds its Configs and samples, and its end to the
    /// run's, but never writes the run's row.
    pub fn joining(mut self, joined: super::Joined) -> PostgresSink {
        self.joined = Some(joined);
        self
    }

    /// This sink, writing for agent `agent` of a distributed run whose coordinator made the
    /// run (at `run_started_at_unix_ns`, on the database server's clock) and its Configs: it
    /// writes neither, marks every sample and trial with the agent, counts their times from
    /// the run's start through the agent's `clock_offset_ns`, and adds its end to the run's.
    /// In a `gang`, the agents' parts of each trial add up in its row.
    pub fn for_agent(
        mut self,
        (agent, gang): (i64, bool),
        run_started_at_unix_ns: u64,
        clock_offset_ns: i64,
    ) -> PostgresSink {
        self.agent = Some(AgentWriter {
            id: agent,
            run_started_at_unix_ns,
            clock_offset_ns,
            shift_ns: 0,
            gang,
        });
        self
    }

    /// Where this sink stands in a run it joined; `None` for a run it made.
    pub fn joined(&self) -> Option<super::Joined> {
        self.joined
    }

    /// What the sink has to tell its producer.
    pub fn notices(&self) -> Notices {
        self.notices.clone()
    }

    /// The run this sink writes.
    pub fn run(&self) -> i64 {
        self.run
    }

    /// Commits the open batch: the other records in order, then the samples in one `COPY`.
    fn commit(&mut self) -> Result<(), SinkError> {
        if self.samples.is_empty() && self.others.is_empty() {
            return Ok(());
        }
        for sample in &self.samples {
            self.addresses.learn(&self.address_fills, sample);
        }
        let written = write_batch(
            &mut self.client,
            (self.run, self.agent),
            &self.others,
            &self.columns,
            (&self.samples, &self.addresses),
        );
        match written {
            Ok(()) => {
                self.stored += self.samples.len() as u64;
                self.samples.clear();
                self.others.clear();
                self.batch_started = Instant::now();
                Ok(())
            }
            Err(error) if self.settings.is_some() => self.spool(&error),
            Err(error) => Err(self.failed("writing samples", error)),
        }
    }

    /// The database refused the batch: it goes to a new spool, and so will every record
    /// until the database is back.
    fn spool(&mut self, error: &postgres::Error) -> Result<(), SinkError> {
        let path = spool::spool_path(&self.spool_directory, self.run);
        let refused = |reason: String| {
            SinkError::new(
                format!(
                    "the database {} refused the run's samples ({}), and no spool could be made at {}: {reason}",
                    self.database,
                    tlslab_core::WithCauses(error),
                    path.display()
                ),
                "check the database server; the samples committed before the failure are kept",
            )
        };
        let store = Store::create(&path)
            .map_err(|made| refused(tlslab_core::WithCauses(&made).to_string()))?;
        spool::mark(store.connection(), &self.database, self.run)
            .map_err(|marked| refused(marked.to_string()))?;
        let mut sink = store.into_sink();
        let info = self
            .info
            .clone()
            .ok_or_else(|| refused("the run had not begun".into()))?;
        sink.begin(&info)?;
        let samples = self.samples.len() as u64;
        for record in self.others.drain(..) {
            sink.record(record)?;
        }
        for sample in self.samples.drain(..) {
            sink.record(Record::Sample(sample))?;
        }
        self.notices.push(format!(
            "the database {} went away ({}); from sample {} on, the run is spooled to {}",
            self.database,
            tlslab_core::WithCauses(error),
            self.stored,
            path.display()
        ));
        let now = Instant::now();
        self.spooling = Some(Spooling {
            sink,
            path,
            since: now,
            last_attempt: now,
            samples,
        });
        Ok(())
    }

    /// While spooling: reaches the database again, at most once a [`RETRY`] unless `now`, and
    /// appends the spool to the run. Whether the sink writes the database again.
    fn try_return(&mut self, now: bool) -> Result<bool, SinkError> {
        let Some(spooling) = &mut self.spooling else {
            return Ok(true);
        };
        if !now && spooling.last_attempt.elapsed() < RETRY {
            return Ok(false);
        }
        spooling.last_attempt = Instant::now();
        let Some(settings) = &self.settings else {
            return Ok(false);
        };
        let Ok(mut client) = settings.connect() else {
            return Ok(false);
        };
        spooling.sink.flush()?;
        match spool::upload(&spooling.path, &mut client, self.run) {
            Ok(uploaded) => {
                self.notices.push(format!(
                    "the database {} was back after {:.1} s: the {uploaded} samples spooled meanwhile were added to run {}",
                    self.database,
                    spooling.since.elapsed().as_secs_f64(),
                    self.run
                ));
                self.stored += uploaded;
                let path = spooling.path.clone();
                // Closed first (the SQLite sink, its log and its lock), then removed with the
                // files beside it: it is in the database now.
                self.spooling = None;
                for suffix in ["", "-reserve", "-wal", "-shm"] {
                    let mut name = path.clone().into_os_string();
                    name.push(suffix);
                    let _ = std::fs::remove_file(name);
                }
                self.client = client;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    fn failed(&self, doing: &str, error: postgres::Error) -> SinkError {
        SinkError::with_source(
            format!(
                "the database {} refused {doing}; it holds the {} samples of run {} committed before",
                self.database,
                self.stored,
                self.run
            ),
            "check the database server and its free space; the samples committed before the failure are kept",
            error,
        )
    }

    fn execute(&mut self, doing: &str, sql: &str, values: &[Value]) -> Result<(), SinkError> {
        let parameters: Vec<Parameter<'_>> = values.iter().map(Parameter::from).collect();
        let references: Vec<&(dyn ToSql + Sync)> = parameters
            .iter()
            .map(|parameter| parameter as &(dyn ToSql + Sync))
            .collect();
        self.client
            .execute(sql, &references)
            .map(drop)
            .map_err(|error| self.failed(doing, error))
    }
}

impl PostgresSink {
    /// The run ends with the database still away: the spool takes the end too, and the
    /// failure says where the spool is and how to upload it.
    fn finish_spooled(&mut self, end: &RunEnd) -> Result<(), SinkError> {
        let Some(mut spooling) = self.spooling.take() else {
            return Ok(());
        };
        spooling.sink.finish(end)?;
        Err(SinkError::new(
            format!(
                "the database {} went away {:.1} s before the run ended and did not come back: run {} holds {} samples, and the {} samples since are in the spool {}",
                self.database,
                spooling.since.elapsed().as_secs_f64(),
                self.run,
                self.stored,
                spooling.samples,
                spooling.path.display()
            ),
            format!(
                "when the database is back, upload them: {}",
                upload_command(&spooling.path, self.settings.as_ref(), &self.database)
            ),
        ))
    }
}

/// A measured column of the samples table, as the sink copies into it.
struct Column {
    name: String,
    type_: Type,
    fill: Fill,
}

/// The command that uploads the spool at `path`, to be typed as it is: the database's URL
/// without its password, which then comes from `PGPASSWORD` or the password file, as for psql.
fn upload_command(path: &std::path::Path, settings: Option<&Settings>, database: &str) -> String {
    let Some(settings) = settings else {
        return format!("tlslab store copy {} '{database}'", path.display());
    };
    let password = if settings.password_given() {
        " (its password in PGPASSWORD or ~/.pgpass)"
    } else {
        ""
    };
    format!(
        "tlslab store copy {} '{}'{password}",
        path.display(),
        settings.url_without_password()
    )
}

/// One batch in one transaction. The `COPY` names only the columns some sample of the batch
/// fills (a handshake fills about 20 of the hundred, a request on a kept connection fewer):
/// the others are NULL all the same, without a hundred fields per row to encode, send and
/// parse (a handshake's row on the wire: about 250 bytes instead of 650).
fn write_batch(
    client: &mut Client,
    (run, agent): (i64, Option<AgentWriter>),
    others: &[Record],
    columns: &[Column],
    (samples, addresses): (&[Box<Sample>], &Addresses),
) -> Result<(), postgres::Error> {
    let mut transaction = client.transaction()?;
    for record in others {
        write_other(&mut transaction, (run, agent), record)?;
    }
    if !samples.is_empty() {
        // Each sample's filled cells, by column, and which columns any of them fills.
        let mut used = vec![false; columns.len()];
        let rows: Vec<Vec<(usize, Parameter<'_>)>> = samples
            .iter()
            .map(|sample| {
                let mut cells = Vec::with_capacity(24);
                for (index, column) in columns.iter().enumerate() {
                    let cell = column.fill.value(sample, addresses);
                    if cell != crate::columns::Cell::Null {
                        used[index] = true;
                        cells.push((index, Parameter::from_cell(cell)));
                    }
                }
                cells
            })
            .collect();
        let used: Vec<usize> = (0..columns.len()).filter(|index| used[*index]).collect();
        let mut names = vec!["run_id", "config_id", "trial_id", "agent_id"];
        names.extend(used.iter().map(|index| columns[*index].name.as_str()));
        let mut types = vec![Type::INT8; 4];
        types.extend(used.iter().map(|index| columns[*index].type_.clone()));
        let copy = format!(
            "COPY samples ({}) FROM STDIN (FORMAT binary)",
            names.join(", ")
        );
        let mut writer = BinaryCopyInWriter::new(transaction.copy_in(&copy)?, &types);
        let null = Parameter::Null;
        let mut row: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(types.len());
        let keys: Vec<[Parameter<'_>; 4]> = samples
            .iter()
            .map(|sample| {
                [
                    Parameter::Integer(run),
                    Parameter::Integer(sample.config as i64),
                    Parameter::Integer(sample.trial as i64),
                    agent.map_or(Parameter::Null, |agent| Parameter::Integer(agent.id)),
                ]
            })
            .collect();
        for (keys, cells) in keys.iter().zip(&rows) {
            row.clear();
            row.extend(keys.iter().map(|key| key as &(dyn ToSql + Sync)));
            let mut filled = cells.iter().peekable();
            for index in &used {
                match filled.next_if(|(column, _)| column == index) {
                    Some((_, value)) => row.push(value),
                    None => row.push(&null),
                }
            }
            writer.write(&row)?;
        }
        writer.finish()?;
    }
    transaction.commit()
}

/// A record that is not a sample, inside the batch's transaction.
fn write_other(
    transaction: &mut Transaction<'_>,
    (run, agent): (i64, Option<AgentWriter>),
    record: &Record,
) -> Result<(), postgres::Error> {
    let insert =
        |transaction: &mut Transaction<'_>, table: &str, mut values: Vec<(&str, Value)>| {
            // An agent's trial row says the trial is done (`agents.rs`): one agent writes it,
            // and one that was thought lost but was not finds it written and adds nothing.
            let conflict = match agent {
                Some(agent) => {
                    values.push(("agent_id", Value::Integer(agent.id)));
                    match agent.gang {
                        true => GANG_TRIAL,
                        false => " ON CONFLICT DO NOTHING",
                    }
                }
                None => "",
            };
            let names: Vec<&str> = values.iter().map(|(name, _)| *name).collect();
            let parameters: Vec<Parameter<'_>> = values
                .iter()
                .map(|(_, value)| Parameter::from(value))
                .collect();
            let references: Vec<&(dyn ToSql + Sync)> = parameters
                .iter()
                .map(|parameter| parameter as &(dyn ToSql + Sync))
                .collect();
            let sql = positional_insert(table, &names, "$") + conflict;
            transaction.execute(&sql, &references)?;
            // An agent's trial done is its claim done, in the same transaction.
            if let (Some(_), "trials", Some(Value::Integer(trial))) =
                (agent, table, values.first().map(|(_, value)| value))
            {
                transaction.execute(
                    "UPDATE claims SET done = 1 WHERE run_id = $1 AND id = $2",
                    &[&run, trial],
                )?;
            }
            Ok(())
        };
    match record {
        Record::Sample(_) => Ok(()),
        Record::Config(config) => insert(transaction, "configs", config_values(run, config)),
        Record::Trial(trial) => insert(transaction, "trials", trial_values(run, trial)),
        Record::Replay(replay) => transaction
            .execute(
                "INSERT INTO replays (run_id, config_id, sent, rejected, accepted) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (run_id, config_id) DO UPDATE SET sent = $3, rejected = $4, accepted = $5",
                &[&run, &(replay.config as i64), &(replay.sent as i64), &(replay.rejected as i64), &(replay.accepted as i64)],
            )
            .map(drop),
        Record::Stopped(stop) => transaction
            .execute(
                "UPDATE configs SET stopped_round = $1, stopped_samples = $2, stopped_half_width = $3 WHERE run_id = $4 AND id = $5",
                &[&i64::from(stop.round), &(stop.samples as i64), &stop.relative_half_width, &run, &(stop.config as i64)],
            )
            .map(drop),
    }
}

impl Sink for PostgresSink {
    fn begin(&mut self, info: &RunInfo) -> Result<(), SinkError> {
        self.info = Some(info.clone());
        if let Some(agent) = &mut self.agent {
            // The coordinator wrote the run and its Configs.
            agent.shift_ns = (info.started_at_unix_ns as i64)
                .saturating_add(agent.clock_offset_ns)
                .saturating_sub(agent.run_started_at_unix_ns as i64);
            return Ok(());
        }
        if self.joined.is_none() {
            let values = run_values(self.run, info);
            let names: Vec<&str> = values.iter().map(|(name, _)| *name).collect();
            let values: Vec<Value> = values.into_iter().map(|(_, value)| value).collect();
            self.execute(
                "the new run",
                &positional_insert("runs", &names, "$"),
                &values,
            )?;
        }
        self.others.extend(
            info.configs
                .iter()
                .map(|config| Record::Config(Box::new(config.clone()))),
        );
        self.commit()
    }

    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        if let Some(spooling) = &mut self.spooling {
            spooling.samples += u64::from(matches!(record, Record::Sample(_)));
            spooling.sink.record(record)?;
            if spooling.samples % SPOOL_CHECK_SAMPLES == 0 {
                let size = spool::size(&spooling.path);
                if size > self.spool_limit {
                    return Err(SinkError::new(
                        format!(
                            "the database {} is still away and the spool {} has reached its bound ({} MB): the run stops there",
                            self.database,
                            spooling.path.display(),
                            size >> 20
                        ),
                        format!(
                            "every sample taken is kept; when the database is back, upload the spool: {}",
                            upload_command(&spooling.path, self.settings.as_ref(), &self.database)
                        ),
                    ));
                }
            }
            self.try_return(false)?;
            return Ok(());
        }
        match (record, self.agent) {
            (Record::Sample(mut sample), Some(agent)) => {
                sample.started_at = shifted(sample.started_at, agent.shift_ns);
                self.samples.push(sample);
            }
            (Record::Sample(sample), None) => self.samples.push(sample),
            (Record::Trial(mut trial), Some(agent)) => {
                trial.started_at = shifted(trial.started_at, agent.shift_ns);
                self.others.push(Record::Trial(trial));
            }
            (record, _) => self.others.push(record),
        }
        if self.samples.len() >= BATCH_SAMPLES || self.batch_started.elapsed() >= BATCH_TIME {
            self.commit()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        if self.spooling.is_some() {
            return self.try_return(false).map(drop);
        }
        self.commit()
    }

    fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
        let committed = self.commit();
        if self.spooling.is_some() && !self.try_return(true)? {
            return self.finish_spooled(end);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        let ended = self.execute(
            "the run's end",
            super::RUN_END,
            &[
                Value::Text(utc_timestamp(now)),
                Value::Integer(i64::from(end.complete)),
                end.reason.clone().map_or(Value::Null, Value::Text),
                Value::Integer(end.duration_ns as i64),
                Value::Integer(end.attempted as i64),
                Value::Integer(end.errors as i64),
                Value::Integer(self.run),
            ],
        );
        committed.and(ended)
    }
}

/// A time from an agent's start, counted from the run's start instead.
fn shifted(nanos: u64, shift_ns: i64) -> u64 {
    (nanos as i64).saturating_add(shift_ns).max(0) as u64
}

/// The PostgreSQL type of a column the one schema types as SQLite does.
pub(crate) fn column_type(sql: &str) -> Type {
    match sql.split(' ').next() {
        Some("INTEGER") => Type::INT8,
        Some("REAL") => Type::FLOAT8,
        _ => Type::TEXT,
    }
}
