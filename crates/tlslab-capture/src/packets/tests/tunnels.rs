//! Tunnels and encapsulations: frames that a capture on a tunnel's underlay, a PPPoE access
//! link or an MPLS core holds, built here (etherparse's builders for the IP, UDP and TCP
//! headers and the inner frames; by hand for the GRE, ERSPAN, VXLAN, Geneve, MPLS and PPPoE
//! headers, which etherparse has no builder for). The kernel makes VXLAN, GRE, Geneve and
//! IP-in-IP tunnels for the end-to-end test (`crates/tlslab/tests/tunnels.rs`) where it has
//! them; these cover every kind, and the damaged ones, whatever the kernel.

use etherparse::{IpNumber, Ipv6FlowLabel};

use super::*;

const UNDERLAY_A: [u8; 4] = [10, 200, 0, 1];
const UNDERLAY_B: [u8; 4] = [10, 200, 0, 2];
const UNDERLAY_A6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xa];
const UNDERLAY_B6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb];

/// What the decoder made of a frame, and the tunnel it kept.
fn through(link_type: u32, frame: &[u8]) -> Result<(Owned, Option<Tunnel>), SkipReason> {
    decode(Link::from_link_type(link_type), frame).map(|decoded| {
        let tunnel = decoded.tunnel;
        let owned = Owned::of(&Segment {
            timestamp_ns: 0,
            interface: 0,
            source: decoded.source,
            destination: decoded.destination,
            transport: decoded.transport,
            tunnel,
        });
        (owned, tunnel)
    })
}

fn ethernet(ether_type: u16, payload: &[u8]) -> Vec<u8> {
    [&MAC_B[..], &MAC_A, &ether_type.to_be_bytes(), payload].concat()
}

/// An IPv4 header from A to B with `protocol`, then `payload`.
fn outer_ipv4(protocol: IpNumber, payload: &[u8]) -> Vec<u8> {
    let header =
        Ipv4Header::new(payload.len() as u16, 64, protocol, UNDERLAY_A, UNDERLAY_B).unwrap();
    let mut packet = Vec::new();
    header.write(&mut packet).unwrap();
    packet.extend_from_slice(payload);
    packet
}

fn outer_ipv6(protocol: IpNumber, payload: &[u8]) -> Vec<u8> {
    let header = Ipv6Header {
        traffic_class: 0,
        flow_label: Ipv6FlowLabel::ZERO,
        payload_length: payload.len() as u16,
        next_header: protocol,
        hop_limit: 64,
        source: UNDERLAY_A6,
        destination: UNDERLAY_B6,
    };
    let mut packet = Vec::new();
    header.write(&mut packet).unwrap();
    packet.extend_from_slice(payload);
    packet
}

/// An IPv4 UDP datagram from A to B's `port`.
fn outer_udp(port: u16, payload: &[u8]) -> Vec<u8> {
    write(
        |frame, payload| {
            PacketBuilder::ipv4(UNDERLAY_A, UNDERLAY_B, 64)
                .udp(51000, port)
                .write(frame, payload)
                .unwrap()
        },
        payload,
    )
}

fn vxlan(network: u32, frame: &[u8]) -> Vec<u8> {
    let mut header = vec![0x08, 0, 0, 0];
    header.extend_from_slice(&(network << 8).to_be_bytes());
    [header, frame.to_vec()].concat()
}

/// A GRE header: flags, protocol, then checksum, key and sequence number as given.
fn gre(protocol: u16, checksum: bool, key: Option<u32>, sequence: Option<u32>) -> Vec<u8> {
    let mut flags = 0u16;
    let mut rest = Vec::new();
    if checksum {
        flags |= 0x8000;
        rest.extend_from_slice(&[0xab, 0xcd, 0, 0]);
    }
    if let Some(key) = key {
        flags |= 0x2000;
        rest.extend_from_slice(&key.to_be_bytes());
    }
    if let Some(sequence) = sequence {
        flags |= 0x1000;
        rest.extend_from_slice(&sequence.to_be_bytes());
    }
    [&flags.to_be_bytes()[..], &protocol.to_be_bytes(), &rest].concat()
}

