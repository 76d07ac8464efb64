//! The store as a [`Sink`]: any producer's records (the engine's, or a capture reader's),
//! in batched inserts, one transaction per ~1,000 samples or ~200 ms.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::Value;
use rusqlite::{params, Connection};
use tlslab_core::{ConfigRecord, Record, RunEnd, RunInfo, Sample, Sink, SinkError, TrialRecord};

use crate::columns::{quoted, sample_columns, Addresses, Cell, Fill, CONFIG_COLUMNS};
use crate::kept::{Keeper, KeptHandle};
use crate::recovery::{reserve_path, RunLock};

const BATCH_SAMPLES: usize = 1_000;
const BATCH_TIME: Duration = Duration::from_millis(200);

/// Disk space kept for the run's last batch and its end.
const RESERVE_BYTES: usize = 1 << 20;

/// Writes a run into a store created with [`Store::create`](crate::Store::create).
///
/// A full disk must not cost the records of the open batch nor leave the run row silent: a
/// reserve file beside the store keeps some space, and when a write fails for lack of it the
/// reserve is given up, the batch written again into the space it leaves, and the failure
/// reported (the producer then stops, and the run's end fits too).
pub struct StoreSink {
    connection: Connection,
    path: PathBuf,
    /// Held until the run is written (see `recovery.rs`).
    lock: Option<RunLock>,
    /// Records of the open transaction, to write again after a full disk.
    batch: Vec<Record>,
    pending: usize,
    /// Samples committed: what a failure says is kept.
    stored: u64,
    /// The samples at the end of `batch` not inserted yet: samples are inserted together,
    /// before the next other record or the commit, with one look-up of the prepared insert
    /// for each run of samples that fill the same columns (finding it in the statement cache
    /// hashes its SQL).
    unwritten: usize,
    /// When the open batch began, on the coarse clock ([`coarse_now`]).
    batch_started: Duration,
    in_transaction: bool,
    /// The configs insert, by column name.
    insert_config: String,
    /// The samples table's measured columns, and how a sample fills each.
    sample_columns: Vec<&'static str>,
    fills: Vec<Fill>,
    /// Those of `fills` that store an address, and the addresses' texts.
    address_fills: Vec<fn(&Sample) -> Option<std::net::SocketAddr>>,
    addresses: Addresses,
    /// Where disk space is kept for the end, while it is kept.
    reserve: Option<PathBuf>,
    /// The values kept for the summaries, and where they go when the run is written: until
    /// a write fails or they outgrow their memory (see `kept.rs`).
    keeping: Option<(Keeper, KeptHandle)>,
    /// Whether the run's end builds the readers' index (see [`StoreSink::without_index`]).
    index: bool,
}

/// The monotonic clock at its coarse resolution (a few milliseconds), which is all the batch
/// timer needs: it is read for every record, and the precise clock cost 0.3% of a load run's
/// CPU there.
fn coarse_now() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Whether SQLite gave up for lack of disk space.
fn disk_full(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(failure, _)
            if failure.code == rusqlite::ErrorCode::DiskFull
    )
}

