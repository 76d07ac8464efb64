//! Certificate profiles and chains for the tlslab lab server, generated once and cached on disk.
//!
//! A handshake's cost depends on the server's certificate: its key type decides the
//! signature the server computes and the client verifies, and the chain depth decides how
//! many bytes the server sends and how many signatures the client checks. This crate gives
//! the lab server a chain for every [`CertProfile`] (RSA-2048/3072/4096, ECDSA P-256/P-384,
//! Ed25519, ML-DSA-44/65/87) and every depth from 1 to [`MAX_CHAIN_DEPTH`], with every
//! certificate of a chain using the profile's key type.
//!
//! rcgen makes every profile except ML-DSA (FIPS 204), which it can neither generate nor sign
//! with: ML-DSA material is made with OpenSSL (the `openssl` crate over the OpenSSL 4 that
//! `scripts/openssl` builds, linked statically). Both generators write the same files with
//! the same names, serial numbers, validity (2025-01-01 to 2045-01-01) and extensions, and
//! all keys as PKCS#8, so nothing downstream depends on which one ran. ML-DSA signs only in
//! TLS 1.3 (TLS 1.2 handshakes with an ML-DSA chain fail), and its certificates are large:
//! about 5.5 KB of DER each for ML-DSA-65, so a depth-5 chain sends some 27 KB.
//!
//! Depth counts the certificates the server *sends*: the leaf plus `depth - 1`
//! intermediates. The root is what the client trusts and is never sent.
//!
//! Key generation is slow (RSA-4096 takes seconds per key), so a profile's six keys (root,
//! four intermediates, leaf) are generated once, the chains of all five depths are issued
//! from them, and everything is written to a cache directory that later runs and the lab
//! server's child processes read. Publication is atomic, so concurrent processes never see
//! half-written material.
//!
//! ```no_run
//! use tlslab_core::CertProfile;
//! use tlslab_pki::Pki;
//!
//! let pki = Pki::open_default()?;
//! let chain = pki.chain(CertProfile::EcdsaP256, 3)?;
//! assert_eq!(chain.certificates.len(), 3); // leaf and two intermediates
//! // For rustls: chain.certificates and chain.private_key; the client trusts chain.root.
//! // For nginx: ssl_certificate chain.chain_pem; ssl_certificate_key chain.key_pem.
//! println!("openssl s_client -CAfile {}", chain.root_pem.display());
//! # Ok::<(), tlslab_pki::PkiError>(())
//! ```
//!
//! # On-disk layout
//!
//! The cache directory is, in order: the path given to [`Pki::open`]; `$TLSLAB_PKI_DIR`;
//! `$XDG_CACHE_HOME/tlslab/pki`; `$HOME/.cache/tlslab/pki`. It holds one directory per
//! profile, named by [`CertProfile::as_str`]:
//!
//! ```text
//! <dir>/ecdsa-p256/
//!     root.pem              the root certificate (the client's trust anchor; CAfile)
//!     root.key              its key
//!     intermediate1.key     intermediate 1 signs the leaf; intermediate N+1 signs N
//!     …
//!     intermediate4.key
//!     leaf.key              the server's key (ssl_certificate_key), PKCS#8
//!     chain1.pem            leaf only
//!     chain2.pem            leaf, intermediate 1
//!     …
//!     chain5.pem            leaf, intermediates 1 to 4 (ssl_certificate)
//!     client/               made on first use (mutual TLS), published like the profile:
//!         client.pem        a client certificate (clientAuth) the root issued directly
//!         client.key        its key, PKCS#8
//! <dir>/.ecdsa-p256.lock    taken while generating, so concurrent processes generate once
//! ```
//!
//! Intermediate certificates exist only inside the chain files: intermediate N of depth 3
//! and of depth 4 have the same key but different issuers, so no single file could hold
//! "the" intermediate N. Keys are mode 0600 and directories 0700 from creation.
//!
//! A profile directory is never repaired in place: if files are missing or unreadable,
//! [`Pki::chain`] reports an error that names the directory and says to delete it, and the
//! next use regenerates it. Replacing it silently could pull files from under a lab server
//! that is using them.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod ca_file;
mod cache;
mod client_file;
mod error;
mod generate;
mod lab_client;
mod ml_dsa;

use std::path::{Path, PathBuf};

use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tlslab_core::CertProfile;

pub use ca_file::load_certificates;
pub use client_file::{load_client_credentials, ClientCredentials};
pub use error::{PemError, PkiError, PkiErrorKind};

/// The deepest chain the lab serves: a leaf and four intermediates.
pub const MAX_CHAIN_DEPTH: u8 = 5;

