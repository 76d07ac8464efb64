//! Frames made with etherparse's `PacketBuilder` (and by hand where it has no builder), wrapped
//! in pcap and pcapng bytes built here, so that no capture file is kept in the repository.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use etherparse::{
    ip_number, IpFragOffset, IpHeaders, Ipv4Extensions, Ipv4Header, Ipv6Extensions,
    Ipv6FragmentHeader, Ipv6Header, Ipv6RawExtHeader, LinuxSllPacketType, PacketBuilder, VlanId,
};

use super::decode::{decode, Link};
use super::*;

const CLIENT_V4: [u8; 4] = [192, 0, 2, 1];
const SERVER_V4: [u8; 4] = [198, 51, 100, 7];
const CLIENT_V6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const SERVER_V6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

/// A segment with its payload copied, to outlive the callback.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    timestamp_ns: u64,
    interface: u32,
    source: SocketAddr,
    destination: SocketAddr,
    /// (sequence, acknowledgment, syn, ack, fin, rst) for TCP, None for UDP.
    tcp: Option<(u32, u32, bool, bool, bool, bool)>,
    payload: Vec<u8>,
}

impl Owned {
    fn of(segment: &Segment<'_>) -> Owned {
        Owned {
            timestamp_ns: segment.timestamp_ns,
            interface: segment.interface,
            source: segment.source,
            destination: segment.destination,
            tcp: match segment.transport {
                Transport::Tcp(tcp) => Some((
                    tcp.sequence,
                    tcp.acknowledgment,
                    tcp.syn,
                    tcp.ack,
                    tcp.fin,
                    tcp.rst,
                )),
                Transport::Udp { .. } => None,
            },
            payload: segment.transport.payload().to_vec(),
        }
    }
}

fn v4(address: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::from(address)), port)
}

fn v6(address: [u8; 16], port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V6(Ipv6Addr::from(address)), port)
}

fn write(builder: impl FnOnce(&mut Vec<u8>, &[u8]), payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    builder(&mut frame, payload);
    frame
}

/// IPv4 + TCP, no link header: a SYN-ACK carrying `payload`.
fn ipv4_tcp(payload: &[u8]) -> Vec<u8> {
    write(
        |frame, payload| {
            PacketBuilder::ipv4(CLIENT_V4, SERVER_V4, 64)
                .tcp(49152, 443, 1000, 65535)
                .syn()
                .ack(2000)
                .write(frame, payload)
                .unwrap()
        },
        payload,
    )
}

fn ipv4_udp(payload: &[u8]) -> Vec<u8> {
    write(
        |frame, payload| {
            PacketBuilder::ipv4(CLIENT_V4, SERVER_V4, 64)
                .udp(5353, 443)
                .write(frame, payload)
                .unwrap()
        },
        payload,
    )
}

fn ipv6_tcp(payload: &[u8]) -> Vec<u8> {
    write(
        |frame, payload| {
            PacketBuilder::ipv6(CLIENT_V6, SERVER_V6, 64)
                .tcp(49152, 443, 7, 65535)
                .fin()
                .ack(9)
                .write(frame, payload)
                .unwrap()
        },
        payload,
    )
}

fn ethernet_ipv4_tcp(payload: &[u8]) -> Vec<u8> {
    write(
        |frame, payload| {
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ipv4(CLIENT_V4, SERVER_V4, 64)
                .tcp(49152, 443, 1000, 65535)
                .syn()
                .ack(2000)
                .write(frame, payload)
                .unwrap()
        },
        payload,
    )
}

fn decoded(link_type: u32, frame: &[u8]) -> Result<Owned, SkipReason> {
    decode(Link::from_link_type(link_type), frame).map(|decoded| {
        Owned::of(&Segment {
            timestamp_ns: 0,
            interface: 0,
            source: decoded.source,
            destination: decoded.destination,
            transport: decoded.transport,
            tunnel: decoded.tunnel,
        })
    })
}

fn expect_syn_ack(segment: Owned, payload: &[u8]) {
    assert_eq!(segment.source, v4(CLIENT_V4, 49152));
    assert_eq!(segment.destination, v4(SERVER_V4, 443));
    assert_eq!(segment.tcp, Some((1000, 2000, true, true, false, false)));
    assert_eq!(segment.payload, payload);
}

#[test]
fn ethernet_with_tcp() {
    expect_syn_ack(decoded(1, &ethernet_ipv4_tcp(b"hello")).unwrap(), b"hello");
}

#[test]
fn ethernet_padding_is_not_payload() {
    // Frames shorter than 60 bytes are padded on the wire; the IP length tells the padding.
    let mut frame = ethernet_ipv4_tcp(b"");
    frame.extend_from_slice(&[0; 6]);
    expect_syn_ack(decoded(1, &frame).unwrap(), b"");
}

