//! What a server sends back, as any bytes in any pieces: the HTTP/1.1, HTTP/2 (HPACK,
//! Huffman) and HTTP/3 (QPACK) response readers give progress or an error, never a panic.

use tlslab_http::{ResponseReader, Version};

pub fn check(bytes: &[u8]) {
    let Some((&split, data)) = bytes.split_first() else {
        return;
    };
    for version in [Version::Http11, Version::Http2, Version::Http3] {
        let mut reader = ResponseReader::new(version);
        // The first byte chooses the size of the pieces the rest arrives in.
        let mut failed = false;
        for piece in data.chunks(usize::from(split).max(1)) {
            if reader.feed(piece).is_err() {
                failed = true;
                break;
            }
            let _ = reader.take_output();
        }
        if !failed {
            let _ = reader.finish();
        }
        let _ = reader.progress();
    }
}
