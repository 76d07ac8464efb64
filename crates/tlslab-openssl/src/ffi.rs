//! The few OpenSSL 4.0 functions and constants that `openssl-sys` does not declare.
//!
//! Signatures follow the headers of the OpenSSL 4.0.3 that `scripts/openssl` installs
//! (`include/openssl/ssl.h`, `ech.h`, `hpke.h`, `ssl3.h`). Everything else comes from
//! `openssl-sys`. The declarations link against the same static `libssl.a` and `libcrypto.a`
//! that `openssl-sys` links, so no `#[link]` attribute is needed here.

#![allow(non_camel_case_types)]

use libc::{c_char, c_int, c_long, c_void, size_t};
use openssl_sys::{SSL, SSL_CTX, X509_STORE_CTX};

/// Record content type of handshake messages (`SSL3_RT_HANDSHAKE`): the message callback also
/// reports record headers and alerts, which the probes ignore.
pub const SSL3_RT_HANDSHAKE: c_int = 22;

/// `SSL_ctrl` commands behind the `SSL_get_negotiated_group` and
/// `SSL_get0_peer_signature_name` macros.
pub const SSL_CTRL_GET_NEGOTIATED_GROUP: c_int = 134;
pub const SSL_CTRL_GET_PEER_SIGNATURE_NAME: c_int = 141;
/// `SSL_get_peer_tmp_key`: the peer's ephemeral key share.
pub const SSL_CTRL_GET_PEER_TMP_KEY: c_int = 109;
/// `SSL_CTX_set_dh_auto`: pick DH parameters that match the certificate's strength, for the
/// TLS 1.2 DHE suites.
pub const SSL_CTRL_SET_DH_AUTO: c_int = 118;

/// `SSL_OP_ECH_GREASE`: send a GREASE ECH extension when no real ECH configuration is set.
pub const SSL_OP_ECH_GREASE: u64 = 1 << 37;

/// `SSL_OP_NO_ANTI_REPLAY`: leave 0-RTT replay protection to the application. The lab
/// server's own session cache hands out each TLS 1.3 ticket once, which is the protection;
/// OpenSSL's would look for the session in its internal cache, which that server does not use.
pub const SSL_OP_NO_ANTI_REPLAY: u64 = 1 << 24;

/// `SSL_get_early_data_status`'s result when the server took the early data (the others are
/// 0, not sent, and 1, rejected).
pub const SSL_EARLY_DATA_ACCEPTED: c_int = 2;

/// The ECH version OpenSSL 4.0 implements (RFC 9849).
pub const OSSL_ECH_RFC9849_VERSION: u16 = 0xfe0d;
/// `for_retry` argument of `OSSL_ECHSTORE_read_pem`: also publish the config in retry_configs.
pub const OSSL_ECH_FOR_RETRY: c_int = 1;
/// `index` argument of `OSSL_ECHSTORE_write_pem`: the most recently added configuration.
pub const OSSL_ECHSTORE_LAST: c_int = -1;

/// `SSL_ech_get1_status` results (client side; 4 is the server's "backend" view).
pub const SSL_ECH_STATUS_BACKEND: c_int = 4;
pub const SSL_ECH_STATUS_GREASE_ECH: c_int = 3;
pub const SSL_ECH_STATUS_GREASE: c_int = 2;
pub const SSL_ECH_STATUS_SUCCESS: c_int = 1;
pub const SSL_ECH_STATUS_FAILED: c_int = 0;
pub const SSL_ECH_STATUS_BAD_CALL: c_int = -100;
pub const SSL_ECH_STATUS_NOT_TRIED: c_int = -101;
pub const SSL_ECH_STATUS_BAD_NAME: c_int = -102;
pub const SSL_ECH_STATUS_NOT_CONFIGURED: c_int = -103;
pub const SSL_ECH_STATUS_FAILED_ECH: c_int = -105;
pub const SSL_ECH_STATUS_FAILED_ECH_BAD_NAME: c_int = -106;

