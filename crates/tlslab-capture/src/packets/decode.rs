//! From a captured frame to its transport segment: link layer, IP, then TCP or UDP, through
//! any encapsulations between them (`tunnel.rs`: GRE, ERSPAN, VXLAN, Geneve, MPLS, PPPoE;
//! IP in IP here), the outermost tunnel's addresses kept beside the inner packet's.
//!
//! etherparse slices every header it knows (Ethernet, VLAN tags, IPv4 and IPv6 with their
//! extension headers, TCP, UDP) without copying; only the link and tunnel headers it lacks
//! or refuses are read by hand. The walk goes straight to TCP and UDP instead of through
//! `SlicedPacket`, which would also slice ICMP and ARP and report their defects as errors
//! that say nothing about the traffic this crate is after.

use std::net::{IpAddr, SocketAddr};

use etherparse::{
    EtherType, Ethernet2Slice, IpNumber, LaxIpSlice, SingleVlanSlice, TcpSlice, UdpSlice,
};

use super::tunnel::{self, Inner, Unwrapped};
use super::{Encapsulation, SkipReason, TcpSegment, Transport, Tunnel};

/// How the frames of one link type begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Link {
    Ethernet,
    /// Linux cooked capture v1 (`-i any` in dumpcap, and in tcpdump before libpcap 1.10).
    LinuxCooked,
    /// Linux cooked capture v2 (`-i any` in tcpdump from libpcap 1.10).
    LinuxCooked2,
    /// The frame is the IP packet.
    RawIp,
    /// BSD loopback: a 4-byte address family in the byte order of the capturing host.
    Null,
    /// OpenBSD loopback: the address family in network byte order.
    Loop,
    Unsupported(u32),
}

impl Link {
    pub(super) fn from_link_type(link_type: u32) -> Link {
        match link_type {
            0 => Link::Null,
            1 => Link::Ethernet,
            // 12 and 14 are the DLT_RAW values of some BSDs, written as they are by old tools.
            12 | 14 | 101 | 228 | 229 => Link::RawIp,
            108 => Link::Loop,
            113 => Link::LinuxCooked,
            276 => Link::LinuxCooked2,
            other => Link::Unsupported(other),
        }
    }

    /// libpcap's number for the link type (its DLT), which its filter compiler takes.
    pub(super) fn dlt(self) -> i32 {
        match self {
            Link::Null => 0,
            Link::Ethernet => 1,
            // Linux's DLT_RAW; IPv4-only and IPv6-only files are raw IP just as well.
            Link::RawIp => 12,
            Link::Loop => 108,
            Link::LinuxCooked => 113,
            Link::LinuxCooked2 => 276,
            Link::Unsupported(other) => other as i32,
        }
    }
}

/// A frame's transport segment, without the capture's time and interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Decoded<'a> {
    pub(super) source: SocketAddr,
    pub(super) destination: SocketAddr,
    pub(super) transport: Transport<'a>,
    /// The outermost tunnel the packet came through, if any.
    pub(super) tunnel: Option<Tunnel>,
}

/// How deep a frame may nest encapsulations: real ones stop at two or three (VXLAN over GRE
/// over MPLS), and each costs at least 4 bytes anyway; the bound keeps a crafted frame from
/// recursing deeper than that.
const MOST_ENCAPSULATIONS: u8 = 8;

/// What the walk down a frame knows of the layers above the one it reads.
#[derive(Debug, Clone, Copy)]
struct Walk {
    /// Encapsulations passed so far.
    depth: u8,
    /// The first tunnel that had IP addresses of its own (the capture point's).
    tunnel: Option<Tunnel>,
}

impl Walk {
    const TOP: Walk = Walk {
        depth: 0,
        tunnel: None,
    };

    /// One encapsulation further in (an MPLS stack, a PPPoE session).
    fn deeper(self) -> Result<Walk, SkipReason> {
        if self.depth >= MOST_ENCAPSULATIONS {
            return Err(SkipReason::Malformed);
        }
        Ok(Walk {
            depth: self.depth + 1,
            tunnel: self.tunnel,
        })
    }

    /// Into a tunnel over IP between `outer`'s addresses, kept if it is the first.
    fn entering(
        self,
        encapsulation: Encapsulation,
        (source, destination): (IpAddr, IpAddr),
        identifier: Option<u32>,
    ) -> Result<Walk, SkipReason> {
        let deeper = self.deeper()?;
        Ok(Walk {
            tunnel: deeper.tunnel.or(Some(Tunnel {
                encapsulation,
                source,
                destination,
                identifier,
            })),
            ..deeper
        })
    }
}

