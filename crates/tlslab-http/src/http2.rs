//! HTTP/2 (RFC 9113): the frames of one GET and its response, and incremental readers for
//! both sides.
//!
//! Neither side raises SETTINGS_MAX_FRAME_SIZE or SETTINGS_HEADER_TABLE_SIZE above their
//! defaults, so frames are at most 16,384 bytes and HPACK tables at most 4,096 bytes.
//! Flow control is handled by size rather than bookkeeping: the client's request opens its
//! windows to 2^31−1, and the server's encoder assumes the client did so.

use std::collections::VecDeque;

use crate::error::quote;
use crate::hpack::{self, index, Decoder, HeaderField};
use crate::{
    apply_response_fields, HttpError, Padding, Progress, ReceivedRequest, Request, PADDING_NAME,
};

/// What a client sends before anything else (RFC 9113 3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The largest stream identifier and flow-control window.
pub(crate) const MAX_STREAM: u32 = (1 << 31) - 1;
const MAX_WINDOW: u32 = (1 << 31) - 1;
const DEFAULT_WINDOW: u32 = 65_535;
const MAX_FRAME_SIZE: usize = 16_384;
const HEADER_TABLE_SIZE: usize = 4_096;
/// The longest header block accepted across HEADERS and CONTINUATION frames.
const HEADER_BLOCK_LIMIT: usize = 256 * 1024;
/// The client's one request is always on the first client-initiated stream.
const OUR_STREAM: u32 = 1;

mod kind {
    pub(super) const DATA: u8 = 0x0;
    pub(super) const HEADERS: u8 = 0x1;
    pub(super) const PRIORITY: u8 = 0x2;
    pub(super) const RST_STREAM: u8 = 0x3;
    pub(super) const SETTINGS: u8 = 0x4;
    pub(super) const PUSH_PROMISE: u8 = 0x5;
    pub(super) const PING: u8 = 0x6;
    pub(super) const GOAWAY: u8 = 0x7;
    pub(super) const WINDOW_UPDATE: u8 = 0x8;
    pub(super) const CONTINUATION: u8 = 0x9;
}

mod flag {
    pub(super) const END_STREAM: u8 = 0x1;
    pub(super) const ACK: u8 = 0x1;
    pub(super) const END_HEADERS: u8 = 0x4;
    pub(super) const PADDED: u8 = 0x8;
    pub(super) const PRIORITY: u8 = 0x20;
}

mod setting {
    pub(super) const ENABLE_PUSH: u16 = 0x2;
    pub(super) const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub(super) const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub(super) const MAX_FRAME_SIZE: u16 = 0x5;
}

fn frame_name(frame_type: u8) -> &'static str {
    match frame_type {
        kind::DATA => "DATA",
        kind::HEADERS => "HEADERS",
        kind::PRIORITY => "PRIORITY",
        kind::RST_STREAM => "RST_STREAM",
        kind::SETTINGS => "SETTINGS",
        kind::PUSH_PROMISE => "PUSH_PROMISE",
        kind::PING => "PING",
        kind::GOAWAY => "GOAWAY",
        kind::WINDOW_UPDATE => "WINDOW_UPDATE",
        kind::CONTINUATION => "CONTINUATION",
        _ => "unknown",
    }
}

fn error_code_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "unknown error code",
    }
}

fn write_frame(output: &mut Vec<u8>, frame_type: u8, flags: u8, stream: u32, payload: &[u8]) {
    output.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    output.push(frame_type);
    output.push(flags);
    output.extend_from_slice(&stream.to_be_bytes());
    output.extend_from_slice(payload);
}

/// HEADERS, then CONTINUATION frames if the block does not fit in one frame.
fn write_header_block(output: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool) {
    let mut fragments = block.chunks(MAX_FRAME_SIZE).peekable();
    let mut frame_type = kind::HEADERS;
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    while let Some(fragment) = fragments.next() {
        if fragments.peek().is_none() {
            flags |= flag::END_HEADERS;
        }
        write_frame(output, frame_type, flags, stream, fragment);
        frame_type = kind::CONTINUATION;
        flags = 0;
    }
}

fn settings_payload(settings: &[(u16, u32)]) -> Vec<u8> {
    settings
        .iter()
        .flat_map(|&(identifier, value)| {
            let mut entry = identifier.to_be_bytes().to_vec();
            entry.extend_from_slice(&value.to_be_bytes());
            entry
        })
        .collect()
}

