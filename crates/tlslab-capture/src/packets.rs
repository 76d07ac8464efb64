//! Packet captures read into transport segments: every TCP and UDP packet of a pcap or pcapng
//! file (plain, gzip or zstd), decoded through its link and IP headers, handed to a callback
//! with its capture time in nanoseconds.
//!
//! Reading streams: a buffer of about 1 MiB slides over the file, and each segment borrows its
//! payload from that buffer for the length of the callback. Captures of handshake traffic run
//! to many gigabytes, so memory must not grow with the file, and copying or allocating per
//! packet would cost more than decoding it. A packet that cannot be decoded (not IP, a
//! fragment, cut by the snap length, ...) is counted by its [`SkipReason`], never an error:
//! real captures hold all of these. Only what stops reading is an error: a file that is not a
//! capture, a read that fails, a record whose own length fields disagree. A file cut off in the
//! middle of a record, as when tcpdump is killed, is read up to the cut and says so
//! ([`Summary::truncated`]).

mod decode;
#[cfg(test)]
mod tests;
mod tunnel;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{
    Block, InterfaceDescriptionBlock, LegacyPcapReader, PcapBlockOwned, PcapError, PcapHeader,
    PcapNGReader,
};

use decode::Link;

use crate::filter::Filter;

/// One TCP or UDP packet from a capture, decoded down to its transport payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    /// Capture time in nanoseconds since the Unix epoch.
    pub timestamp_ns: u64,
    /// The pcapng interface it was captured on (0 for legacy pcap).
    pub interface: u32,
    /// Where it came from.
    pub source: SocketAddr,
    /// Where it went.
    pub destination: SocketAddr,
    /// Its TCP segment or UDP payload.
    pub transport: Transport<'a>,
    /// The tunnel it came through, when the capture was taken on a tunnel's underlay:
    /// `source` and `destination` are the inner packet's, the tunnel's addresses are those
    /// of the capture point. (MPLS labels and PPPoE sessions are walked through but have no
    /// addresses to keep.)
    pub tunnel: Option<Tunnel>,
}

/// The outermost tunnel a packet was captured in: what kind, between which addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunnel {
    /// Its kind.
    pub encapsulation: Encapsulation,
    /// The outer packet's source.
    pub source: IpAddr,
    /// The outer packet's destination.
    pub destination: IpAddr,
    /// GRE's key, ERSPAN's session, VXLAN's or Geneve's network identifier.
    pub identifier: Option<u32>,
}

/// The tunnels over IP the decoder walks through to the packet inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Encapsulation {
    /// GRE (IP protocol 47): IP, Ethernet or MPLS inside.
    Gre,
    /// ERSPAN types I, II and III (mirrored frames in GRE).
    Erspan,
    /// VXLAN (UDP port 4789).
    Vxlan,
    /// Geneve (UDP port 6081).
    Geneve,
    /// IPv4 or IPv6 directly inside IPv4 or IPv6 (IP protocols 4 and 41).
    IpInIp,
}

impl Encapsulation {
    /// Every kind, in the order the summary lists them.
    pub const ALL: [Encapsulation; 5] = [
        Encapsulation::Gre,
        Encapsulation::Erspan,
        Encapsulation::Vxlan,
        Encapsulation::Geneve,
        Encapsulation::IpInIp,
    ];

    /// Its usual name, for reports.
    pub fn name(self) -> &'static str {
        match self {
            Encapsulation::Gre => "GRE",
            Encapsulation::Erspan => "ERSPAN",
            Encapsulation::Vxlan => "VXLAN",
            Encapsulation::Geneve => "Geneve",
            Encapsulation::IpInIp => "IP in IP",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// A packet's transport: what the TLS and QUIC readers take.
pub enum Transport<'a> {
    /// A TCP segment with its flags.
    Tcp(TcpSegment<'a>),
    /// A UDP datagram's payload (QUIC).
    Udp {
        /// The datagram's bytes, as captured.
        payload: &'a [u8],
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// What the flow reader needs of a TCP header, and the payload.
pub struct TcpSegment<'a> {
    /// The sequence number of the first payload byte (of the SYN itself for a SYN).
    pub sequence: u32,
    /// The next sequence number the sender expects, when `ack` is set.
    pub acknowledgment: u32,
    /// Opens a connection (with `ack`, the server's answer).
    pub syn: bool,
    /// `acknowledgment` is valid.
    pub ack: bool,
    /// The sender has sent everything.
    pub fin: bool,
    /// The connection was reset.
    pub rst: bool,
    /// The segment's data, as captured (a snapshot length may have cut it).
    pub payload: &'a [u8],
}

impl<'a> Transport<'a> {
    /// The bytes after the TCP or UDP header.
    pub fn payload(&self) -> &'a [u8] {
        match self {
            Transport::Tcp(segment) => segment.payload,
            Transport::Udp { payload } => payload,
        }
    }
}

/// Why a packet was not decoded (counted, never an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// Neither IPv4 nor IPv6 (ARP, LLDP, ...).
    NotIp,
    /// IP but neither TCP nor UDP (ICMP, ...).
    OtherProtocol,
    /// A fragment of an IP datagram (not reassembled).
    Fragment,
    /// The capture kept fewer bytes than the packet had (snap length).
    CutBySnapLength,
    /// Headers that do not parse.
    Malformed,
    /// A link type this reader does not decode (the number is in `Summary::link_types`).
    UnsupportedLinkType,
    /// A pcapng block without a timestamp (Simple Packet Block) or an interface it does not
    /// describe.
    NoTimestamp,
}

impl SkipReason {
    /// Every reason, in the order the summary lists them.
    pub const ALL: [SkipReason; 7] = [
        SkipReason::NotIp,
        SkipReason::OtherProtocol,
        SkipReason::Fragment,
        SkipReason::CutBySnapLength,
        SkipReason::Malformed,
        SkipReason::UnsupportedLinkType,
        SkipReason::NoTimestamp,
    ];

