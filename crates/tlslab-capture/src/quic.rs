//! QUIC handshakes seen from the wire (RFC 9000, RFC 9001, and RFC 9369 for version 2).
//!
//! Initial packets are protected with keys anyone can derive from the client's first
//! Destination Connection ID, so a capture reads them: their CRYPTO frames, put back in order
//! across packets and datagrams (a post-quantum ClientHello spans two), carry the ClientHello
//! and the ServerHello, which the TLS reader (`tls`) turns into events and negotiated values as
//! over TCP. The rest of the handshake is in Handshake packets, protected with secrets only the
//! endpoints have: their headers still show which side sent what, and when. The server's
//! flight is its Handshake packets up to the client's Finished, and the client's Finished is
//! its first Handshake packet large enough to hold one (an acknowledgment alone is smaller).
//! 0-RTT packets, Retry and Version Negotiation are seen in their headers; a server that closes
//! the connection in an Initial packet says why (a TLS alert, or a transport error).
//!
//! With a key log the Handshake packets are opened too (their keys come from the TLS 1.3
//! handshake secrets, RFC 9001, 5.1): EncryptedExtensions, Certificate, CertificateVerify and
//! both Finished messages then get their exact times, and ALPN, the signature scheme and
//! 0-RTT acceptance are read.
//!
//! The cryptography (HKDF, AES-128-GCM, AES-128 for header protection) is RustCrypto's; only
//! the packet layout, as the RFCs spell it, is written here.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

use std::sync::Arc;

use aes::cipher::{BlockEncrypt, KeyIvInit, StreamCipher};
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm, Nonce};
use chacha20poly1305::ChaCha20Poly1305;
use hkdf::Hkdf;
use sha2::{Sha256, Sha384};

use crate::flows::{Connection, Ending, Unseen, IDLE_TIMEOUT_NS};
use crate::keys::{hkdf_label, KeyLog};
use crate::tls::{Direction, Handshake};

pub const VERSION_1: u32 = 0x0000_0001;
pub const VERSION_2: u32 = 0x6b33_43cf;

/// RFC 9001, 5.2: the salt of version 1's Initial secrets.
const SALT_1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];
/// RFC 9369, 3.3.1: version 2's.
const SALT_2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb,
    0xf9, 0xbd, 0x2e, 0xd9,
];

/// A client's first datagram is at least this long (RFC 9000, 14.1).
const CLIENT_INITIAL_MINIMUM: usize = 1200;
/// A Handshake packet at least this long (its Length field) can hold the client's Finished:
/// a 36-byte message in a CRYPTO frame, a packet number of up to 4 bytes and the 16-byte
/// tag. An acknowledgment alone is about 25.
const FINISHED_PACKET_MINIMUM: u64 = 56;
/// QUIC's CRYPTO_ERROR range: 0x100 plus a TLS alert.
const CRYPTO_ERROR: std::ops::Range<u64> = 0x100..0x200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PacketType {
    Initial,
    ZeroRtt,
    Handshake,
    Retry,
}

fn packet_type(version: u32, bits: u8) -> PacketType {
    // Version 2 renumbered the types so that a middlebox cannot ossify on version 1's.
    match (version == VERSION_2, bits) {
        (false, 0) | (true, 1) => PacketType::Initial,
        (false, 1) | (true, 2) => PacketType::ZeroRtt,
        (false, 2) | (true, 3) => PacketType::Handshake,
        _ => PacketType::Retry,
    }
}

/// A QUIC variable-length integer at the front of `bytes`, and what follows it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let first = *bytes.first()?;
    let length = 1usize << (first >> 6);
    let encoded = bytes.get(..length)?;
    let mut value = u64::from(first & 0x3f);
    for byte in &encoded[1..] {
        value = (value << 8) | u64::from(*byte);
    }
    Some((value, &bytes[length..]))
}

/// One long-header packet at the front of a datagram.
#[derive(Debug)]
struct LongHeader<'a> {
    version: u32,
    kind: PacketType,
    destination: &'a [u8],
    /// The sender's connection ID: what the other side writes to in short headers.
    source: &'a [u8],
    /// Where the (protected) packet number starts.
    number_offset: usize,
    /// The Length field: packet number and protected payload.
    length: u64,
    /// The whole packet; for Retry and Version Negotiation, the rest of the datagram.
    packet: &'a [u8],
}

