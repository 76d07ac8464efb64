//! The key log (`SSLKEYLOGFILE` format): the secrets of every handshake a client makes, so a
//! capture of the run can be decrypted (`tlslab pcap --keylog`, Wireshark). Both libraries
//! write through this one file, which only its owner may read: the secrets decrypt the run's
//! traffic.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// An open key log, shared by every client of a run.
#[derive(Debug)]
pub struct KeyLogFile {
    path: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    file: File,
    /// The file's length after its last whole line: where a failed write is cut back to.
    length: u64,
    written: Tally,
    lost: Tally,
    /// The first write that failed; nothing is written after it.
    failure: Option<std::io::Error>,
}

/// Lines of a key log, and the handshakes they complete.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Lines, each one secret.
    pub lines: u64,
    /// Handshakes whose traffic secret is among the lines: TLS 1.3's
    /// `CLIENT_TRAFFIC_SECRET_0`, TLS 1.2's `CLIENT_RANDOM` (one each per handshake).
    pub handshakes: u64,
}

impl Tally {
    fn count(&mut self, line: &str) {
        self.lines += 1;
        let label = line.split(' ').next().unwrap_or_default();
        if label == "CLIENT_TRAFFIC_SECRET_0" || label == "CLIENT_RANDOM" {
            self.handshakes += 1;
        }
    }
}

/// What became of a key log's lines: the first failed write (a full disk) stops the file,
/// and every later line is counted as lost.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KeyLogOutcome {
    /// Lines in the file.
    pub written: Tally,
    /// Lines not written after the first failed write.
    pub lost: Tally,
    /// Why writing stopped, when it did.
    pub failure: Option<String>,
}

impl KeyLogFile {
    /// Opens `path` for appending (creating it with mode 0600) and makes it 0600 if it was
    /// a file readable by others (a device or a pipe is left as it is).
    pub fn open(path: &Path) -> std::io::Result<KeyLogFile> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        let metadata = file.metadata()?;
        if metadata.is_file() && metadata.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(KeyLogFile {
            path: path.to_path_buf(),
            state: Mutex::new(State {
                file,
                length: metadata.len(),
                written: Tally::default(),
                lost: Tally::default(),
                failure: None,
            }),
        })
    }

    /// The file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One secret: `LABEL <client random> <secret>`, both in hex.
    pub fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let mut line =
            String::with_capacity(label.len() + 2 * (client_random.len() + secret.len()) + 3);
        line.push_str(label);
        line.push(' ');
        push_hex(&mut line, client_random);
        line.push(' ');
        push_hex(&mut line, secret);
        self.line(&line);
    }

    /// A whole line as a library formats it (OpenSSL's key log callback).
    pub fn line(&self, line: &str) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if state.failure.is_some() {
            state.lost.count(line);
            return;
        }
        // One write per line, so lines from concurrent handshakes never interleave. A failed
        // write loses a line of secrets, not a sample: the handshake goes on, the file stops
        // (cut back to its last whole line) and the run says so when it ends.
        let text = format!("{line}\n");
        match state.file.write_all(text.as_bytes()) {
            Ok(()) => {
                state.length += text.len() as u64;
                state.written.count(line);
            }
            Err(error) => {
                let length = state.length;
                let _ = state.file.set_len(length);
                state.failure = Some(error);
                state.lost.count(line);
            }
        }
    }

    /// What was written and what was lost so far.
    pub fn outcome(&self) -> KeyLogOutcome {
        let state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        KeyLogOutcome {
            written: state.written,
            lost: state.lost,
            failure: state.failure.as_ref().map(ToString::to_string),
        }
    }
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_hex_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.log");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let log = KeyLogFile::open(&path).unwrap();
        log.log("CLIENT_RANDOM", &[0x00, 0xab], &[0xff]);
        log.line("SERVER_TRAFFIC_SECRET_0 01 02");
        let outcome = log.outcome();
        assert_eq!(outcome.written.lines, 2);
        assert_eq!(outcome.written.handshakes, 1);
        assert_eq!(outcome.failure, None);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "CLIENT_RANDOM 00ab ff\nSERVER_TRAFFIC_SECRET_0 01 02\n"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_failed_write_stops_the_file_and_counts_what_was_lost() {
        // /dev/full takes the open and refuses every write with ENOSPC.
        let log = KeyLogFile::open(Path::new("/dev/full")).unwrap();
        log.log("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &[1], &[2]);
        log.log("CLIENT_TRAFFIC_SECRET_0", &[1], &[3]);
        log.log("CLIENT_RANDOM", &[4], &[5]);
        let outcome = log.outcome();
        assert_eq!(outcome.written, Tally::default());
        assert_eq!(
            outcome.lost,
            Tally {
                lines: 3,
                handshakes: 2
            }
        );
        assert!(outcome.failure.unwrap().contains("No space left"));
    }
}