/// A certificate cache directory.
#[derive(Debug, Clone)]
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// Opens the cache directory chosen by the environment: `$TLSLAB_PKI_DIR`, else
    /// `$XDG_CACHE_HOME/tlslab/pki`, else `$HOME/.cache/tlslab/pki`. Creates it if needed.
    pub fn open_default() -> Result<Pki, PkiError> {
        let dir = cache::default_directory(|name| std::env::var_os(name))
            .ok_or_else(cache::no_cache_directory)?;
        Pki::open(dir)
    }

    /// Opens (and creates, owner-only, if needed) the cache directory `dir`.
    ///
    /// A relative path is made absolute against the current directory, because the chain
    /// paths go to other programs (nginx resolves relative paths against its own prefix).
    pub fn open(dir: impl Into<PathBuf>) -> Result<Pki, PkiError> {
        let dir = dir.into();
        let dir = std::path::absolute(&dir)
            .map_err(|error| PkiError::cache_io("resolve the path", &dir, error))?;
        cache::create_cache_directory(&dir)?;
        Ok(Pki { dir })
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The certificates a server sends at `depth` (1 to [`MAX_CHAIN_DEPTH`]) for `profile`,
    /// with the leaf's key and the root that clients must trust.
    ///
    /// Generates the profile on first use (seconds for RSA-4096, milliseconds otherwise);
    /// afterwards reads from disk. Safe to call from several threads and processes at once.
    pub fn chain(&self, profile: CertProfile, depth: u8) -> Result<ServedChain, PkiError> {
        check_depth(depth)?;
        let profile_dir = cache::ensure_profile(&self.dir, profile)?;
        let cached = cache::read_chain(&profile_dir, depth)?;
        Ok(ServedChain {
            profile,
            depth,
            certificates: cached.certificates,
            private_key: cached.private_key,
            root: cached.root,
            chain_pem: cached.chain_pem,
            key_pem: cached.key_pem,
            root_pem: cached.root_pem,
        })
    }

    /// The lab client certificate of `profile` (mutual TLS): a certificate of the profile's
    /// key type with extendedKeyUsage clientAuth, issued directly by the profile's root (the
    /// one its server chains end in), and its key. Issued on first use and cached in
    /// `<dir>/<profile>/client/`; safe to call from several threads and processes at once.
    pub fn client_certificate(
        &self,
        profile: CertProfile,
    ) -> Result<LabClientCertificate, PkiError> {
        let client_dir = cache::ensure_client(&self.dir, profile)?;
        let cached = cache::read_client(&client_dir)?;
        Ok(LabClientCertificate {
            profile,
            certificate: cached.certificate,
            private_key: cached.private_key,
            root: cached.root,
            certificate_pem: cached.certificate_pem,
            key_pem: cached.key_pem,
            root_pem: cached.root_pem,
        })
    }
}

/// What a lab client presents when a server asks for a certificate, and the root a server
/// trusts to verify it.
#[derive(Debug)]
pub struct LabClientCertificate {
    /// The profile whose root issued the certificate (and whose key type it has).
    pub profile: CertProfile,
    /// The client's certificate: issued by the root, so it is the whole chain the client sends.
    pub certificate: CertificateDer<'static>,
    /// The certificate's key, for signing the client's CertificateVerify.
    pub private_key: PrivateKeyDer<'static>,
    /// The profile's root, which issued it: what a server requiring client certificates trusts.
    pub root: CertificateDer<'static>,
    /// `certificate` as a PEM file (curl `--cert`, `openssl s_client -cert`).
    pub certificate_pem: PathBuf,
    /// Its key as a PKCS#8 PEM file (curl `--key`).
    pub key_pem: PathBuf,
    /// The root as a PEM file (nginx `ssl_client_certificate`).
    pub root_pem: PathBuf,
}

fn check_depth(depth: u8) -> Result<(), PkiError> {
    if (1..=MAX_CHAIN_DEPTH).contains(&depth) {
        return Ok(());
    }
    Err(PkiError::new(
        PkiErrorKind::InvalidDepth,
        format!("chain depth {depth} is out of range"),
        format!(
            "use a depth from 1 to {MAX_CHAIN_DEPTH}: the number of certificates the server \
             sends (the leaf plus depth - 1 intermediates; the root is never sent)"
        ),
    ))
}

/// What a server presents for one profile and depth, in memory and as files.
#[derive(Debug)]
pub struct ServedChain {
    /// The key type and signature algorithm of every certificate in the chain.
    pub profile: CertProfile,
    /// How many certificates the server sends: the leaf and `depth - 1` intermediates.
    pub depth: u8,
    /// Leaf first, then intermediate 1 (the leaf's issuer) upwards; `depth` entries.
    pub certificates: Vec<CertificateDer<'static>>,
    /// The leaf's key.
    pub private_key: PrivateKeyDer<'static>,
    /// The trust anchor clients need; not part of `certificates`.
    pub root: CertificateDer<'static>,
    /// `certificates` as a PEM file (nginx `ssl_certificate`, OpenSSL `-cert_chain`).
    pub chain_pem: PathBuf,
    /// The leaf's key as a PKCS#8 PEM file (nginx `ssl_certificate_key`).
    pub key_pem: PathBuf,
    /// The root as a PEM file (OpenSSL `-CAfile`).
    pub root_pem: PathBuf,
}

// `PrivateKeyDer` is deliberately not `Clone` (copies of secrets should be visible in the
// code), so the clone is written out with `clone_key`.
impl Clone for ServedChain {
    fn clone(&self) -> Self {
        ServedChain {
            profile: self.profile,
            depth: self.depth,
            certificates: self.certificates.clone(),
            private_key: self.private_key.clone_key(),
            root: self.root.clone(),
            chain_pem: self.chain_pem.clone(),
            key_pem: self.key_pem.clone(),
            root_pem: self.root_pem.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_outside_the_range_are_rejected_with_the_range_in_the_hint() {
        for depth in [0, MAX_CHAIN_DEPTH + 1, u8::MAX] {
            let error = check_depth(depth).unwrap_err();
            assert_eq!(error.kind(), PkiErrorKind::InvalidDepth);
            assert!(error.message().contains(&depth.to_string()), "{error}");
            assert!(error.hint().contains("from 1 to 5"), "{error}");
        }
        for depth in 1..=MAX_CHAIN_DEPTH {
            check_depth(depth).unwrap();
        }
    }
}
