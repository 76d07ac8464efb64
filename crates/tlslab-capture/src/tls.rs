//! A TLS handshake seen from the wire: records and handshake messages of both directions,
//! in capture order, turned into the events of the phase model and what was negotiated.
//!
//! Without keys a capture sees TLS 1.2's handshake in the clear up to the ChangeCipherSpecs,
//! and TLS 1.3's only up to the ServerHello: the rest of the server's flight and the
//! client's Finished are application-data records whose boundaries still tell when each
//! flight ended. What cannot be seen stays `None`: TLS 1.3's signature scheme, ALPN and
//! 0-RTT acceptance (all in encrypted messages), the time of the first response byte in TLS
//! 1.3 (a NewSessionTicket looks like response bytes), and when the client verified the
//! certificate (inside the client, at any vantage).

use std::sync::Arc;

use tls_parser::{
    parse_ecdh_params, parse_tls_client_hello_extensions, parse_tls_extensions,
    parse_tls_handshake_client_hello, parse_tls_handshake_server_hello,
    parse_tls_server_hello_extensions, TlsExtension,
};

use crate::keys::{KeyLog, Protection};
use crate::timed::TimedBuffer;

const CHANGE_CIPHER_SPEC: u8 = 20;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;

const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;
const NEW_SESSION_TICKET: u8 = 4;
const ENCRYPTED_EXTENSIONS: u8 = 8;
const CERTIFICATE: u8 = 11;
const CERTIFICATE_VERIFY: u8 = 15;
const FINISHED: u8 = 20;
const SERVER_KEY_EXCHANGE: u8 = 12;
const SERVER_HELLO_DONE: u8 = 14;

/// The largest record TLS allows on the wire (2^14 plus TLS 1.2's expansion limit): a longer
/// length is not TLS, or not the start of a record.
const MAX_RECORD: usize = (1 << 14) + 2048;

/// The start of every RFC 7919 finite-field prime, to name a TLS 1.2 DHE group.
const FFDHE_PRIME_START: [u8; 16] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xad, 0xf8, 0x54, 0x58, 0xa2, 0xbb, 0x4a, 0x9a,
];

/// Extension code points tls-parser does not name.
const ENCRYPTED_CLIENT_HELLO: u16 = 0xfe0d;

/// Which way bytes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    ToServer,
    ToClient,
}

/// What the ClientHello offered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// Names the handshake's secrets in a key log.
    pub random: Vec<u8>,
    pub server_name: Option<String>,
    /// A session to resume: a pre-shared key (TLS 1.3) or a non-empty session ticket.
    pub offers_session: bool,
    pub offers_early_data: bool,
    pub offers_ech: bool,
    pub alpn: Vec<String>,
    /// Code points as listed, GREASE left out: versions (supported_versions, or the legacy
    /// field), suites and groups.
    pub versions: Vec<u16>,
    pub suites: Vec<u16>,
    pub groups: Vec<u16>,
    /// The key shares sent: group and key size in bytes.
    pub key_shares: Vec<(u16, u16)>,
}

/// GREASE code points (RFC 8701): 0x?A?A with both bytes equal.
fn grease(code_point: u16) -> bool {
    code_point & 0x0f0f == 0x0a0a && code_point >> 8 == code_point & 0xff
}

/// The entries of a ClientHello's key_share extension: group and key size.
fn key_shares(body: &[u8]) -> Vec<(u16, u16)> {
    let mut shares = Vec::new();
    let mut rest = body.get(2..).unwrap_or_default();
    while let [g0, g1, l0, l1, after @ ..] = rest {
        let group = u16::from_be_bytes([*g0, *g1]);
        let length = u16::from_be_bytes([*l0, *l1]);
        if !grease(group) {
            shares.push((group, length));
        }
        rest = after.get(usize::from(length)..).unwrap_or_default();
    }
    shares
}

/// What the server chose.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerHello {
    /// The protocol version code point (supported_versions when present).
    pub version: u16,
    pub suite: u16,
    /// TLS 1.3: the key share's group.
    pub group: Option<u16>,
    pub resumed: bool,
    pub alpn: Option<String>,
}

/// A fatal or warning alert seen in the clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alert {
    pub from_server: bool,
    pub level: u8,
    pub description: u8,
}

