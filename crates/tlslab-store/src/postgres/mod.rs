//! The PostgreSQL store: one database for many runs, machines and capture points. The same
//! tables as a SQLite file ([`tables`](crate::schema::tables), rendered in
//! [`Dialect::Postgres`]), with the database numbering runs and samples, and Configs and
//! trials keyed by their run, so that any number of writers share it without colliding.
//!
//! The client is `postgres`, the synchronous face of `tokio-postgres` (it drives the
//! connection on a runtime of its own), because the store's writer is a thread of its own
//! already ([`SinkThread`](tlslab_core::SinkThread)).

pub mod agents;
pub mod connection;
mod sink;
pub mod spool;

use postgres::Client;

use crate::schema::{tables, Dialect, VERSION};

pub(crate) use sink::column_type;
pub use sink::{Notices, PostgresSink};

/// How a writer's end goes into its run: the last writer to end sets when the run finished;
/// the run is complete only if every writer's part was; counts add up (a run has several
/// writers when capture points join it). Parameters: finished_at, complete, reason,
/// duration_ns, attempted, errors, run.
pub(crate) const RUN_END: &str = "UPDATE runs SET finished_at = $1::TEXT, \
     complete = CASE WHEN finished_at IS NULL THEN $2::BIGINT ELSE LEAST(complete, $2::BIGINT) END, \
     reason = COALESCE(reason, $3::TEXT), \
     duration_ns = GREATEST(COALESCE(duration_ns, 0), $4::BIGINT), \
     attempted = COALESCE(attempted, 0) + $5::BIGINT, \
     errors = COALESCE(errors, 0) + $6::BIGINT \
     WHERE id = $7";

/// A writer that joined a run another writer made ([`join_run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Joined {
    /// The run.
    pub run: i64,
    /// The writer's number in the run (the run's maker is 0): its Configs are numbered from
    /// `writer * CONFIG_BLOCK`.
    pub writer: i64,
    /// When the run started, nanoseconds since the Unix epoch: the writer's samples count
    /// their times from it, as the maker's do.
    pub started_at_unix_ns: i64,
}

/// Joins run `run` of `client`'s database as its next writer, if the run is one `source`
/// (`capture`, `pcap`) can add to: a capture point joining the capture of others.
pub fn join_run(
    client: &mut Client,
    database: &str,
    run: i64,
    source: &str,
) -> Result<Joined, PostgresError> {
    let found = client
        .query_opt(
            "UPDATE runs SET writers = writers + 1 WHERE id = $1 AND source = $2 \
             RETURNING writers - 1, started_at_unix_ns",
            &[&run, &source],
        )
        .map_err(|source| PostgresError::Statement {
            database: database.to_string(),
            doing: "joining the run",
            source,
        })?;
    match found {
        Some(row) => Ok(Joined {
            run,
            writer: row.get(0),
            started_at_unix_ns: row.get(1),
        }),
        None => Err(PostgresError::NotJoinable {
            database: database.to_string(),
            run,
            kind: source.to_string(),
        }),
    }
}

/// Why the PostgreSQL store could not be used. The database's own words are the source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The database's schema is newer than this build knows: refused, never written.
    #[error("the database {database} has tlslab schema version {version}, newer than this tlslab understands ({VERSION}); upgrade tlslab")]
    Newer {
        /// The database, as shown to users (no password).
        database: String,
        /// Its schema version.
        version: i64,
    },
    /// A writer asked to join a run that is not there, or holds another kind of run.
    #[error("the database {database} has no {kind} run {run} to join")]
    NotJoinable {
        /// The database, as shown to users (no password).
        database: String,
        /// The run asked for.
        run: i64,
        /// The kind of run the writer adds to (`capture`, `pcap`).
        kind: String,
    },
    /// An agent asked to work for a run that has no work for it.
    #[error("the database {database} has {why} (run {run}): nothing for an agent to do")]
    NoWork {
        /// The database, as shown to users (no password).
        database: String,
        /// The run asked for.
        run: i64,
        /// What the run is instead.
        why: String,
    },
    /// An agent of another tlslab than the one that planned the run.
    #[error("run {run} was planned by tlslab {coordinator}; this agent is tlslab {agent}")]
    AgentVersion {
        /// The run.
        run: i64,
        /// The coordinator's version and commit.
        coordinator: String,
        /// The agent's.
        agent: String,
    },
    /// A statement failed: the connection dropped, a permission is missing, the disk is full.
    #[error("the database {database} refused: {doing}")]
    Statement {
        /// The database, as shown to users (no password).
        database: String,
        /// What tlslab was doing.
        doing: &'static str,
        /// What PostgreSQL said.
        #[source]
        source: postgres::Error,
    },
}