fn long_header(datagram: &[u8]) -> Option<LongHeader<'_>> {
    let first = *datagram.first()?;
    if first & 0x80 == 0 {
        return None;
    }
    let version = u32::from_be_bytes(datagram.get(1..5)?.try_into().ok()?);
    let destination_length = usize::from(*datagram.get(5)?);
    let destination = datagram.get(6..6 + destination_length)?;
    let at = 6 + destination_length;
    let source_length = usize::from(*datagram.get(at)?);
    let source = datagram.get(at + 1..at + 1 + source_length)?;
    let rest = datagram.get(at + 1 + source_length..)?;
    let kind = packet_type(version, (first >> 4) & 0x03);
    if version == 0 || kind == PacketType::Retry {
        return Some(LongHeader {
            version,
            kind,
            destination,
            source,
            number_offset: datagram.len(),
            length: 0,
            packet: datagram,
        });
    }
    let rest = if kind == PacketType::Initial {
        let (token_length, rest) = varint(rest)?;
        rest.get(usize::try_from(token_length).ok()?..)?
    } else {
        rest
    };
    let (length, rest) = varint(rest)?;
    let number_offset = datagram.len() - rest.len();
    let end = number_offset.checked_add(usize::try_from(length).ok()?)?;
    Some(LongHeader {
        version,
        kind,
        destination,
        source,
        number_offset,
        length,
        packet: datagram.get(..end)?,
    })
}

/// The AEAD that seals packets: Initial packets always use AES-128-GCM; Handshake packets
/// the negotiated suite's.
enum Sealing {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
}

/// The header protection that goes with it (RFC 9001, 5.4.3 and 5.4.4).
enum HeaderProtection {
    Aes128(Box<aes::Aes128>),
    Aes256(Box<aes::Aes256>),
    ChaCha([u8; 32]),
}

impl HeaderProtection {
    /// The five mask bytes for `sample`.
    fn mask(&self, sample: &[u8]) -> Option<[u8; 5]> {
        let mut mask = [0u8; 5];
        match self {
            HeaderProtection::Aes128(cipher) => {
                let mut block = aes::Block::clone_from_slice(sample);
                cipher.encrypt_block(&mut block);
                mask.copy_from_slice(&block[..5]);
            }
            HeaderProtection::Aes256(cipher) => {
                let mut block = aes::Block::clone_from_slice(sample);
                cipher.encrypt_block(&mut block);
                mask.copy_from_slice(&block[..5]);
            }
            HeaderProtection::ChaCha(key) => {
                // The sample's first 4 bytes are the block counter, the rest the nonce.
                let counter = u32::from_le_bytes(sample.get(..4)?.try_into().ok()?);
                // Exactly 12 bytes, so the nonce's from_slice cannot panic.
                let nonce = chacha20::Nonce::from_slice(sample.get(4..16)?);
                let mut cipher = chacha20::ChaCha20::new(key.into(), nonce);
                use aes::cipher::StreamCipherSeek;
                cipher.seek(u64::from(counter) * 64);
                cipher.apply_keystream(&mut mask);
            }
        }
        Some(mask)
    }
}

/// One direction's packet protection in one packet-number space.
struct Keys {
    packet: Sealing,
    iv: [u8; 12],
    header: HeaderProtection,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys of TLS 1.3 suite `suite` under `secret` (Initial secrets use 0x1301).
    fn from_secret(version: u32, suite: u16, secret: &[u8]) -> Option<Keys> {
        let prefix = if version == VERSION_2 {
            "quicv2"
        } else {
            "quic"
        };
        let key_length = match suite {
            0x1301 => 16,
            0x1302 | 0x1303 => 32,
            _ => return None,
        };
        let mut key = vec![0u8; key_length];
        let mut iv = [0u8; 12];
        let mut header = vec![0u8; key_length];
        let labels = [
            (format!("{prefix} key"), key.as_mut_slice()),
            (format!("{prefix} iv"), iv.as_mut_slice()),
            (format!("{prefix} hp"), header.as_mut_slice()),
        ];
        if suite == 0x1302 {
            let hkdf = Hkdf::<Sha384>::from_prk(secret).ok()?;
            for (label, out) in labels {
                hkdf.expand(&hkdf_label(&label, out.len()), out).ok()?;
            }
        } else {
            let hkdf = Hkdf::<Sha256>::from_prk(secret).ok()?;
            for (label, out) in labels {
                hkdf.expand(&hkdf_label(&label, out.len()), out).ok()?;
            }
        }
        let (packet, header) = match suite {
            0x1301 => (
                Sealing::Aes128(Box::new(Aes128Gcm::new_from_slice(&key).ok()?)),
                HeaderProtection::Aes128(Box::new(aes::Aes128::new_from_slice(&header).ok()?)),
            ),
            0x1302 => (
                Sealing::Aes256(Box::new(Aes256Gcm::new_from_slice(&key).ok()?)),
                HeaderProtection::Aes256(Box::new(aes::Aes256::new_from_slice(&header).ok()?)),
            ),
            _ => (
                Sealing::ChaCha(Box::new(ChaCha20Poly1305::new_from_slice(&key).ok()?)),
                HeaderProtection::ChaCha(header.try_into().ok()?),
            ),
        };
        Some(Keys { packet, iv, header })
    }

