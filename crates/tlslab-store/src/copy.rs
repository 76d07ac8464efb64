//! `tlslab store ls` and `tlslab store copy`: the runs a store holds, and runs copied
//! between any two stores (a SQLite file or a PostgreSQL database, either way round).
//!
//! A copy goes table by table and column by column as [`tables`] defines them (by name, so a
//! column added to the schema is copied with no change here), streaming: the source's rows
//! are read one at a time (a SQLite statement stepped, PostgreSQL's rows as they arrive) and
//! written as they come (a binary `COPY` into PostgreSQL, a prepared insert into SQLite), so
//! memory stays flat whatever the run's size. Each run goes in one transaction, so a copy
//! that fails leaves nothing of that run behind.
//!
//! Keys: a PostgreSQL database numbers the copied run and its samples anew (samples in the
//! source's order); a SQLite file's run is run 1; Configs and trials keep their ids, which
//! are the producer's indexes in both. A run is the same run when its start
//! (`started_at_unix_ns`), commit, command line and environment are: copying it into a
//! database that holds it already copies nothing ([`RunCopy::AlreadyThere`]).

use std::cell::RefCell;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{IsNull, ToSql, Type};

use crate::columns::quoted;
use crate::database::{Connection, Parameter, Row, Value};
use crate::postgres::PostgresError;
use crate::schema::{tables, Dialect, Table};
use crate::{Location, Store, StoreError};

/// One run of a store, as `tlslab store ls` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunListing {
    /// The run's id in its store (a SQLite file's one run is 1).
    pub id: i64,
    /// When it started, UTC (`2026-11-25T15:53:29Z`).
    pub started_at: String,
    /// Where its samples came from: `active`, `pcap` or `capture`.
    pub source: String,
    /// The files read or the interface captured on; `None` for an active run.
    pub source_detail: Option<String>,
    /// The run recorded its end as planned (a run still being written, interrupted or cut
    /// off is not complete).
    pub complete: bool,
    /// The command line as stored: a JSON array of its arguments.
    pub command_line: String,
    /// The samples it holds.
    pub samples: u64,
    /// Its size in bytes. A SQLite file: the whole file (its one run, and any scans beside
    /// it). A PostgreSQL database: an estimate, the on-disk size of the tables that hold
    /// runs (samples, trials, Configs, replays, with their indexes) shared out between the
    /// runs by their sample counts; summing every row's size instead would read every sample.
    pub bytes: u64,
}

/// What [`copy`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOutcome {
    /// Each run asked for, in the source's order.
    pub runs: Vec<RunCopy>,
    /// Stored scans copied (a whole store's copy only).
    pub scans: u64,
    /// Stored scans the target held already, not copied again.
    pub scans_already_there: u64,
}

/// What became of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunCopy {
    /// Copied whole, under a new id.
    Copied {
        /// Its id in the source.
        from: i64,
        /// Its id in the target.
        to: i64,
        /// The samples copied.
        samples: u64,
    },
    /// A spool's records appended to the run it was spooled from (a run whose database went
    /// away, `postgres/spool.rs`).
    Appended {
        /// Its id in the spool.
        from: i64,
        /// The run in the database they now belong to.
        to: i64,
        /// The samples appended.
        samples: u64,
    },
    /// The target holds this run already, with as many samples (or this spool's records,
    /// uploaded before): nothing was copied.
    AlreadyThere {
        /// Its id in the source.
        from: i64,
        /// Its id in the target.
        run: i64,
        /// The samples both hold.
        samples: u64,
    },
}

/// A copy refused before anything was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyRefused {
    /// Several runs and no `--run`, into a SQLite file, which holds one run.
    #[error("{store} holds {} runs and a SQLite file holds one", runs.len())]
    SeveralRuns {
        /// The source, as shown to users (no password).
        store: String,
        /// Its runs' ids.
        runs: Vec<i64>,
    },
    /// The database holds the same run (same start, commit, command line and environment)
    /// with other contents: a copy made while the run was still being written, or the run's
    /// own writing cut short. Neither is replaced nor added beside it.
    #[error(
        "{database} holds run {run}, the same run as {store}'s run {from}, with {held} samples ({}) where {store} has {samples} ({})",
        completeness(*held_complete),
        completeness(*complete)
    )]
    Differs {
        /// The target, as shown to users.
        database: String,
        /// The run in the target.
        run: i64,
        /// The source, as shown to users.
        store: String,
        /// The run in the source.
        from: i64,
        /// The samples the target holds of it.
        held: u64,
        /// Whether the target's run is complete.
        held_complete: bool,
        /// The samples the source holds of it.
        samples: u64,
        /// Whether the source's run is complete.
        complete: bool,
    },
    /// A spool given with a database that does not hold its run.
    #[error(
        "{spool} is the spool of run {run} of {database}, and {target} does not hold that run"
    )]
    NotTheSpoolsRun {
        /// The spool.
        spool: String,
        /// The database it was spooled from, as the run showed it.
        database: String,
        /// Its run there.
        run: i64,
        /// The database given.
        target: String,
    },
    /// A spool a run is still writing (its database still away).
    #[error("{spool} is being written by a run still waiting for its database")]
    SpoolInUse {
        /// The spool.
        spool: String,
    },
}

