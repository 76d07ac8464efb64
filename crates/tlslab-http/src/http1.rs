//! HTTP/1.1 (RFC 9112): the request and response encoders and incremental parsers for
//! both sides, including chunked transfer coding.

use crate::error::quote;
use crate::{parse_status, HttpError, Padding, Progress, ReceivedRequest, Request, PADDING_NAME};

/// The longest header section either side accepts; real ones are a few hundred bytes.
const HEAD_LIMIT: usize = 64 * 1024;

pub(crate) fn encode_request(request: &Request, padding: Padding) -> Vec<u8> {
    let mut output = Vec::with_capacity(128 + request.path.len() + padding.bytes);
    output.extend_from_slice(b"GET ");
    output.extend_from_slice(request.path.as_bytes());
    output.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    output.extend_from_slice(request.authority.as_bytes());
    output.extend_from_slice(b"\r\nuser-agent: tlslab\r\naccept: */*\r\n");
    for length in padding.lengths() {
        output.extend_from_slice(PADDING_NAME.as_bytes());
        output.extend_from_slice(b": ");
        output.resize(output.len() + length, b'0');
        output.extend_from_slice(b"\r\n");
    }
    output.extend_from_slice(b"\r\n");
    output
}

pub(crate) fn encode_response(body_bytes: usize) -> Vec<u8> {
    let mut output = format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {body_bytes}\r\ncontent-type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    output.resize(output.len() + body_bytes, 0);
    output
}

/// Where the header section in `buffer` ends (just past its empty line), looking only at
/// line breaks from `from` on. Bare LF line ends are accepted (RFC 9112 2.2).
fn head_end(buffer: &[u8], from: usize) -> Option<usize> {
    let mut index = from;
    while let Some(offset) = buffer.get(index..)?.iter().position(|&byte| byte == b'\n') {
        let newline = index + offset;
        match buffer.get(newline + 1..newline + 3) {
            Some([b'\n', _]) => return Some(newline + 2),
            Some(b"\r\n") => return Some(newline + 3),
            None if buffer.get(newline + 1) == Some(&b'\n') => return Some(newline + 2),
            _ => {}
        }
        index = newline + 1;
    }
    None
}

/// A complete header section and the bytes that followed it.
struct Head<'a> {
    section: Vec<u8>,
    rest: std::borrow::Cow<'a, [u8]>,
}

/// Collects a header section from bytes fed in any split.
#[derive(Debug, Default)]
struct HeadBuffer {
    buffer: Vec<u8>,
    /// How much of `buffer` has been searched for the end of the section.
    scanned: usize,
}

impl HeadBuffer {
    /// Appends `data`; returns the complete section and the bytes after it once it ends.
    fn push<'a>(&mut self, data: &'a [u8], what: &str) -> Result<Option<Head<'a>>, HttpError> {
        // A whole section in one read (a small response, as a load run's are): taken from
        // the bytes themselves, with no copy into the buffer, and what follows it borrowed.
        if self.buffer.is_empty() {
            let blank = data
                .iter()
                .take_while(|&&byte| byte == b'\r' || byte == b'\n')
                .count();
            let data = &data[blank..];
            if let Some(end) = head_end(data, 0) {
                return Ok(Some(Head {
                    section: data[..end].to_vec(),
                    rest: std::borrow::Cow::Borrowed(&data[end..]),
                }));
            }
        }
        self.buffer.extend_from_slice(data);
        // RFC 9112 2.2: empty lines before the start line are to be ignored.
        if self.scanned == 0 {
            let blank = self
                .buffer
                .iter()
                .take_while(|&&byte| byte == b'\r' || byte == b'\n')
                .count();
            self.buffer.drain(..blank);
        }
        // The empty line is at most 3 bytes (LF CR LF), so it started no earlier than this.
        match head_end(&self.buffer, self.scanned.saturating_sub(2)) {
            Some(end) => {
                let rest = self.buffer.split_off(end);
                self.scanned = 0;
                Ok(Some(Head {
                    section: std::mem::take(&mut self.buffer),
                    rest: std::borrow::Cow::Owned(rest),
                }))
            }
            None if self.buffer.len() > HEAD_LIMIT => Err(HttpError::new(format!(
                "HTTP/1.1 {what} header section is longer than {HEAD_LIMIT} bytes"
            ))),
            None => {
                self.scanned = self.buffer.len();
                Ok(None)
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    fn starts_with_partial(&self, prefix: &[u8]) -> bool {
        let length = self.buffer.len().min(prefix.len());
        self.buffer[..length] == prefix[..length]
    }
}

/// The lines of a header section without line ends: the start line, then field lines.
fn lines(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    head.split(|&byte| byte == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.is_empty())
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|byte| !byte.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|byte| !byte.is_ascii_whitespace())
        .map_or(start, |last| last + 1);
    &bytes[start..end]
}

