//! The netem emulator: a veth pair between the namespaces, with a netem qdisc on each end's
//! egress. The kernel does all the work, so it is the most faithful and costs no CPU of ours.

use crate::namespace::{Namespace, NamespacePair};
use crate::profile::QUEUE_LIMIT_PACKETS;
use crate::{tool, tun, EmulationError, NetworkProfile, CLIENT_ADDRESS, SERVER_ADDRESS};
use rustix::ioctl::{self, Opcode, Updater};
use socket2::{Domain, Socket, Type};
use std::io;

/// Not an `_IOC`-encoded number: the old socket ioctls predate the scheme.
const SIOCETHTOOL: Opcode = 0x8946;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct EthtoolValue {
    command: u32,
    data: u32,
}

/// `struct ifreq` with the data-pointer member of its union.
#[repr(C)]
struct InterfaceRequest {
    name: [u8; tun::IFNAMSIZ],
    data: *mut EthtoolValue,
    padding: [u8; 16],
}

/// Turns off segmentation and receive offloads on an interface of the calling thread's
/// namespace, through the same ioctl `ethtool -K` uses (so ethtool need not be installed).
/// With them on, netem would delay and drop 64 KB super-packets instead of wire-sized ones.
fn disable_offloads(interface: &str) -> io::Result<()> {
    // Any socket will do for the ioctl; socket2 makes it close-on-exec.
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, None)?;
    for command in [ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO] {
        let mut value = EthtoolValue { command, data: 0 };
        let mut request = InterfaceRequest {
            name: [0; tun::IFNAMSIZ],
            data: &mut value,
            padding: [0; 16],
        };
        request.name[..interface.len()].copy_from_slice(interface.as_bytes());
        // rustix has no typed SIOCETHTOOL; its `Updater` pattern passes a pointer to `request`.
        // SAFETY: SIOCETHTOOL takes a `struct ifreq` whose data member points to an ethtool
        // command, which `request` is; it and the `value` it points to outlive the call.
        unsafe { ioctl::ioctl(&socket, Updater::<SIOCETHTOOL, _>::new(&mut request)) }?;
    }
    Ok(())
}

/// The `tc … netem …` arguments for one direction of `profile`.
fn netem_arguments(profile: &NetworkProfile) -> Vec<String> {
    let mut arguments = vec![
        "netem".to_string(),
        "limit".to_string(),
        QUEUE_LIMIT_PACKETS.to_string(),
        "delay".to_string(),
        format!("{}us", profile.one_way_delay().as_micros()),
    ];
    if !profile.jitter.is_zero() {
        // Without a distribution table netem's jitter is uniform, as the profile specifies.
        arguments.push(format!("{}us", profile.jitter.as_micros()));
    }
    if profile.loss > 0.0 {
        arguments.extend(["loss".into(), "random".into()]);
        arguments.push(format!("{:.6}%", profile.loss * 100.0));
    }
    match profile.rate_bits_per_second {
        Some(rate) => arguments.extend(["rate".into(), format!("{rate}bit")]),
        // netem reorders jittered packets unless a rate is set: with one, each packet's send
        // time is at least the previous one's. 32 Gbit/s orders without limiting (375 ns per
        // 1500-byte packet) and still fits tc's 32-bit rate field.
        None if !profile.jitter.is_zero() => {
            arguments.extend(["rate".into(), "32gbit".into()]);
        }
        None => {}
    }
    arguments
}

fn replace_qdiscs(
    namespaces: &NamespacePair,
    profile: &NetworkProfile,
) -> Result<(), EmulationError> {
    let arguments = netem_arguments(profile);
    for (namespace, role) in [(&namespaces.client, 'c'), (&namespaces.server, 's')] {
        let interface = tun::interface_name(role);
        let mut command = vec![
            "-n",
            namespace.name(),
            "qdisc",
            "replace",
            "dev",
            &interface,
            "root",
        ];
        command.extend(arguments.iter().map(String::as_str));
        tool::run("tc", &command)?;
    }
    Ok(())
}

pub(crate) struct NetemNetwork {
    pub(crate) namespaces: NamespacePair,
    /// Things that work but less well than intended (offloads left on).
    pub(crate) warnings: Vec<String>,
}

fn configure_end(
    namespace: &Namespace,
    interface: &str,
    local: std::net::Ipv4Addr,
    warnings: &mut Vec<String>,
) -> Result<(), EmulationError> {
    let name = namespace.name();
    let address = format!("{local}/30");
    tool::run(
        "ip",
        &["-n", name, "addr", "add", &address, "dev", interface],
    )?;
    let offloads = namespace.run_inside(|| {
        tun::disable_ipv6(interface);
        disable_offloads(interface)
    });
    if let Err(error) = offloads.and_then(|result| result) {
        warnings.push(format!(
            "offloads (TSO/GSO/GRO) stay on for {interface}: {error}; netem then delays \
             super-packets, which understates per-packet loss"
        ));
    }
    tool::run("ip", &["-n", name, "link", "set", "dev", interface, "up"])?;
    Ok(())
}

