//! `tlslab speed`: the price of each cryptographic primitive, per backend, printed as
//! `openssl speed` prints its table (time per sign, per verify, signs/s, verifies/s) with a
//! table per kind, or as JSON Lines. The times are CPU time per operation on the thread that
//! ran it (as `openssl speed` counts user time), the rates operations per wall-clock second
//! of all threads together: on a quiet machine with one thread they agree, and where they do
//! not, something else had the CPU. The speed workflow (tlslab-workflow) measures and
//! stores.

use std::fmt::Write as _;

use clap::Args;
use tlslab_workflow::speed::{Backend, Kind, Measurement, SpeedOutcome, SpeedRequest};

use crate::failure::{exit_code, CliError};
use crate::output;

const SPEED_EXAMPLES: &str = "Examples:
  tlslab speed                                   every primitive, both backends, 1 s each
  tlslab speed rsa ecdsa ed25519 --seconds 0.2   signatures only, a quick look
  tlslab speed --backend openssl --threads 1,2   how OpenSSL scales to two threads
  tlslab speed mlkem x25519mlkem768 --json       post-quantum key exchange as JSON Lines
  tlslab speed --out speed.db && tlslab export speed.db --speed";

#[derive(Debug, Args)]
#[command(after_help = SPEED_EXAMPLES)]
pub struct SpeedArgs {
    /// Primitives to measure (default: all): a name (rsa2048, ecdsa-p256, ed25519, mldsa65,
    /// x25519, ffdhe2048, mlkem768, x25519mlkem768, aes128gcm, chacha20, hkdf-sha256, ...), a
    /// family (rsa, dsa, ecdsa, mldsa, mlkem, ffdhe, hkdf) or a kind (signature,
    /// key_exchange, kem, hybrid, aead).
    #[arg(value_name = "PRIMITIVE")]
    pub primitives: Vec<String>,
    /// Backends: rustls (its crypto provider, aws-lc-rs), openssl (the linked OpenSSL 4).
    #[arg(long, value_delimiter = ',', default_value = "rustls,openssl", value_parser = ["rustls", "openssl"])]
    pub backend: Vec<String>,
    /// Thread counts, each measured apart: N threads each run the operation, and the rate is
    /// theirs together.
    #[arg(long, value_delimiter = ',', default_value = "1", value_name = "N")]
    pub threads: Vec<u32>,
    /// Seconds each operation runs, per backend and thread count (keys are made before).
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub seconds: f64,
    /// Print JSON Lines: one object per operation, with the machine and the build.
    #[arg(long)]
    pub json: bool,
    /// Also add the rows to this results store (made if missing; a store that exists keeps
    /// its runs, scans and earlier price lists), for `tlslab export FILE --speed`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    /// The same as --out, for a results file (sqlite://PATH or a path), or a PostgreSQL
    /// database (postgres://USER@HOST/DATABASE), beside its runs; $TLSLAB_STORE is not read.
    #[arg(long, value_name = "PATH", conflicts_with = "out")]
    pub store: Option<String>,
    /// With --out: replace an existing file that is not a results store (never a store or
    /// an input).
    #[arg(long)]
    pub force: bool,
}

/// The results store the rows are added to: `--out`, or `--store` (a file or a database).
fn speed_store(args: &SpeedArgs) -> Result<Option<tlslab_store::Location>, CliError> {
    let Some(text) = &args.store else {
        return Ok(args.out.clone().map(tlslab_store::Location::File));
    };
    Ok(Some(
        tlslab_store::Location::parse(text).map_err(tlslab_workflow::WorkflowError::from)?,
    ))
}