    /// A short phrase for reports: "N packets were skipped: PHRASE".
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::NotIp => "not IP",
            SkipReason::OtherProtocol => "neither TCP nor UDP",
            SkipReason::Fragment => "IP fragments",
            SkipReason::CutBySnapLength => "cut by the snap length",
            SkipReason::Malformed => "malformed headers",
            SkipReason::UnsupportedLinkType => "an unsupported link type",
            SkipReason::NoTimestamp => "no timestamp or no interface description",
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.describe())
    }
}

/// What reading a file saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Every packet record read.
    pub packets: u64,
    /// Captured bytes of those packets.
    pub bytes: u64,
    /// Packets handed to the callback.
    pub decoded: u64,
    /// Packets that were not handed on, by why.
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Link types met that are not decoded, with their packet counts.
    pub link_types: BTreeMap<u32, u64>,
    /// The file ended in the middle of a record (a capture cut off, e.g. tcpdump killed): what
    /// came before was read.
    pub truncated: bool,
    /// Packets a `--filter` left out (not counted as skipped: they were not wanted).
    pub filtered: u64,
    /// Decoded packets that came through a tunnel, by its kind (the outermost).
    pub tunneled: BTreeMap<Encapsulation, u64>,
    /// TLS key logs the file embeds (pcapng Decryption Secrets Blocks).
    pub key_logs: u64,
}

/// Why a capture could not be opened, read, filtered or written: what failed, what to do
/// about it, and the system's or library's own error underneath when there is one.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CaptureError {
    /// What failed, naming the file or option concerned.
    pub message: String,
    /// What the user can do about it.
    pub hint: String,
    /// The error underneath (an I/O error, libpcap's or the kernel's refusal), kept whole so
    /// the command line can show the chain of causes.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl CaptureError {
    /// An error with no cause underneath it.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> CaptureError {
        CaptureError {
            message: message.into(),
            hint: hint.into(),
            source: None,
        }
    }

    /// The same error, with `source` as the cause underneath it.
    pub fn caused_by(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> CaptureError {
        self.source = Some(source.into());
        self
    }
}

fn error(message: String, hint: impl Into<String>) -> CaptureError {
    CaptureError::new(message, hint)
}

const FORMATS_HINT: &str = "give a pcap or pcapng capture (as tcpdump -w, dumpcap, tshark or \
     Wireshark write them), plain or compressed with gzip (.gz) or zstd (.zst)";

/// Large enough that refills are rare next to the packets they bring, small enough to stay in
/// the cache hierarchy.
const BUFFER_BYTES: usize = 1 << 20;

/// Packets of the link types decoded here stay under 256 KiB, the limit of libpcap and
/// Wireshark; 16 MiB leaves room for the odd large record of other link types, while a damaged
/// length field still cannot make the buffer huge.
const LARGEST_RECORD_BYTES: usize = 16 << 20;

