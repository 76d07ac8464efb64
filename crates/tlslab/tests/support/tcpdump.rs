//! tcpdump as the tests run it: started on an interface (of a network namespace or of this
//! process's) with a kernel buffer large enough for immediate mode, returned once it
//! captures, and stopped as Ctrl-C would stop it. Shared by the binary's end-to-end tests
//! (`tests/support/mod.rs`) and the workflow crate's tests (`#[path]`), so both capture the
//! same way; it needs nothing but the standard library.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running tcpdump writing what it captures to a file (`-U`: each packet at once).
pub struct Tcpdump {
    child: Child,
    file: PathBuf,
}

/// tcpdump on `interface` of network namespace `namespace` (`ip netns exec`), or of this
/// process's, keeping the packets that `expression` (tcpdump's syntax) passes, into
/// `dir/name.pcap`; it returns once tcpdump captures, or `None` (with the reason printed)
/// where it cannot run.
pub fn tcpdump_in(
    namespace: Option<&str>,
    interface: &str,
    dir: &Path,
    name: &str,
    expression: &str,
) -> Option<Tcpdump> {
    let file = dir.join(format!("{name}.pcap"));
    let mut command = match namespace {
        Some(namespace) => {
            let mut command = Command::new("ip");
            command.args(["netns", "exec", namespace, "tcpdump"]);
            command
        }
        None => Command::new("tcpdump"),
    };
    let mut child = match command
        // A large kernel buffer: immediate mode with the default one drops packets under load.
        .args([
            "-i",
            interface,
            "--immediate-mode",
            "-B",
            "32768",
            "-Z",
            "root",
            "-U",
            "-w",
        ])
        .arg(&file)
        .args(expression.split_whitespace())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            println!("skipped: tcpdump does not run here ({error}); .ci/run installs it");
            return None;
        }
    };
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("listening on") => break,
            Some(Ok(_)) => continue,
            _ => {
                let _ = child.wait();
                println!(
                    "skipped: tcpdump cannot capture on {interface} here (root or CAP_NET_RAW needed)"
                );
                return None;
            }
        }
    }
    // The rest of its stderr (the counts it prints at exit) goes nowhere.
    std::thread::spawn(move || lines.for_each(drop));
    Some(Tcpdump { child, file })
}

impl Tcpdump {
    /// Stops the capture (as Ctrl-C would) and returns the file, complete.
    pub fn stop(mut self) -> PathBuf {
        // Let the last packets of the run reach the file (-U writes each packet at once).
        std::thread::sleep(std::time::Duration::from_millis(200));
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self.file
    }
}
