//! The tlslab results store: one SQLite file per run (WAL mode, batched inserts, schema
//! version in `PRAGMA user_version`), queries for summaries, and CSV / JSON Lines export.
//!
//! It is the analysing wing's entrance: it depends on `tlslab-core` alone, so any producer of
//! Samples (the engine, a capture reader, a scanner) writes a store through core's
//! [`Sink`](tlslab_core::Sink) contract, and the statistics and reports read it, without
//! building a TLS library. A run that is interrupted keeps every committed sample and stays
//! marked incomplete.
//!
//! ```
//! use tlslab_core::*;
//! use tlslab_store::{export, ExportFormat, Store};
//!
//! // A producer that is not the engine: one Config, one measured handshake of 1.2 ms.
//! let experiment = Experiment { handshakes: 1, warmup: 0, ..Experiment::default() };
//! let config = experiment.configs().unwrap().remove(0).record("192.0.2.1:443".into(), None);
//! let environment = Environment {
//!     tool_version: "0.1.0".into(), commit: "example".into(), rustls_version: "n/a".into(),
//!     crypto_provider: "n/a".into(), openssl_version: None, cpu_model: "any".into(),
//!     cores: 1, kernel: "any".into(), hostname: "any".into(), network: "capture".into(),
//!     name_resolution: Vec::new(), wire_clock: None,
//! };
//! let path = std::env::temp_dir().join(format!("tlslab-doc-{}.db", std::process::id()));
//! let _ = std::fs::remove_file(&path);
//! let mut sink = Store::create(&path).unwrap().into_sink();
//! sink.begin(&RunInfo {
//!     source: Source::Pcap { files: vec!["example.pcap".into()] },
//!     experiment: None,
//!     plan: None,
//!     configs: vec![config],
//!     environment,
//!     command_line: vec![],
//!     started_at_unix_ns: 0,
//! }).unwrap();
//! let mut timeline = Timeline::default();
//! timeline.set(Event::Start, 0);
//! timeline.set(Event::HandshakeDone, 1_200_000);
//! sink.record(Record::Sample(Box::new(Sample {
//!     config: 0, trial: 0, round: 1, agent: 0, warmup: false, started_at: 0, timeline,
//!     outcome: Outcome::Ok, error: None, error_detail: None, negotiated: Negotiated::default(),
//!     bytes_sent: 0, bytes_received: 0, client_hello_bytes: None, server_flight_bytes: None, client_certificate_bytes: None,
//!     response: None, quic: None, insecure: false, client_address: None, server_address: None, observed: None,
//!     connection: None, response_wire_bytes: None, server_software: None, wire_clock: None,
//! }))).unwrap();
//! sink.finish(&RunEnd { complete: true, reason: None, duration_ns: 1, attempted: 1, errors: 0 })
//!     .unwrap();
//!
//! // The analysing side reads it back.
//! let store = Store::open(&path).unwrap();
//! let config = &store.configs().unwrap()[0];
//! assert_eq!(store.phase_values(config.id, "handshake").unwrap(), [1_200_000.0]);
//! let mut csv = Vec::new();
//! export(&store, ExportFormat::Csv, &mut csv).unwrap();
//! assert_eq!(String::from_utf8(csv).unwrap().lines().count(), 2);
//! # std::fs::remove_file(&path).unwrap();
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod columns;
mod copy;
mod database;
mod export;
mod kept;
mod location;
mod parameter;
pub mod postgres;
mod read;
mod recovery;
mod scans;
mod schema;
mod sink;
mod speed;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use database::Parameter;
use rusqlite::{Connection, OpenFlags};

pub use copy::{copy, list_runs, CopyOutcome, CopyRefused, RunCopy, RunListing, PROGRESS_EVERY};
pub use export::{export, export_fields, ExportFormat};
pub use kept::{KeptHandle, KeptValues, KEPT_BYTES, KEPT_SAMPLES};
pub use location::{Location, STORE_VARIABLE};
pub use recovery::CUT_OFF;
pub use scans::{add_scan, add_scan_at, check_scan_store, NewScan, ScanRow};
pub use schema::{CONFIG_BLOCK, VERSION as SCHEMA_VERSION};
pub use sink::{utc_timestamp, StoreSink};
pub use speed::{add_speed, add_speed_at, NewSpeed, SpeedRow};

/// Why the results store could not be made, opened, read or exported. Each variant keeps
/// what failed underneath as its [`source`](std::error::Error::source), so the terminal can
/// show the whole chain; [`StoreError::hint`] says what to do and [`StoreError::kind`]
/// whose problem it is, which decides the exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// `Store::create` refuses to overwrite anything: a results file is evidence.
    #[error("{}: already exists", path.display())]
    Exists {
        /// The path given for the new store.
        path: PathBuf,
    },
    /// `Store::open` was given a path with no file behind it.
    #[error("{}: no such results file", path.display())]
    Missing {
        /// The path given.
        path: PathBuf,
    },
    /// The path cannot be looked at: a directory on the way is a regular file, or may not
    /// be searched.
    #[error("{}: cannot be read", path.display())]
    Inaccessible {
        /// The path given.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A file that tlslab did not write, where a store was expected to be added to.
    #[error("{}: is not a tlslab results store", path.display())]
    NotAStore {
        /// The file that is something else.
        path: PathBuf,
    },
    /// A database without a schema version: another program's SQLite file.
    #[error("{}: this file is not a tlslab results store (no schema version)", path.display())]
    Foreign {
        /// The file that is something else.
        path: PathBuf,
    },
    /// A store from a later tlslab, whose columns this one cannot know.
    #[error(
        "{}: this store has schema version {version}, newer than this tlslab understands ({}); upgrade tlslab",
        path.display(),
        schema::VERSION
    )]
    Newer {
        /// The store.
        path: PathBuf,
        /// Its schema version.
        version: i64,
    },
    /// A schema version below 1, which no tlslab wrote.
    #[error("{}: no migration from schema version {version}", path.display())]
    NoMigration {
        /// The store.
        path: PathBuf,
        /// Its schema version.
        version: i64,
    },
    /// An older store whose upgrade in place failed (a read-only file, a full disk).
    #[error("{}: cannot upgrade the store from schema version {from}", path.display())]
    Upgrade {
        /// The store.
        path: PathBuf,
        /// The schema version it had.
        from: i64,
        /// What SQLite said.
        #[source]
        source: Box<rusqlite::Error>,
    },
    /// The directory the new store goes in cannot be made (a regular file in its place, no
    /// permission).
    #[error("cannot create the directory {}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The store cannot be opened or written where it is (the machine's problem).
    #[error("cannot write the results store {}", path.display())]
    Unwritable {
        /// The store.
        path: PathBuf,
        /// What would fix it, which depends on what was being done.
        hint: &'static str,
        /// What SQLite said.
        #[source]
        source: Box<rusqlite::Error>,
    },
    /// The run's lock on a new store cannot be taken (a file system without locks).
    #[error("cannot lock the results store {} for the run", path.display())]
    Lock {
        /// The store.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file exists but cannot be read as a store (permissions, not SQLite).
    #[error("cannot read {} as a results store", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What would fix it, which depends on what was being done.
        hint: &'static str,
        /// What SQLite said.
        #[source]
        source: Box<rusqlite::Error>,
    },
    /// A query of an open store failed: the file may be damaged or another program's.
    #[error("the results store cannot be read")]
    Damaged(#[source] Box<rusqlite::Error>),
    /// A row that does not read as tlslab wrote it.
    #[error("a row of the results store does not read as tlslab wrote it")]
    Decode(#[source] Box<serde_json::Error>),
    /// A value of a kind the reader did not expect (a damaged or foreign store).
    #[error("the results store holds a value of another kind than {wanted} (column {index})")]
    Kind {
        /// The column's position in the query.
        index: usize,
        /// What was expected.
        wanted: &'static str,
    },
    /// The PostgreSQL database cannot be reached or refused the connection.
    #[error(transparent)]
    Connect(#[from] postgres::connection::ConnectError),
    /// The PostgreSQL store's schema cannot be made or used.
    #[error(transparent)]
    Postgres(#[from] postgres::PostgresError),
    /// A query of a PostgreSQL store failed.
    #[error("the results database cannot be read")]
    Query(#[source] Box<::postgres::Error>),
    /// A database with no tlslab store in it, or without the run asked for.
    #[error("{database}: {}", match run { Some(run) => format!("no run {run}"), None => "no tlslab run in it".into() })]
    NoRun {
        /// The database, as shown to users (no password).
        database: String,
        /// The run asked for.
        run: Option<i64>,
    },
    /// `--run` given to a writer whose store is a file: a file holds one writer's run.
    #[error(
        "only a PostgreSQL store's run can be joined: a results file holds the run of one writer"
    )]
    JoinFile,
    /// A distributed run's agents meet in a database, not in a file.
    #[error("agents can only share a PostgreSQL store: a results file is one process's")]
    AgentsNeedDatabase,
    /// A configs column holds bytes that are not UTF-8 text.
    #[error("results store: configs column {column} is not UTF-8 text")]
    NotText {
        /// The column, quoted.
        column: String,
        /// What the UTF-8 check said.
        #[source]
        source: std::str::Utf8Error,
    },
    /// A metric named by the user that the samples table has no column for.
    #[error("unknown metric '{name}'")]
    UnknownMetric {
        /// The name given.
        name: String,
    },
    /// A column asked for as a byte count that is not one.
    #[error("'{column}' is not a byte count")]
    NotByteCount {
        /// The column asked for.
        column: String,
    },
    /// The export's output cannot be written (a closed pipe, a full disk).
    #[error("cannot write the export")]
    Export(#[source] std::io::Error),
    /// A `store copy` that cannot be made as asked.
    #[error(transparent)]
    Copy(#[from] copy::CopyRefused),
}

// SQLite's errors are boxed in every variant: they are 64 bytes, and a StoreError travels
// in every Result of the store's readers and of the workflows that call them.
impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        StoreError::Damaged(Box::new(error))
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(error: serde_json::Error) -> StoreError {
        StoreError::Decode(Box::new(error))
    }
}

/// Whose problem a [`StoreError`] is, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// What the user gave: a path that is no results file, a damaged file, an unknown metric.
    Input,
    /// The machine: a directory that cannot be written, a full disk.
    Environment,
}

/// The hint of the variants whose hint is always the same.
const NOT_WRITTEN_BY_TLSLAB: &str = "give a results file written by `tlslab run`";

impl StoreError {
    /// Whose problem this is: the user's input or the machine.
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            StoreError::Directory { .. }
            | StoreError::Unwritable { .. }
            | StoreError::Lock { .. }
            | StoreError::Export(_)
            | StoreError::Query(_) => StoreErrorKind::Environment,
            StoreError::Connect(error) => match error {
                postgres::connection::ConnectError::InvalidUrl { .. } => StoreErrorKind::Input,
                _ => StoreErrorKind::Environment,
            },
            StoreError::Postgres(postgres::PostgresError::Statement { .. }) => {
                StoreErrorKind::Environment
            }
            _ => StoreErrorKind::Input,
        }
    }

    /// What the user can do about it, in words.
    pub fn hint(&self) -> String {
        match self {
            StoreError::Exists { .. } => "choose another --out path, or remove the old file".into(),
            StoreError::Missing { .. } => {
                "give the .db file a run printed at its end (default directory: ./tlslab-results)"
                    .into()
            }
            StoreError::Inaccessible { .. } => {
                "check the path: every part before the file name must be a directory you may read"
                    .into()
            }
            StoreError::NotAStore { .. } => {
                "give --out a new file, or a store written by tlslab".into()
            }
            StoreError::Foreign { .. }
            | StoreError::Newer { .. }
            | StoreError::NoMigration { .. } => NOT_WRITTEN_BY_TLSLAB.into(),
            StoreError::Upgrade { .. } => "make the file writable so tlslab can upgrade it".into(),
            StoreError::Directory { .. } => "give --out a path in a directory you can write".into(),
            StoreError::Unwritable { hint, .. } | StoreError::Unreadable { hint, .. } => {
                (*hint).into()
            }
            StoreError::Lock { .. } => "check the file system supports locks".into(),
            StoreError::Damaged(_)
            | StoreError::Decode(_)
            | StoreError::NotText { .. }
            | StoreError::Kind { .. } => {
                "the file may be damaged or written by another program".into()
            }
            StoreError::Connect(error) => error.hint(),
            StoreError::Postgres(postgres::PostgresError::Newer { .. }) => {
                "upgrade tlslab on this machine to the version that wrote the database".into()
            }
            StoreError::Postgres(postgres::PostgresError::NotJoinable { .. }) => {
                "give --run a capture run of this database (`tlslab store ls URL` lists them), or leave --run out to start a new one".into()
            }
            StoreError::AgentsNeedDatabase => {
                "give --store postgres://… (or TLSLAB_STORE), a database every agent can reach".into()
            }
            StoreError::Postgres(postgres::PostgresError::NoWork { .. }) => {
                "give --run a distributed run with work left (`tlslab store ls URL` lists the runs; `tlslab run --agents N` makes one)".into()
            }
            StoreError::Postgres(postgres::PostgresError::AgentVersion { .. }) => {
                "run the agents and the coordinator from one build of tlslab: each agent expands the coordinator's plan again, and another version may expand it otherwise".into()
            }
            StoreError::Postgres(_) | StoreError::Query(_) => {
                "check that the database server is up and the role may read and write its tables"
                    .into()
            }
            StoreError::JoinFile => {
                "leave --run out to write a new file, or give --store postgres://… to join a run of a shared database".into()
            }
            StoreError::NoRun { .. } => {
                "list the database's runs with `tlslab store ls URL` and give one with --run".into()
            }
            StoreError::UnknownMetric { .. } => format!(
                "use one of: {}",
                columns::timing_columns().collect::<Vec<_>>().join(", ")
            ),
            StoreError::NotByteCount { .. } => {
                "use client_hello_bytes, server_flight_bytes, bytes_sent or bytes_received".into()
            }
            StoreError::Export(_) => "check the output path and free disk space".into(),
            StoreError::Copy(refused) => refused.hint(),
        }
    }
}

