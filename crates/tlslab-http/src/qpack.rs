//! QPACK (RFC 9204), the field compression of HTTP/3, restricted to its static table.
//!
//! Both sides of tlslab announce a dynamic table capacity of 0 on their control streams
//! (see [`crate::http3_control_stream`]), so a conforming peer never refers to a dynamic
//! table and the encoder and decoder streams carry nothing we need. A field section that
//! does refer to one is an error rather than a stream blocked forever.

use crate::hpack::{decode_integer, decode_string, encode_integer, encode_string, HeaderField};
use crate::HttpError;

/// RFC 9204 Appendix A; index 0 is the first entry.
pub(crate) const STATIC_TABLE: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Static indices this crate encodes with.
pub(crate) mod index {
    pub(crate) const AUTHORITY: u64 = 0;
    pub(crate) const PATH_ROOT: u64 = 1;
    pub(crate) const CONTENT_LENGTH: u64 = 4;
    pub(crate) const METHOD_GET: u64 = 17;
    pub(crate) const SCHEME_HTTPS: u64 = 23;
    pub(crate) const STATUS_200: u64 = 25;
    pub(crate) const ACCEPT_ANY: u64 = 29;
    pub(crate) const CONTENT_TYPE: u64 = 44;
    pub(crate) const USER_AGENT: u64 = 95;
}

fn static_entry(index: u64) -> Result<(&'static str, &'static str), HttpError> {
    usize::try_from(index)
        .ok()
        .and_then(|index| STATIC_TABLE.get(index))
        .copied()
        .ok_or_else(|| {
            HttpError::new(format!(
                "QPACK field line refers to static index {index}, but the static table ends at 98"
            ))
        })
}

fn dynamic_reference() -> HttpError {
    HttpError::new("QPACK field line refers to the dynamic table, whose capacity we set to 0")
}

/// Decodes an encoded field section (RFC 9204 4.5) that refers only to the static table.
pub(crate) fn decode_field_section(section: &[u8]) -> Result<Vec<HeaderField>, HttpError> {
    let (required_insert_count, used) = decode_integer(section, 8)?;
    if required_insert_count != 0 {
        return Err(HttpError::new(format!(
            "QPACK field section has Required Insert Count {required_insert_count}, but we allow no dynamic table"
        )));
    }
    // The base only locates dynamic entries, of which there are none.
    let (_delta_base, base_used) = decode_integer(&section[used..], 7)?;
    let mut rest = &section[used + base_used..];
    let mut fields = Vec::new();
    while let Some(&first) = rest.first() {
        let used = if first & 0x80 != 0 {
            // Indexed field line: 1 T index(6).
            if first & 0x40 == 0 {
                return Err(dynamic_reference());
            }
            let (index, used) = decode_integer(rest, 6)?;
            let (name, value) = static_entry(index)?;
            fields.push(HeaderField {
                name: name.as_bytes().to_vec(),
                value: value.as_bytes().to_vec(),
            });
            used
        } else if first & 0xc0 == 0x40 {
            // Literal with name reference: 0 1 N T index(4), then the value.
            if first & 0x10 == 0 {
                return Err(dynamic_reference());
            }
            let (index, used) = decode_integer(rest, 4)?;
            let (name, _) = static_entry(index)?;
            let (value, value_used) = decode_string(&rest[used..], 7)?;
            fields.push(HeaderField {
                name: name.as_bytes().to_vec(),
                value,
            });
            used + value_used
        } else if first & 0xe0 == 0x20 {
            // Literal with literal name: 0 0 1 N H length(3), name, then the value.
            let (name, used) = decode_string(rest, 3)?;
            let (value, value_used) = decode_string(&rest[used..], 7)?;
            fields.push(HeaderField { name, value });
            used + value_used
        } else {
            // 0001 (indexed post-base) and 0000 (literal with post-base name) are dynamic.
            return Err(dynamic_reference());
        };
        rest = &rest[used..];
    }
    Ok(fields)
}

/// The field section prefix for a section without dynamic references: Required Insert
/// Count 0 and Delta Base 0.
pub(crate) fn encode_prefix(output: &mut Vec<u8>) {
    output.extend_from_slice(&[0x00, 0x00]);
}

