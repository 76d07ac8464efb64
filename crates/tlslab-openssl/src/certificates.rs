//! ML-DSA certificate chains (FIPS 204), which rcgen and tlslab-pki cannot make: OpenSSL
//! generates the keys and signs the certificates.

use std::fmt;
use std::net::IpAddr;

use foreign_types::ForeignTypeRef;
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::pkey::{KeyType, PKey, PKeyRef, Private};
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
    SubjectKeyIdentifier,
};
use openssl::x509::{X509Builder, X509NameBuilder, X509Ref, X509};
use tlslab_tls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::Error;

/// An ML-DSA parameter set.
// The variants carry the standard's names, which share their prefix by nature.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlDsa {
    MlDsa44,
    MlDsa65,
    MlDsa87,
}

impl MlDsa {
    pub const ALL: [MlDsa; 3] = [MlDsa::MlDsa44, MlDsa::MlDsa65, MlDsa::MlDsa87];

    /// The profile name (`mldsa65`), in the spelling of tlslab's certificate profiles.
    pub fn as_str(self) -> &'static str {
        match self {
            MlDsa::MlDsa44 => "mldsa44",
            MlDsa::MlDsa65 => "mldsa65",
            MlDsa::MlDsa87 => "mldsa87",
        }
    }

    /// The signature scheme a handshake with this key uses, as stored.
    pub fn signature_scheme(self) -> &'static str {
        match self {
            MlDsa::MlDsa44 => "ML_DSA_44",
            MlDsa::MlDsa65 => "ML_DSA_65",
            MlDsa::MlDsa87 => "ML_DSA_87",
        }
    }

    fn key_type(self) -> KeyType {
        match self {
            MlDsa::MlDsa44 => KeyType::ML_DSA_44,
            MlDsa::MlDsa65 => KeyType::ML_DSA_65,
            MlDsa::MlDsa87 => KeyType::ML_DSA_87,
        }
    }
}

impl fmt::Display for MlDsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A root and a leaf, both ML-DSA, in the shape of tlslab-pki's `ServedChain`.
#[derive(Debug)]
pub struct MlDsaChain {
    pub parameters: MlDsa,
    /// What the server sends: the leaf alone (depth 1).
    pub certificates: Vec<CertificateDer<'static>>,
    /// The leaf's key, PKCS#8.
    pub private_key: PrivateKeyDer<'static>,
    /// The trust anchor clients need.
    pub root: CertificateDer<'static>,
    /// The same material as PEM text.
    pub chain_pem: String,
    pub key_pem: String,
    pub root_pem: String,
}

/// Generates a root and a leaf for `host` (a DNS name or an IP address), valid from an hour
/// ago for a year.
pub fn ml_dsa_chain(parameters: MlDsa, host: &str) -> Result<MlDsaChain, Error> {
    let root_key = generate_key(parameters)?;
    let leaf_key = generate_key(parameters)?;
    let root = issue(&root_key, &root_key, None, "tlslab ML-DSA root", None)?;
    let leaf = issue(&leaf_key, &root_key, Some(&root), host, Some(host))?;
    Ok(MlDsaChain {
        parameters,
        certificates: vec![CertificateDer::from(leaf.to_der()?)],
        private_key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            leaf_key.private_key_to_pkcs8()?,
        )),
        root: CertificateDer::from(root.to_der()?),
        chain_pem: pem_text(leaf.to_pem()?)?,
        key_pem: pem_text(leaf_key.private_key_to_pem_pkcs8()?)?,
        root_pem: pem_text(root.to_pem()?)?,
    })
}

fn pem_text(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|_| Error::new("OpenSSL wrote PEM that is not UTF-8"))
}

fn generate_key(parameters: MlDsa) -> Result<PKey<Private>, Error> {
    // A random seed is how FIPS 204 defines key generation (ML-DSA.KeyGen draws ξ).
    let mut seed = [0u8; 32];
    openssl::rand::rand_bytes(&mut seed)?;
    Ok(PKey::private_key_from_seed(
        None,
        parameters.key_type(),
        None,
        &seed,
    )?)
}

/// Issues a certificate for `subject_key`: a CA when `issuer` is `None` (self-signed),
/// otherwise a server certificate for `host`.
fn issue(
    subject_key: &PKeyRef<Private>,
    issuer_key: &PKeyRef<Private>,
    issuer: Option<&X509Ref>,
    common_name: &str,
    host: Option<&str>,
) -> Result<X509, Error> {
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_text("CN", common_name)?;
    let name = name.build();
    let mut builder = X509Builder::new()?;
    builder.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    builder.set_serial_number(&serial)?;
    builder.set_subject_name(&name)?;
    builder.set_issuer_name(issuer.map_or(&*name, |issuer| issuer.subject_name()))?;
    builder.set_pubkey(subject_key)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64);
    // An hour of slack for clocks that disagree a little.
    let not_before = Asn1Time::from_unix(now - 3600)?;
    let not_after = Asn1Time::days_from_now(365)?;
    builder.set_not_before(&not_before)?;
    builder.set_not_after(&not_after)?;
    let subject_key_identifier =
        SubjectKeyIdentifier::new().build(&builder.x509v3_context(issuer, None))?;
    builder.append_extension(subject_key_identifier)?;
    match host {
        None => {
            builder.append_extension(BasicConstraints::new().critical().ca().build()?)?;
            builder.append_extension(
                KeyUsage::new()
                    .critical()
                    .key_cert_sign()
                    .crl_sign()
                    .build()?,
            )?;
        }
        Some(host) => {
            let authority_key_identifier = AuthorityKeyIdentifier::new()
                .keyid(true)
                .build(&builder.x509v3_context(issuer, None))?;
            builder.append_extension(authority_key_identifier)?;
            builder.append_extension(BasicConstraints::new().critical().build()?)?;
            builder.append_extension(KeyUsage::new().critical().digital_signature().build()?)?;
            builder.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
            let mut alternative = SubjectAlternativeName::new();
            if host.parse::<IpAddr>().is_ok() {
                alternative.ip(host);
            } else {
                alternative.dns(host);
            }
            let alternative = alternative.build(&builder.x509v3_context(issuer, None))?;
            builder.append_extension(alternative)?;
        }
    }
    let certificate = builder.build();
    // ML-DSA signs the message itself: X509_sign needs a NULL digest, which the openssl
    // crate's `MessageDigest` cannot express (its `null()` is EVP_md_null, a real digest).
    // SAFETY: both objects are live and we hold the only reference to the certificate.
    let signed = unsafe {
        openssl_sys::X509_sign(certificate.as_ptr(), issuer_key.as_ptr(), std::ptr::null())
    };
    if signed <= 0 {
        return Err(Error::openssl("could not sign the ML-DSA certificate"));
    }
    Ok(certificate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_set_makes_a_chain_that_verifies() {
        for parameters in MlDsa::ALL {
            let chain = ml_dsa_chain(parameters, "localhost").unwrap();
            let root = X509::from_der(&chain.root).unwrap();
            let leaf = X509::from_der(&chain.certificates[0]).unwrap();
            assert!(root.public_key().unwrap().is_a(parameters.key_type()));
            assert!(
                leaf.verify(&root.public_key().unwrap()).unwrap(),
                "{parameters}"
            );
            assert!(root.verify(&root.public_key().unwrap()).unwrap());
            assert!(chain.key_pem.contains("BEGIN PRIVATE KEY"));
            assert_eq!(
                X509::from_pem(chain.chain_pem.as_bytes())
                    .unwrap()
                    .to_der()
                    .unwrap(),
                chain.certificates[0].to_vec()
            );
        }
    }
}
