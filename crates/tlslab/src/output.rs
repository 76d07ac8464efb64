//! Writing to stdout and stderr without panicking (`print!` panics when stdout is closed or
//! full). A closed pipe (`tlslab compare R.db | head -3`) ends the process quietly, as it does
//! for other Unix tools; any other failure to write results (a full disk) is an environment
//! error. Messages to stderr are best effort: nothing is lost when nobody reads them.
//!
//! Text for people (summaries, notes, errors) reaches the terminal through
//! [`tlslab_core::terminal`]: the printers escape each field that came from outside (a
//! label, a server's words, a file name), and [`print_fitted`] and [`note`] escape every
//! line once more, so that a field missed cannot send the terminal a control. Only results
//! in a data format (`--json`, whose strings JSON escapes; CSV; PEM; shell completions)
//! go out as they are, through [`print`].

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

/// Writes a summary to stdout fitted to the terminal ([`width`]), each line escaped
/// ([`tlslab_core::terminal::escape_lines`]).
pub fn print_fitted(text: &str) -> Result<(), CliError> {
    let text = tlslab_core::terminal::escape_lines(text);
    match width() {
        Some(width) => print(fit(&text, width)),
        None => print(text),
    }
}

/// The width summaries are fitted to: `COLUMNS` when set, else the terminal's; `None` for a
/// pipe or a file, which get whole lines (for tools that read them).
pub fn width() -> Option<usize> {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|columns| columns.trim().parse::<usize>().ok());
    if let Some(columns) = columns {
        return Some(columns.max(40));
    }
    let stdout = io::stdout();
    if !io::IsTerminal::is_terminal(&stdout) {
        return None;
    }
    rustix::termios::tcgetwinsize(&stdout)
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|columns| *columns >= 40)
}

/// `text` with each line longer than `width` broken at its last space that fits (a word
/// longer than the width is cut); continuations are indented four more than their line.
pub fn fit(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (line, ending) = match line.strip_suffix('\n') {
            Some(line) => (line, "\n"),
            None => (line, ""),
        };
        let indent = line.len() - line.trim_start_matches(' ').len();
        let continuation = " ".repeat((indent + 4).min(width / 2));
        let mut rest: &str = line;
        let mut first = true;
        loop {
            let prefix = if first { "" } else { continuation.as_str() };
            let room = width.saturating_sub(prefix.chars().count()).max(1);
            if rest.chars().count() <= room {
                out.push_str(prefix);
                out.push_str(rest);
                break;
            }
            // The byte offset of the character just past the room.
            let limit = rest
                .char_indices()
                .nth(room)
                .map_or(rest.len(), |(offset, _)| offset);
            let cut = rest[..limit]
                .rfind(' ')
                .filter(|&space| space > prefix.len().max(indent))
                .unwrap_or(limit);
            out.push_str(prefix);
            out.push_str(rest[..cut].trim_end());
            out.push('\n');
            rest = rest[cut..].trim_start();
            first = false;
            if rest.is_empty() {
                break;
            }
        }
        out.push_str(ending);
    }
    out
}

/// Writes a line to stderr, each of its lines escaped
/// ([`tlslab_core::terminal::escape_lines`]); a closed or full stderr is ignored.
pub fn note(text: impl Display) {
    let text = text.to_string();
    let mut error = io::stderr().lock();
    let _ = writeln!(error, "{}", tlslab_core::terminal::escape_lines(&text));
}

/// `value` as pretty JSON; the types tlslab prints always serialize, and an empty object
/// stands in if one ever does not.
pub fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_break_at_spaces_and_keep_their_indentation() {
        let text = "short\n  a line that is much too long for the width given here, really\n";
        let fitted = fit(text, 30);
        assert!(
            fitted.lines().all(|line| line.chars().count() <= 30),
            "{fitted}"
        );
        assert!(
            fitted.starts_with("short\n  a line that is much too\n      long"),
            "{fitted}"
        );
        assert_eq!(
            fitted.split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
        // A word longer than the width is cut, never lost.
        let path = format!("results: {}", "x".repeat(70));
        let fitted = fit(&path, 40);
        assert!(
            fitted.lines().all(|line| line.chars().count() <= 40),
            "{fitted}"
        );
        assert_eq!(fitted.chars().filter(|c| *c == 'x').count(), 70);
    }
}
