//! An emulated network between tlslab's client and its lab server: added round-trip delay,
//! jitter, random loss and a rate limit, so handshakes can be measured as over a real path.
//!
//! Three emulators, from most to least faithful ([`choose`] with [`EmulatorChoice::Auto`]
//! takes the first this machine runs):
//! - **netem** ([`EmulatorKind::Netem`]): two network namespaces joined by a veth pair with
//!   the kernel's netem qdisc on both ends. Needs root and the `sch_netem` module.
//! - **tun** ([`EmulatorKind::Tun`]): a TUN device in each namespace and a forwarder thread
//!   that holds every IP packet until its release time (timerfd plus a short poll, so the
//!   added delay is right to tens of microseconds). Needs root and `/dev/net/tun`; for kernels
//!   without netem.
//! - **relay** ([`EmulatorKind::Relay`]): a userspace TCP relay on 127.0.0.1 that delays each
//!   chunk it relays by `rtt / 2`. Needs nothing, but is lower fidelity: the client's TCP
//!   connection ends at the relay, so the TCP handshake is not delayed (one RTT less than over
//!   netem or tun); records sent together travel as one chunk; there is no loss and no rate
//!   limit ([`Network::set_profile`] refuses them).
//!
//! # API
//! - [`NetworkProfile`] (`rtt`, `jitter`, `loss`, `rate_bits_per_second`): per direction,
//!   `rtt / 2 ± jitter` of delay without reordering, random loss, and a rate with a queue of
//!   [`QUEUE_LIMIT_PACKETS`] dropping at the tail.
//! - [`choose`]`(`[`EmulatorChoice`]`) -> `[`EmulatorKind`], and [`available`] to ask about one
//!   kind; [`EmulatorKind::as_str`] and `FromStr` use "netem", "tun", "relay" (and "auto" for
//!   the choice).
//! - [`Network::create`]`(kind, run_id)`, then [`set_profile`](Network::set_profile) between
//!   trials, [`server_ip`](Network::server_ip),
//!   [`place_in_server_namespace`](Network::place_in_server_namespace) for the server child,
//!   [`enter_client_namespace`](Network::enter_client_namespace) on client threads (or a
//!   [`NamespaceHandle`] from [`clone_handle`](Network::clone_handle) for threads that
//!   outlive a borrow), [`route`](Network::route) for the address to connect to,
//!   [`statistics`](Network::statistics) ([`ForwarderStatistics`]: packets per direction,
//!   drops, the added-delay error histogram), and [`close`](Network::close) (or drop).
//! - [`remove_leftovers`] deletes namespaces of runs killed with -9.
//! - Every failure is an [`EmulationError`]: `message` says what failed, `hint` how to fix it.
//!
//! # Namespaces and addresses
//! For netem and tun, the client side is namespace `tlslab-<pid>-<run id>-client` with address
//! [`CLIENT_ADDRESS`] (10.201.0.1) and the server side `…-server` with [`SERVER_ADDRESS`]
//! (10.201.0.2); both have `lo` up. The server must listen on the server address (or 0.0.0.0)
//! inside the server namespace: its 127.0.0.1 is not reachable from the client namespace. A
//! thread enters a namespace with `setns`, which changes only that thread; threads it spawns
//! afterwards inherit the namespace, and sockets keep the namespace they were created in, on
//! whatever thread they are used later. The names carry the owning pid, so
//! [`remove_leftovers`] can tell a dead run's namespaces from a live one's.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use tlslab_emulation::{choose, EmulatorChoice, Network, NetworkProfile};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! tlslab_emulation::remove_leftovers()?; // namespaces of runs that were killed
//! let kind = choose(EmulatorChoice::Auto)?;
//! let network = Network::create(kind, "run42")?;
//! network.set_profile(&NetworkProfile {
//!     rtt: Duration::from_millis(50),
//!     jitter: Duration::from_millis(2),
//!     loss: 0.01,
//!     rate_bits_per_second: Some(20_000_000),
//! })?;
//!
//! // The lab server listens on the server address, inside the server namespace (with port 0,
//! // route the address it prints instead).
//! let listen = format!("{}:8443", network.server_ip());
//! let mut command = Command::new("tlslab");
//! command.args(["serve", "--listen", &listen]);
//! network.place_in_server_namespace(&mut command);
//! let mut server = command.spawn()?;
//!
//! // Client threads join the client namespace, then connect where `route` says.
//! let target = network.route(listen.parse()?)?;
//! let client = std::thread::spawn({
//!     let network = network.clone_handle();
//!     move || -> std::io::Result<()> {
//!         network.enter_client_namespace()?;
//!         let _connection = std::net::TcpStream::connect(target)?; // one RTT later
//!         Ok(())
//!     }
//! });
//! client.join().unwrap()?;
//! println!("{:?}", network.statistics().delay_error);
//! server.kill()?;
//! network.close()?;
//! # Ok(()) }
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod cleanup;
mod error;
mod forwarder;
mod impairment;
mod namespace;
mod netem;
mod profile;
mod relay;
mod statistics;
mod support;
mod sys;
mod tool;
mod tun;

