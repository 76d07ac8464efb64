//! The three OpenSSL calls the `openssl` crate does not wrap: a key of a named
//! finite-field group (`EVP_PKEY_CTX_set_group_name`, which openssl-sys does not declare
//! either), and ML-KEM's encapsulation and decapsulation (`EVP_PKEY_encapsulate`,
//! `EVP_PKEY_decapsulate`). Each context is owned by the crate's own wrapper, which frees it.

use std::ffi::CStr;
use std::ptr;

use foreign_types::ForeignType;
use openssl::error::ErrorStack;
use openssl::pkey::{HasPrivate, PKey, PKeyRef, Private, Public};
use openssl::pkey_ctx::PkeyCtx;

extern "C" {
    // OpenSSL 3.0 and later (include/openssl/core_names.h's EVP_PKEY_CTX_set_group_name).
    fn EVP_PKEY_CTX_set_group_name(
        ctx: *mut openssl_sys::EVP_PKEY_CTX,
        name: *const libc::c_char,
    ) -> libc::c_int;
}

fn check(result: libc::c_int) -> Result<(), ErrorStack> {
    if result > 0 {
        Ok(())
    } else {
        Err(ErrorStack::get())
    }
}

/// A fresh key of `algorithm` (`DH`) in the group OpenSSL names `group` (`ffdhe2048`).
pub(super) fn named_group_key(algorithm: &CStr, group: &CStr) -> Result<PKey<Private>, ErrorStack> {
    openssl_sys::init();
    // SAFETY: the names are NUL-terminated and outlive the calls; the context is owned by
    // `context` from here on and freed when it drops; `key` is written by EVP_PKEY_keygen
    // only on success, and then owned by the PKey.
    unsafe {
        let raw = openssl_sys::EVP_PKEY_CTX_new_from_name(
            ptr::null_mut(),
            algorithm.as_ptr(),
            ptr::null(),
        );
        if raw.is_null() {
            return Err(ErrorStack::get());
        }
        let context = PkeyCtx::<Private>::from_ptr(raw);
        check(openssl_sys::EVP_PKEY_keygen_init(context.as_ptr()))?;
        check(EVP_PKEY_CTX_set_group_name(
            context.as_ptr(),
            group.as_ptr(),
        ))?;
        let mut key = ptr::null_mut();
        check(openssl_sys::EVP_PKEY_keygen(context.as_ptr(), &mut key))?;
        Ok(PKey::from_ptr(key))
    }
}

/// ML-KEM encapsulation to `key`: the ciphertext and the shared secret.
pub(super) fn encapsulate(key: &PKeyRef<Public>) -> Result<(Vec<u8>, Vec<u8>), ErrorStack> {
    let context = PkeyCtx::new(key)?;
    // SAFETY: the context is live for every call; the first call only writes the two
    // lengths, the second writes at most those lengths into buffers of exactly that size.
    unsafe {
        check(openssl_sys::EVP_PKEY_encapsulate_init(
            context.as_ptr(),
            ptr::null(),
        ))?;
        let (mut ciphertext_length, mut secret_length) = (0, 0);
        check(openssl_sys::EVP_PKEY_encapsulate(
            context.as_ptr(),
            ptr::null_mut(),
            &mut ciphertext_length,
            ptr::null_mut(),
            &mut secret_length,
        ))?;
        let mut ciphertext = vec![0u8; ciphertext_length];
        let mut secret = vec![0u8; secret_length];
        check(openssl_sys::EVP_PKEY_encapsulate(
            context.as_ptr(),
            ciphertext.as_mut_ptr(),
            &mut ciphertext_length,
            secret.as_mut_ptr(),
            &mut secret_length,
        ))?;
        ciphertext.truncate(ciphertext_length);
        secret.truncate(secret_length);
        Ok((ciphertext, secret))
    }
}

/// ML-KEM decapsulation of `ciphertext` with `key`: the shared secret.
pub(super) fn decapsulate<T: HasPrivate>(
    key: &PKeyRef<T>,
    ciphertext: &[u8],
) -> Result<Vec<u8>, ErrorStack> {
    let context = PkeyCtx::new(key)?;
    // SAFETY: as in `encapsulate`; `ciphertext` is read for its length only.
    unsafe {
        check(openssl_sys::EVP_PKEY_decapsulate_init(
            context.as_ptr(),
            ptr::null(),
        ))?;
        let mut secret_length = 0;
        check(openssl_sys::EVP_PKEY_decapsulate(
            context.as_ptr(),
            ptr::null_mut(),
            &mut secret_length,
            ciphertext.as_ptr(),
            ciphertext.len(),
        ))?;
        let mut secret = vec![0u8; secret_length];
        check(openssl_sys::EVP_PKEY_decapsulate(
            context.as_ptr(),
            secret.as_mut_ptr(),
            &mut secret_length,
            ciphertext.as_ptr(),
            ciphertext.len(),
        ))?;
        secret.truncate(secret_length);
        Ok(secret)
    }
}
