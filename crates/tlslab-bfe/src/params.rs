//! The Bloom filter's size (m key parts) and number of hash functions (k), from the capacity
//! n (ciphertexts decapsulated, i.e. punctured, over the key's life) and the false-positive
//! rate p wanted after n punctures, and the sizes they give.

use crate::Error;

/// Bytes of a compressed G1 point: one key part of the secret key.
pub const KEY_PART_SIZE: usize = 48;
/// Bytes of a compressed G2 point: the public key's point and a ciphertext's first part.
pub const G2_SIZE: usize = 96;
/// Bytes of the encapsulated seed, of each of a ciphertext's k masked copies of it, and of
/// the shared key.
pub const KEY_SIZE: usize = 32;
/// Bytes before the point in an encoded public key: magic (4), m (u32), k (u16).
pub const PUBLIC_KEY_HEADER: usize = 10;
/// Bytes before the key parts in an encoded secret key: magic (4), m (u32), k (u16) and the
/// public key's point.
pub const SECRET_KEY_HEADER: usize = 10 + G2_SIZE;
/// The most key parts a key may have (2³⁰, 48 GiB of key parts): far beyond any capacity a
/// server would puncture in a key's life, and small enough that an index fits in a u32.
pub const MAX_KEY_PARTS: u32 = 1 << 30;
/// The most hash functions: p = 10⁻¹⁹ needs 63.
pub const MAX_HASHES: u16 = 64;

/// A Bloom filter's shape: m key parts (bits of the filter) and k hash functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parameters {
    key_parts: u32,
    hashes: u16,
}

impl Parameters {
    /// The filter for capacity `n` and false-positive rate `p` (0 < p < 1), with the usual
    /// optimal shape: m = ⌈−n ln p / (ln 2)²⌉ and k = ⌈(m/n) ln 2⌉.
    ///
    /// k is rounded up, so the rate after exactly n punctures,
    /// [`Parameters::expected_false_positive_rate`], can be a little above p (n = 64,
    /// p = 0.1: m = 307, k = 4, rate 0.103).
    pub fn for_capacity(capacity: u64, false_positive_rate: f64) -> Result<Self, Error> {
        if capacity == 0 {
            return Err(Error::Parameters(
                "the capacity n must be at least 1".into(),
            ));
        }
        let p = false_positive_rate;
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::Parameters(format!(
                "the false-positive rate p must be between 0 and 1 (exclusive), not {p}"
            )));
        }
        let ln2 = std::f64::consts::LN_2;
        let n = capacity as f64;
        let m = (-n * p.ln() / (ln2 * ln2)).ceil();
        if m > f64::from(MAX_KEY_PARTS) {
            return Err(Error::Parameters(format!(
                "n = {capacity}, p = {p} needs {m} key parts, more than {MAX_KEY_PARTS}"
            )));
        }
        let k = (m / n * ln2).ceil().max(1.0);
        if k > f64::from(MAX_HASHES) {
            return Err(Error::Parameters(format!(
                "p = {p} needs {k} hash functions, more than {MAX_HASHES}"
            )));
        }
        // Both are in range: checked just above.
        Self::new(m as u32, k as u16)
    }

    /// A filter of `key_parts` (m) key parts and `hashes` (k) hash functions.
    pub fn new(key_parts: u32, hashes: u16) -> Result<Self, Error> {
        if key_parts == 0 || key_parts > MAX_KEY_PARTS {
            return Err(Error::Parameters(format!(
                "the number of key parts m must be 1 to {MAX_KEY_PARTS}, not {key_parts}"
            )));
        }
        if hashes == 0 || hashes > MAX_HASHES {
            return Err(Error::Parameters(format!(
                "the number of hash functions k must be 1 to {MAX_HASHES}, not {hashes}"
            )));
        }
        Ok(Self { key_parts, hashes })
    }

    /// m: the number of key parts (bits of the Bloom filter).
    pub fn key_parts(&self) -> u32 {
        self.key_parts
    }

    /// k: the number of hash functions, so of key parts each ciphertext can be opened with.
    pub fn hashes(&self) -> u16 {
        self.hashes
    }

    /// The share of fresh ciphertexts that cannot be decapsulated after `punctures`
    /// punctures, all k of their key parts erased: (1 − (1 − 1/m)^(k·punctures))^k.
    pub fn expected_false_positive_rate(&self, punctures: u64) -> f64 {
        let m = f64::from(self.key_parts);
        let k = f64::from(self.hashes);
        let erased = 1.0 - (1.0 - 1.0 / m).powf(k * punctures as f64);
        erased.powf(k)
    }

    /// Bytes of an encoded public key: a 10-byte header and one G2 point (106 bytes).
    pub fn public_key_size(&self) -> usize {
        PUBLIC_KEY_HEADER + G2_SIZE
    }

    /// Bytes of an encoded ciphertext: one G2 point and k masked copies of the 32-byte seed,
    /// 96 + 32k.
    pub fn ciphertext_size(&self) -> usize {
        G2_SIZE + usize::from(self.hashes) * KEY_SIZE
    }

    /// Bytes of an encoded secret key: a 106-byte header and m key parts of 48 bytes each
    /// (a punctured part is 48 zero bytes), 106 + 48m.
    pub fn secret_key_size(&self) -> usize {
        SECRET_KEY_HEADER + self.key_parts as usize * KEY_PART_SIZE
    }

    /// Bytes a [`crate::SecretKey`] holds in memory: its m key parts of 48 bytes, its public
    /// key, and the struct itself. [`crate::SecretKey::memory_bytes`] gives the same figure
    /// for a key that exists.
    pub fn secret_key_memory(&self) -> usize {
        self.key_parts as usize * KEY_PART_SIZE + crate::keys::SECRET_KEY_FIXED_MEMORY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_follows_the_formulas() {
        let small = Parameters::for_capacity(64, 0.1).unwrap();
        assert_eq!((small.key_parts(), small.hashes()), (307, 4));
        let study = Parameters::for_capacity(50_000, 1e-3).unwrap();
        // −50,000 · ln 10⁻³ / (ln 2)² = 718,879.3; (718,880 / 50,000) · ln 2 = 9.97.
        assert_eq!((study.key_parts(), study.hashes()), (718_880, 10));
        let rate = study.expected_false_positive_rate(50_000);
        assert!((rate - 1e-3).abs() < 0.05e-3, "{rate}");
    }

    #[test]
    fn impossible_shapes_are_errors() {
        assert!(Parameters::for_capacity(0, 0.1).is_err());
        for p in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
            assert!(Parameters::for_capacity(10, p).is_err(), "{p}");
        }
        assert!(Parameters::for_capacity(u64::MAX, 1e-9).is_err());
        assert!(Parameters::for_capacity(1, 1e-300).is_err());
        assert!(Parameters::new(0, 1).is_err());
        assert!(Parameters::new(1, 0).is_err());
        assert!(Parameters::new(1, MAX_HASHES + 1).is_err());
    }

    #[test]
    fn sizes_follow_the_formulas() {
        let parameters = Parameters::new(1000, 7).unwrap();
        assert_eq!(parameters.public_key_size(), 106);
        assert_eq!(parameters.ciphertext_size(), 96 + 7 * 32);
        assert_eq!(parameters.secret_key_size(), 106 + 1000 * 48);
    }
}