/// Capture times of the handshake's events, in nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Times {
    pub client_hello: Option<u64>,
    pub server_hello: Option<u64>,
    pub server_flight_end: Option<u64>,
    pub client_finished: Option<u64>,
    pub done: Option<u64>,
    pub first_response_byte: Option<u64>,
}

/// One side's framing state.
#[derive(Debug, Default)]
struct Side {
    records: TimedBuffer,
    messages: TimedBuffer,
    /// Handshake messages decrypted from TLS 1.3 records.
    protected_messages: TimedBuffer,
    /// The keys this side's TLS 1.3 records may be sealed under, in the order they come
    /// into use, and the one in use.
    protections: Vec<Protection>,
    current_protection: usize,
    /// Application-data records before the ServerHello (0-RTT).
    records_before_hello: u64,
    /// Records after this side's ChangeCipherSpec (TLS 1.2) are encrypted.
    encrypting: bool,
    /// Bytes that are not TLS records (or lost the record boundaries): stop reading.
    broken: bool,
    /// Record bytes seen (headers included).
    bytes: u64,
}

/// The handshake of one connection, fed both directions in capture order.
#[derive(Debug, Default)]
pub struct Handshake {
    client: Side,
    server: Side,
    /// Secrets to decrypt TLS 1.3 with, when a key log was given.
    keys: Option<Arc<KeyLog>>,
    /// Whether this handshake's secrets were found: its encrypted messages are read.
    pub decrypting: bool,
    /// The server's EncryptedExtensions took the early data (read only when decrypting).
    early_data_accepted: bool,
    /// Whether the server accepted the Encrypted ClientHello the client offered: known only
    /// with a key log (`Some(true)` when the secrets that open the server's flight are not
    /// those of the outer ClientHello's random, `Some(false)` when they are).
    pub ech_accepted: Option<bool>,
    /// ECH was offered and the key log has no secrets for the outer ClientHello: the
    /// server's first encrypted record is tried against every secret in it.
    ech_search: bool,
    pub client_hello: Option<ClientHello>,
    pub server_hello: Option<ServerHello>,
    pub hello_retry: bool,
    /// TLS 1.2's ServerKeyExchange: the group and the signature scheme.
    group_12: Option<String>,
    pub signature_scheme: Option<u16>,
    saw_certificate: bool,
    pub times: Times,
    /// End of the latest server record, while the server's flight lasts.
    last_server_record_end: Option<u64>,
    /// TLS 1.2: the server's Finished (after its ChangeCipherSpec) arrived.
    server_finished: Option<u64>,
    pub alert: Option<Alert>,
    /// The client wrote application data before the ServerHello: 0-RTT.
    pub early_data_sent: bool,
    /// Bytes of the ClientHello records, and server bytes until its flight ended.
    pub client_hello_bytes: u64,
    pub server_flight_bytes: Option<u64>,
    /// Bytes each way until the handshake was done.
    pub bytes_to_server: u64,
    pub bytes_to_client: u64,
}

impl Side {
    /// Opens a TLS 1.3 record with the key in use or a later one (which then is in use).
    fn open(&mut self, header: &[u8; 5], payload: &[u8]) -> Option<(u8, Vec<u8>)> {
        let current = self.current_protection;
        for (index, protection) in self.protections.iter_mut().enumerate().skip(current) {
            if let Some(opened) = protection.open(header, payload) {
                self.current_protection = index;
                return Some(opened);
            }
        }
        None
    }
}

/// What the front of a stream's bytes holds.
enum Frame {
    /// A whole TLS record: its header, and its size with the header.
    Whole([u8; 5], usize),
    /// The start of one: more bytes are needed.
    Incomplete,
    /// Bytes that are not a TLS record.
    Broken,
}

/// The TLS record at the front of `bytes`.
fn record_frame(bytes: &[u8]) -> Frame {
    let Some(&[content_type, major, minor, high, low]) = bytes.get(..5) else {
        return Frame::Incomplete;
    };
    let length = usize::from(u16::from_be_bytes([high, low]));
    if !(CHANGE_CIPHER_SPEC..=24).contains(&content_type) || major != 3 || length > MAX_RECORD {
        return Frame::Broken;
    }
    if bytes.len() < 5 + length {
        return Frame::Incomplete;
    }
    Frame::Whole([content_type, major, minor, high, low], 5 + length)
}