/// HPKE algorithm identifiers (RFC 9180) of the default ECH suite: DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, AES-128-GCM, the suite every ECH client implements.
pub const OSSL_HPKE_KEM_ID_X25519: u16 = 0x0020;
pub const OSSL_HPKE_KDF_ID_HKDF_SHA256: u16 = 0x0001;
pub const OSSL_HPKE_AEAD_ID_AES_GCM_128: u16 = 0x0001;

/// `OSSL_HPKE_SUITE`, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OSSL_HPKE_SUITE {
    pub kem_id: u16,
    pub kdf_id: u16,
    pub aead_id: u16,
}

/// An opaque ECH key and configuration store.
#[repr(C)]
pub struct OSSL_ECHSTORE {
    _private: [u8; 0],
}

/// `void (*cb)(int write_p, int version, int content_type, const void *buf, size_t len,
/// SSL *ssl, void *arg)`.
pub type MessageCallback = unsafe extern "C" fn(
    write_p: c_int,
    version: c_int,
    content_type: c_int,
    buf: *const c_void,
    len: size_t,
    ssl: *mut SSL,
    arg: *mut c_void,
);

/// `int (*cb)(X509_STORE_CTX *, void *)`: replaces the whole chain verification.
pub type CertVerifyCallback =
    unsafe extern "C" fn(ctx: *mut X509_STORE_CTX, arg: *mut c_void) -> c_int;

/// `SSL_CTX_set_msg_callback_arg` is a macro over `SSL_CTX_ctrl` with this command.
pub const SSL_CTRL_SET_MSG_CALLBACK_ARG: libc::c_int = 16;

extern "C" {
    pub fn SSL_CTX_set_msg_callback(ctx: *mut SSL_CTX, callback: Option<MessageCallback>);
    pub fn SSL_CTX_set_cert_verify_callback(
        ctx: *mut SSL_CTX,
        callback: Option<CertVerifyCallback>,
        arg: *mut c_void,
    );
    pub fn SSL_get_early_data_status(ssl: *const SSL) -> c_int;
    /// The certificate being verified: the server's own (openssl-sys lacks it).
    pub fn X509_STORE_CTX_get0_cert(ctx: *const X509_STORE_CTX) -> *mut openssl_sys::X509;
    pub fn EVP_PKEY_get_group_name(
        key: *const openssl_sys::EVP_PKEY,
        name: *mut c_char,
        name_size: size_t,
        length: *mut size_t,
    ) -> c_int;

    pub fn OSSL_ECHSTORE_new(
        libctx: *mut openssl_sys::OSSL_LIB_CTX,
        propq: *const c_char,
    ) -> *mut OSSL_ECHSTORE;
    pub fn OSSL_ECHSTORE_free(store: *mut OSSL_ECHSTORE);
    pub fn OSSL_ECHSTORE_new_config(
        store: *mut OSSL_ECHSTORE,
        echversion: u16,
        max_name_length: u8,
        public_name: *const c_char,
        suite: OSSL_HPKE_SUITE,
    ) -> c_int;
    pub fn OSSL_ECHSTORE_write_pem(
        store: *mut OSSL_ECHSTORE,
        index: c_int,
        out: *mut openssl_sys::BIO,
    ) -> c_int;
    pub fn OSSL_ECHSTORE_read_pem(
        store: *mut OSSL_ECHSTORE,
        input: *mut openssl_sys::BIO,
        for_retry: c_int,
    ) -> c_int;
    pub fn OSSL_ECHSTORE_num_keys(store: *mut OSSL_ECHSTORE, keys: *mut c_int) -> c_int;

    pub fn SSL_CTX_set1_echstore(ctx: *mut SSL_CTX, store: *mut OSSL_ECHSTORE) -> c_int;
    pub fn SSL_set1_ech_config_list(ssl: *mut SSL, list: *const u8, length: size_t) -> c_int;
    /// Returns one of the `SSL_ECH_STATUS_*` values; the names are allocated with
    /// `OPENSSL_malloc` and must be freed with `OPENSSL_free`.
    pub fn SSL_ech_get1_status(
        ssl: *mut SSL,
        inner_sni: *mut *mut c_char,
        outer_sni: *mut *mut c_char,
    ) -> c_int;
}