pub(crate) fn encode_request(request: &Request, padding: Padding) -> Vec<u8> {
    let mut output = PREFACE.to_vec();
    let settings = settings_payload(&[
        (setting::ENABLE_PUSH, 0),
        (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
    ]);
    write_frame(&mut output, kind::SETTINGS, 0, 0, &settings);
    let increment = MAX_WINDOW - DEFAULT_WINDOW;
    write_frame(
        &mut output,
        kind::WINDOW_UPDATE,
        0,
        0,
        &increment.to_be_bytes(),
    );

    let mut block = Vec::with_capacity(64 + request.path.len() + padding.bytes);
    hpack::encode_indexed(&mut block, index::METHOD_GET);
    hpack::encode_indexed(&mut block, index::SCHEME_HTTPS);
    if request.path == "/" {
        hpack::encode_indexed(&mut block, index::PATH);
    } else {
        hpack::encode_literal_with_name_index(&mut block, index::PATH, request.path.as_bytes());
    }
    hpack::encode_literal_with_name_index(
        &mut block,
        index::AUTHORITY,
        request.authority.as_bytes(),
    );
    hpack::encode_literal_with_name_index(&mut block, index::USER_AGENT, b"tlslab");
    hpack::encode_literal_with_name_index(&mut block, index::ACCEPT, b"*/*");
    for length in padding.lengths() {
        hpack::encode_literal(&mut block, PADDING_NAME.as_bytes(), &vec![b'0'; length]);
    }
    write_header_block(&mut output, OUR_STREAM, &block, true);
    output
}

pub(crate) fn server_preface() -> Vec<u8> {
    let mut output = Vec::new();
    let settings = settings_payload(&[(setting::MAX_CONCURRENT_STREAMS, 100)]);
    write_frame(&mut output, kind::SETTINGS, 0, 0, &settings);
    output
}

pub(crate) fn encode_response(stream: u32, body_bytes: usize) -> Vec<u8> {
    static ZEROS: [u8; MAX_FRAME_SIZE] = [0; MAX_FRAME_SIZE];
    let frames = body_bytes.div_ceil(MAX_FRAME_SIZE);
    let mut output = Vec::with_capacity(64 + body_bytes + 9 * frames);
    let mut block = Vec::new();
    hpack::encode_indexed(&mut block, index::STATUS_200);
    hpack::encode_literal_with_name_index(
        &mut block,
        index::CONTENT_LENGTH,
        body_bytes.to_string().as_bytes(),
    );
    hpack::encode_literal_with_name_index(
        &mut block,
        index::CONTENT_TYPE,
        b"application/octet-stream",
    );
    write_header_block(&mut output, stream, &block, body_bytes == 0);
    let mut remaining = body_bytes;
    while remaining > 0 {
        let length = remaining.min(MAX_FRAME_SIZE);
        remaining -= length;
        let flags = if remaining == 0 { flag::END_STREAM } else { 0 };
        write_frame(&mut output, kind::DATA, flags, stream, &ZEROS[..length]);
    }
    output
}

#[derive(Debug, Clone, Copy)]
struct FrameHeader {
    length: usize,
    frame_type: u8,
    flags: u8,
    stream: u32,
}

impl FrameHeader {
    fn parse(bytes: &[u8; 9]) -> Self {
        FrameHeader {
            length: u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize,
            frame_type: bytes[3],
            flags: bytes[4],
            stream: u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & MAX_STREAM,
        }
    }

    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    fn name(&self) -> &'static str {
        frame_name(self.frame_type)
    }
}

