//! [`ServerSession`]: the HTTP side of one server connection over TLS, the minimal peer of
//! the client codecs (the `http_request` fuzz target drives it). The lab server no longer uses
//! it: hyper serves its site (tlslab-site).

use crate::{encode_response, http2_server_preface, HttpError, RequestReader, Version};

/// The HTTP side of one lab-server connection over TCP: request bytes in, answers out. Every
/// request is answered with status 200 and a body of a fixed size.
#[derive(Debug)]
pub struct ServerSession {
    version: Version,
    reader: RequestReader,
    preface_sent: bool,
}

impl ServerSession {
    /// The session for the protocol ALPN chose; a client without ALPN (openssl s_client, ab)
    /// speaks HTTP/1.1.
    pub fn for_alpn(alpn: Option<&[u8]>) -> ServerSession {
        let version = match alpn {
            Some(b"h2") => Version::Http2,
            _ => Version::Http11,
        };
        ServerSession {
            version,
            reader: RequestReader::new(version),
            preface_sent: false,
        }
    }

    /// Feeds request bytes and appends to `out` whatever must go back: the HTTP/2 preface and
    /// acknowledgements, and a response with `body` bytes for each complete request. Returns
    /// how many requests were answered.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        body: u64,
        out: &mut Vec<u8>,
    ) -> Result<u64, HttpError> {
        if self.version == Version::Http2 && !self.preface_sent {
            out.extend_from_slice(&http2_server_preface());
            self.preface_sent = true;
        }
        let mut answered = 0;
        loop {
            let request = self.reader.feed(data)?;
            out.extend_from_slice(&self.reader.take_output());
            let Some(request) = request else {
                return Ok(answered);
            };
            answered += 1;
            out.extend_from_slice(&encode_response(
                self.version,
                request.stream,
                body as usize,
            ));
            // Further pipelined requests may already be buffered in the reader.
            data = &[];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{encode_request, Request, ResponseReader};

    #[test]
    fn answers_each_request_with_the_body_and_counts_it() {
        for (alpn, version) in [(None, Version::Http11), (Some(&b"h2"[..]), Version::Http2)] {
            let mut session = ServerSession::for_alpn(alpn);
            let request = encode_request(
                version,
                &Request {
                    authority: "lab.test",
                    path: "/",
                    min_size: 0,
                },
            );
            let mut out = Vec::new();
            let (head, tail) = request.split_at(10);
            assert_eq!(session.feed(head, 300, &mut out).unwrap(), 0);
            assert_eq!(session.feed(tail, 300, &mut out).unwrap(), 1);
            let mut reader = ResponseReader::new(version);
            let progress = reader.feed(&out).unwrap();
            assert!(progress.complete, "{version}");
            assert_eq!(progress.body_bytes, 300);
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut session = ServerSession::for_alpn(None);
        let mut out = Vec::new();
        assert!(session
            .feed(b"\x16\x03\x01 not http\r\n\r\n", 10, &mut out)
            .is_err());
    }
}
