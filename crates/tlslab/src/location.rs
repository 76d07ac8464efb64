//! How the command line names a results store: `--store URL` (or a path), `--out PATH` (the
//! same as `--store PATH`), a reader's positional RESULTS (a path or a URL alike), the
//! `TLSLAB_STORE` variable when none of them is given, and a reader's `--run ID`. Every one
//! is read by tlslab-store's `Location::parse`: `postgres://` is a database, anything else a
//! file.

use std::path::Path;

use tlslab_store::{Location, STORE_VARIABLE};
use tlslab_workflow::results::Results;
use tlslab_workflow::WorkflowError;

use crate::cli::ReadStoreArgs;
use crate::failure::CliError;

/// The store a command that writes results writes into: `--store`, else `--out`, else
/// `TLSLAB_STORE`; `None` for the default file. clap refuses `--store` with `--out`.
pub fn to_write(store: Option<&str>, out: Option<&Path>) -> Result<Option<Location>, CliError> {
    if let Some(text) = store {
        return parse(text).map(Some);
    }
    if let Some(path) = out {
        return Ok(Some(Location::File(path.to_path_buf())));
    }
    from_environment()
}

/// The store and run a command that reads results reads: its positional RESULTS, else
/// `--store`, else `TLSLAB_STORE`; with `--run`.
pub fn to_read(given: Option<&Path>, args: &ReadStoreArgs) -> Result<Results, CliError> {
    let location = match (given, args.store.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(CliError::usage(
                "the results store is given twice: as RESULTS and with --store",
                "give one of them",
            ))
        }
        (Some(path), None) => match path.to_str() {
            Some(text) => parse(text)?,
            // Not UTF-8, so not a URL: a file's path as the system spells it.
            None => Location::File(path.to_path_buf()),
        },
        (None, Some(text)) => parse(text)?,
        (None, None) => from_environment()?.ok_or_else(|| {
            CliError::usage(
                "no results store given",
                format!(
                    "give a results file (tlslab report RESULTS.db), or --store URL, or set {STORE_VARIABLE}"
                ),
            )
        })?,
    };
    Ok(Results::new(location, args.run))
}

/// `--run` and `--store` are a store's: with two sample files they mean nothing.
pub fn refuse_with_sample_files(args: &ReadStoreArgs) -> Result<(), CliError> {
    if args.store.is_none() && args.run.is_none() {
        return Ok(());
    }
    Err(CliError::usage(
        "--store and --run choose a results store; two inputs are sample files",
        "compare a store's Configs with one store (a file, or --store URL), or two sample files alone",
    ))
}

/// `text` as a store's location (a malformed URL is a usage error that never repeats it).
fn parse(text: &str) -> Result<Location, CliError> {
    Location::parse(text).map_err(|error| CliError::from(WorkflowError::from(error)))
}

/// `TLSLAB_STORE`'s location, when it is set (an error names the variable).
fn from_environment() -> Result<Option<Location>, CliError> {
    Location::from_environment().transpose().map_err(|error| {
        let mut error = CliError::from(WorkflowError::from(error));
        error.message = format!("{STORE_VARIABLE}: {}", error.message);
        error
    })
}