/// What the framer reports, in order, for each frame.
enum Event<'a> {
    /// A frame header arrived; its payload may not have.
    Start(FrameHeader),
    /// A whole frame other than DATA.
    Frame(FrameHeader, &'a [u8]),
    /// Some of a DATA frame's data, padding removed: DATA is passed on as it arrives so that
    /// body bytes are counted when they are read, not when a 16 KB frame is complete.
    Data(FrameHeader, &'a [u8]),
    /// The end of a DATA frame.
    DataEnd(FrameHeader),
}

enum Stage {
    Header {
        bytes: [u8; 9],
        filled: usize,
    },
    Payload {
        header: FrameHeader,
        payload: Vec<u8>,
    },
    Data {
        header: FrameHeader,
        remaining: usize,
        padding: Option<usize>,
    },
}

/// Splits bytes into frames, whatever the pieces they arrive in.
struct Framer {
    /// "client" or "server", for messages.
    side: &'static str,
    stage: Stage,
}

impl Framer {
    fn new(side: &'static str) -> Self {
        Framer {
            side,
            stage: Stage::Header {
                bytes: [0; 9],
                filled: 0,
            },
        }
    }

    fn feed(
        &mut self,
        mut data: &[u8],
        handle: &mut dyn FnMut(Event<'_>) -> Result<(), HttpError>,
    ) -> Result<(), HttpError> {
        loop {
            match &mut self.stage {
                Stage::Header { bytes, filled } => {
                    if data.is_empty() {
                        return Ok(());
                    }
                    let take = (9 - *filled).min(data.len());
                    bytes[*filled..*filled + take].copy_from_slice(&data[..take]);
                    *filled += take;
                    data = &data[take..];
                    if *filled < 9 {
                        return Ok(());
                    }
                    let header = FrameHeader::parse(bytes);
                    if header.length > MAX_FRAME_SIZE {
                        return Err(HttpError::new(format!(
                            "HTTP/2 frame of type {:#x} on stream {} is {} bytes, above the {} the {} allows",
                            header.frame_type, header.stream, header.length, MAX_FRAME_SIZE, self.side
                        )));
                    }
                    self.stage = if header.frame_type == kind::DATA {
                        let padded = header.has(flag::PADDED);
                        if padded && header.length == 0 {
                            return Err(HttpError::new(format!(
                                "HTTP/2 DATA frame on stream {} is padded but has no room for the pad length",
                                header.stream
                            )));
                        }
                        Stage::Data {
                            header,
                            remaining: header.length,
                            padding: if padded { None } else { Some(0) },
                        }
                    } else {
                        Stage::Payload {
                            header,
                            payload: Vec::with_capacity(header.length),
                        }
                    };
                    handle(Event::Start(header))?;
                }
                Stage::Payload { header, payload } => {
                    let take = (header.length - payload.len()).min(data.len());
                    payload.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if payload.len() < header.length {
                        return Ok(());
                    }
                    let header = *header;
                    let payload = std::mem::take(payload);
                    self.stage = Stage::Header {
                        bytes: [0; 9],
                        filled: 0,
                    };
                    handle(Event::Frame(header, &payload))?;
                }
                Stage::Data {
                    header,
                    remaining,
                    padding,
                } => {
                    let header = *header;
                    let padding = match *padding {
                        Some(padding) => padding,
                        None => {
                            let Some((&length, rest)) = data.split_first() else {
                                return Ok(());
                            };
                            data = rest;
                            *remaining -= 1;
                            let length = usize::from(length);
                            if length > *remaining {
                                return Err(HttpError::new(format!(
                                    "HTTP/2 DATA frame on stream {} has {} bytes of padding in a {}-byte payload",
                                    header.stream, length, header.length
                                )));
                            }
                            *padding = Some(length);
                            length
                        }
                    };
                    if *remaining > padding {
                        if data.is_empty() {
                            return Ok(());
                        }
                        let take = (*remaining - padding).min(data.len());
                        *remaining -= take;
                        let (chunk, rest) = data.split_at(take);
                        data = rest;
                        handle(Event::Data(header, chunk))?;
                        continue;
                    }
                    let take = (*remaining).min(data.len());
                    *remaining -= take;
                    data = &data[take..];
                    if *remaining > 0 {
                        return Ok(());
                    }
                    self.stage = Stage::Header {
                        bytes: [0; 9],
                        filled: 0,
                    };
                    handle(Event::DataEnd(header))?;
                }
            }
        }
    }
}

/// A header block being collected from HEADERS and CONTINUATION frames.
struct Block {
    stream: u32,
    end_stream: bool,
    fragment: Vec<u8>,
}

/// A complete, decoded header block.
struct DecodedBlock {
    stream: u32,
    end_stream: bool,
    fields: Vec<HeaderField>,
}

/// What both sides do alike: frame checks, SETTINGS and PING acknowledgements, and header
/// blocks through one HPACK decoder per connection.
struct Connection {
    peer: &'static str,
    decoder: Decoder,
    block: Option<Block>,
    output: Vec<u8>,
}

impl Connection {
    fn new(peer: &'static str) -> Self {
        Connection {
            peer,
            decoder: Decoder::new(HEADER_TABLE_SIZE),
            block: None,
            output: Vec::new(),
        }
    }

    /// Checks what a frame header alone can show to be wrong, before its payload arrives.
    fn start(&self, header: &FrameHeader) -> Result<(), HttpError> {
        let name = header.name();
        match &self.block {
            Some(block)
                if header.frame_type != kind::CONTINUATION || header.stream != block.stream =>
            {
                return Err(HttpError::new(format!(
                    "HTTP/2 {name} frame on stream {} interrupts the header block of stream {}, which only CONTINUATION frames may follow",
                    header.stream, block.stream
                )));
            }
            None if header.frame_type == kind::CONTINUATION => {
                return Err(HttpError::new(format!(
                    "HTTP/2 CONTINUATION frame on stream {} follows no HEADERS frame",
                    header.stream
                )));
            }
            _ => {}
        }
        let on_connection = matches!(
            header.frame_type,
            kind::SETTINGS | kind::PING | kind::GOAWAY
        );
        let on_stream = matches!(
            header.frame_type,
            kind::DATA
                | kind::HEADERS
                | kind::PRIORITY
                | kind::RST_STREAM
                | kind::PUSH_PROMISE
                | kind::CONTINUATION
        );
        if on_connection && header.stream != 0 {
            return Err(HttpError::new(format!(
                "HTTP/2 {name} frame is on stream {}, but belongs on stream 0",
                header.stream
            )));
        }
        if on_stream && header.stream == 0 {
            return Err(HttpError::new(format!(
                "HTTP/2 {name} frame is on stream 0"
            )));
        }
        let expected = match header.frame_type {
            kind::PING => Some(8),
            kind::RST_STREAM | kind::WINDOW_UPDATE => Some(4),
            kind::PRIORITY => Some(5),
            kind::SETTINGS if header.has(flag::ACK) => Some(0),
            _ => None,
        };
        if expected.is_some_and(|expected| expected != header.length) {
            return Err(HttpError::new(format!(
                "HTTP/2 {name} frame is {} bytes instead of {}",
                header.length,
                expected.unwrap_or_default()
            )));
        }
        if header.frame_type == kind::SETTINGS && !header.length.is_multiple_of(6) {
            return Err(HttpError::new(format!(
                "HTTP/2 SETTINGS frame is {} bytes, not a multiple of 6",
                header.length
            )));
        }
        if header.frame_type == kind::GOAWAY && header.length < 8 {
            return Err(HttpError::new(format!(
                "HTTP/2 GOAWAY frame is {} bytes, less than 8",
                header.length
            )));
        }
        Ok(())
    }

    /// Handles a whole non-DATA frame; returns a header block once one is complete.
    fn frame(
        &mut self,
        header: FrameHeader,
        payload: &[u8],
    ) -> Result<Option<DecodedBlock>, HttpError> {
        match header.frame_type {
            kind::HEADERS => {
                let fragment = header_fragment(&header, payload)?;
                self.block = Some(Block {
                    stream: header.stream,
                    end_stream: header.has(flag::END_STREAM),
                    fragment: fragment.to_vec(),
                });
            }
            kind::CONTINUATION => {
                if let Some(block) = &mut self.block {
                    block.fragment.extend_from_slice(payload);
                    if block.fragment.len() > HEADER_BLOCK_LIMIT {
                        return Err(HttpError::new(format!(
                            "HTTP/2 header block on stream {} is longer than {HEADER_BLOCK_LIMIT} bytes",
                            block.stream
                        )));
                    }
                }
            }
            kind::SETTINGS => {
                if !header.has(flag::ACK) {
                    self.settings(payload)?;
                    write_frame(&mut self.output, kind::SETTINGS, flag::ACK, 0, &[]);
                }
                return Ok(None);
            }
            kind::PING => {
                if !header.has(flag::ACK) {
                    write_frame(&mut self.output, kind::PING, flag::ACK, 0, payload);
                }
                return Ok(None);
            }
            _ => return Ok(None),
        }
        if !header.has(flag::END_HEADERS) {
            return Ok(None);
        }
        let Some(block) = self.block.take() else {
            return Ok(None);
        };
        let fields = self.decoder.decode(&block.fragment).map_err(|error| {
            HttpError::new(format!(
                "HTTP/2 header block on stream {} from the {} cannot be decoded: {error}",
                block.stream, self.peer
            ))
        })?;
        Ok(Some(DecodedBlock {
            stream: block.stream,
            end_stream: block.end_stream,
            fields,
        }))
    }

    /// Checks the peer's settings. None changes what we do: HEADER_TABLE_SIZE bounds an
    /// encoder's dynamic table, which we never use, and every frame we send is within the
    /// smallest MAX_FRAME_SIZE.
    fn settings(&self, payload: &[u8]) -> Result<(), HttpError> {
        for entry in payload.chunks_exact(6) {
            let identifier = u16::from_be_bytes([entry[0], entry[1]]);
            let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
            let valid = match identifier {
                setting::ENABLE_PUSH => value <= 1,
                setting::INITIAL_WINDOW_SIZE => value <= MAX_WINDOW,
                setting::MAX_FRAME_SIZE => (16_384..=16_777_215).contains(&value),
                _ => true,
            };
            if !valid {
                return Err(HttpError::new(format!(
                    "HTTP/2 {} sent setting {identifier:#x} with the invalid value {value}",
                    self.peer
                )));
            }
        }
        Ok(())
    }
}

/// The header block fragment of a HEADERS frame, without padding and priority fields.
fn header_fragment<'a>(header: &FrameHeader, payload: &'a [u8]) -> Result<&'a [u8], HttpError> {
    let malformed = || {
        HttpError::new(format!(
            "HTTP/2 HEADERS frame on stream {} is too short for its padding and priority fields",
            header.stream
        ))
    };
    let mut fragment = payload;
    if header.has(flag::PADDED) {
        let (&padding, rest) = fragment.split_first().ok_or_else(malformed)?;
        let keep = rest
            .len()
            .checked_sub(usize::from(padding))
            .ok_or_else(malformed)?;
        fragment = &rest[..keep];
    }
    if header.has(flag::PRIORITY) {
        fragment = fragment.get(5..).ok_or_else(malformed)?;
    }
    Ok(fragment)
}

