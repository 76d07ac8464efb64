//! Where a PostgreSQL run's records go while its database is away: a local SQLite store of
//! the same schema (a spool), marked with the database and run it belongs to. When the
//! database is back, [`upload`] appends the spool to the run in one transaction and marks the
//! spool uploaded, so that a second upload adds nothing. If the database never comes back,
//! the spool is a complete store of the records it holds, and `tlslab store copy SPOOL URL`
//! uploads it later.

use std::path::{Path, PathBuf};

use postgres::types::{ToSql, Type};
use postgres::Client;
use rusqlite::types::Value;

use super::sink::Parameter;
use crate::columns::quoted;
use crate::schema::tables;
use crate::StoreError;

/// The table that makes a SQLite store a spool.
const SPOOL_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS spool (database TEXT NOT NULL, run INTEGER NOT NULL, uploaded INTEGER NOT NULL DEFAULT 0)";

/// The directory spools go in unless the producer names another: where a run's SQLite
/// results go by default.
pub const DIRECTORY: &str = "tlslab-results";

/// A new spool's path in `directory`, for `run`: named by the run, the moment and the process,
/// so that runs of several databases (or several spells of one) never share one.
pub fn spool_path(directory: &Path, run: i64) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    directory.join(format!("spool-run{run}-{now}-{}.db", std::process::id()))
}

/// The spool's size on disk, its write-ahead log included.
pub fn size(path: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .map(|suffix| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            std::fs::metadata(name).map_or(0, |metadata| metadata.len())
        })
        .sum()
}

/// Marks the new SQLite store at `path` as the spool of `run` in `database` (shown without
/// password).
pub fn mark(connection: &rusqlite::Connection, database: &str, run: i64) -> rusqlite::Result<()> {
    connection.execute_batch(SPOOL_TABLE)?;
    connection.execute(
        "INSERT INTO spool (database, run) VALUES (?1, ?2)",
        rusqlite::params![database, run],
    )?;
    Ok(())
}

/// The database and run a spool belongs to, and whether it was uploaded; `None` for a store
/// that is not a spool.
pub fn marked(path: &Path) -> Result<Option<(String, i64, bool)>, StoreError> {
    let connection =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let is_spool: bool = connection.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'spool'",
        [],
        |row| row.get(0),
    )?;
    if !is_spool {
        return Ok(None);
    }
    Ok(Some(connection.query_row(
        "SELECT database, run, uploaded FROM spool",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?))
}

