//! The emulated network of a run: which emulator, its namespaces, the per-Config profile, and
//! servers started inside it with `--server-cmd`.

use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use tlslab_core::{Emulator, Experiment, Network, Transport};
use tlslab_emulation::{
    choose, remove_leftovers, EmulatorChoice, EmulatorKind, NamespaceHandle, NetworkProfile,
};

use crate::error::RunError;
use crate::process_tree;

/// Tells the user something on stderr, each line escaped for a terminal (it names devices and
/// commands); a closed stderr is no reason to stop a run.
pub(crate) fn note(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = text.to_string();
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}",
        tlslab_core::terminal::escape_lines(&text)
    );
}

/// The emulated link of a run, and how to describe it.
pub struct EmulatedNetwork {
    /// The emulator's devices and namespaces, whose profile each trial sets.
    pub network: tlslab_emulation::Network,
    /// For `Environment.network` and the summary.
    pub description: String,
    /// The profile in force, to know when a trial changes it.
    current: std::sync::Mutex<Option<NetworkProfile>>,
}

impl EmulatedNetwork {
    /// Removes what killed runs left behind, picks the emulator the experiment asks for (or
    /// the most faithful one available), and builds the link. `run_id` goes into the names
    /// of namespaces and devices.
    pub fn create(experiment: &Experiment, run_id: &str) -> Result<EmulatedNetwork, RunError> {
        match remove_leftovers() {
            Ok(removed) if !removed.is_empty() => note(format_args!(
                "note: removed what killed runs left behind: {}",
                removed.join(", ")
            )),
            Ok(_) => {}
            // Not fatal: leftovers only take names we do not reuse (each has its own pid).
            Err(error) => note(format_args!(
                "note: cannot look for leftovers of killed runs: {error}"
            )),
        }
        let choice = match experiment.emulator {
            Emulator::Auto => EmulatorChoice::Auto,
            Emulator::Netem => EmulatorChoice::Kind(EmulatorKind::Netem),
            Emulator::Tun => EmulatorChoice::Kind(EmulatorKind::Tun),
            Emulator::Relay => EmulatorChoice::Kind(EmulatorKind::Relay),
        };
        let kind = choose(choice)?;
        let lossy = experiment.loss.iter().any(|loss| loss.0 > 0.0);
        if kind == EmulatorKind::Relay && (lossy || !experiment.bandwidth.is_empty()) {
            return Err(RunError::configuration(
                "the relay emulator cannot drop packets or limit the rate",
                "use --emulator tun or netem (they need root or CAP_NET_ADMIN), or leave out --loss and --bandwidth",
            ));
        }
        if kind == EmulatorKind::Relay && experiment.transport.contains(&Transport::Quic) {
            return Err(match experiment.emulator {
                Emulator::Relay => RunError::configuration(
                    "the relay emulator carries TCP only, not QUIC's UDP",
                    "use --emulator tun or netem (they need root or CAP_NET_ADMIN)",
                ),
                _ => RunError::environment(
                    "QUIC over an emulated network needs the tun or netem emulator, and this machine can run neither",
                    "run as root or with CAP_NET_ADMIN and /dev/net/tun, or drop --transport quic",
                ),
            });
        }
        if experiment.target.is_some()
            && experiment.server_cmd.is_none()
            && kind != EmulatorKind::Relay
        {
            return Err(RunError::configuration(
                "an external --target is outside the emulated network",
                "start the server inside it with --server-cmd '…' (--target then names its port), or use --emulator relay",
            ));
        }
        let network = tlslab_emulation::Network::create(kind, run_id)?;
        let description = match kind {
            EmulatorKind::Netem => "netem: a veth pair between two network namespaces, netem on both ends",
            EmulatorKind::Tun => "tun: two network namespaces joined by TUN devices; tlslab forwards each IP packet after its delay",
            EmulatorKind::Relay => "relay: a userspace TCP relay on 127.0.0.1 that delays relayed bytes (lower fidelity: TCP connect not delayed, no loss or rate)",
        };
        Ok(EmulatedNetwork {
            network,
            description: description.to_string(),
            current: std::sync::Mutex::new(None),
        })
    }