/// The size (header included) of the handshake message at the front of `bytes`, when it is
/// all there.
fn message_size(bytes: &[u8]) -> Option<usize> {
    let header = bytes.get(..4)?;
    let length =
        (usize::from(header[1]) << 16) | (usize::from(header[2]) << 8) | usize::from(header[3]);
    (bytes.len() >= 4 + length).then_some(4 + length)
}

/// The complete handshake messages at the front of `buffer`: type, body, and the times of
/// their first and last byte.
fn messages(buffer: &mut TimedBuffer) -> Vec<(u8, Vec<u8>, u64, u64)> {
    // Only messages split across records come here (see `handshake_messages`); the
    // copies are few and small.
    let mut complete = Vec::new();
    while let Some(size) = message_size(buffer.available()) {
        let available = buffer.available();
        let body = available[4..size].to_vec();
        let (first, last) = buffer.times(0, size);
        complete.push((available[0], body, first, last));
        buffer.consume(size);
    }
    complete
}

impl Handshake {
    /// A handshake whose TLS 1.3 records are decrypted where `keys` holds its secrets.
    pub fn with_keys(keys: Option<Arc<KeyLog>>) -> Handshake {
        Handshake {
            keys,
            ..Handshake::default()
        }
    }

    /// Whether the response's first byte can be told from the rest: in the clear (TLS 1.2)
    /// or decrypted.
    pub fn can_see_response(&self) -> bool {
        self.version() != Some(0x0304) || self.decrypting
    }

    /// Whether the server took the early data: known only when the ClientHello offered it
    /// and its EncryptedExtensions were decrypted.
    pub fn early_data(&self) -> Option<bool> {
        let offered = self
            .client_hello
            .as_ref()
            .is_some_and(|hello| hello.offers_early_data);
        (offered && self.decrypting).then_some(self.early_data_accepted)
    }

    /// Sets up decryption once the ServerHello names the suite, if the key log holds this
    /// handshake's secrets.
    fn start_decrypting(&mut self) {
        let (Some(keys), Some(hello), Some(server)) =
            (&self.keys, &self.client_hello, &self.server_hello)
        else {
            return;
        };
        if server.version != 0x0304 {
            return;
        }
        let keys = Arc::clone(keys);
        let offers_ech = hello.offers_ech;
        match keys.secrets(&hello.random) {
            Some(secrets) => {
                if offers_ech {
                    self.ech_accepted = Some(false);
                }
                self.use_secrets(secrets);
            }
            None => self.ech_search = offers_ech,
        }
    }

    /// Decrypts this handshake's TLS 1.3 records with `secrets` from here on.
    fn use_secrets(&mut self, secrets: &crate::keys::Secrets) {
        let (Some(hello), Some(server)) = (&self.client_hello, &self.server_hello) else {
            return;
        };
        let protect = |secret: &Option<Vec<u8>>| {
            secret
                .as_deref()
                .and_then(|secret| Protection::new(server.suite, secret))
        };
        let mut client = Vec::new();
        if hello.offers_early_data {
            if let Some(mut early) = protect(&secrets.client_early) {
                // The 0-RTT records before the ServerHello went by undecrypted.
                early.skip(self.client.records_before_hello);
                client.push(early);
            }
        }
        client.extend(protect(&secrets.client_handshake));
        client.extend(protect(&secrets.client_traffic));
        let server: Vec<Protection> = [
            protect(&secrets.server_handshake),
            protect(&secrets.server_traffic),
        ]
        .into_iter()
        .flatten()
        .collect();
        if client.is_empty() && server.is_empty() {
            return;
        }
        self.client.protections = client;
        self.server.protections = server;
        self.decrypting = true;
    }

    /// ECH offered, the outer ClientHello's secrets not in the key log: the secrets that open
    /// the server's first encrypted record, if any, are the inner ClientHello's, so the
    /// server accepted ECH. Only that record is tried; none opening it leaves acceptance
    /// unknown (the key log lacks this handshake).
    fn search_inner_secrets(&mut self, header: &[u8; 5], payload: &[u8]) {
        self.ech_search = false;
        let (Some(keys), Some(server)) = (&self.keys, &self.server_hello) else {
            return;
        };
        let keys = Arc::clone(keys);
        if let Some(secrets) = keys.opening_server_record(server.suite, header, payload) {
            self.ech_accepted = Some(true);
            self.use_secrets(secrets);
        }
    }

