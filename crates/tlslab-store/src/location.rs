//! Where results are kept: a SQLite file (a path, or `sqlite://PATH`) or a PostgreSQL
//! database (`postgres://…`, completed from libpq's `PG…` variables and password file as
//! `psql` completes it). `--store` and `TLSLAB_STORE` are read through [`Location::parse`].

use std::fmt;
use std::path::{Path, PathBuf};

use crate::postgres::connection::Settings;
use crate::StoreError;

/// The environment variable that names the store when `--store` does not.
pub const STORE_VARIABLE: &str = "TLSLAB_STORE";

/// A results store's location.
#[derive(Debug, Clone)]
pub enum Location {
    /// A SQLite file: one run.
    File(PathBuf),
    /// A PostgreSQL database: many runs, from many machines.
    Database(Box<Settings>),
}

impl Location {
    /// `text` as a location: `postgres://` or `postgresql://` a database, `sqlite://PATH` or
    /// any other text a file.
    pub fn parse(text: &str) -> Result<Location, StoreError> {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Location::Database(Box::new(Settings::from_url(text)?)));
        }
        let path = text.strip_prefix("sqlite://").unwrap_or(text);
        Ok(Location::File(PathBuf::from(path)))
    }

    /// [`STORE_VARIABLE`]'s location, when it is set and not empty.
    pub fn from_environment() -> Option<Result<Location, StoreError>> {
        let text = std::env::var(STORE_VARIABLE).ok()?;
        (!text.is_empty()).then(|| Location::parse(&text))
    }

    /// The file, for a SQLite store.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Location::File(path) => Some(path),
            Location::Database(_) => None,
        }
    }
}

/// The location as shown to users: a database's URL with no password in it.
impl fmt::Display for Location {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(formatter, "{}", path.display()),
            Location::Database(settings) => write!(formatter, "{settings}"),
        }
    }
}