    /// Removes header protection and opens the packet: its packet number and plaintext.
    /// `largest` is the largest packet number opened so far in this direction.
    fn open(&self, header: &LongHeader<'_>, largest: Option<u64>) -> Option<(u64, Vec<u8>)> {
        let packet = header.packet;
        let offset = header.number_offset;
        // RFC 9001, 5.4.2: the sample starts 4 bytes after the packet number's start.
        let mask = self.header.mask(packet.get(offset + 4..offset + 20)?)?;
        // Long headers protect four bits of the first byte, short headers five.
        let protected_bits = if packet[0] & 0x80 != 0 { 0x0f } else { 0x1f };
        let first = packet[0] ^ (mask[0] & protected_bits);
        let number_length = usize::from(first & 0x03) + 1;
        let mut unprotected = packet.get(..offset + number_length)?.to_vec();
        unprotected[0] = first;
        let mut truncated = 0u64;
        for index in 0..number_length {
            unprotected[offset + index] ^= mask[1 + index];
            truncated = (truncated << 8) | u64::from(unprotected[offset + index]);
        }
        let number = packet_number(largest, truncated, number_length * 8);
        let mut nonce = self.iv;
        for (byte, number) in nonce[4..].iter_mut().zip(number.to_be_bytes()) {
            *byte ^= number;
        }
        let mut payload = packet.get(offset + number_length..)?.to_vec();
        let nonce = Nonce::from_slice(&nonce);
        match &self.packet {
            Sealing::Aes128(cipher) => cipher.decrypt_in_place(nonce, &unprotected, &mut payload),
            Sealing::Aes256(cipher) => cipher.decrypt_in_place(nonce, &unprotected, &mut payload),
            Sealing::ChaCha(cipher) => cipher.decrypt_in_place(nonce, &unprotected, &mut payload),
        }
        .ok()?;
        Some((number, payload))
    }
}

/// The client's and the server's Initial keys for a connection whose client first wrote to
/// `destination` (RFC 9001, 5.2).
fn initial_keys(version: u32, destination: &[u8]) -> Option<(Keys, Keys)> {
    let salt: &[u8] = if version == VERSION_2 {
        &SALT_2
    } else {
        &SALT_1
    };
    let (_, initial) = Hkdf::<Sha256>::extract(Some(salt), destination);
    let mut client = [0u8; 32];
    let mut server = [0u8; 32];
    initial
        .expand(&hkdf_label("client in", 32), &mut client)
        .ok()?;
    initial
        .expand(&hkdf_label("server in", 32), &mut server)
        .ok()?;
    Some((
        Keys::from_secret(version, 0x1301, &client)?,
        Keys::from_secret(version, 0x1301, &server)?,
    ))
}

/// RFC 9000, A.3: the full packet number nearest the one expected.
fn packet_number(largest: Option<u64>, truncated: u64, bits: usize) -> u64 {
    let expected = largest.map_or(0, |largest| largest + 1);
    let window = 1u64 << bits;
    let half = window / 2;
    let mask = window - 1;
    let candidate = (expected & !mask) | truncated;
    if candidate + half <= expected && candidate < (1 << 62) - window {
        candidate + window
    } else if candidate > expected + half && candidate >= window {
        candidate - window
    } else {
        candidate
    }
}

/// What an Initial packet's frames carried: CRYPTO data by offset, and a CONNECTION_CLOSE's
/// error code.
#[derive(Debug, Default)]
struct Frames<'a> {
    crypto: Vec<(u64, &'a [u8])>,
    close: Option<u64>,
}

/// The frames an Initial packet may hold (RFC 9000, 12.4): PADDING, PING, ACK, CRYPTO and
/// CONNECTION_CLOSE. Anything else ends the reading.
fn frames(mut payload: &[u8]) -> Frames<'_> {
    let mut found = Frames::default();
    while let Some((kind, rest)) = varint(payload) {
        payload = rest;
        let parsed = match kind {
            0x00 | 0x01 => Some(payload),
            0x02 | 0x03 => skip_ack(payload, kind == 0x03),
            0x06 => (|| {
                let (offset, rest) = varint(payload)?;
                let (length, rest) = varint(rest)?;
                let length = usize::try_from(length).ok()?;
                found.crypto.push((offset, rest.get(..length)?));
                rest.get(length..)
            })(),
            0x1c | 0x1d => {
                if let Some((code, _)) = varint(payload) {
                    found.close = Some(code);
                }
                None
            }
            _ => None,
        };
        match parsed {
            Some(rest) => payload = rest,
            None => break,
        }
    }
    found
}

fn skip_ack(payload: &[u8], ecn: bool) -> Option<&[u8]> {
    let (_largest, rest) = varint(payload)?;
    let (_delay, rest) = varint(rest)?;
    let (ranges, rest) = varint(rest)?;
    let (_first, mut rest) = varint(rest)?;
    for _ in 0..ranges {
        let (_gap, after) = varint(rest)?;
        let (_length, after) = varint(after)?;
        rest = after;
    }
    if ecn {
        for _ in 0..3 {
            rest = varint(rest)?.1;
        }
    }
    Some(rest)
}