    /// Stream bytes in order, with the capture time of the packet that carried them.
    pub fn push(&mut self, direction: Direction, bytes: &[u8], timestamp: u64) {
        let side = match direction {
            Direction::ToServer => &mut self.client,
            Direction::ToClient => &mut self.server,
        };
        if side.broken {
            return;
        }
        // The buffer is taken out while its records are handled, so each is read in place.
        let mut records = std::mem::take(&mut side.records);
        let mut rest = bytes;
        let mut broken = false;
        if records.available().is_empty() {
            // Nothing waits for more bytes (the common case: a segment holds whole records):
            // the segment's records are read where they are, and only an incomplete last
            // one is copied into the buffer. Every byte has the segment's time either way.
            records.clear();
            loop {
                match record_frame(rest) {
                    Frame::Whole(header, size) => {
                        self.framed_record(
                            direction,
                            &header,
                            &rest[5..size],
                            timestamp,
                            timestamp,
                        );
                        rest = &rest[size..];
                    }
                    Frame::Incomplete => break,
                    Frame::Broken => {
                        broken = true;
                        rest = &[];
                        break;
                    }
                }
            }
        }
        records.push(rest, timestamp, timestamp);
        while !broken {
            let available = records.available();
            match record_frame(available) {
                Frame::Whole(header, size) => {
                    let (first, last) = records.times(0, size);
                    self.framed_record(direction, &header, &available[5..size], first, last);
                    records.consume(size);
                }
                Frame::Incomplete => break,
                Frame::Broken => {
                    broken = true;
                    records.clear();
                }
            }
        }
        let side = match direction {
            Direction::ToServer => &mut self.client,
            Direction::ToClient => &mut self.server,
        };
        side.records = records;
        side.broken |= broken;
    }

    /// One whole record of `direction`'s stream, counted and read.
    fn framed_record(
        &mut self,
        direction: Direction,
        header: &[u8; 5],
        payload: &[u8],
        first: u64,
        last: u64,
    ) {
        match direction {
            Direction::ToServer => self.client.bytes += 5 + payload.len() as u64,
            Direction::ToClient => self.server.bytes += 5 + payload.len() as u64,
        }
        self.record(direction, header, payload, first, last);
    }

    /// Handshake messages from QUIC CRYPTO frames, in order, with their packet's time: the
    /// same reading as from TLS records, without the record layer.
    pub fn crypto(&mut self, direction: Direction, bytes: &[u8], at: u64) {
        self.handshake_messages(direction, bytes, at, at);
    }

    /// TLS 1.3's encrypted handshake messages, decrypted from QUIC Handshake packets.
    pub fn protected_crypto(&mut self, direction: Direction, bytes: &[u8], at: u64) {
        self.protected(direction, HANDSHAKE, bytes, at, at);
    }

    /// Whether the handshake is over, as far as a capture can tell.
    pub fn done(&self) -> bool {
        self.times.done.is_some()
    }

    /// Whether the server answered with something that is not TLS.
    pub fn server_not_tls(&self) -> bool {
        self.server.broken && self.server_hello.is_none()
    }

    /// Whether the client sent something that is not a TLS handshake.
    pub fn client_not_tls(&self) -> bool {
        self.client.broken && self.client_hello.is_none()
    }

    /// Whether the client's bytes so far are the start of a TLS handshake (a record not
    /// yet whole): a connection the capture ended in, with nothing to store.
    pub fn client_began(&self) -> bool {
        !self.client.broken
            && (self.client.bytes > 0 || !self.client.records.available().is_empty())
    }

    /// Whether the capture saw enough to tell if the server resumed: TLS 1.3's ServerHello
    /// says; TLS 1.2's server says with a Certificate (full) or its Finished (resumed).
    pub fn resumption_known(&self) -> bool {
        match &self.server_hello {
            Some(hello) if hello.version == 0x0304 => true,
            Some(_) => self.saw_certificate || self.server_finished.is_some(),
            None => false,
        }
    }

    /// The negotiated version's code point, once known.
    pub fn version(&self) -> Option<u16> {
        self.server_hello.as_ref().map(|hello| hello.version)
    }

    /// Whether the server resumed a session: TLS 1.3's ServerHello takes a pre-shared key;
    /// TLS 1.2's server sends its Finished without a Certificate.
    pub fn resumed(&self) -> bool {
        match &self.server_hello {
            Some(hello) if hello.version == 0x0304 => hello.resumed,
            Some(_) => self.server_finished.is_some() && !self.saw_certificate,
            None => false,
        }
    }

