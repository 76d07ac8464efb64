//! ML-DSA profiles (FIPS 204), made with OpenSSL because rcgen can neither generate ML-DSA
//! keys nor sign with them.
//!
//! The `openssl` crate drives the OpenSSL 4 that `scripts/openssl` builds (linked statically,
//! see `.cargo/config.toml`). The result is the same [`ProfileMaterial`] the rcgen profiles
//! produce, issued by the same plan (root, four intermediates, a leaf; every depth from the
//! same six keys) with the same names, serial numbers, validity and extensions, written in
//! the order rcgen writes them. The cache cannot tell which generator ran.
//!
//! Keys are PKCS#8 in OpenSSL's default ML-DSA form (the seed and the expanded key), which
//! OpenSSL 3.5 and later and aws-lc (so rustls) read; OpenSSL 3.0 knows no ML-DSA at all.

use std::net::IpAddr;

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::pkey::{KeyType, PKey, PKeyRef, Private};
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
    SubjectKeyIdentifier,
};
use openssl::x509::{X509Builder, X509NameBuilder, X509Ref, X509};
use tlslab_core::CertProfile;

use crate::error::PkiError;
use crate::generate::{
    intermediate_common_name, root_common_name, serial_bytes, serial_nonce, ProfileMaterial,
    INTERMEDIATE_COUNT, LEAF_NAMES, VALID_FROM, VALID_UNTIL,
};
use crate::MAX_CHAIN_DEPTH;

/// The OpenSSL key type of an ML-DSA profile; `None` for every other profile.
pub(crate) fn key_type(profile: CertProfile) -> Option<KeyType> {
    match profile {
        CertProfile::MlDsa44 => Some(KeyType::ML_DSA_44),
        CertProfile::MlDsa65 => Some(KeyType::ML_DSA_65),
        CertProfile::MlDsa87 => Some(KeyType::ML_DSA_87),
        CertProfile::Rsa2048
        | CertProfile::Rsa3072
        | CertProfile::Rsa4096
        | CertProfile::EcdsaP256
        | CertProfile::EcdsaP384
        | CertProfile::Ed25519 => None,
    }
}

/// What a certificate is for; decides its names and extensions.
#[derive(Clone, Copy)]
enum Role {
    Root,
    /// Intermediate N signs N - 1 (intermediate 1 signs the leaf).
    Intermediate(usize),
    Leaf,
}

/// Generates the six keys of an ML-DSA `profile` and issues the chains of every depth.
pub(crate) fn generate_profile(profile: CertProfile) -> Result<ProfileMaterial, PkiError> {
    let key_type = key_type(profile).ok_or_else(|| {
        PkiError::generation_failed(
            &format!("{profile} material with OpenSSL"),
            "not an ML-DSA profile",
        )
    })?;
    let failed = |what: String| move |error: ErrorStack| PkiError::generation(&what, error);

    // ML-DSA key generation takes well under a millisecond: no threads needed.
    let mut keys = (0..1 + INTERMEDIATE_COUNT + 1)
        .map(|_| generate_key(key_type))
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed(format!("a {profile} key")))?;
    let leaf_key = keys.pop().expect("six keys were generated");
    let root_key = keys.remove(0);
    let intermediate_keys = keys;

    let nonce = serial_nonce(
        &root_key
            .raw_public_key()
            .map_err(failed(format!("the {profile} root public key")))?,
    );
    let root = issue(
        profile,
        Role::Root,
        &serial_bytes(nonce, 0, 0),
        &root_key,
        None,
        &root_key,
    )
    .map_err(failed(format!("the {profile} root certificate")))?;

    let mut chain_pems = Vec::with_capacity(MAX_CHAIN_DEPTH as usize);
    for depth in 1..=MAX_CHAIN_DEPTH {
        // From the top down, as for the rcgen profiles: the root signs the highest
        // intermediate of this depth, and intermediate 1 signs the leaf.
        let mut issuer = root.clone();
        let mut issuer_key = &root_key;
        let mut sent_top_down = Vec::with_capacity(depth as usize);
        for index in (1..depth as usize).rev() {
            let subject_key = &intermediate_keys[index - 1];
            let certificate = issue(
                profile,
                Role::Intermediate(index),
                &serial_bytes(nonce, depth, index as u8),
                subject_key,
                Some(&issuer),
                issuer_key,
            )
            .and_then(|certificate| Ok((certificate_pem(&certificate)?, certificate)))
            .map_err(failed(format!(
                "the {profile} intermediate {index} certificate"
            )))?;
            sent_top_down.push(certificate.0);
            issuer = certificate.1;
            issuer_key = subject_key;
        }
        let leaf = issue(
            profile,
            Role::Leaf,
            &serial_bytes(nonce, depth, 0),
            &leaf_key,
            Some(&issuer),
            issuer_key,
        )
        .and_then(|leaf| certificate_pem(&leaf))
        .map_err(failed(format!("the {profile} leaf certificate")))?;
        sent_top_down.push(leaf);
        sent_top_down.reverse();
        chain_pems.push(sent_top_down.concat());
    }

    let key_pem = |key: &PKey<Private>| {
        key.private_key_to_pem_pkcs8()
            .map(pem_text)
            .map_err(failed(format!("the PKCS#8 form of a {profile} key")))
    };
    Ok(ProfileMaterial {
        root_certificate_pem: certificate_pem(&root)
            .map_err(failed(format!("the {profile} root certificate")))?,
        root_key_pem: key_pem(&root_key)?,
        intermediate_key_pems: intermediate_keys
            .iter()
            .map(key_pem)
            .collect::<Result<_, _>>()?,
        leaf_key_pem: key_pem(&leaf_key)?,
        chain_pems,
    })
}