fn v4_tunnel(encapsulation: Encapsulation, identifier: Option<u32>) -> Option<Tunnel> {
    Some(Tunnel {
        encapsulation,
        source: IpAddr::V4(Ipv4Addr::from(UNDERLAY_A)),
        destination: IpAddr::V4(Ipv4Addr::from(UNDERLAY_B)),
        identifier,
    })
}

fn expect_inner(result: Result<(Owned, Option<Tunnel>), SkipReason>, tunnel: Option<Tunnel>) {
    let (segment, kept) = result.unwrap();
    expect_syn_ack(segment, b"inner");
    assert_eq!(kept, tunnel);
}

#[test]
fn plain_packets_have_no_tunnel() {
    let (_, tunnel) = through(1, &ethernet_ipv4_tcp(b"x")).unwrap();
    assert_eq!(tunnel, None);
    let (_, tunnel) = through(101, &ipv4_udp(b"x")).unwrap();
    assert_eq!(tunnel, None);
}

#[test]
fn vxlan_carries_an_ethernet_frame_and_its_network() {
    let frame = ethernet(
        0x0800,
        &outer_udp(4789, &vxlan(42, &ethernet_ipv4_tcp(b"inner"))),
    );
    expect_inner(
        through(1, &frame),
        v4_tunnel(Encapsulation::Vxlan, Some(42)),
    );
    // The same on a raw IP link (a capture on an `ip link` device of the underlay).
    let raw = outer_udp(4789, &vxlan(0xfffffe, &ethernet_ipv4_tcp(b"inner")));
    expect_inner(
        through(101, &raw),
        v4_tunnel(Encapsulation::Vxlan, Some(0xfffffe)),
    );
    // QinQ inside the overlay: the service and customer tags are walked through.
    let mut double = write(
        |frame, payload| {
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .double_vlan(VlanId::try_new(100).unwrap(), VlanId::try_new(42).unwrap())
                .ipv4(CLIENT_V4, SERVER_V4, 64)
                .tcp(49152, 443, 1000, 65535)
                .syn()
                .ack(2000)
                .write(frame, payload)
                .unwrap()
        },
        b"inner",
    );
    double[12..14].copy_from_slice(&[0x88, 0xa8]);
    expect_inner(
        through(101, &outer_udp(4789, &vxlan(7, &double))),
        v4_tunnel(Encapsulation::Vxlan, Some(7)),
    );
    // Without the I flag it is not VXLAN: the datagram stays UDP to port 4789.
    let mut unflagged = vxlan(42, &ethernet_ipv4_tcp(b"inner"));
    unflagged[0] = 0;
    let (segment, tunnel) = through(101, &outer_udp(4789, &unflagged)).unwrap();
    assert_eq!(segment.destination, v4(UNDERLAY_B, 4789));
    assert_eq!(segment.payload, unflagged);
    assert_eq!(tunnel, None);
}

#[test]
fn geneve_with_options_carries_ethernet_or_ip() {
    // Version 0, two 4-byte words of options, Ethernet inside, network 0x123456.
    let mut header = vec![0x02, 0, 0x65, 0x58, 0x12, 0x34, 0x56, 0];
    header.extend_from_slice(&[0x01, 0x02, 0x03, 0x01, 0xaa, 0xbb, 0xcc, 0xdd]);
    let datagram = [header, ethernet_ipv4_tcp(b"inner")].concat();
    expect_inner(
        through(101, &outer_udp(6081, &datagram)),
        v4_tunnel(Encapsulation::Geneve, Some(0x123456)),
    );
    let direct = [vec![0, 0, 0x08, 0x00, 0, 0, 9, 0], ipv4_tcp(b"inner")].concat();
    expect_inner(
        through(101, &outer_udp(6081, &direct)),
        v4_tunnel(Encapsulation::Geneve, Some(9)),
    );
    // Options longer than the datagram.
    let mut cut = datagram.clone();
    cut[0] = 0x3f;
    cut.truncate(40);
    let (segment, tunnel) = through(101, &outer_udp(6081, &cut)).unwrap();
    assert_eq!((segment.payload, tunnel), (cut, None));
}

