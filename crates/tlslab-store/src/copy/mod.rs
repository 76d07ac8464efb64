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

mod database;
mod file;
mod source;
mod spool;

use postgres::types::Type;

use crate::columns::quoted;
use crate::database::{Row, Value};
use crate::parameter::Parameter;
use crate::schema::{tables, Dialect, Table};
use crate::{Location, Store, StoreError};

use database::Database;
use file::{into_file, remove_store};
use source::Source;
use spool::{spooled, upload_spool};
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
        "configs" | "agents" | "claims" | "server_usage" => &["id"],
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
        ("configs" | "agents" | "claims" | "server_usage" | "trials" | "samples", _)
        | ("replays", Dialect::Postgres) => Some("run_id"),
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
        types.extend(
            table
                .columns
                .iter()
                .map(|(_, sql)| crate::postgres::column_type(sql)),
        );
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
/// trials: PostgreSQL checks that key). A distributed run's agents and the claims of its
/// trials and its remote lab server's usage go with it.
const RUN_TABLES: [&str; 7] = [
    "configs",
    "agents",
    "claims",
    "server_usage",
    "trials",
    "samples",
    "replays",
];

fn table(name: &str) -> Table {
    tables()
        .into_iter()
        .find(|table| table.name == name)
        .unwrap_or_else(|| unreachable!("the schema has a {name} table"))
}

/// Hands `write` each of the source's rows of `plan`'s table (the open run's, for a table of
/// runs' rows) as the values to write: `fixed` first, then those read. Counts the rows, and
/// tells `progress` of samples every [`PROGRESS_EVERY`].
fn each_row(
    source: &Source,
    plan: &TablePlan,
    fixed: &[Value],
    progress: &mut dyn FnMut(u64),
    write: &mut dyn FnMut(&[Parameter<'_>]) -> Result<(), StoreError>,
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
            let bound: Vec<Parameter<'_>> =
                fixed.iter().chain(&values).map(Parameter::from).collect();
            write(&bound)?;
            rows += 1;
            if plan.table == "samples" && rows.is_multiple_of(PROGRESS_EVERY) {
                progress(rows);
            }
            Ok(())
        })?;
    Ok(rows)
}

/// Tells `progress` of a run's last samples, unless [`each_row`] just did.
fn progress_at_end(progress: &mut dyn FnMut(u64), samples: u64) {
    if samples == 0 || !samples.is_multiple_of(PROGRESS_EVERY) {
        progress(samples);
    }
}

/// The values of a row read by `plan`.
fn read_values(plan: &TablePlan, row: &Row<'_>) -> Result<Vec<Value>, StoreError> {
    (0..plan.read).map(|index| row.value(index)).collect()
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
                if matches!(table.name, "samples" | "scans" | "speed") {
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