#[test]
fn vlan_tags_single_and_double() {
    let single = write(
        |frame, payload| {
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .single_vlan(VlanId::try_new(42).unwrap())
                .ipv4(CLIENT_V4, SERVER_V4, 64)
                .tcp(49152, 443, 1000, 65535)
                .syn()
                .ack(2000)
                .write(frame, payload)
                .unwrap()
        },
        b"tagged",
    );
    assert_eq!(&single[12..14], &[0x81, 0x00]);
    expect_syn_ack(decoded(1, &single).unwrap(), b"tagged");

    let double = write(
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
        b"twice",
    );
    // 802.1ad outside, 802.1Q inside.
    let mut provider = double.clone();
    provider[12..14].copy_from_slice(&[0x88, 0xa8]);
    provider[16..18].copy_from_slice(&[0x81, 0x00]);
    expect_syn_ack(decoded(1, &double).unwrap(), b"twice");
    expect_syn_ack(decoded(1, &provider).unwrap(), b"twice");

    let mut cut_tag = single.clone();
    cut_tag.truncate(16);
    assert_eq!(decoded(1, &cut_tag), Err(SkipReason::Malformed));
}

#[test]
fn not_ip_on_ethernet() {
    // An ARP request: the Ethernet header, then 28 bytes that are not IP.
    let mut arp = Vec::new();
    arp.extend_from_slice(&[0xff; 6]);
    arp.extend_from_slice(&MAC_A);
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    assert_eq!(decoded(1, &arp), Err(SkipReason::NotIp));
    // LLDP.
    arp[12..14].copy_from_slice(&[0x88, 0xcc]);
    assert_eq!(decoded(1, &arp), Err(SkipReason::NotIp));
    // 802.3 with a length instead of an EtherType.
    arp[12..14].copy_from_slice(&[0x00, 0x1c]);
    assert_eq!(decoded(1, &arp), Err(SkipReason::NotIp));
    assert_eq!(decoded(1, &arp[..10]), Err(SkipReason::Malformed));
}

fn linux_cooked_v1(payload: &[u8]) -> Vec<u8> {
    write(
        |frame, payload| {
            PacketBuilder::linux_sll(LinuxSllPacketType::OUTGOING, 6, [2, 0, 0, 0, 0, 1, 0, 0])
                .ipv4(CLIENT_V4, SERVER_V4, 64)
                .tcp(49152, 443, 1000, 65535)
                .syn()
                .ack(2000)
                .write(frame, payload)
                .unwrap()
        },
        payload,
    )
}

#[test]
fn linux_cooked_version_1() {
    let frame = linux_cooked_v1(b"cooked");
    expect_syn_ack(decoded(113, &frame).unwrap(), b"cooked");

    // What `-i any` writes for lo: ARPHRD_LOOPBACK, which etherparse's own slice refuses.
    let mut loopback = frame.clone();
    loopback[2..4].copy_from_slice(&772u16.to_be_bytes());
    expect_syn_ack(decoded(113, &loopback).unwrap(), b"cooked");

    // Netlink: the protocol field is a netlink family, whatever its value.
    let mut netlink = frame.clone();
    netlink[2..4].copy_from_slice(&824u16.to_be_bytes());
    assert_eq!(decoded(113, &netlink), Err(SkipReason::NotIp));

    assert_eq!(decoded(113, &frame[..15]), Err(SkipReason::Malformed));
}

fn linux_cooked_v2_header(protocol: u16, hardware: u16) -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(&protocol.to_be_bytes());
    header.extend_from_slice(&[0, 0]); // reserved
    header.extend_from_slice(&1u32.to_be_bytes()); // interface index
    header.extend_from_slice(&hardware.to_be_bytes());
    header.push(4); // outgoing
    header.push(0); // no address
    header.extend_from_slice(&[0; 8]);
    assert_eq!(header.len(), 20);
    header
}

#[test]
fn linux_cooked_version_2() {
    let mut frame = linux_cooked_v2_header(0x0800, 772);
    frame.extend_from_slice(&ipv4_tcp(b"cooked2"));
    expect_syn_ack(decoded(276, &frame).unwrap(), b"cooked2");

    let mut ipv6 = linux_cooked_v2_header(0x86dd, 1);
    ipv6.extend_from_slice(&ipv6_tcp(b"six"));
    let segment = decoded(276, &ipv6).unwrap();
    assert_eq!(segment.source, v6(CLIENT_V6, 49152));
    assert_eq!(segment.payload, b"six");

    let mut arp = linux_cooked_v2_header(0x0806, 1);
    arp.extend_from_slice(&[0; 28]);
    assert_eq!(decoded(276, &arp), Err(SkipReason::NotIp));
    assert_eq!(decoded(276, &frame[..19]), Err(SkipReason::Malformed));
}

#[test]
fn raw_ip_link_types() {
    for link_type in [101, 228, 12, 14] {
        let segment = decoded(link_type, &ipv4_udp(b"datagram")).unwrap();
        assert_eq!(segment.source, v4(CLIENT_V4, 5353));
        assert_eq!(segment.destination, v4(SERVER_V4, 443));
        assert_eq!(segment.tcp, None);
        assert_eq!(segment.payload, b"datagram");
    }
    for link_type in [101, 229] {
        let segment = decoded(link_type, &ipv6_tcp(b"six")).unwrap();
        assert_eq!(segment.source, v6(CLIENT_V6, 49152));
        assert_eq!(segment.destination, v6(SERVER_V6, 443));
        assert_eq!(segment.tcp, Some((7, 9, false, true, true, false)));
        assert_eq!(segment.payload, b"six");
    }
    assert_eq!(decoded(101, &[]), Err(SkipReason::Malformed));
    assert_eq!(decoded(101, &[0x50; 40]), Err(SkipReason::Malformed));
}