fn certificate_pem(certificate: &X509Ref) -> Result<String, ErrorStack> {
    certificate.to_pem().map(pem_text)
}

/// PEM is ASCII by definition; OpenSSL never writes anything else.
fn pem_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("OpenSSL writes PEM as ASCII")
}

pub(crate) fn generate_key(key_type: KeyType) -> Result<PKey<Private>, ErrorStack> {
    // FIPS 204 key generation is a function of a random 32-byte seed (ξ).
    let mut seed = [0u8; 32];
    openssl::rand::rand_bytes(&mut seed)?;
    PKey::private_key_from_seed(None, key_type, None, &seed)
}

/// `YYYYMMDDHHMMSSZ` for a (year, month, day) at midnight UTC. `from_str_x509` picks
/// UTCTime for years before 2050, as RFC 5280 requires and rcgen does.
fn midnight(date: (i32, u8, u8)) -> Result<Asn1Time, ErrorStack> {
    let (year, month, day) = date;
    Asn1Time::from_str_x509(&format!("{year:04}{month:02}{day:02}000000Z"))
}

/// Issues one certificate: self-signed when `issuer` is `None`. The extensions and their
/// order are those of the rcgen profiles (`ca_params` and `leaf_params` in generate.rs).
fn issue(
    profile: CertProfile,
    role: Role,
    serial: &[u8],
    subject_key: &PKeyRef<Private>,
    issuer: Option<&X509Ref>,
    issuer_key: &PKeyRef<Private>,
) -> Result<X509, ErrorStack> {
    let common_name = match role {
        Role::Root => root_common_name(profile),
        Role::Intermediate(index) => intermediate_common_name(profile, index),
        Role::Leaf => "localhost".to_string(),
    };
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_text("O", "tlslab")?;
    name.append_entry_by_text("CN", &common_name)?;
    let name = name.build();

    let mut builder = X509Builder::new()?;
    builder.set_version(2)?;
    builder.set_serial_number(&*BigNum::from_slice(serial)?.to_asn1_integer()?)?;
    builder.set_subject_name(&name)?;
    builder.set_issuer_name(issuer.map_or(&*name, X509Ref::subject_name))?;
    builder.set_not_before(&*midnight(VALID_FROM)?)?;
    builder.set_not_after(&*midnight(VALID_UNTIL)?)?;
    builder.set_pubkey(subject_key)?;

    if issuer.is_some() {
        // keyid:always: fail rather than issue without it (OpenSSL's -x509_strict and
        // chain building rely on it); the issuer certificate supplies the identifier.
        let authority_key_identifier = AuthorityKeyIdentifier::new()
            .keyid(true)
            .build(&builder.x509v3_context(issuer, None))?;
        builder.append_extension(authority_key_identifier)?;
    }
    match role {
        Role::Root | Role::Intermediate(_) => {
            builder.append_extension(
                KeyUsage::new()
                    .critical()
                    .digital_signature()
                    .key_cert_sign()
                    .crl_sign()
                    .build()?,
            )?;
            let subject_key_identifier =
                SubjectKeyIdentifier::new().build(&builder.x509v3_context(issuer, None))?;
            builder.append_extension(subject_key_identifier)?;
            builder.append_extension(BasicConstraints::new().critical().ca().build()?)?;
        }
        Role::Leaf => {
            let mut names = SubjectAlternativeName::new();
            for name in LEAF_NAMES {
                if name.parse::<IpAddr>().is_ok() {
                    names.ip(name);
                } else {
                    names.dns(name);
                }
            }
            let names = names.build(&builder.x509v3_context(issuer, None))?;
            builder.append_extension(names)?;
            builder.append_extension(KeyUsage::new().critical().digital_signature().build()?)?;
            builder.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
            let subject_key_identifier =
                SubjectKeyIdentifier::new().build(&builder.x509v3_context(issuer, None))?;
            builder.append_extension(subject_key_identifier)?;
            // Explicit CA:FALSE, as for the rcgen leaves.
            builder.append_extension(BasicConstraints::new().critical().build()?)?;
        }
    }

    builder.sign(issuer_key, no_digest())?;
    Ok(builder.build())
}