#[test]
fn gre_with_every_optional_field_carries_ip_ethernet_or_mpls() {
    for (checksum, key, sequence) in [
        (false, None, None),
        (true, None, None),
        (false, Some(77), None),
        (true, Some(77), Some(5)),
    ] {
        let header = gre(0x0800, checksum, key, sequence);
        let packet = outer_ipv4(IpNumber::GRE, &[header, ipv4_tcp(b"inner")].concat());
        expect_inner(through(101, &packet), v4_tunnel(Encapsulation::Gre, key));
    }
    let ipv6 = outer_ipv4(
        IpNumber::GRE,
        &[gre(0x86dd, false, None, None), ipv6_tcp(b"six")].concat(),
    );
    let (segment, tunnel) = through(1, &ethernet(0x0800, &ipv6)).unwrap();
    assert_eq!(segment.source, v6(CLIENT_V6, 49152));
    assert_eq!(tunnel, v4_tunnel(Encapsulation::Gre, None));
    // gretap: transparent Ethernet bridging.
    let tap = outer_ipv4(
        IpNumber::GRE,
        &[
            gre(0x6558, false, Some(1), None),
            ethernet_ipv4_tcp(b"inner"),
        ]
        .concat(),
    );
    expect_inner(through(101, &tap), v4_tunnel(Encapsulation::Gre, Some(1)));
    // MPLS over GRE.
    let labels = [0x00, 0x01, 0x41, 0x40];
    let mpls = outer_ipv4(
        IpNumber::GRE,
        &[
            gre(0x8847, false, None, None),
            labels.to_vec(),
            ipv4_tcp(b"inner"),
        ]
        .concat(),
    );
    expect_inner(through(101, &mpls), v4_tunnel(Encapsulation::Gre, None));
    // Over IPv6.
    let over_six = outer_ipv6(
        IpNumber::GRE,
        &[gre(0x0800, false, None, None), ipv4_tcp(b"inner")].concat(),
    );
    let (_, tunnel) = through(101, &over_six).unwrap();
    assert_eq!(
        tunnel.map(|tunnel| (tunnel.source, tunnel.destination)),
        Some((
            IpAddr::V6(Ipv6Addr::from(UNDERLAY_A6)),
            IpAddr::V6(Ipv6Addr::from(UNDERLAY_B6))
        ))
    );
}

#[test]
fn gre_that_cannot_be_followed() {
    // PPTP's enhanced GRE (version 1), and the deprecated routing field.
    for flags in [0x0001u16, 0x4000] {
        let mut header = gre(0x0800, false, None, None);
        header[..2].copy_from_slice(&flags.to_be_bytes());
        let packet = outer_ipv4(IpNumber::GRE, &[header, ipv4_tcp(b"inner")].concat());
        assert_eq!(
            through(101, &packet),
            Err(SkipReason::Malformed),
            "{flags:x}"
        );
    }
    // A protocol that is not IP (a GRE keepalive's, say): counted as not IP.
    let other = outer_ipv4(IpNumber::GRE, &gre(0x880b, false, None, None));
    assert_eq!(through(101, &other), Err(SkipReason::NotIp));
    // Cut inside its key.
    let cut = outer_ipv4(IpNumber::GRE, &gre(0x0800, false, Some(1), None)[..6]);
    assert_eq!(through(101, &cut), Err(SkipReason::Malformed));
}

