//! What OpenSSL calls things, and what tlslab stores.
//!
//! Samples from both backends (and from captures) land in the same columns, so the OpenSSL
//! backend reports names in one spelling, `tlslab_core::names`: suites as rustls' `Debug`
//! names, groups as tlslab's lower-case names, signature schemes as rustls' `Debug` names.

/// The stored name of a suite from its IANA name (`SSL_CIPHER_standard_name`).
pub fn suite_name(standard_name: &str) -> String {
    tlslab_core::names::suite(standard_name)
}

/// The stored name of a group from OpenSSL's TLS group name (`X25519MLKEM768`, `secp256r1`,
/// `ffdhe2048`): tlslab's names are OpenSSL's in lower case, with the NIST aliases folded.
pub fn group_name(openssl_name: &str) -> String {
    match openssl_name {
        "P-256" | "prime256v1" => "secp256r1".to_string(),
        "P-384" => "secp384r1".to_string(),
        "P-521" => "secp521r1".to_string(),
        other => other.to_ascii_lowercase(),
    }
}

/// The stored name of a signature scheme from its TLS name (`SSL_get0_peer_signature_name`).
pub fn signature_scheme_name(tls_name: &str) -> String {
    tlslab_core::names::signature_scheme_from_tls_name(tls_name)
}

/// The name of a handshake message type, for people reading a message timeline.
pub fn handshake_message_name(kind: u8) -> &'static str {
    match kind {
        0 => "hello_request",
        1 => "client_hello",
        2 => "server_hello",
        4 => "new_session_ticket",
        5 => "end_of_early_data",
        8 => "encrypted_extensions",
        11 => "certificate",
        12 => "server_key_exchange",
        13 => "certificate_request",
        14 => "server_hello_done",
        15 => "certificate_verify",
        16 => "client_key_exchange",
        20 => "finished",
        22 => "certificate_status",
        24 => "key_update",
        25 => "compressed_certificate",
        254 => "message_hash",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls13_suites_get_the_rustls_prefix_and_tls12_suites_keep_their_iana_name() {
        assert_eq!(
            suite_name("TLS_AES_128_GCM_SHA256"),
            "TLS13_AES_128_GCM_SHA256"
        );
        assert_eq!(
            suite_name("TLS_CHACHA20_POLY1305_SHA256"),
            "TLS13_CHACHA20_POLY1305_SHA256"
        );
        assert_eq!(
            suite_name("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
        );
        assert_eq!(
            suite_name("TLS_RSA_WITH_AES_256_GCM_SHA384"),
            "TLS_RSA_WITH_AES_256_GCM_SHA384"
        );
    }

    #[test]
    fn groups_and_schemes_use_the_rustls_backend_spelling() {
        assert_eq!(group_name("X25519MLKEM768"), "x25519mlkem768");
        assert_eq!(group_name("SecP256r1MLKEM768"), "secp256r1mlkem768");
        assert_eq!(group_name("prime256v1"), "secp256r1");
        assert_eq!(group_name("ffdhe2048"), "ffdhe2048");
        assert_eq!(
            signature_scheme_name("rsa_pss_rsae_sha256"),
            "RSA_PSS_SHA256"
        );
        assert_eq!(signature_scheme_name("mldsa65"), "ML_DSA_65");
        assert_eq!(
            signature_scheme_name("rsa_pss_pss_sha256"),
            "RSA_PSS_PSS_SHA256"
        );
    }
}