/// ML-DSA signs the message itself, so `X509_sign` must get a NULL digest; the crate's
/// `MessageDigest::null()` is `EVP_md_null()`, a real (empty) digest that ML-DSA refuses.
pub(crate) fn no_digest() -> MessageDigest {
    // SAFETY: `MessageDigest` only carries the pointer; nothing in this crate calls a
    // method that would dereference it, and `X509_sign` documents NULL as "no digest".
    unsafe { MessageDigest::from_ptr(std::ptr::null()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};

    const ML_DSA: [CertProfile; 3] = [
        CertProfile::MlDsa44,
        CertProfile::MlDsa65,
        CertProfile::MlDsa87,
    ];

    #[test]
    fn only_ml_dsa_profiles_have_an_openssl_key_type() {
        for &profile in CertProfile::ALL {
            assert_eq!(
                key_type(profile).is_some(),
                ML_DSA.contains(&profile),
                "{profile}"
            );
        }
        assert!(generate_profile(CertProfile::Ed25519).is_err());
    }

    #[test]
    fn every_ml_dsa_profile_makes_every_depth_with_the_profile_key_type() {
        for profile in ML_DSA {
            let key_type = key_type(profile).unwrap();
            let material = generate_profile(profile).unwrap();
            assert_eq!(material.chain_pems.len(), MAX_CHAIN_DEPTH as usize);
            assert_eq!(material.intermediate_key_pems.len(), INTERMEDIATE_COUNT);
            let root = X509::from_pem(material.root_certificate_pem.as_bytes()).unwrap();
            let root_key = root.public_key().unwrap();
            assert!(root_key.is_a(key_type), "{profile}");
            assert!(root.verify(&root_key).unwrap(), "{profile} root");
            let leaf_key = PKey::private_key_from_pem(material.leaf_key_pem.as_bytes()).unwrap();
            for (index, pem) in material.chain_pems.iter().enumerate() {
                let chain = X509::stack_from_pem(pem.as_bytes()).unwrap();
                assert_eq!(chain.len(), index + 1);
                assert!(chain[0].public_key().unwrap().public_eq(&leaf_key));
                // Each certificate is signed by the next one up, the last by the root.
                for (certificate, issuer) in chain.iter().zip(chain.iter().skip(1).chain([&root])) {
                    assert!(certificate.public_key().unwrap().is_a(key_type));
                    assert!(certificate.verify(&issuer.public_key().unwrap()).unwrap());
                }
            }
            // PKCS#8, as rustls (aws-lc) reads it.
            assert!(matches!(
                PrivateKeyDer::from_pem_slice(material.leaf_key_pem.as_bytes()).unwrap(),
                PrivateKeyDer::Pkcs8(_)
            ));
            CertificateDer::from_pem_slice(material.root_certificate_pem.as_bytes()).unwrap();
        }
    }
}