/// ISO 8601 UTC timestamp (to the second) of a moment given in nanoseconds since the Unix
/// epoch.
pub fn utc_timestamp(unix_ns: u64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ns))
        .ok()
        .and_then(|moment| moment.format(&format).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

impl StoreSink {
    pub(crate) fn new(connection: Connection, path: PathBuf, lock: Option<RunLock>) -> StoreSink {
        let reserve = reserve_path(&path);
        let reserve = std::fs::write(&reserve, vec![0u8; RESERVE_BYTES])
            .is_ok()
            .then_some(reserve);
        StoreSink {
            connection,
            path,
            lock,
            batch: Vec::new(),
            pending: 0,
            stored: 0,
            unwritten: 0,
            batch_started: coarse_now(),
            in_transaction: false,
            insert_config: positional_insert("configs", &config_columns(), "?"),
            sample_columns: sample_columns().map(|(name, _, _)| name).collect(),
            fills: sample_columns().map(|(_, _, fill)| fill).collect(),
            address_fills: sample_columns()
                .filter_map(|(_, _, fill)| match fill {
                    Fill::Address(fill) => Some(fill),
                    _ => None,
                })
                .collect(),
            addresses: Addresses::default(),
            reserve,
            keeping: None,
            index: true,
        }
    }

    /// This sink, leaving the readers' index to the caller, who builds it with
    /// [`Store::build_index`](crate::Store::build_index) once the run is written: `tlslab
    /// run` builds it while the summaries are read from the kept values (the 19 ms it takes
    /// after a 100,000-request run then no longer come before them).
    pub fn without_index(mut self) -> StoreSink {
        self.index = false;
        self
    }

    /// Keeps the values the summaries read as it writes them (at most `limit` bytes of
    /// them), and leaves them in `handle` when the run is written.
    pub(crate) fn keep_values(&mut self, handle: KeptHandle, limit: usize) {
        self.keeping = Keeper::new(&self.sample_columns, limit).map(|keeper| (keeper, handle));
    }

    fn begin_batch(&mut self) -> rusqlite::Result<()> {
        if !self.in_transaction {
            self.connection.execute_batch("BEGIN")?;
            self.in_transaction = true;
            self.batch_started = coarse_now();
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), SinkError> {
        if self.in_transaction {
            let committed = self
                .write_unwritten()
                .and_then(|()| self.connection.execute_batch("COMMIT"));
            if let Err(error) = committed {
                return Err(self.failed(error));
            }
            self.in_transaction = false;
            self.stored += self.pending as u64;
            self.pending = 0;
            self.batch.clear();
        }
        Ok(())
    }

    /// Inserts the samples at the end of the batch that are not inserted yet, in order.
    fn write_unwritten(&mut self) -> rusqlite::Result<()> {
        if self.unwritten == 0 {
            return Ok(());
        }
        let start = self.batch.len().saturating_sub(self.unwritten);
        for record in &self.batch[start..] {
            if let Record::Sample(sample) = record {
                self.addresses.learn(&self.address_fills, sample);
            }
        }
        let mut row = Row::default();
        // The row last inserted: what `prepared` has bound.
        let mut previous = Row::default();
        // The insert of the columns the last sample filled, and those columns.
        let mut prepared: Option<(Vec<usize>, rusqlite::CachedStatement<'_>)> = None;
        for record in &self.batch[start..] {
            let Record::Sample(sample) = record else {
                continue;
            };
            row.fill(&self.fills, sample, &self.addresses);
            if let Some((keeper, _)) = &mut self.keeping {
                if !keeper.keep(sample, &row.filled, &row.values) {
                    self.keeping = None;
                }
            }
            let (statement, bound) = match &mut prepared {
                Some((filled, statement)) if *filled == row.filled => (statement, Some(&previous)),
                _ => {
                    let sql = sample_insert(&self.sample_columns, &row.filled);
                    let statement = self.connection.prepare_cached(&sql)?;
                    (
                        &mut prepared.insert((row.filled.clone(), statement)).1,
                        None,
                    )
                }
            };
            row.bind(statement, bound)?;
            statement.raw_execute()?;
            std::mem::swap(&mut row, &mut previous);
        }
        drop(prepared);
        self.unwritten = 0;
        Ok(())
    }

    /// Writes one record inside the open transaction.
    fn write(&self, record: &Record) -> rusqlite::Result<()> {
        match record {
            Record::Config(config) => self.insert_config(config),
            Record::Sample(sample) => self.insert_sample(sample),
            Record::Trial(trial) => self.insert_trial(trial),
            Record::Replay(replay) => self
                .connection
                .execute(
                    "INSERT OR REPLACE INTO replays (config_id, sent, rejected, accepted) VALUES (?1, ?2, ?3, ?4)",
                    params![replay.config as i64, replay.sent as i64, replay.rejected as i64, replay.accepted as i64],
                )
                .map(drop),
            Record::Stopped(stop) => self
                .connection
                .execute(
                    "UPDATE configs SET stopped_round = ?1, stopped_samples = ?2, stopped_half_width = ?3 WHERE id = ?4",
                    params![stop.round, stop.samples as i64, stop.relative_half_width, stop.config as i64],
                )
                .map(drop),
        }
    }

    /// After a failed write: the transaction is rolled back; on a full disk the reserve is
    /// given up and the batch written again into its space. Returns what to tell the
    /// producer, which stops.
    fn failed(&mut self, error: rusqlite::Error) -> SinkError {
        // What is kept must be what was committed.
        self.keeping = None;
        let _ = self.connection.execute_batch("ROLLBACK");
        self.in_transaction = false;
        self.pending = 0;
        self.unwritten = 0;
        let batch = std::mem::take(&mut self.batch);
        if !disk_full(&error) {
            return SinkError::with_source(
                format!(
                    "cannot write {}; it holds the {} samples committed before",
                    self.path.display(),
                    self.stored
                ),
                "the samples committed before the failure are kept",
                error,
            );
        }
        let saved = self.release_reserve() && self.write_again(&batch).is_ok();
        if saved {
            let samples = batch
                .iter()
                .filter(|record| matches!(record, Record::Sample(_)))
                .count();
            self.stored += samples as u64;
        }
        SinkError::with_source(
            format!(
                "no space left on the device that holds {} (ENOSPC): the run stopped there, \
                 with {} samples stored",
                self.path.display(),
                self.stored
            ),
            format!(
                "free disk space or give --out a file on another file system; the samples {} \
                 are kept",
                if saved {
                    "taken until then"
                } else {
                    "committed before the last 200 ms"
                }
            ),
            error,
        )
    }

    /// Deletes the reserve file; whether there was one to delete.
    fn release_reserve(&mut self) -> bool {
        self.reserve
            .take()
            .is_some_and(|reserve| std::fs::remove_file(reserve).is_ok())
    }

    fn write_again(&self, batch: &[Record]) -> rusqlite::Result<()> {
        self.connection.execute_batch("BEGIN")?;
        for record in batch {
            if let Err(error) = self.write(record) {
                let _ = self.connection.execute_batch("ROLLBACK");
                return Err(error);
            }
        }
        self.connection.execute_batch("COMMIT")
    }

    fn insert_sample(&self, sample: &Sample) -> rusqlite::Result<()> {
        let mut row = Row::default();
        row.fill(&self.fills, sample, &self.addresses);
        let mut statement = self
            .connection
            .prepare_cached(&sample_insert(&self.sample_columns, &row.filled))?;
        row.bind(&mut statement, None)?;
        statement.raw_execute()?;
        Ok(())
    }

    fn insert_config(&self, config: &ConfigRecord) -> rusqlite::Result<()> {
        let values = config_values(1, config);
        let parameters: Vec<&dyn rusqlite::ToSql> = values
            .iter()
            .map(|(_, value)| value as &dyn rusqlite::ToSql)
            .collect();
        self.connection
            .prepare_cached(&self.insert_config)?
            .execute(parameters.as_slice())?;
        Ok(())
    }

    fn insert_trial(&self, record: &TrialRecord) -> rusqlite::Result<()> {
        let values = trial_values(1, record);
        let names: Vec<&str> = values.iter().map(|(name, _)| *name).collect();
        let parameters: Vec<&dyn rusqlite::ToSql> = values
            .iter()
            .map(|(_, value)| value as &dyn rusqlite::ToSql)
            .collect();
        self.connection
            .prepare_cached(&positional_insert("trials", &names, "?"))?
            .execute(parameters.as_slice())?;
        Ok(())
    }
}

/// A trial's row, column by column: what both stores' writers insert.
pub(crate) fn trial_values(run: i64, record: &TrialRecord) -> Vec<(&'static str, Value)> {
    let integer = |value: u64| Value::Integer(value as i64);
    let optional = |value: Option<u64>| value.map_or(Value::Null, integer);
    let server = record.server;
    let link = record.link;
    let verifications = record.server_client_verifications;
    vec![
        ("id", integer(record.trial.index as u64)),
        ("run_id", Value::Integer(run)),
        ("config_id", integer(record.trial.config as u64)),
        ("round", Value::Integer(i64::from(record.trial.round))),
        ("warmup", Value::Integer(i64::from(record.trial.warmup))),
        ("handshakes", integer(record.trial.handshakes)),
        ("attempted", integer(record.attempted)),
        ("concurrency", Value::Integer(i64::from(record.concurrency))),
        ("started_at_ns", integer(record.started_at)),
        ("duration_ns", integer(record.duration_ns)),
        ("server_user_ns", optional(server.map(|s| s.user_ns))),
        ("server_system_ns", optional(server.map(|s| s.system_ns))),
        (
            "server_peak_rss_bytes",
            optional(server.map(|s| s.peak_rss_bytes)),
        ),
        ("client_user_ns", integer(record.client.user_ns)),
        ("client_system_ns", integer(record.client.system_ns)),
        (
            "client_peak_rss_bytes",
            integer(record.client.peak_rss_bytes),
        ),
        (
            "link_bytes_to_server",
            optional(link.map(|l| l.bytes_to_server)),
        ),
        (
            "link_bytes_to_client",
            optional(link.map(|l| l.bytes_to_client)),
        ),
        ("link_queue_drops", optional(link.map(|l| l.queue_drops))),
        (
            "server_client_verifications",
            optional(verifications.map(|v| v.count)),
        ),
        (
            "server_client_verify_ns",
            optional(verifications.map(|v| v.nanos)),
        ),
    ]
}

/// A run's row as its producer begins it: what both stores' writers insert.
pub(crate) fn run_values(run: i64, info: &RunInfo) -> Vec<(&'static str, Value)> {
    // A capture has no experiment and no plan: an empty experiment, a null plan and no
    // seed say so.
    let experiment = info
        .experiment
        .as_ref()
        .map(|experiment| experiment.to_toml())
        .unwrap_or_default();
    vec![
        ("id", Value::Integer(run)),
        (
            "started_at",
            Value::Text(utc_timestamp(info.started_at_unix_ns)),
        ),
        (
            "started_at_unix_ns",
            Value::Integer(info.started_at_unix_ns as i64),
        ),
        (
            "seed",
            info.plan
                .as_ref()
                .map_or(Value::Null, |plan| Value::Integer(plan.seed as i64)),
        ),
        (
            "tool_version",
            Value::Text(info.environment.tool_version.clone()),
        ),
        ("commit_id", Value::Text(info.environment.commit.clone())),
        ("experiment", Value::Text(experiment)),
        ("command_line", Value::Text(json(&info.command_line))),
        ("environment", Value::Text(json(&info.environment))),
        ("plan", Value::Text(json(&info.plan))),
        ("source", Value::Text(info.source.kind().to_string())),
        (
            "source_detail",
            info.source.detail().map_or(Value::Null, Value::Text),
        ),
    ]
}

/// A Config's row, column by column, with its run: what both stores' writers insert.
pub(crate) fn config_values(run: i64, config: &ConfigRecord) -> Vec<(&'static str, Value)> {
    let mut values = vec![
        ("id", Value::Integer(config.index as i64)),
        ("run_id", Value::Integer(run)),
    ];
    for (name, _, fill) in CONFIG_COLUMNS {
        if let Some(fill) = fill {
            values.push((name, fill(config)));
        }
    }
    values
}

/// `INSERT INTO table (…) VALUES (…)` with positional parameters written `{marker}1`,
/// `{marker}2`… (`?` for SQLite, `$` for PostgreSQL).
pub(crate) fn positional_insert(table: &str, columns: &[&str], marker: &str) -> String {
    let names: Vec<String> = columns.iter().map(|name| quoted(name)).collect();
    let parameters: Vec<String> = (1..=columns.len())
        .map(|position| format!("{marker}{position}"))
        .collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        parameters.join(", ")
    )
}

/// The values of one sample that are not NULL, and which measured columns they fill. Most of
/// a sample's hundred columns are NULL (a request on a kept connection has no handshake
/// events): an insert that names only the filled columns leaves the others NULL, as binding
/// NULL would, without SQLite copying a hundred parameters into the row for each sample
/// (clearing, binding and copying the NULLs took about a third of the writer's time).
/// The values are borrowed from the sample where it has the text (only text made for a
/// column, an address or a joined list, is allocated).
#[derive(Default)]
struct Row<'a> {
    /// The run, Config and trial.
    keys: [i64; 3],
    filled: Vec<usize>,
    values: Vec<Cell<'a>>,
}

impl<'a> Row<'a> {
    fn fill(&mut self, fills: &[Fill], sample: &'a Sample, addresses: &'a Addresses) {
        self.keys = [1, sample.config as i64, sample.trial as i64];
        self.filled.clear();
        self.values.clear();
        for (index, fill) in fills.iter().enumerate() {
            let value = fill.value(sample, addresses);
            if value != Cell::Null {
                self.filled.push(index);
                self.values.push(value);
            }
        }
    }

    /// Binds the row to [`sample_insert`] of its filled columns, by position: looking every
    /// name up costs more than the insert itself. `bound` is the row `statement` last
    /// inserted, whose values it still holds (SQLite keeps them from one execution to the
    /// next): only the values that differ are bound again. Consecutive requests of a load
    /// run share most of theirs (their run, Config, trial, outcome, status, sizes, server),
    /// and binding them again, text copied each time, was a fifth of the insert.
    fn bind(
        &self,
        statement: &mut rusqlite::Statement<'_>,
        bound: Option<&Row<'a>>,
    ) -> rusqlite::Result<()> {
        for (index, key) in self.keys.iter().enumerate() {
            if bound.is_none_or(|bound| bound.keys[index] != *key) {
                statement.raw_bind_parameter(index + 1, key)?;
            }
        }
        for (index, value) in self.values.iter().enumerate() {
            if bound.is_none_or(|bound| bound.values[index] != *value) {
                statement.raw_bind_parameter(index + 4, value)?;
            }
        }
        Ok(())
    }
}

/// The samples insert of the keys and the measured columns `filled` (indices into
/// `columns`), with positional parameters in that order.
fn sample_insert(columns: &[&str], filled: &[usize]) -> String {
    let mut sql = String::from("INSERT INTO samples (run_id, config_id, trial_id");
    for &index in filled {
        sql.push_str(", ");
        sql.push_str(&quoted(columns[index]));
    }
    sql.push_str(") VALUES (?1, ?2, ?3");
    for position in 0..filled.len() {
        sql.push_str(&format!(", ?{}", position + 4));
    }
    sql.push(')');
    sql
}

impl Sink for StoreSink {
    fn begin(&mut self, info: &RunInfo) -> Result<(), SinkError> {
        self.begin_batch().map_err(|error| self.failed(error))?;
        let values = run_values(1, info);
        let names: Vec<&str> = values.iter().map(|(name, _)| *name).collect();
        let parameters: Vec<&dyn rusqlite::ToSql> = values
            .iter()
            .map(|(_, value)| value as &dyn rusqlite::ToSql)
            .collect();
        self.connection
            .execute(
                &positional_insert("runs", &names, "?"),
                parameters.as_slice(),
            )
            .map_err(|error| self.failed(error))?;
        for config in &info.configs {
            self.insert_config(config)
                .map_err(|error| self.failed(error))?;
        }
        self.commit()
    }

    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        let written = self.begin_batch().and_then(|()| {
            if matches!(record, Record::Sample(_)) {
                self.pending += 1;
                self.unwritten += 1;
                return Ok(());
            }
            // Other records go in after the samples that came before them (the unwritten
            // samples are the batch's last ones until this record joins it).
            self.write_unwritten()?;
            self.write(&record)
        });
        self.batch.push(record);
        if let Err(error) = written {
            return Err(self.failed(error));
        }
        if self.pending >= BATCH_SAMPLES
            || coarse_now().saturating_sub(self.batch_started) >= BATCH_TIME
        {
            self.commit()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.commit()
    }

    fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
        self.commit()?;
        // Before the end is recorded: a run killed while this sorts is recovered, and the
        // recovery builds the index. Without it (no space for it) the readers scan instead.
        if self.index {
            let _ = self.connection.execute_batch(crate::schema::SAMPLES_INDEX);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        self.connection
            .execute(
                "UPDATE runs SET finished_at = ?1, complete = ?2, reason = ?3, duration_ns = ?4, attempted = ?5, errors = ?6 WHERE id = 1",
                params![
                    utc_timestamp(now),
                    end.complete,
                    end.reason,
                    end.duration_ns as i64,
                    end.attempted as i64,
                    end.errors as i64,
                ],
            )
            .map_err(|error| self.failed(error))?;
        // Leave WAL mode once the run is written: the result is one self-contained file, with
        // no -wal or -shm beside it for readers to recreate.
        let _ = self
            .connection
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;");
        self.release_reserve();
        self.lock = None;
        if let Some((keeper, handle)) = self.keeping.take() {
            handle.put(keeper.into_kept());
        }
        Ok(())
    }
}

/// The configs columns a [`ConfigRecord`] fills, with the keys.
pub(crate) fn config_columns() -> Vec<&'static str> {
    ["id", "run_id"]
        .into_iter()
        .chain(
            CONFIG_COLUMNS
                .iter()
                .filter(|(_, _, fill)| fill.is_some())
                .map(|(name, _, _)| *name),
        )
        .collect()
}

