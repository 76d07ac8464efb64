//! Keys: generation (parallel across threads), puncturing with erasure, and their encodings.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_core::{CryptoRng, RngCore};
use zeroize::{Zeroize, Zeroizing};

use crate::hash;
use crate::kem::Ciphertext;
use crate::params::{Parameters, G2_SIZE, KEY_PART_SIZE, PUBLIC_KEY_HEADER, SECRET_KEY_HEADER};
use crate::Error;

const PUBLIC_KEY_MAGIC: &[u8; 4] = b"BFEp";
const SECRET_KEY_MAGIC: &[u8; 4] = b"BFEs";
/// Key parts generated per batch: one field inversion per batch puts them in affine form.
const BATCH: usize = 256;

/// What a [`SecretKey`] holds besides its key parts.
pub(crate) const SECRET_KEY_FIXED_MEMORY: usize = std::mem::size_of::<SecretKey>();

/// The public key: the filter's shape and pk = α·g₂ in G2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    pub(crate) parameters: Parameters,
    pub(crate) point: G2Affine,
    pub(crate) point_bytes: [u8; G2_SIZE],
}

impl PublicKey {
    /// The filter's shape.
    pub fn parameters(&self) -> Parameters {
        self.parameters
    }

    /// The encoding: `BFEp`, m (u32, big-endian), k (u16, big-endian), pk (96 bytes,
    /// compressed G2), [`Parameters::public_key_size`] bytes in all.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.parameters.public_key_size());
        write_header(&mut bytes, PUBLIC_KEY_MAGIC, self.parameters);
        bytes.extend_from_slice(&self.point_bytes);
        bytes
    }

    /// Reads [`PublicKey::to_bytes`]'s encoding; any other bytes are an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let (parameters, rest) = read_header(bytes, PUBLIC_KEY_MAGIC, "public key")?;
        let point_bytes: [u8; G2_SIZE] = rest.try_into().map_err(|_| Error::Length {
            what: "public key",
            expected: parameters.public_key_size(),
            found: bytes.len(),
        })?;
        Self::from_parts(parameters, point_bytes)
    }

    fn from_parts(parameters: Parameters, point_bytes: [u8; G2_SIZE]) -> Result<Self, Error> {
        let point = Option::<G2Affine>::from(G2Affine::from_compressed(&point_bytes))
            .filter(|point| !bool::from(point.is_identity()))
            .ok_or(Error::Malformed {
                what: "public key",
                reason: "its point is not a G2 point of the prime-order subgroup other than 0",
            })?;
        Ok(Self {
            parameters,
            point,
            point_bytes,
        })
    }

    /// The k key parts (Bloom filter indices) that open `ciphertext`, in hash order (an index
    /// can repeat).
    pub fn indices(&self, ciphertext: &Ciphertext) -> Vec<u32> {
        hash::indices(
            &self.point_bytes,
            self.parameters.key_parts(),
            self.parameters.hashes(),
            &ciphertext.c1_bytes,
        )
    }
}

/// The secret key: m key parts sk_i = α·H_G(i) in G1, each held as its 48-byte compression,
/// and the public key (the Fujisaki-Okamoto check re-encrypts).
///
/// A punctured key part is overwritten with zeros ([`zeroize`], which the compiler may not
/// elide), so the memory that held it no longer does. The parts live in one allocation that
/// never grows, so no stale copy is left by a reallocation; the whole key is zeroed on drop.
/// α itself is not kept once the parts are made. The key is deliberately not `Clone`.
pub struct SecretKey {
    public: PublicKey,
    parts: Vec<[u8; KEY_PART_SIZE]>,
    punctured: u64,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SecretKey")
            .field("parameters", &self.public.parameters)
            .field("punctured", &self.punctured)
            .finish_non_exhaustive()
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.parts.zeroize();
    }
}

/// A fresh key pair with m key parts, made on every available core.
///
/// Costs one hash to G1 and one G1 multiplication per key part (`bench/bfe.sh` measures it).
pub fn generate<R: RngCore + CryptoRng>(
    parameters: Parameters,
    rng: &mut R,
) -> (PublicKey, SecretKey) {
    let threads = std::thread::available_parallelism().map_or(1, |threads| threads.get());
    generate_with_threads(parameters, threads, rng)
}

