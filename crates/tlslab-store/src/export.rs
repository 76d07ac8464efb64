//! Export: one row per sample with fixed field names notebooks and scripts can rely on.

use std::io::{self, Write};

use rusqlite::types::ValueRef;

use crate::schema::timing_columns;
use crate::{Store, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    JsonLines,
}

/// Fields before the timing columns, in export order.
pub const EXPORT_FIELDS: &[&str] = &[
    "config",
    "round",
    "agent",
    "warmup",
    "outcome",
    "error",
    "error_detail",
    "version",
    "suite",
    "group",
    "signature_scheme",
    "alpn",
    "resumed",
    "insecure",
    "bytes_sent",
    "bytes_received",
    "client_hello_bytes",
    "server_flight_bytes",
    "early_data_accepted",
    "http_status",
    "response_bytes",
    "quic_rtt_ns",
    "datagrams_sent",
    "datagrams_received",
    "packets_sent",
    "packets_lost",
    "ech",
    "transport",
    "http",
    "resumption",
    "early_data_bytes",
    "cert_cache",
    "client_backend",
    "server_backend",
    "ech_mode",
    "rtt_ns",
    "jitter_ns",
    "loss",
    "rate_bps",
    "emulator",
    "started_at",
];

/// Writes every sample (warm-up included, flagged) in `format`.
pub fn export(store: &Store, format: ExportFormat, out: &mut dyn Write) -> Result<u64, StoreError> {
    let mut names: Vec<&str> = EXPORT_FIELDS.to_vec();
    names.extend(timing_columns());
    let select: Vec<String> = names
        .iter()
        .map(|name| match *name {
            "config" => "c.label".to_string(),
            "started_at" => "s.started_at_ns".to_string(),
            // The network profile is the Config's; every sample of it ran on that link.
            "rtt_ns" | "jitter_ns" | "loss" | "rate_bps" | "emulator" => format!("c.{name}"),
            // So are its transport, request and session techniques.
            "transport" | "http" | "resumption" | "early_data_bytes" | "cert_cache" => {
                format!("c.{name}")
            }
            // And its libraries and ECH mode (`ech` is what became of ECH in the sample).
            "client_backend" | "server_backend" => format!("c.{name}"),
            "ech_mode" => "c.ech".to_string(),
            other => format!("s.\"{other}\""),
        })
        .collect();
    let mut statement = store.connection().prepare(&format!(
        "SELECT {} FROM samples s JOIN configs c ON c.id = s.config_id ORDER BY s.id",
        select.join(", ")
    ))?;
    let io_error = |error: io::Error| StoreError {
        message: format!("cannot write the export: {error}"),
        hint: "check the output path and free disk space".into(),
    };
    let mut line = String::with_capacity(1024);
    if format == ExportFormat::Csv {
        writeln!(out, "{}", names.join(",")).map_err(io_error)?;
    }
    let mut rows = statement.query([])?;
    let mut count = 0;
    while let Some(row) = rows.next()? {
        line.clear();
        if format == ExportFormat::JsonLines {
            line.push('{');
        }
        for (index, name) in names.iter().enumerate() {
            if index > 0 {
                line.push(',');
            }
            let value = row.get_ref(index)?;
            let boolean = matches!(*name, "warmup" | "resumed" | "insecure");
            match format {
                ExportFormat::Csv => push_csv(&mut line, value),
                ExportFormat::JsonLines => {
                    line.push_str(&serde_json::to_string(name).expect("string"));
                    line.push(':');
                    push_json(&mut line, value, boolean);
                }
            }
        }
        if format == ExportFormat::JsonLines {
            line.push('}');
        }
        line.push('\n');
        out.write_all(line.as_bytes()).map_err(io_error)?;
        count += 1;
    }
    out.flush().map_err(io_error)?;
    Ok(count)
}

fn push_csv(line: &mut String, value: ValueRef<'_>) {
    match value {
        ValueRef::Null => {}
        ValueRef::Integer(number) => line.push_str(&number.to_string()),
        ValueRef::Real(number) => line.push_str(&number.to_string()),
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            if text.contains([',', '"', '\n', '\r']) {
                line.push('"');
                line.push_str(&text.replace('"', "\"\""));
                line.push('"');
            } else {
                line.push_str(&text);
            }
        }
    }
}

fn push_json(line: &mut String, value: ValueRef<'_>, boolean: bool) {
    match value {
        ValueRef::Null => line.push_str("null"),
        ValueRef::Integer(number) if boolean => {
            line.push_str(if number != 0 { "true" } else { "false" })
        }
        ValueRef::Integer(number) => line.push_str(&number.to_string()),
        ValueRef::Real(number) => line.push_str(&number.to_string()),
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            line.push_str(&serde_json::to_string(&String::from_utf8_lossy(bytes)).expect("string"))
        }
    }
}