pub fn speed(args: &SpeedArgs) -> Result<i32, CliError> {
    let request = SpeedRequest {
        backends: args
            .backend
            .iter()
            .filter_map(|name| Backend::parse(name))
            .collect(),
        threads: args.threads.clone(),
        seconds: args.seconds,
        primitives: args.primitives.clone(),
        out: speed_store(args)?,
        force: args.force,
        invocation: crate::run::invocation()?,
    };
    let control = tlslab_workflow::Control {
        stop: crate::run::stop_on_signals(),
        ..crate::run::notices()
    };
    let mut table = Table::default();
    let mut printed = Ok(());
    let outcome = tlslab_workflow::speed::speed(&request, &control, &mut |row| {
        if !args.json && printed.is_ok() {
            printed = table.add(row);
            if printed.is_err() {
                control.stop.request();
            }
        }
    })?;
    printed?;
    if args.json {
        print_json(&outcome)?;
    } else {
        table.flush()?;
        output::print(format_args!(
            "\nmachine: {} ({} cores)\nbuild: {}\n",
            outcome.machine.cpu_model, outcome.machine.cores, outcome.build
        ))?;
        if let Some(location) = &outcome.stored {
            output::print(format_args!("stored in {location}\n"))?;
        }
    }
    if outcome.stopped {
        return Err(CliError {
            code: exit_code(tlslab_workflow::ErrorKind::Interrupted),
            causes: Vec::new(),
            message: "stopped: the operations not yet measured are missing".into(),
            hint: "run it again, with fewer primitives or a smaller --seconds".into(),
        });
    }
    let failed: Vec<String> = outcome
        .rows
        .iter()
        .filter(|row| row.supported && row.per_second.is_none() && row.kind != Kind::Hybrid)
        .map(|row| format!("{} {} {}", row.backend.name(), row.primitive, row.operation))
        .collect();
    if !failed.is_empty() {
        return Err(CliError {
            code: exit_code(tlslab_workflow::ErrorKind::Failures),
            causes: Vec::new(),
            message: format!("{} operations failed: {}", failed.len(), failed.join(", ")),
            hint: "their rows say what the library answered".into(),
        });
    }
    Ok(0)
}

/// JSON Lines: each row as measured, with the machine and the build.
fn print_json(outcome: &SpeedOutcome) -> Result<(), CliError> {
    let mut text = String::new();
    for row in &outcome.rows {
        let mut value = serde_json::to_value(row).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("cpu_model".into(), outcome.machine.cpu_model.clone().into());
            object.insert("cores".into(), outcome.machine.cores.into());
            object.insert("build".into(), outcome.build.clone().into());
        }
        let _ = writeln!(text, "{value}");
    }
    output::print(text)
}

/// The terminal tables, printed a primitive at a time as its operations are measured: a
/// heading for each backend and thread count, a column heading for each kind.
#[derive(Default)]
struct Table {
    /// The block printed last: backend, threads, kind.
    block: Option<(Backend, u32, Kind)>,
    /// The rows of the primitive being measured.
    pending: Vec<Measurement>,
}

impl Table {
    fn add(&mut self, row: &Measurement) -> Result<(), CliError> {
        let same = self.pending.first().is_some_and(|first| {
            first.backend == row.backend
                && first.threads == row.threads
                && first.primitive == row.primitive
                && first.bytes == row.bytes
        });
        if !same {
            self.flush()?;
        }
        self.pending.push(row.clone());
        // A primitive is whole when it has every operation of its kind.
        if self.pending.len() == row.kind.operations().len() {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), CliError> {
        let rows = std::mem::take(&mut self.pending);
        let Some(first) = rows.first() else {
            return Ok(());
        };
        let mut text = String::new();
        let block = (first.backend, first.threads, first.kind);
        if self.block.map(|(backend, threads, _)| (backend, threads)) != Some((block.0, block.1)) {
            let threads = match first.threads {
                1 => "1 thread (time: CPU per operation; rates: per wall-clock second)".to_string(),
                n => format!(
                    "{n} threads (time: CPU per operation on its thread; rates: per wall-clock second, all threads together)"
                ),
            };
            let _ = writeln!(
                text,
                "\n{}: {}, {threads}",
                first.backend.name(),
                first.library
            );
        }
        if self.block != Some(block) {
            let _ = writeln!(text, "{}", heading(first.kind));
        }
        self.block = Some(block);
        let _ = writeln!(text, "{}", line(&rows));
        output::print(tlslab_core::terminal::escape_lines(&text))
    }
}

/// The first column's width.
const LABEL: usize = 36;
/// Every other column's width.
const COLUMN: usize = 12;

/// A kind's column heading: each operation's time, then each operation's rate (and an
/// AEAD's throughput).
fn heading(kind: Kind) -> String {
    let short = |operation: &'static str| match operation {
        "encapsulate" => "encaps",
        "decapsulate" => "decaps",
        "client_share" => "client",
        "server_share" => "server",
        "client_finish" => "finish",
        other => other,
    };
    let mut text = format!("{:LABEL$}", title(kind));
    for operation in kind.operations() {
        let _ = write!(text, "{:>COLUMN$}", short(operation));
    }
    for operation in kind.operations() {
        let _ = write!(text, "{:>COLUMN$}", format!("{}/s", short(operation)));
    }
    if kind == Kind::Aead {
        for operation in kind.operations() {
            let _ = write!(text, "{:>COLUMN$}", format!("{} MB/s", short(operation)));
        }
    }
    text
}

