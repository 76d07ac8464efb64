//! A copy into a PostgreSQL database: each run in one transaction, its rows by binary `COPY`,
//! a run the database holds already found and left alone.

use postgres::binary_copy::BinaryCopyInWriter;

use crate::columns::quoted;
use crate::database::Value;
use crate::postgres::PostgresError;
use crate::schema::Dialect;
use crate::StoreError;

use super::source::Source;
use super::{
    each_row, progress_at_end, table, CopyRefused, RunCopy, RunListing, TablePlan, RUN_TABLES,
};
use crate::parameter::{references, Parameter};

/// A PostgreSQL target.
pub(super) struct Database {
    pub(super) client: postgres::Client,
    /// As shown to users (no password).
    pub(super) name: String,
}

/// A run's identity: what makes two stored runs the same run.
pub(super) const IDENTITY: [&str; 4] = [
    "started_at_unix_ns",
    "commit_id",
    "command_line",
    "environment",
];

/// A stored scan's identity, for the same purpose.
const SCAN_IDENTITY: [&str; 4] = ["scanned_at_unix_ns", "target", "address", "command_line"];

/// The advisory lock class copies take (with the run's start as the second key), so that two
/// copies of one run at once cannot both find it missing. ("tls" in ASCII.)
const COPY_LOCK: i32 = 0x0074_6c73;

/// An error of the statement that was `doing` something in `database`.
pub(super) fn refused(
    database: &str,
    doing: &'static str,
) -> impl Fn(postgres::Error) -> StoreError {
    let database = database.to_string();
    move |source| {
        StoreError::Postgres(PostgresError::Statement {
            database: database.clone(),
            doing,
            source,
        })
    }
}

impl Database {
    /// Refuses the copy of `listing` when the database holds the same run with other
    /// contents.
    pub(super) fn check_same(
        &mut self,
        source: &mut Source,
        listing: &RunListing,
    ) -> Result<(), StoreError> {
        source.select_run(listing.id);
        let plan = TablePlan::new(&table("runs"), source, Dialect::Postgres)?;
        let values = source.run_row(&plan, listing.id)?;
        let failed = refused(&self.name, "looking for the run");
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let found = same_run(&mut transaction, &plan, &values).map_err(&failed)?;
        check_found(found, listing, source, &self.name).map(drop)
    }

    /// Copies one run in one transaction, or finds it there already.
    pub(super) fn copy_run(
        &mut self,
        source: &mut Source,
        listing: &RunListing,
        progress: &mut dyn FnMut(u64),
    ) -> Result<RunCopy, StoreError> {
        source.select_run(listing.id);
        let plan = TablePlan::new(&table("runs"), source, Dialect::Postgres)?;
        let values = source.run_row(&plan, listing.id)?;
        let name = self.name.clone();
        let failed = |doing| refused(&name, doing);
        let mut transaction = self
            .client
            .transaction()
            .map_err(failed("beginning the copy"))?;
        let start = plan
            .position("started_at_unix_ns")
            .and_then(|index| match values[index] {
                Value::Integer(start) => Some(start),
                _ => None,
            })
            .unwrap_or(0);
        transaction
            .execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&COPY_LOCK, &((start ^ (start >> 32)) as i32)],
            )
            .map_err(failed("locking the run"))?;
        let found =
            same_run(&mut transaction, &plan, &values).map_err(failed("looking for the run"))?;
        if let Some(run) = check_found(found, listing, source, &self.name)? {
            return Ok(RunCopy::AlreadyThere {
                from: listing.id,
                run,
                samples: listing.samples,
            });
        }
        let run: i64 = transaction
            .query_one("SELECT nextval(pg_get_serial_sequence('runs', 'id'))", &[])
            .map_err(failed("numbering the copied run"))?
            .get(0);
        let mut row = vec![Value::Integer(run)];
        row.extend(values);
        let bound: Vec<Parameter<'_>> = row.iter().map(Parameter::from).collect();
        transaction
            .execute(
                &crate::sink::positional_insert("runs", &plan.names, "$"),
                &references(&bound),
            )
            .map_err(failed("copying the run's row"))?;
        let mut samples = 0;
        for name in RUN_TABLES {
            let plan = TablePlan::new(&table(name), source, Dialect::Postgres)?;
            let copy = transaction
                .copy_in(&plan.copy())
                .map_err(failed("copying the run's rows"))?;
            let mut writer = BinaryCopyInWriter::new(copy, &plan.types);
            let rows = each_row(
                source,
                &plan,
                &[Value::Integer(run)],
                progress,
                &mut |values| {
                    writer
                        .write(&references(values))
                        .map_err(failed("copying the run's rows"))
                },
            )?;
            writer.finish().map_err(failed("copying the run's rows"))?;
            if name == "samples" {
                samples = rows;
            }
        }
        transaction
            .commit()
            .map_err(failed("committing the copied run"))?;
        progress_at_end(progress, samples);
        Ok(RunCopy::Copied {
            from: listing.id,
            to: run,
            samples,
        })
    }

    /// Copies the stored scans the database does not hold yet (the same start, target,
    /// address and command line), in one transaction: how many it copied and how many it
    /// held.
    pub(super) fn copy_scans(&mut self, source: &Source) -> Result<(u64, u64), StoreError> {
        let plan = TablePlan::new(&table("scans"), source, Dialect::Postgres)?;
        let failed = refused(&self.name, "copying the stored scans");
        let mut transaction = self.client.transaction().map_err(&failed)?;
        let insert = crate::sink::positional_insert("scans", &plan.names, "$");
        let (mut copied, mut there) = (0, 0);
        each_row(source, &plan, &[], &mut |_| {}, &mut |values| {
            if same_row(&mut transaction, "scans", &SCAN_IDENTITY, &plan, values)
                .map_err(&failed)?
                .is_some()
            {
                there += 1;
                return Ok(());
            }
            transaction
                .execute(&insert, &references(values))
                .map_err(&failed)?;
            copied += 1;
            Ok(())
        })?;
        transaction.commit().map_err(&failed)?;
        Ok((copied, there))
    }
}

