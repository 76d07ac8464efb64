//! HTTP/3 (RFC 9114): the control stream, the frames of the request stream for one GET and
//! its response, and incremental readers of a request stream for both sides.
//!
//! QUIC streams, their FIN and the peer's control and QPACK streams belong to the caller.

use crate::error::quote;
use crate::hpack::find;
use crate::qpack::{self, index};
use crate::{
    apply_response_fields, HttpError, Padding, Progress, ReceivedRequest, Request, PADDING_NAME,
};

/// The longest HEADERS frame accepted.
const HEADERS_LIMIT: u64 = 256 * 1024;

mod kind {
    pub(super) const DATA: u64 = 0x0;
    pub(super) const HEADERS: u64 = 0x1;
    pub(super) const CANCEL_PUSH: u64 = 0x3;
    pub(super) const SETTINGS: u64 = 0x4;
    pub(super) const GOAWAY: u64 = 0x7;
    pub(super) const MAX_PUSH_ID: u64 = 0xd;
}

mod setting {
    pub(super) const QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
    pub(super) const QPACK_BLOCKED_STREAMS: u64 = 0x7;
}

const CONTROL_STREAM_TYPE: u64 = 0x00;

/// A QUIC variable-length integer (RFC 9000 16), in its shortest form.
pub(crate) fn encode_varint(output: &mut Vec<u8>, value: u64) {
    match value {
        0..=0x3f => output.push(value as u8),
        0x40..=0x3fff => output.extend_from_slice(&(value as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => {
            output.extend_from_slice(&(value as u32 | 0x8000_0000).to_be_bytes())
        }
        _ => output.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// A QUIC variable-length integer and its length, or `None` if `input` does not hold all of
/// it yet.
fn decode_varint(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let length = 1 << (first >> 6);
    let bytes = input.get(..length)?;
    let value = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |value, &byte| {
            value << 8 | u64::from(byte)
        });
    Some((value, length))
}

fn write_frame_header(output: &mut Vec<u8>, frame_type: u64, length: usize) {
    encode_varint(output, frame_type);
    encode_varint(output, length as u64);
}

pub(crate) fn control_stream() -> Vec<u8> {
    let mut settings = Vec::new();
    for identifier in [
        setting::QPACK_MAX_TABLE_CAPACITY,
        setting::QPACK_BLOCKED_STREAMS,
    ] {
        encode_varint(&mut settings, identifier);
        encode_varint(&mut settings, 0);
    }
    let mut output = Vec::new();
    encode_varint(&mut output, CONTROL_STREAM_TYPE);
    write_frame_header(&mut output, kind::SETTINGS, settings.len());
    output.extend_from_slice(&settings);
    output
}

pub(crate) fn encode_request(request: &Request, padding: Padding) -> Vec<u8> {
    let mut section = Vec::with_capacity(64 + request.path.len() + padding.bytes);
    qpack::encode_prefix(&mut section);
    qpack::encode_indexed(&mut section, index::METHOD_GET);
    qpack::encode_indexed(&mut section, index::SCHEME_HTTPS);
    qpack::encode_literal_with_name_index(
        &mut section,
        index::AUTHORITY,
        request.authority.as_bytes(),
    );
    if request.path == "/" {
        qpack::encode_indexed(&mut section, index::PATH_ROOT);
    } else {
        qpack::encode_literal_with_name_index(
            &mut section,
            index::PATH_ROOT,
            request.path.as_bytes(),
        );
    }
    qpack::encode_literal_with_name_index(&mut section, index::USER_AGENT, b"tlslab");
    qpack::encode_indexed(&mut section, index::ACCEPT_ANY);
    for length in padding.lengths() {
        qpack::encode_literal(&mut section, PADDING_NAME.as_bytes(), &vec![b'0'; length]);
    }
    let mut output = Vec::with_capacity(section.len() + 16);
    write_frame_header(&mut output, kind::HEADERS, section.len());
    output.extend_from_slice(&section);
    output
}

pub(crate) fn encode_response(body_bytes: usize) -> Vec<u8> {
    let mut section = Vec::new();
    qpack::encode_prefix(&mut section);
    qpack::encode_indexed(&mut section, index::STATUS_200);
    qpack::encode_literal_with_name_index(
        &mut section,
        index::CONTENT_LENGTH,
        body_bytes.to_string().as_bytes(),
    );
    qpack::encode_literal_with_name_index(
        &mut section,
        index::CONTENT_TYPE,
        b"application/octet-stream",
    );
    let mut output = Vec::with_capacity(section.len() + body_bytes + 32);
    write_frame_header(&mut output, kind::HEADERS, section.len());
    output.extend_from_slice(&section);
    if body_bytes > 0 {
        write_frame_header(&mut output, kind::DATA, body_bytes);
        output.resize(output.len() + body_bytes, 0);
    }
    output
}

enum Event<'a> {
    /// A whole HEADERS frame payload: an encoded field section.
    Headers(&'a [u8]),
    /// Some of a DATA frame's payload, passed on as it arrives.
    Data(&'a [u8]),
}

enum Stage {
    /// Collecting the type and length varints (at most 16 bytes).
    Header(Vec<u8>),
    Headers {
        length: usize,
        payload: Vec<u8>,
    },
    Data {
        remaining: u64,
    },
    Skip {
        remaining: u64,
    },
}

/// Splits a request stream into frames, whatever the pieces it arrives in.
struct Framer {
    stage: Stage,
}

impl Framer {
    fn new() -> Self {
        Framer {
            stage: Stage::Header(Vec::new()),
        }
    }

    fn feed(
        &mut self,
        mut data: &[u8],
        handle: &mut dyn FnMut(Event<'_>) -> Result<(), HttpError>,
    ) -> Result<(), HttpError> {
        loop {
            match &mut self.stage {
                Stage::Header(bytes) => {
                    let Some((&byte, rest)) = data.split_first() else {
                        return Ok(());
                    };
                    data = rest;
                    bytes.push(byte);
                    let Some((frame_type, used)) = decode_varint(bytes) else {
                        continue;
                    };
                    let Some((length, _)) = decode_varint(&bytes[used..]) else {
                        continue;
                    };
                    self.stage = Self::stage_for(frame_type, length)?;
                }
                Stage::Headers { length, payload } => {
                    let take = (*length - payload.len()).min(data.len());
                    payload.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if payload.len() < *length {
                        return Ok(());
                    }
                    let payload = std::mem::take(payload);
                    self.stage = Stage::Header(Vec::new());
                    handle(Event::Headers(&payload))?;
                }
                Stage::Data { remaining } | Stage::Skip { remaining } if *remaining == 0 => {
                    self.stage = Stage::Header(Vec::new());
                }
                Stage::Data { remaining } => {
                    if data.is_empty() {
                        return Ok(());
                    }
                    let take = (*remaining).min(data.len() as u64) as usize;
                    *remaining -= take as u64;
                    let (chunk, rest) = data.split_at(take);
                    data = rest;
                    handle(Event::Data(chunk))?;
                }
                Stage::Skip { remaining } => {
                    if data.is_empty() {
                        return Ok(());
                    }
                    let take = (*remaining).min(data.len() as u64) as usize;
                    *remaining -= take as u64;
                    data = &data[take..];
                }
            }
        }
    }

    fn stage_for(frame_type: u64, length: u64) -> Result<Stage, HttpError> {
        let name = match frame_type {
            kind::DATA => return Ok(Stage::Data { remaining: length }),
            kind::HEADERS if length > HEADERS_LIMIT => {
                return Err(HttpError::new(format!(
                    "HTTP/3 HEADERS frame is {length} bytes, above the {HEADERS_LIMIT} accepted"
                )))
            }
            kind::HEADERS => {
                return Ok(Stage::Headers {
                    length: length as usize,
                    payload: Vec::with_capacity(length as usize),
                })
            }
            kind::CANCEL_PUSH => "CANCEL_PUSH",
            kind::SETTINGS => "SETTINGS",
            kind::GOAWAY => "GOAWAY",
            kind::MAX_PUSH_ID => "MAX_PUSH_ID",
            // Unknown and reserved types (including grease) must be ignored (RFC 9114 9);
            // PUSH_PROMISE cannot come as we never allow pushes, and its section is static.
            _ => return Ok(Stage::Skip { remaining: length }),
        };
        Err(HttpError::new(format!(
            "HTTP/3 {name} frame (type {frame_type:#x}) is not allowed on a request stream"
        )))
    }

    /// Whether the stream could end here: not inside a frame.
    fn at_frame_boundary(&self) -> bool {
        match &self.stage {
            Stage::Header(bytes) => bytes.is_empty(),
            Stage::Data { remaining } | Stage::Skip { remaining } => *remaining == 0,
            Stage::Headers { .. } => false,
        }
    }
}

/// The client's reader of the response on its request stream.
pub(crate) struct ResponseParser {
    framer: Framer,
    progress: Progress,
    server: Option<String>,
}

impl ResponseParser {
    pub(crate) fn new() -> Self {
        ResponseParser {
            framer: Framer::new(),
            progress: Progress::default(),
            server: None,
        }
    }

    pub(crate) fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    pub(crate) fn progress(&self) -> Progress {
        self.progress
    }

    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<(), HttpError> {
        if data.is_empty() {
            return Ok(());
        }
        self.progress.first_byte = true;
        let Self {
            framer,
            progress,
            server,
        } = self;
        framer.feed(data, &mut |event| match event {
            Event::Headers(section) => {
                let fields = qpack::decode_field_section(section).map_err(|error| {
                    HttpError::new(format!(
                        "HTTP/3 response field section cannot be decoded: {error}"
                    ))
                })?;
                apply_response_fields(progress, server, &fields, "HTTP/3").map(|_| ())
            }
            Event::Data(chunk) => {
                if progress.status.is_none() {
                    return Err(HttpError::new(
                        "HTTP/3 DATA frame arrived before the response headers",
                    ));
                }
                progress.body_bytes += chunk.len() as u64;
                Ok(())
            }
        })
    }

    pub(crate) fn finish(&mut self) -> Result<(), HttpError> {
        if self.progress.complete {
            return Ok(());
        }
        if !self.framer.at_frame_boundary() {
            return Err(HttpError::new(
                "HTTP/3 request stream ended in the middle of a frame",
            ));
        }
        if self.progress.status.is_none() {
            return Err(HttpError::new(
                "HTTP/3 request stream ended before the response headers",
            ));
        }
        self.progress.complete = true;
        Ok(())
    }
}

/// The server's reader of one request stream.
pub(crate) struct RequestParser {
    framer: Framer,
    request: Option<ReceivedRequest>,
    delivered: bool,
}

impl RequestParser {
    pub(crate) fn new() -> Self {
        RequestParser {
            framer: Framer::new(),
            request: None,
            delivered: false,
        }
    }

    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<Option<ReceivedRequest>, HttpError> {
        if self.delivered {
            return Ok(None);
        }
        let Self {
            framer, request, ..
        } = self;
        framer.feed(data, &mut |event| match event {
            // Trailers after the request's HEADERS are of no interest.
            Event::Headers(_) if request.is_some() => Ok(()),
            Event::Headers(section) => {
                let fields = qpack::decode_field_section(section).map_err(|error| {
                    HttpError::new(format!(
                        "HTTP/3 request field section cannot be decoded: {error}"
                    ))
                })?;
                let path = find(&fields, ":path")
                    .ok_or_else(|| HttpError::new("HTTP/3 request has no :path"))?;
                let path = String::from_utf8(path.to_vec()).map_err(|_| {
                    HttpError::new(format!(
                        "HTTP/3 request has a :path that is not UTF-8: {}",
                        quote(path)
                    ))
                })?;
                *request = Some(ReceivedRequest { path, stream: 0 });
                Ok(())
            }
            Event::Data(_) if request.is_none() => Err(HttpError::new(
                "HTTP/3 DATA frame arrived before the request headers",
            )),
            Event::Data(_) => Ok(()),
        })?;
        let request = self.request.take();
        self.delivered = request.is_some();
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::{encode_integer, tests::hex};
    use crate::huffman;

    fn read(bytes: &[u8]) -> Result<ResponseParser, HttpError> {
        let mut parser = ResponseParser::new();
        parser.feed(bytes)?;
        Ok(parser)
    }

    #[test]
    fn varints_round_trip() {
        for (value, length) in [
            (0, 1),
            (63, 1),
            (64, 2),
            (16_383, 2),
            (16_384, 4),
            (1 << 30, 8),
            ((1 << 62) - 1, 8),
        ] {
            let mut output = Vec::new();
            encode_varint(&mut output, value);
            assert_eq!(output.len(), length);
            assert_eq!(decode_varint(&output), Some((value, length)));
            assert_eq!(decode_varint(&output[..length - 1]), None);
        }
        // RFC 9000 A.1 examples.
        assert_eq!(
            decode_varint(&hex("c2197c5eff14e88c")),
            Some((151_288_809_941_952_652, 8))
        );
        assert_eq!(decode_varint(&hex("9d7f3e7d")), Some((494_878_333, 4)));
        assert_eq!(decode_varint(&hex("7bbd")), Some((15_293, 2)));
    }

    #[test]
    fn control_stream_is_as_documented() {
        assert_eq!(control_stream(), [0x00, 0x04, 0x04, 0x01, 0x00, 0x07, 0x00]);
    }

    #[test]
    fn request_is_as_documented() {
        let request = Request {
            authority: "lab.test",
            path: "/",
            min_size: 0,
        };
        let bytes = encode_request(&request, Padding::NONE);
        assert_eq!(bytes[0], 0x01);
        assert_eq!(usize::from(bytes[1]), bytes.len() - 2);
        assert_eq!(&bytes[2..6], [0x00, 0x00, 0xd1, 0xd7]);
        let fields = qpack::decode_field_section(&bytes[2..]).unwrap();
        assert_eq!(find(&fields, ":authority"), Some(&b"lab.test"[..]));
        assert_eq!(find(&fields, ":path"), Some(&b"/"[..]));
        assert_eq!(find(&fields, "accept"), Some(&b"*/*"[..]));
    }

    #[test]
    fn huffman_response_with_unknown_frames() {
        // A reserved frame type (0x21 + 0x1f·2 = 0x5f), a HEADERS frame whose content-type is
        // Huffman-coded, an unknown type 0x2f with two bytes, then DATA.
        let mut bytes = hex("405f 03 aabbcc");
        let mut section = hex("0000 d9 5f1d");
        let value = huffman::encode(b"text/x-lab");
        encode_integer(&mut section, 0x80, 7, value.len() as u64);
        section.extend_from_slice(&value);
        write_frame_header(&mut bytes, kind::HEADERS, section.len());
        bytes.extend_from_slice(&section);
        bytes.extend(hex("2f 02 0102"));
        bytes.extend(hex("00 04 74657374"));
        for split in [1, 3, bytes.len()] {
            let mut parser = ResponseParser::new();
            for piece in bytes.chunks(split) {
                parser.feed(piece).unwrap();
            }
            assert_eq!(parser.progress().status, Some(200));
            assert_eq!(parser.progress().body_bytes, 4);
            assert!(!parser.progress().complete);
            parser.finish().unwrap();
            assert!(parser.progress().complete);
        }
    }

    #[test]
    fn interim_and_trailers() {
        // :status 103 is static 24; trailers carry no :status.
        let mut bytes = hex("01 03 0000d8");
        bytes.extend(hex("01 03 0000d9"));
        bytes.extend(hex("00 01 78"));
        bytes.extend(hex("01 06 0000 21 61 01 62"));
        let mut parser = read(&bytes).unwrap();
        assert_eq!(parser.progress().status, Some(200));
        parser.finish().unwrap();
        assert_eq!(parser.progress().body_bytes, 1);
    }

    #[test]
    fn errors() {
        let error = read(&hex("01 03 010000")).err().unwrap();
        assert!(
            error.message().contains("Required Insert Count 1"),
            "{error}"
        );
        assert!(read(&hex("00 01 78")).is_err());
        let error = read(&hex("04 00")).err().unwrap();
        assert!(
            error
                .message()
                .contains("SETTINGS frame (type 0x4) is not allowed"),
            "{error}"
        );
        assert!(read(&hex("01 00")).is_err());
        assert!(read(&hex("01 80100000"))
            .err()
            .unwrap()
            .message()
            .contains("above the"));
        assert!(read(&hex("01 03 0000")).unwrap().finish().is_err());
        assert!(read(&hex("01 03 0000d9 00 05 61"))
            .unwrap()
            .finish()
            .is_err());
        assert!(ResponseParser::new().finish().is_err());
        let mut no_path = Vec::new();
        write_frame_header(&mut no_path, kind::HEADERS, 3);
        no_path.extend(hex("0000 d1"));
        assert!(RequestParser::new().feed(&no_path).is_err());
        assert!(RequestParser::new().feed(&hex("00 01 78")).is_err());
    }

    #[test]
    fn response_is_as_documented() {
        let mut expected = hex("01 21 0000 d9 54 0130 5f1d 18");
        expected.extend_from_slice(b"application/octet-stream");
        assert_eq!(encode_response(0), expected);
        let with_body = encode_response(100_000);
        let headers_end = 2 + usize::from(with_body[1]);
        assert_eq!(
            &with_body[headers_end..headers_end + 5],
            hex("00 80 01 86 a0")
        );
        assert_eq!(with_body.len(), headers_end + 5 + 100_000);
    }
}