fn completeness(complete: bool) -> &'static str {
    if complete {
        "complete"
    } else {
        "incomplete"
    }
}

impl CopyRefused {
    /// What the user can do about it.
    pub fn hint(&self) -> String {
        match self {
            CopyRefused::SeveralRuns { runs, .. } => {
                let mut ids: Vec<String> = runs.iter().take(10).map(i64::to_string).collect();
                if runs.len() > ids.len() {
                    ids.push("…".into());
                }
                format!(
                    "copy one run into each file with --run ID (ID one of {}; `tlslab store ls` lists them), or copy them all into a PostgreSQL database",
                    ids.join(", ")
                )
            }
            CopyRefused::Differs { run, .. } => format!(
                "nothing was copied; compare the two with `tlslab store ls`, then copy into another database, or remove run {run} from this one and copy again"
            ),
            CopyRefused::NotTheSpoolsRun { .. } => "give the URL of the database the run was writing (its password, where the run showed ***), or copy the spool into a new file".into(),
            CopyRefused::SpoolInUse { .. } => "the run uploads its spool itself when the database is back; upload it with `tlslab store copy` once the run has ended".into(),
        }
    }
}

/// Every run the store at `location` holds, by id: a SQLite file's one run (none for a
/// store of scans alone), or each run of a PostgreSQL database. A database without
/// tlslab's tables is [`StoreError::NoRun`].
pub fn list_runs(location: &Location) -> Result<Vec<RunListing>, StoreError> {
    Source::open(location)?.listings()
}

/// Copies runs from `from` to `to`: every run (and the stored scans), or the one `run` names.
/// `progress` is told the samples copied so far, every [`PROGRESS_EVERY`] samples and at each
/// run's end.
///
/// A SQLite target must be a new file ([`StoreError::Exists`] otherwise) and takes one run
/// ([`CopyRefused::SeveralRuns`] when the source has more and `run` is none); it is removed
/// again if the copy fails. Into PostgreSQL each run is one transaction; a run the database
/// holds already is not copied again ([`RunCopy::AlreadyThere`]), and one it holds with
/// other contents is refused ([`CopyRefused::Differs`]) before anything is written.
///
/// A spool (the local store a run wrote while its database was away) given with a database
/// is appended to the run it belongs to, once ([`RunCopy::Appended`]).
pub fn copy(
    from: &Location,
    to: &Location,
    run: Option<i64>,
    progress: &mut dyn FnMut(u64),
) -> Result<CopyOutcome, StoreError> {
    if let Location::File(path) = to {
        if path.exists() {
            return Err(StoreError::Exists { path: path.clone() });
        }
    }
    if let (Location::File(path), Location::Database(settings)) = (from, to) {
        if let Some(spooled) = spooled(path) {
            return upload_spool(path, spooled, settings, run, progress);
        }
    }
    let mut source = Source::open(from)?;
    let listings = source.listings()?;
    let chosen: Vec<RunListing> = match run {
        Some(id) => vec![listings
            .into_iter()
            .find(|listing| listing.id == id)
            .ok_or_else(|| StoreError::NoRun {
                database: source.name.clone(),
                run: Some(id),
            })?],
        None => listings,
    };
    // Stored scans belong to the store, not to a run: a whole store's copy takes them.
    let with_scans = run.is_none();
    let scans = if with_scans { source.count_scans()? } else { 0 };
    if chosen.is_empty() && scans == 0 {
        return Err(StoreError::NoRun {
            database: source.name.clone(),
            run: None,
        });
    }
    match to {
        Location::File(path) => {
            if chosen.len() > 1 {
                return Err(CopyRefused::SeveralRuns {
                    store: source.name.clone(),
                    runs: chosen.iter().map(|listing| listing.id).collect(),
                }
                .into());
            }
            let store = Store::create(path)?;
            let outcome = into_file(&mut source, store, chosen.first(), with_scans, progress);
            if outcome.is_err() {
                // The file is the copy's own, made above: nothing of it is left.
                remove_store(path);
            }
            outcome
        }
        Location::Database(settings) => {
            let database = settings.to_string();
            let mut client = settings.connect()?;
            crate::postgres::prepare(&mut client, &database)?;
            let mut target = Database {
                client,
                name: database,
            };
            // Every run that would be refused is refused before any is copied.
            for listing in &chosen {
                target.check_same(&mut source, listing)?;
            }
            let mut outcome = CopyOutcome {
                runs: Vec::new(),
                scans: 0,
                scans_already_there: 0,
            };
            let mut copied = 0;
            for listing in &chosen {
                let done = target.copy_run(&mut source, listing, &mut |samples| {
                    progress(copied + samples)
                })?;
                if let RunCopy::Copied { samples, .. } = done {
                    copied += samples;
                }
                outcome.runs.push(done);
            }
            if with_scans && scans > 0 {
                (outcome.scans, outcome.scans_already_there) = target.copy_scans(&source)?;
            }
            Ok(outcome)
        }
    }
}