/// Reads the capture at `path` (pcap or pcapng; plain, gzip `.gz` or zstd `.zst`, recognised
/// by their magic bytes, not the file name) and calls `each` with every TCP and UDP segment,
/// in file order.
pub fn read(path: &Path, each: impl FnMut(&Segment<'_>)) -> Result<Summary, CaptureError> {
    read_filtered(path, None, each)
}

/// [`read`], keeping only the packets `filter` passes (the others are counted in
/// [`Summary::filtered`]).
pub fn read_filtered(
    path: &Path,
    filter: Option<&mut Filter>,
    each: impl FnMut(&Segment<'_>),
) -> Result<Summary, CaptureError> {
    read_capture(path, filter, None, each)
}

/// A TLS key log a pcapng file carries in a Decryption Secrets Block (secrets type `TLSK`,
/// as `editcap --inject-secrets tls,FILE` and browsers' captures write it): the key log's
/// text, in the SSLKEYLOGFILE format.
pub type SecretsCallback<'c> = &'c mut dyn FnMut(&[u8]);

/// [`read_filtered`], handing every TLS key log the file embeds to `secrets` when it is met,
/// before the packets after it.
pub fn read_with_secrets(
    path: &Path,
    filter: Option<&mut Filter>,
    secrets: SecretsCallback<'_>,
    each: impl FnMut(&Segment<'_>),
) -> Result<Summary, CaptureError> {
    read_capture(path, filter, Some(secrets), each)
}

fn read_capture(
    path: &Path,
    filter: Option<&mut Filter>,
    secrets: Option<SecretsCallback<'_>>,
    each: impl FnMut(&Segment<'_>),
) -> Result<Summary, CaptureError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|problem| {
        error(
            format!("cannot open {name}"),
            "check the path and that the file is readable",
        )
        .caused_by(problem)
    })?;
    let status = InputStatus::default();
    let mut file = WholeReads {
        inner: file,
        status: &status,
    };
    let mut head = [0; 4];
    let length = file.read(&mut head).map_err(|_| status.failure(&name))?;
    let head = head.get(..length).unwrap_or_default();
    let input = head.chain(file.inner);
    match Compression::of(head) {
        Some(Compression::Gzip) => {
            // Multi-member, as `cat a.gz b.gz` and parallel compressors make them.
            read_stream(
                flate2::read::MultiGzDecoder::new(input),
                &name,
                filter,
                secrets,
                each,
            )
        }
        Some(Compression::Zstd) => {
            let decoder = zstd::stream::read::Decoder::new(input).map_err(|problem| {
                error(
                    format!("cannot decompress {name}"),
                    "check that the file is a complete zstd stream",
                )
                .caused_by(problem)
            })?;
            read_stream(decoder, &name, filter, secrets, each)
        }
        None => read_stream(input, &name, filter, secrets, each),
    }
}

/// One raw IP packet (a live capture's) as a segment: `None` (with the reason) for what is
/// not TCP or UDP.
pub fn decode_ip(
    timestamp_ns: u64,
    interface: u32,
    packet: &[u8],
) -> Result<Segment<'_>, SkipReason> {
    let decoded = decode::decode(decode::Link::RawIp, packet)?;
    Ok(Segment {
        timestamp_ns,
        interface,
        source: decoded.source,
        destination: decoded.destination,
        transport: decoded.transport,
        tunnel: decoded.tunnel,
    })
}

/// The same from any reader (what `read` uses after opening and decompressing; `name` appears
/// in error messages).
pub fn read_from(
    reader: impl Read,
    name: &str,
    each: impl FnMut(&Segment<'_>),
) -> Result<Summary, CaptureError> {
    read_from_filtered(reader, name, None, each)
}

/// [`read_from`] through `filter`.
pub fn read_from_filtered(
    reader: impl Read,
    name: &str,
    filter: Option<&mut Filter>,
    each: impl FnMut(&Segment<'_>),
) -> Result<Summary, CaptureError> {
    read_stream(reader, name, filter, None, each)
}

fn read_stream(
    reader: impl Read,
    name: &str,
    filter: Option<&mut Filter>,
    secrets: Option<SecretsCallback<'_>>,
    each: impl FnMut(&Segment<'_>),
) -> Result<Summary, CaptureError> {
    let status = InputStatus::default();
    let mut input = WholeReads {
        inner: reader,
        status: &status,
    };
    let mut head = [0; 4];
    let length = input.read(&mut head).map_err(|_| status.failure(name))?;
    let head = head.get(..length).unwrap_or_default();
    let format = match Format::of(head) {
        Sniffed::Capture(format) => format,
        // A decompressor that stops before its first output byte: a capture cut at once.
        Sniffed::Empty if status.cut_short.get() => return Ok(cut_in_header()),
        Sniffed::Empty => {
            return Err(error(
                format!("{name} is empty, not a pcap or pcapng capture"),
                format!("{FORMATS_HINT}; a capture stopped before it began has no header"),
            ))
        }
        Sniffed::CutInMagic => return Ok(cut_in_header()),
        Sniffed::Compressed(compression) => {
            return Err(error(
                format!("{name} is not a pcap or pcapng capture"),
                format!(
                    "it is {} compressed: packets::read decompresses, read_from does not",
                    compression.name()
                ),
            ))
        }
        Sniffed::Other => return Err(not_a_capture(name)),
    };
    // The peeked bytes go back in front, so the parsers see the file from its first byte.
    let input = WholeReads {
        inner: head.chain(input.inner),
        status: &status,
    };
    let mut reading = Reading::new(name, &status, format, each);
    reading.filter = filter;
    // Through `Some`, a coercion site: the callback's trait object is borrowed for as long
    // as the reading, not for as long as the caller holds it.
    if let Some(secrets) = secrets {
        reading.secrets = Some(secrets);
    }
    match format {
        Format::Legacy => match LegacyPcapReader::new(BUFFER_BYTES, input) {
            Ok(reader) => reading.run(reader),
            Err(problem) => reading.opening_failed(&problem),
        },
        Format::Next => match PcapNGReader::new(BUFFER_BYTES, input) {
            Ok(reader) => reading.run(reader),
            Err(problem) => reading.opening_failed(&problem),
        },
    }
}

fn not_a_capture(name: &str) -> CaptureError {
    error(
        format!("{name} is not a pcap or pcapng capture"),
        FORMATS_HINT,
    )
}

fn cut_in_header() -> Summary {
    Summary {
        truncated: true,
        ..Summary::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    Gzip,
    Zstd,
}

impl Compression {
    fn of(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// pcap ("legacy") or pcapng ("next generation").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Legacy,
    Next,
}

enum Sniffed {
    Capture(Format),
    Empty,
    /// The input ended inside the magic number of a capture.
    CutInMagic,
    Compressed(Compression),
    Other,
}

const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// The pcap magic numbers pcap-parser reads, as bytes in the file: microsecond and nanosecond
/// timestamps in both byte orders, and the little-endian "modified" (Kuznetzov) format.
const LEGACY_MAGICS: [[u8; 4]; 5] = [
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
    [0x34, 0xcd, 0xb2, 0xa1],
];

impl Format {
    fn of(head: &[u8]) -> Sniffed {
        if head.is_empty() {
            return Sniffed::Empty;
        }
        if head == PCAPNG_MAGIC {
            return Sniffed::Capture(Format::Next);
        }
        if LEGACY_MAGICS.iter().any(|magic| head == magic) {
            return Sniffed::Capture(Format::Legacy);
        }
        if let Some(compression) = Compression::of(head) {
            return Sniffed::Compressed(compression);
        }
        let begins_a_magic = |magic: &[u8; 4]| magic.starts_with(head);
        if begins_a_magic(&PCAPNG_MAGIC) || LEGACY_MAGICS.iter().any(begins_a_magic) {
            return Sniffed::CutInMagic;
        }
        Sniffed::Other
    }
}

/// What the input said besides its bytes. pcap-parser turns every read error into a bare
/// `ReadError`, so the error itself waits here for the message.
#[derive(Default)]
struct InputStatus {
    error: Cell<Option<io::Error>>,
    /// The capture is cut: its last record is, or a decompressor found its stream cut short
    /// (then even if the last record happens to be whole).
    cut_short: Cell<bool>,
    /// A read found the end of the input.
    ended: Cell<bool>,
}

impl InputStatus {
    fn failure(&self, name: &str) -> CaptureError {
        let failure = error(
            format!("cannot read {name}"),
            "check the file: a compressed capture may be damaged",
        );
        match self.error.take() {
            Some(problem) => failure.caused_by(problem),
            None => failure,
        }
    }
}

/// Fills every buffer it is given unless the input ends. pcap-parser reads once per refill
/// and takes a short read (a pipe, a decompressor's block) for a short file, and probing the
/// format on a few bytes would fail; full reads also make refills rarer.
struct WholeReads<'s, R> {
    inner: R,
    status: &'s InputStatus,
}

impl<R: Read> Read for WholeReads<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while let Some(space) = buffer.get_mut(filled..).filter(|space| !space.is_empty()) {
            match self.inner.read(space) {
                Ok(0) => {
                    self.status.ended.set(true);
                    break;
                }
                // `min` keeps a reader that claims more than it was given from moving past
                // the buffer.
                Ok(count) => filled += count.min(space.len()),
                Err(problem) if problem.kind() == io::ErrorKind::Interrupted => {}
                // How flate2 and zstd report a compressed stream that stops mid-way: the
                // capture is cut, which is not an error.
                Err(problem) if problem.kind() == io::ErrorKind::UnexpectedEof => {
                    self.status.cut_short.set(true);
                    self.status.ended.set(true);
                    break;
                }
                Err(problem) => {
                    let kind = problem.kind();
                    self.status.error.set(Some(problem));
                    return Err(kind.into());
                }
            }
        }
        Ok(filled)
    }
}

/// The state of reading one file.
struct Reading<'s, F> {
    name: &'s str,
    filter: Option<&'s mut Filter>,
    /// Where the key logs of Decryption Secrets Blocks go, when the caller wants them.
    secrets: Option<SecretsCallback<'s>>,
    filtered: u64,
    /// A filter that cannot apply to the file's link type: reading stops with it.
    failure: Option<CaptureError>,
    status: &'s InputStatus,
    format: Format,
    each: F,
    packets: u64,
    bytes: u64,
    decoded: u64,
    /// By `SkipReason as usize`: an array, so that skipping costs no map lookup.
    skipped: [u64; SkipReason::ALL.len()],
    /// By `Encapsulation as usize`, likewise.
    tunneled: [u64; Encapsulation::ALL.len()],
    key_logs: u64,
    link_types: BTreeMap<u32, u64>,
    legacy: LegacyFile,
    /// The interfaces of the current pcapng section, by interface number.
    interfaces: Vec<Interface>,
    /// The byte order of the current pcapng section.
    big_endian: bool,
    capacity: usize,
}

/// What a pcap file header says about the records after it.
#[derive(Debug, Clone, Copy)]
struct LegacyFile {
    link: Link,
    /// Nanoseconds per unit of the fraction field: 1000 for microseconds, 1 for nanoseconds.
    fraction_ns: u64,
    big_endian: bool,
    record_header_bytes: u64,
}

impl LegacyFile {
    fn new(header: &PcapHeader) -> LegacyFile {
        // The upper 16 bits may carry an FCS length (draft-ietf-opsawg-pcap, "LinkType"), and
        // the frame check sequence past the IP packet is ignored anyway.
        let link_type = (header.network.0 as u32) & 0xffff;
        LegacyFile {
            link: Link::from_link_type(link_type),
            fraction_ns: if header.is_nanosecond_precision() {
                1
            } else {
                1000
            },
            big_endian: header.is_bigendian(),
            record_header_bytes: if header.is_modified_format() { 24 } else { 16 },
        }
    }

    fn timestamp_ns(&self, seconds: u32, fraction: u32) -> u64 {
        u64::from(seconds)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(fraction).saturating_mul(self.fraction_ns))
    }
}

/// What a pcapng Interface Description Block says about the packets captured on it.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link: Link,
    /// None when `if_tsresol` names a resolution no integer holds.
    scale: Option<TimestampScale>,
    /// `if_tsoffset`, in nanoseconds.
    offset_ns: i64,
}

