//! Encapsulation and decapsulation: Boneh-Franklin identity-based encryption of one seed to
//! the k identities a Bloom filter picks, made chosen-ciphertext secure with the
//! Fujisaki-Okamoto transform (Derler et al., EUROCRYPT 2018, section 3).

use ::pairing::{MillerLoopResult, MultiMillerLoop};
use blstrs::{pairing, Bls12, G2Affine, G2Prepared, G2Projective, Gt, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_core::{CryptoRng, RngCore};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::hash;
use crate::keys::{PublicKey, SecretKey};
use crate::params::{Parameters, G2_SIZE, KEY_SIZE};
use crate::Error;

/// A ciphertext: c1 = r·g₂ in G2, and for each of the k indices i_j that c1 hashes to, the
/// seed masked under e(H_G(i_j), pk)^r.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ciphertext {
    pub(crate) c1: G2Affine,
    pub(crate) c1_bytes: [u8; G2_SIZE],
    pub(crate) masked: Vec<[u8; KEY_SIZE]>,
}

/// The 32-byte key both sides share, zeroed when dropped.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SharedKey([u8; KEY_SIZE]);

impl SharedKey {
    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_SIZE] {
        &self.0
    }
}

impl PartialEq for SharedKey {
    /// In constant time.
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for SharedKey {}

impl std::fmt::Debug for SharedKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("SharedKey(..)")
    }
}

impl Ciphertext {
    /// The encoding: c1 (96 bytes, compressed G2), then the k masked seeds of 32 bytes:
    /// [`Parameters::ciphertext_size`] bytes. k is not in the encoding: it is the key's.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(G2_SIZE + self.masked.len() * KEY_SIZE);
        bytes.extend_from_slice(&self.c1_bytes);
        for masked in &self.masked {
            bytes.extend_from_slice(masked);
        }
        bytes
    }

    /// Reads [`Ciphertext::to_bytes`]'s encoding for a key of shape `parameters`; any other
    /// bytes are an error, never a panic.
    pub fn from_bytes(parameters: Parameters, bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() != parameters.ciphertext_size() {
            return Err(Error::Length {
                what: "ciphertext",
                expected: parameters.ciphertext_size(),
                found: bytes.len(),
            });
        }
        let (c1, masked) = bytes.split_at(G2_SIZE);
        let c1_bytes: [u8; G2_SIZE] = c1.try_into().expect("split at G2_SIZE");
        let c1 = Option::<G2Affine>::from(G2Affine::from_compressed(&c1_bytes))
            .filter(|point| !bool::from(point.is_identity()))
            .ok_or(Error::Malformed {
                what: "ciphertext",
                reason: "its first part is not a G2 point of the prime-order subgroup other than 0",
            })?;
        let masked = masked
            .chunks_exact(KEY_SIZE)
            .map(|chunk| chunk.try_into().expect("chunks of KEY_SIZE"))
            .collect();
        Ok(Self {
            c1,
            c1_bytes,
            masked,
        })
    }
}

impl PublicKey {
    /// A fresh shared key and the ciphertext that carries it, chosen-ciphertext secure
    /// (Fujisaki-Okamoto: the randomness is derived from the seed, so the holder of the
    /// secret key can re-encrypt to check). Costs two G2 multiplications, k hashes to G1 and
    /// k pairings (against one prepared G2 point).
    pub fn encapsulate<R: RngCore + CryptoRng>(&self, rng: &mut R) -> (SharedKey, Ciphertext) {
        let mut seed = Zeroizing::new([0u8; KEY_SIZE]);
        rng.fill_bytes(seed.as_mut());
        let randomness = hash::randomness(&self.point_bytes, &seed);
        self.encapsulate_with(&seed, &randomness)
    }

    /// **CPA-only variant, not chosen-ciphertext secure**: the randomness is drawn, not
    /// derived, so no one can check that a ciphertext was made honestly. Kept to measure
    /// what the Fujisaki-Okamoto check costs; a lab must not use it against an adversary.
    /// The ciphertext has the same form, and [`SecretKey::decapsulate_cpa`] opens it.
    pub fn encapsulate_cpa<R: RngCore + CryptoRng>(&self, rng: &mut R) -> (SharedKey, Ciphertext) {
        let mut seed = Zeroizing::new([0u8; KEY_SIZE]);
        rng.fill_bytes(seed.as_mut());
        let randomness = nonzero_scalar(rng);
        self.encapsulate_with(&seed, &randomness)
    }

    fn encapsulate_with(
        &self,
        seed: &[u8; KEY_SIZE],
        randomness: &Scalar,
    ) -> (SharedKey, Ciphertext) {
        let c1 = (G2Projective::generator() * randomness).to_affine();
        let c1_bytes = c1.to_compressed();
        let indices = self.indices_of(&c1_bytes);
        let masked = self
            .masks(randomness, &indices, None)
            .into_iter()
            .map(|mask| xor(&mask, seed))
            .collect();
        let ciphertext = Ciphertext {
            c1,
            c1_bytes,
            masked,
        };
        let key = SharedKey(hash::shared_key(seed, &ciphertext.to_bytes()));
        (key, ciphertext)
    }