/// How often [`copy`] reports its progress, in samples.
pub const PROGRESS_EVERY: u64 = 10_000;

/// The store copied from: read in one snapshot (a read transaction), one run at a time.
struct Source {
    connection: Connection,
    /// As shown to users (no password).
    name: String,
}

impl Source {
    fn open(location: &Location) -> Result<Source, StoreError> {
        let name = location.to_string();
        match location {
            Location::File(path) => {
                // Opened as every reader opens it: an older store upgraded, a cut-off run
                // recovered.
                let Store { connection, .. } = Store::open(path)?;
                if let Connection::Sqlite(sqlite) = &connection {
                    sqlite.execute_batch("BEGIN")?;
                }
                Ok(Source { connection, name })
            }
            Location::Database(settings) => {
                let mut client = settings.connect()?;
                if crate::postgres::schema_version(&mut client, &name)?.is_none() {
                    return Err(StoreError::NoRun {
                        database: name,
                        run: None,
                    });
                }
                // One snapshot for the listing and every table of every run: a run being
                // written meanwhile is copied as it was at this moment, its samples and its
                // count alike.
                client
                    .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .map_err(query_failed)?;
                Ok(Source {
                    connection: Connection::Postgres {
                        client: Box::new(RefCell::new(client)),
                        run: 0,
                    },
                    name,
                })
            }
        }
    }

    fn dialect(&self) -> Dialect {
        match self.connection {
            Connection::Sqlite(_) => Dialect::Sqlite,
            Connection::Postgres { .. } => Dialect::Postgres,
        }
    }

    /// Reads the run `id` from here on (a SQLite file has one run: the reads ignore it).
    fn select_run(&mut self, id: i64) {
        if let Connection::Postgres { run, .. } = &mut self.connection {
            *run = id;
        }
    }

    fn listings(&self) -> Result<Vec<RunListing>, StoreError> {
        let mut listings = self.connection.rows(
            "SELECT id, started_at, source, source_detail, complete, command_line FROM runs ORDER BY id",
            &[],
            |row| {
                Ok(RunListing {
                    id: row.get(0)?,
                    started_at: row.get(1)?,
                    source: row.get(2)?,
                    source_detail: row.get(3)?,
                    complete: row.get(4)?,
                    command_line: row.get(5)?,
                    samples: 0,
                    bytes: 0,
                })
            },
        )?;
        let counts: Vec<(i64, i64)> = self.connection.rows(
            "SELECT run_id, COUNT(*) FROM samples GROUP BY run_id",
            &[],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let all: u64 = counts.iter().map(|(_, count)| *count as u64).sum();
        match self.dialect() {
            // One run a file: every sample is its own, and so is the file.
            Dialect::Sqlite => {
                let bytes = self.connection.one(
                    "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                    &[],
                    |row| row.get::<i64>(0),
                )?;
                for listing in &mut listings {
                    listing.samples = all;
                    listing.bytes = bytes.max(0) as u64;
                }
            }
            Dialect::Postgres => {
                let bytes: i64 = self.connection.one(
                    "SELECT (pg_total_relation_size('samples') + pg_total_relation_size('trials') + pg_total_relation_size('configs') + pg_total_relation_size('replays'))::BIGINT",
                    &[],
                    |row| row.get(0),
                )?;
                for listing in &mut listings {
                    listing.samples = counts
                        .iter()
                        .find(|(run, _)| *run == listing.id)
                        .map_or(0, |(_, count)| *count as u64);
                    listing.bytes = if all == 0 {
                        0
                    } else {
                        (bytes.max(0) as u128 * u128::from(listing.samples) / u128::from(all))
                            as u64
                    };
                }
            }
        }
        Ok(listings)
    }

    fn count_scans(&self) -> Result<u64, StoreError> {
        let count: i64 = self
            .connection
            .one("SELECT COUNT(*) FROM scans", &[], |row| row.get(0))?;
        Ok(count as u64)
    }

    /// The columns `table` has here: an older SQLite store has been upgraded on opening, so
    /// a column is missing only from a store written by hand or damaged.
    fn columns(&self, table: &str) -> Result<HashSet<String>, StoreError> {
        let sql = match self.connection {
            Connection::Sqlite(_) => "SELECT name FROM pragma_table_info(?1)",
            Connection::Postgres { .. } => {
                "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?1"
            }
        };
        let names = self
            .connection
            .rows(sql, &[Parameter::Text(table)], |row| row.get::<String>(0))?;
        Ok(names.into_iter().collect())
    }

    /// The values of the run's row, as `plan` reads them.
    fn run_row(&self, plan: &TablePlan, id: i64) -> Result<Vec<Value>, StoreError> {
        let values =
            self.connection
                .first(&plan.select(&format!("WHERE id = {id}")), &[], |row| {
                    (0..plan.read).map(|index| row.value(index)).collect()
                })?;
        values.ok_or_else(|| StoreError::NoRun {
            database: self.name.clone(),
            run: Some(id),
        })
    }
}

/// How one table is copied: the columns read from the source and written to the target.
struct TablePlan {
    table: &'static str,
    /// The target's names of the fixed values written first (the run's key), then of the
    /// values read.
    names: Vec<&'static str>,
    /// What is read from the source: each column by name, or `NULL` where it has none.
    reads: Vec<String>,
    /// How many values are read.
    read: usize,
    /// The PostgreSQL type of each written value.
    types: Vec<Type>,
    /// `ORDER BY` for the source's rows.
    order: &'static str,
}

/// The key columns a copy keeps as the source has them: a Config's and a trial's ids are
/// the producer's indexes, in a file and a database alike, and samples, trials and replays
/// refer to them. The other keys are the run's (`run_id`, written as the copy's run) or
/// numbered by the target (`id` of runs, samples and scans).
fn kept_keys(table: &str) -> &'static [&'static str] {
    match table {
        "configs" => &["id"],
        "trials" => &["id", "config_id"],
        "samples" => &["config_id", "trial_id"],
        "replays" => &["config_id"],
        _ => &[],
    }
}