/// An open results store.
pub struct Store {
    connection: database::Connection,
    path: PathBuf,
    /// The values its writer kept, which answer the summaries' reads (see `kept.rs`).
    kept: Option<std::sync::Arc<KeptValues>>,
    /// Each Config's measured successes, counted once: a summary of a large run reads its
    /// values one column at a time, and each read reserved its room by counting them again
    /// (a million requests in PostgreSQL: 17 counts of 0.2 s each). A store is opened per
    /// command, over a run that is no longer written.
    successes: std::cell::RefCell<std::collections::HashMap<i64, usize>>,
    /// Whether the phases' values take in the samples of outcome `incomplete` (a capture's
    /// handshakes it shows only the start of) beside the successful ones, each in the phases
    /// it has: `compare --include-incomplete`.
    incomplete_too: std::cell::Cell<bool>,
    /// A database's Configs, each read once for the readers (see `read.rs`).
    read: std::cell::RefCell<read::ReadConfigs>,
}

/// A Config as stored (the columns of the configs table this crate's readers use; read by
/// column name).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct ConfigRow {
    /// The row's key, which samples and trials refer to.
    pub id: i64,
    /// The Config's label, as the user wrote it or as the expansion made it.
    pub label: String,
    /// The TLS version asked for (`1.2`, `1.3`).
    pub version: String,
    /// The cipher suite asked for.
    pub suite: String,
    /// The key-exchange group asked for.
    pub group: String,
    /// The lab server's certificate; `None` against a target.
    pub cert: Option<String>,
    /// How many intermediates the lab certificate's chain holds; `None` against a target.
    pub chain: Option<i64>,
    /// The external server measured (host:port); `None` for the lab server.
    pub target: Option<String>,
    /// `None` for a capture's Configs.
    pub concurrency: Option<i64>,
    /// Whether handshakes resumed a session (the Config's `resumption` says how).
    #[serde(deserialize_with = "flag")]
    pub resume: bool,
    /// Certificate checks were off (`--insecure`): cert_validation is not measured.
    #[serde(deserialize_with = "flag")]
    pub insecure: bool,
    /// Set when `--until-ci` stopped the Config early: the last round it ran, its measured
    /// samples, and the relative half-width of its median's 95% CI.
    pub stopped_round: Option<i64>,
    /// See `stopped_round`.
    pub stopped_samples: Option<i64>,
    /// See `stopped_round`.
    pub stopped_half_width: Option<f64>,
    /// The emulated round trip, when the Config ran on an emulated link.
    pub rtt_ns: Option<i64>,
    /// The emulated link's jitter, when the Config ran on one (schema 2; read so that Configs
    /// that differ only in it are told apart).
    #[serde(default)]
    pub jitter_ns: Option<i64>,
    /// The emulated link's packet loss (0 to 1), when the Config ran on one.
    pub loss: Option<f64>,
    /// Which emulator carried the packets (netem, tun, relay).
    pub emulator: Option<String>,
    /// Where a capture saw the Config's handshakes, when capture points were named
    /// (schema 16); `None` for an active run's Configs.
    #[serde(default)]
    pub capture_point: Option<String>,
    /// tcp or quic.
    pub transport: String,
    /// The request after the handshake: none, 1.1, 2, 3.
    pub http: String,
    /// off, tickets or session-id.
    pub resumption: String,
    /// Bytes of 0-RTT early data per resumed handshake (0: none).
    pub early_data_bytes: i64,
    /// The client kept the verified certificate for later handshakes (`--cert-cache`), which
    /// moves cert_validation out of them.
    #[serde(deserialize_with = "flag")]
    pub cert_cache: bool,
    /// rustls or openssl; `None` for a capture's Configs.
    pub client_backend: Option<String>,
    /// The lab server's library; `None` for an external target.
    pub server_backend: Option<String>,
    /// off, on or grease.
    pub ech: String,
    /// The client's first key share was for another group (`--hello-retry on`).
    #[serde(deserialize_with = "flag")]
    pub hello_retry: bool,
    /// What the client trusted (`lab root`, `CA file`, `system roots`, `insecure`, with
    /// ` + pin`); `None` for captures and stores before schema 6.
    pub trust: Option<String>,
    /// Open loop: attempts per second on a schedule; `None` in a closed loop, a capture, or
    /// a store before schema 7.
    pub arrival_rate: Option<f64>,
    /// An agent kept its connection for its next request (schema 7).
    #[serde(deserialize_with = "flag")]
    pub keep_alive: bool,
    /// The lab server required a client certificate (`--mtls on`, schema 9).
    #[serde(deserialize_with = "flag")]
    pub mtls: bool,
    /// `https`, or `http` (plain).
    pub scheme: String,
    /// Where the handshakes went (host:port).
    pub address: String,
    /// The request's path, when the Config sent one.
    pub path: Option<String>,
    /// The emulated bandwidth, bits per second.
    pub rate_bps: Option<i64>,
    /// The server name the client sent, when it was not the lab server's default.
    #[serde(default)]
    pub sni: Option<String>,
}

