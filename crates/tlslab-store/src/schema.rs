//! The SQLite schema and its migrations.

use std::path::Path;

use rusqlite::Connection;

use crate::columns::{definitions, quoted, sample_columns, stored_sample_columns, CONFIG_COLUMNS};
use crate::StoreError;

/// The schema version this build writes, kept in `PRAGMA user_version` (14: the
/// `server_accepted` event and QUIC's response flights on samples; 15: `wire_clock` on
/// samples; each added by the upgrade as every new column is).
pub const VERSION: i64 = 15;

/// Makes every table and index of a new store, at [`VERSION`].
pub fn create(connection: &Connection) -> rusqlite::Result<()> {
    let configs = definitions(CONFIG_COLUMNS.iter().map(|(name, sql, _)| (*name, *sql)));
    let samples = definitions(stored_sample_columns().map(|(name, sql, _)| (name, sql)));
    let runs = definitions(RUNS_COLUMNS.iter().copied());
    let trials = definitions(TRIALS_COLUMNS.iter().copied());
    // `seed` is NULL for a capture (schema 5; older stores keep NOT NULL and only ever hold
    // active runs). One transaction: each statement on its own was one (a journal created,
    // four fsyncs, the journal removed), 15 to 20 ms before every run could start.
    connection.execute_batch(&format!(
        r#"
BEGIN;
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    started_at_unix_ns INTEGER NOT NULL,
    finished_at TEXT,
    complete INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    duration_ns INTEGER,
    attempted INTEGER,
    errors INTEGER,
    seed INTEGER,
    tool_version TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    experiment TEXT NOT NULL,
    command_line TEXT NOT NULL,
    environment TEXT NOT NULL,
    plan TEXT NOT NULL{runs}
);
CREATE TABLE configs (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id){configs}
);
CREATE TABLE trials (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    config_id INTEGER NOT NULL REFERENCES configs(id),
    round INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    handshakes INTEGER NOT NULL,
    attempted INTEGER NOT NULL,
    concurrency INTEGER NOT NULL,
    started_at_ns INTEGER NOT NULL,
    duration_ns INTEGER NOT NULL,
    server_user_ns INTEGER,
    server_system_ns INTEGER,
    server_peak_rss_bytes INTEGER,
    client_user_ns INTEGER NOT NULL,
    client_system_ns INTEGER NOT NULL,
    client_peak_rss_bytes INTEGER NOT NULL{trials}
);
CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    config_id INTEGER NOT NULL REFERENCES configs(id),
    trial_id INTEGER NOT NULL{samples}
);
{REPLAYS_TABLE}
{SCANS_TABLE}
PRAGMA user_version = {VERSION};
COMMIT;
"#
    ))
}

/// The index the readers find a Config's samples by. A run builds it at its end, over all
/// its samples at once (one sort), instead of keeping it up to date with every insert: that
/// took a tenth of the writer's time. A store whose run was cut off gets it on recovery;
/// without it the readers still work, scanning the table.
pub const SAMPLES_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS samples_by_config ON samples(config_id, warmup, outcome);";

/// The runs columns added since schema 1 (schema 5: where the samples came from).
const RUNS_COLUMNS: &[(&str, &str)] = &[
    ("source", "TEXT NOT NULL DEFAULT 'active'"),
    ("source_detail", "TEXT"),
];

/// The trials columns added since schema 1 (schema 10: what the emulated link carried, from
/// its forwarder; NULL without one, or with netem. Schema 11: the lab server's checks of
/// client certificates during the trial, counted and timed; NULL without mutual TLS).
const TRIALS_COLUMNS: &[(&str, &str)] = &[
    ("link_bytes_to_server", "INTEGER"),
    ("link_bytes_to_client", "INTEGER"),
    ("link_queue_drops", "INTEGER"),
    ("server_client_verifications", "INTEGER"),
    ("server_client_verify_ns", "INTEGER"),
];

/// The replay probe's results (schema version 3).
const REPLAYS_TABLE: &str = "CREATE TABLE IF NOT EXISTS replays (
    config_id INTEGER PRIMARY KEY REFERENCES configs(id),
    sent INTEGER NOT NULL,
    rejected INTEGER NOT NULL,
    accepted INTEGER NOT NULL
);";