pub(super) fn decode(link: Link, frame: &[u8]) -> Result<Decoded<'_>, SkipReason> {
    let walk = Walk::TOP;
    match link {
        Link::Ethernet => ethernet(frame, walk),
        // Hand-read: etherparse has no cooked v2 at all, and its v1 slice refuses the hardware
        // types `-i any` meets most (ARPHRD_LOOPBACK for lo, ARPHRD_NONE for tun and WireGuard),
        // while the two fields needed, EtherType and hardware type, sit at fixed places.
        Link::LinuxCooked => linux_cooked(frame, LinuxCookedLayout::VERSION_1),
        Link::LinuxCooked2 => linux_cooked(frame, LinuxCookedLayout::VERSION_2),
        Link::RawIp => ip(frame, walk),
        Link::Null => loopback(frame, FamilyOrder::Either),
        Link::Loop => loopback(frame, FamilyOrder::Network),
        Link::Unsupported(_) => Err(SkipReason::UnsupportedLinkType),
    }
}

fn ethernet(frame: &[u8], walk: Walk) -> Result<Decoded<'_>, SkipReason> {
    let ethernet =
        Ethernet2Slice::from_slice_without_fcs(frame).map_err(|_| SkipReason::Malformed)?;
    ether_type(ethernet.ether_type(), ethernet.payload_slice(), walk)
}

fn ether_type(
    mut kind: EtherType,
    mut payload: &[u8],
    walk: Walk,
) -> Result<Decoded<'_>, SkipReason> {
    // Each tag takes 4 bytes, so the loop ends with the frame whatever the tags say:
    // 802.1Q, and 802.1ad's (QinQ) service tags before a customer's, as many as there are.
    loop {
        match kind {
            EtherType::VLAN_TAGGED_FRAME
            | EtherType::PROVIDER_BRIDGING
            | EtherType::VLAN_DOUBLE_TAGGED_FRAME => {
                let tag =
                    SingleVlanSlice::from_slice(payload).map_err(|_| SkipReason::Malformed)?;
                kind = tag.ether_type();
                payload = tag.payload_slice();
            }
            EtherType::IPV4 | EtherType::IPV6 => return ip(payload, walk),
            EtherType(tunnel::MPLS_UNICAST | tunnel::MPLS_MULTICAST) => {
                return mpls(payload, walk);
            }
            EtherType(tunnel::PPPOE_SESSION) => {
                let session = tunnel::pppoe_session(payload).ok_or(SkipReason::Malformed)?;
                return inner(session, walk.deeper()?);
            }
            _ => return Err(SkipReason::NotIp),
        }
    }
}

fn mpls(stack: &[u8], walk: Walk) -> Result<Decoded<'_>, SkipReason> {
    let inside = tunnel::mpls(stack).ok_or(SkipReason::Malformed)?;
    inner(inside, walk.deeper()?)
}

/// The packet or frame after an encapsulation header.
fn inner(inside: Unwrapped<'_>, walk: Walk) -> Result<Decoded<'_>, SkipReason> {
    match inside.inner {
        Inner::Ethernet => ethernet(inside.payload, walk),
        Inner::Ip => ip(inside.payload, walk),
        Inner::Mpls => mpls(inside.payload, walk),
        Inner::Other => Err(SkipReason::NotIp),
    }
}

/// Where the fields of a Linux cooked capture header are.
struct LinuxCookedLayout {
    length: usize,
    protocol_at: usize,
    hardware_at: usize,
}

impl LinuxCookedLayout {
    const VERSION_1: LinuxCookedLayout = LinuxCookedLayout {
        length: 16,
        protocol_at: 14,
        hardware_at: 2,
    };
    const VERSION_2: LinuxCookedLayout = LinuxCookedLayout {
        length: 20,
        protocol_at: 0,
        hardware_at: 8,
    };
}

fn linux_cooked(frame: &[u8], layout: LinuxCookedLayout) -> Result<Decoded<'_>, SkipReason> {
    let payload = frame.get(layout.length..).ok_or(SkipReason::Malformed)?;
    let protocol = big_endian_u16(frame, layout.protocol_at).ok_or(SkipReason::Malformed)?;
    let hardware = big_endian_u16(frame, layout.hardware_at).ok_or(SkipReason::Malformed)?;
    // On these the protocol field is not an EtherType (a netlink family, or ignored before
    // an 802.11 radiotap or frame-relay header), so a value like 0x0800 means nothing.
    const ARPHRD_FRAD: u16 = 770;
    const ARPHRD_IEEE80211_RADIOTAP: u16 = 803;
    const ARPHRD_NETLINK: u16 = 824;
    if matches!(
        hardware,
        ARPHRD_FRAD | ARPHRD_IEEE80211_RADIOTAP | ARPHRD_NETLINK
    ) {
        return Err(SkipReason::NotIp);
    }
    ether_type(EtherType(protocol), payload, Walk::TOP)
}