/// A flag as the stores keep it: 0 or 1 (SQLite and PostgreSQL alike keep integers).
fn flag<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Flag {
        Integer(i64),
        Boolean(bool),
    }
    Ok(
        match <Flag as serde::Deserialize>::deserialize(deserializer)? {
            Flag::Integer(number) => number != 0,
            Flag::Boolean(flag) => flag,
        },
    )
}

/// What a Config's handshakes negotiated most often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiatedRow {
    /// `1.2`, `1.3`.
    pub version: String,
    /// The suite, by its IANA name; `None` when no handshake said.
    pub suite: Option<String>,
    /// The key-exchange group; `None` when no handshake said (TLS 1.2 RSA key exchange).
    pub group: Option<String>,
}

/// A version, suite and group negotiated.
pub(crate) type Negotiation = (String, Option<String>, Option<String>);

/// How many samples negotiated each version, suite and group.
pub(crate) type Negotiations = std::collections::BTreeMap<Negotiation, i64>;

/// The negotiation counted most often; of equal counts, the first in order (`max_by_key`
/// keeps the last).
pub(crate) fn most_negotiated(counts: Negotiations) -> Option<NegotiatedRow> {
    counts
        .into_iter()
        .rev()
        .max_by_key(|(_, count)| *count)
        .map(|((version, suite, group), _)| NegotiatedRow {
            version,
            suite,
            group,
        })
}

/// Each round's median handshake and count, from every successful handshake's round,
/// warm-up flag and time, sorted by the three (as [`Store::round_medians`] reads them).
pub(crate) fn medians_of_rounds(
    sorted: impl IntoIterator<Item = (i64, bool, f64)>,
) -> Vec<RoundMedian> {
    let mut rounds: Vec<(RoundMedian, Vec<f64>)> = Vec::new();
    for (round, warmup, nanos) in sorted {
        match rounds.last_mut() {
            Some((last, values)) if last.round == round && last.warmup == warmup => {
                values.push(nanos)
            }
            _ => rounds.push((
                RoundMedian {
                    round,
                    warmup,
                    median_ns: 0.0,
                    count: 0,
                },
                vec![nanos],
            )),
        }
    }
    rounds
        .into_iter()
        .map(|(mut round, values)| {
            // Sorted: the middle value, or the mean of the two middle ones.
            let middle = values.len() / 2;
            round.median_ns = if values.len() % 2 == 1 {
                values[middle]
            } else {
                (values[middle - 1] + values[middle]) / 2.0
            };
            round.count = values.len();
            round
        })
        .collect()
}

/// An error for the first of `names` that is neither a timing column nor one of
/// [`MEASURED_COUNTS`] (what [`Store::phases_values`] reads).
fn check_metrics(names: &[&str]) -> Result<(), StoreError> {
    match names.iter().find(|name| {
        !MEASURED_COUNTS.contains(name) && !columns::timing_columns().any(|column| column == **name)
    }) {
        Some(name) => Err(StoreError::UnknownMetric {
            name: name.to_string(),
        }),
        None => Ok(()),
    }
}

/// Sample columns besides the timings that [`Store::phases_values`] reads: what a summary
/// needs of a Config's successful measured samples.
pub const MEASURED_COUNTS: [&str; 4] = [
    "client_hello_bytes",
    "server_flight_bytes",
    "http_status",
    "client_certificate_bytes",
];

/// One measured request (a sample of a Config that sends one), as a load summary reads it;
/// times in nanoseconds since the attempt started.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// The request succeeded; a failed one keeps its `error` class.
    pub ok: bool,
    /// The error class of a failed request.
    pub error: Option<String>,
    /// The HTTP status, when a response came.
    pub status: Option<i64>,
    /// Bytes of the response body, which ab calls the document length.
    pub body_bytes: Option<i64>,
    /// Bytes on the wire for the request and its response, as ab's total transferred.
    pub wire_bytes: Option<i64>,
    /// 1 for the request that opened its connection, 2 and up on a kept one.
    pub connection_request: Option<i64>,
    /// The TCP connection was open; `None` on a kept connection.
    pub tcp_connected: Option<i64>,
    /// The TLS handshake finished; `None` on a kept connection or over plain HTTP.
    pub handshake_done: Option<i64>,
    /// The response's first byte arrived, where ab's waiting time ends.
    pub first_byte: Option<i64>,
    /// The response's last byte arrived, where ab's total time ends.
    pub response_done: Option<i64>,
}

impl ConfigRow {
    /// When `--until-ci` stopped the Config early: last round, samples, relative half-width.
    pub fn stopped(&self) -> Option<(i64, i64, f64)> {
        Some((
            self.stopped_round?,
            self.stopped_samples?,
            self.stopped_half_width?,
        ))
    }

    /// Whether the Config ran over QUIC.
    pub fn is_quic(&self) -> bool {
        self.transport == "quic"
    }
}

/// What the replay probe saw for one Config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ReplayRow {
    /// Captured 0-RTT flights the probe sent again.
    pub sent: i64,
    /// Replays the server refused, as RFC 8446 (8) asks.
    pub rejected: i64,
    /// Replays the server accepted: each is a request it served twice.
    pub accepted: i64,
}

/// The run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// When the run started, UTC (`2026-11-25T15:53:29Z`).
    pub started_at: String,
    /// The run ended as planned; an interrupted run keeps what it stored and says so.
    pub complete: bool,
    /// Why an incomplete run stopped (a signal, a full disk).
    pub reason: Option<String>,
    /// How long the run took; `None` for a run that never wrote its end.
    pub duration_ns: Option<i64>,
    /// The plan's seed; `None` for a capture.
    pub seed: Option<i64>,
    /// The run's start on the wall clock: samples' `started_at` counts from it.
    pub started_at_unix_ns: i64,
    /// The experiment as TOML; empty for a capture.
    pub experiment: String,
    /// `active`, `pcap` or `capture`, and the files or interface.
    pub source: String,
    /// The files read or the interface captured on; `None` for an active run.
    pub source_detail: Option<String>,
    /// Where the run measured; `None` when the stored record cannot be read.
    pub environment: Option<tlslab_core::Environment>,
    /// The command line, as a JSON array of its arguments, to run it again.
    pub command_line: String,
}

/// A sample's timing, as [`Store::timelines`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTimeline {
    /// The client's address and port, where known.
    pub client: Option<String>,
    /// When the attempt started, in nanoseconds since the run started.
    pub started_at_ns: u64,
    /// Every event of the attempt, relative to its start.
    pub timeline: tlslab_core::Timeline,
    /// Which clock timed the wire events (`kernel`, `user`, `mixed`); `None` before schema
    /// 14 and for samples that recorded none.
    pub wire_clock: Option<String>,
}

/// Totals over a Config's measured (non-warm-up) trials.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TrialTotals {
    /// Measured attempts: the rate's numerator.
    pub attempted: i64,
    /// The measured trials' time: the rate's denominator.
    pub duration_ns: i64,
    /// `None` when no trial has server usage (external targets).
    pub server_cpu_ns: Option<i64>,
    /// The lab server's largest resident memory; `None` against a target.
    pub server_peak_rss_bytes: Option<i64>,
    /// This process's CPU over the measured trials: what the load generator cost.
    pub client_cpu_ns: i64,
    /// This process's largest resident memory.
    pub client_peak_rss_bytes: i64,
    /// Mutual TLS: the client certificates the lab server checked during the measured trials,
    /// and the time that took; `None` when no trial counted any (no mutual TLS, a target).
    pub client_verifications: Option<i64>,
    /// See `client_verifications`.
    pub client_verify_ns: Option<i64>,
}

/// One round of a Config's successful handshakes ([`Store::round_medians`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundMedian {
    /// The round, counting the warm-up rounds too.
    pub round: i64,
    /// A warm-up round, left out of the summaries but kept to show the warm-up's effect.
    pub warmup: bool,
    /// The round's median handshake.
    pub median_ns: f64,
    /// The round's successful handshakes.
    pub count: usize,
}

/// What an emulated link carried during one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkTrial {
    /// The trial's length, which the shares of bandwidth are over.
    pub duration_ns: i64,
    /// Bytes the link carried from the client to the server.
    pub bytes_to_server: i64,
    /// Bytes the link carried from the server to the client.
    pub bytes_to_client: i64,
    /// Packets dropped at the link's full bandwidth queue.
    pub queue_drops: i64,
}

/// What [`Store::outcome_counts`] calls failures stored without an error class (every failure
/// tlslab measures has one; a store from elsewhere may not): they are errors all the same, not
/// successes.
pub const UNCLASSIFIED: &str = "error";

