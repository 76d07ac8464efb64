//! The lab server as a child process, and the control channel between it and the run.
//!
//! The child is the tlslab binary itself (`tlslab serve --control`). It prints one JSON line
//! with its address when it listens, then answers each `usage` line on stdin with a JSON line
//! of its CPU time and peak memory. It exits when stdin closes, so a run that dies takes its
//! servers with it.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde::{Deserialize, Serialize};
use tlslab_core::{Backend, ServerKey};

use crate::usage::{reset_peak, Usage};

/// The first line a controlled lab server prints.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ready {
    pub listening: SocketAddr,
    /// The ECHConfigList of a server that accepts ECH, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ech_config: Option<String>,
}

/// A lab server child process.
pub struct LabServer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    pub address: SocketAddr,
    pub key: ServerKey,
    /// The ECHConfigList clients need to reach this server with ECH (OpenSSL servers only).
    pub ech_config: Option<Vec<u8>>,
}

impl LabServer {
    /// Starts `program serve --control` for one server-side configuration.
    /// With an emulated network it listens on the server side of the link, inside the
    /// server namespace. An OpenSSL server always accepts ECH, with a key of its own whose
    /// configuration names `ech_public_name`, so Configs with and without ECH share it.
    pub fn spawn(
        program: &Path,
        pki_dir: &Path,
        key: ServerKey,
        ech_public_name: &str,
        network: Option<&tlslab_emulation::Network>,
    ) -> Result<LabServer, String> {
        let ServerKey {
            backend,
            cert,
            chain,
            resumption,
            early_data,
            body,
        } = key;
        let listen = match network {
            Some(network) => SocketAddr::new(network.server_ip(), 0),
            None => SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let mut command = Command::new(program);
        if let Some(network) = network {
            network.place_in_server_namespace(&mut command);
        }
        command
            .args(["serve", "--control", "--listen"])
            .arg(listen.to_string())
            .arg("--cert")
            .arg(cert.as_str())
            .arg("--chain")
            .arg(chain.to_string())
            .arg("--pki-dir")
            .arg(pki_dir);
        command
            .arg("--resumption")
            .arg(resumption.as_str())
            .arg("--body")
            .arg(body.to_string());
        if early_data {
            command.arg("--early-data");
        }
        command.arg("--backend").arg(backend.as_str());
        if backend == Backend::Openssl {
            command.arg("--ech-public-name").arg(ech_public_name);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| {
                format!("cannot start the lab server {}: {error}", program.display())
            })?;
        let input = child.stdin.take().expect("stdin is piped");
        let mut output = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let mut line = String::new();
        let ready: Option<Ready> = match output.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line).ok(),
            _ => None,
        };
        let Some(ready) = ready else {
            let _ = child.kill();
            let mut message = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut stderr, &mut message);
            }
            let _ = child.wait();
            return Err(format!(
                "the {backend} lab server ({cert}, chain {chain}) did not start: {}",
                message.trim()
            ));
        };
        let ech_config = match &ready.ech_config {
            Some(text) => Some(openssl::base64::decode_block(text).map_err(|_| {
                format!("the {backend} lab server sent an ECH configuration that is not base64")
            })?),
            None => None,
        };
        Ok(LabServer {
            child,
            input,
            output,
            address: ready.listening,
            key,
            ech_config,
        })
    }

    /// The server's CPU time so far and its peak memory since the previous call.
    pub fn usage(&mut self) -> Option<Usage> {
        self.ask("usage")
    }

    /// What the server counted so far: tickets redeemed, replays refused, early data.
    pub fn counters(&mut self) -> Option<ServerCounters> {
        self.ask("counters")
    }

    fn ask<T: serde::de::DeserializeOwned>(&mut self, request: &str) -> Option<T> {
        writeln!(self.input, "{request}").ok()?;
        self.input.flush().ok()?;
        let mut line = String::new();
        if self.output.read_line(&mut line).ok()? == 0 {
            return None;
        }
        serde_json::from_str(&line).ok()
    }
}

impl Drop for LabServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lab server's counters as the control channel carries them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCounters {
    pub tickets_redeemed: u64,
    pub replays_rejected: u64,
    pub early_data_accepted: u64,
    pub requests: u64,
}

/// The child's side of the control channel: announce `address` (TCP and UDP share the port),
/// then answer `usage` and `counters` requests until stdin closes. Blocks the calling thread.
pub fn answer_control_requests(ready: &Ready, counters: impl Fn() -> ServerCounters) {
    let stdout = std::io::stdout();
    let announce = serde_json::to_string(ready).expect("serializable");
    {
        let mut out = stdout.lock();
        let _ = writeln!(out, "{announce}");
        let _ = out.flush();
    }
    reset_peak();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim() == "usage" {
            let usage = Usage::current();
            reset_peak();
            let mut out = stdout.lock();
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string(&usage).expect("serializable")
            );
            let _ = out.flush();
        } else if line.trim() == "counters" {
            let mut out = stdout.lock();
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string(&counters()).expect("serializable")
            );
            let _ = out.flush();
        }
    }
}