    fn is_tls13(&self) -> bool {
        self.version() == Some(0x0304)
    }

    /// The negotiated group: TLS 1.3's key share, or TLS 1.2's ServerKeyExchange.
    pub fn group(&self) -> Option<String> {
        let hello = self.server_hello.as_ref()?;
        match hello.group {
            Some(code_point) => Some(tlslab_core::names::group(code_point)),
            None => self.group_12.clone(),
        }
    }

    fn record(
        &mut self,
        direction: Direction,
        header: &[u8; 5],
        payload: &[u8],
        first: u64,
        last: u64,
    ) {
        let content_type = header[0];
        let size = 5 + payload.len();
        if content_type == APPLICATION_DATA && direction == Direction::ToClient && self.ech_search {
            self.search_inner_secrets(header, payload);
        }
        if content_type == APPLICATION_DATA && self.decrypting {
            let side = match direction {
                Direction::ToServer => &mut self.client,
                Direction::ToClient => &mut self.server,
            };
            if let Some((inner, content)) = side.open(header, payload) {
                self.count_bytes(direction, size);
                if direction == Direction::ToClient {
                    self.server_record(last);
                }
                self.protected(direction, inner, &content, first, last);
                return;
            }
        }
        self.count_bytes(direction, size);
        match (direction, content_type) {
            (_, ALERT) => self.alert(direction, payload),
            // TLS 1.3's ChangeCipherSpec is only for middleboxes: TLS 1.2's starts encryption.
            (_, CHANGE_CIPHER_SPEC) if self.server_hello.is_some() && !self.is_tls13() => {
                match direction {
                    Direction::ToServer => self.client.encrypting = true,
                    Direction::ToClient => self.server.encrypting = true,
                }
            }
            (Direction::ToServer, HANDSHAKE) if !self.client.encrypting => {
                if self.times.client_hello.is_none() || self.server_hello.is_none() {
                    self.client_hello_bytes += size as u64;
                }
                self.handshake_messages(direction, payload, first, last);
            }
            (Direction::ToServer, HANDSHAKE) => {
                // TLS 1.2: the encrypted Finished after the client's ChangeCipherSpec.
                self.client_finished(first);
            }
            (Direction::ToClient, HANDSHAKE) if !self.server.encrypting => {
                self.server_record(last);
                self.handshake_messages(direction, payload, first, last);
            }
            (Direction::ToClient, HANDSHAKE) => {
                // TLS 1.2: the server's encrypted Finished.
                self.server_record(last);
                if self.server_finished.is_none() {
                    self.server_finished = Some(last);
                    if !self.saw_certificate {
                        // Resumed: the server's flight ends with its Finished, and the
                        // client's Finished ends the handshake.
                        self.flight_ended(last);
                    } else if self.times.done.is_none() {
                        self.times.done = Some(last);
                    }
                }
            }
            (Direction::ToServer, APPLICATION_DATA) => {
                if self.server_hello.is_none() {
                    self.early_data_sent = true;
                    self.client.records_before_hello += 1;
                } else if self.is_tls13() {
                    // The client's first encrypted record after the ServerHello is its
                    // Finished (or EndOfEarlyData just before it).
                    self.client_finished(first);
                }
            }
            (Direction::ToClient, APPLICATION_DATA) => {
                if self.is_tls13() && self.times.client_finished.is_none() {
                    self.server_record(last);
                } else if !self.is_tls13() && self.times.done.is_some() {
                    self.times.first_response_byte.get_or_insert(first);
                }
            }
            _ => {}
        }
    }

    /// Record bytes until the handshake is done: what a sample reports as sent and received.
    fn count_bytes(&mut self, direction: Direction, size: usize) {
        if self.times.done.is_none() {
            match direction {
                Direction::ToServer => self.bytes_to_server += size as u64,
                Direction::ToClient => self.bytes_to_client += size as u64,
            }
        }
    }

    /// A server record of its first flight ended at `last`.
    fn server_record(&mut self, last: u64) {
        if self.times.client_finished.is_none() {
            self.last_server_record_end = Some(last);
        }
    }

    fn flight_ended(&mut self, at: u64) {
        if self.times.server_flight_end.is_none() {
            self.times.server_flight_end = Some(at);
            self.server_flight_bytes = Some(self.server.bytes);
        }
    }

