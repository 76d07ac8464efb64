//! What a client sends the lab server, as any bytes in any pieces: the request readers and
//! the answering session give requests, answers or an error, never a panic.

use tlslab_http::{RequestReader, ServerSession, Version};

pub fn check(bytes: &[u8]) {
    let Some((&split, data)) = bytes.split_first() else {
        return;
    };
    let size = usize::from(split).max(1);
    for version in [Version::Http11, Version::Http2, Version::Http3] {
        let mut reader = RequestReader::new(version);
        for piece in data.chunks(size) {
            if reader.feed(piece).is_err() {
                break;
            }
            let _ = reader.take_output();
        }
    }
    for alpn in [None, Some(&b"h2"[..])] {
        let mut session = ServerSession::for_alpn(alpn);
        let mut out = Vec::new();
        for piece in data.chunks(size) {
            out.clear();
            if session.feed(piece, 64, &mut out).is_err() {
                break;
            }
        }
    }
}
