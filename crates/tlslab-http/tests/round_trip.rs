//! Client and lab server talking to each other through the public API only, in every
//! version, with bodies around the HTTP/2 frame size and bytes fed whole or one at a time.

use tlslab_http::{
    encode_request, encode_response, http2_server_preface, http3_control_stream, Progress,
    ReceivedRequest, Request, RequestReader, ResponseReader, Version,
};

const VERSIONS: [Version; 3] = [Version::Http11, Version::Http2, Version::Http3];
const BODIES: [usize; 4] = [0, 1, 16_384, 100_000];

/// Feeds `bytes` in pieces of `piece` bytes and returns the first request completed.
fn serve(server: &mut RequestReader, bytes: &[u8], piece: usize) -> ReceivedRequest {
    let mut received = None;
    for chunk in bytes.chunks(piece) {
        if let Some(request) = server.feed(chunk).unwrap() {
            assert!(received.is_none(), "one request, delivered once");
            received = Some(request);
        }
    }
    received.expect("the request is complete")
}

fn exchange(
    version: Version,
    request: &Request,
    body: usize,
    piece: usize,
) -> (ReceivedRequest, Progress) {
    let request_bytes = encode_request(version, request);
    assert!(request_bytes.len() >= request.min_size);

    let mut server = RequestReader::new(version);
    let received = serve(&mut server, &request_bytes, piece);

    let mut response = Vec::new();
    if version == Version::Http2 {
        response.extend(http2_server_preface());
        response.extend(server.take_output());
    } else {
        assert!(server.take_output().is_empty());
    }
    // HTTP/2: the first byte of our response is the end of the first frame header on stream 1.
    let first_byte = if version == Version::Http2 {
        response.len() + 8
    } else {
        0
    };
    response.extend(encode_response(version, received.stream, body));

    let mut client = ResponseReader::new(version);
    let mut first_byte_at = None;
    for (index, chunk) in response.chunks(piece).enumerate() {
        let progress = client.feed(chunk).unwrap();
        if progress.first_byte && first_byte_at.is_none() {
            first_byte_at = Some(index * piece);
        }
        // Nothing is complete before the last byte.
        assert!(!progress.complete || (index + 1) * piece >= response.len());
    }
    if piece == 1 {
        assert_eq!(first_byte_at, Some(first_byte));
    }
    let progress = match version {
        Version::Http3 => {
            assert!(!client.progress().complete);
            client.finish().unwrap()
        }
        _ => client.progress(),
    };
    if version == Version::Http2 {
        // The client acknowledges the server's SETTINGS; the server takes the ack quietly.
        let acknowledgement = client.take_output();
        assert!(!acknowledgement.is_empty());
        assert_eq!(server.feed(&acknowledgement).unwrap(), None);
        assert!(server.take_output().is_empty());
    } else {
        assert!(client.take_output().is_empty());
    }
    (received, progress)
}

#[test]
fn every_version_and_body_size_round_trips() {
    let request = Request {
        authority: "lab.test:4433",
        path: "/bytes?size=100000",
        min_size: 0,
    };
    for version in VERSIONS {
        for body in BODIES {
            for piece in [usize::MAX, 1, 1000] {
                let (received, progress) = exchange(version, &request, body, piece);
                assert_eq!(received.path, "/bytes?size=100000", "{version}");
                let stream = if version == Version::Http2 { 1 } else { 0 };
                assert_eq!(received.stream, stream);
                assert_eq!(
                    progress,
                    Progress {
                        first_byte: true,
                        status: Some(200),
                        body_bytes: body as u64,
                        complete: true
                    },
                    "{version} with {body} body bytes in pieces of {piece}"
                );
            }
        }
    }
}

#[test]
fn root_path_round_trips() {
    let request = Request {
        authority: "localhost",
        path: "/",
        min_size: 0,
    };
    for version in VERSIONS {
        let (received, progress) = exchange(version, &request, 10, 7);
        assert_eq!(received.path, "/");
        assert!(progress.complete);
    }
}

#[test]
fn padding_reaches_min_size_in_every_version() {
    for version in VERSIONS {
        let plain = encode_request(
            version,
            &Request {
                authority: "lab.test",
                path: "/",
                min_size: 0,
            },
        );
        for min_size in [
            0,
            1,
            plain.len(),
            plain.len() + 1,
            plain.len() + 30,
            1_000,
            4_200,
            16_500,
            30_000,
        ] {
            let request = Request {
                authority: "lab.test",
                path: "/padded",
                min_size,
            };
            let bytes = encode_request(version, &request);
            assert!(
                bytes.len() >= min_size,
                "{version}: {} < {min_size}",
                bytes.len()
            );
            // Exact once there is room for a padding field, unless a length prefix grows or
            // (HTTP/2) a CONTINUATION frame header is needed.
            if min_size >= plain.len() + 25 {
                let slack = if version == Version::Http2 { 9 } else { 2 };
                assert!(
                    bytes.len() <= min_size + slack,
                    "{version}: {} for {min_size}",
                    bytes.len()
                );
            } else {
                assert!(
                    bytes.len() <= plain.len() + 25,
                    "{version}: {} for {min_size}",
                    bytes.len()
                );
            }
            let (received, progress) = exchange(version, &request, 3, 1 + min_size % 97);
            assert_eq!(received.path, "/padded");
            assert_eq!(progress.body_bytes, 3);
        }
    }
}

#[test]
fn control_stream_announces_no_dynamic_table() {
    // Stream type 0, SETTINGS of 4 bytes: QPACK_MAX_TABLE_CAPACITY 0, QPACK_BLOCKED_STREAMS 0.
    assert_eq!(
        http3_control_stream(),
        [0x00, 0x04, 0x04, 0x01, 0x00, 0x07, 0x00]
    );
}
