//! Sample files for `tlslab compare A B`: numbers from any tool, one per line (after an
//! optional header), or one column of a CSV file. A tlslab export is read as its samples are
//! meant: its warm-up and failed rows are left out. Parsing works on bytes, so a file can be
//! anything and still gets an error, never a panic.

use tlslab_core::terminal::{escape, Escaped};

use crate::ReportError;

fn error(message: String, hint: impl Into<String>) -> ReportError {
    ReportError::Input {
        message,
        hint: hint.into(),
    }
}

/// The values of a sample file's `bytes`; `name` (its path) names it in messages, which show
/// the file's words (its columns, a cell) escaped for a terminal.
pub fn parse_samples(
    bytes: &[u8],
    column: Option<&str>,
    name: &str,
) -> Result<Vec<f64>, ReportError> {
    read_samples(bytes, column, name)
}

/// [`parse_samples`] from a reader, so that a file of ten million values is never held
/// whole besides its values (issue 31: `compare` reads its files this way).
pub fn read_samples(
    reader: impl std::io::Read,
    column: Option<&str>,
    name: &str,
) -> Result<Vec<f64>, ReportError> {
    let name = Escaped(name);
    let listed = |fields: &csv::StringRecord| {
        fields
            .iter()
            .map(|field| escape(field).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let unreadable = |source: csv::Error| ReportError::SampleFile {
        name: name.to_string(),
        source,
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(column.is_some())
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(reader);
    let (index, measured) = match column {
        Some(wanted) => {
            let names = reader.headers().map_err(unreadable)?.clone();
            let index = names.iter().position(|n| n == wanted).ok_or_else(|| {
                error(
                    format!("{name} has no column '{}'", Escaped(wanted)),
                    format!("its columns are: {}", listed(&names)),
                )
            })?;
            (Some(index), MeasuredRows::of(&names))
        }
        None => (None, MeasuredRows::default()),
    };
    let mut values = Vec::new();
    for (number, record) in reader.records().enumerate() {
        let record = record.map_err(unreadable)?;
        // Line numbers as people count them, the header included.
        let line = number + 1 + usize::from(column.is_some());
        if record.iter().all(str::is_empty) || !measured.keeps(&record) {
            continue;
        }
        let cell = match index {
            Some(index) => record.get(index).unwrap_or_default(),
            None if record.len() > 1 => {
                return Err(error(
                    format!("{name} line {line} has {} columns", record.len()),
                    format!("choose one with --column (columns: {})", listed(&record)),
                ))
            }
            None => record.get(0).unwrap_or_default(),
        };
        match cell.parse::<f64>() {
            Ok(value) if value.is_finite() => values.push(value),
            // A one-column file may start with a header naming its values.
            Err(_) if values.is_empty() && number == 0 && index.is_none() => {}
            _ => {
                return Err(error(
                    format!("{name} line {line}: '{}' is not a number", Escaped(cell)),
                    "every line (after an optional header) must hold one finite number",
                ))
            }
        }
    }
    match values.len() {
        0 => Err(error(
            format!("{name} holds no values"),
            "give a file with one number per line, or a CSV file and --column NAME",
        )),
        1 => Err(error(
            format!("{name} holds only 1 value"),
            "a comparison needs at least 2 values per sample",
        )),
        _ => Ok(values),
    }
}

/// Which rows of a tlslab export are measurements: not warm-up, not failed. Files without
/// those columns keep every row.
#[derive(Default)]
struct MeasuredRows {
    warmup: Option<usize>,
    outcome: Option<usize>,
}

impl MeasuredRows {
    fn of(names: &csv::StringRecord) -> MeasuredRows {
        MeasuredRows {
            warmup: names.iter().position(|name| name == "warmup"),
            outcome: names.iter().position(|name| name == "outcome"),
        }
    }

    fn keeps(&self, record: &csv::StringRecord) -> bool {
        let cell = |index: Option<usize>| index.and_then(|index| record.get(index));
        let warmup = matches!(cell(self.warmup), Some("1" | "true"));
        let failed = cell(self.outcome).is_some_and(|outcome| outcome != "ok");
        !warmup && !failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_number_per_line_with_an_optional_header() {
        assert_eq!(
            parse_samples(b"ms\n1.5\n\n2.5\n", None, "a").unwrap(),
            [1.5, 2.5]
        );
        let error = parse_samples(b"1\nx\n", None, "a").unwrap_err();
        assert_eq!(error.to_string(), "a line 2: 'x' is not a number");
        assert!(parse_samples(b"1\n", None, "a")
            .unwrap_err()
            .to_string()
            .contains("only 1"));
        assert!(parse_samples(b"1,2\n", None, "a")
            .unwrap_err()
            .to_string()
            .contains("columns"));
        assert!(parse_samples(b"inf\n1\n", None, "a").is_err());
    }

    #[test]
    fn quoted_cells_keep_their_commas_and_exports_keep_their_measurements() {
        let text = b"label,handshake\n\"a, b\",1\n\"c \"\"d\"\", e\",2\n";
        assert_eq!(
            parse_samples(text, Some("handshake"), "a").unwrap(),
            [1.0, 2.0]
        );
        let export = b"config,warmup,outcome,handshake\nx,1,ok,9\nx,0,error,\nx,0,ok,3\nx,0,ok,4\n";
        assert_eq!(
            parse_samples(export, Some("handshake"), "a").unwrap(),
            [3.0, 4.0]
        );
        let error = parse_samples(b"a,b\n1,2\n", Some("c"), "f").unwrap_err();
        assert_eq!(error.hint(), "its columns are: a, b");
    }

    #[test]
    fn a_file_the_csv_reader_refuses_keeps_its_error() {
        use std::error::Error as _;
        // A header that is not UTF-8, read for its column names.
        let error = parse_samples(b"\xff\xfe,x\n1,2\n", Some("x"), "f").unwrap_err();
        assert!(matches!(error, ReportError::SampleFile { .. }), "{error:?}");
        assert_eq!(error.to_string(), "cannot read f");
        assert!(error
            .source()
            .is_some_and(|source| source.is::<csv::Error>()));
        assert!(error.is_input());
        assert!(error.hint().contains("--column"), "{}", error.hint());
    }

    #[test]
    fn any_bytes_give_values_or_an_error() {
        for bytes in [&b"\xff\xfe\x00"[..], b"\"", b"\"\n\"\n", b",,,\n,,", b""] {
            for column in [None, Some("x")] {
                let _ = parse_samples(bytes, column, "f");
            }
        }
    }
}
