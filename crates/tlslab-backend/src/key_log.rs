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
    file: Mutex<File>,
}

impl KeyLogFile {
    /// Opens `path` for appending (creating it with mode 0600) and makes it 0600 if it was
    /// readable by others.
    pub fn open(path: &Path) -> std::io::Result<KeyLogFile> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        let permissions = file.metadata()?.permissions();
        if permissions.mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(KeyLogFile {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

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
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // One write per line, so lines from concurrent handshakes never interleave. A failed
        // write loses a line of secrets, not a sample: the handshake goes on.
        let _ = file.write_all(format!("{line}\n").as_bytes());
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
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "CLIENT_RANDOM 00ab ff\nSERVER_TRAFFIC_SECRET_0 01 02\n"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
