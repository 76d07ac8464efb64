//! The lab server as a child process, and the control channel between it and the run.
//!
//! The child is the tlslab binary itself (`tlslab serve --control`, which runs
//! [`crate::serve`]). It prints one JSON line with its addresses (TLS, and the same site over
//! plain-text HTTP) when it listens, then answers
//! each `usage` line on stdin with a JSON line of its CPU time and peak memory, and each
//! `counters` line with its [`CounterSnapshot`]. It exits when stdin closes, so a run that
//! dies takes its servers with it.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine;
use serde::{Deserialize, Serialize};
use tlslab_backend::CounterSnapshot;
use tlslab_core::{Backend, ServerKey, Usage};

use crate::error::RunError;
use crate::stop::Stop;
use crate::usage::{current, reset_peak};

/// Lines of a lab server's stderr kept for the message when it dies.
const KEPT_LINES: usize = 10;

/// The first line a controlled lab server prints.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ready {
    /// Where the server accepts TLS over TCP and QUIC (one port number for both).
    pub listening: SocketAddr,
    /// The same site over plain-text HTTP (HTTP/1.1 and h2c), for load generators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain: Option<SocketAddr>,
    /// The ECHConfigList of a server that accepts ECH, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ech_config: Option<String>,
}

/// A lab server child process.
pub struct LabServer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// Where it accepts TLS over TCP and QUIC.
    pub address: SocketAddr,
    /// Where it serves the same site without TLS.
    pub plain_address: Option<SocketAddr>,
    /// The certificate, chain and backend it serves, which name it among a run's servers.
    pub key: ServerKey,
    /// The ECHConfigList clients need to reach this server with ECH (OpenSSL servers only).
    pub ech_config: Option<Vec<u8>>,
    errors: ErrorStream,
}

/// A lab server's stderr, read on a thread of its own, so a chatty server never blocks on a
/// full pipe: its last lines are kept for the message when it dies, and the end of the
/// stream (the server exited) requests the stop given to [`ErrorStream::on_end`].
struct ErrorStream {
    tail: Arc<Mutex<VecDeque<String>>>,
    end: Arc<Mutex<EndOfStream>>,
    reader: Option<JoinHandle<()>>,
}

/// Whether the stream ended, and whom to tell when it does.
#[derive(Default)]
struct EndOfStream {
    ended: bool,
    tell: Option<Stop>,
}

impl ErrorStream {
    fn read(stderr: Option<ChildStderr>) -> ErrorStream {
        let tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let end: Arc<Mutex<EndOfStream>> = Arc::default();
        let (kept, ending) = (tail.clone(), end.clone());
        let reader = stderr.and_then(|stderr| {
            std::thread::Builder::new()
                .name("tlslab-lab-stderr".into())
                .spawn(move || {
                    for line in BufReader::new(stderr).lines() {
                        let Ok(line) = line else { break };
                        let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                        if kept.len() == KEPT_LINES {
                            kept.pop_front();
                        }
                        kept.push_back(line);
                    }
                    let mut end = ending.lock().unwrap_or_else(|e| e.into_inner());
                    end.ended = true;
                    if let Some(stop) = &end.tell {
                        stop.request();
                    }
                })
                .ok()
        });
        ErrorStream { tail, end, reader }
    }

    /// Requests `stop` when the stream ends (at once, if it already has).
    fn on_end(&self, stop: Stop) {
        let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
        if end.ended {
            stop.request();
        }
        end.tell = Some(stop);
    }

    fn ended(&self) -> bool {
        self.end.lock().unwrap_or_else(|e| e.into_inner()).ended
    }

    /// The last lines, once the stream has ended (waits for the reader to finish).
    fn finished_tail(&mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.tail()
    }