/// `SSL_get0_peer_signature_name(ssl, &name)`: the TLS name of the signature scheme the peer
/// used (`rsa_pss_rsae_sha256`, `mldsa65`), or `None` (TLS 1.2 RSA key exchange, resumption).
///
/// # Safety
/// `ssl` must be a live `SSL`.
pub unsafe fn peer_signature_name(ssl: *mut SSL) -> Option<&'static str> {
    let mut name: *const c_char = std::ptr::null();
    // SAFETY: the caller gives a live `SSL`; the control writes one pointer to `name`.
    let found = unsafe {
        openssl_sys::SSL_ctrl(
            ssl,
            SSL_CTRL_GET_PEER_SIGNATURE_NAME,
            0,
            (&mut name as *mut *const c_char).cast(),
        )
    };
    if found != 1 || name.is_null() {
        return None;
    }
    // SAFETY: the name points into OpenSSL's static signature algorithm table, a
    // NUL-terminated string that lives as long as the process.
    unsafe { std::ffi::CStr::from_ptr(name) }.to_str().ok()
}

/// `SSL_get_negotiated_group(ssl)`: the TLS group codepoint, 0 when no group was used.
///
/// # Safety
/// `ssl` must be a live `SSL`.
pub unsafe fn negotiated_group(ssl: *mut SSL) -> c_long {
    // SAFETY: the caller gives a live `SSL`; this control reads no argument.
    unsafe { openssl_sys::SSL_ctrl(ssl, SSL_CTRL_GET_NEGOTIATED_GROUP, 0, std::ptr::null_mut()) }
}

/// The named group of the peer's ephemeral key (`modp_2048`, `ffdhe2048`), from
/// `SSL_get_peer_tmp_key`. TLS 1.2 DHE negotiates no group, but the parameters servers use
/// are usually named ones (OpenSSL's automatic choice is an RFC 3526 MODP group).
///
/// # Safety
/// `ssl` must be a live `SSL`.
pub unsafe fn peer_key_group(ssl: *mut SSL) -> Option<String> {
    let mut key: *mut openssl_sys::EVP_PKEY = std::ptr::null_mut();
    // SAFETY: the caller gives a live `SSL`; the control writes one key pointer to `key`.
    let found = unsafe {
        openssl_sys::SSL_ctrl(
            ssl,
            SSL_CTRL_GET_PEER_TMP_KEY,
            0,
            (&mut key as *mut *mut openssl_sys::EVP_PKEY).cast(),
        )
    };
    if found != 1 || key.is_null() {
        return None;
    }
    let mut name = [0 as c_char; 64];
    let mut length: size_t = 0;
    // SAFETY: `key` is the live key the control returned; OpenSSL writes at most
    // `name.len()` bytes, NUL included, into `name`, and then the reference it gave is freed
    // once.
    let named = unsafe {
        let named = EVP_PKEY_get_group_name(key, name.as_mut_ptr(), name.len(), &mut length);
        openssl_sys::EVP_PKEY_free(key);
        named
    };
    (named == 1).then(|| {
        // SAFETY: on success OpenSSL wrote a NUL-terminated name into `name`.
        unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    })
}

/// `SSL_CTX_set_dh_auto(ctx, 1)`.
///
/// # Safety
/// `ctx` must be a live `SSL_CTX`.
pub unsafe fn set_dh_auto(ctx: *mut SSL_CTX) -> c_long {
    // SAFETY: the caller gives a live `SSL_CTX`; this control reads no pointer.
    unsafe { openssl_sys::SSL_CTX_ctrl(ctx, SSL_CTRL_SET_DH_AUTO, 1, std::ptr::null_mut()) }
}
