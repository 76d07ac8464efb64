//! HPACK (RFC 7541), the field compression of HTTP/2, and the prefixed integers and string
//! literals that QPACK shares with it.
//!
//! The decoder is complete (static and dynamic tables, size updates, Huffman) because
//! servers such as nginx index and Huffman-code what they send. The encoder side is only
//! what this crate emits: indexed static entries and literals without indexing or Huffman,
//! so the peer's decoder state never depends on ours and request sizes are exact.

use std::collections::VecDeque;

use crate::{huffman, HttpError};

/// One decoded field line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderField {
    pub(crate) name: Vec<u8>,
    pub(crate) value: Vec<u8>,
}

impl HeaderField {
    fn new(name: &[u8], value: &[u8]) -> Self {
        HeaderField {
            name: name.to_vec(),
            value: value.to_vec(),
        }
    }

    /// The size the dynamic table charges for this entry (RFC 7541 4.1).
    fn table_size(&self) -> usize {
        self.name.len() + self.value.len() + 32
    }
}

/// The value of the first field called `name`, which callers use for pseudo-header fields.
pub(crate) fn find<'a>(fields: &'a [HeaderField], name: &str) -> Option<&'a [u8]> {
    fields
        .iter()
        .find(|field| field.name == name.as_bytes())
        .map(|field| field.value.as_slice())
}

/// RFC 7541 Appendix A; index 1 is the first entry.
pub(crate) const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Static indices this crate encodes with.
pub(crate) mod index {
    pub(crate) const AUTHORITY: u64 = 1;
    pub(crate) const METHOD_GET: u64 = 2;
    pub(crate) const PATH: u64 = 4;
    pub(crate) const SCHEME_HTTPS: u64 = 7;
    pub(crate) const STATUS_200: u64 = 8;
    pub(crate) const ACCEPT: u64 = 19;
    pub(crate) const CONTENT_LENGTH: u64 = 28;
    pub(crate) const CONTENT_TYPE: u64 = 31;
    pub(crate) const USER_AGENT: u64 = 58;
}

fn truncated() -> HttpError {
    HttpError::new("field section ends in the middle of a field line")
}

/// Decodes an integer with an N-bit prefix (RFC 7541 5.1): returns the value and the number
/// of bytes it took.
pub(crate) fn decode_integer(input: &[u8], prefix_bits: u32) -> Result<(u64, usize), HttpError> {
    let first = *input.first().ok_or_else(truncated)?;
    let mask = ((1u16 << prefix_bits) - 1) as u8;
    let mut value = u64::from(first & mask);
    if value < u64::from(mask) {
        return Ok((value, 1));
    }
    for (offset, &byte) in input[1..].iter().enumerate() {
        // Nine continuation bytes hold 63 bits; anything longer is hostile, not a header.
        if offset >= 9 {
            break;
        }
        value += u64::from(byte & 0x7f) << (7 * offset);
        if byte & 0x80 == 0 {
            return Ok((value, offset + 2));
        }
    }
    if input.len() > 10 {
        return Err(HttpError::new("prefixed integer is longer than 63 bits"));
    }
    Err(truncated())
}

/// Decodes a string literal whose length has an N-bit prefix and whose Huffman flag is the
/// bit just above the prefix (bit 7 in HPACK; QPACK also uses bit 3 and bit 5).
pub(crate) fn decode_string(input: &[u8], prefix_bits: u32) -> Result<(Vec<u8>, usize), HttpError> {
    let first = *input.first().ok_or_else(truncated)?;
    let huffman_coded = first & (1 << prefix_bits) != 0;
    let (length, used) = decode_integer(input, prefix_bits)?;
    let end = usize::try_from(length)
        .ok()
        .and_then(|length| used.checked_add(length))
        .filter(|&end| end <= input.len())
        .ok_or_else(|| {
            HttpError::new(format!(
                "string literal of {length} bytes runs past the end of the field section"
            ))
        })?;
    let bytes = &input[used..end];
    let text = if huffman_coded {
        huffman::decode(bytes)?
    } else {
        bytes.to_vec()
    };
    Ok((text, end))
}