/// What a 1-RTT packet's frames say about the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Application {
    /// A STREAM frame on a client-initiated bidirectional stream: a request or response.
    Response,
    /// CONNECTION_CLOSE.
    Close,
    Nothing,
}

/// Walks a 1-RTT payload's frames (RFC 9000, 19, and the ACK frequency extension's) to the
/// first STREAM frame on a request stream, or a CONNECTION_CLOSE; any other frame type ends
/// the walk.
fn application_frames(mut payload: &[u8]) -> Application {
    fn skip(payload: &[u8], varints: usize) -> Option<&[u8]> {
        let mut rest = payload;
        for _ in 0..varints {
            rest = varint(rest)?.1;
        }
        Some(rest)
    }
    fn with_bytes(payload: &[u8], varints_before: usize) -> Option<&[u8]> {
        let rest = skip(payload, varints_before)?;
        let (length, rest) = varint(rest)?;
        rest.get(usize::try_from(length).ok()?..)
    }
    while let Some((kind, rest)) = varint(payload) {
        let next = match kind {
            // PADDING, PING, HANDSHAKE_DONE, and IMMEDIATE_ACK (the ACK frequency extension,
            // which quinn speaks).
            0x00 | 0x01 | 0x1e | 0x1f => Some(rest),
            // ACK_FREQUENCY: sequence, threshold, maximum delay, reordering threshold.
            0xaf => skip(rest, 4),
            0x02 | 0x03 => skip_ack(rest, kind == 0x03),
            0x04 => skip(rest, 3),
            0x05 | 0x11 | 0x15 => skip(rest, 2),
            0x06 => with_bytes(rest, 1),
            0x07 => with_bytes(rest, 0),
            0x10 | 0x12 | 0x13 | 0x14 | 0x16 | 0x17 | 0x19 => skip(rest, 1),
            0x18 => (|| {
                let rest = skip(rest, 2)?;
                let length = usize::from(*rest.first()?);
                rest.get(1 + length + 16..)
            })(),
            0x1a | 0x1b => rest.get(8..),
            0x1c | 0x1d => return Application::Close,
            0x08..=0x0f => {
                let Some((stream, _)) = varint(rest) else {
                    return Application::Nothing;
                };
                if stream % 4 == 0 {
                    return Application::Response;
                }
                (|| {
                    let mut rest = skip(rest, 1)?;
                    if kind & 0x04 != 0 {
                        rest = skip(rest, 1)?;
                    }
                    if kind & 0x02 != 0 {
                        let (length, after) = varint(rest)?;
                        after.get(usize::try_from(length).ok()?..)
                    } else {
                        Some(&rest[rest.len()..])
                    }
                })()
            }
            _ => None,
        };
        match next {
            Some(rest) => payload = rest,
            None => break,
        }
    }
    Application::Nothing
}

/// One direction's CRYPTO stream in the Initial space, put back in order.
#[derive(Debug, Default)]
struct CryptoStream {
    /// The next offset owed to the TLS reader.
    next: u64,
    /// Data beyond it, by offset, with its packet's time.
    waiting: BTreeMap<u64, (Vec<u8>, u64)>,
    /// Data received again (a retransmitted Initial).
    repeated: u64,
}

impl CryptoStream {
    /// Takes `data` at `offset`; hands every byte now in order to `deliver`.
    fn push(&mut self, offset: u64, data: &[u8], at: u64, deliver: &mut impl FnMut(&[u8], u64)) {
        let end = offset.saturating_add(data.len() as u64);
        if end <= self.next {
            self.repeated += 1;
            return;
        }
        // Bounded: a handshake's CRYPTO data is some kilobytes; more is not a handshake.
        if self.waiting.len() < 256 {
            self.waiting.insert(offset, (data.to_vec(), at));
        }
        while let Some((&offset, _)) = self.waiting.first_key_value() {
            if offset > self.next {
                break;
            }
            let Some((_, (data, at))) = self.waiting.pop_first() else {
                break;
            };
            let skip = usize::try_from(self.next - offset).unwrap_or(usize::MAX);
            if let Some(fresh) = data.get(skip..).filter(|fresh| !fresh.is_empty()) {
                deliver(fresh, at);
                self.next += fresh.len() as u64;
            }
        }
    }
}

