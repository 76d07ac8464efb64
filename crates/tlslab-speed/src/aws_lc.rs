//! The rustls column: aws-lc-rs, rustls' crypto provider, called as rustls' provider calls it
//! (a signature over the message, a verification from the public key's bytes, a key share
//! made and encoded, a peer's share parsed and agreed with).

use std::sync::Arc;

use aws_lc_rs::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey as PeerShare};
use aws_lc_rs::hkdf;
use aws_lc_rs::kem::{self, DecapsulationKey, EncapsulationKey};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, PqdsaKeyPair, RsaKeyPair};

use crate::keys::{self, Family};
use crate::{
    expand_label_info, factory, Prepared, Primitive, SpeedError, Worker, RECORD_HEADER, SIGNED,
};

fn failed(what: &str) -> impl Fn(aws_lc_rs::error::Unspecified) -> SpeedError + '_ {
    move |error| SpeedError::library("aws-lc-rs", what, error)
}

/// OpenSSL refused `doing` (it makes the keys both backends sign with).
fn openssl(doing: &str) -> impl Fn(openssl::error::ErrorStack) -> SpeedError + '_ {
    move |error| SpeedError::library("OpenSSL", doing, error)
}

/// The operations of `primitive` in aws-lc-rs, or why it has none.
pub(crate) fn prepare(primitive: &Primitive) -> Prepared {
    let name = primitive.name;
    match name {
        "rsa512" => {
            Err("aws-lc-rs has no RSA keys under 1024 bits (rustls' provider refuses them)".into())
        }
        "rsa1024" | "rsa2048" | "rsa3072" | "rsa4096" | "rsa7680" | "rsa15360" => {
            rsa(keys::bits(name, "rsa"))
        }
        "dsa1024" | "dsa2048" => Err("aws-lc-rs offers no DSA (nor does TLS 1.3)".into()),
        "ecdsa-p256" => ecdsa(
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &signature::ECDSA_P256_SHA256_ASN1,
        ),
        "ecdsa-p384" => ecdsa(
            &signature::ECDSA_P384_SHA384_ASN1_SIGNING,
            &signature::ECDSA_P384_SHA384_ASN1,
        ),
        "ecdsa-p521" => ecdsa(
            &signature::ECDSA_P521_SHA512_ASN1_SIGNING,
            &signature::ECDSA_P521_SHA512_ASN1,
        ),
        "ed25519" => ed25519(),
        "ed448" => Err("aws-lc-rs offers no Ed448".into()),
        "mldsa44" => ml_dsa(&signature::ML_DSA_44_SIGNING, &signature::ML_DSA_44),
        "mldsa65" => ml_dsa(&signature::ML_DSA_65_SIGNING, &signature::ML_DSA_65),
        "mldsa87" => ml_dsa(&signature::ML_DSA_87_SIGNING, &signature::ML_DSA_87),
        "x25519" => key_exchange(&agreement::X25519),
        "p256" => key_exchange(&agreement::ECDH_P256),
        "p384" => key_exchange(&agreement::ECDH_P384),
        "ffdhe2048" | "ffdhe3072" => {
            Err("aws-lc-rs offers no finite-field groups (rustls' provider has no FFDHE)".into())
        }
        "mlkem768" => ml_kem(&kem::ML_KEM_768),
        "mlkem1024" => ml_kem(&kem::ML_KEM_1024),
        "aes128gcm" => aead_operations(&aead::AES_128_GCM, primitive.bytes.unwrap_or(0)),
        "aes256gcm" => aead_operations(&aead::AES_256_GCM, primitive.bytes.unwrap_or(0)),
        "chacha20" => aead_operations(&aead::CHACHA20_POLY1305, primitive.bytes.unwrap_or(0)),
        "hkdf-sha256" => hkdf_operations(hkdf::HKDF_SHA256, 32),
        "hkdf-sha384" => hkdf_operations(hkdf::HKDF_SHA384, 48),
        other => Err(format!("no {other} in aws-lc-rs").into()),
    }
}

