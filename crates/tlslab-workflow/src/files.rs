//! Output files, and the one rule every option that writes a file follows ([`claim`]):
//!
//! - never over an input of the command (also through a link or another spelling of the
//!   path), nor over another output of the same command;
//! - never over a tlslab results store, except to add scans to it (`scan --out`);
//! - over an existing file only when it is the same kind of output (a capture over a
//!   capture, a report over a report: the next run's output in the same place), or empty,
//!   or with `--force`. A key log is appended to, as every program that writes
//!   `SSLKEYLOGFILE` does.
//!
//! What a file is, is read from its first bytes, never from its name. Reports, exports,
//! charts and man pages are written to a temporary file beside their place and renamed into
//! it once whole, so an interrupted write leaves the old file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Why an output may not be written, or could not be.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The rule refuses it: the user's choice of path (an input, a store, a directory, a file
    /// of another kind without `--force`).
    #[error("{message}")]
    Refused {
        /// What is wrong with the path.
        message: String,
        /// What to give instead.
        hint: String,
    },
    /// The machine cannot write it (a missing or read-only directory, a full disk).
    #[error("cannot write {}", path.display())]
    CannotWrite {
        /// The file that could not be written.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
}

impl FileError {
    fn refused(message: impl std::fmt::Display, hint: impl std::fmt::Display) -> FileError {
        FileError::Refused {
            message: message.to_string(),
            hint: hint.to_string(),
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> &str {
        match self {
            FileError::Refused { hint, .. } => hint,
            FileError::CannotWrite { .. } => {
                "check that the output directory exists, is writable and has free space"
            }
        }
    }
}

/// What an output holds: which existing file it may take the place of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A results store for a new run (`run`, `load`, `pcap`, `capture --out`). A store
    /// holds one run: an existing one is never written over nor into.
    Results,
    /// A results store the scan is added to (`scan --out`).
    Scans,
    /// An HTML or Markdown report (`report -o`, `run --report`).
    Report,
    /// CSV or JSON Lines (`export -o`).
    Export,
    /// A PNG chart (`report --png DIR`).
    Chart,
    /// A man page (`man --out DIR`).
    ManPage,
    /// A packet capture (`run --capture`, `capture --write` and its rotated files).
    Capture,
    /// A key log (`run --keylog`, `SSLKEYLOGFILE`), appended to.
    KeyLog,
}

impl Kind {
    fn description(self) -> &'static str {
        match self {
            Kind::Results | Kind::Scans => "a tlslab results store",
            Kind::Report => "a tlslab report (HTML or Markdown)",
            Kind::Export => "a tlslab export (CSV or JSON Lines)",
            Kind::Chart => "a PNG image",
            Kind::ManPage => "a man page",
            Kind::Capture => "a packet capture (pcap or pcapng)",
            Kind::KeyLog => "a key log (SSLKEYLOGFILE lines)",
        }
    }
}

/// How the rule lets an output be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Nothing is there: a new file.
    Create,
    /// A file of the same kind (or an empty one, or any with `--force`) is replaced.
    Replace,
    /// Added to: a key log, or a store that scans are added to.
    Append,
}

/// An output a command is about to write: the option that names it (as the user gave it,
/// for messages), its path and its kind.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// The option that names it, as the user gave it (`--out`, `-o`).
    pub option: &'a str,
    /// Where it goes.
    pub path: &'a Path,
    /// What it holds.
    pub kind: Kind,
    /// Whether the option names the file's directory (`--png DIR`, `man --out DIR`).
    pub in_directory: bool,
}

impl<'a> Output<'a> {
    /// An output at `path` that `option` names.
    pub fn new(option: &'a str, path: &'a Path, kind: Kind) -> Output<'a> {
        Output {
            option,
            path,
            kind,
            in_directory: false,
        }
    }

    /// A file in the directory `option` names.
    pub fn in_directory(option: &'a str, path: &'a Path, kind: Kind) -> Output<'a> {
        Output {
            in_directory: true,
            ..Output::new(option, path, kind)
        }
    }
}

