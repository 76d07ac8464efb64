//! The tun emulator: a TUN device in each namespace and a userspace forwarder between them.
//!
//! Client traffic to the server address is routed into the client namespace's TUN device; the
//! forwarder reads each IP packet there, holds it for the direction's delay (with loss and
//! rate applied), and writes it into the server namespace's TUN device, where the kernel
//! delivers it as if it had arrived on a wire. Replies take the mirror path.

use crate::forwarder::Forwarder;
use crate::namespace::{Namespace, NamespacePair};
use crate::{tool, EmulationError, CLIENT_ADDRESS, SERVER_ADDRESS};
use rustix::fs::OFlags;
use rustix::ioctl::{self, opcode, Opcode, Updater};
use std::ffi::c_int;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;

/// `_IOW('T', 202, int)`: attach the descriptor to a (new) TUN/TAP interface. (The kernel
/// reads, and writes back, a whole `struct ifreq`, whatever the `int` in the number says.)
const TUNSETIFF: Opcode = opcode::write::<c_int>(b'T', 202);
const _: () = assert!(TUNSETIFF == 0x4004_54ca);
const _: () = assert!(std::mem::size_of::<InterfaceRequest>() == 40);
const IFF_TUN: i16 = 0x0001;
/// No 4-byte packet-information header: reads and writes are bare IP packets.
const IFF_NO_PI: i16 = 0x1000;
/// Interface names, with their terminating NUL, fill at most this many bytes.
pub(crate) const IFNAMSIZ: usize = 16;

/// `struct ifreq` with the flags member of its union; 40 bytes like the kernel's.
#[repr(C)]
struct InterfaceRequest {
    name: [u8; IFNAMSIZ],
    flags: i16,
    padding: [u8; 22],
}

/// Creates a TUN interface named `name` in the calling thread's network namespace. The
/// descriptor keeps working from any namespace, and closing it removes the interface: a run
/// killed with -9 leaves no devices behind.
pub(crate) fn open_device(name: &str) -> io::Result<OwnedFd> {
    if name.len() >= IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name '{name}' is longer than 15 characters"),
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(OFlags::NONBLOCK.bits() as i32)
        .open("/dev/net/tun")?;
    let mut request = InterfaceRequest {
        name: [0; IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        padding: [0; 22],
    };
    request.name[..name.len()].copy_from_slice(name.as_bytes());
    // rustix has no typed TUNSETIFF; its `Updater` pattern passes a pointer to `request`.
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which `request` is (same layout and
    // size), and the borrow outlives the call.
    unsafe { ioctl::ioctl(&file, Updater::<TUNSETIFF, _>::new(&mut request)) }?;
    Ok(OwnedFd::from(file))
}

/// Turns IPv6 off on an interface of the calling thread's namespace (/proc/sys/net follows
/// the thread's namespace): otherwise router solicitations and MLD reports would be forwarded
/// and counted as test traffic.
pub(crate) fn disable_ipv6(interface: &str) {
    let path = format!("/proc/sys/net/ipv6/conf/{interface}/disable_ipv6");
    // Kernels without IPv6 have no such file, and then there is nothing to silence.
    let _ = std::fs::write(path, "1");
}

/// Interface names are at most 15 characters: a role letter and the pid fit, the run id does
/// not, and needs not, since each run has namespaces of its own.
pub(crate) fn interface_name(role: char) -> String {
    format!("tl{role}{}", std::process::id())
}

fn create_device(
    namespace: &Namespace,
    interface: &str,
    local: std::net::Ipv4Addr,
    peer: std::net::Ipv4Addr,
) -> Result<OwnedFd, EmulationError> {
    let device = namespace
        .run_inside(|| {
            let device = open_device(interface)?;
            disable_ipv6(interface);
            Ok::<_, io::Error>(device)
        })
        .and_then(|result| result)
        .map_err(|error| {
            EmulationError::io(
                format!(
                    "could not create TUN device {interface} in {}",
                    namespace.name()
                ),
                error,
            )
        })?;
    let name = namespace.name();
    // The default txqueuelen of 500 overflows during bulk transfers while the forwarder is
    // busy writing the other direction; drops there would be losses nobody configured.
    tool::run(
        "ip",
        &[
            "-n",
            name,
            "link",
            "set",
            "dev",
            interface,
            "mtu",
            "1500",
            "txqueuelen",
            "4096",
            "up",
        ],
    )?;
    // A point-to-point address: the peer address is routed into this device.
    let (local, peer) = (local.to_string(), peer.to_string());
    tool::run(
        "ip",
        &[
            "-n", name, "addr", "add", &local, "peer", &peer, "dev", interface,
        ],
    )?;
    Ok(device)
}

pub(crate) struct TunNetwork {
    // Field order is drop order: the forwarder (and with it the devices) goes first.
    forwarder: Forwarder,
    pub(crate) namespaces: NamespacePair,
}

impl TunNetwork {
    pub(crate) fn create(run_id: &str) -> Result<TunNetwork, EmulationError> {
        let namespaces = NamespacePair::create(run_id)?;
        let client = create_device(
            &namespaces.client,
            &interface_name('c'),
            CLIENT_ADDRESS,
            SERVER_ADDRESS,
        )?;
        let server = create_device(
            &namespaces.server,
            &interface_name('s'),
            SERVER_ADDRESS,
            CLIENT_ADDRESS,
        )?;
        let forwarder = Forwarder::start(client, server)
            .map_err(|error| EmulationError::io("could not start the forwarder thread", error))?;
        Ok(TunNetwork {
            forwarder,
            namespaces,
        })
    }

    pub(crate) fn forwarder(&self) -> &Forwarder {
        &self.forwarder
    }

    pub(crate) fn close(mut self) -> Result<(), EmulationError> {
        self.forwarder.stop();
        self.namespaces.remove()
    }
}
