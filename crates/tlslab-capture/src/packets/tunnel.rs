//! The encapsulation headers a capture taken on a tunnel's underlay, or behind a carrier's
//! access link, puts between the link layer and the packet inside: GRE (RFC 2784 and 2890)
//! with ERSPAN types I, II and III in it, VXLAN (RFC 7348), Geneve (RFC 8926), MPLS label
//! stacks (RFC 3032) and PPPoE sessions (RFC 2516).
//!
//! Hand-read: etherparse, which slices every other header of this crate, has none of these;
//! pnet_packet has GRE and VXLAN but neither Geneve, ERSPAN, MPLS nor PPPoE, and would bring
//! its macro-generated packet types in for six fixed-layout headers. Each function here reads
//! a header's few fields at their fixed places, never copies, and says where the packet
//! inside begins and what it is; every length comes from the bytes the frame has, so a
//! damaged header ends in `None`, not a panic.

/// What follows an encapsulation header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Inner {
    /// An Ethernet frame (GRE's transparent Ethernet bridging, ERSPAN, VXLAN, Geneve).
    Ethernet,
    /// An IPv4 or IPv6 packet (which one its first byte says).
    Ip,
    /// An MPLS label stack (GRE's protocol 0x8847).
    Mpls,
    /// Anything else: not followed.
    Other,
}

/// The part of a frame after an encapsulation header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unwrapped<'a> {
    pub(super) inner: Inner,
    pub(super) payload: &'a [u8],
    /// The identifier the header carries: GRE's key, ERSPAN's session, VXLAN's and Geneve's
    /// network identifier.
    pub(super) identifier: Option<u32>,
}

/// The EtherTypes GRE and Geneve name their payload with.
const ETHER_TYPE_IPV4: u16 = 0x0800;
const ETHER_TYPE_IPV6: u16 = 0x86dd;
const TRANSPARENT_ETHERNET_BRIDGING: u16 = 0x6558;
const ERSPAN_TYPE_2: u16 = 0x88be;
const ERSPAN_TYPE_3: u16 = 0x22eb;
pub(super) const MPLS_UNICAST: u16 = 0x8847;
pub(super) const MPLS_MULTICAST: u16 = 0x8848;
pub(super) const PPPOE_SESSION: u16 = 0x8864;

/// The UDP ports IANA assigned to VXLAN and Geneve: a datagram to one of them is read as
/// the encapsulation (as Wireshark does), and as plain UDP when its header does not fit.
pub(super) const VXLAN_PORT: u16 = 4789;
pub(super) const GENEVE_PORT: u16 = 6081;

/// Which kind of tunnel a GRE header's protocol field and ERSPAN's version make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GreKind {
    Plain,
    Erspan,
}

/// A GRE header (version 0): flags and protocol, then checksum, key and sequence number as
/// the flags say. The deprecated routing field (RFC 1701) and version 1 (PPTP) are not read.
pub(super) fn gre(packet: &[u8]) -> Option<(GreKind, Unwrapped<'_>)> {
    let flags = u16_at(packet, 0)?;
    let protocol = u16_at(packet, 2)?;
    const CHECKSUM: u16 = 0x8000;
    const ROUTING: u16 = 0x4000;
    const KEY: u16 = 0x2000;
    const SEQUENCE: u16 = 0x1000;
    const VERSION: u16 = 0x0007;
    if flags & (ROUTING | VERSION) != 0 {
        return None;
    }
    let mut length = 4;
    if flags & CHECKSUM != 0 {
        length += 4;
    }
    let key = if flags & KEY != 0 {
        let key = u32_at(packet, length)?;
        length += 4;
        Some(key)
    } else {
        None
    };
    let sequenced = flags & SEQUENCE != 0;
    if sequenced {
        length += 4;
    }
    let payload = packet.get(length..)?;
    let plain = |inner| {
        Some((
            GreKind::Plain,
            Unwrapped {
                inner,
                payload,
                identifier: key,
            },
        ))
    };
    match protocol {
        ETHER_TYPE_IPV4 | ETHER_TYPE_IPV6 => plain(Inner::Ip),
        TRANSPARENT_ETHERNET_BRIDGING => plain(Inner::Ethernet),
        MPLS_UNICAST | MPLS_MULTICAST => plain(Inner::Mpls),
        // Type I has no header of its own (and no sequence number): the mirrored frame.
        ERSPAN_TYPE_2 if !sequenced => Some((
            GreKind::Erspan,
            Unwrapped {
                inner: Inner::Ethernet,
                payload,
                identifier: None,
            },
        )),
        ERSPAN_TYPE_2 | ERSPAN_TYPE_3 => erspan(payload).map(|inside| (GreKind::Erspan, inside)),
        _ => plain(Inner::Other),
    }
}