    fn client_finished(&mut self, at: u64) {
        if self.times.client_finished.is_some() || self.server_hello.is_none() {
            return;
        }
        if self.is_tls13() {
            // Everything the server sent before the client's Finished was its flight.
            if let Some(end) = self.last_server_record_end {
                self.flight_ended(end);
            }
        }
        self.times.client_finished = Some(at);
        // TLS 1.3 and resumed TLS 1.2: the client may send data once its Finished is out.
        if self.is_tls13() || !self.saw_certificate {
            self.times.done.get_or_insert(at);
        }
    }

    fn alert(&mut self, direction: Direction, payload: &[u8]) {
        let side = match direction {
            Direction::ToServer => &self.client,
            Direction::ToClient => &self.server,
        };
        // An alert after TLS 1.2's ChangeCipherSpec is encrypted (TLS 1.3 sends encrypted
        // alerts as application data): only a two-byte plaintext alert can be read.
        if let (false, [level, description]) = (side.encrypting, payload) {
            self.alert.get_or_insert(Alert {
                from_server: direction == Direction::ToClient,
                level: *level,
                description: *description,
            });
        }
    }

    fn handshake_messages(&mut self, direction: Direction, payload: &[u8], first: u64, last: u64) {
        let side = match direction {
            Direction::ToServer => &mut self.client,
            Direction::ToClient => &mut self.server,
        };
        let mut rest = payload;
        if side.messages.available().is_empty() {
            // No message waits for more bytes: the record's whole messages are read in
            // place, with the record's times, as the buffer would give them.
            side.messages.clear();
            while let Some(size) = message_size(rest) {
                self.message(direction, rest[0], &rest[4..size], first, last);
                rest = &rest[size..];
            }
        }
        let side = match direction {
            Direction::ToServer => &mut self.client,
            Direction::ToClient => &mut self.server,
        };
        side.messages.push(rest, first, last);
        for (kind, body, first, last) in messages(&mut side.messages) {
            self.message(direction, kind, &body, first, last);
        }
    }

    /// A decrypted TLS 1.3 record's content.
    fn protected(
        &mut self,
        direction: Direction,
        inner: u8,
        content: &[u8],
        first: u64,
        last: u64,
    ) {
        match inner {
            HANDSHAKE => {
                let side = match direction {
                    Direction::ToServer => &mut self.client,
                    Direction::ToClient => &mut self.server,
                };
                side.protected_messages.push(content, first, last);
                for (kind, body, first, last) in messages(&mut side.protected_messages) {
                    self.protected_message(direction, kind, &body, first, last);
                }
            }
            // The server sends application data only under its traffic keys: a response,
            // perhaps before the client's Finished (an answer to 0-RTT data).
            APPLICATION_DATA if direction == Direction::ToClient => {
                self.times.first_response_byte.get_or_insert(first);
            }
            ALERT => self.alert(direction, content),
            _ => {}
        }
    }

    /// A handshake message only a key log lets a capture read.
    fn protected_message(
        &mut self,
        direction: Direction,
        kind: u8,
        body: &[u8],
        first: u64,
        last: u64,
    ) {
        match (direction, kind) {
            (Direction::ToClient, ENCRYPTED_EXTENSIONS) => {
                let extensions = body
                    .get(2..)
                    .and_then(|bytes| parse_tls_extensions(bytes).ok())
                    .map(|(_, extensions)| extensions)
                    .unwrap_or_default();
                for extension in &extensions {
                    match extension {
                        TlsExtension::ALPN(protocols) => {
                            if let Some(hello) = &mut self.server_hello {
                                hello.alpn = protocols
                                    .first()
                                    .map(|protocol| String::from_utf8_lossy(protocol).into_owned());
                            }
                        }
                        TlsExtension::EarlyData(_) => self.early_data_accepted = true,
                        _ => {}
                    }
                }
            }
            (Direction::ToClient, CERTIFICATE_VERIFY) => {
                self.signature_scheme = body.get(..2).map(|s| u16::from_be_bytes([s[0], s[1]]));
            }
            (Direction::ToClient, FINISHED) => self.flight_ended(last),
            (Direction::ToServer, FINISHED) => self.client_finished(first),
            _ => {}
        }
    }

