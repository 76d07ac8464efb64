//! Helpers shared by the end-to-end tests: run the real binary, read the real store.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory under Cargo's per-test scratch space.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The PKI cache shared by every test (keys are slow to make, so tests share them).
pub fn pki_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("pki")
}

pub fn tlslab(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(args)
        .env("TLSLAB_PKI_DIR", pki_dir())
        .env("NO_COLOR", "1")
        .output()
        .expect("the tlslab binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "tlslab panicked: {stderr}");
    output
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn open(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Asserts the user-facing error shape: an `error:` line, a `hint:` line, the exit code.
pub fn assert_user_error(output: &Output, code: i32, mentions: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {text}");
    assert!(text.starts_with("error: "), "no error line: {text}");
    assert!(text.contains("\nhint: "), "no hint line: {text}");
    assert!(text.contains(mentions), "'{mentions}' not in: {text}");
}

/// Why network emulation (namespaces, TUN devices) cannot run here, or `None` when it can.
pub fn emulation_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: namespaces and TUN devices need CAP_NET_ADMIN".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    let probe = Command::new("ip").args(["netns", "list"]).output();
    if !probe.is_ok_and(|output| output.status.success()) {
        return Some("`ip netns` does not work (install iproute2)".into());
    }
    None
}