/// The value of the first field called `name` (ASCII, any case) among field lines.
fn field<'a>(mut fields: impl Iterator<Item = &'a [u8]>, name: &[u8]) -> Option<&'a [u8]> {
    fields.find_map(|line| {
        let colon = line.iter().position(|&byte| byte == b':')?;
        line[..colon]
            .eq_ignore_ascii_case(name)
            .then(|| trim(&line[colon + 1..]))
    })
}

/// How a message's body is delimited (RFC 9112 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// Reads the framing fields of a header section whose start line was already taken.
fn framing<'a>(
    fields: impl Iterator<Item = &'a [u8]>,
    what: &str,
) -> Result<Option<Framing>, HttpError> {
    let mut length: Option<u64> = None;
    let mut transfer_coding: Option<&[u8]> = None;
    for line in fields {
        // Obsolete line folding continues the previous field; neither framing field uses it.
        if line[0] == b' ' || line[0] == b'\t' {
            continue;
        }
        let colon = line.iter().position(|&byte| byte == b':').ok_or_else(|| {
            HttpError::new(format!(
                "HTTP/1.1 {what} has a field line without a colon: {}",
                quote(line)
            ))
        })?;
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"content-length") {
            // A list of equal values is tolerated (RFC 9110 8.6).
            for item in value.split(|&byte| byte == b',').map(trim) {
                let parsed = std::str::from_utf8(item)
                    .ok()
                    .filter(|text| {
                        !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
                    })
                    .and_then(|text| text.parse::<u64>().ok())
                    .ok_or_else(|| {
                        HttpError::new(format!(
                            "HTTP/1.1 {what} has an invalid content-length {}",
                            quote(value)
                        ))
                    })?;
                if length.is_some_and(|length| length != parsed) {
                    return Err(HttpError::new(format!(
                        "HTTP/1.1 {what} has conflicting content-length values"
                    )));
                }
                length = Some(parsed);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            transfer_coding = Some(value);
        }
    }
    // Transfer-Encoding overrides Content-Length (RFC 9112 6.3).
    if let Some(codings) = transfer_coding {
        let last = codings.rsplit(|&byte| byte == b',').next().map(trim);
        return Ok(Some(match last {
            Some(coding) if coding.eq_ignore_ascii_case(b"chunked") => Framing::Chunked,
            _ => Framing::UntilClose,
        }));
    }
    Ok(length.map(Framing::Length))
}

#[derive(Debug, Clone, Copy)]
enum Chunk {
    Size { value: u64, digits: u32 },
    Extension { value: u64 },
    Data { remaining: u64 },
    DataEnd,
    Trailer { line_length: usize, total: usize },
    Done,
}

/// Decodes the chunked transfer coding (RFC 9112 7.1), ignoring extensions and trailers.
#[derive(Debug)]
struct ChunkedDecoder {
    state: Chunk,
}

impl ChunkedDecoder {
    fn new() -> Self {
        ChunkedDecoder {
            state: Chunk::Size {
                value: 0,
                digits: 0,
            },
        }
    }

    fn is_done(&self) -> bool {
        matches!(self.state, Chunk::Done)
    }

    fn end_of_size_line(value: u64, digits: u32) -> Result<Chunk, HttpError> {
        if digits == 0 {
            return Err(HttpError::new(
                "HTTP/1.1 chunk size line has no hexadecimal digits",
            ));
        }
        Ok(if value == 0 {
            Chunk::Trailer {
                line_length: 0,
                total: 0,
            }
        } else {
            Chunk::Data { remaining: value }
        })
    }