/// A QUIC connection whose handshake is in progress.
#[derive(Debug)]
struct Open {
    client: SocketAddr,
    server: SocketAddr,
    version: u32,
    first_packet: u64,
    keys: (Keys, Keys),
    /// The Handshake space's keys, from a key log: client's, server's.
    handshake_keys: Option<(Keys, Keys)>,
    /// The 1-RTT keys of the same secrets, to find the response's first byte.
    traffic_keys: Option<(Keys, Keys)>,
    /// The connection IDs each side chose for itself (short headers carry the receiver's).
    client_id_length: Option<usize>,
    server_id_length: Option<usize>,
    /// Either side closed the connection in a 1-RTT packet.
    closed: bool,
    key_log: Option<Arc<KeyLog>>,
    /// By space and direction: Initial to the server, to the client, Handshake, 1-RTT.
    largest: [Option<u64>; 6],
    crypto: [CryptoStream; 4],
    handshake: Handshake,
    /// The server's Finished was read: its flight's bytes are counted.
    flight_counted: bool,
    /// The server's latest Handshake packet, while its flight lasts, and its bytes so far.
    last_server_handshake: Option<u64>,
    server_bytes_at_last_handshake: u64,
    /// UDP payload bytes each way, until the handshake was done.
    bytes_to_server: u64,
    bytes_to_client: u64,
    /// The server answered: client datagrams before then were its first flight.
    server_answered: bool,
    /// A Retry came: the client's next Initial sets new keys.
    retried: bool,
    /// Why the server ended the handshake early.
    failure: Option<(tlslab_core::ErrorClass, String)>,
    alert: Option<u8>,
}

#[derive(Debug)]
enum State {
    Open(Box<Open>),
    /// Its handshake was handed on; later packets are ignored until it idles out.
    Finished,
}

#[derive(Debug)]
struct Flow {
    state: State,
    last_packet: u64,
    source: usize,
}

/// QUIC connections in progress, keyed by their two addresses.
#[derive(Debug, Default)]
pub struct QuicFlows {
    table: HashMap<(SocketAddr, SocketAddr), Flow, foldhash::fast::RandomState>,
    /// Connections seen (a client Initial opened them).
    pub connections: u64,
    /// Handshakes still in progress when the capture ended.
    pub unfinished: u64,
    /// Secrets to open Handshake packets with, when a key log was given.
    pub keys: Option<Arc<KeyLog>>,
}

fn pair(a: SocketAddr, b: SocketAddr) -> (SocketAddr, SocketAddr) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl QuicFlows {
    /// One UDP datagram; a connection whose handshake is over goes to `emit`.
    pub fn datagram(
        &mut self,
        source: usize,
        at: u64,
        from: SocketAddr,
        to: SocketAddr,
        payload: &[u8],
        emit: &mut impl FnMut(Connection),
    ) {
        let key = pair(from, to);
        if !self.table.contains_key(&key) {
            let Some(open) = opening(at, from, to, payload, self.keys.clone()) else {
                return;
            };
            self.connections += 1;
            self.table.insert(
                key,
                Flow {
                    state: State::Open(Box::new(open)),
                    last_packet: at,
                    source,
                },
            );
        }
        let Some(flow) = self.table.get_mut(&key) else {
            return;
        };
        flow.last_packet = at;
        let State::Open(open) = &mut flow.state else {
            return;
        };
        open.datagram(at, from, payload);
        if open.ready() || open.failure.is_some() {
            let State::Open(open) = std::mem::replace(&mut flow.state, State::Finished) else {
                return;
            };
            let ending = if open.handshake.done() {
                Ending::Done
            } else {
                Ending::Closed { by_server: true }
            };
            emit(open.connection(ending, flow.source));
        }
    }

    /// Connections silent for a minute of capture time are handed on as timed out.
    pub fn sweep(&mut self, now: u64, emit: &mut impl FnMut(Connection)) {
        let idle: Vec<_> = self
            .table
            .iter()
            .filter(|(_, flow)| flow.last_packet.saturating_add(IDLE_TIMEOUT_NS) < now)
            .map(|(key, _)| *key)
            .collect();
        for key in idle {
            if let Some(Flow {
                state: State::Open(open),
                source,
                ..
            }) = self.table.remove(&key)
            {
                // A handshake that was over waited for a response that never came; one the
                // server answered and that then showed nothing for a minute is one the
                // capture lacks the rest of (a QUIC client gives up and stops well before).
                let ending = if open.handshake.done() {
                    Ending::Done
                } else if open.handshake.server_hello.is_some() {
                    Ending::Unseen(Unseen::Silent)
                } else {
                    Ending::Timeout
                };
                emit(open.connection(ending, source));
            }
        }
    }

    /// The capture ended: completed handshakes still waiting for a response are handed
    /// on, and so are handshakes in progress (as incomplete: a first flight the capture
    /// shows no answer to is one); a client Initial without a whole ClientHello is counted.
    pub fn finish(&mut self, emit: &mut impl FnMut(Connection)) {
        for (_, flow) in std::mem::take(&mut self.table) {
            if let State::Open(open) = flow.state {
                if open.handshake.done() {
                    emit(open.connection(Ending::Done, flow.source));
                } else if open.handshake.client_hello.is_some() {
                    emit(open.connection(Ending::Unseen(Unseen::CaptureEnded), flow.source));
                } else {
                    self.unfinished += 1;
                }
            }
        }
    }
}

