//! What the workflow tests share: a lab server started by the serve workflow in this
//! process, scratch directories, and a look into a results store.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use tlslab_core::Experiment;
use tlslab_workflow::serve::{ServeRequest, Serving};
use tlslab_workflow::{Control, Invocation, Notice, Stop, WorkflowError};

/// tcpdump started and stopped as the binary's end-to-end tests run it (one helper for both).
#[path = "../../../tlslab/tests/support/tcpdump.rs"]
pub mod tcpdump;
// Only the test files that capture name it.
#[allow(unused_imports)]
pub use tcpdump::{tcpdump_in, Tcpdump};

/// A fresh directory for one test, under Cargo's scratch space for tests.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("workflow")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The lab's certificates, shared by every test (made once, then read).
pub fn pki_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("workflow-pki")
}

/// Who the tests are: no tlslab binary (every run here measures an external target, the
/// lab server this process serves, so the engine starts none).
pub fn invocation(name: &str) -> Invocation {
    Invocation {
        command_line: vec!["workflow-test".into(), name.into()],
        ..Invocation::new("/nonexistent/tlslab", "0.0.0-test")
    }
}

/// A lab server the serve workflow runs on a thread of this process, stopped (and joined)
/// on drop.
pub struct Lab {
    pub serving: Serving,
    pub stop: Stop,
    thread: Option<JoinHandle<Result<(), WorkflowError>>>,
}

impl Lab {
    /// Starts the serve workflow on 127.0.0.1, a free port, and waits for its notice.
    pub fn start() -> Lab {
        Lab::start_with(|_| {})
    }

    /// [`Lab::start`], `change` made to the request first.
    pub fn start_with(change: impl FnOnce(&mut ServeRequest)) -> Lab {
        let mut request = ServeRequest::new("127.0.0.1:0".parse().unwrap());
        request.pki_dir = Some(pki_dir());
        change(&mut request);
        let (sender, receiver) = mpsc::channel();
        let sender = std::sync::Mutex::new(sender);
        let control = Control {
            notices: Some(Arc::new(move |notice: &Notice| {
                if let Notice::Serving(serving) = notice {
                    let _ = sender.lock().unwrap().send(serving.clone());
                }
            })),
            ..Control::default()
        };
        let stop = control.stop.clone();
        let thread = std::thread::spawn(move || tlslab_workflow::serve::serve(&request, &control));
        let serving = match receiver.recv() {
            Ok(serving) => serving,
            Err(_) => panic!("the lab server did not start: {:?}", thread.join()),
        };
        Lab {
            serving,
            stop,
            thread: Some(thread),
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.serving.local
    }

    /// An experiment against this server: its address, its name, its root trusted.
    pub fn experiment(&self, handshakes: u64) -> Experiment {
        Experiment {
            target: Some(self.address().to_string()),
            sni: Some("localhost".into()),
            ca: Some(self.serving.root.clone()),
            handshakes,
            warmup: 2,
            tls: vec![tlslab_core::TlsVersion::Tls13],
            ..Experiment::default()
        }
    }

    /// Stops the server and returns what the workflow returned.
    pub fn stop(mut self) -> Result<(), WorkflowError> {
        self.stop.request();
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop.request();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One number from a results store.
pub fn count(store: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open(store)
        .unwrap()
        .query_row(sql, [], |row| row.get(0))
        .unwrap()
}

/// The texts of an error and of each cause below it.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut texts = vec![error.to_string()];
    let mut next = error.source();
    while let Some(cause) = next {
        texts.push(cause.to_string());
        next = cause.source();
    }
    texts
}
