//! Key generation and certificate issuing for one profile, entirely in memory; the cache
//! module decides where the result lives.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, RsaKeySize, SerialNumber,
};
use rustls_pki_types::PrivatePkcs8KeyDer;
use tlslab_core::{CertProfile, KeyKind};

use crate::error::PkiError;
use crate::MAX_CHAIN_DEPTH;

/// Intermediates needed for the deepest chain: every certificate sent except the leaf.
pub(crate) const INTERMEDIATE_COUNT: usize = MAX_CHAIN_DEPTH as usize - 1;

/// The names the leaf answers to: everything a lab client may dial on this machine.
pub(crate) const LEAF_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Everything one profile needs, as PEM text ready to be written to disk.
pub(crate) struct ProfileMaterial {
    pub root_certificate_pem: String,
    pub root_key_pem: String,
    /// Index 0 holds intermediate 1, the one that signs the leaf.
    pub intermediate_key_pems: Vec<String>,
    pub leaf_key_pem: String,
    /// Index `d - 1` holds the certificates sent at depth `d`, leaf first.
    pub chain_pems: Vec<String>,
}

/// The subject common name of the root; it names the profile so that a certificate seen in
/// a capture or an `openssl s_client` dump says which profile it belongs to.
pub(crate) fn root_common_name(profile: CertProfile) -> String {
    format!("tlslab lab root ({profile})")
}

pub(crate) fn intermediate_common_name(profile: CertProfile, index: usize) -> String {
    format!("tlslab intermediate {index} ({profile})")
}

/// The validity window of every certificate, as (year, month, day) at midnight UTC. It
/// starts in the past and ends far in the future so cached material never expires in the
/// middle of a project.
pub(crate) const VALID_FROM: (i32, u8, u8) = (2025, 1, 1);
pub(crate) const VALID_UNTIL: (i32, u8, u8) = (2045, 1, 1);

/// Generates the keys of `profile` once and issues the chains of every depth from them.
///
/// rcgen makes every profile except ML-DSA, which it cannot; OpenSSL makes those
/// ([`crate::ml_dsa`]), into the same [`ProfileMaterial`] with the same certificate fields.
pub(crate) fn generate_profile(profile: CertProfile) -> Result<ProfileMaterial, PkiError> {
    if profile.key_kind() == KeyKind::MlDsa {
        return crate::ml_dsa::generate_profile(profile);
    }
    let mut keys = generate_keys(profile)?;
    let leaf_key = keys.pop().expect("generate_keys returns the leaf key last");
    let root_key = keys.remove(0);
    let intermediate_keys = keys;

    let nonce = serial_nonce(root_key.public_key_raw());
    let root_params = ca_params(root_common_name(profile), serial_number(nonce, 0, 0));
    let root_certificate = root_params
        .self_signed(&root_key)
        .map_err(|error| PkiError::generation(&format!("the {profile} root certificate"), error))?;

    let mut chain_pems = Vec::with_capacity(MAX_CHAIN_DEPTH as usize);
    for depth in 1..=MAX_CHAIN_DEPTH {
        // Issue from the top down: the root signs the highest intermediate of this depth,
        // each intermediate signs the one below it, and intermediate 1 signs the leaf.
        let mut issuer_params = root_params.clone();
        let mut issuer_key = &root_key;
        let mut sent_top_down = Vec::with_capacity(depth as usize);
        for index in (1..depth as usize).rev() {
            let mut params = ca_params(
                intermediate_common_name(profile, index),
                serial_number(nonce, depth, index as u8),
            );
            params.use_authority_key_identifier_extension = true;
            let subject_key = &intermediate_keys[index - 1];
            let certificate = params
                .signed_by(
                    subject_key,
                    &Issuer::from_params(&issuer_params, issuer_key),
                )
                .map_err(|error| {
                    PkiError::generation(
                        &format!("the {profile} intermediate {index} certificate"),
                        error,
                    )
                })?;
            sent_top_down.push(certificate.pem());
            issuer_params = params;
            issuer_key = subject_key;
        }
        let leaf_params = leaf_params(profile, serial_number(nonce, depth, 0))?;
        let leaf_certificate = leaf_params
            .signed_by(&leaf_key, &Issuer::from_params(&issuer_params, issuer_key))
            .map_err(|error| {
                PkiError::generation(&format!("the {profile} leaf certificate"), error)
            })?;
        sent_top_down.push(leaf_certificate.pem());
        sent_top_down.reverse();
        chain_pems.push(sent_top_down.concat());
    }

    Ok(ProfileMaterial {
        root_certificate_pem: root_certificate.pem(),
        root_key_pem: root_key.serialize_pem(),
        intermediate_key_pems: intermediate_keys
            .iter()
            .map(KeyPair::serialize_pem)
            .collect(),
        leaf_key_pem: leaf_key.serialize_pem(),
        chain_pems,
    })
}

