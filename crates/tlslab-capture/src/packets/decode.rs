//! From a captured frame to its transport segment: link layer, IP, then TCP or UDP.
//!
//! etherparse slices every header it knows (Ethernet, VLAN tags, IPv4 and IPv6 with their
//! extension headers, TCP, UDP) without copying; only the link headers it lacks or refuses
//! are read here by hand. The walk goes straight to TCP and UDP instead of through
//! `SlicedPacket`, which would also slice ICMP and ARP and report their defects as errors
//! that say nothing about the traffic this crate is after.

use std::net::SocketAddr;

use etherparse::{
    EtherType, Ethernet2Slice, IpNumber, LaxIpSlice, SingleVlanSlice, TcpSlice, UdpSlice,
};

use super::{SkipReason, TcpSegment, Transport};

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
}

pub(super) fn decode(link: Link, frame: &[u8]) -> Result<Decoded<'_>, SkipReason> {
    match link {
        Link::Ethernet => {
            let ethernet =
                Ethernet2Slice::from_slice_without_fcs(frame).map_err(|_| SkipReason::Malformed)?;
            ether_type(ethernet.ether_type(), ethernet.payload_slice())
        }
        // Hand-read: etherparse has no cooked v2 at all, and its v1 slice refuses the hardware
        // types `-i any` meets most (ARPHRD_LOOPBACK for lo, ARPHRD_NONE for tun and WireGuard),
        // while the two fields needed, EtherType and hardware type, sit at fixed places.
        Link::LinuxCooked => linux_cooked(frame, LinuxCookedLayout::VERSION_1),
        Link::LinuxCooked2 => linux_cooked(frame, LinuxCookedLayout::VERSION_2),
        Link::RawIp => ip(frame),
        Link::Null => loopback(frame, FamilyOrder::Either),
        Link::Loop => loopback(frame, FamilyOrder::Network),
        Link::Unsupported(_) => Err(SkipReason::UnsupportedLinkType),
    }
}

fn ether_type(mut kind: EtherType, mut payload: &[u8]) -> Result<Decoded<'_>, SkipReason> {
    // Each tag takes 4 bytes, so the loop ends with the frame whatever the tags say.
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
            EtherType::IPV4 | EtherType::IPV6 => return ip(payload),
            _ => return Err(SkipReason::NotIp),
        }
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
    ether_type(EtherType(protocol), payload)
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
        ip(payload)
    } else {
        Err(SkipReason::NotIp)
    }
}

fn ip(packet: &[u8]) -> Result<Decoded<'_>, SkipReason> {
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
            })
        }
        IpNumber::UDP => {
            let udp = UdpSlice::from_slice(payload.payload).map_err(|_| SkipReason::Malformed)?;
            Ok(Decoded {
                source: SocketAddr::new(source, udp.source_port()),
                destination: SocketAddr::new(destination, udp.destination_port()),
                transport: Transport::Udp {
                    payload: udp.payload(),
                },
            })
        }
        _ => Err(SkipReason::OtherProtocol),
    }
}

fn big_endian_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let pair = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes(pair.try_into().ok()?))
}
