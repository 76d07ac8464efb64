//! Encrypted ClientHello keys for the lab server, and the status a client reports.

use std::ffi::CString;
use std::fmt;
use std::ptr;

use libc::{c_char, c_int, c_void};

use crate::ffi;
use crate::Error;

/// An ECH key pair and its ECHConfigList, kept as the PEM file OpenSSL reads (`-----BEGIN
/// PRIVATE KEY-----` followed by `-----BEGIN ECHCONFIG-----`).
///
/// OpenSSL 4.0.3 treats a store built in-process with `OSSL_ECHSTORE_new_config` as if it
/// held no usable key: a server given that store answers every ECH offer as GREASE
/// (upstream PR 32397). A store read back from the PEM encoding works, so the key is kept
/// as PEM and every server store is made by reading it (see [`EchKey::store`]).
#[derive(Clone, PartialEq, Eq)]
pub struct EchKey {
    public_name: String,
    pem: String,
}

impl fmt::Debug for EchKey {
    // The PEM holds the private key: keep it out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EchKey")
            .field("public_name", &self.public_name)
            .finish_non_exhaustive()
    }
}

impl EchKey {
    /// Generates a key for the default HPKE suite (X25519, HKDF-SHA256, AES-128-GCM) whose
    /// configuration names `public_name`: the name the outer ClientHello carries in clear.
    pub fn generate(public_name: &str) -> Result<EchKey, Error> {
        let name = CString::new(public_name)
            .map_err(|_| Error::new(format!("ECH public name '{public_name}' contains NUL")))?;
        let store = Store::new()?;
        let suite = ffi::OSSL_HPKE_SUITE {
            kem_id: ffi::OSSL_HPKE_KEM_ID_X25519,
            kdf_id: ffi::OSSL_HPKE_KDF_ID_HKDF_SHA256,
            aead_id: ffi::OSSL_HPKE_AEAD_ID_AES_GCM_128,
        };
        // SAFETY: the store is live; the name outlives the call, which copies it.
        let made = unsafe {
            ffi::OSSL_ECHSTORE_new_config(
                store.0,
                ffi::OSSL_ECH_RFC9849_VERSION,
                0,
                name.as_ptr(),
                suite,
            )
        };
        if made != 1 {
            return Err(Error::openssl(format!(
                "could not generate an ECH configuration for '{public_name}'"
            )));
        }
        let output = MemoryBio::empty()?;
        // SAFETY: both objects are live.
        if unsafe { ffi::OSSL_ECHSTORE_write_pem(store.0, ffi::OSSL_ECHSTORE_LAST, output.0) } != 1
        {
            return Err(Error::openssl("could not encode the ECH key as PEM"));
        }
        let pem = String::from_utf8(output.contents())
            .map_err(|_| Error::new("OpenSSL wrote an ECH PEM that is not UTF-8"))?;
        Ok(EchKey {
            public_name: public_name.to_string(),
            pem,
        })
    }

    /// Reads a key from its PEM form (as [`EchKey::pem`] returns it, or as `openssl ech`
    /// writes it). Checks that OpenSSL accepts it.
    pub fn from_pem(pem: &str) -> Result<EchKey, Error> {
        let key = EchKey {
            public_name: String::new(),
            pem: pem.to_string(),
        };
        key.config_list()?;
        let store = key.store()?;
        let mut keys: c_int = 0;
        // SAFETY: the store is live and `keys` is a valid out pointer.
        if unsafe { ffi::OSSL_ECHSTORE_num_keys(store.0, &mut keys) } != 1 || keys < 1 {
            return Err(Error::new("the ECH PEM holds no private key"));
        }
        let public_name = parse_public_name(&key.config_list()?)
            .ok_or_else(|| Error::new("the ECH configuration could not be parsed"))?;
        Ok(EchKey { public_name, ..key })
    }

    /// The name in the configuration, which a client sends in the clear.
    pub fn public_name(&self) -> &str {
        &self.public_name
    }

    /// The private key and configuration, as PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// The ECHConfigList clients need (binary, as in the DNS HTTPS record).
    pub fn config_list(&self) -> Result<Vec<u8>, Error> {
        openssl::base64::decode_block(&self.config_list_base64()?)
            .map_err(|_| Error::new("the ECHCONFIG block of the ECH PEM is not base64"))
    }