/// [`generate`] on `threads` threads (at least one; with one, the calling thread).
pub fn generate_with_threads<R: RngCore + CryptoRng>(
    parameters: Parameters,
    threads: usize,
    rng: &mut R,
) -> (PublicKey, SecretKey) {
    let mut alpha = Scalar::random(&mut *rng);
    while bool::from(alpha.is_zero()) {
        alpha = Scalar::random(&mut *rng);
    }
    let point = (G2Projective::generator() * alpha).to_affine();
    let public = PublicKey {
        parameters,
        point,
        point_bytes: point.to_compressed(),
    };
    let mut parts = vec![[0u8; KEY_PART_SIZE]; parameters.key_parts() as usize];
    let per_thread = parts.len().div_ceil(threads.max(1)).max(1);
    if per_thread >= parts.len() {
        // One thread: this one.
        make_parts(&public.point_bytes, &alpha, 0, &mut parts);
    } else {
        std::thread::scope(|scope| {
            for (chunk, slice) in parts.chunks_mut(per_thread).enumerate() {
                let first = chunk * per_thread;
                let public_point = &public.point_bytes;
                let alpha = &alpha;
                scope.spawn(move || make_parts(public_point, alpha, first, slice));
            }
        });
    }
    // blstrs' Scalar offers no zeroize: overwrite this copy; the threads' stack frames held
    // only references to it.
    alpha = Scalar::ZERO;
    std::hint::black_box(&alpha);
    let secret = SecretKey {
        public: public.clone(),
        parts,
        punctured: 0,
    };
    (public, secret)
}

/// Fills `parts` with key parts first, first + 1, ….
fn make_parts(
    public_point: &[u8; G2_SIZE],
    alpha: &Scalar,
    first: usize,
    parts: &mut [[u8; KEY_PART_SIZE]],
) {
    let mut projective = Vec::with_capacity(BATCH);
    let mut affine = vec![G1Affine::default(); BATCH];
    for (batch, slice) in parts.chunks_mut(BATCH).enumerate() {
        projective.clear();
        for offset in 0..slice.len() {
            // Below m, a u32.
            let index = (first + batch * BATCH + offset) as u32;
            projective.push(hash::identity(public_point, index) * alpha);
        }
        G1Projective::batch_normalize(&projective, &mut affine[..slice.len()]);
        for (part, point) in slice.iter_mut().zip(&affine) {
            *part = point.to_compressed();
        }
    }
    // The batch buffers held key parts too.
    projective.fill(G1Projective::identity());
    affine.fill(G1Affine::default());
    std::hint::black_box((&projective, &affine));
}

impl SecretKey {
    /// The public key this key belongs to.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The filter's shape.
    pub fn parameters(&self) -> Parameters {
        self.public.parameters
    }

    /// Erases the key parts that open `ciphertext`, so that neither it nor any other
    /// ciphertext hashing only to erased parts can be decapsulated again. Returns how many
    /// parts were erased now (0 to k; fewer when some already were).
    pub fn puncture(&mut self, ciphertext: &Ciphertext) -> usize {
        let mut erased = 0;
        for index in self.public.indices(ciphertext) {
            let part = &mut self.parts[index as usize];
            if part.iter().any(|&byte| byte != 0) {
                part.zeroize();
                erased += 1;
            }
        }
        self.punctured += 1;
        erased
    }

    /// How many times [`SecretKey::puncture`] ran (since generation, or as recorded in the
    /// encoding this key was read from).
    pub fn punctures(&self) -> u64 {
        self.punctured
    }

    /// Whether key part `index` has been erased (out of range: `None`).
    pub fn is_erased(&self, index: u32) -> Option<bool> {
        self.parts
            .get(index as usize)
            .map(|part| part.iter().all(|&byte| byte == 0))
    }

    /// How many of the m key parts have been erased.
    pub fn erased_parts(&self) -> usize {
        self.parts
            .iter()
            .filter(|part| part.iter().all(|&byte| byte == 0))
            .count()
    }

    /// The 48 bytes held in memory for key part `index`: a compressed G1 point, or zeros once
    /// punctured. (What a test inspects to see that puncturing erases.)
    pub fn stored_part(&self, index: u32) -> Option<&[u8; KEY_PART_SIZE]> {
        self.parts.get(index as usize)
    }

    /// Key part `index` as a point, or `None` when erased; an error when the stored bytes are
    /// not a point of the prime-order subgroup (a corrupted key file).
    pub(crate) fn part(&self, index: u32) -> Result<Option<G1Affine>, Error> {
        let bytes = &self.parts[index as usize];
        if bytes.iter().all(|&byte| byte == 0) {
            return Ok(None);
        }
        Option::<G1Affine>::from(G1Affine::from_compressed(bytes))
            .filter(|point| !bool::from(point.is_identity()))
            .map(Some)
            .ok_or(Error::Malformed {
                what: "secret key",
                reason: "a key part is not a G1 point of the prime-order subgroup other than 0",
            })
    }

