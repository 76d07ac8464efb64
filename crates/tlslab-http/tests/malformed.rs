//! Malformed input gives an error, never a panic, and the reader stays failed.

use tlslab_http::{
    encode_request, encode_response, Request, RequestReader, ResponseReader, Version,
};

const VERSIONS: [Version; 3] = [Version::Http11, Version::Http2, Version::Http3];

#[test]
fn bad_http2_preface() {
    let mut server = RequestReader::new(Version::Http2);
    let error = server
        .feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap_err();
    assert!(error.to_string().contains("preface"), "{error}");
    // The reader stays failed with the same error.
    assert_eq!(server.feed(b"PRI").unwrap_err(), error);
}

#[test]
fn oversize_http2_frame() {
    let mut client = ResponseReader::new(Version::Http2);
    let error = client
        .feed(&[0x00, 0x4e, 0x20, 0x01, 0x04, 0x00, 0x00, 0x00, 0x01])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "HTTP/2 frame of type 0x1 on stream 1 is 20000 bytes, above the 16384 the client allows"
    );
    assert!(client.finish().is_err());

    let mut server = RequestReader::new(Version::Http2);
    let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    bytes.extend_from_slice(&[0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]);
    let error = server.feed(&bytes).unwrap_err();
    assert!(error.to_string().contains("the server allows"), "{error}");
}

#[test]
fn garbage_status_line() {
    let mut client = ResponseReader::new(Version::Http11);
    let error = client.feed(b"SSH-2.0-OpenSSH_9.6\r\n").unwrap_err();
    assert!(error.to_string().contains("status line"), "{error}");
    let mut client = ResponseReader::new(Version::Http11);
    assert!(client.feed(b"HTTP/1.1 OK 200\r\n\r\n").is_err());
}

#[test]
fn another_versions_bytes_are_rejected() {
    // A client or server that negotiated one version but reads another's bytes must fail, not
    // panic and not report a response or request.
    let request = Request {
        authority: "lab.test",
        path: "/",
        min_size: 0,
    };
    for sent in VERSIONS {
        for read in VERSIONS {
            if sent == read {
                continue;
            }
            let request_bytes = encode_request(sent, &request);
            let received = RequestReader::new(read).feed(&request_bytes);
            assert!(
                !matches!(received, Ok(Some(_))),
                "{sent} request read as {read}"
            );
            let response_bytes = encode_response(sent, 1, 100);
            let mut client = ResponseReader::new(read);
            let accepted = client.feed(&response_bytes).is_ok() && client.finish().is_ok();
            assert!(!accepted, "{sent} response read as {read}");
        }
    }
}

#[test]
fn truncated_and_corrupted_inputs_never_panic() {
    // Every prefix, and every single-byte corruption, of real exchanges.
    let request = Request {
        authority: "lab.test",
        path: "/x",
        min_size: 300,
    };
    for version in VERSIONS {
        let mut response = Vec::new();
        if version == Version::Http2 {
            response.extend(tlslab_http::http2_server_preface());
        }
        response.extend(encode_response(version, 1, 40));
        let request_bytes = encode_request(version, &request);
        for (bytes, is_request) in [(&request_bytes, true), (&response, false)] {
            for position in 0..bytes.len() {
                for replacement in [0x00, 0xff, b'\n', 0x80, 0x3f] {
                    let mut corrupted = bytes.clone();
                    corrupted[position] = replacement;
                    if is_request {
                        let _ = RequestReader::new(version).feed(&corrupted);
                        let _ = RequestReader::new(version).feed(&corrupted[..position]);
                    } else {
                        let mut client = ResponseReader::new(version);
                        let _ = client.feed(&corrupted);
                        let _ = client.finish();
                        let mut client = ResponseReader::new(version);
                        let _ = client.feed(&corrupted[..position]);
                        let _ = client.finish();
                    }
                }
            }
        }
    }
}