/// From timestamp units to nanoseconds, chosen once per interface so that each packet costs a
/// multiplication, a division or a shift, not a 128-bit division.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimestampScale {
    /// Units of 10^-p seconds, p <= 9: nanoseconds per unit.
    Multiply(u64),
    /// Units of 10^-p seconds, p > 9: units per nanosecond.
    Divide(u64),
    /// Units of 2^-e seconds.
    Shift(u32),
}

impl TimestampScale {
    fn from_resolution(if_tsresol: u8) -> Option<TimestampScale> {
        const NANOSECONDS_PER_SECOND: u64 = 1_000_000_000;
        if if_tsresol & 0x80 == 0 {
            let exponent = u32::from(if_tsresol);
            Some(if exponent <= 9 {
                TimestampScale::Multiply(10u64.pow(9 - exponent))
            } else {
                // 10^19 is the largest power of 10 a u64 holds.
                let units_per_second = 10u64.checked_pow(exponent)?;
                TimestampScale::Divide(units_per_second / NANOSECONDS_PER_SECOND)
            })
        } else {
            Some(TimestampScale::Shift(u32::from(if_tsresol & 0x7f)))
        }
    }

    fn nanoseconds(self, units: u64) -> u64 {
        match self {
            TimestampScale::Multiply(factor) => units.saturating_mul(factor),
            TimestampScale::Divide(divisor) => units / divisor.max(1),
            // units < 2^64 and 10^9 < 2^30: the product fits in 128 bits, the shift is < 128.
            TimestampScale::Shift(exponent) => {
                u64::try_from((u128::from(units) * 1_000_000_000) >> exponent).unwrap_or(u64::MAX)
            }
        }
    }
}

