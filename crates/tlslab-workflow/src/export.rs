//! `export`: a results store's samples as CSV or JSON Lines, or its stored scans or price
//! lists (`tlslab speed --out`) as JSON Lines, into a file (written whole, then renamed into place) or a writer the caller gives.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub use tlslab_store::ExportFormat;

use crate::files;
use crate::results::Results;
use crate::{Control, WorkflowError};

/// The store to export, and how.
#[derive(Debug, Clone)]
pub struct ExportRequest {
    /// A results store's run: a file, or a database's run.
    pub results: Results,
    /// The samples' format (the scans are JSON Lines whatever it says).
    pub format: ExportFormat,
    /// The stored scans instead of the samples: one scan a line, its `--json` object under
    /// `scan`.
    pub scans: bool,
    /// The stored price lists instead of the samples: one measured operation a line, as
    /// `tlslab speed --json` prints it, with the machine and the build.
    pub speed: bool,
    /// Whether an output file may replace a file of another kind (never an input or a store).
    pub force: bool,
}

impl ExportRequest {
    /// `results`' samples as CSV.
    pub fn new(results: impl Into<Results>) -> ExportRequest {
        ExportRequest {
            results: results.into(),
            format: ExportFormat::Csv,
            scans: false,
            speed: false,
            force: false,
        }
    }
}

/// Where an export goes.
pub enum Destination<'a> {
    /// A file, checked by the file rule, written beside itself and renamed into place once
    /// whole (a failed export leaves no half file).
    File(PathBuf),
    /// A writer of the caller's (the binary's stdout), buffered here and flushed at the end.
    Writer(&'a mut dyn Write),
}

/// Exports as `request` asks into `destination`. `control`'s notices say when the store
/// holds a run that did not finish.
pub fn export(
    request: &ExportRequest,
    destination: Destination<'_>,
    control: &Control,
) -> Result<(), WorkflowError> {
    if let Destination::File(path) = &destination {
        let output = files::Output::new("-o", path, files::Kind::Export);
        let inputs: Vec<&Path> = request.results.path().into_iter().collect();
        files::claim(&output, &inputs, request.force)?;
    }
    let store = request.results.open(control)?;
    let write = |out: &mut dyn Write| -> Result<(), WorkflowError> {
        if request.scans {
            write_scans(&store, out)
        } else if request.speed {
            write_speed(&store, out)
        } else {
            tlslab_store::export(&store, request.format, out)?;
            Ok(())
        }
    };
    match destination {
        Destination::File(path) => {
            let file = files::temporary_beside(&path)?;
            let mut out = BufWriter::new(file);
            write(&mut out)?;
            let file = out
                .into_inner()
                .map_err(|error| files::cannot_write(&path, error.into_error()))?;
            files::finish(file, &path)?;
        }
        Destination::Writer(writer) => {
            let mut out = BufWriter::new(writer);
            write(&mut out)?;
            out.flush().map_err(write_failed)?;
        }
    }
    Ok(())
}

/// A failure to write the export where it goes.
fn write_failed(error: std::io::Error) -> WorkflowError {
    WorkflowError::environment(
        "cannot write the output",
        "check free disk space where the output goes",
        Some(error),
    )
}

/// `scans`: each stored scan as one JSON line, its `--json` object under `scan`.
fn write_scans(store: &tlslab_store::Store, out: &mut dyn Write) -> Result<(), WorkflowError> {
    for scan in store.scans()? {
        let line = serde_json::json!({
            "id": scan.id,
            "scanned_at": scan.scanned_at,
            "target": scan.target,
            "address": scan.address,
            "server_name": scan.server_name,
            "grade": scan.grade,
            "connections": scan.connections,
            "command_line": scan.command_line,
            "scan": scan.report,
        });
        writeln!(out, "{line}").map_err(write_failed)?;
    }
    Ok(())
}

/// `speed`: each stored price-list row as one JSON line: the fields of `tlslab speed --json`,
/// with when, where (the machine) and with what (the build) it was measured.
fn write_speed(store: &tlslab_store::Store, out: &mut dyn Write) -> Result<(), WorkflowError> {
    for row in store.speed()? {
        let speed = &row.speed;
        let line = serde_json::json!({
            "id": row.id,
            "measured_at": row.measured_at,
            "backend": speed.backend,
            "library": speed.library,
            "kind": speed.kind,
            "primitive": speed.primitive,
            "operation": speed.operation,
            "bytes": speed.bytes,
            "threads": speed.threads,
            "operations": speed.operations,
            "seconds": speed.seconds,
            "per_second": speed.per_second,
            "seconds_per_operation": speed.seconds_per_operation,
            "cpu_seconds_per_operation": speed.cpu_seconds_per_operation,
            "supported": speed.supported,
            "note": speed.note,
            "cpu_model": speed.cpu_model,
            "cores": speed.cores,
            "build": speed.build,
            "tool_version": speed.tool_version,
            "command_line": row.command_line,
        });
        writeln!(out, "{line}").map_err(write_failed)?;
    }
    Ok(())
}