    pub(crate) fn indices_of(&self, c1_bytes: &[u8; G2_SIZE]) -> Vec<u32> {
        hash::indices(
            &self.point_bytes,
            self.parameters.key_parts(),
            self.parameters.hashes(),
            c1_bytes,
        )
    }

    /// The masks G(e(H_G(i_j), pk)^r) = G(e(H_G(i_j), r·pk)) for each index; `known` gives a
    /// position whose mask the caller already has (it is left as zeros, saving a pairing).
    fn masks(
        &self,
        randomness: &Scalar,
        indices: &[u32],
        known: Option<usize>,
    ) -> Vec<[u8; KEY_SIZE]> {
        let prepared = G2Prepared::from((self.point * randomness).to_affine());
        let wanted: Vec<u32> = indices
            .iter()
            .enumerate()
            .filter(|&(position, _)| Some(position) != known)
            .map(|(_, &index)| index)
            .collect();
        let mut identities = hash::identities(&self.point_bytes, &wanted).into_iter();
        (0..indices.len())
            .map(|position| {
                if Some(position) == known {
                    return [0u8; KEY_SIZE];
                }
                let identity = identities.next().expect("one identity per wanted index");
                let value: Gt =
                    Bls12::multi_miller_loop(&[(&identity, &prepared)]).final_exponentiation();
                hash::mask(&value)
            })
            .collect()
    }
}

impl SecretKey {
    /// The shared key in `ciphertext`, with the Fujisaki-Okamoto check: the seed is
    /// recovered from one key part not yet erased, then the whole ciphertext is made again
    /// from it and must be identical, else [`Error::Invalid`]. When all k key parts it needs
    /// are erased (it was decapsulated and punctured before, or it is a false positive):
    /// [`Error::Punctured`]. Costs k pairings, two G2 multiplications and k − 1 hashes to
    /// G1. Does not puncture: call [`SecretKey::puncture`] once the key is accepted.
    pub fn decapsulate(&self, ciphertext: &Ciphertext) -> Result<SharedKey, Error> {
        let Recovered {
            seed,
            position,
            indices,
        } = self.recover_seed(ciphertext)?;
        let public = self.public_key();
        let randomness = hash::randomness(&public.point_bytes, &seed);
        let c1 = (G2Projective::generator() * randomness)
            .to_affine()
            .to_compressed();
        let mut valid = c1.ct_eq(&ciphertext.c1_bytes);
        let masks = public.masks(&randomness, &indices, Some(position));
        for (j, mask) in masks.iter().enumerate() {
            if j != position {
                valid &= xor(mask, &seed).ct_eq(&ciphertext.masked[j]);
            }
        }
        if !bool::from(valid) {
            return Err(Error::Invalid);
        }
        Ok(SharedKey(hash::shared_key(&seed, &ciphertext.to_bytes())))
    }

    /// **CPA-only variant, not chosen-ciphertext secure**: the seed from one key part, no
    /// check. A mauled ciphertext gives a wrong key rather than an error. One pairing. Kept
    /// to measure what the Fujisaki-Okamoto check costs.
    pub fn decapsulate_cpa(&self, ciphertext: &Ciphertext) -> Result<SharedKey, Error> {
        let seed = self.recover_seed(ciphertext)?.seed;
        Ok(SharedKey(hash::shared_key(&seed, &ciphertext.to_bytes())))
    }

    /// The seed, from the first of the ciphertext's key parts not yet erased, and which
    /// position that was.
    fn recover_seed(&self, ciphertext: &Ciphertext) -> Result<Recovered, Error> {
        let hashes = usize::from(self.parameters().hashes());
        if ciphertext.masked.len() != hashes {
            return Err(Error::Length {
                what: "ciphertext",
                expected: self.parameters().ciphertext_size(),
                found: G2_SIZE + ciphertext.masked.len() * KEY_SIZE,
            });
        }
        let indices = self.public_key().indices_of(&ciphertext.c1_bytes);
        for (position, &index) in indices.iter().enumerate() {
            let Some(part) = self.part(index)? else {
                continue;
            };
            let value = pairing(&part, &ciphertext.c1);
            let seed = Zeroizing::new(xor(&hash::mask(&value), &ciphertext.masked[position]));
            return Ok(Recovered {
                seed,
                position,
                indices,
            });
        }
        Err(Error::Punctured)
    }
}

/// What decapsulation learns from one key part.
struct Recovered {
    /// The seed.
    seed: Zeroizing<[u8; KEY_SIZE]>,
    /// Which of the ciphertext's k masked seeds it came from.
    position: usize,
    /// The ciphertext's k indices.
    indices: Vec<u32>,
}

fn xor(left: &[u8; KEY_SIZE], right: &[u8; KEY_SIZE]) -> [u8; KEY_SIZE] {
    std::array::from_fn(|i| left[i] ^ right[i])
}

fn nonzero_scalar<R: RngCore + CryptoRng>(rng: &mut R) -> Scalar {
    loop {
        let scalar = Scalar::random(&mut *rng);
        if !bool::from(scalar.is_zero()) {
            return scalar;
        }
    }
}
