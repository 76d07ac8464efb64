//! Where a workflow's results are: a store's [`Location`] (a SQLite file, or a PostgreSQL
//! database shared by many runs) and which run in it. A writer makes a new run there
//! ([`create`]); a reader opens one ([`Results::open`]): a file's one run, or a database's
//! run by number, its latest when none is asked for.
//!
//! Every message that names a store shows it through [`Location`]'s `Display`, which never
//! holds a password.

use std::fmt;
use std::path::{Path, PathBuf};

pub use tlslab_store::Location;
use tlslab_store::{NewRun, Store};

use crate::{Control, Notice, WorkflowError};

/// A results store and one run in it.
#[derive(Debug, Clone)]
pub struct Results {
    /// The store: a file or a database.
    pub location: Location,
    /// A database's run, by number (its latest when `None`). A file holds one run: given,
    /// it must be that one's.
    pub run: Option<i64>,
    /// What the writer of a new run in a database has to say (it went away, came back).
    notices: Option<tlslab_store::postgres::Notices>,
}

impl Results {
    /// The one run of the file at `path`.
    pub fn file(path: impl Into<PathBuf>) -> Results {
        Results {
            location: Location::File(path.into()),
            run: None,
            notices: None,
        }
    }

    /// `run` of the store at `location` (the latest when `None`).
    pub fn new(location: Location, run: Option<i64>) -> Results {
        Results {
            location,
            run,
            notices: None,
        }
    }

    /// Says what the writer of this new run had to say (its database went away and came
    /// back, or not), as warnings: the run's numbers stand, and the user learns of it.
    pub(crate) fn say_writer_notices(&self, control: &Control) {
        for notice in self.notices.iter().flat_map(|notices| notices.all()) {
            control.notice(Notice::Warning(notice));
        }
    }

    /// The file, for a SQLite store.
    pub fn path(&self) -> Option<&Path> {
        self.location.path()
    }

    /// Opens the run for reading, and says so ([`Notice::Unfinished`]) when it did not
    /// finish, so numbers from it are not taken for a complete run's. A file given a run
    /// other than its own is refused: a file holds one run.
    pub fn open(&self, control: &Control) -> Result<Store, WorkflowError> {
        say_warnings(&self.location, control);
        let store = match &self.location {
            Location::File(path) => Store::open(path)?,
            Location::Database(_) => Store::open_location(&self.location, self.run)?,
        };
        if let (Location::File(path), Some(asked)) = (&self.location, self.run) {
            let held = store.run_number()?;
            if held != Some(asked) {
                return Err(WorkflowError::usage(
                    format!(
                        "{}: a results file holds one run ({}), not run {asked}",
                        path.display(),
                        held.map_or("none here".into(), |run| format!("run {run}"))
                    ),
                    "leave --run out for a file; --run chooses among a database's runs",
                ));
            }
        }
        if let Ok(run) = store.run() {
            if !run.complete {
                control.notice(Notice::Unfinished {
                    store: PathBuf::from(self.named(&store).to_string()),
                    reason: run.reason.clone(),
                });
            }
        }
        Ok(store)
    }

    /// This run as `store` (opened from it) numbers it: a database's latest run by its
    /// number, for messages and for the names of files written from it.
    pub fn named(&self, store: &Store) -> Results {
        match &self.location {
            Location::File(_) => self.clone(),
            Location::Database(_) => Results {
                location: self.location.clone(),
                run: self.run.or_else(|| store.run_number().ok().flatten()),
                notices: self.notices.clone(),
            },
        }
    }

    /// A file written from this run (a report) when none is named: beside a results file
    /// with `extension`, or for a database's run, `DATABASE-runN.EXTENSION` here.
    pub fn beside(&self, extension: &str) -> PathBuf {
        match &self.location {
            Location::File(path) => path.with_extension(extension),
            Location::Database(settings) => {
                let name: String = settings
                    .dbname()
                    .chars()
                    .map(|c| match c.is_ascii_alphanumeric() || "-_.".contains(c) {
                        true => c,
                        false => '_',
                    })
                    .collect();
                let run = self.run.map_or(String::new(), |run| format!("-run{run}"));
                PathBuf::from(format!("{name}{run}.{extension}"))
            }
        }
    }

    /// How a reader's command line names this run: the file's path, or `--store URL --run N`
    /// (the URL as shown: a password in it is `***`).
    pub fn as_arguments(&self) -> String {
        match (&self.location, self.run) {
            (Location::File(path), _) => path.display().to_string(),
            (Location::Database(_), Some(run)) => {
                format!("--store '{}' --run {run}", self.location)
            }
            (Location::Database(_), None) => format!("--store '{}'", self.location),
        }
    }
}

/// A file or a database's run, as users are shown it: the path, or the URL without its
/// password and the run's number (`postgres://tlslab@db:5432/lab?sslmode=prefer (run 17)`).
impl fmt::Display for Results {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.location)?;
        match (&self.location, self.run) {
            (Location::Database(_), Some(run)) => write!(formatter, " (run {run})"),
            _ => Ok(()),
        }
    }
}

impl From<PathBuf> for Results {
    fn from(path: PathBuf) -> Results {
        Results::file(path)
    }
}

impl From<&PathBuf> for Results {
    fn from(path: &PathBuf) -> Results {
        Results::file(path)
    }
}

impl From<&Path> for Results {
    fn from(path: &Path) -> Results {
        Results::file(path)
    }
}

/// A new run at `location`: a new file, or a new numbered run in a database, reached (and
/// its tables made or checked) now, before anything is measured or read.
pub(crate) fn create(
    location: &Location,
    control: &Control,
) -> Result<(NewRun, Results), WorkflowError> {
    say_warnings(location, control);
    let created = Store::create_at(location).map_err(|source| WorkflowError::StoreCreate {
        path: PathBuf::from(location.to_string()),
        source,
    })?;
    Ok(described(created, location))
}

/// Joins run `run` of the database at `location` as one more writer of kind `source`
/// (capture points adding to one capture), reached now, before anything is read.
pub(crate) fn join(
    location: &Location,
    run: i64,
    source: &str,
    control: &Control,
) -> Result<(NewRun, Results), WorkflowError> {
    say_warnings(location, control);
    let joined =
        Store::join_at(location, run, source).map_err(|source| WorkflowError::StoreCreate {
            path: PathBuf::from(location.to_string()),
            source,
        })?;
    Ok(described(joined, location))
}

/// A new or joined run, and where it is.
fn described(created: NewRun, location: &Location) -> (NewRun, Results) {
    let mut results = Results::new(location.clone(), created.run());
    results.notices = created.notices();
    (created, results)
}

/// What reading a database's settings noticed (a password file others may read, ignored).
fn say_warnings(location: &Location, control: &Control) {
    if let Location::Database(settings) = location {
        for warning in settings.warnings() {
            control.notice(Notice::Warning(warning.clone()));
        }
    }
}
