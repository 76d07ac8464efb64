//! The SQLite schema and its migrations.

use rusqlite::Connection;
use tlslab_core::{Event, Phase};

/// The schema version this build writes, kept in `PRAGMA user_version`.
pub const VERSION: i64 = 4;

/// Columns of the samples table after the fixed ones: every event, then every phase, so
/// exports and notebooks find each under its DESIGN name.
pub fn timing_columns() -> impl Iterator<Item = &'static str> {
    Event::ALL
        .iter()
        .map(|event| event.name())
        .chain(Phase::ALL.iter().map(|phase| phase.name()))
}

pub fn create(connection: &Connection) -> rusqlite::Result<()> {
    let timings: String = timing_columns()
        .map(|name| format!(",\n    \"{name}\" INTEGER"))
        .collect();
    let columns = |list: &[(&str, &str)]| -> String {
        list.iter()
            .map(|(name, kind)| format!(",\n    {name} {kind}"))
            .collect()
    };
    let network = columns(&NETWORK_COLUMNS);
    let session = columns(&SESSION_COLUMNS);
    let libraries = columns(&LIBRARY_COLUMNS);
    let measured = columns(&SAMPLE_COLUMNS);
    connection.execute_batch(&format!(
        r#"
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
    seed INTEGER NOT NULL,
    tool_version TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    experiment TEXT NOT NULL,
    command_line TEXT NOT NULL,
    environment TEXT NOT NULL,
    plan TEXT NOT NULL
);
CREATE TABLE configs (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    label TEXT NOT NULL,
    version TEXT NOT NULL,
    suite TEXT NOT NULL,
    "group" TEXT NOT NULL,
    cert TEXT,
    chain INTEGER,
    target TEXT,
    sni TEXT,
    address TEXT NOT NULL,
    concurrency INTEGER NOT NULL,
    resume INTEGER NOT NULL,
    insecure INTEGER NOT NULL,
    description TEXT NOT NULL,
    stopped_round INTEGER,
    stopped_samples INTEGER,
    stopped_half_width REAL{network}{session}{libraries}
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
    client_peak_rss_bytes INTEGER NOT NULL
);
CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    config_id INTEGER NOT NULL REFERENCES configs(id),
    trial_id INTEGER NOT NULL,
    round INTEGER NOT NULL,
    agent INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    started_at_ns INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    error TEXT,
    error_detail TEXT,
    version TEXT,
    suite TEXT,
    "group" TEXT,
    signature_scheme TEXT,
    alpn TEXT,
    resumed INTEGER,
    insecure INTEGER NOT NULL,
    bytes_sent INTEGER NOT NULL,
    bytes_received INTEGER NOT NULL,
    client_hello_bytes INTEGER{measured}{timings}
);
CREATE INDEX samples_by_config ON samples(config_id, warmup, outcome);
{REPLAYS_TABLE}
PRAGMA user_version = {VERSION};
"#
    ))
}

/// A Config's emulated network (schema version 2); all NULL for loopback or a real network.
/// `emulator` says which emulator carried the packets (netem, tun, relay).
pub const NETWORK_COLUMNS: [(&str, &str); 5] = [
    ("rtt_ns", "INTEGER"),
    ("jitter_ns", "INTEGER"),
    ("loss", "REAL"),
    ("rate_bps", "INTEGER"),
    ("emulator", "TEXT"),
];

/// A Config's transport, request and session techniques (schema version 3). `resumption` is
/// the mode (off, tickets, session-id); the older `resume` column says whether it is not off.
pub const SESSION_COLUMNS: [(&str, &str); 6] = [
    ("transport", "TEXT NOT NULL DEFAULT 'tcp'"),
    ("http", "TEXT NOT NULL DEFAULT 'none'"),
    ("resumption", "TEXT NOT NULL DEFAULT 'off'"),
    ("early_data_bytes", "INTEGER NOT NULL DEFAULT 0"),
    ("cert_cache", "INTEGER NOT NULL DEFAULT 0"),
    ("path", "TEXT"),
];

/// A Config's TLS libraries and ECH mode (schema version 4). `server_backend` is NULL for an
/// external target.
pub const LIBRARY_COLUMNS: [(&str, &str); 3] = [
    ("client_backend", "TEXT NOT NULL DEFAULT 'rustls'"),
    ("server_backend", "TEXT"),
    ("ech", "TEXT NOT NULL DEFAULT 'off'"),
];

/// Per-sample measurements added in schema version 3 (early data, flight sizes, the
/// response, QUIC's path statistics) and 4 (what became of ECH).
pub const SAMPLE_COLUMNS: [(&str, &str); 10] = [
    ("early_data_accepted", "INTEGER"),
    ("server_flight_bytes", "INTEGER"),
    ("http_status", "INTEGER"),
    ("response_bytes", "INTEGER"),
    ("quic_rtt_ns", "INTEGER"),
    ("datagrams_sent", "INTEGER"),
    ("datagrams_received", "INTEGER"),
    ("packets_sent", "INTEGER"),
    ("packets_lost", "INTEGER"),
    ("ech", "TEXT"),
];

/// The replay probe's results (schema version 3).
const REPLAYS_TABLE: &str = "CREATE TABLE IF NOT EXISTS replays (
    config_id INTEGER PRIMARY KEY REFERENCES configs(id),
    sent INTEGER NOT NULL,
    rejected INTEGER NOT NULL,
    accepted INTEGER NOT NULL
);";

/// The store's schema version (0 for a database tlslab did not write).
pub fn version(connection: &Connection) -> Result<i64, String> {
    connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|error| error.to_string())
}

fn existing_columns(connection: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = connection.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = statement
        .query_map([], |row| row.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

/// Brings an existing store up to [`VERSION`], or explains why it cannot.
pub fn migrate(connection: &Connection) -> Result<(), String> {
    match version(connection)? {
        VERSION => Ok(()),
        // Older versions lack columns, never have different ones: add what is missing, with
        // the values every old Config had (loopback, TCP, no request, no 0-RTT).
        older @ (1..=3) => {
            let upgrade = || -> rusqlite::Result<()> {
                let mut statements = String::new();
                let configs = existing_columns(connection, "configs")?;
                let before_libraries = !configs.iter().any(|c| c == "client_backend");
                for (name, kind) in NETWORK_COLUMNS
                    .iter()
                    .chain(&SESSION_COLUMNS)
                    .chain(&LIBRARY_COLUMNS)
                {
                    if !configs.iter().any(|c| c == name) {
                        statements.push_str(&format!("ALTER TABLE configs ADD COLUMN {name} {kind};\n"));
                    }
                }
                let samples = existing_columns(connection, "samples")?;
                let added = SAMPLE_COLUMNS
                    .iter()
                    .map(|(name, kind)| (*name, *kind))
                    .chain(timing_columns().map(|name| (name, "INTEGER")));
                for (name, kind) in added {
                    if !samples.iter().any(|c| c == name) {
                        statements.push_str(&format!("ALTER TABLE samples ADD COLUMN \"{name}\" {kind};\n"));
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
                statements.push_str(&format!("\nPRAGMA user_version = {VERSION};"));
                connection.execute_batch(&statements)
            };
            upgrade().map_err(|error| {
                format!("cannot upgrade the store from schema version {older}: {error}")
            })
        }
        0 => Err("this file is not a tlslab results store (no schema version)".into()),
        newer if newer > VERSION => Err(format!(
            "this store has schema version {newer}, newer than this tlslab understands ({VERSION}); upgrade tlslab"
        )),
        older => Err(format!("no migration from schema version {older}")),
    }
}