    fn message(&mut self, direction: Direction, kind: u8, body: &[u8], first: u64, last: u64) {
        match (direction, kind) {
            (Direction::ToServer, CLIENT_HELLO) => {
                self.times.client_hello.get_or_insert(first);
                if self.client_hello.is_none() {
                    self.client_hello = client_hello(body);
                }
            }
            (Direction::ToClient, SERVER_HELLO) => {
                self.times.server_hello.get_or_insert(first);
                match server_hello(body) {
                    Some((_, true)) => self.hello_retry = true,
                    Some((hello, false)) => {
                        self.server_hello = Some(hello);
                        self.start_decrypting();
                    }
                    None => self.server.broken = true,
                }
            }
            (Direction::ToClient, CERTIFICATE) => self.saw_certificate = true,
            (Direction::ToClient, SERVER_KEY_EXCHANGE) => {
                let (group, scheme) = server_key_exchange(body);
                self.group_12 = group;
                self.signature_scheme = scheme;
            }
            (Direction::ToClient, SERVER_HELLO_DONE) => self.flight_ended(last),
            (Direction::ToClient, NEW_SESSION_TICKET) => {}
            _ => {}
        }
    }
}

fn client_hello(body: &[u8]) -> Option<ClientHello> {
    let (_, hello) = parse_tls_handshake_client_hello(body).ok()?;
    let mut facts = ClientHello {
        random: hello.random.to_vec(),
        versions: vec![hello.version.0],
        suites: hello
            .ciphers
            .iter()
            .map(|suite| suite.0)
            .filter(|&suite| !grease(suite))
            .collect(),
        ..ClientHello::default()
    };
    let extensions = hello
        .ext
        .and_then(|bytes| parse_tls_client_hello_extensions(bytes).ok())
        .map(|(_, extensions)| extensions)
        .unwrap_or_default();
    for extension in &extensions {
        match extension {
            TlsExtension::SNI(names) => {
                facts.server_name = names
                    .first()
                    .map(|(_, name)| String::from_utf8_lossy(name).into_owned());
            }
            TlsExtension::PreSharedKey(_) => facts.offers_session = true,
            TlsExtension::SessionTicket(ticket) if !ticket.is_empty() => {
                facts.offers_session = true
            }
            TlsExtension::EarlyData(_) => facts.offers_early_data = true,
            TlsExtension::SupportedVersions(versions) => {
                facts.versions = versions
                    .iter()
                    .map(|version| version.0)
                    .filter(|&version| !grease(version))
                    .collect();
            }
            TlsExtension::EllipticCurves(groups) => {
                facts.groups = groups
                    .iter()
                    .map(|group| group.0)
                    .filter(|&group| !grease(group))
                    .collect();
            }
            TlsExtension::KeyShare(body) => facts.key_shares = key_shares(body),
            TlsExtension::ALPN(protocols) => {
                facts.alpn = protocols
                    .iter()
                    .map(|protocol| String::from_utf8_lossy(protocol).into_owned())
                    .collect();
            }
            TlsExtension::Unknown(kind, _) if kind.0 == ENCRYPTED_CLIENT_HELLO => {
                facts.offers_ech = true
            }
            _ => {}
        }
    }
    Some(facts)
}

/// The ServerHello's facts, and whether it is a HelloRetryRequest.
fn server_hello(body: &[u8]) -> Option<(ServerHello, bool)> {
    let (_, hello) = parse_tls_handshake_server_hello(body).ok()?;
    let retry = hello.random == tlslab_core::names::HELLO_RETRY_RANDOM;
    let mut facts = ServerHello {
        version: hello.version.0,
        suite: hello.cipher.0,
        ..ServerHello::default()
    };
    let extensions = hello
        .ext
        .and_then(|bytes| parse_tls_server_hello_extensions(bytes).ok())
        .map(|(_, extensions)| extensions)
        .unwrap_or_default();
    for extension in &extensions {
        match extension {
            TlsExtension::SupportedVersions(versions) => {
                if let Some(version) = versions.first() {
                    facts.version = version.0;
                }
            }
            TlsExtension::KeyShare(share) => {
                facts.group = share
                    .get(..2)
                    .map(|group| u16::from_be_bytes([group[0], group[1]]));
            }
            TlsExtension::PreSharedKey(_) => facts.resumed = true,
            TlsExtension::ALPN(protocols) => {
                facts.alpn = protocols
                    .first()
                    .map(|protocol| String::from_utf8_lossy(protocol).into_owned());
            }
            _ => {}
        }
    }
    Some((facts, retry))
}