/// `tlslab scan --out` (schema version 13): one row per scanned target, the scan's whole
/// `--json` object in `report` (its schema is documented in docs/scan.md) and the columns a
/// comparison over time filters on beside it.
const SCANS_TABLE: &str = "CREATE TABLE IF NOT EXISTS scans (
    id INTEGER PRIMARY KEY,
    scanned_at TEXT NOT NULL,
    scanned_at_unix_ns INTEGER NOT NULL,
    tool_version TEXT NOT NULL,
    command_line TEXT NOT NULL,
    target TEXT NOT NULL,
    address TEXT NOT NULL,
    server_name TEXT,
    grade TEXT NOT NULL,
    connections INTEGER NOT NULL,
    report TEXT NOT NULL
);";

/// The store's schema version (0 for a database tlslab did not write).
pub fn version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("PRAGMA user_version", [], |row| row.get(0))
}

fn existing_columns(connection: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = connection.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = statement
        .query_map([], |row| row.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

/// Brings the existing store at `path` up to [`VERSION`], or explains why it cannot.
pub fn migrate(connection: &Connection, path: &Path) -> Result<(), StoreError> {
    let path = path.to_path_buf();
    let version = version(connection).map_err(|source| StoreError::Unreadable {
        path: path.clone(),
        hint: "give a results file written by `tlslab run`",
        source: Box::new(source),
    })?;
    match version {
        VERSION => Ok(()),
        // Older versions lack columns, never have different ones: add what is missing, with
        // the values every old Config had (loopback, TCP, no request, no 0-RTT).
        older if (1..VERSION).contains(&older) => {
            let upgrade = || -> rusqlite::Result<()> {
                let mut statements = String::new();
                let runs = existing_columns(connection, "runs")?;
                for (name, sql) in RUNS_COLUMNS {
                    if !runs.iter().any(|c| c == name) {
                        statements.push_str(&format!(
                            "ALTER TABLE runs ADD COLUMN {} {sql};\n",
                            quoted(name)
                        ));
                    }
                }
                let trials = existing_columns(connection, "trials")?;
                for (name, sql) in TRIALS_COLUMNS {
                    if !trials.iter().any(|c| c == name) {
                        statements.push_str(&format!(
                            "ALTER TABLE trials ADD COLUMN {} {sql};\n",
                            quoted(name)
                        ));
                    }
                }
                let configs = existing_columns(connection, "configs")?;
                let before_libraries = !configs.iter().any(|c| c == "client_backend");
                for (name, sql, _) in CONFIG_COLUMNS {
                    if !configs.iter().any(|c| c == name) {
                        statements.push_str(&format!(
                            "ALTER TABLE configs ADD COLUMN {} {sql};\n",
                            quoted(name)
                        ));
                    }
                }
                // Columns added since schema 1 are nullable: older samples have NULL there.
                let samples = existing_columns(connection, "samples")?;
                for (name, sql, _) in sample_columns() {
                    if !samples.iter().any(|c| c == name) {
                        statements.push_str(&format!(
                            "ALTER TABLE samples ADD COLUMN {} {sql};\n",
                            quoted(name)
                        ));
                    }
                }
                // Before schema 3, resuming Configs used tickets.
                statements.push_str(
                    "UPDATE configs SET resumption = 'tickets' WHERE resume = 1 AND resumption = 'off';\n",
                );
                // Before schema 4, every lab server was rustls.
                if before_libraries {
                    statements.push_str(
                        "UPDATE configs SET server_backend = 'rustls' WHERE cert IS NOT NULL;\n",
                    );
                }
                statements.push_str(REPLAYS_TABLE);
                statements.push_str(SCANS_TABLE);
                statements.push_str(&format!("\nPRAGMA user_version = {VERSION};"));
                connection.execute_batch(&statements)
            };
            upgrade().map_err(|source| StoreError::Upgrade {
                path,
                from: older,
                source: Box::new(source),
            })
        }
        0 => Err(StoreError::Foreign { path }),
        newer if newer > VERSION => Err(StoreError::Newer {
            path,
            version: newer,
        }),
        older => Err(StoreError::NoMigration {
            path,
            version: older,
        }),
    }
}