/// Whether `path` is a tlslab results store (read without changing it).
pub fn is_store(path: &Path) -> bool {
    let Ok(connection) = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return false;
    };
    let has_runs = connection
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
            [],
            |row| row.get::<_, i64>(0),
        )
        .is_ok_and(|count| count > 0);
    has_runs && schema::version(&connection).is_ok_and(|version| version >= 1)
}

impl Store {
    /// Creates a new store at `path`, creating parent directories. Refuses to overwrite.
    pub fn create(path: &Path) -> Result<NewStore, StoreError> {
        if path.exists() {
            return Err(StoreError::Exists {
                path: path.to_path_buf(),
            });
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Directory {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let connection = Connection::open(path).map_err(|source| StoreError::Unwritable {
            path: path.to_path_buf(),
            hint: "give --out a path in a directory you can write",
            source: Box::new(source),
        })?;
        // 16 KiB pages instead of SQLite's 4 KiB: a quarter of the system calls to write a
        // run, checkpoint it and read it back (a 100,000-request load run: 5,300 preads and
        // pwrites instead of 19,600; `tlslab pcap` 10% faster). The writer commits at most
        // five times a second, so a slow run's last page rewritten at each commit stays cheap.
        connection.pragma_update(None, "page_size", 16384)?;
        // The schema goes into the file itself before the write-ahead log starts, so even a
        // copy of the .db alone of a run killed early is a store.
        schema::create(&connection)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        // The log is folded into the file every 4 MiB (SQLite's default of 1,000 pages, at 16
        // KiB, let it grow to 16 MiB): on the writer's thread during the run, over a log that
        // stays in the page cache, rather than all of a 100,000-request run's 10 MiB at its
        // end (22 ms then, 1 to 4 ms now, with the same CPU time in all).
        connection.pragma_update(None, "wal_autocheckpoint", 256)?;
        // The bundled SQLite checks foreign keys by default: two look-ups (the run, the
        // Config) for every sample inserted. The writer keeps the keys by construction (a
        // Config's record comes before its samples), and readers keep samples whose Config
        // row is missing all the same.
        connection.pragma_update(None, "foreign_keys", false)?;
        let lock = recovery::RunLock::take(path).map_err(|source| StoreError::Lock {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(NewStore {
            connection,
            path: path.to_path_buf(),
            lock,
        })
    }

    /// Opens an existing store read-only.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => {}
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                // Not "no such file": a directory on the way that is a regular file, a
                // directory that may not be searched. What the system said is the news.
                return Err(StoreError::Inaccessible {
                    path: path.to_path_buf(),
                    source,
                });
            }
            _ => {
                return Err(StoreError::Missing {
                    path: path.to_path_buf(),
                })
            }
        }
        // A run that was cut off is recovered once, on the first open after it.
        recovery::recover(path);
        let read_only = || {
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|source| StoreError::Unreadable {
                path: path.to_path_buf(),
                hint: "check the file permissions",
                source: Box::new(source),
            })
        };
        let mut connection = read_only()?;
        let version = schema::version(&connection).map_err(|source| StoreError::Unreadable {
            path: path.to_path_buf(),
            hint: NOT_WRITTEN_BY_TLSLAB,
            source: Box::new(source),
        })?;
        if (1..schema::VERSION).contains(&version) {
            // An older store is upgraded in place once (new columns, NULL for old rows).
            drop(connection);
            let writable = Connection::open(path).map_err(|source| StoreError::Unreadable {
                path: path.to_path_buf(),
                hint: "make the file writable so tlslab can upgrade it",
                source: Box::new(source),
            })?;
            schema::migrate(&writable, path)?;
            drop(writable);
            connection = read_only()?;
        }
        schema::migrate(&connection, path)?;
        Ok(Store {
            connection: database::Connection::Sqlite(connection),
            path: path.to_path_buf(),
            kept: None,
            successes: Default::default(),
            incomplete_too: Default::default(),
            read: Default::default(),
        })
    }

    /// A new run's store at `location`: a new file ([`Store::create`]), or a new run in a
    /// PostgreSQL database, whose tables are made if it has none, and refused if they are
    /// newer than this build's. The database is reached now, before any measuring.
    pub fn create_at(location: &Location) -> Result<NewRun, StoreError> {
        match location {
            Location::File(path) => Ok(NewRun::File(Store::create(path)?)),
            Location::Database(settings) => {
                let database = settings.to_string();
                let mut client = settings.connect()?;
                postgres::prepare(&mut client, &database)?;
                let run = postgres::reserve_run(&mut client, &database)?;
                Ok(NewRun::Database(Box::new(
                    postgres::PostgresSink::new(client, database, run)
                        .reconnecting(settings.as_ref().clone()),
                )))
            }
        }
    }

    /// Joins run `run` of the database at `location` as its next writer, for a producer of
    /// kind `source` (`capture`, `pcap`): capture points adding to one capture. A file holds
    /// one writer's run and cannot be joined.
    pub fn join_at(location: &Location, run: i64, source: &str) -> Result<NewRun, StoreError> {
        let Location::Database(settings) = location else {
            return Err(StoreError::JoinFile);
        };
        let database = settings.to_string();
        let mut client = settings.connect()?;
        postgres::prepare(&mut client, &database)?;
        let joined = postgres::join_run(&mut client, &database, run, source)?;
        Ok(NewRun::Database(Box::new(
            postgres::PostgresSink::new(client, database, run)
                .joining(joined)
                .reconnecting(settings.as_ref().clone()),
        )))
    }

    /// The sink of agent `agent` of distributed run `run` at `location` (a database): it
    /// writes the agent's samples and trials into the run its coordinator made (at
    /// `run_started_at_unix_ns` on the database server's clock, which is the agent's plus
    /// `clock_offset_ns`), and adds its end to the run's; `agent` is its number, and whether
    /// it is one of a gang (whose parts of a trial add up in one row).
    pub fn agent_sink(
        location: &Location,
        run: i64,
        agent: (i64, bool),
        run_started_at_unix_ns: u64,
        clock_offset_ns: i64,
    ) -> Result<Box<dyn tlslab_core::Sink>, StoreError> {
        let Location::Database(settings) = location else {
            return Err(StoreError::AgentsNeedDatabase);
        };
        let database = settings.to_string();
        let client = settings.connect()?;
        Ok(Box::new(
            postgres::PostgresSink::new(client, database, run)
                .for_agent(agent, run_started_at_unix_ns, clock_offset_ns)
                .reconnecting(settings.as_ref().clone()),
        ))
    }

    /// Opens the store at `location` for reading: a file (which holds one run: `run` must be
    /// none), or one run of a PostgreSQL database (`run`, or its latest run when none is
    /// given). A database without tlslab's tables, or with a newer schema, is refused.
    pub fn open_location(location: &Location, run: Option<i64>) -> Result<Store, StoreError> {
        let settings = match location {
            Location::File(path) => return Store::open(path),
            Location::Database(settings) => settings,
        };
        let database = settings.to_string();
        let mut client = settings.connect()?;
        let version = postgres::schema_version(&mut client, &database)?;
        let no_run = || StoreError::NoRun {
            database: database.clone(),
            run,
        };
        if version.is_none() {
            return Err(no_run());
        }
        let found: Option<i64> = client
            .query_one(
                "SELECT max(id) FROM runs WHERE id = $1 OR $1 IS NULL",
                &[&run],
            )
            .map_err(|error| StoreError::Query(Box::new(error)))?
            .get(0);
        // A database of scans or price lists alone (`tlslab scan` or `speed --store
        // postgres://…`) opens without a run, for them to be read (`has_run` says so).
        let found = match found {
            None if run.is_none() => {
                let scans: i64 = client
                    .query_one(
                        "SELECT (SELECT count(*) FROM scans) + (SELECT count(*) FROM speed)",
                        &[],
                    )
                    .map_err(|error| StoreError::Query(Box::new(error)))?
                    .get(0);
                (scans > 0).then_some(0)
            }
            found => found,
        };
        let run = found.ok_or_else(no_run)?;
        Ok(Store {
            connection: database::Connection::Postgres {
                client: Box::new(std::cell::RefCell::new(client)),
                run,
            },
            path: PathBuf::from(database),
            kept: None,
            successes: Default::default(),
            incomplete_too: Default::default(),
            read: Default::default(),
        })
    }

    /// The file this store reads, for messages and for the files written beside it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn connection(&self) -> &database::Connection {
        &self.connection
    }
}

/// A new run's store, made by [`Store::create_at`]: a new SQLite file, or a new run in a
/// PostgreSQL database, for its producer to write.
pub enum NewRun {
    /// A new SQLite file.
    File(NewStore),
    /// A new run in a shared database, numbered already.
    Database(Box<postgres::PostgresSink>),
}

impl NewRun {
    /// The run's number in a database (a file's run has none to give).
    pub fn run(&self) -> Option<i64> {
        match self {
            NewRun::File(_) => None,
            NewRun::Database(sink) => Some(sink.run()),
        }
    }

    /// Where this writer stands in a run it joined ([`Store::join_at`]); `None` for a run it
    /// made.
    pub fn joined(&self) -> Option<postgres::Joined> {
        match self {
            NewRun::File(_) => None,
            NewRun::Database(sink) => sink.joined(),
        }
    }