/// ERSPAN's own header: type II (version 1, 8 bytes) or type III (version 2, 12 bytes, and
/// an 8-byte platform subheader when its O flag is set). Both begin with the version and
/// carry the session in the low 10 bits of their second half-word.
fn erspan(header: &[u8]) -> Option<Unwrapped<'_>> {
    let first = u16_at(header, 0)?;
    let session = u32::from(u16_at(header, 2)? & 0x03ff);
    let (length, inner) = match first >> 12 {
        1 => (8, Inner::Ethernet),
        2 => {
            let last = u16_at(header, 10)?;
            const OPTIONAL_SUBHEADER: u16 = 0x0001;
            // The frame type: 0 an Ethernet frame, 2 an IP packet (no link header).
            let frame_type = (last >> 10) & 0x1f;
            let inner = match frame_type {
                0 => Inner::Ethernet,
                2 => Inner::Ip,
                _ => Inner::Other,
            };
            let subheader = if last & OPTIONAL_SUBHEADER != 0 { 8 } else { 0 };
            (12 + subheader, inner)
        }
        _ => return None,
    };
    Some(Unwrapped {
        inner,
        payload: header.get(length..)?,
        identifier: Some(session),
    })
}

/// A VXLAN header: flags (the I flag says the network identifier is valid), then the 24-bit
/// identifier; always an Ethernet frame inside.
pub(super) fn vxlan(datagram: &[u8]) -> Option<Unwrapped<'_>> {
    let flags = *datagram.first()?;
    const VALID_IDENTIFIER: u8 = 0x08;
    if flags & VALID_IDENTIFIER == 0 {
        return None;
    }
    Some(Unwrapped {
        inner: Inner::Ethernet,
        identifier: Some(u32_at(datagram, 4)? >> 8),
        payload: datagram.get(8..)?,
    })
}

/// A Geneve header: version 0, the options' length in 4-byte words, the protocol of what it
/// carries (an EtherType) and the 24-bit network identifier; the options are skipped.
pub(super) fn geneve(datagram: &[u8]) -> Option<Unwrapped<'_>> {
    let first = *datagram.first()?;
    if first >> 6 != 0 {
        return None;
    }
    let options = usize::from(first & 0x3f) * 4;
    let inner = match u16_at(datagram, 2)? {
        TRANSPARENT_ETHERNET_BRIDGING => Inner::Ethernet,
        ETHER_TYPE_IPV4 | ETHER_TYPE_IPV6 => Inner::Ip,
        _ => Inner::Other,
    };
    Some(Unwrapped {
        inner,
        identifier: Some(u32_at(datagram, 4)? >> 8),
        payload: datagram.get(8 + options..)?,
    })
}

/// An MPLS label stack: 4 bytes a label, the last with its bottom-of-stack bit. What it
/// carries is not written anywhere, so it is guessed as routers and Wireshark guess it: a
/// first nibble of 4 or 6 is IP, 0 a pseudowire control word before an Ethernet frame.
pub(super) fn mpls(stack: &[u8]) -> Option<Unwrapped<'_>> {
    let mut at = 0;
    loop {
        let entry = stack.get(at..at + 4)?;
        at += 4;
        const BOTTOM_OF_STACK: u8 = 0x01;
        if entry.get(2)? & BOTTOM_OF_STACK != 0 {
            break;
        }
    }
    let payload = stack.get(at..)?;
    let (inner, payload) = match payload.first()? >> 4 {
        4 | 6 => (Inner::Ip, payload),
        0 => (Inner::Ethernet, payload.get(4..)?),
        _ => (Inner::Other, payload),
    };
    Some(Unwrapped {
        inner,
        payload,
        identifier: None,
    })
}

/// A PPPoE session header (version and type 0x11, code 0, the session, the length of what
/// follows) and the PPP protocol: IPv4 (0x0021) and IPv6 (0x0057) are followed. The length
/// field bounds the packet, so Ethernet's padding of short frames is left out.
pub(super) fn pppoe_session(frame: &[u8]) -> Option<Unwrapped<'_>> {
    if *frame.first()? != 0x11 || *frame.get(1)? != 0 {
        return None;
    }
    let session = u32::from(u16_at(frame, 2)?);
    let length = usize::from(u16_at(frame, 4)?);
    let ppp = frame.get(6..6 + length)?;
    const PPP_IPV4: u16 = 0x0021;
    const PPP_IPV6: u16 = 0x0057;
    let inner = match u16_at(ppp, 0)? {
        PPP_IPV4 | PPP_IPV6 => Inner::Ip,
        _ => Inner::Other,
    };
    Some(Unwrapped {
        inner,
        payload: ppp.get(2..)?,
        identifier: Some(session),
    })
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}
