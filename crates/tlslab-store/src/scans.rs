//! Stored scans (`tlslab scan --out`, schema version 13): one row per scanned target, so a
//! server's scans can be compared over time. A scan is stored whole as its `--json` object;
//! the store does not interpret it beyond the columns it filters on.

use std::path::Path;

use rusqlite::{params, Connection};

use crate::{schema, Store, StoreError};

/// A scan to store.
#[derive(Debug, Clone)]
pub struct NewScan {
    /// Nanoseconds since the Unix epoch when the scan started.
    pub scanned_at_unix_ns: u64,
    /// The tlslab that scanned, since the grading rules change between versions.
    pub tool_version: String,
    /// The scan's command line, to run it again.
    pub command_line: Vec<String>,
    /// The target as written (host:port).
    pub target: String,
    /// The address it resolved to, which may change between scans.
    pub address: String,
    /// The server name sent; `None` when it was the target's host.
    pub server_name: Option<String>,
    /// The grade's letter, stored apart so that grades can be compared without parsing the
    /// report.
    pub grade: String,
    /// The connections the scan opened.
    pub connections: u64,
    /// The scan's `--json` object.
    pub report: serde_json::Value,
}

/// A stored scan.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanRow {
    /// The row's key.
    pub id: i64,
    /// UTC, as `2026-11-25T15:53:29Z`.
    pub scanned_at: String,
    /// See [`NewScan::target`].
    pub target: String,
    /// See [`NewScan::address`].
    pub address: String,
    /// See [`NewScan::server_name`].
    pub server_name: Option<String>,
    /// See [`NewScan::grade`].
    pub grade: String,
    /// See [`NewScan::connections`].
    pub connections: i64,
    /// The command line as the JSON array it was stored as.
    pub command_line: String,
    /// The scan's `--json` object (`null` if the stored text does not parse).
    pub report: serde_json::Value,
}

/// Adds `scan` to the store at `path`: a new store when there is no file, else the existing
/// one (upgraded first if it is older), whose runs and scans are kept.
pub fn add_scan(path: &Path, scan: &NewScan) -> Result<(), StoreError> {
    let connection = open_to_add(path)?;
    let unwritable = unwritable(path);
    let command_line = serde_json::to_string(&scan.command_line).unwrap_or_default();
    let report = serde_json::to_string(&scan.report).unwrap_or_default();
    connection
        .execute(
            "INSERT INTO scans (scanned_at, scanned_at_unix_ns, tool_version, command_line, target, address, server_name, grade, connections, report) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                crate::utc_timestamp(scan.scanned_at_unix_ns),
                scan.scanned_at_unix_ns as i64,
                scan.tool_version,
                command_line,
                scan.target,
                scan.address,
                scan.server_name,
                scan.grade,
                scan.connections as i64,
                report,
            ],
        )
        .map_err(unwritable)?;
    Ok(())
}

/// The store at `path` opened to add rows to (scans, price lists): a new store when there is
/// no file, else the existing one, upgraded first if it is older, whose runs and rows are
/// kept.
pub(crate) fn open_to_add(path: &Path) -> Result<Connection, StoreError> {
    if !path.exists() {
        // A new store, made as a run's is (then without its lock: the rows are written at
        // once).
        let crate::NewStore { connection, .. } = Store::create(path)?;
        return Ok(connection);
    }
    if !crate::is_store(path) {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
        });
    }
    let connection = Connection::open(path).map_err(unwritable(path))?;
    schema::migrate(&connection, path)?;
    Ok(connection)
}

/// A write to the store at `path` that failed.
pub(crate) fn unwritable(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + Copy + '_ {
    move |source| StoreError::Unwritable {
        path: path.to_path_buf(),
        hint: "give --out a path in a directory you can write",
        source: Box::new(source),
    }
}

/// Adds `scan` to the store at `location`: a file as [`add_scan`] does, or a PostgreSQL
/// database's scans (its tables made if it has none), beside its runs.
pub fn add_scan_at(location: &crate::Location, scan: &NewScan) -> Result<(), StoreError> {
    let settings = match location {
        crate::Location::File(path) => return add_scan(path, scan),
        crate::Location::Database(settings) => settings,
    };
    let mut client = connect_for_scans(settings)?;
    let command_line = serde_json::to_string(&scan.command_line).unwrap_or_default();
    let report = serde_json::to_string(&scan.report).unwrap_or_default();
    client
        .execute(
            "INSERT INTO scans (scanned_at, scanned_at_unix_ns, tool_version, command_line, target, address, server_name, grade, connections, report) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                &crate::utc_timestamp(scan.scanned_at_unix_ns),
                &(scan.scanned_at_unix_ns as i64),
                &scan.tool_version,
                &command_line,
                &scan.target,
                &scan.address,
                &scan.server_name,
                &scan.grade,
                &(scan.connections as i64),
                &report,
            ],
        )
        .map_err(|error| StoreError::Query(Box::new(error)))?;
    Ok(())
}

/// Checks, before a scan's first connection (or a price list's first measurement), that
/// rows can be added at `location`: a database is reached and its tables made or checked (a
/// file is claimed by its caller).
pub fn check_scan_store(location: &crate::Location) -> Result<(), StoreError> {
    match location {
        crate::Location::File(_) => Ok(()),
        crate::Location::Database(settings) => connect_for_scans(settings).map(drop),
    }
}

pub(crate) fn connect_for_scans(
    settings: &crate::postgres::connection::Settings,
) -> Result<::postgres::Client, StoreError> {
    let mut client = settings.connect()?;
    crate::postgres::prepare(&mut client, &settings.to_string())?;
    Ok(client)
}

impl Store {
    /// Every stored scan, oldest first (none in a store older than schema 13: it is upgraded
    /// when opened, with an empty scans table).
    pub fn scans(&self) -> Result<Vec<ScanRow>, StoreError> {
        self.connection().rows(
            "SELECT id, scanned_at, target, address, server_name, grade, connections, command_line, report FROM scans ORDER BY scanned_at_unix_ns, id",
            &[],
            |row| {
                let command_line: String = row.get(7)?;
                let report: String = row.get(8)?;
                Ok(ScanRow {
                    id: row.get(0)?,
                    scanned_at: row.get(1)?,
                    target: row.get(2)?,
                    address: row.get(3)?,
                    server_name: row.get(4)?,
                    grade: row.get(5)?,
                    connections: row.get(6)?,
                    command_line: serde_json::from_str::<Vec<String>>(&command_line)
                        .map(|words| words.join(" "))
                        .unwrap_or(command_line),
                    report: serde_json::from_str(&report).unwrap_or(serde_json::Value::Null),
                })
            },
        )
    }

    /// Whether the store holds a run (a store written by `tlslab scan --out` alone has none).
    pub fn has_run(&self) -> Result<bool, StoreError> {
        self.connection()
            .one("SELECT COUNT(*) > 0 FROM runs", &[], |row| {
                row.get::<bool>(0)
            })
    }
}