    /// What a database's sink will have to say about the run (the database going away and
    /// coming back), for the producer to show after it; none for a file.
    pub fn notices(&self) -> Option<postgres::Notices> {
        match self {
            NewRun::File(_) => None,
            NewRun::Database(sink) => Some(sink.notices()),
        }
    }

    /// The producer's sink.
    pub fn into_sink(self) -> Box<dyn tlslab_core::Sink> {
        match self {
            NewRun::File(store) => Box::new(store.into_sink()),
            NewRun::Database(sink) => sink,
        }
    }

    /// [`NewStore::into_sink_keeping`] for a file; a database's run keeps nothing (its
    /// summaries read the database).
    pub fn into_sink_keeping(
        self,
        planned_samples: u64,
    ) -> (Box<dyn tlslab_core::Sink>, KeptHandle) {
        match self {
            NewRun::File(store) => {
                let (sink, kept) = store.into_sink_keeping(planned_samples);
                (Box::new(sink), kept)
            }
            NewRun::Database(sink) => (sink, KeptHandle::default()),
        }
    }
}

/// A SQLite store just made by [`Store::create`], for its producer to write.
pub struct NewStore {
    connection: Connection,
    path: PathBuf,
    /// Held while the run writes the store (see `recovery.rs`).
    lock: recovery::RunLock,
}

impl NewStore {
    /// The new file's connection, before its sink takes it.
    pub(crate) fn connection(&self) -> &Connection {
        &self.connection
    }

    /// Turns a newly created store into a producer's sink.
    pub fn into_sink(self) -> StoreSink {
        StoreSink::new(self.connection, self.path, Some(self.lock))
    }

    /// [`Store::into_sink`], keeping the values the summaries read as they are written, for
    /// a run planned to measure at most [`KEPT_SAMPLES`] samples: a store opened on the same
    /// file after the run answers those reads from them ([`Store::with_kept`] of
    /// [`KeptHandle::get`]) instead of reading every row back. A larger run (an open loop for
    /// a long duration) keeps nothing, so that its memory stays flat from its start.
    pub fn into_sink_keeping(self, planned_samples: u64) -> (StoreSink, KeptHandle) {
        let handle = KeptHandle::default();
        let mut sink = self.into_sink();
        if planned_samples <= KEPT_SAMPLES {
            sink.keep_values(handle.clone(), KEPT_BYTES);
        }
        (sink, handle)
    }
}

impl Store {
    /// Builds the readers' index of a store whose sink left it out
    /// ([`StoreSink::without_index`]), on a connection of its own: readers may read the
    /// store meanwhile (SQLite's locks and a busy timeout order them). A store without it is
    /// still read, by scanning, so a failure here (a full disk) loses nothing.
    pub fn build_index(path: &Path) -> Result<(), StoreError> {
        let connection = Connection::open(path).map_err(|source| StoreError::Unwritable {
            path: path.to_path_buf(),
            hint: "check the file permissions and the free disk space",
            source: Box::new(source),
        })?;
        connection.execute_batch(schema::SAMPLES_INDEX)?;
        Ok(())
    }

    /// This store, reading the summaries' values from `kept`: what the sink that wrote this
    /// very file kept ([`Store::into_sink_keeping`]), and nothing else.
    pub fn with_kept(mut self, kept: Option<std::sync::Arc<KeptValues>>) -> Store {
        self.kept = kept;
        self
    }

    /// A database's Config `config_id`, read once for every reader (`read.rs`); `None` for a
    /// file (whose readers query it, or answer from what its writer kept) and for a Config
    /// too large to hold.
    fn read_config(&self, config_id: i64) -> Result<Option<Arc<read::ReadConfig>>, StoreError> {
        match &self.connection {
            database::Connection::Sqlite(_) => Ok(None),
            database::Connection::Postgres { .. } => {
                self.read.borrow_mut().get(&self.connection, config_id)
            }
        }
    }

    /// The values of Config `config_id` that answer the summaries' reads without a query:
    /// what the writer kept, or a database's Config read once.
    fn kept(&self, config_id: i64) -> Result<Option<Arc<KeptValues>>, StoreError> {
        if let Some(kept) = &self.kept {
            return Ok(Some(kept.clone()));
        }
        Ok(self.read_config(config_id)?.map(|read| read.kept.clone()))
    }

    /// [`Store::kept`] without reading: what was kept, or the database's Config when it was
    /// read already and is still held.
    fn kept_held(&self, config_id: i64) -> Option<Arc<KeptValues>> {
        if let Some(kept) = &self.kept {
            return Some(kept.clone());
        }
        let held = self.read.borrow().held(config_id)?;
        Some(held.kept.clone())
    }

    /// The run the store holds (a SQLite file holds one; a database the one it was opened on).
    pub fn run(&self) -> Result<RunRow, StoreError> {
        let run = self.run_id();
        let read = self.connection.first(
            "SELECT started_at, complete, reason, duration_ns, seed, experiment, environment, command_line, source, source_detail, started_at_unix_ns FROM runs WHERE id = ?1 OR ?1 = 0 ORDER BY id LIMIT 1",
            &[Parameter::Integer(run)],
            |row| {
                Ok(RunRow {
                    started_at: row.get(0)?,
                    complete: row.get(1)?,
                    reason: row.get(2)?,
                    duration_ns: row.get(3)?,
                    seed: row.get(4)?,
                    experiment: row.get(5)?,
                    environment: serde_json::from_str(&row.get::<String>(6)?).ok(),
                    command_line: row.get(7)?,
                    source: row.get(8)?,
                    source_detail: row.get(9)?,
                    started_at_unix_ns: row.get(10)?,
                })
            },
        )?;
        read.ok_or_else(|| StoreError::NoRun {
            database: self.path.display().to_string(),
            run: (run != 0).then_some(run),
        })
    }

    /// The number of the run this store reads, as `--run` names it: a database's run, or the
    /// one run a file holds (`None` for a file of scans alone). A database opened without a
    /// run asked for reads its latest, whose number is known only from here.
    pub fn run_number(&self) -> Result<Option<i64>, StoreError> {
        match &self.connection {
            database::Connection::Sqlite(_) => {
                self.connection
                    .first("SELECT id FROM runs ORDER BY id LIMIT 1", &[], |row| {
                        row.get::<i64>(0)
                    })
            }
            database::Connection::Postgres { run, .. } => Ok(Some(*run)),
        }
    }

    /// The run this store reads: a database's run number, 0 for a file (its only run).
    fn run_id(&self) -> i64 {
        match &self.connection {
            database::Connection::Sqlite(_) => 0,
            database::Connection::Postgres { run, .. } => *run,
        }
    }

    /// Every sample's client address, start (ns since the run started) and events, in
    /// sample order: what `tlslab run --capture` compares with the packets.
    pub fn timelines(&self) -> Result<Vec<StoredTimeline>, StoreError> {
        let events: Vec<String> = tlslab_core::Event::ALL
            .iter()
            .map(|event| columns::quoted(event.name()))
            .collect();
        self.connection.rows(
            &format!(
                "SELECT client, started_at_ns, wire_clock, {} FROM samples WHERE {{run}}1 = 1 ORDER BY id",
                events.join(", ")
            ),
            &[],
            |row| {
                let mut timeline = tlslab_core::Timeline::default();
                for (index, event) in tlslab_core::Event::ALL.iter().enumerate() {
                    if let Some(nanos) = row.get::<Option<i64>>(index + 3)? {
                        timeline.set(*event, nanos.max(0) as u64);
                    }
                }
                Ok(StoredTimeline {
                    client: row.get(0)?,
                    started_at_ns: row.get::<i64>(1)?.max(0) as u64,
                    timeline,
                    wire_clock: row.get(2)?,
                })
            },
        )
    }

    /// Every Config, in the order of the run. Each text column is checked to be UTF-8 first, so
    /// a damaged or foreign file is an error rather than a panic.
    pub fn configs(&self) -> Result<Vec<ConfigRow>, StoreError> {
        let names: Vec<&str> = std::iter::once("id")
            .chain(columns::CONFIG_COLUMNS.iter().map(|(name, _, _)| *name))
            .collect();
        let quoted: Vec<String> = names.iter().map(|name| columns::quoted(name)).collect();
        self.connection.rows(
            &format!(
                "SELECT {} FROM configs WHERE {{run}}1 = 1 ORDER BY id",
                quoted.join(", ")
            ),
            &[],
            |row| {
                let mut fields = serde_json::Map::new();
                for (index, name) in names.iter().enumerate() {
                    let value = match row.value(index)? {
                        database::Value::Null => serde_json::Value::Null,
                        database::Value::Integer(number) => number.into(),
                        database::Value::Real(number) => number.into(),
                        database::Value::Text(text) => text.into(),
                    };
                    fields.insert(name.to_string(), value);
                }
                Ok(serde_json::from_value(serde_json::Value::Object(fields))?)
            },
        )
    }

    /// Each round of a Config's successful handshakes, warm-up included: its number, whether
    /// it was a warm-up round, its median handshake (ns) and how many it had, in round order.
    /// What drifts over a run (a server warming its caches, a machine getting busy) shows here.
    pub fn round_medians(&self, config_id: i64) -> Result<Vec<RoundMedian>, StoreError> {
        if let Some(read) = self.read_config(config_id)? {
            return Ok(read.rounds.clone());
        }
        let mut sorted = Vec::new();
        self.connection.each(
            "SELECT round, warmup, handshake FROM samples
             WHERE {run}config_id = ?1 AND outcome = 'ok' AND handshake IS NOT NULL
             ORDER BY round, warmup, handshake",
            &[Parameter::Integer(config_id)],
            |row| {
                sorted.push((row.get(0)?, row.get(1)?, row.get(2)?));
                Ok(())
            },
        )?;
        Ok(medians_of_rounds(sorted))
    }