/// The client's view of its connection.
struct ClientState {
    connection: Connection,
    progress: Progress,
    server: Option<String>,
}

impl ClientState {
    fn handle(&mut self, event: Event<'_>) -> Result<(), HttpError> {
        match event {
            Event::Start(header) => {
                self.connection.start(&header)?;
                if header.stream == OUR_STREAM
                    && matches!(header.frame_type, kind::DATA | kind::HEADERS)
                {
                    self.progress.first_byte = true;
                }
            }
            Event::Frame(header, payload) => {
                match header.frame_type {
                    kind::PUSH_PROMISE => {
                        return Err(HttpError::new(
                            "HTTP/2 server sent PUSH_PROMISE although the client disabled push",
                        ))
                    }
                    kind::RST_STREAM if header.stream == OUR_STREAM && !self.progress.complete => {
                        let code =
                            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                        return Err(HttpError::new(format!(
                            "HTTP/2 server reset stream 1 with {} ({code:#x}) before the response was complete",
                            error_code_name(code)
                        )));
                    }
                    kind::GOAWAY => self.goaway(payload)?,
                    _ => {}
                }
                if let Some(block) = self.connection.frame(header, payload)? {
                    self.headers(block)?;
                }
            }
            Event::Data(header, chunk) => {
                if header.stream == OUR_STREAM && !self.progress.complete {
                    if self.progress.status.is_none() {
                        return Err(HttpError::new(
                            "HTTP/2 DATA frame on stream 1 arrived before the response headers",
                        ));
                    }
                    self.progress.body_bytes += chunk.len() as u64;
                }
            }
            Event::DataEnd(header) => {
                if header.stream == OUR_STREAM && header.has(flag::END_STREAM) {
                    if self.progress.status.is_none() {
                        return Err(HttpError::new(
                            "HTTP/2 stream 1 ended before the response headers",
                        ));
                    }
                    self.progress.complete = true;
                }
            }
        }
        Ok(())
    }