/// A signer and a verifier over [`SIGNED`]: each worker signs, and verifies the signature its
/// setup made.
fn sign_and_verify<S, V>(sign: S, verify: V) -> Prepared
where
    S: Fn() -> Result<Vec<u8>, SpeedError> + Send + Sync + 'static,
    V: Fn(&[u8]) -> Result<(), SpeedError> + Send + Sync + 'static,
{
    let sign = Arc::new(sign);
    let verify = Arc::new(verify);
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
                let verify = verify.clone();
                Ok(Box::new(move || verify(&signature)) as Worker)
            }),
        ),
    ])
}

/// RSA PKCS #1 v1.5 with SHA-256 (the padding `openssl speed` signs with; PSS costs the same
/// private-key operation), with OpenSSL's key of `bits`. aws-lc-rs signs with keys of 2048
/// to 8192 bits and verifies 1024 to 8192.
fn rsa(bits: u32) -> Prepared {
    let verification: &'static signature::RsaParameters = if bits < 2048 {
        &signature::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY
    } else {
        &signature::RSA_PKCS1_2048_8192_SHA256
    };
    if bits > 8192 {
        return Err(format!("aws-lc-rs takes RSA keys of up to 8192 bits, not {bits}").into());
    }
    let key = keys::key(Family::Rsa, bits)?;
    let public = key
        .public_key_to_der()
        .map_err(openssl("encode the RSA public key"))?;
    let public = openssl::pkey::PKey::public_key_from_der(&public)
        .and_then(|key| key.rsa())
        .and_then(|rsa| rsa.public_key_to_der_pkcs1())
        .map_err(openssl("encode the RSA public key as PKCS #1"))?;
    let signer = if bits >= 2048 {
        let pkcs8 = key
            .private_key_to_pkcs8()
            .map_err(openssl("encode the RSA key as PKCS #8"))?;
        Some(Arc::new(RsaKeyPair::from_pkcs8(&pkcs8).map_err(
            |error| {
                SpeedError::library("aws-lc-rs", format!("read OpenSSL's {bits}-bit key"), error)
            },
        )?))
    } else {
        None
    };
    let length = (bits as usize).div_ceil(8);
    let random = SystemRandom::new();
    let sign = {
        let signer = signer.clone();
        move || -> Result<Vec<u8>, SpeedError> {
            let Some(signer) = &signer else {
                return Err(format!(
                    "aws-lc-rs signs with RSA keys of 2048 bits or more, not {bits}"
                )
                .into());
            };
            let mut out = vec![0; length];
            signer
                .sign(&signature::RSA_PKCS1_SHA256, &random, &SIGNED, &mut out)
                .map_err(failed("sign"))?;
            Ok(out)
        }
    };
    let verify = move |signed: &[u8]| {
        signature::UnparsedPublicKey::new(verification, &public)
            .verify(&SIGNED, signed)
            .map_err(failed("verify"))
    };
    if signer.is_none() {
        // Verification alone: the signature comes from OpenSSL's signer of the same key.
        let key = key.clone();
        let signature = {
            let mut signer =
                openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), &key)
                    .map_err(openssl("make an RSA signer"))?;
            signer
                .sign_oneshot_to_vec(&SIGNED)
                .map_err(openssl("sign"))?
        };
        let verify = Arc::new(verify);
        return Ok(vec![
            (
                "sign",
                Err(
                    format!("aws-lc-rs signs with RSA keys of 2048 bits or more, not {bits}")
                        .into(),
                ),
            ),
            (
                "verify",
                factory(move || {
                    let verify = verify.clone();
                    let signature = signature.clone();
                    Ok(Box::new(move || verify(&signature)) as Worker)
                }),
            ),
        ]);
    }
    sign_and_verify(sign, verify)
}

fn ecdsa(
    signing: &'static signature::EcdsaSigningAlgorithm,
    verification: &'static signature::EcdsaVerificationAlgorithm,
) -> Prepared {
    let key = Arc::new(EcdsaKeyPair::generate(signing).map_err(failed("make an ECDSA key"))?);
    let public = key.public_key().as_ref().to_vec();
    let random = SystemRandom::new();
    sign_and_verify(
        move || {
            key.sign(&random, &SIGNED)
                .map(|signed| signed.as_ref().to_vec())
                .map_err(failed("sign"))
        },
        move |signed| {
            signature::UnparsedPublicKey::new(verification, &public)
                .verify(&SIGNED, signed)
                .map_err(failed("verify"))
        },
    )
}