    /// From now on, [`Store::phases_values`] takes in the measured samples a capture shows
    /// only the start of (outcome `incomplete`), each in the phases it has (the others are
    /// NULL): what `compare --include-incomplete` compares.
    pub fn include_incomplete(&self) {
        self.incomplete_too.set(true);
    }

    /// The successful measured samples' values of `name` (a timing column or one of
    /// [`MEASURED_COUNTS`]), sorted, from what the writer kept when it kept them.
    pub fn phase_values(&self, config_id: i64, name: &str) -> Result<Vec<f64>, StoreError> {
        Ok(self
            .phases_values(config_id, &[name])?
            .pop()
            .unwrap_or_default())
    }

    /// [`Store::phase_values`] of every Config, by Config: what `compare` reads. A file's
    /// Configs are read one after the other (each through its index); a database's run in
    /// one pass over its samples, in whatever order the server finds cheapest (for a run
    /// that is most of the table, its heap in order, without the index: about 0.45 s for
    /// 1,000,000 requests against 0.65 s for two passes through the index), each Config's
    /// values put in sample order here.
    pub fn phase_values_by_config(
        &self,
        name: &str,
    ) -> Result<std::collections::HashMap<i64, Vec<f64>>, StoreError> {
        let database = matches!(self.connection, database::Connection::Postgres { .. });
        let configs = self.configs()?;
        // A file's, what a writer kept, or a database's Configs all read already; or with
        // `--include-incomplete`, which the per-Config read takes in.
        if !database
            || self.incomplete_too.get()
            || configs
                .iter()
                .all(|config| self.kept_held(config.id).is_some())
        {
            return configs
                .into_iter()
                .map(|config| Ok((config.id, self.phase_values(config.id, name)?)))
                .collect();
        }
        check_metrics(&[name])?;
        let mut numbered: std::collections::HashMap<i64, Vec<(i64, i64)>> = Default::default();
        self.connection.each(
            &format!(
                "SELECT config_id, id, \"{name}\" FROM samples
                 WHERE {{run}}warmup = 0 AND outcome = 'ok' AND \"{name}\" IS NOT NULL"
            ),
            &[],
            |row| {
                let (Some(config), Some(id), Some(value)) =
                    (row.integer(0)?, row.integer(1)?, row.integer(2)?)
                else {
                    return Ok(());
                };
                numbered.entry(config).or_default().push((id, value));
                Ok(())
            },
        )?;
        Ok(numbered
            .into_iter()
            .map(|(config, mut values)| {
                values.sort_unstable();
                let values = values.into_iter().map(|(_, value)| value as f64).collect();
                (config, values)
            })
            .collect())
    }

    /// [`Store::phase_values`] of several phases (or events) at once, in the order of
    /// `names`: one pass over the Config's samples instead of one per phase (a summary
    /// reads ten of them, and on a large store each pass reads every sample's row). Besides
    /// timings, `names` may hold the columns of [`MEASURED_COUNTS`].
    pub fn phases_values(
        &self,
        config_id: i64,
        names: &[&str],
    ) -> Result<Vec<Vec<f64>>, StoreError> {
        check_metrics(names)?;
        if names.is_empty() {
            return Ok(Vec::new());
        }
        // From what was kept or read already (successes only); a reader of a few columns
        // alone (`compare`) does not read the whole Config for them.
        let incomplete_too = self.incomplete_too.get();
        if let Some(values) = self
            .kept_held(config_id)
            .filter(|_| !incomplete_too)
            .and_then(|kept| kept.phases_values(config_id, names))
        {
            return Ok(values);
        }
        let outcomes = if incomplete_too {
            "outcome IN ('ok', 'incomplete')"
        } else {
            "outcome = 'ok'"
        };
        // Sized once from the Config's index: grown by doubling, each column of a large
        // store would be copied about twice and briefly held twice (the peak memory of a
        // summary). Not in a database, where the count is a pass over the Config's rows of
        // its own, as long as the read (the index holds no visibility).
        let successes = match &self.connection {
            database::Connection::Sqlite(_) => self.success_capacity(config_id)?,
            database::Connection::Postgres { .. } => 0,
        };
        let mut values: Vec<Vec<f64>> = (0..names.len())
            .map(|_| Vec::with_capacity(successes))
            .collect();
        let selected = names
            .iter()
            .map(|name| format!("\"{name}\""))
            .collect::<Vec<_>>()
            .join(", ");
        self.connection.each(
            &format!(
                "SELECT {selected} FROM samples WHERE {{run}}config_id = ?1 AND warmup = 0 AND {outcomes} ORDER BY id"
            ),
            &[Parameter::Integer(config_id)],
            |row| {
                for (index, column) in values.iter_mut().enumerate() {
                    if let Some(value) = row.get::<Option<i64>>(index)? {
                        column.push(value as f64);
                    }
                }
                Ok(())
            },
        )?;
        Ok(values)
    }

    /// Measured attempts per error class (`ok` included under that name, and failures that
    /// have no class under [`UNCLASSIFIED`]), most frequent first, then by name.
    pub fn outcome_counts(&self, config_id: i64) -> Result<Vec<(String, i64)>, StoreError> {
        if let Some(kept) = self.kept(config_id)? {
            return Ok(kept.outcome_counts(config_id));
        }
        // The successful ones are counted in the Config's index alone; only the failures'
        // rows are read for their error class (counted here rather than with GROUP BY, which
        // SQLite does by sorting them into a temporary B-tree). Reading every sample's row
        // for its class took a sixth of the summary's time after a load run.
        let ok = self.success_count(config_id)? as i64;
        let mut counts: std::collections::HashMap<String, i64> = Default::default();
        if ok > 0 {
            counts.insert("ok".into(), ok);
        }
        self.connection.each(
            "SELECT error FROM samples WHERE {run}config_id = ?1 AND warmup = 0 AND outcome != 'ok'",
            &[Parameter::Integer(config_id)],
            |row| {
                let class: Option<String> = row.get(0)?;
                *counts
                    .entry(class.unwrap_or_else(|| UNCLASSIFIED.into()))
                    .or_insert(0) += 1;
                Ok(())
            },
        )?;
        let mut counts: Vec<(String, i64)> = counts.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(counts)
    }