#[test]
fn ipv6_extension_headers() {
    let options = Ipv6RawExtHeader::new_raw(ip_number::TCP, &[1, 4, 0, 0, 0, 0]).unwrap();
    let header = IpHeaders::Ipv6(
        Ipv6Header {
            hop_limit: 64,
            source: CLIENT_V6,
            destination: SERVER_V6,
            ..Ipv6Header::default()
        },
        Ipv6Extensions {
            hop_by_hop_options: Some(options.clone()),
            destination_options: Some(options),
            ..Ipv6Extensions::default()
        },
    );
    let frame = write(
        |frame, payload| {
            PacketBuilder::ip(header)
                .tcp(49152, 443, 7, 65535)
                .rst()
                .write(frame, payload)
                .unwrap()
        },
        b"",
    );
    let segment = decoded(101, &frame).unwrap();
    assert_eq!(segment.destination, v6(SERVER_V6, 443));
    assert_eq!(segment.tcp, Some((7, 0, false, false, false, true)));
}

#[test]
fn null_and_loop_families_in_both_byte_orders() {
    let ipv4 = ipv4_udp(b"null");
    let ipv6 = ipv6_tcp(b"null6");
    let framed = |family: [u8; 4], packet: &[u8]| [&family[..], packet].concat();
    // Null: the capturing host's order, so both.
    for family in [2u32.to_le_bytes(), 2u32.to_be_bytes()] {
        assert_eq!(decoded(0, &framed(family, &ipv4)).unwrap().payload, b"null");
    }
    for number in [10u32, 24, 28, 30] {
        for family in [number.to_le_bytes(), number.to_be_bytes()] {
            assert_eq!(
                decoded(0, &framed(family, &ipv6)).unwrap().payload,
                b"null6"
            );
        }
    }
    // Loop: network order only.
    assert_eq!(
        decoded(108, &framed(24u32.to_be_bytes(), &ipv6))
            .unwrap()
            .payload,
        b"null6"
    );
    assert_eq!(
        decoded(108, &framed(2u32.to_le_bytes(), &ipv4)),
        Err(SkipReason::NotIp)
    );
    // AF_UNIX, AF_APPLETALK.
    assert_eq!(
        decoded(0, &framed(1u32.to_le_bytes(), &ipv4)),
        Err(SkipReason::NotIp)
    );
    assert_eq!(
        decoded(0, &framed(16u32.to_be_bytes(), &ipv4)),
        Err(SkipReason::NotIp)
    );
    assert_eq!(decoded(0, &[2, 0, 0]), Err(SkipReason::Malformed));
}

#[test]
fn fragments_are_skipped() {
    let mut header = Ipv4Header::new(0, 64, ip_number::UDP, CLIENT_V4, SERVER_V4).unwrap();
    header.more_fragments = true;
    let first = write(
        |frame, payload| {
            PacketBuilder::ip(IpHeaders::Ipv4(header.clone(), Ipv4Extensions::default()))
                .udp(5353, 443)
                .write(frame, payload)
                .unwrap()
        },
        &[7; 64],
    );
    assert_eq!(decoded(101, &first), Err(SkipReason::Fragment));

    let fragment = Ipv6FragmentHeader::new(
        ip_number::UDP,
        IpFragOffset::try_new(8).unwrap(),
        false,
        1234,
    );
    let last = write(
        |frame, payload| {
            PacketBuilder::ip(IpHeaders::Ipv6(
                Ipv6Header {
                    hop_limit: 64,
                    source: CLIENT_V6,
                    destination: SERVER_V6,
                    ..Ipv6Header::default()
                },
                Ipv6Extensions {
                    fragment: Some(fragment),
                    ..Ipv6Extensions::default()
                },
            ))
            .udp(5353, 443)
            .write(frame, payload)
            .unwrap()
        },
        &[7; 16],
    );
    assert_eq!(decoded(101, &last), Err(SkipReason::Fragment));
}

#[test]
fn other_protocols_and_malformed_transport() {
    let ping = write(
        |frame, payload| {
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ipv4(CLIENT_V4, SERVER_V4, 64)
                .icmpv4_echo_request(1, 1)
                .write(frame, payload)
                .unwrap()
        },
        b"ping",
    );
    assert_eq!(decoded(1, &ping), Err(SkipReason::OtherProtocol));
    // An ICMP message too short to be one is still not this reader's business.
    let mut short_ping = ipv4_udp(b"");
    short_ping[9] = 1;
    assert_eq!(decoded(101, &short_ping), Err(SkipReason::OtherProtocol));

    // The IP length says more than the frame holds.
    let mut cut = ipv4_tcp(b"0123456789");
    cut.truncate(cut.len() - 4);
    assert_eq!(decoded(101, &cut), Err(SkipReason::Malformed));
    // A TCP data offset below 5 words.
    let mut offset = ipv4_tcp(b"");
    offset[20 + 12] = 0x40;
    assert_eq!(decoded(101, &offset), Err(SkipReason::Malformed));
    // A UDP length beyond the IP payload.
    let mut udp = ipv4_udp(b"abc");
    udp[20 + 4..20 + 6].copy_from_slice(&100u16.to_be_bytes());
    assert_eq!(decoded(101, &udp), Err(SkipReason::Malformed));
}

