//! Names of what a handshake negotiates, as tlslab stores them, whoever observed it: the
//! rustls client, the OpenSSL client (from OpenSSL's names) or a capture (from the code
//! points on the wire). One spelling per thing, so samples from every source meet in the
//! same Config and the same column: suites as rustls' `Debug` names (`TLS13_AES_128_GCM_SHA256`,
//! the IANA name for TLS 1.2 suites), groups as tlslab's lower-case names (`x25519mlkem768`),
//! signature schemes as rustls' `Debug` names (`ECDSA_NISTP256_SHA256`).

use std::borrow::Cow;

/// ServerHello.random of a HelloRetryRequest (RFC 8446, 4.1.3): how every reader of the wire
/// (a capture, a client's message callback) tells the two apart.
pub const HELLO_RETRY_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];

/// The stored name of a suite from its IANA name. The IANA names of the TLS 1.3 suites
/// (`TLS_AES_128_GCM_SHA256`) lack the version; rustls names them `TLS13_…`. TLS 1.2 names
/// are the same in both.
pub fn suite(iana_name: &str) -> String {
    TLS13_SUITES
        .iter()
        .find(|(iana, _)| *iana == iana_name)
        .map_or(iana_name, |(_, stored)| stored)
        .to_string()
}

/// The TLS 1.3 suites: IANA name and stored name.
const TLS13_SUITES: [(&str, &str); 5] = [
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256",
    ),
    ("TLS_AES_128_CCM_SHA256", "TLS13_AES_128_CCM_SHA256"),
    ("TLS_AES_128_CCM_8_SHA256", "TLS13_AES_128_CCM_8_SHA256"),
];

/// [`suite`] of a name that lives as long as the program (a table's), without a copy: a
/// captured ClientHello offers dozens of suites, and a `String` each cost an allocation per
/// name per sample.
pub fn suite_static(iana_name: &'static str) -> Cow<'static, str> {
    Cow::Borrowed(
        TLS13_SUITES
            .iter()
            .find(|(iana, _)| *iana == iana_name)
            .map_or(iana_name, |(_, stored)| stored),
    )
}

/// Key-exchange groups: code point and stored name.
const GROUPS: &[(u16, &str)] = &[
    (0x0017, "secp256r1"),
    (0x0018, "secp384r1"),
    (0x0019, "secp521r1"),
    (0x001d, "x25519"),
    (0x001e, "x448"),
    (0x0100, "ffdhe2048"),
    (0x0101, "ffdhe3072"),
    (0x0102, "ffdhe4096"),
    (0x0103, "ffdhe6144"),
    (0x0104, "ffdhe8192"),
    (0x0200, "mlkem512"),
    (0x0201, "mlkem768"),
    (0x0202, "mlkem1024"),
    (0x11eb, "secp256r1mlkem768"),
    (0x11ec, "x25519mlkem768"),
    (0x11ed, "secp384r1mlkem1024"),
];

/// The stored name of a group from its code point; unknown ones (GREASE, private use) as
/// `0x` and four hex digits.
pub fn group(code_point: u16) -> String {
    group_static(code_point).into_owned()
}

/// [`group`], borrowed from the table when the group is known.
pub fn group_static(code_point: u16) -> Cow<'static, str> {
    GROUPS
        .iter()
        .find(|(candidate, _)| *candidate == code_point)
        .map_or_else(
            || Cow::Owned(format!("0x{code_point:04x}")),
            |&(_, name)| Cow::Borrowed(name),
        )
}