/// Appends the spool at `path` to `run` through `client`, in one transaction: its Configs
/// (new ones, and what early stopping set on known ones), trials, replays and samples, and
/// the run's end when the spool holds it. Then marks the spool uploaded. The samples added.
pub fn upload(path: &Path, client: &mut Client, run: i64) -> Result<u64, StoreError> {
    let spool = rusqlite::Connection::open(path)?;
    let uploaded: bool = spool.query_row("SELECT uploaded FROM spool", [], |row| row.get(0))?;
    if uploaded {
        return Ok(0);
    }
    let query = |error: postgres::Error| StoreError::Query(Box::new(error));
    let mut transaction = client.transaction().map_err(query)?;
    let mut samples = 0;
    for table in tables() {
        let columns: Vec<&str> = match table.name {
            // Stored scans and price lists belong to a store, not to a run.
            "runs" | "scans" | "speed" => continue,
            "samples" => ["config_id", "trial_id"]
                .into_iter()
                .chain(table.columns.iter().map(|(name, _)| *name))
                .collect(),
            "replays" => std::iter::once("config_id")
                .chain(table.columns.iter().map(|(name, _)| *name))
                .collect(),
            "trials" => ["id", "config_id"]
                .into_iter()
                .chain(table.columns.iter().map(|(name, _)| *name))
                .collect(),
            _ => std::iter::once("id")
                .chain(table.columns.iter().map(|(name, _)| *name))
                .collect(),
        };
        let conflict = match table.name {
            "samples" => String::new(),
            "replays" => " ON CONFLICT (run_id, config_id) DO UPDATE SET sent = EXCLUDED.sent, rejected = EXCLUDED.rejected, accepted = EXCLUDED.accepted".into(),
            "configs" => format!(
                " ON CONFLICT (run_id, id) DO UPDATE SET {}",
                ["stopped_round", "stopped_samples", "stopped_half_width"]
                    .iter()
                    .map(|name| format!("{name} = EXCLUDED.{name}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => " ON CONFLICT DO NOTHING".into(),
        };
        let types: Vec<Type> = table_types(&table.columns, &columns);
        let names: Vec<String> = columns.iter().map(|name| quoted(name)).collect();
        let insert = format!(
            "INSERT INTO {} (run_id, {}) VALUES ($1, {}){conflict}",
            table.name,
            names.join(", "),
            (2..=columns.len() + 1)
                .map(|position| format!("${position}::{}", sql_name(&types[position - 2])))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let statement = transaction.prepare(&insert).map_err(query)?;
        let mut read = spool.prepare(&format!(
            "SELECT {} FROM {} ORDER BY rowid",
            names.join(", "),
            table.name
        ))?;
        let mut rows = read.query([])?;
        while let Some(row) = rows.next()? {
            let values: Vec<Value> = (0..columns.len())
                .map(|index| row.get::<_, Value>(index))
                .collect::<rusqlite::Result<_>>()?;
            let parameters: Vec<Parameter<'_>> = values.iter().map(Parameter::from).collect();
            let mut bound: Vec<&(dyn ToSql + Sync)> = vec![&run];
            bound.extend(
                parameters
                    .iter()
                    .map(|parameter| parameter as &(dyn ToSql + Sync)),
            );
            transaction.execute(&statement, &bound).map_err(query)?;
            if table.name == "samples" {
                samples += 1;
            }
        }
    }
    upload_end(&spool, &mut transaction, run)?;
    // An agent's trials that were spooled are done: their claims say so, as the sink's own
    // transactions would have.
    transaction
        .execute(
            "UPDATE claims k SET done = 1 FROM trials t \
             WHERE k.run_id = $1 AND k.done = 0 AND t.run_id = k.run_id AND t.id = k.id",
            &[&run],
        )
        .map_err(query)?;
    transaction.commit().map_err(query)?;
    spool.execute("UPDATE spool SET uploaded = 1", [])?;
    Ok(samples)
}

/// The run's end, when the spool holds it (the run ended while the database was away).
fn upload_end(
    spool: &rusqlite::Connection,
    transaction: &mut postgres::Transaction<'_>,
    run: i64,
) -> Result<(), StoreError> {
    use rusqlite::OptionalExtension;
    let end: Option<Vec<Value>> = spool
        .query_row(
            "SELECT finished_at, complete, reason, duration_ns, attempted, errors FROM runs WHERE finished_at IS NOT NULL",
            [],
            |row| (0..6).map(|index| row.get::<_, Value>(index)).collect(),
        )
        .optional()?;
    let Some(end) = end else {
        return Ok(());
    };
    let parameters: Vec<Parameter<'_>> = end.iter().map(Parameter::from).collect();
    let mut bound: Vec<&(dyn ToSql + Sync)> = parameters
        .iter()
        .map(|parameter| parameter as &(dyn ToSql + Sync))
        .collect();
    bound.push(&run);
    transaction
        .execute(super::RUN_END, &bound)
        .map_err(|error| StoreError::Query(Box::new(error)))?;
    Ok(())
}

/// The PostgreSQL type of each of `columns` (keys are BIGINT).
fn table_types(definitions: &[(&str, &str)], columns: &[&str]) -> Vec<Type> {
    columns
        .iter()
        .map(|column| {
            definitions
                .iter()
                .find(|(name, _)| name == column)
                .map_or(Type::INT8, |(_, sql)| super::sink::column_type(sql))
        })
        .collect()
}

fn sql_name(ty: &Type) -> &'static str {
    match *ty {
        Type::INT8 => "BIGINT",
        Type::FLOAT8 => "DOUBLE PRECISION",
        _ => "TEXT",
    }
}