    /// A GOAWAY that still lets stream 1 finish (NO_ERROR with a last stream of at least 1,
    /// as nginx sends when shutting down gracefully) is not an error.
    fn goaway(&self, payload: &[u8]) -> Result<(), HttpError> {
        let last_stream =
            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & MAX_STREAM;
        let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
        if self.progress.complete || (code == 0 && last_stream >= OUR_STREAM) {
            return Ok(());
        }
        let debug = &payload[8..];
        Err(HttpError::new(format!(
            "HTTP/2 server sent GOAWAY with {} ({code:#x}) and last stream {last_stream} before the response was complete{}",
            error_code_name(code),
            if debug.is_empty() { String::new() } else { format!(": {}", quote(debug)) }
        )))
    }

    fn headers(&mut self, block: DecodedBlock) -> Result<(), HttpError> {
        // Blocks on other streams were decoded only to keep the HPACK table in step.
        if block.stream != OUR_STREAM || self.progress.complete {
            return Ok(());
        }
        let interim = apply_response_fields(
            &mut self.progress,
            &mut self.server,
            &block.fields,
            "HTTP/2",
        )?;
        if interim {
            if block.end_stream {
                return Err(HttpError::new(
                    "HTTP/2 stream 1 ended with an interim (1xx) response",
                ));
            }
            return Ok(());
        }
        if block.end_stream {
            self.progress.complete = true;
        }
        Ok(())
    }
}

/// The client's reader of the response on stream 1.
pub(crate) struct ResponseParser {
    framer: Framer,
    state: ClientState,
}

impl ResponseParser {
    pub(crate) fn new() -> Self {
        ResponseParser {
            framer: Framer::new("client"),
            state: ClientState {
                connection: Connection::new("server"),
                progress: Progress::default(),
                server: None,
            },
        }
    }

    pub(crate) fn progress(&self) -> Progress {
        self.state.progress
    }

    pub(crate) fn server(&self) -> Option<&str> {
        self.state.server.as_deref()
    }

    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<(), HttpError> {
        let Self { framer, state } = self;
        framer.feed(data, &mut |event| state.handle(event))
    }

    pub(crate) fn finish(&mut self) -> Result<(), HttpError> {
        if self.state.progress.complete {
            return Ok(());
        }
        Err(HttpError::new(
            "HTTP/2 connection closed before the response on stream 1 was complete",
        ))
    }

    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.state.connection.output)
    }
}

/// The server's view of its connection.
struct ServerState {
    connection: Connection,
    /// The highest stream a request arrived on: later blocks on it are trailers.
    last_stream: u32,
    /// Requests whose header block arrived but whose stream has not ended.
    pending: Vec<ReceivedRequest>,
    ready: VecDeque<ReceivedRequest>,
}

impl ServerState {
    fn handle(&mut self, event: Event<'_>) -> Result<(), HttpError> {
        match event {
            Event::Start(header) => self.connection.start(&header),
            Event::Frame(header, payload) => {
                if header.frame_type == kind::PUSH_PROMISE {
                    return Err(HttpError::new("HTTP/2 client sent PUSH_PROMISE"));
                }
                match self.connection.frame(header, payload)? {
                    Some(block) => self.headers(block),
                    None => Ok(()),
                }
            }
            Event::Data(..) => Ok(()),
            Event::DataEnd(header) => {
                if header.has(flag::END_STREAM) {
                    self.end_stream(header.stream);
                }
                Ok(())
            }
        }
    }

