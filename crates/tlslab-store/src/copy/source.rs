//! The store a copy reads: one snapshot of a SQLite file or a PostgreSQL database, a run at
//! a time.

use std::cell::RefCell;
use std::collections::HashSet;

use crate::database::{Connection, Parameter, Value};
use crate::schema::Dialect;
use crate::{Location, Store, StoreError};

use super::{RunListing, TablePlan};

/// The store copied from: read in one snapshot (a read transaction), one run at a time.
pub(super) struct Source {
    pub(super) connection: Connection,
    /// As shown to users (no password).
    pub(super) name: String,
}

impl Source {
    pub(super) fn open(location: &Location) -> Result<Source, StoreError> {
        let name = location.to_string();
        match location {
            Location::File(path) => {
                // Opened as every reader opens it: an older store upgraded, a cut-off run
                // recovered.
                let Store { connection, .. } = Store::open(path)?;
                if let Connection::Sqlite(sqlite) = &connection {
                    sqlite.execute_batch("BEGIN")?;
                }
                Ok(Source { connection, name })
            }
            Location::Database(settings) => {
                let mut client = settings.connect()?;
                if crate::postgres::schema_version(&mut client, &name)?.is_none() {
                    return Err(StoreError::NoRun {
                        database: name,
                        run: None,
                    });
                }
                // One snapshot for the listing and every table of every run: a run being
                // written meanwhile is copied as it was at this moment, its samples and its
                // count alike.
                client
                    .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .map_err(query_failed)?;
                Ok(Source {
                    connection: Connection::Postgres {
                        client: Box::new(RefCell::new(client)),
                        run: 0,
                    },
                    name,
                })
            }
        }
    }

    pub(super) fn dialect(&self) -> Dialect {
        match self.connection {
            Connection::Sqlite(_) => Dialect::Sqlite,
            Connection::Postgres { .. } => Dialect::Postgres,
        }
    }

    /// Reads the run `id` from here on (a SQLite file has one run: the reads ignore it).
    pub(super) fn select_run(&mut self, id: i64) {
        if let Connection::Postgres { run, .. } = &mut self.connection {
            *run = id;
        }
    }

    pub(super) fn listings(&self) -> Result<Vec<RunListing>, StoreError> {
        let mut listings = self.connection.rows(
            "SELECT id, started_at, source, source_detail, complete, command_line FROM runs ORDER BY id",
            &[],
            |row| {
                Ok(RunListing {
                    id: row.get(0)?,
                    started_at: row.get(1)?,
                    source: row.get(2)?,
                    source_detail: row.get(3)?,
                    complete: row.get(4)?,
                    command_line: row.get(5)?,
                    samples: 0,
                    bytes: 0,
                })
            },
        )?;
        let counts: Vec<(i64, i64)> = self.connection.rows(
            "SELECT run_id, COUNT(*) FROM samples GROUP BY run_id",
            &[],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let all: u64 = counts.iter().map(|(_, count)| *count as u64).sum();
        match self.dialect() {
            // One run a file: every sample is its own, and so is the file.
            Dialect::Sqlite => {
                let bytes = self.connection.one(
                    "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                    &[],
                    |row| row.get::<i64>(0),
                )?;
                for listing in &mut listings {
                    listing.samples = all;
                    listing.bytes = bytes.max(0) as u64;
                }
            }
            Dialect::Postgres => {
                let bytes: i64 = self.connection.one(
                    "SELECT (pg_total_relation_size('samples') + pg_total_relation_size('trials') + pg_total_relation_size('configs') + pg_total_relation_size('replays'))::BIGINT",
                    &[],
                    |row| row.get(0),
                )?;
                for listing in &mut listings {
                    listing.samples = counts
                        .iter()
                        .find(|(run, _)| *run == listing.id)
                        .map_or(0, |(_, count)| *count as u64);
                    listing.bytes = if all == 0 {
                        0
                    } else {
                        (bytes.max(0) as u128 * u128::from(listing.samples) / u128::from(all))
                            as u64
                    };
                }
            }
        }
        Ok(listings)
    }

    pub(super) fn count_scans(&self) -> Result<u64, StoreError> {
        let count: i64 = self
            .connection
            .one("SELECT COUNT(*) FROM scans", &[], |row| row.get(0))?;
        Ok(count as u64)
    }

    /// The columns `table` has here: an older SQLite store has been upgraded on opening, so
    /// a column is missing only from a store written by hand or damaged.
    pub(super) fn columns(&self, table: &str) -> Result<HashSet<String>, StoreError> {
        let sql = match self.connection {
            Connection::Sqlite(_) => "SELECT name FROM pragma_table_info(?1)",
            Connection::Postgres { .. } => {
                "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?1"
            }
        };
        let names = self
            .connection
            .rows(sql, &[Parameter::Text(table)], |row| row.get::<String>(0))?;
        Ok(names.into_iter().collect())
    }

    /// The values of the run's row, as `plan` reads them.
    pub(super) fn run_row(&self, plan: &TablePlan, id: i64) -> Result<Vec<Value>, StoreError> {
        let values =
            self.connection
                .first(&plan.select(&format!("WHERE id = {id}")), &[], |row| {
                    (0..plan.read).map(|index| row.value(index)).collect()
                })?;
        values.ok_or_else(|| StoreError::NoRun {
            database: self.name.clone(),
            run: Some(id),
        })
    }
}

pub(super) fn query_failed(error: postgres::Error) -> StoreError {
    StoreError::Query(Box::new(error))
}