#[derive(Clone, Copy)]
enum FamilyOrder {
    Either,
    Network,
}

fn loopback(frame: &[u8], order: FamilyOrder) -> Result<Decoded<'_>, SkipReason> {
    let family: [u8; 4] = frame
        .get(..4)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or(SkipReason::Malformed)?;
    let payload = frame.get(4..).ok_or(SkipReason::Malformed)?;
    // Every family number is below 256, so read in the wrong order it is at least 2^24 and
    // cannot be taken for another: trying both orders is safe.
    let network = u32::from_be_bytes(family);
    let host = match order {
        FamilyOrder::Either => u32::from_le_bytes(family),
        FamilyOrder::Network => network,
    };
    // AF_INET is 2 everywhere; AF_INET6 is 10 on Linux, 24 on NetBSD and OpenBSD, 28 on
    // FreeBSD and DragonFly, 30 on macOS.
    let is_ip = |family: u32| matches!(family, 2 | 10 | 24 | 28 | 30);
    if is_ip(network) || is_ip(host) {
        ip(payload, Walk::TOP)
    } else {
        Err(SkipReason::NotIp)
    }
}

fn ip(packet: &[u8], walk: Walk) -> Result<Decoded<'_>, SkipReason> {
    // The lax slice, because locally sent packets captured before segmentation offload may
    // carry an IPv4 total length or IPv6 payload length of 0: the packet is then as long as
    // the frame. A frame shorter than its length field says is still refused (`incomplete`).
    let (packet, extension_error) =
        LaxIpSlice::from_slice(packet).map_err(|_| SkipReason::Malformed)?;
    let payload = packet.payload();
    if payload.fragmented {
        return Err(SkipReason::Fragment);
    }
    if extension_error.is_some() || payload.incomplete {
        return Err(SkipReason::Malformed);
    }
    let source = packet.source_addr();
    let destination = packet.destination_addr();
    match payload.ip_number {
        IpNumber::TCP => {
            let tcp = TcpSlice::from_slice(payload.payload).map_err(|_| SkipReason::Malformed)?;
            Ok(Decoded {
                source: SocketAddr::new(source, tcp.source_port()),
                destination: SocketAddr::new(destination, tcp.destination_port()),
                transport: Transport::Tcp(TcpSegment {
                    sequence: tcp.sequence_number(),
                    acknowledgment: tcp.acknowledgment_number(),
                    syn: tcp.syn(),
                    ack: tcp.ack(),
                    fin: tcp.fin(),
                    rst: tcp.rst(),
                    payload: tcp.payload(),
                }),
                tunnel: walk.tunnel,
            })
        }
        IpNumber::UDP => {
            let udp = UdpSlice::from_slice(payload.payload).map_err(|_| SkipReason::Malformed)?;
            let outer = (source, destination);
            // By the port IANA gave each, as Wireshark reads them; a datagram whose header
            // does not fit stays plain UDP.
            let encapsulated = match udp.destination_port() {
                tunnel::VXLAN_PORT => {
                    tunnel::vxlan(udp.payload()).map(|inside| (Encapsulation::Vxlan, inside))
                }
                tunnel::GENEVE_PORT => {
                    tunnel::geneve(udp.payload()).map(|inside| (Encapsulation::Geneve, inside))
                }
                _ => None,
            };
            if let Some((encapsulation, inside)) = encapsulated {
                return inner(
                    inside,
                    walk.entering(encapsulation, outer, inside.identifier)?,
                );
            }
            Ok(Decoded {
                source: SocketAddr::new(source, udp.source_port()),
                destination: SocketAddr::new(destination, udp.destination_port()),
                transport: Transport::Udp {
                    payload: udp.payload(),
                },
                tunnel: walk.tunnel,
            })
        }
        // IPv4 or IPv6 inside IPv4 or IPv6 (ipip, sit, ip6tnl).
        IpNumber::IPV4 | IpNumber::IPV6 => {
            let walk = walk.entering(Encapsulation::IpInIp, (source, destination), None)?;
            ip(payload.payload, walk)
        }
        IpNumber::GRE => {
            let (kind, inside) = tunnel::gre(payload.payload).ok_or(SkipReason::Malformed)?;
            let encapsulation = match kind {
                tunnel::GreKind::Plain => Encapsulation::Gre,
                tunnel::GreKind::Erspan => Encapsulation::Erspan,
            };
            let outer = (source, destination);
            inner(
                inside,
                walk.entering(encapsulation, outer, inside.identifier)?,
            )
        }
        _ => Err(SkipReason::OtherProtocol),
    }
}

fn big_endian_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let pair = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes(pair.try_into().ok()?))
}