    /// The ECHConfigList in base64: the form `--ech-config` and `openssl s_client -ech_config_list`
    /// take.
    pub fn config_list_base64(&self) -> Result<String, Error> {
        const BEGIN: &str = "-----BEGIN ECHCONFIG-----";
        const END: &str = "-----END ECHCONFIG-----";
        let start = self
            .pem
            .find(BEGIN)
            .ok_or_else(|| Error::new("the ECH PEM has no ECHCONFIG block"))?
            + BEGIN.len();
        let length = self.pem[start..]
            .find(END)
            .ok_or_else(|| Error::new("the ECHCONFIG block of the ECH PEM is not terminated"))?;
        Ok(self.pem[start..start + length]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect())
    }

    /// A fresh OpenSSL store holding this key, read from the PEM (the round trip that makes
    /// OpenSSL 4.0.3 use the key; see the type's documentation). The configuration is also
    /// offered as a retry configuration, so a client with a stale configuration learns this one.
    pub(crate) fn store(&self) -> Result<Store, Error> {
        let store = Store::new()?;
        let input = MemoryBio::from_slice(self.pem.as_bytes())?;
        // SAFETY: both objects are live; OpenSSL copies what it reads.
        if unsafe { ffi::OSSL_ECHSTORE_read_pem(store.0, input.0, ffi::OSSL_ECH_FOR_RETRY) } != 1 {
            return Err(Error::openssl("OpenSSL rejected the ECH key"));
        }
        Ok(store)
    }
}

/// The public name of the first ECHConfig of a list (RFC 9849 section 4), for keys read from
/// PEM.
fn parse_public_name(list: &[u8]) -> Option<String> {
    let u16_at = |at: usize| -> Option<usize> {
        Some(u16::from_be_bytes([*list.get(at)?, *list.get(at + 1)?]) as usize)
    };
    // List length (2), version (2), config length (2), config id (1), KEM (2).
    let mut at = 2 + 2 + 2 + 1 + 2;
    at += 2 + u16_at(at)?; // public key
    at += 2 + u16_at(at)?; // cipher suites
    at += 1; // maximum name length
    let name_length = *list.get(at)? as usize;
    let name = list.get(at + 1..at + 1 + name_length)?;
    String::from_utf8(name.to_vec()).ok()
}

/// An owned `OSSL_ECHSTORE`.
pub(crate) struct Store(pub(crate) *mut ffi::OSSL_ECHSTORE);

impl Store {
    fn new() -> Result<Store, Error> {
        openssl_sys::init();
        // SAFETY: the default library context and no property query.
        let store = unsafe { ffi::OSSL_ECHSTORE_new(ptr::null_mut(), ptr::null()) };
        if store.is_null() {
            return Err(Error::openssl("could not allocate an ECH store"));
        }
        Ok(Store(store))
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // SAFETY: we own the store; SSL_CTX_set1_echstore took its own copy.
        unsafe { ffi::OSSL_ECHSTORE_free(self.0) }
    }
}

/// An owned memory BIO (the openssl crate keeps its own private).
struct MemoryBio(*mut openssl_sys::BIO);

impl MemoryBio {
    fn empty() -> Result<MemoryBio, Error> {
        openssl_sys::init();
        // SAFETY: BIO_s_mem returns a static method table.
        let bio = unsafe { openssl_sys::BIO_new(openssl_sys::BIO_s_mem()) };
        if bio.is_null() {
            return Err(Error::openssl("could not allocate a memory BIO"));
        }
        Ok(MemoryBio(bio))
    }

    fn from_slice(data: &[u8]) -> Result<MemoryBio, Error> {
        let bio = MemoryBio::empty()?;
        // SAFETY: the BIO copies `data`.
        let written = unsafe {
            openssl_sys::BIO_write(bio.0, data.as_ptr() as *const c_void, data.len() as c_int)
        };
        if written != data.len() as c_int {
            return Err(Error::openssl("could not fill a memory BIO"));
        }
        Ok(bio)
    }

    fn contents(&self) -> Vec<u8> {
        let mut data: *mut c_char = ptr::null_mut();
        // SAFETY: the BIO is live; the pointer stays valid until the next BIO call.
        unsafe {
            let length = openssl_sys::BIO_get_mem_data(self.0, &mut data);
            if data.is_null() || length <= 0 {
                return Vec::new();
            }
            std::slice::from_raw_parts(data as *const u8, length as usize).to_vec()
        }
    }
}

