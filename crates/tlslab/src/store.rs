//! `tlslab store ls` and `tlslab store copy`: the flags as requests for the store workflows
//! ([`tlslab_workflow::store`]), and what they found or copied printed. Stores are shown as
//! [`Location`] displays them: a database's URL without its password.

use std::io::{IsTerminal, Write};

use clap::{Args, Subcommand};
use tlslab_workflow::store::{
    Location, RunCopy, RunListing, StoreCopyOutcome, StoreCopyRequest, StoreListRequest,
};
use tlslab_workflow::WorkflowError;

use crate::failure::CliError;
use crate::output;

/// Examples of `tlslab store` (they work as typed, given the stores they name).
const STORE_EXAMPLES: &str = "Examples:
  tlslab store ls postgres://tlslab@db.example/tlslab
  tlslab store copy tlslab-results/run.db postgres://tlslab@db.example/tlslab
  tlslab store copy postgres://tlslab@db.example/tlslab copy.db --run 3

A store is a results file (a path, or sqlite://PATH) or a PostgreSQL database
(postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…], completed from PGHOST,
PGUSER, PGPASSWORD, the password file… as psql is).";

#[derive(Debug, Args)]
#[command(after_help = STORE_EXAMPLES)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// List the runs a results store holds: id, start, source, whether complete, samples,
    /// size and command line.
    #[command(after_help = STORE_EXAMPLES)]
    Ls(LsArgs),
    /// Copy runs between results stores, SQLite files and PostgreSQL databases either way:
    /// every run (and the stored scans), or one with --run. A run a database holds already
    /// is not copied again.
    #[command(after_help = STORE_EXAMPLES)]
    Copy(CopyArgs),
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// A results file (a path or sqlite://PATH) or a PostgreSQL database (postgres://…).
    pub store: String,
    /// Print the runs as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// The store copied from: a results file or a PostgreSQL database.
    pub from: String,
    /// The store copied to: a new results file (it holds one run), or a PostgreSQL database
    /// (its tables are made if it has none).
    pub to: String,
    /// Copy only this run: its id as `tlslab store ls FROM` shows it (a file's run is 1).
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,
}

pub fn store(args: &StoreArgs) -> Result<i32, CliError> {
    match &args.command {
        StoreCommand::Ls(args) => list(args),
        StoreCommand::Copy(args) => copy(args),
    }
}

fn location(text: &str) -> Result<Location, CliError> {
    Location::parse(text).map_err(|error| CliError::from(WorkflowError::from(error)))
}

fn list(args: &LsArgs) -> Result<i32, CliError> {
    let request = StoreListRequest {
        store: location(&args.store)?,
    };
    let listed = tlslab_workflow::store::list(&request, &crate::run::notices())?;
    if args.json {
        let runs: Vec<serde_json::Value> = listed.runs.iter().map(run_json).collect();
        output::print(format_args!(
            "{}\n",
            output::json(&serde_json::json!({ "store": listed.store, "runs": runs }))
        ))?;
        return Ok(0);
    }
    output::print_fitted(&render_runs(&listed.store, &listed.runs))?;
    Ok(0)
}

/// A run as `store ls --json` prints it: the command line as its arguments.
fn run_json(run: &RunListing) -> serde_json::Value {
    serde_json::json!({
        "id": run.id,
        "started_at": run.started_at,
        "source": run.source,
        "source_detail": run.source_detail,
        "complete": run.complete,
        "samples": run.samples,
        "bytes": run.bytes,
        "command_line": serde_json::from_str::<serde_json::Value>(&run.command_line)
            .unwrap_or_else(|_| run.command_line.clone().into()),
    })
}

