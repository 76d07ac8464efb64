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
    /// The recording's failure (a full disk), set when it happens.
    failure: Arc<Mutex<Option<RunError>>>,
}

fn failed(path: &Path, error: tlslab_capture::CaptureError) -> RunError {
    // A message that names the file already says which it is.
    let shown = path.display().to_string();
    let detail = tlslab_core::WithCauses(&error).to_string();
    let message = if error.message.contains(&shown) {
        detail
    } else {
        format!("--capture {shown}: {detail}")
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
        let failure: Arc<Mutex<Option<RunError>>> = Arc::default();
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
                                format!("--capture cannot enter the client's namespace: {error}"),
                                "capturing an emulated link needs root or CAP_NET_ADMIN",
                            )));
                            return Ok(0);
                        }
                    }
                    match Recorder::open(&path, Some(interface)) {
                        Ok(recorder) => {
                            let _ = ready.send(Ok(()));
                            let mut recorded =
                                recorder.run(&stop).map_err(|error| failed(&path, error));
                            if let Err(error) = &mut recorded {
                                if !stop.load(Ordering::Relaxed) {
                                    error.message.push_str("; the run stopped there");
                                }
                                let mut slot = failure.lock().unwrap_or_else(|e| e.into_inner());
                                *slot = Some(error.clone());
                                halt.request();
                            }
                            recorded
                        }
                        Err(error) => {
                            let _ = ready.send(Err(failed(&path, error)));
                            Ok(0)
                        }
                    }
                })
                .map_err(|error| {
                    RunError::environment(
                        format!("cannot start the capture thread: {error}"),
                        "check the process limits",
                    )
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
        failure.clone()
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