#[test]
fn erspan_types_one_two_and_three() {
    let mirrored = ethernet_ipv4_tcp(b"inner");
    // Type I: no sequence number, no header of its own.
    let one = outer_ipv4(
        IpNumber::GRE,
        &[gre(0x88be, false, None, None), mirrored.clone()].concat(),
    );
    expect_inner(through(101, &one), v4_tunnel(Encapsulation::Erspan, None));
    // Type II: version 1, VLAN 0, session 0x155, index 0.
    let two_header = vec![0x10, 0x00, 0x01, 0x55, 0, 0, 0, 0];
    let two = outer_ipv4(
        IpNumber::GRE,
        &[
            gre(0x88be, false, None, Some(1)),
            two_header,
            mirrored.clone(),
        ]
        .concat(),
    );
    expect_inner(
        through(101, &two),
        v4_tunnel(Encapsulation::Erspan, Some(0x155)),
    );
    // Type III: version 2, session 3, a timestamp, SGT, then frame type 0 (Ethernet), with
    // and without the 8-byte platform subheader; frame type 2 is an IP packet.
    let three = |last: u16, subheader: &[u8], inner: &[u8]| {
        let mut header = vec![0x20, 0x00, 0x00, 0x03, 1, 2, 3, 4, 0, 0];
        header.extend_from_slice(&last.to_be_bytes());
        outer_ipv4(
            IpNumber::GRE,
            &[
                gre(0x22eb, false, None, Some(9)),
                header,
                subheader.to_vec(),
                inner.to_vec(),
            ]
            .concat(),
        )
    };
    let tunnel = v4_tunnel(Encapsulation::Erspan, Some(3));
    expect_inner(through(101, &three(0, &[], &mirrored)), tunnel);
    expect_inner(through(101, &three(1, &[0xee; 8], &mirrored)), tunnel);
    expect_inner(
        through(101, &three(2 << 10, &[], &ipv4_tcp(b"inner"))),
        tunnel,
    );
    // An unknown ERSPAN version.
    let unknown = outer_ipv4(
        IpNumber::GRE,
        &[gre(0x22eb, false, None, Some(9)), vec![0x30; 12], mirrored].concat(),
    );
    assert_eq!(through(101, &unknown), Err(SkipReason::Malformed));
}

#[test]
fn ip_in_ip_six_in_four_and_six_in_six() {
    expect_inner(
        through(101, &outer_ipv4(IpNumber::IPV4, &ipv4_tcp(b"inner"))),
        v4_tunnel(Encapsulation::IpInIp, None),
    );
    let six_in_four = outer_ipv4(IpNumber::IPV6, &ipv6_tcp(b"sit"));
    let (segment, tunnel) = through(1, &ethernet(0x0800, &six_in_four)).unwrap();
    assert_eq!(segment.destination, v6(SERVER_V6, 443));
    assert_eq!(segment.payload, b"sit");
    assert_eq!(tunnel, v4_tunnel(Encapsulation::IpInIp, None));
    let six_in_six = outer_ipv6(IpNumber::IPV6, &ipv6_tcp(b"ip6tnl"));
    let (segment, tunnel) = through(101, &six_in_six).unwrap();
    assert_eq!(segment.payload, b"ip6tnl");
    assert_eq!(
        tunnel.map(|tunnel| tunnel.encapsulation),
        Some(Encapsulation::IpInIp)
    );
}

#[test]
fn nested_tunnels_keep_the_outermost() {
    // VXLAN inside GRE inside IP-in-IP: the capture point is the IP-in-IP tunnel's.
    let vxlan_packet = write(
        |frame, payload| {
            PacketBuilder::ipv4([172, 16, 0, 1], [172, 16, 0, 2], 64)
                .udp(40000, 4789)
                .write(frame, payload)
                .unwrap()
        },
        &vxlan(5, &ethernet_ipv4_tcp(b"inner")),
    );
    let in_gre = outer_ipv4(
        IpNumber::GRE,
        &[gre(0x0800, false, Some(3), None), vxlan_packet].concat(),
    );
    let outermost = outer_ipv4(IpNumber::IPV4, &in_gre);
    expect_inner(
        through(101, &outermost),
        v4_tunnel(Encapsulation::IpInIp, None),
    );
    // Deeper than any real network nests: refused, not followed.
    let mut packet = ipv4_tcp(b"inner");
    for _ in 0..9 {
        packet = outer_ipv4(IpNumber::IPV4, &packet);
    }
    assert_eq!(through(101, &packet), Err(SkipReason::Malformed));
}

#[test]
fn mpls_label_stacks() {
    // Two labels, the second the bottom of the stack, then IPv4.
    let stack = [0x00, 0x01, 0x00, 0x40, 0x00, 0x02, 0x01, 0x40];
    let frame = ethernet(0x8847, &[&stack[..], &ipv4_tcp(b"inner")].concat());
    expect_inner(through(1, &frame), None);
    // One label, a pseudowire control word, then an Ethernet frame.
    let pseudowire = ethernet(
        0x8848,
        &[
            &[0x00, 0x03, 0x01, 0x40][..],
            &[0, 0, 0, 0],
            &ethernet_ipv4_tcp(b"inner"),
        ]
        .concat(),
    );
    expect_inner(through(1, &pseudowire), None);
    // A stack with no bottom runs off the frame.
    let endless = ethernet(0x8847, &[0x00, 0x01, 0x00, 0x40].repeat(4));
    assert_eq!(through(1, &endless), Err(SkipReason::Malformed));
    // Neither IP nor a control word after the stack.
    let other = ethernet(0x8847, &[0x00, 0x01, 0x01, 0x40, 0x80, 0, 0, 0]);
    assert_eq!(through(1, &other), Err(SkipReason::NotIp));
}