#[test]
fn segmentation_offload_lengths() {
    // Locally sent packets captured before segmentation may carry an IPv4 total length of 0.
    let mut packet = ipv4_tcp(b"large send");
    packet[2..4].copy_from_slice(&[0, 0]);
    expect_syn_ack(decoded(101, &packet).unwrap(), b"large send");
}

#[test]
fn unsupported_link_type() {
    assert_eq!(
        decoded(147, &ipv4_tcp(b"")),
        Err(SkipReason::UnsupportedLinkType)
    );
}

#[test]
fn skip_reasons_are_listed_and_described() {
    let mut descriptions: Vec<&str> = SkipReason::ALL.iter().map(|r| r.describe()).collect();
    assert!(descriptions.iter().all(|d| !d.is_empty()));
    descriptions.sort_unstable();
    descriptions.dedup();
    assert_eq!(descriptions.len(), SkipReason::ALL.len());
    for (index, reason) in SkipReason::ALL.into_iter().enumerate() {
        assert_eq!(reason as usize, index);
    }
    assert_eq!(
        SkipReason::CutBySnapLength.to_string(),
        "cut by the snap length"
    );
}

/// A pcap file: header then records of (timestamp seconds, fraction, data, original length).
struct Pcap {
    bytes: Vec<u8>,
    big_endian: bool,
}

impl Pcap {
    fn new(link_type: u32, nanoseconds: bool, big_endian: bool) -> Pcap {
        let mut pcap = Pcap {
            bytes: Vec::new(),
            big_endian,
        };
        let magic: u32 = if nanoseconds {
            0xa1b2_3c4d
        } else {
            0xa1b2_c3d4
        };
        pcap.word(magic);
        pcap.half(2);
        pcap.half(4);
        pcap.word(0);
        pcap.word(0);
        pcap.word(262_144);
        pcap.word(link_type);
        pcap
    }

    fn word(&mut self, value: u32) {
        let bytes = if self.big_endian {
            value.to_be_bytes()
        } else {
            value.to_le_bytes()
        };
        self.bytes.extend_from_slice(&bytes);
    }

    fn half(&mut self, value: u16) {
        let bytes = if self.big_endian {
            value.to_be_bytes()
        } else {
            value.to_le_bytes()
        };
        self.bytes.extend_from_slice(&bytes);
    }

    fn record(mut self, seconds: u32, fraction: u32, data: &[u8], original_length: usize) -> Pcap {
        self.word(seconds);
        self.word(fraction);
        self.word(data.len() as u32);
        self.word(original_length as u32);
        self.bytes.extend_from_slice(data);
        self
    }

    fn packet(self, seconds: u32, fraction: u32, data: &[u8]) -> Pcap {
        let length = data.len();
        self.record(seconds, fraction, data, length)
    }
}

fn read_bytes(bytes: &[u8]) -> Result<(Summary, Vec<Owned>), CaptureError> {
    let mut segments = Vec::new();
    let summary = read_from(bytes, "test.pcap", |segment| {
        segments.push(Owned::of(segment))
    })?;
    Ok((summary, segments))
}

fn skipped(pairs: &[(SkipReason, u64)]) -> BTreeMap<SkipReason, u64> {
    pairs.iter().copied().collect()
}

#[test]
fn legacy_pcap_in_every_byte_order_and_resolution() {
    for big_endian in [false, true] {
        for nanoseconds in [false, true] {
            let pcap = Pcap::new(1, nanoseconds, big_endian)
                .packet(1_700_000_000, 123_456, &ethernet_ipv4_tcp(b"first"))
                .packet(1_700_000_001, 999_999, &ethernet_ipv4_tcp(b"second"));
            let (summary, segments) = read_bytes(&pcap.bytes).unwrap();
            assert_eq!(summary.packets, 2);
            assert_eq!(summary.decoded, 2);
            assert!(!summary.truncated);
            let unit = if nanoseconds { 1 } else { 1000 };
            assert_eq!(
                segments[0].timestamp_ns,
                1_700_000_000_000_000_000 + 123_456 * unit
            );
            assert_eq!(
                segments[1].timestamp_ns,
                1_700_000_001_000_000_000 + 999_999 * unit
            );
            assert_eq!(segments[1].payload, b"second");
            assert_eq!(segments[0].interface, 0);
        }
    }
}

#[test]
fn skipped_packets_are_counted_by_reason() {
    let frame = ethernet_ipv4_tcp(b"whole");
    let mut arp = frame.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let pcap = Pcap::new(1, false, false)
        .packet(1, 0, &frame)
        .record(2, 0, &frame[..40], frame.len())
        .packet(3, 0, &arp)
        .packet(4, 0, &frame[..20]);
    let (summary, segments) = read_bytes(&pcap.bytes).unwrap();
    assert_eq!(segments.len(), 1);
    assert_eq!(
        summary,
        Summary {
            packets: 4,
            bytes: (frame.len() * 2 + 40 + 20) as u64,
            decoded: 1,
            skipped: skipped(&[
                (SkipReason::NotIp, 1),
                (SkipReason::CutBySnapLength, 1),
                (SkipReason::Malformed, 1),
            ]),
            link_types: BTreeMap::new(),
            truncated: false,
            filtered: 0,
            tunneled: BTreeMap::new(),
            key_logs: 0,
        }
    );
}