/// Signature schemes: code point, TLS name (RFC 8446 and OpenSSL) and stored name.
const SIGNATURE_SCHEMES: &[(u16, &str, &str)] = &[
    (0x0201, "rsa_pkcs1_sha1", "RSA_PKCS1_SHA1"),
    (0x0203, "ecdsa_sha1", "ECDSA_SHA1_Legacy"),
    (0x0401, "rsa_pkcs1_sha256", "RSA_PKCS1_SHA256"),
    (0x0403, "ecdsa_secp256r1_sha256", "ECDSA_NISTP256_SHA256"),
    (0x0501, "rsa_pkcs1_sha384", "RSA_PKCS1_SHA384"),
    (0x0503, "ecdsa_secp384r1_sha384", "ECDSA_NISTP384_SHA384"),
    (0x0601, "rsa_pkcs1_sha512", "RSA_PKCS1_SHA512"),
    (0x0603, "ecdsa_secp521r1_sha512", "ECDSA_NISTP521_SHA512"),
    // rustls has one name per hash for RSA-PSS; it only uses the rsae code points.
    (0x0804, "rsa_pss_rsae_sha256", "RSA_PSS_SHA256"),
    (0x0805, "rsa_pss_rsae_sha384", "RSA_PSS_SHA384"),
    (0x0806, "rsa_pss_rsae_sha512", "RSA_PSS_SHA512"),
    (0x0807, "ed25519", "ED25519"),
    (0x0808, "ed448", "ED448"),
    (0x0809, "rsa_pss_pss_sha256", "RSA_PSS_PSS_SHA256"),
    (0x080a, "rsa_pss_pss_sha384", "RSA_PSS_PSS_SHA384"),
    (0x080b, "rsa_pss_pss_sha512", "RSA_PSS_PSS_SHA512"),
    (0x0904, "mldsa44", "ML_DSA_44"),
    (0x0905, "mldsa65", "ML_DSA_65"),
    (0x0906, "mldsa87", "ML_DSA_87"),
];

/// The stored name of a signature scheme from its code point.
pub fn signature_scheme(code_point: u16) -> String {
    SIGNATURE_SCHEMES
        .iter()
        .find(|(candidate, _, _)| *candidate == code_point)
        .map_or_else(
            || format!("0x{code_point:04x}"),
            |(_, _, name)| name.to_string(),
        )
}

/// The stored name of a signature scheme from its TLS name (`ecdsa_secp256r1_sha256`);
/// schemes rustls does not know keep their TLS name, upper-cased like the rest.
pub fn signature_scheme_from_tls_name(tls_name: &str) -> String {
    SIGNATURE_SCHEMES
        .iter()
        .find(|(_, candidate, _)| *candidate == tls_name)
        .map_or_else(
            || tls_name.to_ascii_uppercase(),
            |(_, _, name)| name.to_string(),
        )
}

/// The stored name of a protocol version from its code point (`1.3`, `1.2`, …).
pub fn version(code_point: u16) -> String {
    version_static(code_point).into_owned()
}

/// [`version`], borrowed when the version is known.
pub fn version_static(code_point: u16) -> Cow<'static, str> {
    Cow::Borrowed(match code_point {
        0x0300 => "ssl3",
        0x0301 => "1.0",
        0x0302 => "1.1",
        0x0303 => "1.2",
        0x0304 => "1.3",
        other => return Cow::Owned(format!("0x{other:04x}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_spells_a_negotiated_value_the_same_way() {
        assert_eq!(suite("TLS_AES_128_GCM_SHA256"), "TLS13_AES_128_GCM_SHA256");
        assert_eq!(
            suite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
        );
        assert_eq!(group(0x11ec), "x25519mlkem768");
        assert_eq!(group(0x0a0a), "0x0a0a");
        assert_eq!(signature_scheme(0x0403), "ECDSA_NISTP256_SHA256");
        assert_eq!(
            signature_scheme_from_tls_name("ecdsa_secp256r1_sha256"),
            signature_scheme(0x0403)
        );
        assert_eq!(signature_scheme_from_tls_name("sm2sig_sm3"), "SM2SIG_SM3");
        assert_eq!(version(0x0304), "1.3");
    }

    #[test]
    fn borrowed_names_are_spelled_as_the_owned_ones_and_borrowed_when_known() {
        for iana in [
            "TLS_AES_256_GCM_SHA384",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        ] {
            assert_eq!(suite_static(iana), suite(iana));
            assert!(matches!(suite_static(iana), Cow::Borrowed(_)));
        }
        for code_point in [0x001d, 0x11ec, 0x0a0a, 0xfe0d] {
            assert_eq!(group_static(code_point), group(code_point));
        }
        assert!(matches!(group_static(0x001d), Cow::Borrowed("x25519")));
        for code_point in [0x0300, 0x0303, 0x0304, 0x7f1c] {
            assert_eq!(version_static(code_point), version(code_point));
        }
        assert_eq!(version_static(0x7f1c), "0x7f1c");
    }
}
