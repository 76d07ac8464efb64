//! The OpenSSL column: the linked OpenSSL 4, called as its TLS stack calls it (a
//! CertificateVerify signed with EVP_DigestSign from a fresh context, a peer's share read
//! into a key and derived with, one context per AEAD key, one HKDF context per call).

use std::sync::Arc;

use openssl::bn::{BigNum, BigNumContext};
use openssl::cipher::{Cipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;
use openssl::derive::Deriver;
use openssl::dh::Dh;
use openssl::ec::{EcGroup, EcKey, EcPoint, PointConversionForm};
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::md::Md;
use openssl::nid::Nid;
use openssl::pkey::{Id, KeyType, PKey, Private, Public};
use openssl::pkey_ctx::{HkdfMode, PkeyCtx};
use openssl::sign::{Signer, Verifier};

use crate::keys::{self, Family};
use crate::{
    expand_label_info, factory, Prepared, Primitive, SpeedError, Worker, RECORD_HEADER, SIGNED,
};

mod ffi;

/// OpenSSL's refusal, its error stack kept as the cause.
fn text(error: ErrorStack) -> SpeedError {
    SpeedError::library("OpenSSL", "complete the operation", error)
}

/// The operations of `primitive` in OpenSSL (it has every one).
pub(crate) fn prepare(primitive: &Primitive) -> Prepared {
    let name = primitive.name;
    let key = |made: Result<PKey<Private>, ErrorStack>| made.map(Arc::new).map_err(text);
    match name {
        "rsa512" | "rsa1024" | "rsa2048" | "rsa3072" | "rsa4096" | "rsa7680" | "rsa15360" => {
            signatures(
                keys::key(Family::Rsa, keys::bits(name, "rsa"))?,
                Some(MessageDigest::sha256()),
            )
        }
        "dsa1024" | "dsa2048" => signatures(
            keys::key(Family::Dsa, keys::bits(name, "dsa"))?,
            Some(MessageDigest::sha256()),
        ),
        "ecdsa-p256" => signatures(
            key(ec_key(Nid::X9_62_PRIME256V1))?,
            Some(MessageDigest::sha256()),
        ),
        "ecdsa-p384" => signatures(key(ec_key(Nid::SECP384R1))?, Some(MessageDigest::sha384())),
        "ecdsa-p521" => signatures(key(ec_key(Nid::SECP521R1))?, Some(MessageDigest::sha512())),
        "ed25519" => signatures(key(PKey::generate_ed25519())?, None),
        "ed448" => signatures(key(PKey::generate_ed448())?, None),
        "mldsa44" => signatures(key(seeded(KeyType::ML_DSA_44, 32))?, None),
        "mldsa65" => signatures(key(seeded(KeyType::ML_DSA_65, 32))?, None),
        "mldsa87" => signatures(key(seeded(KeyType::ML_DSA_87, 32))?, None),
        "x25519" => key_exchange(Group::X25519),
        "p256" => key_exchange(Group::Ec(Nid::X9_62_PRIME256V1)),
        "p384" => key_exchange(Group::Ec(Nid::SECP384R1)),
        "ffdhe2048" => key_exchange(Group::Ffdhe(c"ffdhe2048")),
        "ffdhe3072" => key_exchange(Group::Ffdhe(c"ffdhe3072")),
        "mlkem768" => ml_kem(KeyType::ML_KEM_768),
        "mlkem1024" => ml_kem(KeyType::ML_KEM_1024),
        "aes128gcm" => aead(Cipher::aes_128_gcm(), primitive.bytes.unwrap_or(0)),
        "aes256gcm" => aead(Cipher::aes_256_gcm(), primitive.bytes.unwrap_or(0)),
        "chacha20" => aead(Cipher::chacha20_poly1305(), primitive.bytes.unwrap_or(0)),
        "hkdf-sha256" => hkdf(Md::sha256(), 32),
        "hkdf-sha384" => hkdf(Md::sha384(), 48),
        other => Err(format!("no {other} in OpenSSL").into()),
    }
}

fn ec_key(curve: Nid) -> Result<PKey<Private>, ErrorStack> {
    let group = EcGroup::from_curve_name(curve)?;
    EcKey::generate(&group).and_then(PKey::from_ec_key)
}

/// An ML-DSA or ML-KEM key: FIPS 204 and 203 make a key from a random seed, as OpenSSL's own
/// key generation does.
fn seeded(key_type: KeyType, length: usize) -> Result<PKey<Private>, ErrorStack> {
    let mut seed = vec![0u8; length];
    openssl::rand::rand_bytes(&mut seed)?;
    PKey::private_key_from_seed(None, key_type, None, &seed)
}

/// Sign [`SIGNED`] with `digest` (none: EdDSA and ML-DSA sign the message itself), and
/// verify with the public key alone, each from a fresh EVP_MD_CTX as libssl does for each
/// CertificateVerify.
fn signatures(key: Arc<PKey<Private>>, digest: Option<MessageDigest>) -> Prepared {
    let public: Arc<PKey<Public>> = Arc::new(
        key.public_key_to_der()
            .and_then(|der| PKey::public_key_from_der(&der))
            .map_err(text)?,
    );
    let sign = Arc::new(move || -> Result<Vec<u8>, SpeedError> {
        let mut signer = match digest {
            Some(digest) => Signer::new(digest, &key),
            None => Signer::new_without_digest(&key),
        }
        .map_err(text)?;
        signer.sign_oneshot_to_vec(&SIGNED).map_err(text)
    });
    let signer = sign.clone();
    Ok(vec![
        (
            "sign",
            factory(move || {
                let sign = signer.clone();
                Ok(Box::new(move || sign().map(drop)) as Worker)
            }),
        ),
        (
            "verify",
            factory(move || {
                let signature = sign()?;
                let public = public.clone();
                Ok(Box::new(move || {
                    let mut verifier = match digest {
                        Some(digest) => Verifier::new(digest, &public),
                        None => Verifier::new_without_digest(&public),
                    }
                    .map_err(text)?;
                    match verifier.verify_oneshot(&signature, &SIGNED).map_err(text)? {
                        true => Ok(()),
                        false => Err("OpenSSL found its own signature wrong".into()),
                    }
                }) as Worker)
            }),
        ),
    ])
}

/// A key-exchange group as OpenSSL makes its keys and reads a peer's share.
#[derive(Clone, Copy)]
enum Group {
    X25519,
    Ec(Nid),
    /// RFC 7919's groups, by OpenSSL's name.
    Ffdhe(&'static std::ffi::CStr),
}

/// A group's key maker: keys of a finite-field group are made from the group's parameters,
/// read once.
struct Maker {
    group: Group,
    parameters: Option<PKey<Private>>,
}

impl Maker {
    fn new(group: Group) -> Result<Maker, SpeedError> {
        let parameters = match group {
            Group::Ffdhe(name) => Some(ffi::named_group_key(c"DH", name).map_err(text)?),
            _ => None,
        };
        Ok(Maker { group, parameters })
    }

    /// A private key and its share as it goes on the wire.
    fn key_share(&self) -> Result<(PKey<Private>, Vec<u8>), ErrorStack> {
        match (self.group, &self.parameters) {
            (Group::X25519, _) => {
                let key = PKey::generate_x25519()?;
                let share = key.raw_public_key()?;
                Ok((key, share))
            }
            (Group::Ec(curve), _) => {
                let group = EcGroup::from_curve_name(curve)?;
                let key = EcKey::generate(&group)?;
                let mut numbers = BigNumContext::new()?;
                let share = key.public_key().to_bytes(
                    &group,
                    PointConversionForm::UNCOMPRESSED,
                    &mut numbers,
                )?;
                Ok((PKey::from_ec_key(key)?, share))
            }
            (Group::Ffdhe(_), parameters) => {
                let parameters = parameters.as_ref().ok_or_else(ErrorStack::get)?;
                let mut context = PkeyCtx::new(parameters)?;
                context.keygen_init()?;
                let key = context.keygen()?;
                let share = key.dh()?.public_key().to_vec();
                Ok((key, share))
            }
        }
    }

    /// The peer's share read into a key.
    fn peer(&self, share: &[u8]) -> Result<PKey<Public>, ErrorStack> {
        match (self.group, &self.parameters) {
            (Group::X25519, _) => PKey::public_key_from_raw_bytes(share, Id::X25519),
            (Group::Ec(curve), _) => {
                let group = EcGroup::from_curve_name(curve)?;
                let mut numbers = BigNumContext::new()?;
                let point = EcPoint::from_bytes(&group, share, &mut numbers)?;
                PKey::from_ec_key(EcKey::from_public_key(&group, &point)?)
            }
            (Group::Ffdhe(_), parameters) => {
                let parameters = parameters.as_ref().ok_or_else(ErrorStack::get)?.dh()?;
                let dh = Dh::from_pqg(
                    parameters.prime_p().to_owned()?,
                    parameters.prime_q().map(|q| q.to_owned()).transpose()?,
                    parameters.generator().to_owned()?,
                )?
                .set_public_key(BigNum::from_slice(share)?)?;
                PKey::from_dh(dh)
            }
        }
    }
}

/// `keygen`: a private key made and its share encoded; `derive`: the peer's share read and
/// the shared secret derived.
fn key_exchange(group: Group) -> Prepared {
    let maker = Arc::new(Maker::new(group)?);
    let keygen = maker.clone();
    Ok(vec![
        (
            "keygen",
            factory(move || {
                let maker = keygen.clone();
                Ok(Box::new(move || {
                    std::hint::black_box(maker.key_share().map_err(text)?);
                    Ok(())
                }) as Worker)
            }),
        ),
        (
            "derive",
            factory(move || {
                let (mine, _) = maker.key_share().map_err(text)?;
                let (_, peer) = maker.key_share().map_err(text)?;
                let maker = maker.clone();
                Ok(Box::new(move || {
                    let peer = maker.peer(&peer).map_err(text)?;
                    let mut deriver = Deriver::new(&mine).map_err(text)?;
                    deriver.set_peer(&peer).map_err(text)?;
                    std::hint::black_box(deriver.derive_to_vec().map_err(text)?);
                    Ok(())
                }) as Worker)
            }),
        ),
    ])
}

/// `keygen`: a decapsulation key from a fresh seed and its encapsulation key's bytes;
/// `encapsulate`: the server's, from those bytes; `decapsulate`: the client's.
fn ml_kem(key_type: KeyType) -> Prepared {
    let client = move || -> Result<(PKey<Private>, Vec<u8>), SpeedError> {
        let key = seeded(key_type, 64).map_err(text)?;
        let public = key.raw_public_key().map_err(text)?;
        Ok((key, public))
    };
    let encapsulate = move |public: &[u8]| -> Result<(Vec<u8>, Vec<u8>), SpeedError> {
        let key = PKey::public_key_from_raw_bytes_ex(None, key_type, None, public).map_err(text)?;
        ffi::encapsulate(&key).map_err(text)
    };
    Ok(vec![
        (
            "keygen",
            factory(move || {
                Ok(Box::new(move || {
                    std::hint::black_box(client()?);
                    Ok(())
                }) as Worker)
            }),
        ),
        (
            "encapsulate",
            factory(move || {
                let (_, public) = client()?;
                Ok(Box::new(move || {
                    std::hint::black_box(encapsulate(&public)?);
                    Ok(())
                }) as Worker)
            }),
        ),
        (
            "decapsulate",
            factory(move || {
                let (key, public) = client()?;
                let (ciphertext, _) = encapsulate(&public)?;
                Ok(Box::new(move || {
                    std::hint::black_box(ffi::decapsulate(&key, &ciphertext).map_err(text)?);
                    Ok(())
                }) as Worker)
            }),
        ),
    ])
}

/// One TLS record of `bytes` sealed or opened, with the record header as additional data, on
/// a context keyed once (as libssl keys one per direction) and given each record's nonce.
fn aead(cipher: &'static CipherRef, bytes: usize) -> Prepared {
    let keyed = move |encrypt: bool| -> Result<CipherCtx, SpeedError> {
        let mut context = CipherCtx::new().map_err(text)?;
        let key = vec![0x42; cipher.key_length()];
        if encrypt {
            context.encrypt_init(Some(cipher), Some(&key), None)
        } else {
            context.decrypt_init(Some(cipher), Some(&key), None)
        }
        .map_err(text)?;
        Ok(context)
    };
    let nonce = [7u8; 12];
    let seal = move |context: &mut CipherCtx, plain: &[u8], out: &mut [u8], tag: &mut [u8]| {
        context.encrypt_init(None, None, Some(&nonce))?;
        context.cipher_update(&RECORD_HEADER, None)?;
        let written = context.cipher_update(plain, Some(out))?;
        context.cipher_final(&mut out[written..])?;
        context.tag(tag)
    };
    Ok(vec![
        (
            "seal",
            factory(move || {
                let mut context = keyed(true)?;
                let plain = vec![0x61; bytes];
                let mut out = vec![0; bytes + 16];
                let mut tag = [0; 16];
                Ok(
                    Box::new(move || seal(&mut context, &plain, &mut out, &mut tag).map_err(text))
                        as Worker,
                )
            }),
        ),
        (
            "open",
            factory(move || {
                let mut sealed = vec![0; bytes + 16];
                let mut tag = [0; 16];
                seal(&mut keyed(true)?, &vec![0x61; bytes], &mut sealed, &mut tag).map_err(text)?;
                sealed.truncate(bytes);
                let mut context = keyed(false)?;
                let mut plain = vec![0; bytes + 16];
                Ok(Box::new(move || {
                    context
                        .decrypt_init(None, None, Some(&nonce))
                        .map_err(text)?;
                    context.set_tag(&tag).map_err(text)?;
                    context.cipher_update(&RECORD_HEADER, None).map_err(text)?;
                    let written = context
                        .cipher_update(&sealed, Some(&mut plain))
                        .map_err(text)?;
                    context
                        .cipher_final(&mut plain[written..])
                        .map_err(|_| "OpenSSL refused its own record".to_string())?;
                    Ok(())
                }) as Worker)
            }),
        ),
    ])
}

/// `extract` and `expand` (one Expand-Label of a traffic secret's size), each on a fresh
/// HKDF context, as libssl's key schedule makes one per call.
fn hkdf(digest: &'static openssl::md::MdRef, size: usize) -> Prepared {
    let extract = move |out: &mut [u8]| -> Result<(), ErrorStack> {
        let mut context = PkeyCtx::new_id(Id::HKDF)?;
        context.derive_init()?;
        context.set_hkdf_md(digest)?;
        context.set_hkdf_mode(HkdfMode::EXTRACT_ONLY)?;
        context.set_hkdf_salt(&vec![1; size])?;
        context.set_hkdf_key(&vec![2; size])?;
        context.derive(Some(out))?;
        Ok(())
    };
    Ok(vec![
        (
            "extract",
            factory(move || {
                let mut out = vec![0; size];
                Ok(Box::new(move || extract(&mut out).map_err(text)) as Worker)
            }),
        ),
        (
            "expand",
            factory(move || {
                let mut secret = vec![0; size];
                extract(&mut secret).map_err(text)?;
                let info = expand_label_info(size as u16, size);
                let mut out = vec![0; size];
                Ok(Box::new(move || {
                    let mut expand = || -> Result<(), ErrorStack> {
                        let mut context = PkeyCtx::new_id(Id::HKDF)?;
                        context.derive_init()?;
                        context.set_hkdf_md(digest)?;
                        context.set_hkdf_mode(HkdfMode::EXPAND_ONLY)?;
                        context.set_hkdf_key(&secret)?;
                        context.add_hkdf_info(&info)?;
                        context.derive(Some(&mut out))?;
                        Ok(())
                    };
                    expand().map_err(text)
                }) as Worker)
            }),
        ),
    ])
}
