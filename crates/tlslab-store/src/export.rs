//! Export: one row per sample with fixed field names notebooks and scripts can rely on.

use std::io::Write;

use rusqlite::types::ValueRef;

use crate::columns::{fields, quoted, Field, Source};
use crate::{Store, StoreError};

/// How [`export`] writes its rows: the two formats notebooks and scripts read without a
/// SQLite driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Comma-separated, with a header line of [`export_fields`].
    Csv,
    /// One JSON object per line, named by [`export_fields`], with booleans as `true` and `false`.
    JsonLines,
}

/// The name of every exported field, in order (README, "Export fields").
pub fn export_fields() -> Vec<&'static str> {
    fields().map(|field| field.name).collect()
}

/// Writes every sample (warm-up included, flagged) in `format`.
pub fn export(store: &Store, format: ExportFormat, out: &mut dyn Write) -> Result<u64, StoreError> {
    let fields: Vec<Field> = fields().collect();
    let select: Vec<String> = fields
        .iter()
        .map(|field| match field.source {
            Source::Sample { column, .. } => format!("s.{}", quoted(column)),
            Source::Config { column } => format!("c.{}", quoted(column)),
        })
        .collect();
    // LEFT JOIN: a sample whose Config row is missing (a damaged store) is still exported,
    // with its Config's fields empty, rather than dropped without a word.
    let sql = format!(
        "SELECT {} FROM samples s LEFT JOIN configs c ON c.id = s.config_id AND c.run_id = s.run_id WHERE {{s.run}}1 = 1 ORDER BY s.id",
        select.join(", ")
    );
    let io_error = StoreError::Export;
    let mut line = String::with_capacity(1024);
    if format == ExportFormat::Csv {
        let names: Vec<&str> = fields.iter().map(|field| field.name).collect();
        writeln!(out, "{}", names.join(",")).map_err(io_error)?;
    }
    let mut count = 0;
    store.connection().each(&sql, &[], |row| {
        line.clear();
        if format == ExportFormat::JsonLines {
            line.push('{');
        }
        for (index, field) in fields.iter().enumerate() {
            if index > 0 {
                line.push(',');
            }
            if format == ExportFormat::JsonLines {
                push_json_text(&mut line, field.name);
                line.push(':');
            }
            row.with_raw(index, |value| match format {
                ExportFormat::Csv => push_csv(&mut line, value),
                ExportFormat::JsonLines => push_json(&mut line, value, field.boolean),
            })?;
        }
        if format == ExportFormat::JsonLines {
            line.push('}');
        }
        line.push('\n');
        out.write_all(line.as_bytes()).map_err(io_error)?;
        count += 1;
        Ok(())
    })?;
    out.flush().map_err(io_error)?;
    Ok(count)
}

/// One CSV cell (RFC 4180 quoting). Written by hand rather than with the csv crate's writer
/// to keep every export byte for byte what it has always been; reading uses the crate.
fn push_csv(line: &mut String, value: ValueRef<'_>) {
    match value {
        ValueRef::Null => {}
        ValueRef::Integer(number) => line.push_str(&number.to_string()),
        // No finite value to write (a damaged store): empty, as NULL is.
        ValueRef::Real(number) if !number.is_finite() => {}
        ValueRef::Real(number) => line.push_str(&number.to_string()),
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            let mut text = String::from_utf8_lossy(bytes).into_owned();
            // A spreadsheet runs a cell that starts with one of these as a formula (CSV
            // injection): the quote makes it text. tlslab writes no such value itself; a
            // label, an error detail or a server's words might.
            if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                text.insert(0, '\'');
            }
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
        // JSON has no infinity or NaN: a line holding one would not parse.
        ValueRef::Real(number) if !number.is_finite() => line.push_str("null"),
        ValueRef::Real(number) => line.push_str(&number.to_string()),
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            push_json_text(line, &String::from_utf8_lossy(bytes))
        }
    }
}

/// `text` as a JSON string.
fn push_json_text(line: &mut String, text: &str) {
    // Serializing a string cannot fail; an empty string is the harmless fallback.
    line.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_a_spreadsheet_would_run_are_made_text_and_quoted_when_needed() {
        let cell = |text: &str| {
            let mut line = String::new();
            push_csv(&mut line, ValueRef::Text(text.as_bytes()));
            line
        };
        assert_eq!(cell("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(cell("@SUM(1,2)"), "\"'@SUM(1,2)\"");
        assert_eq!(cell("tls1.3 aes128gcm"), "tls1.3 aes128gcm");
        assert_eq!(cell("a \"quoted\", label"), "\"a \"\"quoted\"\", label\"");
        let mut line = String::new();
        push_csv(&mut line, ValueRef::Integer(-5));
        assert_eq!(line, "-5", "numbers are not text");
    }

    #[test]
    fn non_finite_numbers_are_empty_or_null_never_inf() {
        for value in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let (mut csv, mut json) = (String::new(), String::new());
            push_csv(&mut csv, ValueRef::Real(value));
            push_json(&mut json, ValueRef::Real(value), false);
            assert_eq!((csv.as_str(), json.as_str()), ("", "null"));
        }
    }
}