/// The rule, for every output of one command at once: checked before anything is written,
/// so a refusal leaves every file as it was. Returns how each output is to be written, in
/// the order given. `force` (`--force`) lets an output replace a file of another kind,
/// never an input or a store.
pub fn claim_all(
    outputs: &[Output<'_>],
    inputs: &[&Path],
    force: bool,
) -> Result<Vec<Disposition>, FileError> {
    for (index, output) in outputs.iter().enumerate() {
        if let Some(other) = outputs[..index]
            .iter()
            .find(|other| same_place(other.path, output.path))
        {
            return Err(FileError::refused(
                format!(
                    "{} {} and {} {} are the same file: one would destroy the other",
                    other.option,
                    other.path.display(),
                    output.option,
                    output.path.display()
                ),
                "give each output a path of its own",
            ));
        }
    }
    outputs
        .iter()
        .map(|output| claim(output, inputs, force))
        .collect()
}

/// The rule for one output (see the module's documentation).
pub fn claim(output: &Output<'_>, inputs: &[&Path], force: bool) -> Result<Disposition, FileError> {
    let Output {
        option,
        path,
        kind,
        in_directory,
    } = *output;
    let another = || match in_directory {
        true => format!("give {option} another directory"),
        false => format!("give {option} another path"),
    };
    for input in inputs {
        if same_place(path, input) {
            return Err(FileError::refused(
                format!(
                    "{option} {} is the input {}: writing it would destroy it",
                    path.display(),
                    input.display()
                ),
                another(),
            ));
        }
    }
    // Through a link, as opening it would.
    let Ok(metadata) = std::fs::metadata(path) else {
        return Ok(Disposition::Create);
    };
    if metadata.is_dir() {
        return Err(FileError::refused(
            format!("{option} {} is a directory", path.display()),
            format!("give {option} a file's path"),
        ));
    }
    if !metadata.is_file() {
        // A device, a pipe or a socket: a stream (a capture, a key log) is written into it
        // as it is; anything else would replace the node itself (a rename, a removal).
        return match kind {
            Kind::Capture => Ok(Disposition::Create),
            Kind::KeyLog => Ok(Disposition::Append),
            _ => Err(FileError::refused(
                format!(
                    "{option} {} is not a regular file (a device, a pipe or a socket)",
                    path.display()
                ),
                format!("give {option} a file's path"),
            )),
        };
    }
    if tlslab_store::is_store(path) {
        if kind == Kind::Scans {
            return Ok(Disposition::Append);
        }
        return Err(FileError::refused(
            format!(
                "{option} {} is a tlslab results store, and tlslab never overwrites one",
                path.display()
            ),
            format!("{} (--force does not replace a store)", another()),
        ));
    }
    let append = matches!(kind, Kind::KeyLog);
    if metadata.len() == 0 || is_kind(path, kind) {
        return Ok(if append {
            Disposition::Append
        } else {
            Disposition::Replace
        });
    }
    if force {
        return Ok(Disposition::Replace);
    }
    Err(FileError::refused(
        format!(
            "{option} {}: the file exists and is not {}: tlslab writes into an existing file only when it is of the same kind",
            path.display(),
            kind.description()
        ),
        format!("{}, or add --force to replace the file", another()),
    ))
}

/// Makes way for an output that is opened as a new file and was allowed to replace what is
/// there (a store, a key log given --force): removes it.
pub fn make_room(path: &Path, write: Disposition) -> Result<(), FileError> {
    // Only a regular file is ever removed ([`claim`] replaces nothing else).
    let regular = std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_file());
    if write != Disposition::Replace || !regular {
        return Ok(());
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(cannot_write(path, error)),
    }
}