    /// Bytes this key holds in memory: its key parts (48 bytes each, erased ones included:
    /// they are zeroed, not freed) and the struct. Equal to
    /// [`Parameters::secret_key_memory`].
    pub fn memory_bytes(&self) -> usize {
        self.parts.capacity() * KEY_PART_SIZE + std::mem::size_of::<Self>()
    }

    /// The encoding: `BFEs`, m (u32), k (u16), pk (96 bytes), then the m key parts of 48
    /// bytes (zeros where erased): [`Parameters::secret_key_size`] bytes in all. The count
    /// of punctures is not kept (a key read back counts from 0).
    ///
    /// The crate does no I/O: the caller writes these bytes once, to a file only its owner
    /// may read (mode 0600); the returned buffer zeroes itself when dropped. Writing the key
    /// again after each puncture, or keeping it only in memory, is the caller's choice: a
    /// copy on disk holds the parts erased since.
    ///
    /// ```no_run
    /// use std::io::Write;
    /// use std::os::unix::fs::OpenOptionsExt;
    /// # let (_, secret_key) = tlslab_bfe::generate(
    /// #     tlslab_bfe::Parameters::for_capacity(10, 0.1).unwrap(), &mut rand_core::OsRng);
    /// // Once, after generation: a new file that only its owner can read.
    /// let mut file = std::fs::OpenOptions::new()
    ///     .write(true)
    ///     .create_new(true)
    ///     .mode(0o600)
    ///     .open("bfe.key")?;
    /// file.write_all(&secret_key.to_bytes())?;
    /// file.sync_all()?;
    /// // At start-up.
    /// let bytes = zeroize::Zeroizing::new(std::fs::read("bfe.key")?);
    /// let secret_key = tlslab_bfe::SecretKey::from_bytes(&bytes)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut bytes = Zeroizing::new(Vec::with_capacity(self.parameters().secret_key_size()));
        write_header(&mut bytes, SECRET_KEY_MAGIC, self.parameters());
        bytes.extend_from_slice(&self.public.point_bytes);
        for part in &self.parts {
            bytes.extend_from_slice(part);
        }
        bytes
    }

    /// Reads [`SecretKey::to_bytes`]'s encoding; any other bytes are an error, never a panic.
    ///
    /// The key parts are checked for being points only when used (decapsulation), so that
    /// reading a key of 700,000 parts takes milliseconds, not a minute; a corrupted part then
    /// fails that decapsulation with [`Error::Malformed`]. The caller should zero `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let (parameters, rest) = read_header(bytes, SECRET_KEY_MAGIC, "secret key")?;
        if bytes.len() != parameters.secret_key_size() {
            return Err(Error::Length {
                what: "secret key",
                expected: parameters.secret_key_size(),
                found: bytes.len(),
            });
        }
        let (point, parts) = rest.split_at(G2_SIZE);
        let point_bytes: [u8; G2_SIZE] = point.try_into().expect("split at G2_SIZE");
        let public = PublicKey::from_parts(parameters, point_bytes)?;
        let parts = parts
            .chunks_exact(KEY_PART_SIZE)
            .map(|part| part.try_into().expect("chunks of KEY_PART_SIZE"))
            .collect();
        Ok(Self {
            public,
            parts,
            punctured: 0,
        })
    }
}

fn write_header(bytes: &mut Vec<u8>, magic: &[u8; 4], parameters: Parameters) {
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&parameters.key_parts().to_be_bytes());
    bytes.extend_from_slice(&parameters.hashes().to_be_bytes());
}

fn read_header<'a>(
    bytes: &'a [u8],
    magic: &[u8; 4],
    what: &'static str,
) -> Result<(Parameters, &'a [u8]), Error> {
    if bytes.len() < PUBLIC_KEY_HEADER {
        return Err(Error::Malformed {
            what,
            reason: "shorter than its 10-byte header",
        });
    }
    if &bytes[..4] != magic {
        return Err(Error::Malformed {
            what,
            reason: "it does not start with the expected magic bytes",
        });
    }
    let key_parts = u32::from_be_bytes(bytes[4..8].try_into().expect("4 bytes"));
    let hashes = u16::from_be_bytes(bytes[8..10].try_into().expect("2 bytes"));
    let parameters = Parameters::new(key_parts, hashes)?;
    if what == "secret key" && bytes.len() < SECRET_KEY_HEADER {
        return Err(Error::Length {
            what,
            expected: parameters.secret_key_size(),
            found: bytes.len(),
        });
    }
    Ok((parameters, &bytes[PUBLIC_KEY_HEADER..]))
}