/// An indexed field line for a static entry.
pub(crate) fn encode_indexed(output: &mut Vec<u8>, index: u64) {
    encode_integer(output, 0xc0, 6, index);
}

/// A literal field line with a static name reference and a plain value.
pub(crate) fn encode_literal_with_name_index(output: &mut Vec<u8>, index: u64, value: &[u8]) {
    encode_integer(output, 0x50, 4, index);
    encode_string(output, 0x00, 7, value);
}

/// A literal field line with a literal name; neither string is Huffman-coded.
pub(crate) fn encode_literal(output: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    encode_string(output, 0x20, 3, name);
    encode_string(output, 0x00, 7, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::find;
    use crate::hpack::tests::hex;
    use crate::huffman;

    #[test]
    fn decodes_a_hand_built_section_with_huffman() {
        // Prefix 0 0; :method GET (static 17); :scheme https (23); :authority (name 0) with
        // the Huffman-coded "www.example.com" of RFC 7541 C.4.1; :path / (1); then a literal
        // name "x-lab" (plain) with a Huffman-coded value.
        let mut section = hex("0000 d1 d7 50 8cf1e3c2e5f23a6ba0ab90f4ff c1");
        section.extend_from_slice(&[0x25]);
        section.extend_from_slice(b"x-lab");
        let value = huffman::encode(b"application/octet-stream");
        encode_integer(&mut section, 0x80, 7, value.len() as u64);
        section.extend_from_slice(&value);

        let fields = decode_field_section(&section).unwrap();
        assert_eq!(fields.len(), 5);
        assert_eq!(find(&fields, ":method"), Some(&b"GET"[..]));
        assert_eq!(find(&fields, ":scheme"), Some(&b"https"[..]));
        assert_eq!(find(&fields, ":authority"), Some(&b"www.example.com"[..]));
        assert_eq!(find(&fields, ":path"), Some(&b"/"[..]));
        assert_eq!(
            find(&fields, "x-lab"),
            Some(&b"application/octet-stream"[..])
        );
    }

    #[test]
    fn huffman_coded_literal_names_decode() {
        // 0x28 = 001 N=0 H=1 length: the name itself is Huffman-coded.
        let name = huffman::encode(b"server");
        let mut section = vec![0x00, 0x00];
        encode_integer(&mut section, 0x28, 3, name.len() as u64);
        section.extend_from_slice(&name);
        encode_string(&mut section, 0, 7, b"nginx");
        let fields = decode_field_section(&section).unwrap();
        assert_eq!(find(&fields, "server"), Some(&b"nginx"[..]));
    }

    #[test]
    fn encoded_lines_decode() {
        let mut section = Vec::new();
        encode_prefix(&mut section);
        encode_indexed(&mut section, index::STATUS_200);
        encode_literal_with_name_index(&mut section, index::CONTENT_LENGTH, b"100000");
        encode_literal_with_name_index(&mut section, index::USER_AGENT, b"tlslab");
        encode_literal(&mut section, b"x-tlslab-padding", &[b'0'; 200]);
        let fields = decode_field_section(&section).unwrap();
        assert_eq!(find(&fields, ":status"), Some(&b"200"[..]));
        assert_eq!(find(&fields, "content-length"), Some(&b"100000"[..]));
        assert_eq!(find(&fields, "user-agent"), Some(&b"tlslab"[..]));
        assert_eq!(find(&fields, "x-tlslab-padding").unwrap().len(), 200);
    }

    #[test]
    fn dynamic_references_are_errors() {
        let error = decode_field_section(&[0x02, 0x00, 0xd9]).unwrap_err();
        assert!(
            error.message().contains("Required Insert Count 2"),
            "{error}"
        );
        assert!(decode_field_section(&[0x00, 0x00, 0x81]).is_err());
        assert!(decode_field_section(&[0x00, 0x00, 0x41, 0x00]).is_err());
        assert!(decode_field_section(&[0x00, 0x00, 0x10]).is_err());
        assert!(decode_field_section(&[0x00, 0x00, 0x00]).is_err());
        let error = decode_field_section(&[0x00, 0x00, 0xff, 0x24]).unwrap_err();
        assert!(error.message().contains("static index 99"), "{error}");
        assert!(decode_field_section(&[]).is_err());
        assert!(decode_field_section(&[0x00, 0x00, 0x54, 0x05, b'1']).is_err());
    }
}
