//! The Huffman code of HPACK (RFC 7541 Appendix B), which QPACK reuses (RFC 9204 4.1.2).
//!
//! Only decoding is needed outside tests: peers such as nginx Huffman-code their field
//! values, while this crate always sends plain literals so that the size of a request is
//! easy to predict.

use std::sync::OnceLock;

use crate::HttpError;

/// The code of each symbol, most significant bit first, as (bits, length in bits). Symbols
/// 0 to 255 are the octets; 256 is EOS, which may only appear as padding.
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

const END_OF_STRING: usize = 256;

/// A link in the decoding tree: the next node, or the symbol a path of bits ends at.
#[derive(Clone, Copy)]
enum Link {
    Missing,
    Node(u16),
    Symbol(u16),
}

/// The code as a binary tree, built once: `tree[node][bit]`. Walking it bit by bit is slower
/// than the table-driven decoders of HTTP libraries, but header values are short and this is
/// easy to check against the RFC's table.
fn tree() -> &'static [[Link; 2]] {
    static TREE: OnceLock<Vec<[Link; 2]>> = OnceLock::new();
    TREE.get_or_init(|| {
        let mut nodes = vec![[Link::Missing; 2]];
        for (symbol, &(code, length)) in CODES.iter().enumerate() {
            let mut node = 0;
            for position in (0..length).rev() {
                let bit = ((code >> position) & 1) as usize;
                if position == 0 {
                    nodes[node][bit] = Link::Symbol(symbol as u16);
                    continue;
                }
                node = match nodes[node][bit] {
                    Link::Node(next) => usize::from(next),
                    _ => {
                        nodes.push([Link::Missing; 2]);
                        let next = nodes.len() - 1;
                        nodes[node][bit] = Link::Node(next as u16);
                        next
                    }
                };
            }
        }
        nodes
    })
}

/// Decodes a Huffman-coded string, checking the padding as RFC 7541 5.2 requires: at most
/// seven bits, all ones (the start of EOS).
pub(crate) fn decode(input: &[u8]) -> Result<Vec<u8>, HttpError> {
    let tree = tree();
    let mut output = Vec::with_capacity(input.len() * 8 / 5);
    let mut node = 0;
    let mut pending_bits = 0;
    let mut pending_all_ones = true;
    for &byte in input {
        for position in (0..8).rev() {
            let bit = (byte >> position) & 1;
            pending_bits += 1;
            pending_all_ones &= bit == 1;
            match tree[node][usize::from(bit)] {
                Link::Node(next) => node = usize::from(next),
                Link::Symbol(symbol) if usize::from(symbol) == END_OF_STRING => {
                    return Err(HttpError::new(
                        "Huffman-coded string contains the EOS symbol",
                    ))
                }
                Link::Symbol(symbol) => {
                    output.push(symbol as u8);
                    node = 0;
                    pending_bits = 0;
                    pending_all_ones = true;
                }
                Link::Missing => {
                    return Err(HttpError::new("Huffman-coded string has an invalid code"))
                }
            }
        }
    }
    if pending_bits > 7 {
        return Err(HttpError::new(format!(
            "Huffman-coded string ends with {pending_bits} bits of padding, more than 7"
        )));
    }
    if !pending_all_ones {
        return Err(HttpError::new(
            "Huffman-coded string is padded with bits other than the ones of EOS",
        ));
    }
    Ok(output)
}

/// Huffman-codes `input`; tests use it to build what real peers send.
#[cfg(test)]
pub(crate) fn encode(input: &[u8]) -> Vec<u8> {
    let mut output = Vec::new();
    let mut accumulator: u64 = 0;
    let mut bits = 0;
    for &byte in input {
        let (code, length) = CODES[usize::from(byte)];
        accumulator = (accumulator << length) | u64::from(code);
        bits += u32::from(length);
        while bits >= 8 {
            bits -= 8;
            output.push((accumulator >> bits) as u8);
        }
    }
    if bits > 0 {
        let padding = 8 - bits;
        output.push(((accumulator << padding) | ((1 << padding) - 1)) as u8);
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    #[test]
    fn table_is_a_complete_prefix_code() {
        // A typo in the table would either leave a gap (sum below 2^30) or make one code the
        // prefix of another (sum above, or a leaf overwritten while building the tree).
        let sum: u64 = CODES.iter().map(|&(_, length)| 1u64 << (30 - length)).sum();
        assert_eq!(sum, 1 << 30);
        let leaves = tree()
            .iter()
            .flatten()
            .filter(|link| matches!(link, Link::Symbol(_)))
            .count();
        assert_eq!(leaves, 257);
        assert!(tree()
            .iter()
            .flatten()
            .all(|link| !matches!(link, Link::Missing)));
    }

    #[test]
    fn codes_fit_their_lengths() {
        for &(code, length) in &CODES {
            assert!(u64::from(code) < 1u64 << length);
        }
    }

    #[test]
    fn every_octet_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
        assert_eq!(decode(&[]).unwrap(), b"");
    }

    #[test]
    fn rfc_7541_examples() {
        assert_eq!(
            encode(b"www.example.com"),
            hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff")
        );
        assert_eq!(decode(&hex("a8eb 1064 9cbf")).unwrap(), b"no-cache");
        assert_eq!(decode(&hex("25a8 49e9 5ba9 7d7f")).unwrap(), b"custom-key");
        assert_eq!(decode(&hex("6402")).unwrap(), b"302");
    }

    #[test]
    fn bad_padding_is_an_error() {
        // 'a' is 00011: three bits of padding make 0x1f; another full byte is too much.
        assert_eq!(decode(&[0x1f]).unwrap(), b"a");
        assert!(decode(&[0x1f, 0xff])
            .unwrap_err()
            .message()
            .contains("more than 7"));
        assert!(decode(&[0x18])
            .unwrap_err()
            .message()
            .contains("other than the ones"));
        assert!(decode(&[0xff; 4]).unwrap_err().message().contains("EOS"));
    }
}
