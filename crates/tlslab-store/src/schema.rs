//! The SQLite schema and its migrations.

use std::path::Path;

use rusqlite::Connection;

use crate::columns::{definitions, quoted, sample_columns, stored_sample_columns, CONFIG_COLUMNS};
use crate::StoreError;

/// The schema version this build writes, kept in `PRAGMA user_version` (14: the
/// `server_accepted` event and QUIC's response flights on samples; 15: `wire_clock` on
/// samples; 16: a Config's `capture_point`, and a run's `writers`; each added by the upgrade
/// as every new column is; 17: the `speed` table of `tlslab speed --out`, made by the upgrade
/// as `scans` is; 18: distributed runs: a run's `agents` and `start_at_unix_ns`, the `agents`
/// and `claims` tables, and the agent that took each trial and sample).
pub const VERSION: i64 = 18;

/// The SQL a table is written in: SQLite for a file, PostgreSQL for a shared database. Both
/// render the same tables and columns ([`tables`]); only types and keys differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// One run per file, its rows numbered by the writer (run 1, Configs and trials by index).
    Sqlite,
    /// Many runs from many writers: the database numbers runs and samples, and a Config or
    /// trial is keyed by its run and its index, so that no two writers can collide.
    Postgres,
}

/// One table: its key columns (rendered per dialect) and its other columns, each `(name,
/// SQL type as SQLite spells it)`.
pub struct Table {
    /// The table's name.
    pub name: &'static str,
    /// Its columns after the keys.
    pub columns: Vec<(&'static str, &'static str)>,
    /// How its rows are keyed.
    key: Key,
}

/// How a table's rows are keyed.
#[derive(Clone, Copy)]
enum Key {
    /// `id`, numbered by the database (runs; scans; speed).
    Numbered,
    /// `run_id` and `id` (the index the producer gave it): Configs.
    InRun,
    /// As [`Key::InRun`], and the trial's `config_id`.
    Trial,
    /// `run_id`, `config_id` and `trial_id`, and an `id` numbered by the database: samples.
    Sample,
    /// `config_id` alone: the replay probe's one row per Config (and, in PostgreSQL, run).
    Config,
}

/// The runs columns of schema 1.
const RUNS_BASE: &[(&str, &str)] = &[
    ("started_at", "TEXT NOT NULL"),
    ("started_at_unix_ns", "INTEGER NOT NULL"),
    ("finished_at", "TEXT"),
    ("complete", "INTEGER NOT NULL DEFAULT 0"),
    ("reason", "TEXT"),
    ("duration_ns", "INTEGER"),
    ("attempted", "INTEGER"),
    ("errors", "INTEGER"),
    ("seed", "INTEGER"),
    ("tool_version", "TEXT NOT NULL"),
    ("commit_id", "TEXT NOT NULL"),
    ("experiment", "TEXT NOT NULL"),
    ("command_line", "TEXT NOT NULL"),
    ("environment", "TEXT NOT NULL"),
    ("plan", "TEXT NOT NULL"),
];

/// The trials columns of schema 1.
const TRIALS_BASE: &[(&str, &str)] = &[
    ("round", "INTEGER NOT NULL"),
    ("warmup", "INTEGER NOT NULL"),
    ("handshakes", "INTEGER NOT NULL"),
    ("attempted", "INTEGER NOT NULL"),
    ("concurrency", "INTEGER NOT NULL"),
    ("started_at_ns", "INTEGER NOT NULL"),
    ("duration_ns", "INTEGER NOT NULL"),
    ("server_user_ns", "INTEGER"),
    ("server_system_ns", "INTEGER"),
    ("server_peak_rss_bytes", "INTEGER"),
    ("client_user_ns", "INTEGER NOT NULL"),
    ("client_system_ns", "INTEGER NOT NULL"),
    ("client_peak_rss_bytes", "INTEGER NOT NULL"),
];

/// The replay probe's results (schema version 3).
const REPLAYS_COLUMNS: &[(&str, &str)] = &[
    ("sent", "INTEGER NOT NULL"),
    ("rejected", "INTEGER NOT NULL"),
    ("accepted", "INTEGER NOT NULL"),
];