#[test]
fn pppoe_sessions_with_padding() {
    let session = |protocol: u16, packet: &[u8]| {
        let length = (packet.len() + 2) as u16;
        let mut header = vec![0x11, 0x00, 0x12, 0x34];
        header.extend_from_slice(&length.to_be_bytes());
        header.extend_from_slice(&protocol.to_be_bytes());
        [header, packet.to_vec()].concat()
    };
    let mut frame = ethernet(0x8864, &session(0x0021, &ipv4_tcp(b"inner")));
    // Ethernet's padding after the PPPoE length is not payload.
    frame.extend_from_slice(&[0; 8]);
    expect_inner(through(1, &frame), None);
    let six = ethernet(0x8864, &session(0x0057, &ipv6_tcp(b"six")));
    assert_eq!(through(1, &six).unwrap().0.payload, b"six");
    // Through a VLAN tag, as DSL lines deliver it.
    let mut tagged = write(
        |frame, payload| {
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .single_vlan(VlanId::try_new(7).unwrap())
                .ipv4(CLIENT_V4, SERVER_V4, 64)
                .udp(1, 2)
                .write(frame, payload)
                .unwrap()
        },
        b"",
    );
    tagged.truncate(16);
    tagged.extend_from_slice(&0x8864u16.to_be_bytes());
    tagged.extend_from_slice(&session(0x0021, &ipv4_tcp(b"inner")));
    expect_inner(through(1, &tagged), None);
    // PPP's link control protocol is not IP; a length past the frame is malformed.
    let control = ethernet(0x8864, &session(0xc021, &[1, 1, 0, 4]));
    assert_eq!(through(1, &control), Err(SkipReason::NotIp));
    let mut long = session(0x0021, &ipv4_tcp(b"inner"));
    long[5] = long[5].wrapping_add(40);
    assert_eq!(
        through(1, &ethernet(0x8864, &long)),
        Err(SkipReason::Malformed)
    );
}

#[test]
fn damaged_tunnels_never_panic() {
    let frames = [
        ethernet(
            0x0800,
            &outer_udp(4789, &vxlan(42, &ethernet_ipv4_tcp(b"inner"))),
        ),
        outer_ipv4(
            IpNumber::GRE,
            &[
                gre(0x22eb, true, Some(1), Some(9)),
                vec![0x20, 0, 0, 3, 1, 2, 3, 4, 0, 0, 0, 1],
                vec![0; 8],
                ethernet_ipv4_tcp(b"inner"),
            ]
            .concat(),
        ),
        outer_udp(
            6081,
            &[
                vec![0x01, 0, 0x65, 0x58, 0, 0, 1, 0, 0, 0, 0, 0],
                ethernet_ipv4_tcp(b"inner"),
            ]
            .concat(),
        ),
        ethernet(
            0x8864,
            &[
                vec![0x11, 0, 0, 1, 0, 0x2a, 0, 0x21],
                outer_ipv4(IpNumber::IPV4, &ipv4_tcp(b"inner")),
            ]
            .concat(),
        ),
    ];
    let mut noise = Noise(0x2545_f491_4f6c_dd1d);
    for original in frames {
        let link = if original[12..14] == [0x08, 0x00] || original[12..14] == [0x88, 0x64] {
            1
        } else {
            101
        };
        for _ in 0..5000 {
            let mut bytes = original.clone();
            for _ in 0..=noise.below(3) {
                let at = noise.below(bytes.len());
                match noise.below(3) {
                    0 => bytes[at] = noise.next() as u8,
                    1 => bytes[at] ^= 1 << noise.below(8),
                    _ => bytes.truncate(at.max(1)),
                }
            }
            let _ = through(link, &bytes);
        }
    }
}
