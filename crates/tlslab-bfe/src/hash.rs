//! The scheme's hash functions, each SHA-256 or hash-to-curve under its own domain-separation
//! tag, so that no output of one can stand in for another's.

use blstrs::{Compress, G1Affine, G1Projective, Gt, Scalar};
use ff::Field;
use group::{Curve, Group};
use sha2::{Digest, Sha256};

use crate::params::{G2_SIZE, KEY_SIZE};

/// Hash to G1 (RFC 9380, SSWU, random oracle): the identity of key part i.
const IDENTITY_DST: &[u8] = b"TLSLAB-BFE-V01-CS01-with-BLS12381G1_XMD:SHA-256_SSWU_RO_";
const INDEX_DST: &[u8] = b"TLSLAB-BFE-V01 index";
const MASK_DST: &[u8] = b"TLSLAB-BFE-V01 mask";
const RANDOMNESS_DST: &[u8] = b"TLSLAB-BFE-V01 FO randomness";
const KEY_DST: &[u8] = b"TLSLAB-BFE-V01 shared key";

/// H_G(i): key part i's identity in G1, bound to the public key so that two keys share no
/// identities.
pub(crate) fn identity(public_point: &[u8; G2_SIZE], index: u32) -> G1Projective {
    G1Projective::hash_to_curve(&index.to_be_bytes(), IDENTITY_DST, public_point)
}

/// The same for many indices, in affine form (one field inversion for the lot).
pub(crate) fn identities(public_point: &[u8; G2_SIZE], indices: &[u32]) -> Vec<G1Affine> {
    let points: Vec<G1Projective> = indices
        .iter()
        .map(|&index| identity(public_point, index))
        .collect();
    let mut affine = vec![G1Affine::default(); points.len()];
    G1Projective::batch_normalize(&points, &mut affine);
    affine
}

/// H_1 … H_k: the Bloom filter's k indices of a ciphertext, from its random part c1 (and
/// the public key). Reduction modulo m of 64 bits biases an index by less than m/2⁶⁴.
pub(crate) fn indices(
    public_point: &[u8; G2_SIZE],
    key_parts: u32,
    hashes: u16,
    c1: &[u8; G2_SIZE],
) -> Vec<u32> {
    let mut prefix = Sha256::new();
    prefix.update(INDEX_DST);
    prefix.update(public_point);
    prefix.update(c1);
    (0..hashes)
        .map(|j| {
            let digest = prefix.clone().chain_update(j.to_be_bytes()).finalize();
            let mut head = [0u8; 8];
            head.copy_from_slice(&digest[..8]);
            // The remainder is below key_parts, a u32.
            (u64::from_be_bytes(head) % u64::from(key_parts)) as u32
        })
        .collect()
}

/// G: the mask that hides the seed under one pairing value.
pub(crate) fn mask(pairing: &Gt) -> [u8; KEY_SIZE] {
    // The torus compression of an element of the order-r subgroup: 288 bytes, one per
    // element. Gt::compress inverts a coefficient that is zero only for elements of a
    // subfield, which the order-r subgroup meets only in 1: that one (a pairing with the
    // point at infinity, which no valid key part or ciphertext holds) is given its own
    // encoding rather than a panic.
    let mut compressed = [0u8; 288];
    if !bool::from(pairing.is_identity()) {
        pairing
            .write_compressed(&mut compressed[..])
            .expect("288 bytes hold a compressed Gt element");
    }
    Sha256::new()
        .chain_update(MASK_DST)
        .chain_update(compressed)
        .finalize()
        .into()
}

/// R: the encryption randomness derived from the seed (the Fujisaki-Okamoto transform), as a
/// scalar from 62 bytes of hash output (bias below 2⁻²⁴⁰).
pub(crate) fn randomness(public_point: &[u8; G2_SIZE], seed: &[u8; KEY_SIZE]) -> Scalar {
    let halves = [0u8, 1u8].map(|half| -> [u8; 32] {
        Sha256::new()
            .chain_update(RANDOMNESS_DST)
            .chain_update([half])
            .chain_update(public_point)
            .chain_update(seed)
            .finalize()
            .into()
    });
    let mut scalar = Scalar::ZERO;
    let shift = Scalar::from(2u64).pow_vartime([248]);
    for half in halves {
        let mut bytes = half;
        // 248 bits: below the group order, so always a canonical scalar.
        bytes[31] = 0;
        let part = Option::<Scalar>::from(Scalar::from_bytes_le(&bytes))
            .expect("248 bits are below the group order");
        scalar = scalar * shift + part;
    }
    scalar
}

/// The shared key: the seed bound to the whole ciphertext.
pub(crate) fn shared_key(seed: &[u8; KEY_SIZE], ciphertext: &[u8]) -> [u8; KEY_SIZE] {
    Sha256::new()
        .chain_update(KEY_DST)
        .chain_update(seed)
        .chain_update(ciphertext)
        .finalize()
        .into()
}