impl Drop for MemoryBio {
    fn drop(&mut self) {
        // SAFETY: we own the BIO.
        unsafe { openssl_sys::BIO_free_all(self.0) }
    }
}

/// What became of ECH in one handshake, from the client's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EchStatus {
    /// The server decrypted the inner ClientHello and the handshake used it.
    Accepted,
    /// ECH was offered and the server did not use it (a wrong or stale configuration).
    Rejected,
    /// A GREASE extension was sent.
    Grease,
    /// No ECH extension was sent.
    NotOffered,
}

impl EchStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EchStatus::Accepted => "accepted",
            EchStatus::Rejected => "rejected",
            EchStatus::Grease => "grease",
            EchStatus::NotOffered => "not_offered",
        }
    }

    /// Maps `SSL_ech_get1_status`.
    pub(crate) fn from_openssl(status: c_int) -> EchStatus {
        match status {
            ffi::SSL_ECH_STATUS_SUCCESS | ffi::SSL_ECH_STATUS_BACKEND => EchStatus::Accepted,
            ffi::SSL_ECH_STATUS_GREASE | ffi::SSL_ECH_STATUS_GREASE_ECH => EchStatus::Grease,
            ffi::SSL_ECH_STATUS_NOT_TRIED
            | ffi::SSL_ECH_STATUS_NOT_CONFIGURED
            | ffi::SSL_ECH_STATUS_BAD_CALL => EchStatus::NotOffered,
            ffi::SSL_ECH_STATUS_FAILED
            | ffi::SSL_ECH_STATUS_BAD_NAME
            | ffi::SSL_ECH_STATUS_FAILED_ECH
            | ffi::SSL_ECH_STATUS_FAILED_ECH_BAD_NAME => EchStatus::Rejected,
            _ => EchStatus::Rejected,
        }
    }

    /// The status of a connection.
    ///
    /// # Safety
    /// `ssl` must be a live `SSL`.
    pub(crate) unsafe fn of(ssl: *mut openssl_sys::SSL) -> EchStatus {
        let mut inner: *mut c_char = ptr::null_mut();
        let mut outer: *mut c_char = ptr::null_mut();
        // SAFETY: the caller gives a live `SSL`; the names OpenSSL writes are copies this
        // function owns (only the status is needed), each freed once (null is allowed).
        let status = unsafe {
            let status = ffi::SSL_ech_get1_status(ssl, &mut inner, &mut outer);
            openssl_sys::OPENSSL_free(inner as *mut c_void);
            openssl_sys::OPENSSL_free(outer as *mut c_void);
            status
        };
        EchStatus::from_openssl(status)
    }
}

impl From<EchStatus> for tlslab_core::EchStatus {
    /// The status a sample stores ([`tlslab_core::Negotiated::ech`]).
    fn from(status: EchStatus) -> tlslab_core::EchStatus {
        match status {
            EchStatus::Accepted => tlslab_core::EchStatus::Accepted,
            EchStatus::Rejected => tlslab_core::EchStatus::Rejected,
            EchStatus::Grease => tlslab_core::EchStatus::Grease,
            EchStatus::NotOffered => tlslab_core::EchStatus::NotOffered,
        }
    }
}

impl fmt::Display for EchStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_round_trips_through_pem_with_its_public_name() {
        let key = EchKey::generate("public.example").unwrap();
        assert!(key.pem().contains("BEGIN PRIVATE KEY"), "{}", key.pem());
        let list = key.config_list().unwrap();
        // Two length bytes, then the RFC 9849 version.
        assert_eq!(&list[2..4], &[0xfe, 0x0d]);
        assert_eq!(parse_public_name(&list).as_deref(), Some("public.example"));
        let again = EchKey::from_pem(key.pem()).unwrap();
        assert_eq!(again, key);
        assert!(format!("{key:?}").contains("public.example"));
        assert!(!format!("{key:?}").contains("PRIVATE"));
    }

    #[test]
    fn a_pem_without_a_key_is_rejected() {
        let key = EchKey::generate("public.example").unwrap();
        let start = key.pem().find("-----BEGIN ECHCONFIG").unwrap();
        assert!(EchKey::from_pem(&key.pem()[start..]).is_err());
    }
}