/// Whether `a` and `b` name one file: the same file when both exist (links and other
/// spellings count), else the same place once their directories are resolved.
fn same_place(a: &Path, b: &Path) -> bool {
    if let Ok(same) = same_file::is_same_file(a, b) {
        return same;
    }
    match (place(a), place(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// `path` with its directory resolved (links, `..`), for a file that may not exist yet.
fn place(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(directory).ok()?.join(name))
}

/// How many bytes of a file are read to tell its kind.
const SNIFF: u64 = 64 * 1024;

/// Whether the file at `path` is of `kind`, by its first bytes.
fn is_kind(path: &Path, kind: Kind) -> bool {
    let mut head = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|file| file.take(SNIFF).read_to_end(&mut head))
        .is_ok();
    read && looks_like(&head, kind)
}

/// Whether a file beginning with `head` is of `kind`.
fn looks_like(head: &[u8], kind: Kind) -> bool {
    match kind {
        // A store is recognised by SQLite (`tlslab_store::is_store`), never by bytes here.
        Kind::Results | Kind::Scans => false,
        Kind::Report => {
            let html = head.starts_with(b"<!DOCTYPE html>")
                && head
                    .windows(b"<title>tlslab ".len())
                    .any(|window| window == b"<title>tlslab ");
            html || head.starts_with(b"# tlslab report")
                || head.starts_with(b"# tlslab scan report")
        }
        Kind::Export => {
            let first = head.split(|byte| *byte == b'\n').next().unwrap_or_default();
            first.starts_with(b"config,round,")
                || serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(first)
                    .is_ok_and(|line| {
                        line.contains_key("scanned_at")
                            || (line.contains_key("config") && line.contains_key("round"))
                    })
        }
        Kind::Chart => head.starts_with(b"\x89PNG\r\n\x1a\n"),
        // clap_mangen's pages, and roff's own, begin with a request or a comment.
        Kind::ManPage => head.starts_with(b".") || head.starts_with(b"'\\\""),
        Kind::Capture => [
            [0xd4, 0xc3, 0xb2, 0xa1],
            [0xa1, 0xb2, 0xc3, 0xd4],
            [0x4d, 0x3c, 0xb2, 0xa1],
            [0xa1, 0xb2, 0x3c, 0x4d],
            [0x0a, 0x0d, 0x0d, 0x0a],
        ]
        .iter()
        .any(|magic| head.starts_with(magic)),
        Kind::KeyLog => {
            // A whole sniff may end in the middle of a line: whole lines only.
            let whole = match head.iter().rposition(|byte| *byte == b'\n') {
                Some(end) if head.len() as u64 == SNIFF => &head[..end],
                _ => head,
            };
            std::str::from_utf8(whole).is_ok_and(|text| text.lines().all(key_log_line))
        }
    }
}

/// A line of the SSLKEYLOGFILE format: `LABEL <hex> <hex>`, a `#` comment, or empty.
fn key_log_line(line: &str) -> bool {
    let line = line.trim_end_matches('\r');
    if line.is_empty() || line.starts_with('#') {
        return true;
    }
    let mut fields = line.split(' ');
    let label = fields.next().unwrap_or_default();
    let hex = |field: Option<&str>| {
        field.is_some_and(|field| !field.is_empty() && field.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    !label.is_empty()
        && label
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit() || byte == b'_')
        && hex(fields.next())
        && hex(fields.next())
        && fields.next().is_none()
}

/// A temporary file beside `path`, to be renamed onto it with [`finish`].
pub fn temporary_beside(path: &Path) -> Result<tempfile::NamedTempFile, FileError> {
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
pub fn finish(file: tempfile::NamedTempFile, path: &Path) -> Result<(), FileError> {
    file.persist(path)
        .map(drop)
        .map_err(|error| cannot_write(path, error.error))
}

/// Writes `data` to `path` whole, or not at all.
pub fn write_whole(path: &Path, data: &[u8]) -> Result<(), FileError> {
    let mut file = temporary_beside(path)?;
    file.write_all(data)
        .and_then(|()| file.flush())
        .map_err(|error| cannot_write(path, error))?;
    finish(file, path)
}

/// A file that cannot be written: the machine's problem (a missing or read-only directory, a
/// full disk).
pub fn cannot_write(path: &Path, error: std::io::Error) -> FileError {
    FileError::CannotWrite {
        path: path.to_path_buf(),
        source: error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(path: &Path, kind: Kind, force: bool) -> Result<Disposition, FileError> {
        claim(&Output::new("--out", path, kind), &[], force)
    }

    #[test]
    fn kinds_are_told_by_their_first_bytes() {
        let pcap = [0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        assert!(looks_like(&pcap, Kind::Capture));
        assert!(looks_like(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0], Kind::Capture));
        assert!(!looks_like(b"SQLite format 3\0", Kind::Capture));
        assert!(looks_like(b"\x89PNG\r\n\x1a\n....", Kind::Chart));
        assert!(looks_like(
            b"<!DOCTYPE html>\n<html><head><title>tlslab report: r.db</title>",
            Kind::Report
        ));
        assert!(!looks_like(
            b"<!DOCTYPE html>\n<title>My page</title>",
            Kind::Report
        ));
        assert!(looks_like(b"# tlslab report\n\n", Kind::Report));
        assert!(looks_like(b"config,round,agent,warmup\n", Kind::Export));
        assert!(looks_like(
            b"{\"config\":\"a\",\"round\":1}\n{",
            Kind::Export
        ));
        assert!(looks_like(
            b"{\"address\":\"x\",\"scanned_at\":\"t\"}\n",
            Kind::Export
        ));
        assert!(!looks_like(b"{\"name\":1}\n", Kind::Export));
        assert!(looks_like(b".ie \\n(.g .ds Aq \\(aq\n", Kind::ManPage));
        assert!(!looks_like(b"my notes\n", Kind::ManPage));
        assert!(looks_like(
            b"# SSL/TLS secrets log file\nCLIENT_RANDOM 00ab ff\n",
            Kind::KeyLog
        ));
        assert!(!looks_like(b"CLIENT_RANDOM 00ab\n", Kind::KeyLog));
        assert!(!looks_like(b"my notes\n", Kind::KeyLog));
        // A store is SQLite's to recognise, never a byte pattern's.
        assert!(!looks_like(b"SQLite format 3\0", Kind::Results));
    }

    #[test]
    fn the_rule_replaces_its_own_kind_appends_a_key_log_and_needs_force_for_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.pcap");
        assert_eq!(
            claimed(&new, Kind::Capture, false).unwrap(),
            Disposition::Create
        );
        let capture = dir.path().join("old.pcap");
        std::fs::write(&capture, [0xd4, 0xc3, 0xb2, 0xa1]).unwrap();
        assert_eq!(
            claimed(&capture, Kind::Capture, false).unwrap(),
            Disposition::Replace
        );
        let keys = dir.path().join("keys.log");
        std::fs::write(&keys, "CLIENT_RANDOM 01 02\n").unwrap();
        assert_eq!(
            claimed(&keys, Kind::KeyLog, false).unwrap(),
            Disposition::Append
        );
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(
            claimed(&empty, Kind::Results, false).unwrap(),
            Disposition::Replace
        );
        // Another kind: refused, or replaced with --force.
        let error = claimed(&keys, Kind::Capture, false).unwrap_err();
        assert!(matches!(error, FileError::Refused { .. }), "{error:?}");
        assert!(
            error.to_string().contains("is not a packet capture"),
            "{error:?}"
        );
        assert!(error.hint().contains("--force"), "{error:?}");
        assert_eq!(
            claimed(&keys, Kind::Capture, true).unwrap(),
            Disposition::Replace
        );
        // A directory is never a file's place; an input never an output's.
        assert!(claimed(dir.path(), Kind::Report, true).is_err());
        let output = Output::new("-o", &capture, Kind::Capture);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&capture, &link).unwrap();
        let error = claim(&output, &[&link], true).unwrap_err();
        assert!(error.to_string().contains("would destroy it"), "{error:?}");
        // Two outputs in one place, though neither exists yet.
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let spelled = dir.path().join("sub/../new.pcap");
        let twice = [
            Output::new("--capture", &new, Kind::Capture),
            Output::new("--keylog", &spelled, Kind::KeyLog),
        ];
        let error = claim_all(&twice, &[], false).unwrap_err();
        assert!(error.to_string().contains("are the same file"), "{error:?}");
    }

    #[test]
    fn devices_and_pipes_take_streams_and_nothing_else() {
        let null = Path::new("/dev/null");
        assert_eq!(
            claimed(null, Kind::Capture, false).unwrap(),
            Disposition::Create
        );
        assert_eq!(
            claimed(null, Kind::KeyLog, false).unwrap(),
            Disposition::Append
        );
        assert!(claimed(null, Kind::Report, true).is_err());
        assert!(claimed(null, Kind::Results, true).is_err());
        // Never removed, whatever the disposition.
        make_room(null, Disposition::Replace).unwrap();
        assert!(null.exists());
    }
}