    fn tail(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

impl LabServer {
    /// Starts `program serve --control` for one server-side configuration.
    /// With an emulated network it listens on the server side of the link, inside the
    /// server namespace. An OpenSSL server always accepts ECH, with a key of its own whose
    /// configuration names `ech_public_name`, so Configs with and without ECH share it.
    /// `exited` is requested if the server exits once it has started.
    pub fn spawn(
        program: &Path,
        pki_dir: &Path,
        key: ServerKey,
        ech_public_name: &str,
        network: Option<&tlslab_emulation::Network>,
        exited: Stop,
    ) -> Result<LabServer, RunError> {
        let failed = |message: String| {
            RunError::environment(
                message,
                "run `tlslab serve --cert ... --chain ...` by hand to see why",
            )
        };
        let ServerKey {
            backend,
            cert,
            chain,
            ..
        } = key;
        let mut child = serve_command(program, pki_dir, &key, ech_public_name, network)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| {
                failed(format!("cannot start the lab server {}", program.display())).because(error)
            })?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(
                "the lab server's stdin and stdout are not piped".into(),
            ));
        };
        let mut errors = ErrorStream::read(child.stderr.take());
        let mut output = BufReader::new(output);
        let mut line = String::new();
        let ready: Option<Ready> = match output.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line).ok(),
            _ => None,
        };
        let Some(ready) = ready else {
            let _ = child.kill();
            let message = errors.finished_tail();
            let _ = child.wait();
            return Err(failed(format!(
                "the {backend} lab server ({cert}, chain {chain}) did not start: {}",
                message.trim()
            )));
        };
        // From now on the end of its stderr means the server died during the run.
        errors.on_end(exited);
        let ech_config = match &ready.ech_config {
            Some(text) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|error| {
                        failed(format!(
                            "the {backend} lab server sent an ECH configuration that is not base64"
                        ))
                        .because(error)
                    })?,
            ),
            None => None,
        };
        Ok(LabServer {
            child,
            input,
            output,
            address: ready.listening,
            plain_address: ready.plain,
            key,
            ech_config,
            errors,
        })
    }

    /// Why the server is gone, when it exited during the run: its status and the last lines
    /// it wrote.
    pub fn failure(&mut self) -> Option<RunError> {
        if !self.errors.ended() {
            return None;
        }
        // Its stderr closed: it is exiting; give the kernel a moment to report how.
        let deadline = Instant::now() + Duration::from_secs(1);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.to_string(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break "its error stream closed".to_string(),
            }
        };
        let ServerKey {
            backend,
            cert,
            chain,
            ..
        } = self.key;
        let tail = self.errors.finished_tail();
        Some(RunError::environment(
            format!(
                "the {backend} lab server ({cert}, chain {chain}) exited during the run ({status}){}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            ),
            "the samples taken until then are stored; look for an out-of-memory kill in the \
             system log, or run `tlslab serve` with the same --cert and --chain by hand",
        ))
    }

    /// The server's CPU time so far and its peak memory since the previous call.
    pub fn usage(&mut self) -> Option<Usage> {
        self.ask("usage")
    }

    /// What the server counted so far: tickets redeemed, replays refused, early data.
    pub fn counters(&mut self) -> Option<CounterSnapshot> {
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

/// `program serve --control` for `key`, listening on the server side of `network` (inside its
/// server namespace) or on loopback, on a port the server picks.
fn serve_command(
    program: &Path,
    pki_dir: &Path,
    key: &ServerKey,
    ech_public_name: &str,
    network: Option<&tlslab_emulation::Network>,
) -> Command {
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
        .arg(key.cert.as_str())
        .arg("--chain")
        .arg(key.chain.to_string())
        .arg("--pki-dir")
        .arg(pki_dir)
        .arg("--resumption")
        .arg(key.resumption.as_str())
        .arg("--body")
        .arg(key.body.to_string())
        .arg("--backend")
        .arg(key.backend.as_str());
    if key.early_data {
        command.arg("--early-data");
    }
    if let Some(profile) = key.client_certificates {
        command.arg("--client-cert-profile").arg(profile.as_str());
    }
    if key.backend == Backend::Openssl {
        command.arg("--ech-public-name").arg(ech_public_name);
    }
    command
}

impl Drop for LabServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's side of the control channel: announce `address` (TCP and UDP share the port),
/// then answer `usage` and `counters` requests until stdin closes. Blocks the calling thread.
pub fn answer_control_requests(ready: &Ready, counters: impl Fn() -> CounterSnapshot) {
    answer(
        ready,
        counters,
        std::io::stdin().lock(),
        &mut std::io::stdout(),
    );
}

/// The control channel over any line reader and writer.
fn answer(
    ready: &Ready,
    counters: impl Fn() -> CounterSnapshot,
    input: impl BufRead,
    out: &mut impl Write,
) {
    let mut say = |line: Result<String, serde_json::Error>| {
        // The three types always serialize; a failed write means the run is gone.
        if let Ok(line) = line {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    };
    say(serde_json::to_string(ready));
    reset_peak();
    for line in input.lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "usage" => {
                let usage = current();
                reset_peak();
                say(serde_json::to_string(&usage));
            }
            "counters" => say(serde_json::to_string(&counters())),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_channel_announces_then_answers_each_request() {
        let ready = Ready {
            listening: "127.0.0.1:8443".parse().unwrap(),
            plain: Some("127.0.0.1:8080".parse().unwrap()),
            ech_config: None,
        };
        let counters = || CounterSnapshot {
            requests: 7,
            ..CounterSnapshot::default()
        };
        let mut out = Vec::new();
        answer(
            &ready,
            counters,
            &b"usage\nnonsense\ncounters\n"[..],
            &mut out,
        );
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let announced: Ready = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(announced.listening.port(), 8443);
        assert_eq!(announced.plain.map(|plain| plain.port()), Some(8080));
        let usage: Usage = serde_json::from_str(lines[1]).unwrap();
        assert!(usage.peak_rss_bytes > 0);
        let read: CounterSnapshot = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(read.requests, 7);
    }
}
