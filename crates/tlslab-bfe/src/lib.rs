//! Bloom filter encryption (BFE): the puncturable key-encapsulation mechanism of Derler,
//! Jager, Slamanig and Striecks ("Bloom Filter Encryption and Applications to Efficient
//! Forward-Secret 0-RTT Key Exchange", EUROCRYPT 2018), on the BLS12-381 pairing with
//! [`blstrs`].
//!
//! A server publishes one public key. A client encapsulates a fresh shared key to it and
//! sends the ciphertext in its first flight; the server decapsulates, then *punctures* its
//! secret key on that ciphertext: the key parts that opened it are erased, so a replay of the
//! same first flight cannot be opened again, and a later theft of the key does not reveal
//! the shared keys of connections already served (forward secrecy). After n punctures a
//! fresh ciphertext fails with probability about p (a false positive: the client falls back
//! to a full handshake).
//!
//! # The construction
//!
//! The secret key is a Bloom filter of m key parts, sk_i = α·H_G(i) in G1 (Boneh-Franklin
//! keys for the identities 0 … m−1), and the public key pk = α·g₂ in G2. A ciphertext is
//! c1 = r·g₂ and, for each of the k indices i_j that c1 hashes to, the 32-byte seed masked
//! under e(H_G(i_j), pk)^r. Any one key part not yet erased recovers the seed, since
//! e(sk_i, c1) = e(H_G(i), pk)^r. With the Fujisaki-Okamoto transform, r is derived from the
//! seed, and decapsulation re-encrypts to check the whole ciphertext
//! ([`SecretKey::decapsulate`]); the CPA-only variant skips that
//! ([`SecretKey::decapsulate_cpa`], for measuring only).
//!
//! The identities are hashed to G1 and pk lies in G2 (the paper's groups swapped): hashing
//! to G1 is about three times cheaper than to G2, a key part takes 48 bytes instead of 96,
//! and every pairing of an encapsulation, or of the check, has the same G2 point r·pk, whose
//! Miller-loop lines are computed once.
//!
//! # Sizes
//!
//! [`Parameters::for_capacity`] gives m = ⌈−n ln p / (ln 2)²⌉ and k = ⌈(m/n) ln 2⌉; then a
//! public key is 106 bytes, a ciphertext 96 + 32k, a secret key 106 + 48m bytes encoded and
//! 48m bytes (plus a few dozen) in memory. For n = 50,000 and p = 10⁻³: m = 718,880, k = 10,
//! a 416-byte ciphertext and 34.5 MB of secret key.
//!
//! # No I/O
//!
//! The crate reads and writes no files. [`SecretKey::to_bytes`] and
//! [`SecretKey::from_bytes`] are for the caller to write the key once, to a file of mode
//! 0600, and read it back; every decoder returns an error, never panics, on any bytes.
//!
//! # Example
//!
//! ```
//! use tlslab_bfe::{generate, Ciphertext, Error, Parameters, SecretKey};
//!
//! let parameters = Parameters::for_capacity(100, 0.01)?;
//! let (public_key, secret_key) = generate(parameters, &mut rand_core::OsRng);
//!
//! // The caller stores the key (mode 0600) and reads it back.
//! let mut secret_key = SecretKey::from_bytes(&secret_key.to_bytes())?;
//!
//! // Client: a shared key and its ciphertext, sent on the wire.
//! let (client_key, ciphertext) = public_key.encapsulate(&mut rand_core::OsRng);
//! let wire = ciphertext.to_bytes();
//! assert_eq!(wire.len(), parameters.ciphertext_size());
//!
//! // Server: the same key, then the key parts that opened it erased.
//! let received = Ciphertext::from_bytes(parameters, &wire)?;
//! let server_key = secret_key.decapsulate(&received)?;
//! assert_eq!(client_key, server_key);
//! secret_key.puncture(&received);
//!
//! // A replay cannot be opened again.
//! assert!(matches!(secret_key.decapsulate(&received), Err(Error::Punctured)));
//! # Ok::<(), Error>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod hash;
mod kem;
mod keys;
mod params;

pub use kem::{Ciphertext, SharedKey};
pub use keys::{generate, generate_with_threads, PublicKey, SecretKey};
pub use params::{
    Parameters, G2_SIZE, KEY_PART_SIZE, KEY_SIZE, MAX_HASHES, MAX_KEY_PARTS, PUBLIC_KEY_HEADER,
    SECRET_KEY_HEADER,
};

/// What can go wrong: bad parameters, bytes that are no key or ciphertext, a ciphertext
/// that cannot or must not be opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// Parameters outside what the scheme supports.
    #[error("invalid BFE parameters: {0}")]
    Parameters(String),
    /// An encoding of the wrong length.
    #[error("a BFE {what} of {found} bytes, where {expected} were expected")]
    Length {
        /// What was being read.
        what: &'static str,
        /// The length its parameters give.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// An encoding that is not one of its kind.
    #[error("not a BFE {what}: {reason}")]
    Malformed {
        /// What was being read.
        what: &'static str,
        /// Why not.
        reason: &'static str,
    },
    /// Every key part the ciphertext needs is erased: it was decapsulated and punctured
    /// before (a replay), or it is a false positive.
    #[error("every key part this BFE ciphertext needs is erased (a replay, or a false positive)")]
    Punctured,
    /// The Fujisaki-Okamoto check failed: the ciphertext was not made by encapsulation to
    /// this public key (forged or altered).
    #[error("the BFE ciphertext fails the Fujisaki-Okamoto check (forged or altered)")]
    Invalid,
}