    /// Consumes `data` up to the end of the body and adds the data bytes to `body_bytes`.
    fn feed(&mut self, data: &[u8], body_bytes: &mut u64) -> Result<(), HttpError> {
        let mut index = 0;
        while index < data.len() {
            if let Chunk::Data { remaining } = self.state {
                let take = remaining.min((data.len() - index) as u64);
                *body_bytes += take;
                index += take as usize;
                self.state = match remaining - take {
                    0 => Chunk::DataEnd,
                    remaining => Chunk::Data { remaining },
                };
                continue;
            }
            let byte = data[index];
            index += 1;
            self.state = match (self.state, byte) {
                (Chunk::Size { value, digits }, byte) if byte.is_ascii_hexdigit() => {
                    if digits == 15 {
                        return Err(HttpError::new(
                            "HTTP/1.1 chunk size has more than 15 hexadecimal digits",
                        ));
                    }
                    let digit = (byte as char).to_digit(16).unwrap_or(0);
                    Chunk::Size {
                        value: value << 4 | u64::from(digit),
                        digits: digits + 1,
                    }
                }
                (Chunk::Size { value, digits }, b';' | b' ' | b'\t') if digits > 0 => {
                    Chunk::Extension { value }
                }
                (state @ Chunk::Size { .. }, b'\r') => state,
                (Chunk::Size { value, digits }, b'\n') => Self::end_of_size_line(value, digits)?,
                (Chunk::Size { .. }, byte) => {
                    return Err(HttpError::new(format!(
                        "HTTP/1.1 chunk size line has an unexpected byte {}",
                        quote(&[byte])
                    )))
                }
                (Chunk::Extension { value }, b'\n') => Self::end_of_size_line(value, 1)?,
                (state @ Chunk::Extension { .. }, _) => state,
                (Chunk::DataEnd, b'\r') => Chunk::DataEnd,
                (Chunk::DataEnd, b'\n') => Chunk::Size {
                    value: 0,
                    digits: 0,
                },
                (Chunk::DataEnd, _) => {
                    return Err(HttpError::new(
                        "HTTP/1.1 chunk data is not followed by CRLF",
                    ))
                }
                (state @ Chunk::Trailer { .. }, b'\r') => state,
                (Chunk::Trailer { line_length: 0, .. }, b'\n') => {
                    self.state = Chunk::Done;
                    return Ok(());
                }
                (Chunk::Trailer { total, .. }, b'\n') => Chunk::Trailer {
                    line_length: 0,
                    total,
                },
                (Chunk::Trailer { line_length, total }, _) => {
                    if total >= HEAD_LIMIT {
                        return Err(HttpError::new(format!(
                            "HTTP/1.1 trailer section is longer than {HEAD_LIMIT} bytes"
                        )));
                    }
                    Chunk::Trailer {
                        line_length: line_length + 1,
                        total: total + 1,
                    }
                }
                (Chunk::Done | Chunk::Data { .. }, _) => return Ok(()),
            };
        }
        Ok(())
    }
}

#[derive(Debug)]
enum Body {
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

impl Body {
    fn new(framing: Framing) -> Self {
        match framing {
            Framing::Length(length) => Body::Length(length),
            Framing::Chunked => Body::Chunked(ChunkedDecoder::new()),
            Framing::UntilClose => Body::UntilClose,
        }
    }

    /// Consumes body bytes; returns whether the body is complete.
    fn feed(&mut self, data: &[u8], body_bytes: &mut u64) -> Result<bool, HttpError> {
        match self {
            Body::Length(remaining) => {
                let take = (*remaining).min(data.len() as u64);
                *remaining -= take;
                *body_bytes += take;
                Ok(*remaining == 0)
            }
            Body::Chunked(decoder) => {
                decoder.feed(data, body_bytes)?;
                Ok(decoder.is_done())
            }
            Body::UntilClose => {
                *body_bytes += data.len() as u64;
                Ok(false)
            }
        }
    }
}

/// The client's reader of the one response.
#[derive(Debug, Default)]
pub(crate) struct ResponseParser {
    head: HeadBuffer,
    body: Option<Body>,
    progress: Progress,
    /// The final response's header section, kept (it was allocated anyway) so that
    /// [`ResponseParser::server`] reads the `Server` field only when asked: a load's
    /// requests on a kept connection never ask.
    final_head: Vec<u8>,
}

impl ResponseParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn progress(&self) -> Progress {
        self.progress
    }