    /// The emulator's name (`netem`, `tun`, `relay`), as the run's records name it.
    pub fn kind(&self) -> &'static str {
        self.network.kind().as_str()
    }

    /// Applies a Config's profile before its trial (loopback Configs get no impairment).
    pub fn apply(&self, network: Option<&Network>) -> Result<(), RunError> {
        let profile = match network {
            Some(network) => NetworkProfile {
                rtt: network.rtt,
                jitter: network.jitter,
                loss: network.loss.0,
                rate_bits_per_second: network.rate.map(|rate| rate.0),
            },
            None => NetworkProfile::with_rtt(Duration::ZERO),
        };
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref() == Some(&profile) {
            return Ok(());
        }
        if let Some(previous) = current.as_ref() {
            // Let the last trial's packets leave the link first: the emulator keeps each
            // direction in order, so a SYN sent under a shorter delay would otherwise wait
            // behind them and the next handshake would pay the old delay. Three one-way
            // trips: the client's last packet (its Finished) reaches the server half an RTT
            // later; what the server sent in answer (TLS 1.3's session tickets) arrives a
            // whole RTT after it, at a client that has closed, whose kernel answers with a
            // reset that needs half an RTT more. Waiting one RTT let that reset, queued under
            // the old delay, hold the next trial's first SYN for half the old RTT.
            std::thread::sleep(
                previous.rtt * 3 / 2 + previous.jitter * 3 + Duration::from_millis(2),
            );
        }
        self.network.set_profile(&profile)?;
        *current = Some(profile);
        Ok(())
    }

    /// A handle on the client's network namespace, for threads that must join it.
    pub fn client_namespace(&self) -> NamespaceHandle {
        self.network.clone_handle()
    }
}

/// A server the user's `--server-cmd` started (in the server namespace when there is one).
/// Stopped, with everything it started, daemons included, when dropped
/// (`process_tree`).
pub struct ExternalServer {
    /// The shell that runs the command and adopts whatever it leaves.
    child: Child,
}

impl ExternalServer {
    /// Starts `sh -c command` and waits until `address` accepts TCP connections from where
    /// the client runs.
    pub fn start(
        command: &str,
        address: SocketAddr,
        network: Option<&EmulatedNetwork>,
    ) -> Result<ExternalServer, RunError> {
        let mut shell = process_tree::command(command);
        shell
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group: a Ctrl-C at the terminal reaches tlslab alone, which
            // stops the server after the run's samples are stored.
            .process_group(0);
        if let Some(network) = network {
            network.network.place_in_server_namespace(&mut shell);
        }
        let child = shell.spawn().map_err(|error| {
            RunError::environment(
                "cannot start --server-cmd",
                "check that sh exists and the command is right",
            )
            .because(error)
        })?;
        let mut server = ExternalServer { child };
        let namespace = network.map(EmulatedNetwork::client_namespace);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                let mut message = String::new();
                if let Some(mut stderr) = server.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut message);
                }
                return Err(RunError::configuration(
                    format!(
                        "--server-cmd exited ({status}) before accepting connections: {}",
                        message.trim()
                    ),
                    "run the command by hand to see why it failed",
                ));
            }
            let returned = process_tree::returned(server.child.id());
            if accepts(address, namespace.clone()) {
                if returned {
                    note(format_args!(
                        "note: --server-cmd returned and left its server running in the background (a daemon, as nginx without 'daemon off;'); tlslab stops it, and all the command started, after the run"
                    ));
                }
                return Ok(server);
            }
            if returned && process_tree::descendants(server.child.id()).is_empty() {
                return Err(RunError::configuration(
                    "--server-cmd returned (exit status 0) and left nothing running",
                    "run the command by hand to see why; it must start a server that listens on --target's port",
                ));
            }
            if Instant::now() > deadline {
                return Err(RunError::configuration(
                    format!("--server-cmd did not accept connections on {address} within 15 s"),
                    "make the server listen on that port on all addresses (0.0.0.0), or fix --target's port",
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether `address` accepts a TCP connection, tried from the client namespace.
fn accepts(address: SocketAddr, namespace: Option<NamespaceHandle>) -> bool {
    std::thread::spawn(move || {
        if let Some(namespace) = namespace {
            if namespace.enter_client_namespace().is_err() {
                return false;
            }
        }
        TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok()
    })
    .join()
    .unwrap_or(false)
}

impl Drop for ExternalServer {
    /// SIGTERM to everything below the shell, SIGKILL to what is left after 5 s, then the
    /// shell itself: the shell goes last, as while it lives every orphan below it is its own
    /// and so found (a daemon's workers outlive a killed master otherwise).
    fn drop(&mut self) {
        use rustix::process::Signal;
        let root = self.child.id();
        let mut signalled = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let running = process_tree::descendants(root);
            if running.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                process_tree::signal(&running, Signal::KILL);
                break;
            }
            // Each once: a server may take SIGTERM as "finish gracefully".
            let new: Vec<u32> = running
                .into_iter()
                .filter(|pid| !signalled.contains(pid))
                .collect();
            process_tree::signal(&new, Signal::TERM);
            signalled.extend(new);
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