/// The runs as a table, one line each, under a line naming the store.
fn render_runs(store: &str, runs: &[RunListing]) -> String {
    if runs.is_empty() {
        return format!("{store}: no runs\n");
    }
    let header = [
        "run", "started", "source", "complete", "samples", "size", "command",
    ];
    let rows: Vec<[String; 7]> = runs
        .iter()
        .map(|run| {
            [
                run.id.to_string(),
                run.started_at.clone(),
                run.source.clone(),
                if run.complete { "yes" } else { "no" }.into(),
                run.samples.to_string(),
                size(run.bytes),
                command(&run.command_line),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut text = String::new();
        for (index, cell) in cells.iter().enumerate() {
            let width = widths[index];
            // Numbers to the right, words to the left; the command last, as it is.
            match index {
                0 | 4 | 5 => text.push_str(&format!("{cell:>width$}  ")),
                6 => text.push_str(cell),
                _ => text.push_str(&format!("{cell:<width$}  ")),
            }
        }
        text.push('\n');
        text
    };
    let mut out = format!(
        "{store}: {} run{}\n",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    out.push_str(&line(header));
    for row in &rows {
        out.push_str(&line(row.each_ref().map(String::as_str)));
    }
    out
}

/// Bytes in binary units, one decimal past KiB.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The stored command line (a JSON array) as a shell would show it: arguments with spaces
/// or quotes in single quotes. Text that is not such an array is shown as it is.
fn command(stored: &str) -> String {
    let Ok(arguments) = serde_json::from_str::<Vec<String>>(stored) else {
        return stored.to_string();
    };
    arguments
        .iter()
        .map(|argument| {
            let plain = !argument.is_empty()
                && argument
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
            match plain {
                true => argument.clone(),
                false => format!("'{}'", argument.replace('\'', r"'\''")),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn copy(args: &CopyArgs) -> Result<i32, CliError> {
    let request = StoreCopyRequest {
        from: location(&args.from)?,
        to: location(&args.to)?,
        run: args.run,
    };
    // A line on a terminal that says how far a long copy is.
    let terminal = std::io::stderr().is_terminal();
    let mut progress = |samples: u64| {
        if terminal {
            let _ = write!(std::io::stderr(), "\rcopying: {samples} samples");
        }
    };
    let copied = tlslab_workflow::store::copy(&request, &crate::run::notices(), &mut progress);
    if terminal {
        let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(40));
    }
    output::print_fitted(&render_copy(&copied?))?;
    Ok(0)
}

/// What the copy did, one line a run, then the scans.
fn render_copy(copied: &StoreCopyOutcome) -> String {
    let (from, to) = (&copied.from, &copied.to);
    let mut out = String::new();
    for run in &copied.copied.runs {
        out.push_str(&match run {
            RunCopy::Copied {
                from: id,
                to: new,
                samples,
            } => format!("copied run {id} of {from} to {to} as run {new}: {samples} samples\n"),
            RunCopy::Appended {
                from: id,
                to: run,
                samples,
            } => format!(
                "appended run {id} of the spool {from} to run {run} of {to}: {samples} samples\n"
            ),
            RunCopy::AlreadyThere {
                from: id,
                run,
                samples,
            } => format!(
                "run {id} of {from} is in {to} already, as run {run} ({samples} samples): nothing copied\n"
            ),
        });
    }
    let outcome = &copied.copied;
    if outcome.scans > 0 || outcome.scans_already_there > 0 {
        out.push_str(&format!(
            "copied {} stored scan{} to {to}{}\n",
            outcome.scans,
            if outcome.scans == 1 { "" } else { "s" },
            match outcome.scans_already_there {
                0 => String::new(),
                there => format!(" ({there} there already)"),
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(44_777_472), "42.7 MiB");
    }

    #[test]
    fn command_lines_are_shown_as_a_shell_takes_them() {
        assert_eq!(
            command(r#"["tlslab","run","--label","a b","-n","20"]"#),
            "tlslab run --label 'a b' -n 20"
        );
        assert_eq!(command(r#"["it's",""]"#), r"'it'\''s' ''");
        assert_eq!(command("not json"), "not json");
    }
}