#[test]
fn unsupported_link_types_are_counted_by_number() {
    // 127: 802.11 with radiotap; the upper bits of the link type field carry no link type.
    let pcap = Pcap::new(127 | 0x1000_0000, false, false)
        .packet(1, 0, &[0; 30])
        .packet(2, 0, &[0; 30]);
    let (summary, _) = read_bytes(&pcap.bytes).unwrap();
    assert_eq!(summary.link_types, [(127, 2)].into_iter().collect());
    assert_eq!(
        summary.skipped,
        skipped(&[(SkipReason::UnsupportedLinkType, 2)])
    );
}

#[test]
fn garbage_is_not_a_capture() {
    for bytes in [
        &b"GET / HTTP/1.1\r\nHost: example\r\n\r\n"[..],
        &[0xd4, 0xc3, 0xb2, 0xa2, 0, 0, 0, 0][..],
        &[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0][..],
        &b"x"[..],
    ] {
        let problem = read_bytes(bytes).unwrap_err();
        assert_eq!(problem.message, "test.pcap is not a pcap or pcapng capture");
        assert!(problem.hint.contains("pcapng"), "{}", problem.hint);
        assert!(problem.hint.contains(".zst"), "{}", problem.hint);
    }
}

#[test]
fn empty_input_is_an_error() {
    let problem = read_bytes(&[]).unwrap_err();
    assert!(
        problem.message.contains("test.pcap is empty"),
        "{}",
        problem.message
    );
}

#[test]
fn compressed_bytes_need_read() {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(&Pcap::new(1, false, false).bytes)
        .unwrap();
    let problem = read_bytes(&encoder.finish().unwrap()).unwrap_err();
    assert!(problem.hint.contains("gzip"), "{}", problem.hint);
}

#[test]
fn a_capture_cut_in_a_record_is_truncated_not_an_error() {
    let pcap = Pcap::new(1, false, false)
        .packet(1, 0, &ethernet_ipv4_tcp(b"first"))
        .packet(2, 0, &ethernet_ipv4_tcp(b"second"))
        .packet(3, 0, &ethernet_ipv4_tcp(b"third"));
    let whole = pcap.bytes.len();
    let third = ethernet_ipv4_tcp(b"third").len() + 16;
    // Cut in the third record's data, then in its record header.
    for cut in [whole - 10, whole - third + 5] {
        let (summary, segments) = read_bytes(&pcap.bytes[..cut]).unwrap();
        assert!(summary.truncated);
        assert_eq!(summary.packets, 2);
        assert_eq!(segments[1].payload, b"second");
    }
    // Cut between records: nothing says it was cut.
    let (summary, _) = read_bytes(&pcap.bytes[..whole - third]).unwrap();
    assert!(!summary.truncated);
    // Cut in the file header, or in the magic number.
    for cut in [10, 2] {
        let (summary, segments) = read_bytes(&pcap.bytes[..cut]).unwrap();
        assert!(summary.truncated);
        assert_eq!(summary.packets, 0);
        assert!(segments.is_empty());
    }
}

/// Gives at most a few bytes per read, as a pipe or a decompressor may.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl io::Read for Trickle<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        self.step = self.step % 7 + 1;
        let count = self.step.min(buffer.len()).min(self.bytes.len());
        let (now, later) = self.bytes.split_at(count);
        buffer[..count].copy_from_slice(now);
        self.bytes = later;
        Ok(count)
    }
}

#[test]
fn short_reads_and_records_larger_than_the_buffer() {
    // 3 MiB on an unsupported link type: larger than the buffer, read whole all the same.
    let large = vec![0x55; 3 << 20];
    let pcap = Pcap::new(1, false, false)
        .packet(1, 0, &ethernet_ipv4_tcp(b"before"))
        .packet(2, 0, &large)
        .packet(3, 0, &ethernet_ipv4_tcp(b"after"));
    let whole = read_bytes(&pcap.bytes).unwrap();
    assert_eq!(whole.0.packets, 3);
    assert_eq!(whole.0.decoded, 2);
    assert_eq!(whole.1[1].payload, b"after");
    let frames = ethernet_ipv4_tcp(b"before").len() + ethernet_ipv4_tcp(b"after").len();
    assert_eq!(whole.0.bytes, (large.len() + frames) as u64);

    let mut segments = Vec::new();
    let trickled = read_from(
        Trickle {
            bytes: &pcap.bytes,
            step: 0,
        },
        "trickle",
        |segment| segments.push(Owned::of(segment)),
    )
    .unwrap();
    assert_eq!((trickled, segments), whole);
}