/// The row of `table` in the database whose `identity` columns have the values of `values`
/// (a row read by `plan`): its id.
pub(super) fn same_row(
    transaction: &mut postgres::Transaction<'_>,
    table: &str,
    identity: &[&str],
    plan: &TablePlan,
    values: &[Parameter<'_>],
) -> Result<Option<i64>, postgres::Error> {
    same_row_of(transaction, table, identity, plan, values, None)
}

/// [`same_row`], among the rows whose id is `id` when one is given.
pub(super) fn same_row_of(
    transaction: &mut postgres::Transaction<'_>,
    table: &str,
    identity: &[&str],
    plan: &TablePlan,
    values: &[Parameter<'_>],
    id: Option<i64>,
) -> Result<Option<i64>, postgres::Error> {
    let mut conditions = Vec::new();
    let mut bound = Vec::new();
    let id = id.map(Value::Integer);
    if let Some(id) = &id {
        bound.push(Parameter::from(id));
        conditions.push("id = $1".to_string());
    }
    for name in identity {
        let value = plan
            .position(name)
            .map_or(Parameter::Null, |index| values[index].clone());
        bound.push(value);
        conditions.push(format!("{} = ${}", quoted(name), bound.len()));
    }
    let row = transaction.query_opt(
        &format!(
            "SELECT id FROM {table} WHERE {} ORDER BY id LIMIT 1",
            conditions.join(" AND ")
        ),
        &references(&bound),
    )?;
    Ok(row.map(|row| row.get(0)))
}

/// The run in the database that is the same as `listing` (read by `plan` as `values`):
/// its id, whether it is complete, and its samples.
pub(super) fn same_run(
    transaction: &mut postgres::Transaction<'_>,
    plan: &TablePlan,
    values: &[Value],
) -> Result<Option<(i64, bool, u64)>, postgres::Error> {
    let bound: Vec<Parameter<'_>> = values.iter().map(Parameter::from).collect();
    let Some(run) = same_row(transaction, "runs", &IDENTITY, plan, &bound)? else {
        return Ok(None);
    };
    let row = transaction.query_one(
        "SELECT complete, (SELECT count(*) FROM samples WHERE run_id = $1) FROM runs WHERE id = $1",
        &[&run],
    )?;
    Ok(Some((
        run,
        row.get::<_, i64>(0) != 0,
        row.get::<_, i64>(1) as u64,
    )))
}

/// The run the database holds already, when it holds this one whole; an error when it holds
/// it with other contents.
pub(super) fn check_found(
    found: Option<(i64, bool, u64)>,
    listing: &RunListing,
    source: &Source,
    database: &str,
) -> Result<Option<i64>, StoreError> {
    match found {
        None => Ok(None),
        Some((run, complete, held)) if held == listing.samples && complete == listing.complete => {
            Ok(Some(run))
        }
        Some((run, held_complete, held)) => Err(CopyRefused::Differs {
            database: database.to_string(),
            run,
            store: source.name.clone(),
            from: listing.id,
            held,
            held_complete,
            samples: listing.samples,
            complete: listing.complete,
        }
        .into()),
    }
}