/// Root, intermediates, leaf, in that order. Generated on parallel threads because RSA-4096
/// key generation takes seconds per key and dominates the first run of a profile.
fn generate_keys(profile: CertProfile) -> Result<Vec<KeyPair>, PkiError> {
    let key_count = 1 + INTERMEDIATE_COUNT + 1;
    let results: Vec<Result<KeyPair, rcgen::Error>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..key_count)
            .map(|_| scope.spawn(move || generate_key(profile)))
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    results
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| PkiError::generation(&format!("a {profile} key"), error))
}

/// The key type decides the certificate signature algorithm too: rcgen signs with the
/// issuer key's algorithm, and every certificate of a profile uses the profile's key type.
fn generate_key(profile: CertProfile) -> Result<KeyPair, rcgen::Error> {
    match profile {
        CertProfile::Rsa2048 => {
            KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, RsaKeySize::_2048)
        }
        CertProfile::Rsa3072 => {
            KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, RsaKeySize::_3072)
        }
        CertProfile::Rsa4096 => {
            KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, RsaKeySize::_4096)
        }
        CertProfile::EcdsaP256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        CertProfile::EcdsaP384 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384),
        CertProfile::Ed25519 => {
            KeyPair::generate_for(&rcgen::PKCS_ED25519).and_then(ed25519_pkcs8_v1)
        }
        // rcgen has no ML-DSA; generate_profile hands these profiles to crate::ml_dsa.
        CertProfile::MlDsa44 | CertProfile::MlDsa65 | CertProfile::MlDsa87 => {
            Err(rcgen::Error::KeyGenerationUnavailable)
        }
    }
}

/// The start of an Ed25519 PKCS#8 v2 document (RFC 5958: version 1, with the public key) as
/// aws-lc writes it, up to the 32-byte private seed.
const ED25519_PKCS8_V2_PREFIX: [u8; 16] = [
    0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The same for PKCS#8 v1 (RFC 8410: version 0, no public key); the seed follows.
const ED25519_PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// Rewrites an Ed25519 key from PKCS#8 v2 to v1. OpenSSL 3.0 (and so nginx) refuses to load
/// the v2 form aws-lc generates ("unsupported"), while rustls reads both. A key in any other
/// form is returned unchanged; the OpenSSL test would then show whether it loads.
fn ed25519_pkcs8_v1(key: KeyPair) -> Result<KeyPair, rcgen::Error> {
    let Some(seed) = key
        .serialized_der()
        .strip_prefix(&ED25519_PKCS8_V2_PREFIX)
        .and_then(|rest| rest.get(..32))
    else {
        return Ok(key);
    };
    let mut version_1 = ED25519_PKCS8_V1_PREFIX.to_vec();
    version_1.extend_from_slice(seed);
    // Rebuilt through rcgen, so the key that signs the certificates is the one written out.
    KeyPair::from_pkcs8_der_and_sign_algo(
        &PrivatePkcs8KeyDer::from(version_1),
        &rcgen::PKCS_ED25519,
    )
}

/// Fields every certificate shares (see [`VALID_FROM`] for the validity).
fn base_params(common_name: String, serial: SerialNumber) -> CertificateParams {
    let mut params = CertificateParams::default();
    let (year, month, day) = VALID_FROM;
    params.not_before = date_time_ymd(year, month, day);
    let (year, month, day) = VALID_UNTIL;
    params.not_after = date_time_ymd(year, month, day);
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "tlslab");
    name.push(DnType::CommonName, common_name);
    params.distinguished_name = name;
    params.serial_number = Some(serial);
    params
}