/// A value as JSON text, for the columns that keep records whole (the plan, the
/// environment, a Config's description); `null` in the impossible case that it does not
/// serialize.
pub(crate) fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

#[cfg(test)]
mod tests {
    use super::utc_timestamp;
    use crate::{KeptHandle, Store};
    use tlslab_core::*;

    fn sample(trial: usize, agent: u32) -> Record {
        let mut sample = Sample::builder()
            .trial(trial)
            .agent(agent)
            .started_at(u64::from(agent))
            .event(Event::Start, 0)
            .event(Event::HandshakeDone, 1_000 + u64::from(agent));
        if agent == 0 {
            sample = sample.server_software("lab/1");
        }
        Record::Sample(Box::new(sample.build()))
    }

    fn trial(index: usize, attempted: u64) -> Record {
        Record::Trial(TrialRecord {
            trial: Trial {
                index,
                config: 0,
                round: 1,
                warmup: false,
                handshakes: attempted,
                time_limit: None,
            },
            concurrency: 1,
            started_at: 0,
            duration_ns: 1,
            attempted,
            server: None,
            client: Usage::default(),
            link: None,
            server_client_verifications: None,
        })
    }

    #[test]
    fn counts_from_one_pass_match_the_queries_they_replace() {
        // `ORDER BY` and the value at len / 2, as `median_bytes` takes it.
        assert_eq!(
            Store::median_count(&[300.0, 100.0, 200.0, 400.0]),
            Some(300)
        );
        assert_eq!(Store::median_count(&[]), None);
        assert_eq!(
            Store::count_statuses(&[404.0, 200.0, 200.0]),
            [(200, 2), (404, 1)]
        );
    }