/// The run's key a row gets in `dialect`'s target: runs their own `id`, rows of a run its
/// `run_id` (a SQLite file's replays have none: it holds one run), scans none.
fn run_key(table: &str, dialect: Dialect) -> Option<&'static str> {
    match (table, dialect) {
        ("runs", _) => Some("id"),
        ("configs" | "trials" | "samples", _) | ("replays", Dialect::Postgres) => Some("run_id"),
        _ => None,
    }
}

impl TablePlan {
    fn new(table: &Table, source: &Source, target: Dialect) -> Result<TablePlan, StoreError> {
        let present = source.columns(table.name)?;
        let kept = kept_keys(table.name);
        let mut names: Vec<&'static str> = run_key(table.name, target).into_iter().collect();
        let mut types = vec![Type::INT8; names.len()];
        names.extend(kept);
        types.extend(kept.iter().map(|_| Type::INT8));
        names.extend(table.columns.iter().map(|(name, _)| *name));
        types.extend(table.columns.iter().map(|(_, sql)| postgres_type(sql)));
        let reads: Vec<String> = kept
            .iter()
            .chain(table.columns.iter().map(|(name, _)| name))
            .map(|name| match present.contains(*name) {
                true => quoted(name),
                false => "NULL".into(),
            })
            .collect();
        Ok(TablePlan {
            table: table.name,
            names,
            read: reads.len(),
            reads,
            types,
            order: match table.name {
                "replays" => "config_id",
                _ => "id",
            },
        })
    }

    /// `SELECT` of the values read, with `condition`, in the table's order.
    fn select(&self, condition: &str) -> String {
        format!(
            "SELECT {} FROM {} {condition} ORDER BY {}",
            self.reads.join(", "),
            self.table,
            self.order
        )
    }

    /// `COPY` of every value written, in PostgreSQL's binary form.
    fn copy(&self) -> String {
        let names: Vec<String> = self.names.iter().map(|name| quoted(name)).collect();
        format!(
            "COPY {} ({}) FROM STDIN (FORMAT binary)",
            self.table,
            names.join(", ")
        )
    }

    /// The values of `self.names[..fixed]` are given; the rest come from the row.
    fn fixed(&self) -> usize {
        self.names.len() - self.read
    }

    /// The plan's column in the values read: the position of `name` in a row read.
    fn position(&self, name: &str) -> Option<usize> {
        let fixed = self.fixed();
        self.names[fixed..]
            .iter()
            .position(|column| *column == name)
    }
}

/// Every table a run's rows are in, in the order a copy writes them (a Config before its
/// trials: PostgreSQL checks that key).
const RUN_TABLES: [&str; 4] = ["configs", "trials", "samples", "replays"];

fn table(name: &str) -> Table {
    tables()
        .into_iter()
        .find(|table| table.name == name)
        .unwrap_or_else(|| unreachable!("the schema has a {name} table"))
}

/// A column's PostgreSQL type in a `COPY`, from the SQL type the schema gives it.
fn postgres_type(sql: &str) -> Type {
    match sql.split(' ').next() {
        Some("INTEGER") => Type::INT8,
        Some("REAL") => Type::FLOAT8,
        _ => Type::TEXT,
    }
}