/// Encodes an integer with an N-bit prefix; `flags` are the bits above the prefix.
pub(crate) fn encode_integer(output: &mut Vec<u8>, flags: u8, prefix_bits: u32, value: u64) {
    let mask = (1u64 << prefix_bits) - 1;
    if value < mask {
        output.push(flags | value as u8);
        return;
    }
    output.push(flags | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        output.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    output.push(rest as u8);
}

/// Encodes a string literal without Huffman coding; `flags` are the bits above the prefix
/// other than the Huffman flag.
pub(crate) fn encode_string(output: &mut Vec<u8>, flags: u8, prefix_bits: u32, text: &[u8]) {
    encode_integer(output, flags, prefix_bits, text.len() as u64);
    output.extend_from_slice(text);
}

/// An indexed field line (RFC 7541 6.1) for a static entry.
pub(crate) fn encode_indexed(output: &mut Vec<u8>, index: u64) {
    encode_integer(output, 0x80, 7, index);
}

/// A literal field line without indexing whose name is a static entry (RFC 7541 6.2.2).
pub(crate) fn encode_literal_with_name_index(output: &mut Vec<u8>, index: u64, value: &[u8]) {
    encode_integer(output, 0x00, 4, index);
    encode_string(output, 0x00, 7, value);
}

/// A literal field line without indexing with a literal name (RFC 7541 6.2.2).
pub(crate) fn encode_literal(output: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    output.push(0x00);
    encode_string(output, 0x00, 7, name);
    encode_string(output, 0x00, 7, value);
}

/// The decoding side of one HTTP/2 connection direction. Its dynamic table must see every
/// header block the peer sends, in order, whichever stream it is on.
#[derive(Debug)]
pub(crate) struct Decoder {
    /// Newest entry first, so dynamic index 62 is `table[0]`.
    table: VecDeque<HeaderField>,
    size: usize,
    /// The current maximum, which the peer lowers or raises with size updates.
    capacity: usize,
    /// SETTINGS_HEADER_TABLE_SIZE as we advertised it: the ceiling for size updates.
    limit: usize,
}

impl Decoder {
    /// A decoder for a connection where we advertised a table of `limit` bytes (4,096 unless
    /// SETTINGS_HEADER_TABLE_SIZE says otherwise).
    pub(crate) fn new(limit: usize) -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            capacity: limit,
            limit,
        }
    }

    /// Decodes one complete header block (HEADERS plus CONTINUATION fragments).
    pub(crate) fn decode(&mut self, block: &[u8]) -> Result<Vec<HeaderField>, HttpError> {
        let mut fields = Vec::new();
        let mut rest = block;
        while let Some(&first) = rest.first() {
            let used = if first & 0x80 != 0 {
                let (index, used) = decode_integer(rest, 7)?;
                fields.push(self.entry(index)?);
                used
            } else if first & 0xc0 == 0x40 {
                let (field, used) = self.literal(rest, 6)?;
                self.insert(field.clone());
                fields.push(field);
                used
            } else if first & 0xe0 == 0x20 {
                let (capacity, used) = decode_integer(rest, 5)?;
                if capacity > self.limit as u64 {
                    return Err(HttpError::new(format!(
                        "HPACK dynamic table size update to {capacity} bytes is above the {} allowed",
                        self.limit
                    )));
                }
                self.capacity = capacity as usize;
                self.evict(0);
                used
            } else {
                // Without indexing (0000) and never indexed (0001) decode alike here; the
                // difference only matters to intermediaries that re-encode.
                let (field, used) = self.literal(rest, 4)?;
                fields.push(field);
                used
            };
            rest = &rest[used..];
        }
        Ok(fields)
    }

    /// A literal field line: name index with `prefix_bits` (0 = literal name), then value.
    fn literal(&self, input: &[u8], prefix_bits: u32) -> Result<(HeaderField, usize), HttpError> {
        let (index, mut used) = decode_integer(input, prefix_bits)?;
        let name = if index == 0 {
            let (name, name_used) = decode_string(&input[used..], 7)?;
            used += name_used;
            name
        } else {
            self.entry(index)?.name
        };
        let (value, value_used) = decode_string(&input[used..], 7)?;
        Ok((HeaderField { name, value }, used + value_used))
    }

    fn entry(&self, index: u64) -> Result<HeaderField, HttpError> {
        let static_length = STATIC_TABLE.len() as u64;
        if index == 0 {
            return Err(HttpError::new("HPACK field line refers to index 0"));
        }
        if index <= static_length {
            let (name, value) = STATIC_TABLE[(index - 1) as usize];
            return Ok(HeaderField::new(name.as_bytes(), value.as_bytes()));
        }
        usize::try_from(index - static_length - 1)
            .ok()
            .and_then(|position| self.table.get(position))
            .cloned()
            .ok_or_else(|| {
                HttpError::new(format!(
                    "HPACK field line refers to index {index}, but the tables end at {}",
                    static_length + self.table.len() as u64
                ))
            })
    }

    fn insert(&mut self, field: HeaderField) {
        let size = field.table_size();
        // RFC 7541 4.4: an entry larger than the table empties it and is not an error.
        if size > self.capacity {
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front(field);
    }

    /// Drops the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.capacity {
            match self.table.pop_back() {
                Some(oldest) => self.size -= oldest.table_size(),
                None => break,
            }
        }
    }

    #[cfg(test)]
    fn entries(&self) -> Vec<(String, String)> {
        self.table
            .iter()
            .map(|field| {
                (
                    String::from_utf8(field.name.clone()).unwrap(),
                    String::from_utf8(field.value.clone()).unwrap(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    fn pairs(fields: &[HeaderField]) -> Vec<(String, String)> {
        fields
            .iter()
            .map(|field| {
                (
                    String::from_utf8(field.name.clone()).unwrap(),
                    String::from_utf8(field.value.clone()).unwrap(),
                )
            })
            .collect()
    }

    fn owned(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn integers_from_appendix_c1() {
        let mut output = Vec::new();
        encode_integer(&mut output, 0, 5, 10);
        assert_eq!(output, [0x0a]);
        output.clear();
        encode_integer(&mut output, 0, 5, 1337);
        assert_eq!(output, [0x1f, 0x9a, 0x0a]);
        output.clear();
        encode_integer(&mut output, 0, 8, 42);
        assert_eq!(output, [0x2a]);
        assert_eq!(decode_integer(&[0xea], 5).unwrap(), (10, 1));
        assert_eq!(decode_integer(&[0x1f, 0x9a, 0x0a], 5).unwrap(), (1337, 3));
        assert_eq!(decode_integer(&[0x2a], 8).unwrap(), (42, 1));
        for value in [0, 14, 15, 16, 127, 128, 300, 16_383, 1 << 40] {
            for prefix in [3, 4, 5, 6, 7, 8] {
                let mut output = Vec::new();
                encode_integer(&mut output, 0, prefix, value);
                assert_eq!(
                    decode_integer(&output, prefix).unwrap(),
                    (value, output.len())
                );
            }
        }
    }

    #[test]
    fn malformed_integers_are_errors() {
        assert!(decode_integer(&[], 5).is_err());
        assert!(decode_integer(&[0x1f, 0x80], 5).is_err());
        assert!(decode_integer(
            &[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            5
        )
        .unwrap_err()
        .message()
        .contains("63 bits"));
        assert!(decode_string(&[0x05, b'a'], 7)
            .unwrap_err()
            .message()
            .contains("runs past"));
    }

    #[test]
    fn requests_without_huffman_appendix_c3() {
        let mut decoder = Decoder::new(4096);
        let first = decoder
            .decode(&hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"))
            .unwrap();
        assert_eq!(
            pairs(&first),
            owned(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com")
            ])
        );
        assert_eq!(
            decoder.entries(),
            owned(&[(":authority", "www.example.com")])
        );
        assert_eq!(decoder.size, 57);

        let second = decoder
            .decode(&hex("8286 84be 5808 6e6f 2d63 6163 6865"))
            .unwrap();
        assert_eq!(
            pairs(&second),
            owned(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ])
        );
        assert_eq!(decoder.size, 110);

        let third = decoder
            .decode(&hex(
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
            ))
            .unwrap();
        assert_eq!(
            pairs(&third),
            owned(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ])
        );
        assert_eq!(
            decoder.entries(),
            owned(&[
                ("custom-key", "custom-value"),
                ("cache-control", "no-cache"),
                (":authority", "www.example.com"),
            ])
        );
        assert_eq!(decoder.size, 164);
    }

    #[test]
    fn requests_with_huffman_appendix_c4() {
        let mut decoder = Decoder::new(4096);
        let first = decoder
            .decode(&hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"))
            .unwrap();
        assert_eq!(find(&first, ":authority"), Some(&b"www.example.com"[..]));
        let second = decoder
            .decode(&hex("8286 84be 5886 a8eb 1064 9cbf"))
            .unwrap();
        assert_eq!(find(&second, "cache-control"), Some(&b"no-cache"[..]));
        let third = decoder
            .decode(&hex(
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
            ))
            .unwrap();
        assert_eq!(
            pairs(&third),
            owned(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ])
        );
        assert_eq!(decoder.size, 164);
    }

    const DATE_21: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
    const DATE_22: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
    const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";

    fn check_responses(blocks: [&str; 3]) {
        let mut decoder = Decoder::new(256);
        let first = decoder.decode(&hex(blocks[0])).unwrap();
        assert_eq!(
            pairs(&first),
            owned(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", DATE_21),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(decoder.size, 222);

        let second = decoder.decode(&hex(blocks[1])).unwrap();
        assert_eq!(
            pairs(&second),
            owned(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", DATE_21),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(
            decoder.entries(),
            owned(&[
                (":status", "307"),
                ("location", "https://www.example.com"),
                ("date", DATE_21),
                ("cache-control", "private"),
            ])
        );
        assert_eq!(decoder.size, 222);

        let third = decoder.decode(&hex(blocks[2])).unwrap();
        assert_eq!(
            pairs(&third),
            owned(&[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", DATE_22),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                ("set-cookie", COOKIE),
            ])
        );
        assert_eq!(
            decoder.entries(),
            owned(&[
                ("set-cookie", COOKIE),
                ("content-encoding", "gzip"),
                ("date", DATE_22)
            ])
        );
        assert_eq!(decoder.size, 215);
    }

    #[test]
    fn responses_without_huffman_appendix_c5() {
        check_responses([
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
             6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
             54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
             5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
             3d31",
        ]);
    }

    #[test]
    fn responses_with_huffman_appendix_c6() {
        check_responses([
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
             77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
             9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ]);
    }

    #[test]
    fn size_updates_evict_and_are_bounded() {
        let mut decoder = Decoder::new(4096);
        decoder
            .decode(&hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"))
            .unwrap();
        assert_eq!(decoder.table.len(), 1);
        // 0x20: size update to 0 empties the table; 0x3f e1 1f = 4096 restores it.
        decoder.decode(&[0x20, 0x3f, 0xe1, 0x1f]).unwrap();
        assert_eq!(
            (decoder.table.len(), decoder.size, decoder.capacity),
            (0, 0, 4096)
        );
        let error = decoder.decode(&[0x3f, 0xe2, 0x1f]).unwrap_err();
        assert!(
            error.message().contains("above the 4096 allowed"),
            "{error}"
        );
    }

    #[test]
    fn bad_indices_are_errors() {
        let mut decoder = Decoder::new(4096);
        assert!(decoder
            .decode(&[0x80])
            .unwrap_err()
            .message()
            .contains("index 0"));
        let error = decoder.decode(&[0xbe]).unwrap_err();
        assert!(
            error
                .message()
                .contains("index 62, but the tables end at 61"),
            "{error}"
        );
        assert!(decoder.decode(&[0x41]).is_err());
    }

    #[test]
    fn oversized_entries_empty_the_table() {
        let mut decoder = Decoder::new(40);
        decoder.decode(&hex("4001 6101 62")).unwrap();
        assert_eq!(decoder.size, 34);
        let mut block = vec![0x40, 0x01, b'c', 0x0a];
        block.extend_from_slice(b"0123456789");
        decoder.decode(&block).unwrap();
        assert_eq!(decoder.size, 0);
    }

    #[test]
    fn encoded_literals_decode() {
        let mut block = Vec::new();
        encode_indexed(&mut block, index::METHOD_GET);
        encode_literal_with_name_index(&mut block, index::USER_AGENT, b"tlslab");
        encode_literal(&mut block, b"x-long", &[b'0'; 300]);
        let fields = Decoder::new(4096).decode(&block).unwrap();
        assert_eq!(find(&fields, ":method"), Some(&b"GET"[..]));
        assert_eq!(find(&fields, "user-agent"), Some(&b"tlslab"[..]));
        assert_eq!(find(&fields, "x-long").unwrap().len(), 300);
    }
}
