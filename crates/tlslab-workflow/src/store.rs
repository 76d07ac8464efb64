//! `store ls` and `store copy`: the runs a results store holds, and runs copied between
//! stores (a SQLite file or a PostgreSQL database, either way round), by tlslab-store's
//! [`list_runs`](tlslab_store::list_runs) and [`copy`](tlslab_store::copy). Stores are named
//! by [`Location`]s, shown to users without their passwords.

pub use tlslab_store::{CopyOutcome, Location, RunCopy, RunListing};

use crate::{Control, WorkflowError};

/// The store whose runs to list.
#[derive(Debug, Clone)]
pub struct StoreListRequest {
    /// A results file or a PostgreSQL database.
    pub store: Location,
}

/// A store's runs.
#[derive(Debug, Clone)]
pub struct StoreListOutcome {
    /// The store, as shown to users (no password).
    pub store: String,
    /// Its runs, by id.
    pub runs: Vec<RunListing>,
}

/// Runs to copy, and where.
#[derive(Debug, Clone)]
pub struct StoreCopyRequest {
    /// The store copied from.
    pub from: Location,
    /// The store copied to: a new results file (one run), or a PostgreSQL database (its
    /// tables are made if it has none).
    pub to: Location,
    /// The one run to copy, by its id in `from`; none: every run, and the stored scans.
    pub run: Option<i64>,
}

/// What a copy did.
#[derive(Debug, Clone)]
pub struct StoreCopyOutcome {
    /// The store copied from, as shown to users (no password).
    pub from: String,
    /// The store copied to, likewise.
    pub to: String,
    /// Each run's fate and the scans copied.
    pub copied: CopyOutcome,
}

/// Lists the runs of `request.store`.
pub fn list(
    request: &StoreListRequest,
    _control: &Control,
) -> Result<StoreListOutcome, WorkflowError> {
    Ok(StoreListOutcome {
        store: request.store.to_string(),
        runs: tlslab_store::list_runs(&request.store)?,
    })
}

/// Copies as `request` asks; `progress` is told the samples copied so far as they go.
pub fn copy(
    request: &StoreCopyRequest,
    _control: &Control,
    progress: &mut dyn FnMut(u64),
) -> Result<StoreCopyOutcome, WorkflowError> {
    if let Location::File(path) = &request.to {
        if path.exists() {
            return Err(WorkflowError::usage(
                format!("{}: already exists", path.display()),
                "a copy goes into a new results file, never into or over an existing one: give a path that does not exist, or a PostgreSQL database (postgres://…)",
            ));
        }
    }
    let copied = tlslab_store::copy(&request.from, &request.to, request.run, progress)?;
    Ok(StoreCopyOutcome {
        from: request.from.to_string(),
        to: request.to.to_string(),
        copied,
    })
}