/// Hands `write` each of the source's rows of `plan`'s table (the open run's, for a table of
/// runs' rows) as the values to write: `fixed` first, then those read. Counts the rows, and
/// tells `progress` of samples every [`PROGRESS_EVERY`].
fn each_row(
    source: &Source,
    plan: &TablePlan,
    fixed: &[Value],
    progress: &mut dyn FnMut(u64),
    write: &mut dyn FnMut(&[Bound<'_>]) -> Result<(), StoreError>,
) -> Result<u64, StoreError> {
    let condition = match plan.table {
        "scans" => "",
        _ => "WHERE {run}1 = 1",
    };
    let fixed = &fixed[..plan.fixed()];
    let mut rows: u64 = 0;
    source
        .connection
        .each(&plan.select(condition), &[], |row| {
            let values = read_values(plan, row)?;
            let bound: Vec<Bound<'_>> = fixed.iter().chain(&values).map(Bound).collect();
            write(&bound)?;
            rows += 1;
            if plan.table == "samples" && rows.is_multiple_of(PROGRESS_EVERY) {
                progress(rows);
            }
            Ok(())
        })?;
    Ok(rows)
}

/// The database and run a spool belongs to, and whether it was uploaded; `None` for a file
/// that is not a spool (or not a store: opening it as one says why).
fn spooled(path: &Path) -> Option<(String, i64, bool)> {
    if !path.is_file() {
        return None;
    }
    crate::postgres::spool::marked(path).ok().flatten()
}

/// Appends the spool at `path` to its run in the database `settings` reaches (the one it was
/// spooled from: the run there must be the spool's run), once.
fn upload_spool(
    path: &Path,
    (spooled_from, run, uploaded): (String, i64, bool),
    settings: &crate::postgres::connection::Settings,
    asked: Option<i64>,
    progress: &mut dyn FnMut(u64),
) -> Result<CopyOutcome, StoreError> {
    let shown = path.display().to_string();
    // Taken before the spool is read, and held until it is uploaded.
    let _lock = crate::recovery::RunLock::take(path).map_err(|_| CopyRefused::SpoolInUse {
        spool: shown.clone(),
    })?;
    let (listing, plan, values) = {
        let source = Source::open(&Location::File(path.to_path_buf()))?;
        let listing = source
            .listings()?
            .into_iter()
            .find(|listing| asked.is_none_or(|asked| asked == listing.id))
            .ok_or_else(|| StoreError::NoRun {
                database: shown.clone(),
                run: asked,
            })?;
        let plan = TablePlan::new(&table("runs"), &source, Dialect::Postgres)?;
        let values = source.run_row(&plan, listing.id)?;
        (listing, plan, values)
        // The spool's read ends here: the upload writes its mark.
    };
    let target = settings.to_string();
    let not_its_run = || CopyRefused::NotTheSpoolsRun {
        spool: shown.clone(),
        database: spooled_from.clone(),
        run,
        target: target.clone(),
    };
    let mut client = settings.connect()?;
    if crate::postgres::schema_version(&mut client, &target)?.is_none() {
        return Err(not_its_run().into());
    }
    let failed = refused(&target, "looking for the spool's run");
    let mut transaction = client.transaction().map_err(&failed)?;
    let bound: Vec<Bound<'_>> = values.iter().map(Bound).collect();
    let found = same_row_of(
        &mut transaction,
        "runs",
        &IDENTITY,
        &plan,
        &bound,
        Some(run),
    )
    .map_err(&failed)?;
    drop(transaction);
    if found.is_none() {
        return Err(not_its_run().into());
    }
    let done = match uploaded {
        true => RunCopy::AlreadyThere {
            from: listing.id,
            run,
            samples: listing.samples,
        },
        false => {
            let samples = crate::postgres::spool::upload(path, &mut client, run)?;
            progress(samples);
            RunCopy::Appended {
                from: listing.id,
                to: run,
                samples,
            }
        }
    };
    Ok(CopyOutcome {
        runs: vec![done],
        scans: 0,
        scans_already_there: 0,
    })
}

/// Tells `progress` of a run's last samples, unless [`each_row`] just did.
fn progress_at_end(progress: &mut dyn FnMut(u64), samples: u64) {
    if samples == 0 || !samples.is_multiple_of(PROGRESS_EVERY) {
        progress(samples);
    }
}

/// The copy into a new SQLite file: its one run as run 1, and the scans.
fn into_file(
    source: &mut Source,
    store: crate::NewStore,
    listing: Option<&RunListing>,
    with_scans: bool,
    progress: &mut dyn FnMut(u64),
) -> Result<CopyOutcome, StoreError> {
    let crate::NewStore {
        mut connection,
        lock,
        path,
    } = store;
    let path = path.as_path();
    let unwritable = |source: rusqlite::Error| StoreError::Unwritable {
        path: path.to_path_buf(),
        hint: "check the free disk space and the file's permissions",
        source: Box::new(source),
    };
    // One transaction: a copy cut off leaves a store without the run, never half of it.
    let transaction = connection.transaction().map_err(unwritable)?;
    let copy_table = |source: &Source,
                      plan: &TablePlan,
                      fixed: &[Value],
                      progress: &mut dyn FnMut(u64)|
     -> Result<u64, StoreError> {
        let mut statement = transaction
            .prepare(&crate::sink::positional_insert(
                plan.table,
                &plan.names,
                "?",
            ))
            .map_err(unwritable)?;
        each_row(source, plan, fixed, progress, &mut |values| {
            statement
                .execute(rusqlite::params_from_iter(values))
                .map(drop)
                .map_err(unwritable)
        })
    };
    let mut runs = Vec::new();
    if let Some(listing) = listing {
        source.select_run(listing.id);
        let plan = TablePlan::new(&table("runs"), source, Dialect::Sqlite)?;
        let mut row = vec![Value::Integer(1)];
        row.extend(source.run_row(&plan, listing.id)?);
        transaction
            .execute(
                &crate::sink::positional_insert("runs", &plan.names, "?"),
                rusqlite::params_from_iter(row.iter().map(Bound)),
            )
            .map_err(unwritable)?;
        let mut samples = 0;
        for name in RUN_TABLES {
            let plan = TablePlan::new(&table(name), source, Dialect::Sqlite)?;
            let rows = copy_table(source, &plan, &[Value::Integer(1)], progress)?;
            if name == "samples" {
                samples = rows;
            }
        }
        progress_at_end(progress, samples);
        runs.push(RunCopy::Copied {
            from: listing.id,
            to: 1,
            samples,
        });
    }
    let mut scans = 0;
    if with_scans {
        let plan = TablePlan::new(&table("scans"), source, Dialect::Sqlite)?;
        scans = copy_table(source, &plan, &[], progress)?;
    }
    transaction
        .execute_batch(crate::schema::SAMPLES_INDEX)
        .map_err(unwritable)?;
    transaction.commit().map_err(unwritable)?;
    // As a run's store is left at its end: one self-contained file, no log beside it.
    connection
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .map_err(unwritable)?;
    drop(connection);
    drop(lock);
    Ok(CopyOutcome {
        runs,
        scans,
        scans_already_there: 0,
    })
}

/// Removes what a failed copy into a new file left (the file is the copy's own).
fn remove_store(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// The values of a row read by `plan`.
fn read_values(plan: &TablePlan, row: &Row<'_>) -> Result<Vec<Value>, StoreError> {
    (0..plan.read).map(|index| row.value(index)).collect()
}

/// The references a statement or a `COPY` takes.
fn references<'a>(values: &'a [Bound<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    values
        .iter()
        .map(|value| value as &(dyn ToSql + Sync))
        .collect()
}

/// A PostgreSQL target.
struct Database {
    client: postgres::Client,
    /// As shown to users (no password).
    name: String,
}

/// A run's identity: what makes two stored runs the same run.
const IDENTITY: [&str; 4] = [
    "started_at_unix_ns",
    "commit_id",
    "command_line",
    "environment",
];

/// A stored scan's identity, for the same purpose.
const SCAN_IDENTITY: [&str; 4] = ["scanned_at_unix_ns", "target", "address", "command_line"];

/// The advisory lock class copies take (with the run's start as the second key), so that two
/// copies of one run at once cannot both find it missing. ("tls" in ASCII.)
const COPY_LOCK: i32 = 0x0074_6c73;

/// An error of the statement that was `doing` something in `database`.
fn refused(database: &str, doing: &'static str) -> impl Fn(postgres::Error) -> StoreError {
    let database = database.to_string();
    move |source| {
        StoreError::Postgres(PostgresError::Statement {
            database: database.clone(),
            doing,
            source,
        })
    }
}

impl Database {
    /// Refuses the copy of `listing` when the database holds the same run with other
    /// contents.
    fn check_same(&mut self, source: &mut Source, listing: &RunListing) -> Result<(), StoreError> {
        source.select_run(listing.id);
        let plan = TablePlan::new(&table("runs"), source, Dialect::Postgres)?;
        let values = source.run_row(&plan, listing.id)?;
        let failed = refused(&self.name, "looking for the run");
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let found = same_run(&mut transaction, &plan, &values).map_err(&failed)?;
        check_found(found, listing, source, &self.name).map(drop)
    }

    /// Copies one run in one transaction, or finds it there already.
    fn copy_run(
        &mut self,
        source: &mut Source,
        listing: &RunListing,
        progress: &mut dyn FnMut(u64),
    ) -> Result<RunCopy, StoreError> {
        source.select_run(listing.id);
        let plan = TablePlan::new(&table("runs"), source, Dialect::Postgres)?;
        let values = source.run_row(&plan, listing.id)?;
        let name = self.name.clone();
        let failed = |doing| refused(&name, doing);
        let mut transaction = self
            .client
            .transaction()
            .map_err(failed("beginning the copy"))?;
        let start = plan
            .position("started_at_unix_ns")
            .and_then(|index| match values[index] {
                Value::Integer(start) => Some(start),
                _ => None,
            })
            .unwrap_or(0);
        transaction
            .execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&COPY_LOCK, &((start ^ (start >> 32)) as i32)],
            )
            .map_err(failed("locking the run"))?;
        let found =
            same_run(&mut transaction, &plan, &values).map_err(failed("looking for the run"))?;
        if let Some(run) = check_found(found, listing, source, &self.name)? {
            return Ok(RunCopy::AlreadyThere {
                from: listing.id,
                run,
                samples: listing.samples,
            });
        }
        let run: i64 = transaction
            .query_one("SELECT nextval(pg_get_serial_sequence('runs', 'id'))", &[])
            .map_err(failed("numbering the copied run"))?
            .get(0);
        let mut row = vec![Value::Integer(run)];
        row.extend(values);
        let bound: Vec<Bound<'_>> = row.iter().map(Bound).collect();
        transaction
            .execute(
                &crate::sink::positional_insert("runs", &plan.names, "$"),
                &references(&bound),
            )
            .map_err(failed("copying the run's row"))?;
        let mut samples = 0;
        for name in RUN_TABLES {
            let plan = TablePlan::new(&table(name), source, Dialect::Postgres)?;
            let copy = transaction
                .copy_in(&plan.copy())
                .map_err(failed("copying the run's rows"))?;
            let mut writer = BinaryCopyInWriter::new(copy, &plan.types);
            let rows = each_row(
                source,
                &plan,
                &[Value::Integer(run)],
                progress,
                &mut |values| {
                    writer
                        .write(&references(values))
                        .map_err(failed("copying the run's rows"))
                },
            )?;
            writer.finish().map_err(failed("copying the run's rows"))?;
            if name == "samples" {
                samples = rows;
            }
        }
        transaction
            .commit()
            .map_err(failed("committing the copied run"))?;
        progress_at_end(progress, samples);
        Ok(RunCopy::Copied {
            from: listing.id,
            to: run,
            samples,
        })
    }

    /// Copies the stored scans the database does not hold yet (the same start, target,
    /// address and command line), in one transaction: how many it copied and how many it
    /// held.
    fn copy_scans(&mut self, source: &Source) -> Result<(u64, u64), StoreError> {
        let plan = TablePlan::new(&table("scans"), source, Dialect::Postgres)?;
        let failed = refused(&self.name, "copying the stored scans");
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let insert = crate::sink::positional_insert("scans", &plan.names, "$");
        let (mut copied, mut there) = (0, 0);
        each_row(source, &plan, &[], &mut |_| {}, &mut |values| {
            if same_row(&mut transaction, "scans", &SCAN_IDENTITY, &plan, values)
                .map_err(&failed)?
                .is_some()
            {
                there += 1;
                return Ok(());
            }
            transaction
                .execute(&insert, &references(values))
                .map_err(&failed)?;
            copied += 1;
            Ok(())
        })?;
        transaction.commit().map_err(&failed)?;
        Ok((copied, there))
    }
}

/// The row of `table` in the database whose `identity` columns have the values of `values`
/// (a row read by `plan`): its id.
fn same_row(
    transaction: &mut postgres::Transaction<'_>,
    table: &str,
    identity: &[&str],
    plan: &TablePlan,
    values: &[Bound<'_>],
) -> Result<Option<i64>, postgres::Error> {
    same_row_of(transaction, table, identity, plan, values, None)
}

/// [`same_row`], among the rows whose id is `id` when one is given.
fn same_row_of(
    transaction: &mut postgres::Transaction<'_>,
    table: &str,
    identity: &[&str],
    plan: &TablePlan,
    values: &[Bound<'_>],
    id: Option<i64>,
) -> Result<Option<i64>, postgres::Error> {
    let mut conditions = Vec::new();
    let mut bound = Vec::new();
    let id = id.map(Value::Integer);
    if let Some(id) = &id {
        bound.push(Bound(id));
        conditions.push("id = $1".to_string());
    }
    for name in identity {
        let value = plan
            .position(name)
            .map_or(Bound(&Value::Null), |index| values[index]);
        bound.push(value);
        conditions.push(format!("{} = ${}", quoted(name), bound.len()));
    }
    let row = transaction.query_opt(
        &format!(
            "SELECT id FROM {table} WHERE {} ORDER BY id LIMIT 1",
            conditions.join(" AND ")
        ),
        &references(&bound),
    )?;
    Ok(row.map(|row| row.get(0)))
}

/// The run in the database that is the same as `listing` (read by `plan` as `values`):
/// its id, whether it is complete, and its samples.
fn same_run(
    transaction: &mut postgres::Transaction<'_>,
    plan: &TablePlan,
    values: &[Value],
) -> Result<Option<(i64, bool, u64)>, postgres::Error> {
    let bound: Vec<Bound<'_>> = values.iter().map(Bound).collect();
    let Some(run) = same_row(transaction, "runs", &IDENTITY, plan, &bound)? else {
        return Ok(None);
    };
    let row = transaction.query_one(
        "SELECT complete, (SELECT count(*) FROM samples WHERE run_id = $1) FROM runs WHERE id = $1",
        &[&run],
    )?;
    Ok(Some((
        run,
        row.get::<_, i64>(0) != 0,
        row.get::<_, i64>(1) as u64,
    )))
}

/// The run the database holds already, when it holds this one whole; an error when it holds
/// it with other contents.
fn check_found(
    found: Option<(i64, bool, u64)>,
    listing: &RunListing,
    source: &Source,
    database: &str,
) -> Result<Option<i64>, StoreError> {
    match found {
        None => Ok(None),
        Some((run, complete, held)) if held == listing.samples && complete == listing.complete => {
            Ok(Some(run))
        }
        Some((run, held_complete, held)) => Err(CopyRefused::Differs {
            database: database.to_string(),
            run,
            store: source.name.clone(),
            from: listing.id,
            held,
            held_complete,
            samples: listing.samples,
            complete: listing.complete,
        }
        .into()),
    }
}

fn query_failed(error: postgres::Error) -> StoreError {
    StoreError::Query(Box::new(error))
}

/// A value as a statement or a `COPY` takes it: SQLite's kinds, each written as its
/// PostgreSQL column's type (an integer into a REAL column as a double, as SQLite would).
#[derive(Clone, Copy)]
struct Bound<'a>(&'a Value);

impl std::fmt::Debug for Bound<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Value::Null => write!(formatter, "NULL"),
            Value::Integer(number) => write!(formatter, "the integer {number}"),
            Value::Real(number) => write!(formatter, "the number {number}"),
            Value::Text(text) => write!(formatter, "the text {text:?}"),
        }
    }
}