/// `tlslab scan --out` (schema version 13): one row per scanned target, the scan's whole
/// `--json` object in `report` (its schema is documented in docs/scan.md) and the columns a
/// comparison over time filters on beside it.
const SCANS_COLUMNS: &[(&str, &str)] = &[
    ("scanned_at", "TEXT NOT NULL"),
    ("scanned_at_unix_ns", "INTEGER NOT NULL"),
    ("tool_version", "TEXT NOT NULL"),
    ("command_line", "TEXT NOT NULL"),
    ("target", "TEXT NOT NULL"),
    ("address", "TEXT NOT NULL"),
    ("server_name", "TEXT"),
    ("grade", "TEXT NOT NULL"),
    ("connections", "INTEGER NOT NULL"),
    ("report", "TEXT NOT NULL"),
];

/// `tlslab speed --out` (schema version 17): one row per operation measured, with the
/// machine and the build beside it (crates/tlslab-store/src/speed.rs).
const SPEED_COLUMNS: &[(&str, &str)] = &[
    ("measured_at", "TEXT NOT NULL"),
    ("measured_at_unix_ns", "INTEGER NOT NULL"),
    ("tool_version", "TEXT NOT NULL"),
    ("command_line", "TEXT NOT NULL"),
    ("cpu_model", "TEXT NOT NULL"),
    ("cores", "INTEGER NOT NULL"),
    ("build", "TEXT NOT NULL"),
    ("backend", "TEXT NOT NULL"),
    ("library", "TEXT NOT NULL"),
    ("kind", "TEXT NOT NULL"),
    ("primitive", "TEXT NOT NULL"),
    ("operation", "TEXT NOT NULL"),
    ("bytes", "INTEGER"),
    ("threads", "INTEGER NOT NULL"),
    ("operations", "INTEGER NOT NULL"),
    ("seconds", "REAL NOT NULL"),
    ("per_second", "REAL"),
    ("seconds_per_operation", "REAL"),
    ("cpu_seconds_per_operation", "REAL"),
    ("supported", "INTEGER NOT NULL"),
    ("note", "TEXT"),
];

/// Every table of the store at [`VERSION`], with every column: the one definition both
/// dialects render, the upgrades add to, and the writers insert by.
pub fn tables() -> Vec<Table> {
    let table =
        |name, key, columns: Vec<(&'static str, &'static str)>| Table { name, columns, key };
    vec![
        table(
            "runs",
            Key::Numbered,
            RUNS_BASE.iter().chain(RUNS_COLUMNS).copied().collect(),
        ),
        table(
            "configs",
            Key::InRun,
            CONFIG_COLUMNS
                .iter()
                .map(|(name, sql, _)| (*name, *sql))
                .collect(),
        ),
        table(
            "trials",
            Key::Trial,
            TRIALS_BASE.iter().chain(TRIALS_COLUMNS).copied().collect(),
        ),
        table(
            "samples",
            Key::Sample,
            stored_sample_columns()
                .map(|(name, sql, _)| (name, sql))
                .chain(SAMPLES_COLUMNS.iter().copied())
                .collect(),
        ),
        table("replays", Key::Config, REPLAYS_COLUMNS.to_vec()),
        table("agents", Key::InRun, AGENTS_COLUMNS.to_vec()),
        table("claims", Key::InRun, CLAIMS_COLUMNS.to_vec()),
        table("server_usage", Key::InRun, SERVER_USAGE_COLUMNS.to_vec()),
        table("scans", Key::Numbered, SCANS_COLUMNS.to_vec()),
        table("speed", Key::Numbered, SPEED_COLUMNS.to_vec()),
    ]
}

