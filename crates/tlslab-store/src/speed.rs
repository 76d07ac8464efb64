//! Stored price lists (`tlslab speed --out`, schema version 17): one row per operation
//! measured, with the machine and the build that measured it, so that a handshake's
//! cryptographic work can be priced with this machine's figures and figures compared across
//! machines and builds. Like a scan, a price list belongs to the store, not to a run.

use std::path::Path;

use rusqlite::params;

use crate::{Store, StoreError};

/// One measured operation to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSpeed {
    /// Nanoseconds since the Unix epoch when the measurement started (the same for every row
    /// of one `tlslab speed`).
    pub measured_at_unix_ns: u64,
    /// The tlslab that measured.
    pub tool_version: String,
    /// The command line, to measure again.
    pub command_line: Vec<String>,
    /// The CPU's model, from /proc/cpuinfo.
    pub cpu_model: String,
    /// The cores the process could run on.
    pub cores: u64,
    /// The build: tlslab's version and commit and every linked library's version, as one
    /// line (`tlslab 0.1.0 (abc123); rustls 0.23.46; aws-lc-rs 1.19.0 …`).
    pub build: String,
    /// `rustls` or `openssl`.
    pub backend: String,
    /// The library that did the work, with its version.
    pub library: String,
    /// The table: `signature`, `key_exchange`, `kem`, `hybrid`, `aead`, `hkdf`.
    pub kind: String,
    /// The primitive (`rsa2048`, `x25519mlkem768`).
    pub primitive: String,
    /// The operation (`sign`, `verify`, `keygen`, `derive`, …).
    pub operation: String,
    /// An AEAD record's plaintext bytes.
    pub bytes: Option<u64>,
    /// Threads running it at once.
    pub threads: u64,
    /// Operations counted, all threads.
    pub operations: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// Operations per second, all threads; `None` when not measured.
    pub per_second: Option<f64>,
    /// One operation's wall-clock time on one thread; `None` when not measured.
    pub seconds_per_operation: Option<f64>,
    /// One operation's CPU time on the thread that ran it; `None` when not measured.
    pub cpu_seconds_per_operation: Option<f64>,
    /// Whether the backend has the operation.
    pub supported: bool,
    /// Why not, or how the row was computed.
    pub note: Option<String>,
}

/// A stored row: its key, when it was measured (UTC), and what was stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedRow {
    /// The row's key.
    pub id: i64,
    /// UTC, as `2026-11-27T16:05:00Z`.
    pub measured_at: String,
    /// The command line as stored (its words joined by spaces).
    pub command_line: String,
    /// Everything else, as given.
    pub speed: NewSpeed,
}

/// Adds `rows` to the store at `path`, in one transaction: a new store when there is no
/// file, else the existing one (upgraded first if it is older), whose runs, scans and
/// earlier price lists are kept.
pub fn add_speed(path: &Path, rows: &[NewSpeed]) -> Result<(), StoreError> {
    let mut connection = crate::scans::open_to_add(path)?;
    let unwritable = crate::scans::unwritable(path);
    let transaction = connection.transaction().map_err(unwritable)?;
    {
        let mut insert = transaction
            .prepare(
                "INSERT INTO speed (measured_at, measured_at_unix_ns, tool_version, command_line, cpu_model, cores, build, backend, library, kind, primitive, operation, bytes, threads, operations, seconds, per_second, seconds_per_operation, cpu_seconds_per_operation, supported, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
            )
            .map_err(unwritable)?;
        for row in rows {
            insert
                .execute(params![
                    crate::utc_timestamp(row.measured_at_unix_ns),
                    row.measured_at_unix_ns as i64,
                    row.tool_version,
                    serde_json::to_string(&row.command_line).unwrap_or_default(),
                    row.cpu_model,
                    row.cores as i64,
                    row.build,
                    row.backend,
                    row.library,
                    row.kind,
                    row.primitive,
                    row.operation,
                    row.bytes.map(|bytes| bytes as i64),
                    row.threads as i64,
                    row.operations as i64,
                    row.seconds,
                    row.per_second,
                    row.seconds_per_operation,
                    row.cpu_seconds_per_operation,
                    row.supported,
                    row.note,
                ])
                .map_err(unwritable)?;
        }
    }
    transaction.commit().map_err(unwritable)
}