    /// One example error description per class, for the summary.
    pub fn error_example(&self, config_id: i64, class: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .connection
            .first(
                "SELECT error_detail FROM samples WHERE {run}config_id = ?1 AND error = ?2 LIMIT 1",
                &[Parameter::Integer(config_id), Parameter::Text(class)],
                |row| row.get::<Option<String>>(0),
            )?
            .flatten())
    }

    /// Counts of resumed / offered-but-full handshakes among successful measured samples.
    pub fn resumption_counts(&self, config_id: i64) -> Result<(i64, i64), StoreError> {
        if let Some(counts) = self
            .kept(config_id)?
            .and_then(|k| k.resumption_counts(config_id))
        {
            return Ok(counts);
        }
        self.connection.one(
            "SELECT COUNT(CASE WHEN resumed = 1 THEN 1 END), COUNT(CASE WHEN resumed = 0 THEN 1 END) FROM samples WHERE {run}config_id = ?1 AND warmup = 0 AND outcome = 'ok'",
            &[Parameter::Integer(config_id)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// Counts of 0-RTT attempts whose early data the server accepted / rejected, among
    /// successful measured samples that sent early data (a failed connection says nothing
    /// about the server's decision).
    pub fn early_data_counts(&self, config_id: i64) -> Result<(i64, i64), StoreError> {
        if let Some(counts) = self
            .kept(config_id)?
            .and_then(|k| k.early_data_counts(config_id))
        {
            return Ok(counts);
        }
        self.connection.one(
            "SELECT COUNT(CASE WHEN early_data_accepted = 1 THEN 1 END), COUNT(CASE WHEN early_data_accepted = 0 THEN 1 END) FROM samples WHERE {run}config_id = ?1 AND warmup = 0 AND outcome = 'ok'",
            &[Parameter::Integer(config_id)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// How many successful measured samples ended with each ECH status (`accepted`,
    /// `rejected`, `grease`, `not_offered`), most frequent first.
    pub fn ech_counts(&self, config_id: i64) -> Result<Vec<(String, i64)>, StoreError> {
        if let Some(counts) = self.kept(config_id)?.and_then(|k| k.ech_counts(config_id)) {
            return Ok(counts);
        }
        self.connection.rows(
            "SELECT ech, COUNT(*) FROM samples WHERE {run}config_id = ?1 AND warmup = 0 AND outcome = 'ok' AND ech IS NOT NULL GROUP BY ech ORDER BY COUNT(*) DESC, ech",
            &[Parameter::Integer(config_id)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// Completed measured requests per HTTP status, in status order.
    pub fn status_counts(&self, config_id: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        self.connection.rows(
            "SELECT http_status, COUNT(*) FROM samples WHERE {run}config_id = ?1 AND warmup = 0 AND outcome = 'ok' AND http_status IS NOT NULL GROUP BY http_status ORDER BY http_status",
            &[Parameter::Integer(config_id)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// The replay probe's result for a Config, when the run had one.
    pub fn replay(&self, config_id: i64) -> Result<Option<ReplayRow>, StoreError> {
        self.connection.first(
            "SELECT sent, rejected, accepted FROM replays WHERE {run}config_id = ?1",
            &[Parameter::Integer(config_id)],
            |row| {
                Ok(ReplayRow {
                    sent: row.get(0)?,
                    rejected: row.get(1)?,
                    accepted: row.get(2)?,
                })
            },
        )
    }

    /// The server's flights that carried each response of a Config's successful measured
    /// samples, where the client told them apart (QUIC: `QuicPath::response_flights`), in
    /// sample order.
    pub fn response_flights(
        &self,
        config_id: i64,
    ) -> Result<Vec<tlslab_core::ResponseFlights>, StoreError> {
        let count = |row: &database::Row<'_>, index| -> Result<u64, StoreError> {
            Ok(row.get::<i64>(index)?.max(0) as u64)
        };
        self.connection.rows(
            "SELECT response_round_trips, response_first_flight_datagrams,
                    response_first_flight_bytes, response_later_datagrams, response_later_bytes
             FROM samples WHERE {run}config_id = ?1 AND warmup = 0 AND outcome = 'ok'
                 AND response_round_trips IS NOT NULL ORDER BY id",
            &[Parameter::Integer(config_id)],
            |row| {
                Ok(tlslab_core::ResponseFlights {
                    round_trips: count(row, 0)? as _,
                    first_datagrams: count(row, 1)? as _,
                    first_bytes: count(row, 2)? as _,
                    later_datagrams: count(row, 3)? as _,
                    later_bytes: count(row, 4)? as _,
                })
            },
        )
    }

    /// The median of a per-sample byte count (`client_hello_bytes`, `server_flight_bytes`)
    /// over a Config's successful measured samples.
    pub fn median_bytes(&self, config_id: i64, column: &str) -> Result<Option<i64>, StoreError> {
        if ![
            "client_hello_bytes",
            "server_flight_bytes",
            "bytes_sent",
            "bytes_received",
        ]
        .contains(&column)
        {
            return Err(StoreError::NotByteCount {
                column: column.to_string(),
            });
        }
        let values = self.connection.rows(
            &format!(
                "SELECT \"{column}\" FROM samples WHERE {{run}}config_id = ?1 AND warmup = 0 AND outcome = 'ok' AND \"{column}\" IS NOT NULL ORDER BY 1"
            ),
            &[Parameter::Integer(config_id)],
            |row| row.get::<i64>(0),
        )?;
        Ok(values.get(values.len() / 2).copied())
    }

    /// Totals of `config_id`'s measured trials, for its rates and its CPU per handshake.
    pub fn trial_totals(&self, config_id: i64) -> Result<TrialTotals, StoreError> {
        // Sums cast to BIGINT: PostgreSQL sums BIGINTs as NUMERIC, SQLite as integers anyway.
        // The server's CPU is that of the trials it was measured in, spread over them all: a
        // distributed run's remote lab server prices only the trials that ran alone on it,
        // and the others' attempts must not dilute the figure per handshake.
        self.connection.one(
            "SELECT CAST(COALESCE(SUM(attempted), 0) AS BIGINT), CAST(COALESCE(SUM(duration_ns), 0) AS BIGINT),
                    CAST(SUM(server_user_ns + server_system_ns) * 1.0 * SUM(attempted)
                         / NULLIF(SUM(CASE WHEN server_user_ns IS NOT NULL THEN attempted END), 0) AS BIGINT),
                    MAX(server_peak_rss_bytes),
                    CAST(COALESCE(SUM(client_user_ns + client_system_ns), 0) AS BIGINT), COALESCE(MAX(client_peak_rss_bytes), 0),
                    CAST(SUM(server_client_verifications) AS BIGINT), CAST(SUM(server_client_verify_ns) AS BIGINT)
             FROM trials WHERE {run}config_id = ?1 AND warmup = 0",
            &[Parameter::Integer(config_id)],
            |row| {
                Ok(TrialTotals {
                    attempted: row.get(0)?,
                    duration_ns: row.get(1)?,
                    server_cpu_ns: row.get(2)?,
                    server_peak_rss_bytes: row.get(3)?,
                    client_cpu_ns: row.get(4)?,
                    client_peak_rss_bytes: row.get(5)?,
                    client_verifications: row.get(6)?,
                    client_verify_ns: row.get(7)?,
                })
            },
        )
    }

    /// A distributed run's agents, each with what it stored (none for a run of one
    /// process): read alike from the database the run was made in and from a copy.
    pub fn agents(&self) -> Result<Vec<postgres::agents::AgentRow>, StoreError> {
        let mut agents: Vec<postgres::agents::AgentRow> = self.connection.rows(
            "SELECT id, shard, host, address, clock_offset_ns, clock_uncertainty_ns,
                    started_at_unix_ns - (SELECT r.start_at_unix_ns FROM runs r WHERE r.id = agents.run_id),
                    CASE WHEN finished_at_unix_ns IS NULL THEN 0 ELSE 1 END, COALESCE(complete, 0), reason,
                    COALESCE(trials, 0), COALESCE(client_user_ns + client_system_ns, 0)
             FROM agents WHERE {run}1 = 1 ORDER BY id",
            &[],
            |row| {
                let offset: Option<i64> = row.get(4)?;
                let uncertainty: Option<i64> = row.get(5)?;
                Ok(postgres::agents::AgentRow {
                    agent: row.get(0)?,
                    shard: row.get(1)?,
                    host: row.get(2)?,
                    address: row.get(3)?,
                    clock: offset.zip(uncertainty).map(|(offset_ns, uncertainty_ns)| {
                        postgres::agents::ClockOffset {
                            offset_ns,
                            uncertainty_ns,
                        }
                    }),
                    late_ns: row.get(6)?,
                    finished: row.get::<i64>(7)? != 0,
                    complete: row.get::<i64>(8)? != 0,
                    reason: row.get(9)?,
                    trials: row.get::<i64>(10)?.max(0) as u64,
                    cpu_ns: row.get::<i64>(11)?.max(0) as u64,
                    ..Default::default()
                })
            },
        )?;
        if agents.is_empty() {
            return Ok(agents);
        }
        let stored: Vec<(i64, i64, i64, i64)> = self.connection.rows(
            "SELECT agent_id, COUNT(*), SUM(CASE WHEN outcome <> 'ok' THEN 1 ELSE 0 END),
                    COALESCE(MAX(CASE WHEN warmup = 0 THEN started_at_ns END)
                             - MIN(CASE WHEN warmup = 0 THEN started_at_ns END), 0)
             FROM samples WHERE {run}agent_id IS NOT NULL GROUP BY agent_id",
            &[],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )?;
        for (agent, samples, errors, span) in stored {
            if let Some(row) = agents.iter_mut().find(|row| row.agent == agent) {
                row.samples = samples.max(0) as u64;
                row.errors = errors.max(0) as u64;
                row.span_ns = span.max(0) as u64;
            }
        }
        Ok(agents)
    }

    /// Each measured trial of a Config that had a counted emulated link: its duration and
    /// what the link carried (see [`LinkTrial`]), in trial order.
    pub fn link_trials(&self, config_id: i64) -> Result<Vec<LinkTrial>, StoreError> {
        self.connection.rows(
            "SELECT duration_ns, link_bytes_to_server, COALESCE(link_bytes_to_client, 0),
                    COALESCE(link_queue_drops, 0)
             FROM trials WHERE {run}config_id = ?1 AND warmup = 0 AND link_bytes_to_server IS NOT NULL
             ORDER BY id",
            &[Parameter::Integer(config_id)],
            |row| {
                Ok(LinkTrial {
                    duration_ns: row.get(0)?,
                    bytes_to_server: row.get(1)?,
                    bytes_to_client: row.get(2)?,
                    queue_drops: row.get(3)?,
                })
            },
        )
    }

    /// The version, suite and group a Config's handshakes negotiated most often, warm-up
    /// included (with keep-alive, warm-up requests open the connections the measured ones
    /// use); `None` when none completed (plain HTTP).
    /// Of equally frequent ones, the first in (version, suite, group) order.
    pub fn negotiated(&self, config_id: i64) -> Result<Option<NegotiatedRow>, StoreError> {
        if let Some(kept) = self.kept(config_id)? {
            return Ok(kept.negotiated(config_id));
        }
        // Counted here rather than with GROUP BY, which SQLite does by sorting every request
        // into a temporary B-tree. Consecutive requests (on kept connections) mostly repeat
        // the last triple, so it is compared before it is looked up.
        let mut counts = Negotiations::default();
        let mut last: Option<(Negotiation, i64)> = None;
        self.connection.each(
            "SELECT version, suite, \"group\" FROM samples
             WHERE {run}config_id = ?1 AND version IS NOT NULL",
            &[Parameter::Integer(config_id)],
            |row| {
                // Borrowed, and owned only when the triple changes.
                row.with_str(0, |version| {
                    row.with_str(1, |suite| {
                        row.with_str(2, |group| {
                            let version = version.unwrap_or_default();
                            match &mut last {
                                Some(((v, s, g), count))
                                    if v == version
                                        && s.as_deref() == suite
                                        && g.as_deref() == group =>
                                {
                                    *count += 1
                                }
                                _ => {
                                    if let Some((seen, count)) = last.take() {
                                        *counts.entry(seen).or_insert(0) += count;
                                    }
                                    let triple = (
                                        version.to_string(),
                                        suite.map(str::to_string),
                                        group.map(str::to_string),
                                    );
                                    last = Some((triple, 1));
                                }
                            }
                        })
                    })
                })???;
                Ok(())
            },
        )?;
        if let Some((triple, count)) = last {
            *counts.entry(triple).or_insert(0) += count;
        }
        Ok(most_negotiated(counts))
    }

    /// The `Server` field of the Config's first response that had one (ab's "Server
    /// Software"), warm-up included: with keep-alive, warm-up requests open the connections,
    /// and only a connection's first request stores it.
    pub fn server_software(&self, config_id: i64) -> Result<Option<String>, StoreError> {
        if let Some(read) = self.read_config(config_id)? {
            return Ok(read.server_software.clone());
        }
        // In sample order, stopping at the first: through the Config's index SQLite would
        // sort all its samples by id first (0.15 s for 100,000 samples, against 0.1 ms).
        self.connection.first(
            "SELECT server_software FROM samples NOT INDEXED
             WHERE {run}config_id = ?1 AND server_software IS NOT NULL ORDER BY id LIMIT 1",
            &[Parameter::Integer(config_id)],
            |row| row.get(0),
        )
    }

    /// Completed measured requests per HTTP status, in status order, from the values of
    /// `http_status` ([`Store::phases_values`]): what [`Store::status_counts`] reads.
    pub fn count_statuses(values: &[f64]) -> Vec<(i64, i64)> {
        let mut counts = std::collections::BTreeMap::new();
        for &status in values {
            *counts.entry(status as i64).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }

    /// The median of a byte count's values ([`Store::phases_values`]), as
    /// [`Store::median_bytes`] takes it: the upper middle value.
    pub fn median_count(values: &[f64]) -> Option<i64> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).map(|&value| value as i64)
    }

    /// Every measured request of a Config, by outcome and then in sample order, handed to
    /// `each` as it is read: what a load summary needs, which keeps only its figures' values
    /// (a whole run's rows held at once were a load summary's largest cost, in memory and in
    /// the time to fault that memory in). That is the order of the Config's index, so SQLite
    /// reads the rows without sorting them first (sample order alone cost a sort of every
    /// request).
    pub fn for_each_request(
        &self,
        config_id: i64,
        mut each: impl FnMut(RequestRow),
    ) -> Result<(), StoreError> {
        if let Some(kept) = self.kept(config_id)? {
            kept.for_each_request(config_id, each);
            return Ok(());
        }
        self.connection.each(
            "SELECT outcome = 'ok', error, http_status, response_bytes, response_wire_bytes,
                    connection_request, tcp_connected, handshake_done, first_byte, response_done
             FROM samples WHERE {run}config_id = ?1 AND warmup = 0 ORDER BY outcome, id",
            &[Parameter::Integer(config_id)],
            |row| {
                each(RequestRow {
                    ok: row.get(0)?,
                    error: row.get(1)?,
                    status: row.get(2)?,
                    body_bytes: row.get(3)?,
                    wire_bytes: row.get(4)?,
                    connection_request: row.get(5)?,
                    tcp_connected: row.get(6)?,
                    handshake_done: row.get(7)?,
                    first_byte: row.get(8)?,
                    response_done: row.get(9)?,
                });
                Ok(())
            },
        )
    }

    /// A Config's measured requests, and how many of them opened their connection (the
    /// first request on it): counted by the store, not read row by row (a summary's check of
    /// keep-alive needs only the two numbers, and reading a million requests for them was a
    /// pass of its own over every row).
    pub fn request_counts(&self, config_id: i64) -> Result<(i64, i64), StoreError> {
        if self.kept(config_id)?.is_some() {
            let (mut requests, mut opened) = (0i64, 0i64);
            self.for_each_request(config_id, |request| {
                requests += 1;
                opened += i64::from(request.connection_request == Some(1));
            })?;
            return Ok((requests, opened));
        }
        self.connection.one(
            "SELECT COUNT(*), COUNT(CASE WHEN connection_request = 1 THEN 1 END) FROM samples
             WHERE {run}config_id = ?1 AND warmup = 0",
            &[Parameter::Integer(config_id)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// How many measured samples of a Config succeeded, counted in the Config's index without
    /// reading the samples' rows.
    fn success_count(&self, config_id: i64) -> Result<usize, StoreError> {
        if let Some(&count) = self.successes.borrow().get(&config_id) {
            return Ok(count);
        }
        let count: i64 = self.connection.one(
            "SELECT COUNT(*) FROM samples WHERE {run}config_id = ?1 AND warmup = 0 AND outcome = 'ok'",
            &[Parameter::Integer(config_id)],
            |row| row.get(0),
        )?;
        let count = usize::try_from(count).unwrap_or(0);
        self.successes.borrow_mut().insert(config_id, count);
        Ok(count)
    }

    /// [`Store::success_count`] as a capacity to reserve: at most a million, so that a
    /// damaged index's count cannot reserve more memory than the machine gives (an abort);
    /// past it the values grow as they come.
    fn success_capacity(&self, config_id: i64) -> Result<usize, StoreError> {
        Ok(self.success_count(config_id)?.min(1 << 20))
    }

    /// Per measured trial of a Config: how many attempts it started and the time from its
    /// first start to its last, in nanoseconds (an open loop's achieved rate).
    pub fn trial_start_spans(&self, config_id: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        self.connection.rows(
            "SELECT COUNT(*), MAX(started_at_ns) - MIN(started_at_ns) FROM samples
             WHERE {run}config_id = ?1 AND warmup = 0 GROUP BY trial_id ORDER BY trial_id",
            &[Parameter::Integer(config_id)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// Every sample, warm-up included.
    pub fn sample_count(&self) -> Result<i64, StoreError> {
        self.connection.one(
            "SELECT COUNT(*) FROM samples WHERE {run}1 = 1",
            &[],
            |row| row.get(0),
        )
    }
}

#[cfg(test)]
mod error_tests {
    use std::error::Error as _;
    use std::path::PathBuf;

    use super::*;

    /// A directory of its own under the system's temporary directory, with a regular file
    /// named `file` in it.
    fn beside_a_file(name: &str) -> (PathBuf, PathBuf) {
        let directory =
            std::env::temp_dir().join(format!("tlslab-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).unwrap();
        let file = directory.join("file");
        std::fs::write(&file, b"not a directory").unwrap();
        (directory, file)
    }

    #[test]
    fn a_store_whose_directory_is_a_regular_file_keeps_the_systems_error() {
        let (directory, file) = beside_a_file("create");
        let error = match Store::create(&file.join("results.db")) {
            Err(error) => error,
            Ok(_) => panic!("a store was made under a regular file"),
        };
        assert!(matches!(error, StoreError::Directory { .. }), "{error:?}");
        assert_eq!(error.kind(), StoreErrorKind::Environment);
        let source = error.source().expect("the system's error is kept");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("kept as an io::Error, not as text");
        assert!(!io.to_string().is_empty());
        assert!(error.hint().contains("--out"), "{}", error.hint());
        std::fs::remove_dir_all(directory).unwrap();
    }

    #[test]
    fn opening_a_store_under_a_regular_file_says_why_with_the_systems_error() {
        let (directory, file) = beside_a_file("open");
        let error = match Store::open(&file.join("results.db")) {
            Err(error) => error,
            Ok(_) => panic!("a store was opened under a regular file"),
        };
        assert!(
            matches!(error, StoreError::Inaccessible { .. }),
            "{error:?}"
        );
        assert_eq!(error.kind(), StoreErrorKind::Input);
        let io = error
            .source()
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .expect("the system's error is kept");
        assert_eq!(
            io.raw_os_error(),
            Some(rustix::io::Errno::NOTDIR.raw_os_error())
        );
        // A path with nothing behind it is only "no such results file".
        let missing = Store::open(&directory.join("missing.db")).err().unwrap();
        assert!(matches!(missing, StoreError::Missing { .. }), "{missing:?}");
        assert!(missing.source().is_none());
        std::fs::remove_dir_all(directory).unwrap();
    }

    #[test]
    fn a_foreign_database_and_a_newer_store_are_told_apart() {
        let (directory, _) = beside_a_file("schema");
        let foreign = directory.join("foreign.db");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE t (x);")
            .unwrap();
        let error = Store::open(&foreign).err().unwrap();
        assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
        assert_eq!(error.hint(), NOT_WRITTEN_BY_TLSLAB);
        let newer = directory.join("newer.db");
        Connection::open(&newer)
            .unwrap()
            .execute_batch(&format!("PRAGMA user_version = {};", schema::VERSION + 1))
            .unwrap();
        let error = Store::open(&newer).err().unwrap();
        assert!(
            matches!(error, StoreError::Newer { version, .. } if version == schema::VERSION + 1),
            "{error:?}"
        );
        assert!(error.to_string().contains("upgrade tlslab"), "{error}");
        std::fs::remove_dir_all(directory).unwrap();
    }
}
