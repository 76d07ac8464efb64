//! A copy into a new SQLite file: its one run as run 1, in one transaction.

use std::path::{Path, PathBuf};

use crate::database::Value;
use crate::schema::Dialect;
use crate::StoreError;

use super::source::Source;
use super::{
    each_row, progress_at_end, table, CopyOutcome, RunCopy, RunListing, TablePlan, RUN_TABLES,
};
use crate::parameter::Parameter;

/// The copy into a new SQLite file: its one run as run 1, and the scans.
pub(super) fn into_file(
    source: &mut Source,
    store: crate::NewStore,
    listing: Option<&RunListing>,
    with_scans: bool,
    progress: &mut dyn FnMut(u64),
) -> Result<CopyOutcome, StoreError> {
    let crate::NewStore {
        mut connection,
        lock,
        path,
    } = store;
    let path = path.as_path();
    let unwritable = |source: rusqlite::Error| StoreError::Unwritable {
        path: path.to_path_buf(),
        hint: "check the free disk space and the file's permissions",
        source: Box::new(source),
    };
    // One transaction: a copy cut off leaves a store without the run, never half of it.
    let transaction = connection.transaction().map_err(unwritable)?;
    let copy_table = |source: &Source,
                      plan: &TablePlan,
                      fixed: &[Value],
                      progress: &mut dyn FnMut(u64)|
     -> Result<u64, StoreError> {
        let mut statement = transaction
            .prepare(&crate::sink::positional_insert(
                plan.table,
                &plan.names,
                "?",
            ))
            .map_err(unwritable)?;
        each_row(source, plan, fixed, progress, &mut |values| {
            statement
                .execute(rusqlite::params_from_iter(values))
                .map(drop)
                .map_err(unwritable)
        })
    };
    let mut runs = Vec::new();
    if let Some(listing) = listing {
        source.select_run(listing.id);
        let plan = TablePlan::new(&table("runs"), source, Dialect::Sqlite)?;
        let mut row = vec![Value::Integer(1)];
        row.extend(source.run_row(&plan, listing.id)?);
        transaction
            .execute(
                &crate::sink::positional_insert("runs", &plan.names, "?"),
                rusqlite::params_from_iter(row.iter().map(Parameter::from)),
            )
            .map_err(unwritable)?;
        let mut samples = 0;
        for name in RUN_TABLES {
            let plan = TablePlan::new(&table(name), source, Dialect::Sqlite)?;
            let rows = copy_table(source, &plan, &[Value::Integer(1)], progress)?;
            if name == "samples" {
                samples = rows;
            }
        }
        progress_at_end(progress, samples);
        runs.push(RunCopy::Copied {
            from: listing.id,
            to: 1,
            samples,
        });
    }
    let mut scans = 0;
    if with_scans {
        let plan = TablePlan::new(&table("scans"), source, Dialect::Sqlite)?;
        scans = copy_table(source, &plan, &[], progress)?;
    }
    transaction
        .execute_batch(crate::schema::SAMPLES_INDEX)
        .map_err(unwritable)?;
    transaction.commit().map_err(unwritable)?;
    // As a run's store is left at its end: one self-contained file, no log beside it.
    connection
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .map_err(unwritable)?;
    drop(connection);
    drop(lock);
    Ok(CopyOutcome {
        runs,
        scans,
        scans_already_there: 0,
    })
}

/// Removes what a failed copy into a new file left (the file is the copy's own).
pub(super) fn remove_store(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}
