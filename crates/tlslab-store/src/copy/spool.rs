//! A spool given to a copy: appended to the run it was spooled from (`postgres/spool.rs`),
//! not copied as a run of its own.

use std::path::Path;

use crate::schema::Dialect;
use crate::{Location, StoreError};

use super::database::{refused, same_row_of, IDENTITY};
use super::source::Source;
use super::{table, CopyOutcome, CopyRefused, RunCopy, TablePlan};
use crate::parameter::Parameter;

/// The database and run a spool belongs to, and whether it was uploaded; `None` for a file
/// that is not a spool (or not a store: opening it as one says why).
pub(super) fn spooled(path: &Path) -> Option<(String, i64, bool)> {
    if !path.is_file() {
        return None;
    }
    crate::postgres::spool::marked(path).ok().flatten()
}

/// Appends the spool at `path` to its run in the database `settings` reaches (the one it was
/// spooled from: the run there must be the spool's run), once.
pub(super) fn upload_spool(
    path: &Path,
    (spooled_from, run, uploaded): (String, i64, bool),
    settings: &crate::postgres::connection::Settings,
    asked: Option<i64>,
    progress: &mut dyn FnMut(u64),
) -> Result<CopyOutcome, StoreError> {
    let shown = path.display().to_string();
    // Taken before the spool is read, and held until it is uploaded.
    let _lock = crate::recovery::RunLock::take(path).map_err(|_| CopyRefused::SpoolInUse {
        spool: shown.clone(),
    })?;
    let (listing, plan, values) = {
        let source = Source::open(&Location::File(path.to_path_buf()))?;
        let listing = source
            .listings()?
            .into_iter()
            .find(|listing| asked.is_none_or(|asked| asked == listing.id))
            .ok_or_else(|| StoreError::NoRun {
                database: shown.clone(),
                run: asked,
            })?;
        let plan = TablePlan::new(&table("runs"), &source, Dialect::Postgres)?;
        let values = source.run_row(&plan, listing.id)?;
        (listing, plan, values)
        // The spool's read ends here: the upload writes its mark.
    };
    let target = settings.to_string();
    let not_its_run = || CopyRefused::NotTheSpoolsRun {
        spool: shown.clone(),
        database: spooled_from.clone(),
        run,
        target: target.clone(),
    };
    let mut client = settings.connect()?;
    if crate::postgres::schema_version(&mut client, &target)?.is_none() {
        return Err(not_its_run().into());
    }
    let failed = refused(&target, "looking for the spool's run");
    let mut transaction = client.transaction().map_err(&failed)?;
    let bound: Vec<Parameter<'_>> = values.iter().map(Parameter::from).collect();
    let found = same_row_of(
        &mut transaction,
        "runs",
        &IDENTITY,
        &plan,
        &bound,
        Some(run),
    )
    .map_err(&failed)?;
    drop(transaction);
    if found.is_none() {
        return Err(not_its_run().into());
    }
    let done = match uploaded {
        true => RunCopy::AlreadyThere {
            from: listing.id,
            run,
            samples: listing.samples,
        },
        false => {
            let samples = crate::postgres::spool::upload(path, &mut client, run)?;
            progress(samples);
            RunCopy::Appended {
                from: listing.id,
                to: run,
                samples,
            }
        }
    };
    Ok(CopyOutcome {
        runs: vec![done],
        scans: 0,
        scans_already_there: 0,
    })
}
