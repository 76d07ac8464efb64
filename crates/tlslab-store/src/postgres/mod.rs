//! The PostgreSQL store: one database for many runs, machines and capture points. The same
//! tables as a SQLite file ([`tables`](crate::schema::tables), rendered in
//! [`Dialect::Postgres`]), with the database numbering runs and samples, and Configs and
//! trials keyed by their run, so that any number of writers share it without colliding.
//!
//! The client is `postgres`, the synchronous face of `tokio-postgres` (it drives the
//! connection on a runtime of its own), because the store's writer is a thread of its own
//! already ([`SinkThread`](tlslab_core::SinkThread)).

pub mod connection;
mod sink;
pub mod spool;

use postgres::Client;

use crate::schema::{tables, Dialect, VERSION};

pub(crate) use sink::column_type;
pub use sink::{Notices, PostgresSink};

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
        // Older PostgreSQL schemas do not exist yet: version 15 is the first one written.
        _ => {}
    }
    let mut statements: String = tables()
        .iter()
        .map(|table| table.create(Dialect::Postgres))
        .collect();
    statements.push_str(SAMPLES_INDEX);
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