/// A connection opened by a client's first Initial: a long datagram whose first packet is
/// an Initial that the keys of its own Destination Connection ID open.
fn opening(
    at: u64,
    from: SocketAddr,
    to: SocketAddr,
    payload: &[u8],
    key_log: Option<Arc<KeyLog>>,
) -> Option<Open> {
    if payload.len() < CLIENT_INITIAL_MINIMUM {
        return None;
    }
    let header = long_header(payload)?;
    if header.kind != PacketType::Initial || !matches!(header.version, VERSION_1 | VERSION_2) {
        return None;
    }
    let keys = initial_keys(header.version, header.destination)?;
    keys.0.open(&header, None)?;
    Some(Open {
        client: from,
        server: to,
        version: header.version,
        first_packet: at,
        keys,
        handshake_keys: None,
        traffic_keys: None,
        client_id_length: Some(header.source.len()),
        server_id_length: None,
        closed: false,
        key_log,
        largest: [None; 6],
        crypto: Default::default(),
        handshake: Handshake::default(),
        flight_counted: false,
        last_server_handshake: None,
        server_bytes_at_last_handshake: 0,
        bytes_to_server: 0,
        bytes_to_client: 0,
        server_answered: false,
        retried: false,
        failure: None,
        alert: None,
    })
}

impl Open {
    fn datagram(&mut self, at: u64, from: SocketAddr, datagram: &[u8]) {
        let to_server = from == self.client;
        let size = datagram.len() as u64;
        if !self.handshake.done() {
            if to_server {
                self.bytes_to_server += size;
                if !self.server_answered {
                    self.handshake.client_hello_bytes += size;
                }
            } else {
                self.bytes_to_client += size;
                self.server_answered = true;
            }
        }
        let mut rest = datagram;
        // Coalesced packets (RFC 9000, 12.2) follow each other; a short header takes the rest.
        while let Some(header) = long_header(rest) {
            rest = &rest[header.packet.len()..];
            if to_server {
                self.client_id_length.get_or_insert(header.source.len());
            } else {
                self.server_id_length.get_or_insert(header.source.len());
            }
            self.packet(at, to_server, &header);
        }
        if !rest.is_empty() && self.traffic_keys.is_some() {
            self.one_rtt(at, to_server, rest);
        }
    }

    /// Whether the connection can be handed on: its handshake is over and, when 1-RTT
    /// packets can be read, the response's first byte came or the connection closed.
    fn ready(&self) -> bool {
        self.handshake.done()
            && (self.traffic_keys.is_none()
                || self.handshake.times.first_response_byte.is_some()
                || self.closed)
    }

    /// A short-header (1-RTT) packet, opened with the traffic keys: the server's first
    /// STREAM frame on a request stream is the response's first byte; a CONNECTION_CLOSE
    /// ends the wait for one.
    fn one_rtt(&mut self, at: u64, to_server: bool, packet: &[u8]) {
        let (Some((client, server)), Some(client_id), Some(server_id)) = (
            &self.traffic_keys,
            self.client_id_length,
            self.server_id_length,
        ) else {
            return;
        };
        // The receiver's connection ID follows the first byte.
        let destination_length = if to_server { server_id } else { client_id };
        let header = LongHeader {
            version: self.version,
            kind: PacketType::Handshake,
            destination: &[],
            source: &[],
            number_offset: 1 + destination_length,
            length: packet.len().saturating_sub(1 + destination_length) as u64,
            packet,
        };
        let index = 4 + usize::from(!to_server);
        let keys = if to_server { client } else { server };
        let Some((number, payload)) = keys.open(&header, self.largest[index]) else {
            return;
        };
        self.largest[index] =
            Some(self.largest[index].map_or(number, |largest| largest.max(number)));
        match application_frames(&payload) {
            Application::Response if !to_server => {
                self.handshake.times.first_response_byte.get_or_insert(at);
            }
            Application::Close => self.closed = true,
            _ => {}
        }
    }

    fn packet(&mut self, at: u64, to_server: bool, header: &LongHeader<'_>) {
        if header.version == 0 {
            if !to_server {
                self.failure = Some((
                    tlslab_core::ErrorClass::Protocol,
                    "version negotiation: the server does not speak this QUIC version".into(),
                ));
            }
            return;
        }
        match (header.kind, to_server) {
            (PacketType::Retry, false) => self.retried = true,
            (PacketType::Initial, true) => {
                if std::mem::take(&mut self.retried) {
                    // After a Retry the client writes to the server's new connection ID,
                    // and both sides' Initial keys come from it.
                    if let Some(keys) = initial_keys(header.version, header.destination) {
                        self.keys = keys;
                        self.largest = [None; 6];
                        self.crypto = Default::default();
                    }
                }
                self.initial(at, Direction::ToServer, header);
            }
            (PacketType::Initial, false) => self.initial(at, Direction::ToClient, header),
            (PacketType::ZeroRtt, true) if self.handshake.server_hello.is_none() => {
                self.handshake.early_data_sent = true;
            }
            (PacketType::Handshake, _) if self.handshake_keys.is_some() => {
                let direction = if to_server {
                    Direction::ToServer
                } else {
                    Direction::ToClient
                };
                self.handshake_packet(at, direction, header);
            }
            (PacketType::Handshake, false) if self.handshake.times.client_finished.is_none() => {
                self.last_server_handshake = Some(at);
                self.server_bytes_at_last_handshake = self.bytes_to_client;
            }
            (PacketType::Handshake, true) => {
                let times = &mut self.handshake.times;
                if header.length >= FINISHED_PACKET_MINIMUM
                    && times.client_finished.is_none()
                    && self.handshake.server_hello.is_some()
                {
                    // The server's flight is what it sent in the Handshake space until now.
                    if let Some(end) = self.last_server_handshake {
                        times.server_flight_end = Some(end);
                        self.handshake.server_flight_bytes =
                            Some(self.server_bytes_at_last_handshake);
                    }
                    times.client_finished = Some(at);
                    times.done = Some(at);
                }
            }
            _ => {}
        }
    }

