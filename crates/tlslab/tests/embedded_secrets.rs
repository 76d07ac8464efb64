//! End-to-end: a capture that carries its own TLS secrets. An active run against a lab
//! server (`tlslab serve`) on loopback writes a key log while tcpdump captures; tshark's
//! `editcap --inject-secrets tls,KEYLOG` writes the capture again as pcapng with the key log
//! in a Decryption Secrets Block, as browsers' captures carry it. `tlslab pcap` of that file
//! without `--keylog` decrypts what `--keylog` decrypts in the plain capture: TLS 1.3 over
//! TCP and QUIC alike.
//!
//! Needs tcpdump (root or CAP_NET_RAW) and editcap; without them the test prints why and
//! skips.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::*;

/// Handshakes by what only their encrypted messages say: the signature (CertificateVerify),
/// ALPN and 0-RTT acceptance (EncryptedExtensions), whether the response's first byte was
/// found (application data); with the transport and the outcome.
fn decrypted(db: &Path) -> Vec<(String, i64)> {
    rows::<(String, i64)>(
        db,
        "SELECT c.transport || ' ' || s.outcome || ' ' || COALESCE(s.suite, '-') || ' ' \
         || COALESCE(s.signature_scheme, '-') || ' ' || COALESCE(s.alpn, '-') || ' ' \
         || COALESCE(s.early_data_accepted, '-') || ' ' || (s.first_byte IS NOT NULL), \
         COUNT(*) FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.warmup = 0 \
         GROUP BY 1 ORDER BY 1",
        [],
    )
}

fn pcap(capture: &Path, db: &Path, more: &[&str]) -> String {
    let mut command = vec!["pcap", capture.to_str().unwrap()];
    command.extend(more);
    command.extend(["--out", db.to_str().unwrap()]);
    tlslab_succeeds(&command)
}

#[test]
fn secrets_embedded_in_a_pcapng_file_decrypt_as_a_key_log_does() {
    let dir = scratch("embedded-secrets");
    if Command::new("editcap").arg("-h").output().is_err() {
        println!("skipped: editcap is not installed (Debian's wireshark-common)");
        return;
    }
    let server = LabServer::start();
    let port = server.port.to_string();
    let Some(capture) = tcpdump_in(None, "lo", &dir, "plain", &format!("port {port}")) else {
        return;
    };
    let target = format!("127.0.0.1:{port}");
    let mut logs: Vec<PathBuf> = Vec::new();
    let mut actives = Vec::new();
    for (name, options) in [
        (
            "tcp",
            "--tls 1.3 --backend rustls,openssl --http 1.1 --resume tickets --early-data 100",
        ),
        ("quic", "--transport quic --http 3"),
    ] {
        let keys = dir.join(format!("{name}.keys"));
        let active = Run::new(&dir, name)
            .args(&format!(
                "--target {target} --insecure {options} -n 4 --warmup 0"
            ))
            .option("--keylog", keys.to_str().unwrap())
            .succeeds()
            .db;
        logs.push(keys);
        actives.push(active);
    }
    let plain = capture.stop();
    let keys = dir.join("all.keys");
    let text: String = logs
        .iter()
        .map(|log| std::fs::read_to_string(log).unwrap())
        .collect();
    std::fs::write(&keys, text).unwrap();
    let embedded = dir.join("embedded.pcapng");
    let output = Command::new("editcap")
        .arg("--inject-secrets")
        .arg(format!("tls,{}", keys.display()))
        .arg(&plain)
        .arg(&embedded)
        .output()
        .unwrap();
    assert_success(&output);

    let with_key_log = dir.join("with-key-log.db");
    pcap(&plain, &with_key_log, &["--keylog", keys.to_str().unwrap()]);
    let from_the_file = dir.join("from-the-file.db");
    let summary = pcap(&embedded, &from_the_file, &[]);
    let without = dir.join("without.db");
    pcap(&plain, &without, &[]);

    let mut active: Vec<(String, i64)> = actives.iter().flat_map(|db| decrypted(db)).collect();
    active.sort();
    let found = decrypted(&from_the_file);
    assert_eq!(found, decrypted(&with_key_log), "{summary}");
    assert_eq!(found, active, "{summary}");
    // The embedded secrets did the work: without them nothing encrypted is read (a
    // resumed handshake has no CertificateVerify, a full one has).
    assert!(count_samples(&from_the_file, "s.signature_scheme IS NOT NULL") >= 6);
    assert_eq!(count_samples(&without, "s.signature_scheme IS NOT NULL"), 0);
    assert!(
        summary.contains("key log embedded"),
        "the summary says where the secrets came from: {summary}"
    );
}