#[test]
fn records_larger_than_any_capture_tool_writes_are_refused() {
    let mut pcap = Pcap::new(1, false, false).packet(1, 0, &ethernet_ipv4_tcp(b"before"));
    pcap.word(2);
    pcap.word(0);
    pcap.word(100 << 20);
    pcap.word(100 << 20);
    pcap.bytes.extend_from_slice(&vec![0; 2 << 20]);
    let mut segments = 0;
    let problem = read_from(&pcap.bytes[..], "big.pcap", |_| segments += 1).unwrap_err();
    assert_eq!(segments, 1);
    assert!(problem.message.contains("big.pcap"), "{}", problem.message);
    assert!(
        problem.message.contains("larger than"),
        "{}",
        problem.message
    );
}

#[test]
fn read_errors_carry_the_os_error() {
    struct Failing;
    impl io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::PermissionDenied, "no access"))
        }
    }
    let problem = read_from(Failing, "failing", |_| {}).unwrap_err();
    assert_eq!(problem.message, "cannot read failing");
    assert_eq!(cause(&problem), "no access");

    let pcap = Pcap::new(1, false, false).packet(1, 0, &ethernet_ipv4_tcp(b""));
    let failing_later = (&pcap.bytes[..]).chain(Failing);
    let problem = read_from(failing_later, "later", |_| {}).unwrap_err();
    assert_eq!(problem.message, "cannot read later");
    assert_eq!(cause(&problem), "no access");
}

/// The error underneath `problem`, as text.
fn cause(problem: &CaptureError) -> String {
    std::error::Error::source(problem)
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// A pcapng file, section by section, in either byte order.
struct Pcapng {
    bytes: Vec<u8>,
    big_endian: bool,
}

impl Pcapng {
    fn new() -> Pcapng {
        Pcapng {
            bytes: Vec::new(),
            big_endian: false,
        }
    }

    fn u16(&self, value: u16) -> [u8; 2] {
        if self.big_endian {
            value.to_be_bytes()
        } else {
            value.to_le_bytes()
        }
    }

    fn u32(&self, value: u32) -> [u8; 4] {
        if self.big_endian {
            value.to_be_bytes()
        } else {
            value.to_le_bytes()
        }
    }

    fn block(mut self, block_type: u32, body: &[u8]) -> Pcapng {
        let padded = body.len().div_ceil(4) * 4;
        let length = (12 + padded) as u32;
        let block_type = self.u32(block_type);
        let length_bytes = self.u32(length);
        self.bytes.extend_from_slice(&block_type);
        self.bytes.extend_from_slice(&length_bytes);
        self.bytes.extend_from_slice(body);
        self.bytes.resize(self.bytes.len() + padded - body.len(), 0);
        self.bytes.extend_from_slice(&length_bytes);
        self
    }

    fn section(mut self, big_endian: bool) -> Pcapng {
        self.big_endian = big_endian;
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(0x1a2b_3c4d));
        body.extend_from_slice(&self.u16(1));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&[0xff; 8]); // section length unknown
        self.block(0x0a0d_0d0a, &body)
    }

    fn interface(self, link_type: u16, tsresol: Option<u8>, tsoffset: Option<i64>) -> Pcapng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16(link_type));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u32(0));
        if let Some(resolution) = tsresol {
            body.extend_from_slice(&self.u16(9));
            body.extend_from_slice(&self.u16(1));
            body.extend_from_slice(&[resolution, 0, 0, 0]);
        }
        if let Some(offset) = tsoffset {
            body.extend_from_slice(&self.u16(14));
            body.extend_from_slice(&self.u16(8));
            body.extend_from_slice(&if self.big_endian {
                offset.to_be_bytes()
            } else {
                offset.to_le_bytes()
            });
        }
        body.extend_from_slice(&[0; 4]); // opt_endofopt
        self.block(1, &body)
    }

    fn enhanced(self, interface: u32, timestamp: u64, data: &[u8]) -> Pcapng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(interface));
        body.extend_from_slice(&self.u32((timestamp >> 32) as u32));
        body.extend_from_slice(&self.u32(timestamp as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(data);
        self.block(6, &body)
    }

    fn simple(self, data: &[u8]) -> Pcapng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(data);
        self.block(3, &body)
    }

    fn obsolete(self, interface: u16, timestamp: u64, data: &[u8]) -> Pcapng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16(interface));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u32((timestamp >> 32) as u32));
        body.extend_from_slice(&self.u32(timestamp as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(data);
        self.block(2, &body)
    }
}