/// TLS 1.2's ServerKeyExchange: the group (an ECDHE named curve, or a DHE prime named by
/// its size) and the signature scheme.
fn server_key_exchange(body: &[u8]) -> (Option<String>, Option<u16>) {
    if let Ok((rest, params)) = parse_ecdh_params(body) {
        if let tls_parser::ECParametersContent::NamedGroup(group) =
            params.curve_params.params_content
        {
            let scheme = rest.get(..2).map(|s| u16::from_be_bytes([s[0], s[1]]));
            return (Some(tlslab_core::names::group(group.0)), scheme);
        }
    }
    if let Ok((rest, params)) = tls_parser::parse_dh_params(body) {
        let bits = params.dh_p.len() * 8;
        let name = if params.dh_p.starts_with(&FFDHE_PRIME_START) {
            format!("ffdhe{bits}")
        } else {
            format!("dhe{bits}")
        };
        let scheme = rest.get(..2).map(|s| u16::from_be_bytes([s[0], s[1]]));
        return (Some(name), scheme);
    }
    (None, None)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A TLS record of `content_type` holding `payload`.
    pub(crate) fn record(content_type: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![content_type, 3, 3];
        bytes.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    /// A handshake message of `kind` with `body`.
    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let length = body.len() as u32;
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&length.to_be_bytes()[1..]);
        bytes.extend_from_slice(body);
        bytes
    }

    /// The smallest ClientHello tls-parser reads: one suite, no extensions but the server
    /// name `lab`.
    pub(crate) fn client_hello() -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]); // random
        body.push(0); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]); // suites
        body.extend_from_slice(&[1, 0]); // compression
        let name = b"lab";
        let mut server_name = vec![0, (name.len() + 3) as u8, 0, 0, name.len() as u8];
        server_name.extend_from_slice(name);
        let mut extensions = vec![0, 0, 0, server_name.len() as u8];
        extensions.extend_from_slice(&server_name);
        body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
        body.extend_from_slice(&extensions);
        message(CLIENT_HELLO, &body)
    }

    /// A TLS 1.2 ServerHello without extensions (ECDHE-RSA-AES128-GCM-SHA256).
    pub(crate) fn server_hello() -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[9; 32]); // random
        body.push(0); // session id
        body.extend_from_slice(&[0xc0, 0x2f, 0]); // suite, compression
        message(2, &body)
    }

    #[test]
    fn a_client_hello_split_across_records_and_segments_is_read_once_whole() {
        let hello = client_hello();
        let (front, back) = hello.split_at(20);
        let mut bytes = record(HANDSHAKE, front);
        bytes.extend(record(HANDSHAKE, back));
        let mut handshake = Handshake::default();
        for (index, piece) in bytes.chunks(9).enumerate() {
            handshake.push(Direction::ToServer, piece, 100 + index as u64);
        }
        let facts = handshake.client_hello.clone().unwrap();
        assert_eq!(facts.server_name.as_deref(), Some("lab"));
        assert_eq!(facts.random, vec![7; 32]);
        // Its first byte came with the first segment.
        assert_eq!(handshake.times.client_hello, Some(100));
        assert_eq!(handshake.client_hello_bytes, bytes.len() as u64);
        assert!(!handshake.done());
    }

    #[test]
    fn a_plaintext_alert_is_named_and_a_non_tls_answer_is_told_apart() {
        let mut refused = Handshake::default();
        refused.push(Direction::ToServer, &record(HANDSHAKE, &client_hello()), 1);
        refused.push(Direction::ToClient, &record(ALERT, &[2, 40]), 2);
        assert_eq!(
            refused.alert,
            Some(Alert {
                from_server: true,
                level: 2,
                description: 40
            })
        );
        assert!(!refused.server_not_tls());

        let mut http = Handshake::default();
        http.push(Direction::ToServer, &record(HANDSHAKE, &client_hello()), 1);
        http.push(Direction::ToClient, b"HTTP/1.1 400 Bad Request\r\n\r\n", 2);
        assert!(http.server_not_tls());
        assert!(!http.client_not_tls());

        let mut not_tls = Handshake::default();
        not_tls.push(Direction::ToServer, b"GET / HTTP/1.1\r\n\r\n", 1);
        assert!(not_tls.client_not_tls());
    }
}