/// Joins the namespaces with a veth pair, addressed and with offloads off; returns warnings.
fn create_link(namespaces: &NamespacePair) -> Result<Vec<String>, EmulationError> {
    let client_interface = tun::interface_name('c');
    let server_interface = tun::interface_name('s');
    // Created directly in the client namespace, its peer directly in the server namespace, so
    // the names never meet (or collide) in the root namespace.
    tool::run(
        "ip",
        &[
            "-n",
            namespaces.client.name(),
            "link",
            "add",
            &client_interface,
            "type",
            "veth",
            "peer",
            "name",
            &server_interface,
            "netns",
            namespaces.server.name(),
        ],
    )?;
    let mut warnings = Vec::new();
    configure_end(
        &namespaces.client,
        &client_interface,
        CLIENT_ADDRESS,
        &mut warnings,
    )?;
    configure_end(
        &namespaces.server,
        &server_interface,
        SERVER_ADDRESS,
        &mut warnings,
    )?;
    Ok(warnings)
}

impl NetemNetwork {
    pub(crate) fn create(run_id: &str) -> Result<NetemNetwork, EmulationError> {
        let namespaces = NamespacePair::create(run_id)?;
        let warnings = create_link(&namespaces)?;
        let network = NetemNetwork {
            namespaces,
            warnings,
        };
        network.set_profile(&NetworkProfile::default())?;
        Ok(network)
    }

    /// Replaces both qdiscs; netem applies the new values to packets enqueued afterwards.
    pub(crate) fn set_profile(&self, profile: &NetworkProfile) -> Result<(), EmulationError> {
        replace_qdiscs(&self.namespaces, profile)
    }

    pub(crate) fn close(mut self) -> Result<(), EmulationError> {
        // Deleting a namespace destroys its veth end, and with it the peer and both qdiscs.
        self.namespaces.remove()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Duration;

    /// Everything of the netem emulator but the qdisc itself runs on kernels without netem:
    /// the veth link, offloads off, addresses, and tc's parsing of our arguments (tc parses
    /// before the kernel looks up the qdisc kind).
    #[test]
    fn veth_link_works_and_tc_accepts_the_arguments() {
        if !crate::support::has_network_privileges() {
            eprintln!("skipping: needs CAP_NET_ADMIN and CAP_SYS_ADMIN");
            return;
        }
        let namespaces = NamespacePair::create("netem-link").unwrap();
        let warnings = create_link(&namespaces).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");

        let server = namespaces
            .server
            .run_inside(|| UdpSocket::bind((SERVER_ADDRESS, 0)).unwrap())
            .unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let client = namespaces
            .client
            .run_inside(|| UdpSocket::bind((CLIENT_ADDRESS, 0)).unwrap())
            .unwrap();
        client
            .send_to(b"hello", server.local_addr().unwrap())
            .unwrap();
        let mut buffer = [0u8; 5];
        let (length, peer) = server.recv_from(&mut buffer).unwrap();
        assert_eq!(
            (&buffer[..length], peer),
            (&b"hello"[..], client.local_addr().unwrap())
        );

        let profile = NetworkProfile {
            rtt: Duration::from_millis(30),
            jitter: Duration::from_millis(3),
            loss: 0.02,
            rate_bits_per_second: Some(50_000_000),
        };
        match replace_qdiscs(&namespaces, &profile) {
            Ok(()) => {}
            Err(error) => assert!(
                error.message.contains("qdisc kind is unknown"),
                "tc rejected the arguments: {error}"
            ),
        }
    }

    #[test]
    fn arguments_follow_the_profile() {
        let profile = NetworkProfile {
            rtt: Duration::from_millis(50),
            jitter: Duration::from_millis(2),
            loss: 0.01,
            rate_bits_per_second: None,
        };
        assert_eq!(
            netem_arguments(&profile).join(" "),
            "netem limit 1000 delay 25000us 2000us loss random 1.000000% rate 32gbit"
        );
        let plain = NetworkProfile {
            rate_bits_per_second: Some(10_000_000),
            ..NetworkProfile::default()
        };
        assert_eq!(
            netem_arguments(&plain).join(" "),
            "netem limit 1000 delay 0us rate 10000000bit"
        );
    }
}