impl Interface {
    fn new(description: &InterfaceDescriptionBlock<'_>, big_endian: bool) -> Interface {
        // pcap-parser's `ts_resolution` refuses every power-of-2 resolution (it tests the byte
        // with its flag bit against 63) and its `decode_ts` keeps seconds in a u32 and adds the
        // offset unchecked; so the resolution byte it extracted is scaled here. It reads
        // `if_tsoffset` as little-endian whatever the section's byte order, hence the swap.
        let offset_seconds = if big_endian {
            description.if_tsoffset.swap_bytes()
        } else {
            description.if_tsoffset
        };
        Interface {
            link: Link::from_link_type(u32::from(description.linktype.0 as u16)),
            scale: TimestampScale::from_resolution(description.if_tsresol),
            offset_ns: offset_seconds.saturating_mul(1_000_000_000),
        }
    }

    fn timestamp_ns(&self, high: u32, low: u32) -> Option<u64> {
        let units = (u64::from(high) << 32) | u64::from(low);
        let scale = self.scale?;
        Some(
            scale
                .nanoseconds(units)
                .saturating_add_signed(self.offset_ns),
        )
    }
}

/// The obsolete pcapng Packet Block (type 2), which pcap-parser leaves as an unknown block.
const OBSOLETE_PACKET_BLOCK: u32 = 2;