#[test]
fn pcapng_interfaces_resolutions_offsets_and_sections() {
    let second = 1_700_000_000u64;
    let bytes = Pcapng::new()
        .section(false)
        // Nanoseconds.
        .interface(1, Some(9), None)
        // 2^-10 seconds, ten seconds late.
        .interface(101, Some(0x80 | 10), Some(10))
        .enhanced(0, second * 1_000_000_000 + 5, &ethernet_ipv4_tcp(b"zero"))
        .enhanced(1, second * 1024 + 512, &ipv4_udp(b"one"))
        .simple(&ethernet_ipv4_tcp(b"simple"))
        .enhanced(7, 0, &ethernet_ipv4_tcp(b"nowhere"))
        .obsolete(0, second * 1_000_000_000 + 9, &ethernet_ipv4_tcp(b"old"))
        // A new section, big-endian this time, forgets the interfaces before it.
        .section(true)
        // Microseconds by default; an offset whose bytes read differently in the two orders.
        .interface(0, None, Some(-2))
        .enhanced(
            0,
            second * 1_000_000 + 3,
            &[&30u32.to_le_bytes()[..], &ipv6_tcp(b"null")].concat(),
        )
        .enhanced(1, 0, &ipv4_udp(b"gone"))
        .obsolete(
            0,
            second * 1_000_000 + 4,
            &[&2u32.to_be_bytes()[..], &ipv4_udp(b"old be")].concat(),
        )
        .bytes;
    let (summary, segments) = read_bytes(&bytes).unwrap();
    let times: Vec<(u32, u64, &[u8])> = segments
        .iter()
        .map(|segment| {
            (
                segment.interface,
                segment.timestamp_ns,
                &segment.payload[..],
            )
        })
        .collect();
    assert_eq!(
        times,
        [
            (0, second * 1_000_000_000 + 5, &b"zero"[..]),
            (1, (second + 10) * 1_000_000_000 + 500_000_000, b"one"),
            (0, second * 1_000_000_000 + 9, b"old"),
            (0, (second - 2) * 1_000_000_000 + 3_000, b"null"),
            (0, (second - 2) * 1_000_000_000 + 4_000, b"old be"),
        ]
    );
    assert_eq!(summary.packets, 8);
    assert_eq!(summary.decoded, 5);
    assert_eq!(summary.skipped, skipped(&[(SkipReason::NoTimestamp, 3)]));
    assert!(!summary.truncated);
}

impl Pcapng {
    /// A Decryption Secrets Block (type 0x0A) holding `text` as secrets of `secrets_type`.
    fn secrets(self, secrets_type: u32, text: &[u8]) -> Pcapng {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(secrets_type));
        body.extend_from_slice(&self.u32(text.len() as u32));
        body.extend_from_slice(text);
        self.block(0x0a, &body)
    }
}

#[test]
fn decryption_secrets_blocks_hand_on_their_key_logs_before_the_packets_after_them() {
    const TLS_KEY_LOG: u32 = 0x544c_534b;
    const WIREGUARD_KEY_LOG: u32 = 0x5747_4b4c;
    // Not a multiple of 4 bytes long: the block's padding is not part of the text.
    let first = b"CLIENT_HANDSHAKE_TRAFFIC_SECRET 00 01\n";
    let second = b"SERVER_HANDSHAKE_TRAFFIC_SECRET 00 0203";
    for big_endian in [false, true] {
        let bytes = Pcapng::new()
            .section(big_endian)
            .interface(1, None, None)
            .secrets(TLS_KEY_LOG, first)
            .enhanced(0, 1, &ethernet_ipv4_tcp(b"one"))
            .secrets(WIREGUARD_KEY_LOG, b"wireguard keys")
            .secrets(TLS_KEY_LOG, second)
            .enhanced(0, 2, &ethernet_ipv4_tcp(b"two"))
            .bytes;
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("embedded.pcapng");
        std::fs::write(&path, &bytes).unwrap();
        let events = std::cell::RefCell::new(Vec::new());
        let summary = read_with_secrets(
            &path,
            None,
            &mut |text| events.borrow_mut().push(text.to_vec()),
            |segment| {
                events
                    .borrow_mut()
                    .push(segment.transport.payload().to_vec())
            },
        )
        .unwrap();
        assert_eq!(
            events.into_inner(),
            [&first[..], b"one", second, b"two"],
            "big endian: {big_endian}"
        );
        assert_eq!(summary.key_logs, 2);
        // Read without asking for them, they are counted all the same.
        assert_eq!(read(&path, |_| {}).unwrap().key_logs, 2);
    }
}

#[test]
fn pcapng_timestamps_saturate() {
    let bytes = Pcapng::new()
        .section(false)
        .interface(101, Some(9), Some(-5))
        .interface(101, Some(0), Some(i64::MAX))
        // 10^20 units per second has no integer: such an interface has no usable time.
        .interface(101, Some(20), None)
        .interface(101, Some(19), None)
        .interface(101, Some(0x80 | 127), None)
        .enhanced(0, 1_000_000_000, &ipv4_udp(b"before the epoch"))
        .enhanced(1, u64::MAX, &ipv4_udp(b"after the end"))
        .enhanced(2, 1, &ipv4_udp(b"no time"))
        .enhanced(3, u64::MAX, &ipv4_udp(b"ten to the nineteen"))
        .enhanced(
            4,
            u64::MAX,
            &ipv4_udp(b"two to the hundred and twenty-seven"),
        )
        .bytes;
    let (summary, segments) = read_bytes(&bytes).unwrap();
    let times: Vec<u64> = segments
        .iter()
        .map(|segment| segment.timestamp_ns)
        .collect();
    assert_eq!(times, [0, u64::MAX, u64::MAX / 10_000_000_000, 0]);
    assert_eq!(summary.skipped, skipped(&[(SkipReason::NoTimestamp, 1)]));
}