    fn headers(&mut self, block: DecodedBlock) -> Result<(), HttpError> {
        if block.stream <= self.last_stream {
            if block.end_stream {
                self.end_stream(block.stream);
            }
            return Ok(());
        }
        if block.stream.is_multiple_of(2) {
            return Err(HttpError::new(format!(
                "HTTP/2 client sent HEADERS on stream {}, which only a server may open",
                block.stream
            )));
        }
        self.last_stream = block.stream;
        let path = hpack::find(&block.fields, ":path").ok_or_else(|| {
            HttpError::new(format!(
                "HTTP/2 request on stream {} has no :path",
                block.stream
            ))
        })?;
        let path = String::from_utf8(path.to_vec()).map_err(|_| {
            HttpError::new(format!(
                "HTTP/2 request on stream {} has a :path that is not UTF-8: {}",
                block.stream,
                quote(path)
            ))
        })?;
        let method = hpack::find(&block.fields, ":method").unwrap_or_default();
        let request = ReceivedRequest {
            path,
            stream: u64::from(block.stream),
        };
        // A GET or HEAD has nothing to wait for, even if the client ends its stream later.
        if block.end_stream || method == b"GET" || method == b"HEAD" {
            self.ready.push_back(request);
        } else {
            self.pending.push(request);
        }
        Ok(())
    }

    fn end_stream(&mut self, stream: u32) {
        if let Some(position) = self
            .pending
            .iter()
            .position(|request| request.stream == u64::from(stream))
        {
            let request = self.pending.remove(position);
            self.ready.push_back(request);
        }
    }
}

/// The server's reader of a connection's requests.
pub(crate) struct RequestParser {
    preface_matched: usize,
    framer: Framer,
    state: ServerState,
}

impl RequestParser {
    pub(crate) fn new() -> Self {
        RequestParser {
            preface_matched: 0,
            framer: Framer::new("server"),
            state: ServerState {
                connection: Connection::new("client"),
                last_stream: 0,
                pending: Vec::new(),
                ready: VecDeque::new(),
            },
        }
    }

    pub(crate) fn feed(&mut self, mut data: &[u8]) -> Result<Option<ReceivedRequest>, HttpError> {
        if self.preface_matched < PREFACE.len() {
            let take = (PREFACE.len() - self.preface_matched).min(data.len());
            let expected = &PREFACE[self.preface_matched..self.preface_matched + take];
            if data[..take] != *expected {
                return Err(HttpError::new(format!(
                    "HTTP/2 client preface is wrong: expected {} but got {}",
                    quote(expected),
                    quote(&data[..take])
                )));
            }
            self.preface_matched += take;
            data = &data[take..];
        }
        let Self { framer, state, .. } = self;
        framer.feed(data, &mut |event| state.handle(event))?;
        Ok(self.state.ready.pop_front())
    }

    pub(crate) fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.state.connection.output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::tests::hex;

    fn frame(frame_type: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut output = Vec::new();
        write_frame(&mut output, frame_type, flags, stream, payload);
        output
    }

    fn response_headers(end_stream: bool) -> Vec<u8> {
        let flags = flag::END_HEADERS | if end_stream { flag::END_STREAM } else { 0 };
        frame(kind::HEADERS, flags, 1, &[0x88])
    }

    fn read(bytes: &[u8]) -> Result<ResponseParser, HttpError> {
        let mut parser = ResponseParser::new();
        parser.feed(bytes)?;
        Ok(parser)
    }

    #[test]
    fn request_frames_are_as_documented() {
        let request = Request {
            authority: "lab.test",
            path: "/",
            min_size: 0,
        };
        let bytes = encode_request(&request, Padding::NONE);
        assert!(bytes.starts_with(PREFACE));
        let rest = &bytes[PREFACE.len()..];
        assert_eq!(&rest[..9], [0, 0, 12, kind::SETTINGS, 0, 0, 0, 0, 0]);
        assert_eq!(&rest[9..21], hex("0002 00000000 0004 7fffffff"));
        assert_eq!(&rest[21..34], hex("000004 08 00 00000000 7fff0000"));
        let headers = &rest[34..];
        assert_eq!(
            &headers[3..9],
            [
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                0,
                0,
                0,
                1
            ]
        );
        assert_eq!(&headers[9..13], [0x82, 0x87, 0x84, 0x01]);
        let fields = Decoder::new(4096).decode(&headers[9..]).unwrap();
        assert_eq!(hpack::find(&fields, ":authority"), Some(&b"lab.test"[..]));
        assert_eq!(hpack::find(&fields, "accept"), Some(&b"*/*"[..]));
    }

    #[test]
    fn large_header_blocks_use_continuation() {
        let request = Request {
            authority: "a",
            path: "/",
            min_size: 0,
        };
        let bytes = encode_request(
            &request,
            Padding {
                fields: 10,
                bytes: 40_000,
            },
        );
        let mut parser = RequestParser::new();
        let received = parser.feed(&bytes).unwrap().unwrap();
        assert_eq!(
            received,
            ReceivedRequest {
                path: "/".into(),
                stream: 1
            }
        );
        let continuations = bytes
            .windows(4)
            .filter(|window| {
                window[..2] == [kind::CONTINUATION, 0] || window[..2] == [kind::CONTINUATION, 4]
            })
            .count();
        assert!(continuations >= 2);
    }

