//! Output files that never destroy what a command reads: an output path that is the input
//! (also through a link or another spelling of the path) is refused, an existing tlslab
//! results store is never overwritten, and outputs are written to a temporary file beside
//! their place and renamed into it once whole, so an interrupted write leaves the old file.

use std::io::Write;
use std::path::Path;

use crate::failure::CliError;

/// Refuses `output` when it is one of `inputs` or an existing results store.
pub fn check_output(output: &Path, inputs: &[&Path]) -> Result<(), CliError> {
    for input in inputs {
        if same_file::is_same_file(output, input).unwrap_or(false) {
            return Err(CliError::usage(
                format!(
                    "{} is the results file {}: writing it would destroy the results",
                    output.display(),
                    input.display()
                ),
                "give another output path (-o, --out)",
            ));
        }
    }
    if tlslab_store::is_store(output) {
        return Err(CliError::usage(
            format!(
                "{} is a tlslab results store, and tlslab never overwrites one",
                output.display()
            ),
            "give another output path (-o, --out)",
        ));
    }
    Ok(())
}

/// A temporary file beside `path`, to be renamed onto it with [`finish`].
pub fn temporary_beside(path: &Path) -> Result<tempfile::NamedTempFile, CliError> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".tlslab-")
        .tempfile_in(directory)
        // tempfile's error ends with " at path <temporary name>", a name the user never
        // gave (and its cause is not reachable through `source`): show the cause alone.
        .map_err(|error| {
            let text = error.to_string();
            let cause = text.split(" at path ").next().unwrap_or_default();
            cannot_write(path, std::io::Error::new(error.kind(), cause.to_string()))
        })
}

/// Renames a finished temporary file onto `path`.
pub fn finish(file: tempfile::NamedTempFile, path: &Path) -> Result<(), CliError> {
    file.persist(path)
        .map(drop)
        .map_err(|error| cannot_write(path, error.error))
}

/// Writes `data` to `path` whole, or not at all.
pub fn write_whole(path: &Path, data: &[u8]) -> Result<(), CliError> {
    let mut file = temporary_beside(path)?;
    file.write_all(data)
        .and_then(|()| file.flush())
        .map_err(|error| cannot_write(path, error))?;
    finish(file, path)
}

/// A file that cannot be written: the machine's problem (a missing or read-only directory, a
/// full disk).
pub fn cannot_write(path: &Path, error: std::io::Error) -> CliError {
    CliError::environment(
        format!("cannot write {}: {error}", path.display()),
        "check that the output directory exists, is writable and has free space",
    )
}