impl rusqlite::ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Value::Null => ValueRef::Null,
            Value::Integer(number) => ValueRef::Integer(*number),
            Value::Real(number) => ValueRef::Real(*number),
            Value::Text(text) => ValueRef::Text(text.as_bytes()),
        }))
    }
}

impl ToSql for Bound<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self.0, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Integer(number), &Type::INT8) => number.to_sql(ty, out),
            (Value::Integer(number), &Type::FLOAT8) => (*number as f64).to_sql(ty, out),
            (Value::Real(number), &Type::FLOAT8) => number.to_sql(ty, out),
            (Value::Text(text), &Type::TEXT) => text.as_str().to_sql(ty, out),
            (_, ty) => Err(format!("{self:?} cannot be stored in a {ty} column").into()),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT8 | Type::FLOAT8 | Type::TEXT)
    }

    postgres::types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The column names a `CREATE TABLE` defines.
    fn created(table: &Table, dialect: Dialect) -> Vec<String> {
        let sql = table.create(dialect);
        let body = &sql[sql.find('(').unwrap() + 1..sql.rfind(')').unwrap()];
        body.split(",\n")
            .map(str::trim)
            .filter(|line| !line.starts_with("PRIMARY KEY") && !line.starts_with("FOREIGN KEY"))
            .map(|line| {
                line.split(' ')
                    .next()
                    .unwrap()
                    .trim_matches('"')
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn every_column_of_every_table_is_copied_or_numbered_by_the_target() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            for table in tables() {
                let mut written: Vec<String> = run_key(table.name, dialect)
                    .into_iter()
                    .chain(kept_keys(table.name).iter().copied())
                    .chain(table.columns.iter().map(|(name, _)| *name))
                    .map(String::from)
                    .collect();
                // Numbered by the target: runs' id is the run key already.
                if matches!(table.name, "samples" | "scans") {
                    written.push("id".into());
                }
                written.sort();
                let mut defined = created(&table, dialect);
                defined.sort();
                assert_eq!(written, defined, "{} in {dialect:?}", table.name);
            }
        }
    }

    #[test]
    fn every_column_has_a_type_a_copy_writes() {
        for table in tables() {
            for (name, sql) in &table.columns {
                let first = sql.split(' ').next().unwrap();
                assert!(
                    ["INTEGER", "REAL", "TEXT"].contains(&first),
                    "{}.{name}: {sql}",
                    table.name
                );
            }
        }
    }
}