impl Table {
    /// `CREATE TABLE` for this table in `dialect`.
    pub fn create(&self, dialect: Dialect) -> String {
        let integer = match dialect {
            Dialect::Sqlite => "INTEGER",
            Dialect::Postgres => "BIGINT",
        };
        let numbered = match dialect {
            Dialect::Sqlite => "id INTEGER PRIMARY KEY",
            Dialect::Postgres => "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        };
        let (keys, last) = match (self.key, dialect) {
            (Key::Numbered, _) => (numbered.to_string(), String::new()),
            (Key::InRun, Dialect::Sqlite) => (
                "id INTEGER PRIMARY KEY,\n    run_id INTEGER NOT NULL REFERENCES runs(id)".into(),
                String::new(),
            ),
            (Key::InRun, Dialect::Postgres) => (
                "run_id BIGINT NOT NULL REFERENCES runs(id),\n    id BIGINT NOT NULL".into(),
                ",\n    PRIMARY KEY (run_id, id)".into(),
            ),
            (Key::Trial, Dialect::Sqlite) => (
                "id INTEGER PRIMARY KEY,\n    run_id INTEGER NOT NULL REFERENCES runs(id),\n    config_id INTEGER NOT NULL REFERENCES configs(id)".into(),
                String::new(),
            ),
            (Key::Trial, Dialect::Postgres) => (
                "run_id BIGINT NOT NULL REFERENCES runs(id),\n    id BIGINT NOT NULL,\n    config_id BIGINT NOT NULL".into(),
                ",\n    PRIMARY KEY (run_id, id),\n    FOREIGN KEY (run_id, config_id) REFERENCES configs(run_id, id)".into(),
            ),
            (Key::Sample, Dialect::Sqlite) => (
                "id INTEGER PRIMARY KEY,\n    run_id INTEGER NOT NULL REFERENCES runs(id),\n    config_id INTEGER NOT NULL REFERENCES configs(id),\n    trial_id INTEGER NOT NULL".into(),
                String::new(),
            ),
            // No foreign keys on samples: every insert would look its run, Config and trial
            // up, and the writer keeps them by construction (a Config's row comes first). No
            // primary key either: nothing looks a sample up by its number, which only orders
            // a run's samples, and its index cost about a tenth of an insert. Numbers are
            // handed out a thousand at a time to each writer's session (one look at the
            // sequence per thousand rows), so they still rise within a writer.
            (Key::Sample, Dialect::Postgres) => (
                "id BIGINT GENERATED BY DEFAULT AS IDENTITY (CACHE 1000),\n    run_id BIGINT NOT NULL,\n    config_id BIGINT NOT NULL,\n    trial_id BIGINT NOT NULL".into(),
                String::new(),
            ),
            (Key::Config, Dialect::Sqlite) => (
                "config_id INTEGER PRIMARY KEY REFERENCES configs(id)".into(),
                String::new(),
            ),
            (Key::Config, Dialect::Postgres) => (
                format!("run_id {integer} NOT NULL REFERENCES runs(id),\n    config_id {integer} NOT NULL"),
                ",\n    PRIMARY KEY (run_id, config_id)".into(),
            ),
        };
        let columns = definitions(
            self.columns
                .iter()
                .map(|(name, sql)| (*name, column_type(sql, dialect))),
        );
        format!(
            "CREATE TABLE IF NOT EXISTS {} (\n    {keys}{columns}{last}\n);\n",
            self.name
        )
    }
}

impl Table {
    /// `ALTER TABLE … ADD COLUMN IF NOT EXISTS` for each of its columns, in PostgreSQL: how a
    /// database written by an earlier version gains what this one added (a column is only
    /// ever added, nullable or with a default, never changed).
    pub fn add_missing_columns(&self) -> String {
        self.columns
            .iter()
            .map(|(name, sql)| {
                format!(
                    "ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {};\n",
                    self.name,
                    quoted(name),
                    column_type(sql, Dialect::Postgres)
                )
            })
            .collect()
    }
}

/// A column's SQL type in `dialect`: SQLite's INTEGER is 64 bits, PostgreSQL's 32, so counts
/// and nanoseconds are BIGINT there; REAL is a double in SQLite, a single in PostgreSQL.
pub fn column_type(sql: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::Sqlite => sql.to_string(),
        Dialect::Postgres => sql
            .split(' ')
            .map(|word| match word {
                "INTEGER" => "BIGINT",
                "REAL" => "DOUBLE PRECISION",
                "BLOB" => "BYTEA",
                word => word,
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Makes every table and index of a new store, at [`VERSION`].
pub fn create(connection: &Connection) -> rusqlite::Result<()> {
    let tables: String = tables()
        .iter()
        .map(|table| table.create(Dialect::Sqlite))
        .collect();
    // `seed` is NULL for a capture (schema 5; older stores keep NOT NULL and only ever hold
    // active runs). One transaction: each statement on its own was one (a journal created,
    // four fsyncs, the journal removed), 15 to 20 ms before every run could start.
    connection.execute_batch(&format!(
        "BEGIN;\n{tables}PRAGMA user_version = {VERSION};\nCOMMIT;\n"
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
    // Schema 16: the writers that joined the run, the one that made it included. Each
    // joining writer takes the next number (the row locked as it is raised, so that two
    // never take the same), and numbers its Configs from its own block ([`CONFIG_BLOCK`]).
    ("writers", "INTEGER NOT NULL DEFAULT 1"),
    // Schema 18: a distributed run's agents (how many its start waits for; NULL for a run
    // that is not distributed), and the common start they wait for, on the database
    // server's clock (set when the last of them registers).
    ("agents", "INTEGER"),
    ("start_at_unix_ns", "INTEGER"),
    // How its agents share the plan: `claims` (each trial whole, to whichever agent claims
    // it) or `gang` (every trial by every agent at once, each its share of the clients).
    ("distribution", "TEXT"),
];

/// The samples columns a sample does not fill but its writer does (schema 18): the agent of
/// a distributed run that took it (`agent` is the concurrent client within its trial).
const SAMPLES_COLUMNS: &[(&str, &str)] = &[("agent_id", "INTEGER")];

/// A distributed run's agents (schema 18), one row each, numbered as they register (the
/// run's writers: its coordinator is 0). Times are nanoseconds since the Unix epoch on the
/// database server's clock; `clock_offset_ns` is what the agent adds to its own clock to read
/// the server's, within `clock_uncertainty_ns`.
const AGENTS_COLUMNS: &[(&str, &str)] = &[
    ("shard", "TEXT"),
    ("host", "TEXT NOT NULL"),
    ("address", "TEXT"),
    ("process_id", "INTEGER NOT NULL"),
    ("tool_version", "TEXT NOT NULL"),
    ("commit_id", "TEXT NOT NULL"),
    ("registered_at_unix_ns", "INTEGER NOT NULL"),
    ("heartbeat_at_unix_ns", "INTEGER NOT NULL"),
    ("clock_offset_ns", "INTEGER"),
    ("clock_uncertainty_ns", "INTEGER"),
    ("started_at_unix_ns", "INTEGER"),
    ("finished_at_unix_ns", "INTEGER"),
    ("complete", "INTEGER"),
    ("reason", "TEXT"),
    ("trials", "INTEGER"),
    ("attempted", "INTEGER"),
    ("errors", "INTEGER"),
    ("client_user_ns", "INTEGER"),
    ("client_system_ns", "INTEGER"),
    // In a gang: the trial the agent is ready for (every agent waits for the others there).
    ("position", "INTEGER"),
];

/// A remote lab server's resources over a distributed run (schema 18: `tlslab serve --store
/// URL --run ID`), read every few milliseconds, keyed by when (`id`: nanoseconds since the
/// Unix epoch on the database server's clock): what each trial cost the server is the
/// difference across its span.
const SERVER_USAGE_COLUMNS: &[(&str, &str)] = &[
    ("user_ns", "INTEGER NOT NULL"),
    ("system_ns", "INTEGER NOT NULL"),
    ("peak_rss_bytes", "INTEGER NOT NULL"),
];

/// A distributed run's work (schema 18): one row per trial of its plan, claimed by one agent
/// at a time. A trial is done when its `trials` row is written (in the transaction of its
/// last samples); a claim whose agent stopped beating is taken over, for the attempts the
/// trial still lacks.
const CLAIMS_COLUMNS: &[(&str, &str)] = &[
    ("config_id", "INTEGER NOT NULL"),
    ("handshakes", "INTEGER NOT NULL"),
    ("agent_id", "INTEGER"),
    ("claimed_at_unix_ns", "INTEGER"),
    ("claims", "INTEGER NOT NULL DEFAULT 0"),
    // Set in the transaction that writes the trial's row: the open claims are then found
    // by an index of the few not done, not by looking past every done one.
    ("done", "INTEGER NOT NULL DEFAULT 0"),
];

/// How many Configs one writer of a run may number: writer `w` numbers its Configs from
/// `w * CONFIG_BLOCK`, so writers joining one run (capture points) never collide without
/// asking the database for each Config. A capture meets a Config per negotiated combination
/// and capture point: tens, not a million.
pub const CONFIG_BLOCK: usize = 1_000_000;

/// The trials columns added since schema 1 (schema 10: what the emulated link carried, from
/// its forwarder; NULL without one, or with netem. Schema 11: the lab server's checks of
/// client certificates during the trial, counted and timed; NULL without mutual TLS).
const TRIALS_COLUMNS: &[(&str, &str)] = &[
    ("link_bytes_to_server", "INTEGER"),
    ("link_bytes_to_client", "INTEGER"),
    ("link_queue_drops", "INTEGER"),
    ("server_client_verifications", "INTEGER"),
    ("server_client_verify_ns", "INTEGER"),
    // Schema 18: the agent of a distributed run that ran the trial.
    ("agent_id", "INTEGER"),
];

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
                let added = sample_columns().map(|(name, sql, _)| (name, sql));
                for (name, sql) in added.chain(SAMPLES_COLUMNS.iter().copied()) {
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
                for table in tables() {
                    if matches!(
                        table.name,
                        "replays" | "scans" | "speed" | "agents" | "claims" | "server_usage"
                    ) {
                        statements.push_str(&table.create(Dialect::Sqlite));
                    }
                }
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