pub use cleanup::remove_leftovers;
pub use error::EmulationError;
pub use profile::{NetworkProfile, QUEUE_LIMIT_PACKETS};
pub use statistics::{DelayErrorHistogram, DirectionStatistics, ForwarderStatistics};
pub use support::{available, choose, EmulatorChoice, EmulatorKind};

use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};

/// The client end's address in the netem and tun emulators.
pub const CLIENT_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 1);
/// The server end's address in the netem and tun emulators: where the lab server listens.
pub const SERVER_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 2);

enum Backend {
    Netem(netem::NetemNetwork),
    Tun(tun::TunNetwork),
    Relay(relay::RelaySet),
}

/// The namespaces' descriptors, shareable with threads and child processes.
#[derive(Clone)]
struct Namespaces {
    client: Arc<OwnedFd>,
    server: Arc<OwnedFd>,
}

/// An emulated network. Dropping it removes everything it created, like [`close`](Self::close)
/// but ignoring errors.
pub struct Network {
    kind: EmulatorKind,
    namespaces: Option<Namespaces>,
    names: Option<(String, String)>,
    /// `None` once closed; behind a mutex so a shared `&Network` can be used from threads.
    backend: Mutex<Option<Backend>>,
}

/// A cheap handle for other threads: it can enter the namespaces, but not change or close the
/// network (see [`Network::clone_handle`]).
#[derive(Clone)]
pub struct NamespaceHandle {
    namespaces: Option<Namespaces>,
}

impl NamespaceHandle {
    /// See [`Network::enter_client_namespace`].
    pub fn enter_client_namespace(&self) -> io::Result<()> {
        match &self.namespaces {
            Some(namespaces) => namespace::enter(namespaces.client.as_fd()),
            None => Ok(()),
        }
    }

    /// See [`Network::enter_server_namespace`].
    pub fn enter_server_namespace(&self) -> io::Result<()> {
        match &self.namespaces {
            Some(namespaces) => namespace::enter(namespaces.server.as_fd()),
            None => Ok(()),
        }
    }
}

impl Network {
    /// Builds the emulated network with no impairment yet (call [`set_profile`]). `run_id`
    /// goes into namespace names: 1 to 64 characters of `[A-Za-z0-9._-]`, unique among this
    /// process's live networks.
    ///
    /// [`set_profile`]: Self::set_profile
    pub fn create(kind: EmulatorKind, run_id: &str) -> Result<Network, EmulationError> {
        namespace::check_run_id(run_id)?;
        let backend = match kind {
            EmulatorKind::Relay => Backend::Relay(relay::RelaySet::new()),
            EmulatorKind::Netem => {
                available(kind)?;
                Backend::Netem(netem::NetemNetwork::create(run_id)?)
            }
            EmulatorKind::Tun => {
                available(kind)?;
                Backend::Tun(tun::TunNetwork::create(run_id)?)
            }
        };
        let pair = match &backend {
            Backend::Netem(netem) => Some(&netem.namespaces),
            Backend::Tun(tun) => Some(&tun.namespaces),
            Backend::Relay(_) => None,
        };
        let namespaces = pair.map(|pair| Namespaces {
            client: pair.client.file(),
            server: pair.server.file(),
        });
        let names = pair.map(|pair| {
            (
                pair.client.name().to_string(),
                pair.server.name().to_string(),
            )
        });
        Ok(Network {
            kind,
            namespaces,
            names,
            backend: Mutex::new(Some(backend)),
        })
    }

    /// The emulator that built this network, for the run's record.
    pub fn kind(&self) -> EmulatorKind {
        self.kind
    }

    fn with_backend<T>(
        &self,
        work: impl FnOnce(&Backend) -> Result<T, EmulationError>,
    ) -> Result<T, EmulationError> {
        let backend = self.backend.lock().unwrap_or_else(PoisonError::into_inner);
        match backend.as_ref() {
            Some(backend) => work(backend),
            None => Err(EmulationError::new(
                "the network is closed",
                "create a new network",
            )),
        }
    }

    /// Applies `profile`; packets arriving after this returns get it, packets already held keep
    /// their release times. Called between trials. The relay refuses loss and rate.
    pub fn set_profile(&self, profile: &NetworkProfile) -> Result<(), EmulationError> {
        profile.validate()?;
        self.with_backend(|backend| match backend {
            Backend::Netem(netem) => netem.set_profile(profile),
            Backend::Tun(tun) => tun.forwarder().set_profile(profile),
            Backend::Relay(relay) => relay.set_profile(profile),
        })
    }

    /// Where the server must listen: [`SERVER_ADDRESS`], or 127.0.0.1 for the relay.
    pub fn server_ip(&self) -> IpAddr {
        match self.kind {
            EmulatorKind::Relay => Ipv4Addr::LOCALHOST.into(),
            _ => SERVER_ADDRESS.into(),
        }
    }