    pub(crate) fn server(&self) -> Option<&str> {
        let value = field(lines(&self.final_head).skip(1), b"server")?;
        std::str::from_utf8(value).ok()
    }

    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<(), HttpError> {
        if data.is_empty() {
            return Ok(());
        }
        self.progress.first_byte = true;
        // Bytes after a complete response (another response, or junk) are not ours.
        if self.progress.complete {
            return Ok(());
        }
        if self.body.is_some() {
            return self.feed_body(data);
        }
        // Borrowed unless an interim response leaves the rest of the bytes to read again.
        let mut data = std::borrow::Cow::Borrowed(data);
        loop {
            let Some(Head { section, rest }) = self.head.push(&data, "response")? else {
                if !self.head.starts_with_partial(b"HTTP/") {
                    return Err(HttpError::new(format!(
                        "HTTP/1.1 response does not start with a status line: {}",
                        quote(&self.head.buffer)
                    )));
                }
                return Ok(());
            };
            let mut lines = lines(&section);
            let status_line = lines.next().unwrap_or_default();
            let status = parse_status_line(status_line)?;
            let framing = framing(lines, "response")?;
            if (100..200).contains(&status) {
                if status == 101 {
                    return Err(HttpError::new(
                        "HTTP/1.1 server switched protocols (101), which was not asked for",
                    ));
                }
                // An interim response; the final one follows in the same bytes or later ones.
                data = std::borrow::Cow::Owned(rest.into_owned());
                continue;
            }
            self.progress.status = Some(status);
            self.final_head = section;
            // RFC 9112 6.3: 204 and 304 never have a body; HEAD is never sent.
            let framing = if status == 204 || status == 304 {
                Framing::Length(0)
            } else {
                framing.unwrap_or(Framing::UntilClose)
            };
            self.body = Some(Body::new(framing));
            if framing == Framing::Length(0) {
                self.progress.complete = true;
                return Ok(());
            }
            return self.feed_body(&rest);
        }
    }

    fn feed_body(&mut self, data: &[u8]) -> Result<(), HttpError> {
        if let Some(body) = &mut self.body {
            if body.feed(data, &mut self.progress.body_bytes)? {
                self.progress.complete = true;
            }
        }
        Ok(())
    }

    pub(crate) fn finish(&mut self) -> Result<(), HttpError> {
        if self.progress.complete {
            return Ok(());
        }
        match &self.body {
            Some(Body::UntilClose) => {
                self.progress.complete = true;
                Ok(())
            }
            Some(Body::Length(remaining)) => Err(HttpError::new(format!(
                "HTTP/1.1 connection closed with {remaining} bytes of the response body still to come"
            ))),
            Some(Body::Chunked(_)) => Err(HttpError::new(
                "HTTP/1.1 connection closed inside the chunked response body",
            )),
            None if self.head.is_empty() && !self.progress.first_byte => Err(HttpError::new(
                "HTTP/1.1 connection closed before any response byte",
            )),
            None => Err(HttpError::new(
                "HTTP/1.1 connection closed inside the response header section",
            )),
        }
    }
}

/// The status code of a status line such as `HTTP/1.1 200 OK` (the reason may be missing).
fn parse_status_line(line: &[u8]) -> Result<u16, HttpError> {
    let invalid = || {
        HttpError::new(format!(
            "HTTP/1.1 status line is not valid: {}",
            quote(line)
        ))
    };
    let mut parts = line.splitn(3, |&byte| byte == b' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with(b"HTTP/1.") {
        return Err(invalid());
    }
    parts.next().and_then(parse_status).ok_or_else(invalid)
}

/// The server's reader of the one request of a connection.
#[derive(Debug, Default)]
pub(crate) struct RequestParser {
    head: HeadBuffer,
    /// The request whose body is being skipped.
    pending: Option<(String, Body)>,
    delivered: bool,
}