#[test]
fn pcapng_cut_and_damaged() {
    let bytes = Pcapng::new()
        .section(false)
        .interface(1, None, None)
        .enhanced(0, 1, &ethernet_ipv4_tcp(b"first"))
        .enhanced(0, 2, &ethernet_ipv4_tcp(b"second"))
        .bytes;
    let (summary, segments) = read_bytes(&bytes[..bytes.len() - 10]).unwrap();
    assert!(summary.truncated);
    assert_eq!(segments.len(), 1);
    let (summary, _) = read_bytes(&bytes[..20]).unwrap();
    assert!(summary.truncated);

    // The second packet block claims more data than the block holds.
    let mut damaged = bytes.clone();
    let second = bytes.len() - (32 + ethernet_ipv4_tcp(b"second").len().div_ceil(4) * 4);
    damaged[second + 20..second + 24].copy_from_slice(&5000u32.to_le_bytes());
    let mut decoded = 0;
    let problem = read_from(&damaged[..], "damaged.pcapng", |_| decoded += 1).unwrap_err();
    assert_eq!(decoded, 1);
    assert!(
        problem
            .message
            .starts_with(&format!("damaged.pcapng is damaged at byte {second}")),
        "{}",
        problem.message
    );
}

/// A xorshift generator: the same damage on every run, no dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

#[test]
fn damaged_input_never_panics() {
    let legacy = Pcap::new(1, false, false)
        .packet(1, 0, &ethernet_ipv4_tcp(b"first"))
        .packet(2, 0, &[linux_cooked_v1(b"x"), vec![0; 3]].concat())
        .packet(3, 0, &ethernet_ipv4_tcp(b"third"))
        .bytes;
    let next = Pcapng::new()
        .section(false)
        .interface(1, Some(0x80 | 20), Some(3))
        .interface(276, None, None)
        .enhanced(0, 1, &ethernet_ipv4_tcp(b"first"))
        .simple(&ethernet_ipv4_tcp(b"simple"))
        .obsolete(
            1,
            2,
            &[linux_cooked_v2_header(0x86dd, 772), ipv6_tcp(b"v2")].concat(),
        )
        .section(true)
        .interface(0, None, None)
        .enhanced(
            0,
            3,
            &[&30u32.to_le_bytes()[..], &ipv6_tcp(b"null")].concat(),
        )
        .bytes;
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    for original in [legacy, next] {
        for _ in 0..3000 {
            let mut bytes = original.clone();
            for _ in 0..=noise.below(4) {
                let at = noise.below(bytes.len());
                match noise.below(4) {
                    0 => bytes[at] = noise.next() as u8,
                    1 => bytes[at] ^= 1 << noise.below(8),
                    2 => bytes[at] = [0, 0xff, 0x7f, 0x80][noise.below(4)],
                    _ => bytes.truncate(at.max(1)),
                }
            }
            let _ = read_bytes(&bytes);
        }
    }
}

#[test]
fn read_opens_plain_gzip_and_zstd_files() {
    // Enough packets for several compressed blocks, so that a cut file still has some whole.
    let mut pcap = Pcap::new(1, true, false);
    for number in 0..300u32 {
        let payload: Vec<u8> = (0..1000u32).map(|byte| (byte * number) as u8).collect();
        pcap = pcap.packet(number, 0, &ethernet_ipv4_tcp(&payload));
    }
    let pcap = pcap.bytes;
    let directory = tempfile::tempdir().unwrap();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&pcap).unwrap();
    let gzip = gzip.finish().unwrap();
    let zstd = zstd::encode_all(&pcap[..], 3).unwrap();
    // Names that lie: the magic bytes decide.
    for (name, bytes) in [
        ("plain.gz", &pcap),
        ("packed.pcap", &gzip),
        ("packed.gz", &zstd),
    ] {
        let path = directory.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let mut times = Vec::new();
        let summary = read(&path, |segment| times.push(segment.timestamp_ns)).unwrap();
        assert_eq!(times.len(), 300, "{name}");
        assert_eq!(times[299], 299_000_000_000, "{name}");
        assert!(!summary.truncated, "{name}");

        // A file cut short reads as a cut capture, up to the cut.
        std::fs::write(&path, &bytes[..bytes.len() - 12]).unwrap();
        let mut decoded = 0;
        let summary = read(&path, |_| decoded += 1).unwrap();
        assert!(summary.truncated, "{name}");
        assert!((100..300).contains(&decoded), "{name}: {decoded}");

        // Cut so early that nothing decompresses: still a cut capture, not an empty file.
        std::fs::write(&path, &bytes[..20]).unwrap();
        let summary = read(&path, |_| {}).unwrap();
        assert!(summary.truncated, "{name}");
    }

    let missing = directory.path().join("missing.pcap");
    let problem = read(&missing, |_| {}).unwrap_err();
    assert!(
        problem.message.starts_with("cannot open "),
        "{}",
        problem.message
    );
    assert!(
        problem.message.contains("missing.pcap"),
        "{}",
        problem.message
    );
    let io = std::error::Error::source(&problem)
        .and_then(|source| source.downcast_ref::<io::Error>())
        .expect("the I/O error is kept as the source");
    assert_eq!(io.kind(), io::ErrorKind::NotFound);
}

mod tunnels;
