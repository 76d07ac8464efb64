//! Writing to stdout and stderr without panicking (`print!` panics when stdout is closed or
//! full). A closed pipe (`tlslab compare R.db | head -3`) ends the process quietly, as it does
//! for other Unix tools; any other failure to write results (a full disk) is an environment
//! error. Messages to stderr are best effort: nothing is lost when nobody reads them.

use std::fmt::Display;
use std::io::{self, Write};

use crate::failure::CliError;

/// Stdout for results: flushed writes, a closed reader ends the process with exit 0.
pub struct Stdout(io::Stdout);

/// Results go to stdout.
pub fn stdout() -> Stdout {
    Stdout(io::stdout())
}

impl Write for Stdout {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write(data).map_err(quiet_on_closed_pipe)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(quiet_on_closed_pipe)
    }
}

/// Whoever read our output has gone: there is nobody left to tell, and what was asked for
/// (`| head`) has been delivered.
fn quiet_on_closed_pipe(error: io::Error) -> io::Error {
    if error.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    error
}

/// A failure to write results to stdout.
pub fn write_failed(error: io::Error) -> CliError {
    CliError::environment(
        format!("cannot write the output: {error}"),
        "check free disk space where the output goes",
    )
}

/// Writes `text` to stdout as results.
pub fn print(text: impl Display) -> Result<(), CliError> {
    let mut out = stdout();
    write!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(write_failed)
}

/// Opens a results store for reading, and says so on stderr when its run did not finish (it
/// was interrupted, its lab server died, the disk filled, or it was cut off), so numbers
/// from it are not taken for a complete run's.
pub fn open_store(path: &std::path::Path) -> Result<tlslab_store::Store, CliError> {
    let store = tlslab_store::Store::open(path)?;
    if let Ok(run) = store.run() {
        if !run.complete {
            note(format_args!(
                "note: {} holds a run that did not finish: {}",
                path.display(),
                run.reason.as_deref().unwrap_or("no reason was recorded")
            ));
        }
    }
    Ok(store)
}

/// Writes a line to stderr; a closed or full stderr is ignored.
pub fn note(text: impl Display) {
    let mut error = io::stderr().lock();
    let _ = writeln!(error, "{text}");
}

/// `value` as pretty JSON; the types tlslab prints always serialize, and an empty object
/// stands in if one ever does not.
pub fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".into())
}