    /// The client's source address: [`CLIENT_ADDRESS`], or 127.0.0.1 for the relay.
    pub fn client_ip(&self) -> IpAddr {
        match self.kind {
            EmulatorKind::Relay => Ipv4Addr::LOCALHOST.into(),
            _ => CLIENT_ADDRESS.into(),
        }
    }

    /// The names of the client and server namespaces (for `ip netns exec`), `None` for the
    /// relay.
    pub fn namespace_names(&self) -> Option<(&str, &str)> {
        self.names
            .as_ref()
            .map(|(client, server)| (client.as_str(), server.as_str()))
    }

    /// Makes `command`'s child process start inside the server namespace (a `setns` between
    /// fork and exec; the command keeps the namespace descriptor alive until it is dropped).
    /// No-op for the relay.
    pub fn place_in_server_namespace(&self, command: &mut Command) {
        let Some(namespaces) = &self.namespaces else {
            return;
        };
        let server = Arc::clone(&namespaces.server);
        // SAFETY: the closure only calls setns (a raw system call in rustix) on a descriptor
        // opened beforehand and turns the errno into an io::Error: async-signal-safe, no
        // allocation, no locks.
        unsafe {
            command.pre_exec(move || {
                move_into_link_name_space(server.as_fd(), Some(LinkNameSpaceType::Network))?;
                Ok(())
            });
        }
    }

    /// Moves the calling thread into the client namespace; threads it spawns afterwards start
    /// there too (call it from a runtime's thread-start hook and on the thread that builds the
    /// runtime). No-op for the relay.
    pub fn enter_client_namespace(&self) -> io::Result<()> {
        self.clone_handle().enter_client_namespace()
    }

    /// Moves the calling thread into the server namespace (for an in-process server, or
    /// tests). No-op for the relay.
    pub fn enter_server_namespace(&self) -> io::Result<()> {
        self.clone_handle().enter_server_namespace()
    }

    /// A handle other threads can keep to enter the namespaces.
    pub fn clone_handle(&self) -> NamespaceHandle {
        NamespaceHandle {
            namespaces: self.namespaces.clone(),
        }
    }

    /// Where the client must connect to reach a server listening at `server`. For netem and
    /// tun that is the server itself (an unspecified address such as 0.0.0.0 becomes
    /// [`SERVER_ADDRESS`]); a loopback address is an error, since the client namespace cannot
    /// reach the server namespace's loopback. For the relay, a new relay listener on
    /// 127.0.0.1 forwarding to `server`.
    pub fn route(&self, server: SocketAddr) -> Result<SocketAddr, EmulationError> {
        self.with_backend(|backend| match backend {
            Backend::Relay(relay) => relay.route(server),
            Backend::Netem(_) | Backend::Tun(_) => {
                let mut target = server;
                if server.ip().is_unspecified() {
                    target.set_ip(SERVER_ADDRESS.into());
                } else if server.ip().is_loopback() {
                    return Err(EmulationError::new(
                        format!(
                            "the server listens on {server}, a loopback address the client \
                             namespace cannot reach"
                        ),
                        format!("make the server listen on {SERVER_ADDRESS} or 0.0.0.0"),
                    ));
                }
                Ok(target)
            }
        })
    }

    /// What the forwarder did so far (tun: every IP packet; relay: every chunk), since creation
    /// or [`reset_statistics`](Self::reset_statistics). Empty for netem, which runs in the
    /// kernel.
    pub fn statistics(&self) -> ForwarderStatistics {
        self.with_backend(|backend| {
            Ok(match backend {
                Backend::Netem(_) => ForwarderStatistics::default(),
                Backend::Tun(tun) => tun.forwarder().statistics(),
                Backend::Relay(relay) => relay.statistics(),
            })
        })
        .unwrap_or_default()
    }

    /// Starts the statistics afresh (e.g. at the start of a trial).
    pub fn reset_statistics(&self) {
        let _ = self.with_backend(|backend| {
            match backend {
                Backend::Netem(_) => {}
                Backend::Tun(tun) => tun.forwarder().reset_statistics(),
                Backend::Relay(relay) => relay.reset_statistics(),
            }
            Ok(())
        });
    }

    /// Conditions that degrade fidelity without preventing the run (e.g. offloads left on).
    pub fn warnings(&self) -> Vec<String> {
        self.with_backend(|backend| {
            Ok(match backend {
                Backend::Netem(netem) => netem.warnings.clone(),
                _ => Vec::new(),
            })
        })
        .unwrap_or_default()
    }

    /// Stops the forwarder or relays and removes namespaces, devices and qdiscs.
    pub fn close(self) -> Result<(), EmulationError> {
        self.shut_down()
    }

    fn shut_down(&self) -> Result<(), EmulationError> {
        let backend = self
            .backend
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match backend {
            None => Ok(()),
            Some(Backend::Netem(netem)) => netem.close(),
            Some(Backend::Tun(tun)) => tun.close(),
            Some(Backend::Relay(relay)) => {
                relay.close();
                Ok(())
            }
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}