fn title(kind: Kind) -> &'static str {
    match kind {
        Kind::Signature => "signatures",
        Kind::KeyExchange => "key exchange",
        Kind::Kem => "key encapsulation",
        Kind::Hybrid => "hybrid groups (sums of their parts)",
        Kind::Aead => "AEAD, one record",
        Kind::Hkdf => "HKDF (TLS 1.3 key schedule)",
    }
}

/// One primitive's line: its times and rates, `n/a` for an operation not measured, and why
/// after them.
fn line(rows: &[Measurement]) -> String {
    let first = &rows[0];
    let label = match first.bytes {
        Some(bytes) => format!("{} {bytes} bytes", label_of(first)),
        None => label_of(first).to_string(),
    };
    if rows.iter().all(|row| !row.supported) {
        let why = first.note.as_deref().unwrap_or("not offered");
        return format!("{label:LABEL$}not measured: {why}");
    }
    let mut text = format!("{label:LABEL$}");
    for row in rows {
        let cell = row.cpu_seconds_per_operation.map_or("n/a".into(), time);
        let _ = write!(text, "{cell:>COLUMN$}");
    }
    for row in rows {
        let cell = row
            .per_second
            .map_or("n/a".into(), |rate| format!("{rate:.1}"));
        let _ = write!(text, "{cell:>COLUMN$}");
    }
    if first.kind == Kind::Aead {
        for row in rows {
            let cell = match (row.per_second, row.bytes) {
                (Some(rate), Some(bytes)) => format!("{:.1}", rate * bytes as f64 / 1e6),
                _ => "n/a".into(),
            };
            let _ = write!(text, "{cell:>COLUMN$}");
        }
    }
    // A hybrid's notes name its parts, which its heading says already.
    let notes: Vec<String> = rows
        .iter()
        .filter(|row| row.per_second.is_none() || row.kind != Kind::Hybrid)
        .filter_map(|row| Some(format!("{}: {}", row.operation, row.note.as_deref()?)))
        .collect();
    if !notes.is_empty() {
        let _ = write!(text, "   ({})", notes.join("; "));
    }
    text
}

fn label_of(row: &Measurement) -> &'static str {
    tlslab_workflow::speed::PRIMITIVES
        .iter()
        .find(|primitive| primitive.name == row.primitive)
        .map_or(row.primitive, |primitive| primitive.label)
}

/// A time per operation in the unit that shows its digits: `812.3µs`, `1.23ms`, `95ns`.
fn time(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.3}s")
    } else if seconds >= 1e-3 {
        format!("{:.3}ms", seconds * 1e3)
    } else if seconds >= 1e-6 {
        format!("{:.2}µs", seconds * 1e6)
    } else {
        format!("{:.0}ns", seconds * 1e9)
    }
}