fn ed25519() -> Prepared {
    let key = Arc::new(Ed25519KeyPair::generate().map_err(failed("make an Ed25519 key"))?);
    let public = key.public_key().as_ref().to_vec();
    sign_and_verify(
        move || Ok(key.sign(&SIGNED).as_ref().to_vec()),
        move |signed| {
            signature::UnparsedPublicKey::new(&signature::ED25519, &public)
                .verify(&SIGNED, signed)
                .map_err(failed("verify"))
        },
    )
}

fn ml_dsa(
    signing: &'static signature::PqdsaSigningAlgorithm,
    verification: &'static signature::PqdsaVerificationAlgorithm,
) -> Prepared {
    let key = Arc::new(PqdsaKeyPair::generate(signing).map_err(failed("make an ML-DSA key"))?);
    let public = key.public_key().as_ref().to_vec();
    sign_and_verify(
        move || {
            // The largest signature, ML-DSA-87's, is 4627 bytes.
            let mut out = vec![0; 4627];
            let length = key.sign(&SIGNED, &mut out).map_err(failed("sign"))?;
            out.truncate(length);
            Ok(out)
        },
        move |signed| {
            signature::UnparsedPublicKey::new(verification, &public)
                .verify(&SIGNED, signed)
                .map_err(failed("verify"))
        },
    )
}

/// `keygen`: a private key made and its public share encoded, as a key share is.
/// `derive`: the peer's share parsed and the shared secret computed.
fn key_exchange(algorithm: &'static agreement::Algorithm) -> Prepared {
    Ok(vec![
        (
            "keygen",
            factory(move || {
                Ok(Box::new(move || {
                    let key =
                        PrivateKey::generate(algorithm).map_err(failed("make a key share"))?;
                    let share = key
                        .compute_public_key()
                        .map_err(failed("encode a key share"))?;
                    std::hint::black_box(share.as_ref());
                    Ok(())
                }) as Worker)
            }),
        ),
        (
            "derive",
            factory(move || {
                let mine = PrivateKey::generate(algorithm).map_err(failed("make a key share"))?;
                let peer = PrivateKey::generate(algorithm)
                    .and_then(|key| key.compute_public_key())
                    .map_err(failed("make the peer's share"))?
                    .as_ref()
                    .to_vec();
                Ok(Box::new(move || {
                    agreement::agree(&mine, PeerShare::new(algorithm, &peer), (), |secret| {
                        std::hint::black_box(secret);
                        Ok(())
                    })
                    .map_err(|()| SpeedError::from("aws-lc-rs could not derive the shared secret"))
                }) as Worker)
            }),
        ),
    ])
}

/// `keygen`: the client's decapsulation key and its encoded encapsulation key; `encapsulate`:
/// the server's, from the client's key's bytes; `decapsulate`: the client's.
fn ml_kem(algorithm: &'static kem::Algorithm<kem::AlgorithmId>) -> Prepared {
    let client = || -> Result<(DecapsulationKey<kem::AlgorithmId>, Vec<u8>), SpeedError> {
        let key = DecapsulationKey::generate(algorithm).map_err(failed("make an ML-KEM key"))?;
        let public = key
            .encapsulation_key()
            .and_then(|public| public.key_bytes().map(|bytes| bytes.as_ref().to_vec()))
            .map_err(failed("encode an ML-KEM key"))?;
        Ok((key, public))
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
                    let key = EncapsulationKey::new(algorithm, &public).map_err(|error| {
                        SpeedError::library("aws-lc-rs", "read an ML-KEM key", error)
                    })?;
                    let (ciphertext, secret) = key.encapsulate().map_err(failed("encapsulate"))?;
                    std::hint::black_box((ciphertext.as_ref(), secret.as_ref()));
                    Ok(())
                }) as Worker)
            }),
        ),
        (
            "decapsulate",
            factory(move || {
                let (key, public) = client()?;
                let (ciphertext, _) = EncapsulationKey::new(algorithm, &public)
                    .map_err(|error| SpeedError::library("aws-lc-rs", "read an ML-KEM key", error))?
                    .encapsulate()
                    .map_err(failed("encapsulate"))?;
                let ciphertext = ciphertext.as_ref().to_vec();
                Ok(Box::new(move || {
                    let secret = key
                        .decapsulate(ciphertext.as_slice().into())
                        .map_err(failed("decapsulate"))?;
                    std::hint::black_box(secret.as_ref());
                    Ok(())
                }) as Worker)
            }),
        ),
    ])
}

