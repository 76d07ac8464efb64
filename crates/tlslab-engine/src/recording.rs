//! `--capture FILE`: the run's own packets, recorded where the client sends them (in the
//! client's network namespace on an emulated link, on loopback for the lab server, on every
//! interface for a target), so the run can be checked against what the wire saw.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use tlslab_capture::live::Recorder;

use crate::error::RunError;
use crate::network::EmulatedNetwork;
use crate::stop::Stop;

/// A recording in progress, on its own thread.
pub struct Recording {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64, RunError>>,
    path: PathBuf,
    /// The recording's failure (a full disk), set when it happens: its message (causes
    /// included) and hint, to make the run's error from each time the loop asks.
    failure: Arc<Mutex<Option<(String, String)>>>,
}

/// The capture's failure as the run's error, followed by `more`. A capture error is a message
/// and a hint whose causes (the system's reason) are kept in the message, where the text
/// added after it (`; the run stopped there`) can follow it.
fn failed(path: &Path, error: tlslab_capture::CaptureError, more: &str) -> RunError {
    // A message that names the file already says which it is.
    let shown = path.display().to_string();
    let detail = tlslab_core::WithCauses(&error).to_string();
    let message = if error.message.contains(&shown) {
        format!("{detail}{more}")
    } else {
        format!("--capture {shown}: {detail}{more}")
    };
    RunError::environment(message, error.hint)
}

impl Recording {
    /// Starts recording into `path` and returns once the capture sees packets, so the first
    /// handshake is in it. A recording that fails (a full disk) requests `halt` at once: the
    /// run was asked to be checked against its packets, and measuring on would measure
    /// handshakes no capture holds.
    pub fn start(
        path: &Path,
        emulated: Option<&EmulatedNetwork>,
        external: bool,
        halt: Stop,
    ) -> Result<Recording, RunError> {
        let namespace = emulated.map(EmulatedNetwork::client_namespace);
        // The lab server answers on loopback unless a link is emulated; a target anywhere.
        let interface = match (emulated, external) {
            (None, false) => "lo",
            _ => "any",
        };
        let stop = Arc::new(AtomicBool::new(false));
        let failure: Arc<Mutex<Option<(String, String)>>> = Arc::default();
        let (ready, opened) = mpsc::channel();
        let thread = {
            let path = path.to_path_buf();
            let stop = stop.clone();
            let failure = failure.clone();
            std::thread::Builder::new()
                .name("tlslab-capture".into())
                .spawn(move || {
                    if let Some(namespace) = &namespace {
                        if let Err(error) = namespace.enter_client_namespace() {
                            let _ = ready.send(Err(RunError::environment(
                                "--capture cannot enter the client's namespace",
                                "capturing an emulated link needs root or CAP_NET_ADMIN",
                            )
                            .because(error)));
                            return Ok(0);
                        }
                    }
                    match Recorder::open(&path, Some(interface)) {
                        Ok(recorder) => {
                            let _ = ready.send(Ok(()));
                            let recorded = recorder.run(&stop).map_err(|error| {
                                let more = match stop.load(Ordering::Relaxed) {
                                    true => "",
                                    false => "; the run stopped there",
                                };
                                failed(&path, error, more)
                            });
                            if let Err(error) = &recorded {
                                let mut slot = failure.lock().unwrap_or_else(|e| e.into_inner());
                                *slot = Some((error.to_string(), error.hint().to_string()));
                                halt.request();
                            }
                            recorded
                        }
                        Err(error) => {
                            let _ = ready.send(Err(failed(&path, error, "")));
                            Ok(0)
                        }
                    }
                })
                .map_err(|error| {
                    RunError::environment(
                        "cannot start the capture thread",
                        "check the process limits",
                    )
                    .because(error)
                })?
        };
        match opened.recv() {
            Ok(Ok(())) => Ok(Recording {
                stop,
                thread,
                path: path.to_path_buf(),
                failure,
            }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(RunError::environment(
                "the capture thread ended before it started",
                "report this as a bug",
            )),
        }
    }

    /// The recording's failure, once it failed: the run stops with it.
    pub fn failure(&self) -> Option<RunError> {
        let failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        let (message, hint) = failure.clone()?;
        Some(RunError::environment(message, hint))
    }

    /// Stops recording, writes the file out and returns the packets in it.
    pub fn finish(self) -> Result<u64, RunError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(result) => result,
            Err(_) => Err(RunError::environment(
                format!("the capture into {} crashed", self.path.display()),
                "report this as a bug",
            )),
        }
    }
}