/// The key every tlslab process takes while it makes or checks the schema, so that writers
/// starting together (capture points, agents) do not race to create the same tables.
const SCHEMA_LOCK: i64 = 0x746c_736c_6162; // "tlslab"

/// The database's tlslab schema version (none when tlslab never wrote it); a newer one than
/// this build's is refused.
pub fn schema_version(client: &mut Client, database: &str) -> Result<Option<i64>, PostgresError> {
    let failed = |source| PostgresError::Statement {
        database: database.to_string(),
        doing: "reading the schema version",
        source,
    };
    let exists: bool = client
        .query_one("SELECT to_regclass('tlslab_schema') IS NOT NULL", &[])
        .map_err(failed)?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let version: Option<i64> = client
        .query_one("SELECT max(version) FROM tlslab_schema", &[])
        .map_err(failed)?
        .get(0);
    match version {
        Some(version) if version > VERSION => Err(PostgresError::Newer {
            database: database.to_string(),
            version,
        }),
        version => Ok(version),
    }
}

/// Makes the schema in `client`'s database if it has none, or checks that it is this build's.
/// `database` names it in errors.
pub fn prepare(client: &mut Client, database: &str) -> Result<(), PostgresError> {
    let failed = |doing| {
        let database = database.to_string();
        move |source| PostgresError::Statement {
            database,
            doing,
            source,
        }
    };
    let mut transaction = client
        .transaction()
        .map_err(failed("beginning the schema check"))?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .map_err(failed("taking the schema lock"))?;
    transaction
        .batch_execute("CREATE TABLE IF NOT EXISTS tlslab_schema (version BIGINT NOT NULL)")
        .map_err(failed("creating the schema version table"))?;
    let version: Option<i64> = transaction
        .query_opt("SELECT max(version) FROM tlslab_schema", &[])
        .map_err(failed("reading the schema version"))?
        .and_then(|row| row.get(0));
    match version {
        Some(version) if version > VERSION => {
            return Err(PostgresError::Newer {
                database: database.to_string(),
                version,
            })
        }
        Some(VERSION) => return Ok(()),
        // None: a new database. Older: one written by an earlier tlslab (15 was the first),
        // whose tables gain the columns added since.
        _ => {}
    }
    let mut statements: String = tables()
        .iter()
        .map(|table| table.create(Dialect::Postgres) + &table.add_missing_columns())
        .collect();
    statements.push_str(SAMPLES_INDEX);
    statements.push_str(OPEN_CLAIMS_INDEX);
    statements.push_str(&format!(
        "DELETE FROM tlslab_schema; INSERT INTO tlslab_schema VALUES ({VERSION});"
    ));
    transaction
        .batch_execute(&statements)
        .map_err(failed("creating the tables"))?;
    transaction.commit().map_err(failed("creating the tables"))
}

/// The readers' index. Unlike a SQLite file's (built once at a run's end), a shared
/// database's is kept as rows arrive: other runs are written into it all the time. It ends
/// with the sample's number, as every SQLite index implicitly ends with the row's: the
/// readers ask for a Config's samples in sample order, which the index then gives without
/// a sort (a report of 100,000 requests: 0.84 s with a sort, 0.45 s without).
const SAMPLES_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS samples_by_config ON samples(run_id, config_id, warmup, outcome, id);\n";

/// The claims of a distributed run still to do: what an agent looks through for its next
/// trial (the in-progress ones, a few per agent, then the first unclaimed), however many
/// trials the run has done.
const OPEN_CLAIMS_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS open_claims ON claims(run_id, id) WHERE done = 0;\n";

/// A new run's number, taken from the database's sequence before its row is written, so
/// that the producer can name it (in messages, to the agents that join it) from the start.
pub fn reserve_run(client: &mut Client, database: &str) -> Result<i64, PostgresError> {
    client
        .query_one("SELECT nextval(pg_get_serial_sequence('runs', 'id'))", &[])
        .map(|row| row.get(0))
        .map_err(|source| PostgresError::Statement {
            database: database.to_string(),
            doing: "numbering the new run",
            source,
        })
}