/// What to do after asking the parser for the next block; owned, so that the reader is free
/// again to be refilled or grown.
enum Step {
    Consume(usize),
    End,
    Refill,
    Grow,
    Cut,
    ReadFailed,
    Corrupt(String),
}

impl<'s, F: FnMut(&Segment<'_>)> Reading<'s, F> {
    fn new(name: &'s str, status: &'s InputStatus, format: Format, each: F) -> Self {
        Reading {
            name,
            filter: None,
            secrets: None,
            filtered: 0,
            failure: None,
            status,
            format,
            each,
            packets: 0,
            bytes: 0,
            decoded: 0,
            skipped: [0; SkipReason::ALL.len()],
            tunneled: [0; Encapsulation::ALL.len()],
            key_logs: 0,
            link_types: BTreeMap::new(),
            legacy: LegacyFile {
                link: Link::Unsupported(0),
                fraction_ns: 1000,
                big_endian: false,
                record_header_bytes: 16,
            },
            interfaces: Vec::new(),
            big_endian: false,
            capacity: BUFFER_BYTES,
        }
    }

    fn opening_failed(self, problem: &PcapError<&[u8]>) -> Result<Summary, CaptureError> {
        match problem {
            // The file header itself is cut: a capture stopped as soon as it began.
            PcapError::Incomplete(_) | PcapError::UnexpectedEof | PcapError::Eof
                if self.status.ended.get() =>
            {
                Ok(cut_in_header())
            }
            PcapError::Incomplete(_) | PcapError::BufferTooSmall => Err(error(
                format!(
                    "{} begins with a section header larger than {} KiB",
                    self.name,
                    BUFFER_BYTES / 1024
                ),
                "the file is probably damaged",
            )),
            PcapError::ReadError => Err(self.status.failure(self.name)),
            _ => Err(not_a_capture(self.name)),
        }
    }

    fn run(mut self, mut reader: impl PcapReaderIterator) -> Result<Summary, CaptureError> {
        loop {
            let step = match reader.next() {
                Ok((length, block)) => {
                    self.take(block);
                    if let Some(failure) = self.failure.take() {
                        return Err(failure);
                    }
                    Step::Consume(length)
                }
                Err(PcapError::Eof) => Step::End,
                Err(PcapError::Incomplete(_)) => Step::Refill,
                Err(PcapError::BufferTooSmall) => Step::Grow,
                Err(PcapError::UnexpectedEof) => Step::Cut,
                Err(PcapError::ReadError) => Step::ReadFailed,
                // Not the error's Display: it prints the rest of the buffer.
                Err(PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind)) => {
                    Step::Corrupt(format!("the parser's check {kind:?} fails"))
                }
                Err(PcapError::HeaderNotRecognized) => {
                    Step::Corrupt("a header is not recognised".to_owned())
                }
            };
            match step {
                // Never from pcap-parser's own parsers; it would read the same block forever.
                Step::Consume(0) => {
                    return Err(self.corrupt(reader.consumed(), "a block of no length"));
                }
                // Without shifting: the buffer moves its rest to the front once per refill,
                // not every time half of it has been read.
                Step::Consume(length) => reader.consume_noshift(length),
                Step::End => break,
                Step::Refill => {
                    let before = reader.data().len();
                    reader
                        .refill()
                        .map_err(|_| self.status.failure(self.name))?;
                    // A full buffer that still holds no whole block (the parser could not say
                    // how much it needs) gains nothing from a refill.
                    if reader.data().len() == before && !reader.reader_exhausted() {
                        self.grow(&mut reader)?;
                    }
                }
                Step::Grow => self.grow(&mut reader)?,
                Step::Cut => {
                    self.check_record_lengths(reader.data(), reader.consumed())?;
                    self.status.cut_short.set(true);
                    break;
                }
                Step::ReadFailed => return Err(self.status.failure(self.name)),
                Step::Corrupt(detail) => {
                    return Err(self.corrupt(reader.consumed(), &detail));
                }
            }
        }
        Ok(self.finish())
    }

    /// Makes room for the record at the front of the buffer, unless it is whole already (and
    /// the parser refuses it anyway) or larger than any capture tool writes.
    fn grow(&mut self, reader: &mut impl PcapReaderIterator) -> Result<(), CaptureError> {
        let offset = reader.consumed();
        let declared = self.check_record_lengths(reader.data(), offset)?;
        let wanted = match declared {
            Some(length) => usize::try_from(length)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
                .max(self.capacity.saturating_mul(2)),
            None => self.capacity.saturating_mul(2),
        };
        if declared.is_some_and(|length| length > LARGEST_RECORD_BYTES as u64)
            || self.capacity >= LARGEST_RECORD_BYTES
        {
            let size = declared.map_or_else(
                || "unknown size".to_owned(),
                |length| format!("{length} bytes"),
            );
            return Err(error(
                format!(
                    "{} has a record of {size} at byte {offset}, larger than the {} MiB this \
                     reader takes",
                    self.name,
                    LARGEST_RECORD_BYTES >> 20
                ),
                "no capture tool writes packets this large: the file is probably damaged \
                 there, and the packets before it were read",
            ));
        }
        self.capacity = wanted.min(LARGEST_RECORD_BYTES);
        reader.grow(self.capacity);
        Ok(())
    }

    /// The length the record at the front of `data` declares, or an error when all of it is
    /// there: the parser then wants more than the record holds, and more bytes will not help.
    fn check_record_lengths(
        &self,
        data: &[u8],
        offset: usize,
    ) -> Result<Option<u64>, CaptureError> {
        let declared = self.declared_record_length(data);
        match declared {
            Some(length) if length <= data.len() as u64 => {
                Err(self.corrupt(offset, "its length fields disagree"))
            }
            _ => Ok(declared),
        }
    }

    fn declared_record_length(&self, data: &[u8]) -> Option<u64> {
        let word = |at: usize, big_endian: bool| -> Option<u32> {
            let bytes: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
            Some(if big_endian {
                u32::from_be_bytes(bytes)
            } else {
                u32::from_le_bytes(bytes)
            })
        };
        match self.format {
            Format::Legacy => {
                let captured = word(8, self.legacy.big_endian)?;
                Some(self.legacy.record_header_bytes + u64::from(captured))
            }
            Format::Next => {
                // A Section Header Block states its own byte order; its type reads the same
                // in both.
                let big_endian = if data.get(..4)? == PCAPNG_MAGIC {
                    word(8, true)? == 0x1a2b_3c4d
                } else {
                    self.big_endian
                };
                word(4, big_endian).map(u64::from)
            }
        }
    }

    fn corrupt(&self, offset: usize, detail: &str) -> CaptureError {
        error(
            format!("{} is damaged at byte {offset}: {detail}", self.name),
            "the packets before it were read (for a compressed file the byte counts in the \
             decompressed capture); pcapfix may repair the file",
        )
    }

    fn take(&mut self, block: PcapBlockOwned<'_>) {
        match block {
            PcapBlockOwned::LegacyHeader(header) => self.legacy = LegacyFile::new(&header),
            PcapBlockOwned::Legacy(packet) => {
                let timestamp_ns = self.legacy.timestamp_ns(packet.ts_sec, packet.ts_usec);
                self.packet(
                    Some(self.legacy.link),
                    0,
                    Some(timestamp_ns),
                    packet.data,
                    packet.origlen,
                );
            }
            PcapBlockOwned::NG(block) => self.take_next(block),
        }
    }

    fn take_next(&mut self, block: Block<'_>) {
        use pcap_parser::traits::PcapNGPacketBlock;
        match block {
            Block::SectionHeader(section) => {
                self.big_endian = section.big_endian();
                self.interfaces.clear();
            }
            Block::InterfaceDescription(description) => {
                let interface = Interface::new(&description, self.big_endian);
                self.interfaces.push(interface);
            }
            Block::EnhancedPacket(packet) => {
                let interface = self.interface(packet.if_id);
                self.packet(
                    interface.map(|interface| interface.link),
                    packet.if_id,
                    interface.and_then(|interface| {
                        interface.timestamp_ns(packet.ts_high, packet.ts_low)
                    }),
                    packet.packet_data(),
                    packet.origlen,
                );
            }
            Block::SimplePacket(packet) => {
                let link = self.interface(0).map(|interface| interface.link);
                self.packet(link, 0, None, packet.packet_data(), packet.origlen);
            }
            Block::DecryptionSecrets(secrets)
                if secrets.secrets_type == pcap_parser::SecretsType::TlsKeyLog =>
            {
                self.key_logs += 1;
                if let Some(hand_on) = self.secrets.as_deref_mut() {
                    // The data is padded to 32 bits; the padding is not the key log's.
                    let length = usize::try_from(secrets.secrets_len).unwrap_or(usize::MAX);
                    hand_on(secrets.data.get(..length).unwrap_or(secrets.data));
                }
            }
            Block::Unknown(block) => {
                let block_type = if self.big_endian {
                    block.block_type.swap_bytes()
                } else {
                    block.block_type
                };
                if block_type == OBSOLETE_PACKET_BLOCK {
                    self.obsolete_packet(block.data);
                }
            }
            _ => {}
        }
    }

    /// Interface (u16), drops (u16), timestamp high and low, captured and original length
    /// (u32 each), then the packet; in the section's byte order.
    fn obsolete_packet(&mut self, content: &[u8]) {
        let big_endian = self.big_endian;
        let field = |at: usize, width: usize| -> Option<u32> {
            let bytes = content.get(at..at + width)?;
            let mut word = [0; 4];
            if big_endian {
                word.get_mut(4 - width..)?.copy_from_slice(bytes);
                Some(u32::from_be_bytes(word))
            } else {
                word.get_mut(..width)?.copy_from_slice(bytes);
                Some(u32::from_le_bytes(word))
            }
        };
        let fields = (|| {
            let captured = usize::try_from(field(12, 4)?).ok()?;
            Some((
                field(0, 2)?,
                field(4, 4)?,
                field(8, 4)?,
                field(16, 4)?,
                content.get(20..20usize.checked_add(captured)?)?,
            ))
        })();
        let Some((number, high, low, original_length, data)) = fields else {
            self.packets += 1;
            return self.skip(SkipReason::Malformed, None);
        };
        let interface = self.interface(number);
        self.packet(
            interface.map(|interface| interface.link),
            number,
            interface.and_then(|interface| interface.timestamp_ns(high, low)),
            data,
            original_length,
        );
    }

    fn interface(&self, number: u32) -> Option<Interface> {
        self.interfaces.get(usize::try_from(number).ok()?).copied()
    }

    /// Counts a packet record and decodes it, or says why not. `link` is None when no
    /// interface describes the packet, `timestamp_ns` when it has no usable time.
    fn packet(
        &mut self,
        link: Option<Link>,
        interface: u32,
        timestamp_ns: Option<u64>,
        data: &[u8],
        original_length: u32,
    ) {
        self.packets += 1;
        self.bytes = self.bytes.saturating_add(data.len() as u64);
        let Some(link) = link else {
            return self.skip(SkipReason::NoTimestamp, None);
        };
        if let Link::Unsupported(link_type) = link {
            return self.skip(SkipReason::UnsupportedLinkType, Some(link_type));
        }
        let Some(timestamp_ns) = timestamp_ns else {
            return self.skip(SkipReason::NoTimestamp, None);
        };
        if let Some(filter) = self.filter.as_deref_mut() {
            match filter.matches(link.dlt(), data) {
                Ok(true) => {}
                Ok(false) => {
                    self.filtered += 1;
                    return;
                }
                Err(failure) => {
                    self.failure.get_or_insert(failure);
                    return;
                }
            }
        }
        if (data.len() as u64) < u64::from(original_length) {
            return self.skip(SkipReason::CutBySnapLength, None);
        }
        match decode::decode(link, data) {
            Ok(decoded) => {
                self.decoded += 1;
                if let Some(tunnel) = decoded.tunnel {
                    if let Some(count) = self.tunneled.get_mut(tunnel.encapsulation as usize) {
                        *count += 1;
                    }
                }
                (self.each)(&Segment {
                    timestamp_ns,
                    interface,
                    source: decoded.source,
                    destination: decoded.destination,
                    transport: decoded.transport,
                    tunnel: decoded.tunnel,
                });
            }
            Err(reason) => self.skip(reason, None),
        }
    }

    fn skip(&mut self, reason: SkipReason, unsupported_link_type: Option<u32>) {
        if let Some(count) = self.skipped.get_mut(reason as usize) {
            *count += 1;
        }
        if let Some(link_type) = unsupported_link_type {
            *self.link_types.entry(link_type).or_insert(0) += 1;
        }
    }

    fn finish(self) -> Summary {
        let skipped = SkipReason::ALL
            .into_iter()
            .zip(self.skipped)
            .filter(|&(_, count)| count > 0)
            .collect();
        Summary {
            packets: self.packets,
            bytes: self.bytes,
            decoded: self.decoded,
            skipped,
            link_types: self.link_types,
            truncated: self.status.cut_short.get(),
            filtered: self.filtered,
            tunneled: Encapsulation::ALL
                .into_iter()
                .zip(self.tunneled)
                .filter(|&(_, count)| count > 0)
                .collect(),
            key_logs: self.key_logs,
        }
    }
}