    /// With the key log's secrets for this handshake, once the ServerHello named the suite:
    /// the Handshake space's keys.
    fn find_handshake_keys(&mut self) {
        let (Some(log), Some(hello), Some(server)) = (
            &self.key_log,
            &self.handshake.client_hello,
            &self.handshake.server_hello,
        ) else {
            return;
        };
        let Some(secrets) = log.secrets(&hello.random) else {
            return;
        };
        let keys = |secret: &Option<Vec<u8>>| {
            secret
                .as_deref()
                .and_then(|secret| Keys::from_secret(self.version, server.suite, secret))
        };
        if let (Some(client), Some(server)) = (
            keys(&secrets.client_handshake),
            keys(&secrets.server_handshake),
        ) {
            self.handshake_keys = Some((client, server));
            self.handshake.decrypting = true;
        }
        if let (Some(client), Some(server)) =
            (keys(&secrets.client_traffic), keys(&secrets.server_traffic))
        {
            self.traffic_keys = Some((client, server));
        }
        // Tried once: the secrets do not change.
        self.key_log = None;
    }

    /// A Handshake packet opened with the key log's keys: its CRYPTO frames carry the
    /// encrypted part of the handshake, read as over TCP.
    fn handshake_packet(&mut self, at: u64, direction: Direction, header: &LongHeader<'_>) {
        let Some((client, server)) = &self.handshake_keys else {
            return;
        };
        let index = 2 + usize::from(direction == Direction::ToClient);
        let keys = if direction == Direction::ToServer {
            client
        } else {
            server
        };
        let Some((number, payload)) = keys.open(header, self.largest[index]) else {
            return;
        };
        self.largest[index] =
            Some(self.largest[index].map_or(number, |largest| largest.max(number)));
        let handshake = &mut self.handshake;
        for (offset, data) in frames(&payload).crypto {
            self.crypto[index].push(offset, data, at, &mut |bytes, at| {
                handshake.protected_crypto(direction, bytes, at)
            });
        }
        // The flight's bytes are the datagrams' (the TLS reader counts records, which QUIC
        // has none of).
        if handshake.times.server_flight_end.is_some() && !self.flight_counted {
            self.flight_counted = true;
            handshake.server_flight_bytes = Some(self.bytes_to_client);
        }
    }

    fn initial(&mut self, at: u64, direction: Direction, header: &LongHeader<'_>) {
        let index = usize::from(direction == Direction::ToClient);
        let keys = if index == 0 {
            &self.keys.0
        } else {
            &self.keys.1
        };
        let Some((number, payload)) = keys.open(header, self.largest[index]) else {
            return;
        };
        self.largest[index] =
            Some(self.largest[index].map_or(number, |largest| largest.max(number)));
        let found = frames(&payload);
        let handshake = &mut self.handshake;
        for (offset, data) in found.crypto {
            self.crypto[index].push(offset, data, at, &mut |bytes, at| {
                handshake.crypto(direction, bytes, at)
            });
        }
        if self.key_log.is_some() && self.handshake.server_hello.is_some() {
            self.find_handshake_keys();
        }
        if let (Some(code), Direction::ToClient) = (found.close, direction) {
            self.failure = Some(if CRYPTO_ERROR.contains(&code) {
                let alert = (code - CRYPTO_ERROR.start) as u8;
                self.alert = Some(alert);
                (
                    tlslab_core::ErrorClass::Alert,
                    format!(
                        "{} alert from the server",
                        tls_parser::TlsAlertDescription(alert)
                    ),
                )
            } else {
                (
                    tlslab_core::ErrorClass::Protocol,
                    format!("the server closed the connection: QUIC error 0x{code:x}"),
                )
            });
        }
    }