    #[test]
    fn nginx_style_response_with_huffman_and_indexing() {
        // RFC 7541 C.6.1 and C.6.2 as the header blocks of two responses in a row: the
        // second only decodes if the first updated the dynamic table. The first is on
        // stream 3, which the client must decode but not count.
        let mut bytes = frame(kind::SETTINGS, 0, 0, &hex("0003 00000080 0004 0000ffff"));
        bytes.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            3,
            &hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                  2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            ),
        ));
        bytes.extend(frame(kind::HEADERS, 0, 1, &hex("4883 640e")));
        bytes.extend(frame(
            kind::CONTINUATION,
            flag::END_HEADERS,
            1,
            &hex("ffc1 c0bf"),
        ));
        bytes.extend(frame(kind::DATA, flag::END_STREAM, 1, b"moved"));
        for split in [1, 7, bytes.len()] {
            let mut parser = ResponseParser::new();
            for piece in bytes.chunks(split) {
                parser.feed(piece).unwrap();
            }
            let progress = parser.progress();
            assert_eq!(progress.status, Some(307));
            assert_eq!(progress.body_bytes, 5);
            assert!(progress.complete);
            assert_eq!(
                parser.take_output(),
                frame(kind::SETTINGS, flag::ACK, 0, &[])
            );
            assert!(parser.take_output().is_empty());
        }
    }

    #[test]
    fn first_byte_waits_for_stream_one() {
        let mut parser = ResponseParser::new();
        parser.feed(&server_preface()).unwrap();
        parser
            .feed(&frame(kind::WINDOW_UPDATE, 0, 0, &[0, 0, 1, 0]))
            .unwrap();
        parser
            .feed(&frame(kind::PING, 0, 0, &[1, 2, 3, 4, 5, 6, 7, 8]))
            .unwrap();
        assert!(!parser.progress().first_byte);
        let mut output = frame(kind::SETTINGS, flag::ACK, 0, &[]);
        output.extend(frame(kind::PING, flag::ACK, 0, &[1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(parser.take_output(), output);
        let headers = response_headers(false);
        parser.feed(&headers[..9]).unwrap();
        assert!(parser.progress().first_byte);
        assert_eq!(parser.progress().status, None);
        parser.feed(&headers[9..]).unwrap();
        assert_eq!(parser.progress().status, Some(200));
    }

    #[test]
    fn padded_frames_and_interim_responses() {
        let mut bytes = frame(kind::HEADERS, flag::END_HEADERS, 1, &hex("08 03 313033"));
        // HEADERS with PADDED and PRIORITY: pad length 2, priority (5 bytes), :status 200.
        bytes.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::PADDED | flag::PRIORITY,
            1,
            &hex("02 80000000 10 88 0000"),
        ));
        bytes.extend(frame(kind::DATA, flag::PADDED, 1, &hex("03 616263 000000")));
        bytes.extend(frame(
            kind::DATA,
            flag::PADDED | flag::END_STREAM,
            1,
            &hex("00 64"),
        ));
        let progress = read(&bytes).unwrap().progress();
        assert_eq!(progress.status, Some(200));
        assert_eq!(progress.body_bytes, 4);
        assert!(progress.complete);
        let mut parser = ResponseParser::new();
        for byte in &bytes {
            parser.feed(std::slice::from_ref(byte)).unwrap();
        }
        assert_eq!(parser.progress(), progress);
    }

    #[test]
    fn trailers_complete_the_response() {
        let mut bytes = response_headers(false);
        bytes.extend(frame(kind::DATA, 0, 1, b"abc"));
        bytes.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            1,
            &hex("0001 61 0162"),
        ));
        let progress = read(&bytes).unwrap().progress();
        assert!(progress.complete);
        assert_eq!(progress.body_bytes, 3);
    }

    #[test]
    fn oversize_frames_are_errors() {
        let mut bytes = server_preface();
        bytes.extend_from_slice(&[0x00, 0x4e, 0x20, kind::HEADERS, 0x04, 0, 0, 0, 1]);
        let error = read(&bytes).err().unwrap();
        assert_eq!(
            error.message(),
            "HTTP/2 frame of type 0x1 on stream 1 is 20000 bytes, above the 16384 the client allows"
        );
    }

    #[test]
    fn stream_errors() {
        let error = read(&frame(kind::RST_STREAM, 0, 1, &[0, 0, 0, 7]))
            .err()
            .unwrap();
        assert!(error.message().contains("REFUSED_STREAM"), "{error}");

        let mut goaway = hex("00000000 0000000b");
        goaway.extend_from_slice(b"too many");
        let error = read(&frame(kind::GOAWAY, 0, 0, &goaway)).err().unwrap();
        assert!(error.message().contains("ENHANCE_YOUR_CALM"), "{error}");
        assert!(error.message().contains("too many"), "{error}");
        // Graceful shutdown that still serves stream 1.
        assert!(read(&frame(kind::GOAWAY, 0, 0, &hex("00000001 00000000"))).is_ok());
        let mut done = response_headers(true);
        done.extend(frame(kind::GOAWAY, 0, 0, &hex("00000000 00000002")));
        done.extend(frame(kind::RST_STREAM, 0, 1, &[0, 0, 0, 0]));
        assert!(read(&done).unwrap().progress().complete);

        assert!(read(&frame(
            kind::PUSH_PROMISE,
            flag::END_HEADERS,
            1,
            &[0, 0, 0, 2, 0x82]
        ))
        .is_err());
        assert!(read(&frame(kind::DATA, 0, 1, b"x")).is_err());
        assert!(read(&frame(kind::HEADERS, flag::END_HEADERS, 1, &[0x5f, 0x00])).is_err());
    }

    #[test]
    fn malformed_frames_are_errors() {
        let mut interrupted = frame(kind::HEADERS, 0, 1, &[0x88]);
        interrupted.extend(frame(kind::PING, 0, 0, &[0; 8]));
        assert!(read(&interrupted)
            .err()
            .unwrap()
            .message()
            .contains("interrupts"));
        assert!(read(&frame(kind::CONTINUATION, flag::END_HEADERS, 1, &[0x88])).is_err());
        assert!(read(&frame(kind::PING, 0, 0, &[0; 7])).is_err());
        assert!(read(&frame(kind::PING, 0, 1, &[0; 8])).is_err());
        assert!(read(&frame(kind::SETTINGS, 0, 0, &[0; 5])).is_err());
        assert!(read(&frame(kind::SETTINGS, 0, 0, &hex("0005 00000010"))).is_err());
        assert!(read(&frame(kind::SETTINGS, flag::ACK, 0, &[0; 6])).is_err());
        assert!(read(&frame(kind::HEADERS, flag::END_HEADERS, 0, &[0x88])).is_err());
        assert!(read(&frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::PADDED,
            1,
            &[5, 0x88]
        ))
        .is_err());
        assert!(read(&frame(kind::DATA, flag::PADDED, 1, &[])).is_err());
        assert!(read(&frame(kind::DATA, flag::PADDED, 1, &[4, 0, 0])).is_err());
        assert!(read(&frame(kind::GOAWAY, 0, 0, &[0; 4])).is_err());
        // Unknown frame types and PRIORITY are ignored.
        let mut bytes = frame(0xfa, 0xff, 5, b"whatever");
        bytes.extend(frame(kind::PRIORITY, 0, 3, &[0, 0, 0, 1, 16]));
        bytes.extend(response_headers(true));
        assert!(read(&bytes).unwrap().progress().complete);
    }

    #[test]
    fn finish_before_the_end_is_an_error() {
        let mut parser = read(&response_headers(false)).unwrap();
        assert!(parser.finish().is_err());
        let mut parser = read(&response_headers(true)).unwrap();
        assert!(parser.finish().is_ok());
    }

    #[test]
    fn server_checks_the_preface() {
        let mut parser = RequestParser::new();
        parser.feed(b"PRI * HTTP/2.0\r\n").unwrap();
        let error = parser.feed(b"\r\nXX").unwrap_err();
        assert!(error.message().contains("preface is wrong"), "{error}");
        assert!(RequestParser::new().feed(b"GET / HTTP/1.1\r\n").is_err());
    }

    #[test]
    fn server_waits_for_the_end_of_a_post() {
        let mut parser = RequestParser::new();
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(kind::SETTINGS, 0, 0, &[]));
        // :method POST (3), :path literal "/up", then DATA with END_STREAM.
        bytes.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS,
            3,
            &hex("83 8704 032f7570"),
        ));
        assert_eq!(parser.feed(&bytes).unwrap(), None);
        assert_eq!(
            parser.take_output(),
            frame(kind::SETTINGS, flag::ACK, 0, &[])
        );
        let request = parser
            .feed(&frame(kind::DATA, flag::END_STREAM, 3, b"x"))
            .unwrap();
        assert_eq!(
            request,
            Some(ReceivedRequest {
                path: "/up".into(),
                stream: 3
            })
        );
        assert!(parser
            .feed(&frame(kind::HEADERS, flag::END_HEADERS, 4, &[0x84]))
            .is_err());
    }

    #[test]
    fn response_frames_are_as_documented() {
        let bytes = encode_response(1, 0);
        assert_eq!(
            &bytes[3..9],
            [
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                0,
                0,
                0,
                1
            ]
        );
        assert_eq!(bytes[9], 0x88);
        let bytes = encode_response(5, 16_385);
        let second_data = 9 + usize::from(bytes[2]) + 9 + 16_384;
        assert_eq!(
            &bytes[second_data..second_data + 9],
            [0, 0, 1, kind::DATA, flag::END_STREAM, 0, 0, 0, 5]
        );
        assert_eq!(bytes.len(), second_data + 10);
    }
}