fn ca_params(common_name: String, serial: SerialNumber) -> CertificateParams {
    let mut params = base_params(common_name, serial);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn leaf_params(profile: CertProfile, serial: SerialNumber) -> Result<CertificateParams, PkiError> {
    let with_names = CertificateParams::new(LEAF_NAMES.map(String::from).to_vec())
        .map_err(|error| PkiError::generation("the leaf subject alternative names", error))?;
    let mut params = base_params("localhost".to_string(), serial);
    params.subject_alt_names = with_names.subject_alt_names;
    // Explicit CA:FALSE, so no verifier can mistake the leaf for an issuer.
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    if profile.key_kind() == KeyKind::Rsa {
        // OpenSSL clients still check for it on RSA server certificates.
        params.key_usages.push(KeyUsagePurpose::KeyEncipherment);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    Ok(params)
}

/// A value unique to one generation, so that certificates from two generations of the same
/// profile (say, after the cache was deleted) never share an issuer name and serial number.
/// `root_public_key` is any encoding of the root's public key.
pub(crate) fn serial_nonce(root_public_key: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    root_public_key.hash(&mut hasher);
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default()
        .hash(&mut hasher);
    std::process::id().hash(&mut hasher);
    hasher.finish()
}

/// Unique per certificate within one generation: the leaf and intermediate 1 of different
/// depths share an issuer name, and X.509 requires issuer and serial to identify a
/// certificate. Position 0 is the leaf (depth 0, position 0 is the root).
fn serial_number(nonce: u64, depth: u8, position: u8) -> SerialNumber {
    SerialNumber::from_slice(&serial_bytes(nonce, depth, position))
}

/// The big-endian serial number [`serial_number`] wraps; the leading 0x01 keeps it positive
/// and free of leading zeros, so it is its own DER encoding.
pub(crate) fn serial_bytes(nonce: u64, depth: u8, position: u8) -> Vec<u8> {
    let mut bytes = vec![0x01, depth, position];
    bytes.extend_from_slice(&nonce.to_be_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;

    #[test]
    fn every_depth_sends_as_many_certificates_as_its_number() {
        let material = generate_profile(CertProfile::Ed25519).unwrap();
        assert_eq!(material.chain_pems.len(), MAX_CHAIN_DEPTH as usize);
        assert_eq!(material.intermediate_key_pems.len(), INTERMEDIATE_COUNT);
        for (index, pem) in material.chain_pems.iter().enumerate() {
            let certificates: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(certificates.len(), index + 1);
        }
    }

    #[test]
    fn ed25519_keys_are_written_as_pkcs8_version_1_and_still_sign() {
        let key = generate_key(CertProfile::Ed25519).unwrap();
        let der = key.serialized_der();
        assert_eq!(der.len(), 48);
        assert!(der.starts_with(&ED25519_PKCS8_V1_PREFIX));
        let params = leaf_params(CertProfile::Ed25519, serial_number(1, 1, 0)).unwrap();
        params.self_signed(&key).unwrap();
    }

    #[test]
    fn serial_numbers_differ_by_depth_and_position() {
        let leaf_depth_2 = serial_number(7, 2, 0);
        let leaf_depth_3 = serial_number(7, 3, 0);
        let intermediate = serial_number(7, 3, 1);
        assert_ne!(leaf_depth_2, leaf_depth_3);
        assert_ne!(leaf_depth_3, intermediate);
        assert!(
            leaf_depth_2.len() <= 20,
            "RFC 5280 allows at most 20 octets"
        );
    }
}