impl RequestParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<Option<ReceivedRequest>, HttpError> {
        if self.delivered || data.is_empty() {
            return Ok(None);
        }
        if self.pending.is_none() {
            let Some(Head { section, rest }) = self.head.push(data, "request")? else {
                return Ok(None);
            };
            let mut lines = lines(&section);
            let path = parse_request_line(lines.next().unwrap_or_default())?;
            let framing = match framing(lines, "request")? {
                Some(Framing::UntilClose) => {
                    return Err(HttpError::new(
                        "HTTP/1.1 request has a transfer coding other than chunked",
                    ))
                }
                Some(framing) => framing,
                None => Framing::Length(0),
            };
            self.pending = Some((path, Body::new(framing)));
            return self.feed_body(&rest);
        }
        self.feed_body(data)
    }

    fn feed_body(&mut self, data: &[u8]) -> Result<Option<ReceivedRequest>, HttpError> {
        let Some((path, body)) = &mut self.pending else {
            return Ok(None);
        };
        let mut ignored = 0;
        if !body.feed(data, &mut ignored)? {
            return Ok(None);
        }
        self.delivered = true;
        Ok(Some(ReceivedRequest {
            path: std::mem::take(path),
            stream: 0,
        }))
    }
}

/// The target of a request line such as `GET / HTTP/1.1`.
fn parse_request_line(line: &[u8]) -> Result<String, HttpError> {
    let invalid = || {
        HttpError::new(format!(
            "HTTP/1.1 request line is not valid: {}",
            quote(line)
        ))
    };
    let parts: Vec<&[u8]> = line.split(|&byte| byte == b' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(invalid());
    };
    if method.is_empty() || !method.iter().all(u8::is_ascii_alphabetic) || target.is_empty() {
        return Err(invalid());
    }
    if !version.starts_with(b"HTTP/1.") {
        return Err(HttpError::new(format!(
            "HTTP/1.1 server got a request line for another version: {}",
            quote(line)
        )));
    }
    String::from_utf8(target.to_vec()).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(parts: &[&[u8]]) -> Result<Progress, HttpError> {
        let mut parser = ResponseParser::new();
        for part in parts {
            parser.feed(part)?;
        }
        Ok(parser.progress())
    }

    fn read_bytewise(bytes: &[u8]) -> Result<ResponseParser, HttpError> {
        let mut parser = ResponseParser::new();
        for byte in bytes {
            parser.feed(std::slice::from_ref(byte))?;
        }
        Ok(parser)
    }

    #[test]
    fn request_is_exactly_as_documented() {
        let request = Request {
            authority: "lab.test:8443",
            path: "/x?y=1",
            min_size: 0,
        };
        assert_eq!(
            encode_request(&request, Padding::NONE),
            b"GET /x?y=1 HTTP/1.1\r\nHost: lab.test:8443\r\nuser-agent: tlslab\r\naccept: */*\r\n\r\n"
        );
        let padded = String::from_utf8(encode_request(
            &request,
            Padding {
                fields: 1,
                bytes: 3,
            },
        ))
        .unwrap();
        assert!(padded.ends_with("accept: */*\r\nx-tlslab-padding: 000\r\n\r\n"));
    }

    #[test]
    fn content_length_body() {
        let progress =
            read_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", b"lo"]).unwrap();
        assert_eq!(
            progress,
            Progress {
                first_byte: true,
                status: Some(200),
                body_bytes: 5,
                complete: true
            }
        );
        let progress = read_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"]).unwrap();
        assert!(!progress.complete);
        assert_eq!(progress.body_bytes, 3);
    }

    #[test]
    fn a_section_read_whole_or_in_pieces_is_the_same_response() {
        // Blank lines before the status line are skipped (RFC 9112 2.2), whole or bytewise.
        let response =
            b"\r\n\r\nHTTP/1.1 404 Not Found\r\nServer: lab/1\r\nContent-Length: 3\r\n\r\nabc";
        let mut whole = ResponseParser::new();
        whole.feed(response).unwrap();
        let bytewise = read_bytewise(response).unwrap();
        for parser in [&whole, &bytewise] {
            assert_eq!(
                parser.progress(),
                Progress {
                    first_byte: true,
                    status: Some(404),
                    body_bytes: 3,
                    complete: true
                }
            );
            assert_eq!(parser.server(), Some("lab/1"));
        }
        // A section begun in one read and ended in the next.
        let progress = read_all(&[&response[..30], &response[30..]]).unwrap();
        assert_eq!((progress.status, progress.body_bytes), (Some(404), 3));
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let response = b"HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: gzip, Chunked\r\ncontent-length: 99\r\n\r\n\
            5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0 ; last\r\nx-trailer: 1\r\nx-other: 2\r\n\r\n";
        let parser = read_bytewise(response).unwrap();
        assert_eq!(parser.progress().body_bytes, 31);
        assert!(parser.progress().complete);
        let progress = read_all(&[response]).unwrap();
        assert_eq!((progress.body_bytes, progress.complete), (31, true));
        // Without the final empty line the trailer section is not over.
        let progress = read_all(&[&response[..response.len() - 2]]).unwrap();
        assert!(!progress.complete);
    }

    #[test]
    fn chunked_errors() {
        assert!(
            read_all(&[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"]).is_err()
        );
        assert!(
            read_all(&[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabX"]).is_err()
        );
        assert!(read_all(&[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\r\n"]).is_err());
        let long = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1000000000000000\r\n";
        assert!(read_all(&[long])
            .unwrap_err()
            .message()
            .contains("15 hexadecimal"));
    }

    #[test]
    fn close_delimited_body() {
        let mut parser = ResponseParser::new();
        parser.feed(b"HTTP/1.0 200 OK\nServer: x\n\nabc").unwrap();
        parser.feed(b"def").unwrap();
        assert!(!parser.progress().complete);
        parser.finish().unwrap();
        assert_eq!(parser.progress().body_bytes, 6);
        assert!(parser.progress().complete);
    }

    #[test]
    fn interim_responses_are_skipped() {
        let response = b"\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n";
        for progress in [
            read_all(&[response]).unwrap(),
            read_bytewise(response).unwrap().progress(),
        ] {
            assert_eq!(progress.status, Some(204));
            assert!(progress.complete);
            assert_eq!(progress.body_bytes, 0);
        }
        assert!(read_all(&[b"HTTP/1.1 101 Switching Protocols\r\n\r\n"]).is_err());
    }

    #[test]
    fn status_line_without_reason() {
        let progress = read_all(&[b"HTTP/1.1 404\r\ncontent-length: 0\r\n\r\n"]).unwrap();
        assert_eq!(progress.status, Some(404));
        assert!(progress.complete);
    }

    #[test]
    fn garbage_is_an_error_early() {
        let error = read_all(&[b"\x15\x03\x03\x00\x02"]).unwrap_err();
        assert!(
            error
                .message()
                .contains("does not start with a status line"),
            "{error}"
        );
        assert!(read_all(&[b"HTTP/1.1 2000 OK\r\n\r\n"]).is_err());
        assert!(read_all(&[b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"]).is_err());
        assert!(read_all(&[b"HTTP/1.1 200 OK\r\ncontent-length: 1x\r\n\r\n"]).is_err());
        assert!(
            read_all(&[b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\nContent-Length: 2\r\n\r\n"])
                .is_err()
        );
        let endless = [b'x'; 1000];
        let mut parser = ResponseParser::new();
        parser.feed(b"HTTP/1.1 200 OK\r\nx: ").unwrap();
        let mut result = Ok(());
        for _ in 0..100 {
            result = result.and_then(|()| parser.feed(&endless));
        }
        assert!(result.unwrap_err().message().contains("longer than 65536"));
    }

    #[test]
    fn finish_reports_truncation() {
        let mut parser = ResponseParser::new();
        parser
            .feed(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n12345")
            .unwrap();
        let error = parser.finish().unwrap_err();
        assert!(
            error.message().contains("5 bytes of the response body"),
            "{error}"
        );
        assert!(ResponseParser::new()
            .finish()
            .unwrap_err()
            .message()
            .contains("before any"));
    }

    #[test]
    fn server_reads_request_and_skips_its_body() {
        let mut parser = RequestParser::new();
        assert_eq!(
            parser
                .feed(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nab")
                .unwrap(),
            None
        );
        let request = parser.feed(b"cd").unwrap().unwrap();
        assert_eq!(
            request,
            ReceivedRequest {
                path: "/upload".into(),
                stream: 0
            }
        );
        assert_eq!(parser.feed(b"GET / HTTP/1.1\r\n\r\n").unwrap(), None);

        let mut parser = RequestParser::new();
        let request = parser
            .feed(b"POST /c HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            .unwrap();
        assert_eq!(request.unwrap().path, "/c");
    }

    #[test]
    fn server_rejects_bad_request_lines() {
        assert!(RequestParser::new().feed(b"GET /\r\n\r\n").is_err());
        assert!(RequestParser::new()
            .feed(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .is_err());
        assert!(RequestParser::new()
            .feed(b"G=T / HTTP/1.1\r\n\r\n")
            .is_err());
    }
}