    /// A store written by a sink from `records` (a capture's run of one Config), and its
    /// path; `records` is given the sink to write into.
    fn written(name: &str, records: impl FnOnce(&mut dyn Sink)) -> std::path::PathBuf {
        written_keeping(name, None, records).0
    }

    /// [`written`], its sink keeping values within `keep` bytes (when given), and where it
    /// left them.
    fn written_keeping(
        name: &str,
        keep: Option<usize>,
        records: impl FnOnce(&mut dyn Sink),
    ) -> (std::path::PathBuf, KeptHandle) {
        let experiment = Experiment {
            handshakes: 1,
            warmup: 0,
            ..Experiment::default()
        };
        let config = experiment
            .configs()
            .unwrap()
            .remove(0)
            .record("192.0.2.1:443".into(), None);
        let path = std::env::temp_dir().join(format!("tlslab-{name}-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut sink = Store::create(&path).unwrap().into_sink();
        let handle = KeptHandle::default();
        if let Some(limit) = keep {
            sink.keep_values(handle.clone(), limit);
        }
        sink.begin(&RunInfo {
            source: Source::Pcap {
                files: vec!["test.pcap".into()],
            },
            experiment: None,
            plan: None,
            configs: vec![config],
            environment: Environment {
                tool_version: "0.1.0".into(),
                commit: "test".into(),
                rustls_version: "n/a".into(),
                crypto_provider: "n/a".into(),
                openssl_version: None,
                cpu_model: "any".into(),
                cores: 1,
                kernel: "any".into(),
                hostname: "any".into(),
                network: "capture".into(),
                name_resolution: Vec::new(),
                wire_clock: None,
            },
            command_line: vec![],
            started_at_unix_ns: 0,
        })
        .unwrap();
        records(&mut sink);
        sink.finish(&RunEnd {
            complete: true,
            reason: None,
            duration_ns: 1,
            attempted: 12,
            errors: 0,
        })
        .unwrap();
        (path, handle)
    }

    /// Requests of every shape a summary reads: the first on its connection (connect,
    /// handshake, response), later ones on kept connections (a response alone), failures
    /// with and without an error class, warm-up ones, and a second Config.
    fn request(index: u32) -> Record {
        let Record::Sample(mut sample) = sample(index as usize / 10, index) else {
            unreachable!()
        };
        let opened = index.is_multiple_of(5);
        let mut timeline = Timeline::default();
        timeline.set(Event::Start, 0);
        if opened {
            timeline.set(Event::TcpConnected, 100 + u64::from(index));
            timeline.set(Event::ClientHelloSent, 150);
            timeline.set(Event::ServerHelloReceived, 400);
            timeline.set(Event::HandshakeDone, 900 + u64::from(index));
            // Mostly one suite, and a group on some: a most frequent negotiation to find.
            sample.negotiated.version = Some("1.3".into());
            sample.negotiated.suite = Some(if index.is_multiple_of(3) { "A" } else { "B" }.into());
            sample.negotiated.group = index.is_multiple_of(2).then(|| "x25519".into());
            // Resumed or not, early data accepted or not, and ECH statuses, to be counted.
            sample.negotiated.resumed = Some(index % 3 == 1);
            sample.negotiated.early_data = (!index.is_multiple_of(4)).then_some(index % 4 == 1);
            sample.negotiated.ech = match index % 4 {
                0 => None,
                1 => Some(tlslab_core::EchStatus::Accepted),
                _ => Some(tlslab_core::EchStatus::Grease),
            };
        }
        timeline.set(Event::FirstByte, 2_000 + 7 * u64::from(index));
        sample.timeline = timeline;
        sample.config = usize::from(index % 7 == 6);
        sample.warmup = index % 11 == 10;
        sample.connection = Some(ConnectionUse {
            id: u64::from(index / 5),
            request: index % 5 + 1,
        });
        match index % 9 {
            4 => {
                sample.outcome = Outcome::Error;
                sample.error = Some(ErrorClass::Timeout);
            }
            8 => sample.outcome = Outcome::Error,
            _ => {
                sample
                    .timeline
                    .set(Event::ResponseDone, 3_000 + 11 * u64::from(index));
                sample.response = Some(Response {
                    status: Some(if index.is_multiple_of(13) { 404 } else { 200 }),
                    body_bytes: u64::from(index % 4) * 100,
                });
                sample.response_wire_bytes = Some(200 + u64::from(index));
            }
        }
        Record::Sample(sample)
    }

    #[test]
    fn kept_values_answer_the_summaries_reads_as_the_file_does() {
        let (path, kept) = written_keeping("kept", Some(crate::KEPT_BYTES), |sink| {
            for index in 0..200 {
                sink.record(request(index)).unwrap();
                if index % 64 == 63 {
                    sink.flush().unwrap();
                }
            }
        });
        let kept = kept.get().expect("kept");
        let file = Store::open(&path).unwrap();
        let memory = Store::open(&path).unwrap().with_kept(Some(kept));
        let names: Vec<&str> = crate::MEASURED_COUNTS
            .into_iter()
            .chain(["handshake", "ttfb", "total", "response_done"])
            .chain(Phase::PARTS.iter().map(|phase| phase.name()))
            .collect();
        // The requests read: the successful ones in order, the failures in any order.
        let requests = |store: &Store, config: i64| {
            let mut requests = Vec::new();
            store
                .for_each_request(config, |request| requests.push(request))
                .unwrap();
            let (ok, mut failed): (Vec<_>, Vec<_>) =
                requests.into_iter().partition(|request| request.ok);
            failed.sort_by_key(|request| format!("{request:?}"));
            (ok, failed)
        };
        for config in [0, 1, 2] {
            let values = file.phases_values(config, &names).unwrap();
            assert_eq!(memory.phases_values(config, &names).unwrap(), values);
            assert_eq!(requests(&memory, config), requests(&file, config));
            // Each count the summaries read, from memory as from the file.
            macro_rules! same {
                ($($read:ident),*) => {$(
                    assert_eq!(
                        memory.$read(config).unwrap(),
                        file.$read(config).unwrap(),
                        stringify!($read)
                    );
                )*};
            }
            same!(
                negotiated,
                outcome_counts,
                resumption_counts,
                early_data_counts,
                ech_counts
            );
            // One name at a time, in another order, and a column not kept: the file's.
            for name in ["total", "tcp_connect", "client_hello_sent"] {
                assert_eq!(
                    memory.phase_values(config, name).unwrap(),
                    file.phase_values(config, name).unwrap(),
                    "{name}"
                );
            }
        }
        // Not vacuous: Config 0's requests include each kind.
        let (ok, failed) = requests(&file, 0);
        assert!(ok.iter().any(|r| r.handshake_done.is_some()));
        assert!(ok.iter().any(|r| r.connection_request > Some(1)));
        assert!(ok.iter().any(|r| r.status == Some(404)));
        assert!(failed.iter().any(|r| r.error.is_some()));
        assert!(failed.iter().any(|r| r.error.is_none()));
        assert!(!file.phase_values(1, "handshake").unwrap().is_empty());
        let (resumed, full) = file.resumption_counts(0).unwrap();
        assert!(resumed > 0 && full > 0);
        let (accepted, rejected) = file.early_data_counts(0).unwrap();
        assert!(accepted > 0 && rejected > 0);
        assert_eq!(file.ech_counts(0).unwrap().len(), 2);
        // Failures without a class are errors, not successes.
        let outcomes = file.outcome_counts(0).unwrap();
        let count = |class: &str| outcomes.iter().find(|(c, _)| c == class).map(|(_, n)| *n);
        let (ok, failed) = requests(&file, 0);
        assert_eq!(count("ok"), Some(ok.len() as i64));
        assert_eq!(
            count(crate::UNCLASSIFIED),
            Some(failed.iter().filter(|r| r.error.is_none()).count() as i64)
        );
        assert_eq!(
            count("timeout"),
            Some(failed.iter().filter(|r| r.error.is_some()).count() as i64)
        );
        assert_eq!(
            file.negotiated(0).unwrap().unwrap().suite.as_deref(),
            Some("B")
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn values_past_their_limit_are_not_kept_and_the_summaries_read_the_file() {
        let (path, kept) = written_keeping("kept-limit", Some(2_000), |sink| {
            for index in 0..200 {
                sink.record(request(index)).unwrap();
            }
        });
        assert!(kept.get().is_none());
        std::fs::remove_file(&path).unwrap();
        // Within it, they are.
        let (path, kept) = written_keeping("kept-within", Some(1 << 20), |sink| {
            for index in 0..200 {
                sink.record(request(index)).unwrap();
            }
        });
        assert!(kept.get().is_some());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn addresses_are_stored_as_their_text_however_many_there_are() {
        // More client addresses than are known at once: some are forgotten mid-batch.
        let clients = 1_500u16;
        let server: std::net::SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let path = written("addresses", |sink| {
            for index in 0..clients {
                let Record::Sample(mut sample) = sample(0, u32::from(index)) else {
                    unreachable!()
                };
                sample.client_address =
                    Some(([10, 0, (index >> 8) as u8, index as u8], 40_000 + index).into());
                sample.server_address = Some(server);
                sink.record(Record::Sample(sample)).unwrap();
                if index % 700 == 699 {
                    sink.flush().unwrap();
                }
            }
        });
        let connection = rusqlite::Connection::open(&path).unwrap();
        let mut statement = connection
            .prepare("SELECT agent, client, server FROM samples ORDER BY id")
            .unwrap();
        let rows: Vec<(u16, String, String)> = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), usize::from(clients));
        for (agent, client, stored_server) in rows {
            assert_eq!(
                client,
                format!("10.0.{}.{}:{}", agent >> 8, agent & 0xff, 40_000 + agent)
            );
            assert_eq!(stored_server, "[2001:db8::1]:443");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn samples_written_together_keep_their_order_around_other_records() {
        let path = written("sink", |sink| {
            // Two trials of samples, each followed by its trial record, a flush in between.
            for agent in 0..5 {
                sink.record(sample(0, agent)).unwrap();
            }
            sink.record(trial(0, 5)).unwrap();
            for agent in 5..12 {
                sink.record(sample(1, agent)).unwrap();
                if agent == 8 {
                    sink.flush().unwrap();
                }
            }
            sink.record(trial(1, 7)).unwrap();
        });
        let store = Store::open(&path).unwrap();
        let config = &store.configs().unwrap()[0];
        let expected: Vec<f64> = (0..12).map(|agent| f64::from(1_000 + agent)).collect();
        assert_eq!(
            store.phase_values(config.id, "handshake").unwrap(),
            expected
        );
        assert_eq!(store.sample_count().unwrap(), 12);
        assert_eq!(
            store.server_software(config.id).unwrap().as_deref(),
            Some("lab/1")
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn samples_that_fill_different_columns_are_stored_as_given_and_counted() {
        // Samples that fill different sets of columns in turn (an error, a negotiated
        // version, a `Server` field): each is inserted naming only the columns it fills, so
        // every other column must read back NULL, and none may take a neighbour's value.
        let varied = |agent: u32| {
            let Record::Sample(mut sample) = sample(0, agent) else {
                unreachable!()
            };
            if agent % 4 == 3 {
                sample.outcome = Outcome::Error;
                sample.error = Some(ErrorClass::Timeout);
                sample.error_detail = Some(format!("agent {agent}"));
            }
            if !agent.is_multiple_of(3) {
                sample.negotiated.version = Some(if agent < 6 { "1.3" } else { "1.2" }.into());
                sample.negotiated.suite = Some("TLS13_AES_128_GCM_SHA256".into());
            }
            Record::Sample(sample)
        };
        let path = written("columns", |sink| {
            for agent in 0..12 {
                sink.record(varied(agent)).unwrap();
            }
        });
        let store = Store::open(&path).unwrap();
        let config = &store.configs().unwrap()[0];
        let connection = rusqlite::Connection::open(&path).unwrap();
        let mut statement = connection
            .prepare(
                "SELECT agent, outcome, error, error_detail, version, suite, \"group\", \
                 server_software, handshake_done FROM samples ORDER BY id",
            )
            .unwrap();
        type Stored = (
            u32,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
        );
        let rows: Vec<Stored> = statement
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get(7)?,
                    row.get(8)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 12);
        for (agent, row) in (0u32..).zip(&rows) {
            let failed = agent % 4 == 3;
            let version =
                (!agent.is_multiple_of(3)).then_some(if agent < 6 { "1.3" } else { "1.2" });
            assert_eq!(row.0, agent);
            assert_eq!(row.1, if failed { "error" } else { "ok" });
            assert_eq!(row.2.as_deref(), failed.then_some("timeout"));
            assert_eq!(row.3, failed.then(|| format!("agent {agent}")));
            assert_eq!(row.4.as_deref(), version);
            assert_eq!(row.5.is_some(), version.is_some());
            assert_eq!(row.6, None);
            assert_eq!(row.7.as_deref(), (agent == 0).then_some("lab/1"));
            assert_eq!(row.8, Some(1_000 + i64::from(agent)));
        }
        // Nine ok and three timeouts, the most frequent first.
        assert_eq!(
            store.outcome_counts(config.id).unwrap(),
            [("ok".to_string(), 9), ("timeout".to_string(), 3)]
        );
        // 1.3 on agents 1, 2, 4, 5; 1.2 on 7, 8, 10, 11: a tie, so the first in order.
        let negotiated = store.negotiated(config.id).unwrap().unwrap();
        assert_eq!(negotiated.version, "1.2");
        assert_eq!(negotiated.group, None);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn timestamps_are_iso_utc() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            utc_timestamp(1_795_000_000 * 1_000_000_000),
            "2026-11-18T11:06:40Z"
        );
        assert_eq!(
            utc_timestamp(951_782_400 * 1_000_000_000),
            "2000-02-29T00:00:00Z"
        );
    }
}
