//! Lab client certificates (mutual TLS): one per profile, issued by that profile's lab root
//! with extendedKeyUsage clientAuth, so a lab server that trusts the root for client
//! certificates accepts it.
//!
//! Issued with OpenSSL for every profile, ML-DSA included: the issuer is a root that already
//! exists on disk, and the `openssl` crate reads its key whatever its type, where rcgen would
//! need the root's parameters rebuilt and cannot sign with ML-DSA at all.
//!
//! Cached in `<dir>/<profile>/client/` (`client.pem`, `client.key`), published with one
//! rename as the profiles are. It lives inside the profile directory, so deleting a profile
//! (which makes a new root) deletes the client certificate its old root issued too.

use std::path::Path;

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectKeyIdentifier,
};
use openssl::x509::{X509Builder, X509NameBuilder, X509};
use tlslab_core::CertProfile;

use crate::error::PkiError;
use crate::generate::{serial_nonce, VALID_FROM, VALID_UNTIL};

/// File names inside `<dir>/<profile>/client/`.
pub(crate) const CLIENT_DIRECTORY: &str = "client";
pub(crate) const CLIENT_CERTIFICATE_FILE: &str = "client.pem";
pub(crate) const CLIENT_KEY_FILE: &str = "client.key";

/// A client certificate and its key, as PEM text ready to be written to disk.
pub(crate) struct ClientMaterial {
    pub certificate_pem: String,
    pub key_pem: String,
}

/// The subject common name; it names the profile, as the roots' do, so a certificate seen in
/// a capture or a server log says where it came from.
pub(crate) fn client_common_name(profile: CertProfile) -> String {
    format!("tlslab client ({profile})")
}

/// Issues a client certificate of `profile`'s key type, signed by the profile's root.
pub(crate) fn issue(
    profile: CertProfile,
    root_certificate_pem: &[u8],
    root_key_pem: &[u8],
    profile_dir: &Path,
) -> Result<ClientMaterial, PkiError> {
    let damaged = |file: &str, error: ErrorStack| {
        PkiError::damaged_cache(profile_dir, format!("{file}: {error}"))
    };
    let root = X509::from_pem(root_certificate_pem).map_err(|error| damaged("root.pem", error))?;
    let root_key =
        PKey::private_key_from_pem(root_key_pem).map_err(|error| damaged("root.key", error))?;
    let failed = |error: ErrorStack| {
        PkiError::generation(&format!("the {profile} client certificate"), error)
    };
    let key = generate_key(profile).map_err(failed)?;
    let certificate = build(profile, &key, &root, &root_key).map_err(failed)?;
    let text = |bytes: Vec<u8>| {
        String::from_utf8(bytes).map_err(|_| {
            PkiError::generation_failed(
                &format!("the {profile} client certificate"),
                "OpenSSL wrote PEM that is not ASCII",
            )
        })
    };
    Ok(ClientMaterial {
        certificate_pem: text(certificate.to_pem().map_err(failed)?)?,
        key_pem: text(key.private_key_to_pem_pkcs8().map_err(failed)?)?,
    })
}

/// A key of the profile's type, so the client's CertificateVerify costs what a client of that
/// key type pays.
fn generate_key(profile: CertProfile) -> Result<PKey<Private>, ErrorStack> {
    let curve = |nid| EcGroup::from_curve_name(nid).and_then(|group| EcKey::generate(&group));
    match profile {
        CertProfile::Rsa2048 => PKey::from_rsa(Rsa::generate(2048)?),
        CertProfile::Rsa3072 => PKey::from_rsa(Rsa::generate(3072)?),
        CertProfile::Rsa4096 => PKey::from_rsa(Rsa::generate(4096)?),
        CertProfile::EcdsaP256 => PKey::from_ec_key(curve(Nid::X9_62_PRIME256V1)?),
        CertProfile::EcdsaP384 => PKey::from_ec_key(curve(Nid::SECP384R1)?),
        CertProfile::Ed25519 => PKey::generate_ed25519(),
        CertProfile::MlDsa44 | CertProfile::MlDsa65 | CertProfile::MlDsa87 => {
            match crate::ml_dsa::key_type(profile) {
                Some(key_type) => crate::ml_dsa::generate_key(key_type),
                None => Err(ErrorStack::get()),
            }
        }
    }
}

/// The digest the root signs with: the one rcgen used for the profile's chains, and none
/// for the algorithms that hash the message themselves (Ed25519, ML-DSA).
fn issuer_digest(profile: CertProfile) -> MessageDigest {
    match profile {
        CertProfile::Rsa2048
        | CertProfile::Rsa3072
        | CertProfile::Rsa4096
        | CertProfile::EcdsaP256 => MessageDigest::sha256(),
        CertProfile::EcdsaP384 => MessageDigest::sha384(),
        CertProfile::Ed25519
        | CertProfile::MlDsa44
        | CertProfile::MlDsa65
        | CertProfile::MlDsa87 => crate::ml_dsa::no_digest(),
    }
}

fn build(
    profile: CertProfile,
    key: &PKey<Private>,
    root: &X509,
    root_key: &PKey<Private>,
) -> Result<X509, ErrorStack> {
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_text("O", "tlslab")?;
    name.append_entry_by_text("CN", &client_common_name(profile))?;
    let name = name.build();
    // 0x02 first: the root's other certificates start with 0x01 (`serial_bytes`), so the
    // client certificate never shares an issuer and serial number with them.
    let mut serial = vec![0x02];
    serial.extend_from_slice(&serial_nonce(&key.public_key_to_der()?).to_be_bytes());

    let mut builder = X509Builder::new()?;
    builder.set_version(2)?;
    builder.set_serial_number(&*BigNum::from_slice(&serial)?.to_asn1_integer()?)?;
    builder.set_subject_name(&name)?;
    builder.set_issuer_name(root.subject_name())?;
    let midnight = |(year, month, day): (i32, u8, u8)| {
        Asn1Time::from_str_x509(&format!("{year:04}{month:02}{day:02}000000Z"))
    };
    builder.set_not_before(&*midnight(VALID_FROM)?)?;
    builder.set_not_after(&*midnight(VALID_UNTIL)?)?;
    builder.set_pubkey(key)?;
    let authority_key_identifier = AuthorityKeyIdentifier::new()
        .keyid(true)
        .build(&builder.x509v3_context(Some(root), None))?;
    builder.append_extension(authority_key_identifier)?;
    builder.append_extension(KeyUsage::new().critical().digital_signature().build()?)?;
    // What makes it a client certificate: verifiers (rustls' WebPkiClientVerifier, OpenSSL's
    // SSL_VERIFY_PEER on a server) refuse a client leaf without clientAuth.
    builder.append_extension(ExtendedKeyUsage::new().client_auth().build()?)?;
    let subject_key_identifier =
        SubjectKeyIdentifier::new().build(&builder.x509v3_context(Some(root), None))?;
    builder.append_extension(subject_key_identifier)?;
    builder.append_extension(BasicConstraints::new().critical().build()?)?;
    builder.sign(root_key, issuer_digest(profile))?;
    Ok(builder.build())
}