/// Adds `rows` to the store at `location`: a file as [`add_speed`] does, or a PostgreSQL
/// database's `speed` table (its tables made if it has none), in one transaction.
pub fn add_speed_at(location: &crate::Location, rows: &[NewSpeed]) -> Result<(), StoreError> {
    let settings = match location {
        crate::Location::File(path) => return add_speed(path, rows),
        crate::Location::Database(settings) => settings,
    };
    let mut client = crate::scans::connect_for_scans(settings)?;
    let query = |error| StoreError::Query(Box::new(error));
    let mut transaction = client.transaction().map_err(query)?;
    let insert = transaction
        .prepare(
            "INSERT INTO speed (measured_at, measured_at_unix_ns, tool_version, command_line, cpu_model, cores, build, backend, library, kind, primitive, operation, bytes, threads, operations, seconds, per_second, seconds_per_operation, cpu_seconds_per_operation, supported, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)",
        )
        .map_err(query)?;
    for row in rows {
        transaction
            .execute(
                &insert,
                &[
                    &crate::utc_timestamp(row.measured_at_unix_ns),
                    &(row.measured_at_unix_ns as i64),
                    &row.tool_version,
                    &serde_json::to_string(&row.command_line).unwrap_or_default(),
                    &row.cpu_model,
                    &(row.cores as i64),
                    &row.build,
                    &row.backend,
                    &row.library,
                    &row.kind,
                    &row.primitive,
                    &row.operation,
                    &row.bytes.map(|bytes| bytes as i64),
                    &(row.threads as i64),
                    &(row.operations as i64),
                    &row.seconds,
                    &row.per_second,
                    &row.seconds_per_operation,
                    &row.cpu_seconds_per_operation,
                    &i64::from(row.supported),
                    &row.note,
                ],
            )
            .map_err(query)?;
    }
    transaction.commit().map_err(query)
}

impl Store {
    /// Every stored price-list row, oldest measurement first, in the order measured (none in
    /// a store older than schema 17: it is upgraded when opened, with an empty speed table).
    pub fn speed(&self) -> Result<Vec<SpeedRow>, StoreError> {
        self.connection().rows(
            "SELECT id, measured_at, measured_at_unix_ns, tool_version, command_line, cpu_model, cores, build, backend, library, kind, primitive, operation, bytes, threads, operations, seconds, per_second, seconds_per_operation, cpu_seconds_per_operation, supported, note FROM speed ORDER BY measured_at_unix_ns, id",
            &[],
            |row| {
                let command_line: String = row.get(4)?;
                let words = serde_json::from_str::<Vec<String>>(&command_line).unwrap_or_default();
                Ok(SpeedRow {
                    id: row.get(0)?,
                    measured_at: row.get(1)?,
                    command_line: if words.is_empty() {
                        command_line
                    } else {
                        words.join(" ")
                    },
                    speed: NewSpeed {
                        measured_at_unix_ns: row.get::<i64>(2)? as u64,
                        tool_version: row.get(3)?,
                        command_line: words,
                        cpu_model: row.get(5)?,
                        cores: row.get::<i64>(6)? as u64,
                        build: row.get(7)?,
                        backend: row.get(8)?,
                        library: row.get(9)?,
                        kind: row.get(10)?,
                        primitive: row.get(11)?,
                        operation: row.get(12)?,
                        bytes: row.get::<Option<i64>>(13)?.map(|bytes| bytes as u64),
                        threads: row.get::<i64>(14)? as u64,
                        operations: row.get::<i64>(15)? as u64,
                        seconds: row.get(16)?,
                        per_second: row.get(17)?,
                        seconds_per_operation: row.get(18)?,
                        cpu_seconds_per_operation: row.get(19)?,
                        supported: row.get(20)?,
                        note: row.get(21)?,
                    },
                })
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema;
    use rusqlite::Connection;

    fn row(primitive: &str, supported: bool) -> NewSpeed {
        NewSpeed {
            measured_at_unix_ns: 1_764_259_200_000_000_000,
            tool_version: "0.1.0".into(),
            command_line: vec!["tlslab".into(), "speed".into()],
            cpu_model: "a CPU".into(),
            cores: 2,
            build: "tlslab 0.1.0; OpenSSL 4.0.3".into(),
            backend: "rustls".into(),
            library: "aws-lc-rs 1.19.0".into(),
            kind: "signature".into(),
            primitive: primitive.into(),
            operation: "sign".into(),
            bytes: None,
            threads: 1,
            operations: if supported { 1200 } else { 0 },
            seconds: if supported { 1.0 } else { 0.0 },
            per_second: supported.then_some(1200.0),
            seconds_per_operation: supported.then_some(1.0 / 1200.0),
            cpu_seconds_per_operation: supported.then_some(0.9 / 1200.0),
            supported,
            note: (!supported).then(|| "aws-lc-rs offers no Ed448".into()),
        }
    }

    #[test]
    fn rows_are_added_to_a_new_or_an_older_store_and_read_back_as_given() {
        let directory =
            std::env::temp_dir().join(format!("tlslab-store-speed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("speed.db");
        let rows = [row("rsa2048", true), row("ed448", false)];
        add_speed(&path, &rows).unwrap();
        // A store of schema 16 had no speed table: adding upgrades it, keeping what it held.
        {
            let connection = Connection::open(&path).unwrap();
            connection
                .execute_batch("DROP TABLE speed; PRAGMA user_version = 16;")
                .unwrap();
        }
        add_speed(&path, &rows).unwrap();
        add_speed(&path, &rows[..1]).unwrap();
        let store = Store::open(&path).unwrap();
        let read = store.speed().unwrap();
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].speed, rows[0]);
        assert_eq!(read[1].speed, rows[1]);
        assert_eq!(read[0].command_line, "tlslab speed");
        assert_eq!(read[0].measured_at, "2025-11-27T16:00:00Z");
        drop(store);
        let connection = Connection::open(&path).unwrap();
        assert_eq!(schema::version(&connection).unwrap(), schema::VERSION);
        drop(connection);
        std::fs::remove_dir_all(directory).unwrap();
    }
}