    fn connection(self: Box<Self>, ending: Ending, source: usize) -> Connection {
        let mut open = *self;
        open.handshake.bytes_to_server = open.bytes_to_server;
        open.handshake.bytes_to_client = open.bytes_to_client;
        if let Some(description) = open.alert {
            open.handshake.alert = Some(crate::tls::Alert {
                from_server: true,
                level: 2,
                description,
            });
        }
        Connection {
            client: open.client,
            server: open.server,
            syn: None,
            syn_ack: None,
            ack: None,
            first_packet: open.first_packet,
            handshake: open.handshake,
            ending,
            retransmissions: open.crypto[0].repeated + open.crypto[1].repeated,
            missing_bytes: 0,
            source,
            transport: if open.version == VERSION_2 {
                "quic-v2"
            } else {
                "quic"
            },
            failure: open.failure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text
            .bytes()
            .filter(u8::is_ascii_hexdigit)
            .map(|digit| (digit as char).to_digit(16).unwrap() as u8)
            .collect();
        digits
            .chunks(2)
            .map(|pair| pair[0] << 4 | pair[1])
            .collect()
    }

    /// RFC 9001, A.3: the server's Initial packet, opened with keys from the client's
    /// Destination Connection ID 0x8394c8f03e515708, carries an ACK and the ServerHello.
    #[test]
    fn the_rfc_9001_server_initial_opens_to_its_server_hello() {
        let packet = hex(
            "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a
             5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3
             dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84
             022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4
             2158407dd074ee",
        );
        let (_, server) = initial_keys(VERSION_1, &hex("8394c8f03e515708")).unwrap();
        let header = long_header(&packet).unwrap();
        assert_eq!(header.kind, PacketType::Initial);
        // The server writes to the client's (empty) connection ID.
        assert!(header.destination.is_empty());
        let (number, payload) = server.open(&header, None).unwrap();
        assert_eq!(number, 1);
        let found = frames(&payload);
        assert_eq!(found.crypto.len(), 1);
        let (offset, hello) = found.crypto[0];
        assert_eq!(offset, 0);
        assert_eq!(&hello[..6], &hex("020000560303")[..]);
        let mut handshake = Handshake::default();
        handshake.crypto(Direction::ToClient, hello, 7);
        let server_hello = handshake.server_hello.as_ref().unwrap();
        assert_eq!((server_hello.version, server_hello.suite), (0x0304, 0x1301));
        assert_eq!(handshake.group().as_deref(), Some("x25519"));
        assert_eq!(handshake.times.server_hello, Some(7));
    }

    /// RFC 9001, A.5: ChaCha20-Poly1305 and its header protection, on a 1-RTT packet.
    #[test]
    fn the_rfc_9001_chacha20_packet_opens() {
        let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
        let keys = Keys::from_secret(VERSION_1, 0x1303, &secret).unwrap();
        let packet = hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
        let header = LongHeader {
            version: VERSION_1,
            kind: PacketType::Handshake,
            destination: &[],
            source: &[],
            number_offset: 1,
            length: 20,
            packet: &packet,
        };
        let (number, payload) = keys.open(&header, Some(654_360_563)).unwrap();
        assert_eq!(number, 654_360_564);
        assert_eq!(payload, [0x01]);
    }

    #[test]
    fn packet_numbers_are_recovered_near_the_expected_one() {
        // RFC 9000, A.3's example.
        assert_eq!(packet_number(Some(0xa82f30ea), 0x9b32, 16), 0xa82f9b32);
        assert_eq!(packet_number(None, 0, 8), 0);
        assert_eq!(packet_number(Some(255), 1, 8), 257);
    }

    #[test]
    fn crypto_data_is_delivered_in_order_once() {
        let mut stream = CryptoStream::default();
        let mut delivered = Vec::new();
        let mut deliver = |bytes: &[u8], at: u64| delivered.push((bytes.to_vec(), at));
        stream.push(3, b"def", 2, &mut deliver);
        stream.push(0, b"abc", 1, &mut deliver);
        stream.push(0, b"abcd", 3, &mut deliver);
        stream.push(2, b"cdefg", 4, &mut deliver);
        assert_eq!(
            delivered,
            vec![
                (b"abc".to_vec(), 1),
                (b"def".to_vec(), 2),
                (b"g".to_vec(), 4)
            ]
        );
        assert_eq!(stream.repeated, 1);
    }

    #[test]
    fn datagrams_that_are_not_quic_open_nothing() {
        let mut flows = QuicFlows::default();
        let client: SocketAddr = "10.0.0.1:5353".parse().unwrap();
        let server: SocketAddr = "10.0.0.2:443".parse().unwrap();
        let mut emitted = 0;
        for datagram in [
            vec![0u8; 1300],
            vec![0xc0; 1300],
            [0xc0, 0, 0, 0, 1, 255].repeat(300),
            vec![0xc0, 0, 0, 0, 1],
        ] {
            flows.datagram(0, 1, client, server, &datagram, &mut |_| emitted += 1);
        }
        assert_eq!((flows.connections, emitted), (0, 0));
    }
}