/// One TLS record of `bytes` sealed (in place, the tag apart, as rustls seals) or opened
/// (into a buffer of its own: the record stays whole for the next call).
fn aead_operations(algorithm: &'static aead::Algorithm, bytes: usize) -> Prepared {
    let key = move || -> Result<LessSafeKey, SpeedError> {
        let secret = vec![0x42; algorithm.key_len()];
        UnboundKey::new(algorithm, &secret)
            .map(LessSafeKey::new)
            .map_err(failed("make an AEAD key"))
    };
    let nonce = || Nonce::assume_unique_for_key([7; 12]);
    Ok(vec![
        (
            "seal",
            factory(move || {
                let key = key()?;
                let mut record = vec![0x61; bytes];
                Ok(Box::new(move || {
                    let tag = key
                        .seal_in_place_separate_tag(nonce(), Aad::from(RECORD_HEADER), &mut record)
                        .map_err(failed("seal"))?;
                    std::hint::black_box(tag.as_ref());
                    Ok(())
                }) as Worker)
            }),
        ),
        (
            "open",
            factory(move || {
                let key = key()?;
                let mut sealed = vec![0x61; bytes];
                let tag = key
                    .seal_in_place_separate_tag(nonce(), Aad::from(RECORD_HEADER), &mut sealed)
                    .map_err(failed("seal"))?;
                let tag = tag.as_ref().to_vec();
                let mut plain = vec![0; bytes];
                Ok(Box::new(move || {
                    key.open_separate_gather(
                        nonce(),
                        Aad::from(RECORD_HEADER),
                        &sealed,
                        &tag,
                        &mut plain,
                    )
                    .map_err(failed("open"))
                }) as Worker)
            }),
        ),
    ])
}

/// What a reader of a measured row should know about how aws-lc-rs does it.
pub(crate) fn note(primitive: &Primitive, operation: &str) -> Option<String> {
    (primitive.kind == crate::Kind::Hkdf && operation == "extract").then(|| {
        "aws-lc-rs defers the extraction: each expansion from an extracted secret extracts \
         again (rustls' handshake-secret expansions pay it)"
            .into()
    })
}

/// A length HKDF-Expand fills.
struct Length(usize);

impl hkdf::KeyType for Length {
    fn len(&self) -> usize {
        self.0
    }
}

/// `extract`: HKDF-Extract of a secret of the hash's size (the handshake secret from the
/// (EC)DHE secret), its salt keyed each time as rustls' provider keys it; `expand`: one
/// HKDF-Expand-Label of a traffic secret's size from a secret's bytes (rustls'
/// `expander_for_prk`, then one expansion).
fn hkdf_operations(algorithm: hkdf::Algorithm, size: usize) -> Prepared {
    Ok(vec![
        (
            "extract",
            factory(move || {
                let salt = vec![1; size];
                let secret = vec![2; size];
                Ok(Box::new(move || {
                    std::hint::black_box(hkdf::Salt::new(algorithm, &salt).extract(&secret));
                    Ok(())
                }) as Worker)
            }),
        ),
        (
            "expand",
            factory(move || {
                let secret = vec![3; size];
                let info = expand_label_info(size as u16, size);
                let mut out = vec![0; size];
                Ok(Box::new(move || {
                    hkdf::Prk::new_less_safe(algorithm, &secret)
                        .expand(&[&info], Length(size))
                        .and_then(|okm| okm.fill(&mut out))
                        .map_err(failed("expand"))
                }) as Worker)
            }),
        ),
    ])
}
