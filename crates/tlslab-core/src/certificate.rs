//! What a certificate names: the DNS names and IP addresses of its subjectAltName extension,
//! read once here for every part that reports or judges a server's certificate (the clients'
//! error descriptions, the scanner's name check).

use std::net::IpAddr;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// The DNS names and IP addresses in `certificate`'s subjectAltName, in its order; empty
/// when it has none (or the extension does not parse). Other kinds of name (e-mail, URI) are
/// not names a TLS client checks, and are left out.
pub fn subject_alternative_names(certificate: &X509Certificate<'_>) -> Vec<String> {
    let Ok(Some(names)) = certificate.subject_alternative_name() else {
        return Vec::new();
    };
    names
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(dns) => Some(dns.to_string()),
            GeneralName::IPAddress(bytes) => ip_address(bytes).map(|address| address.to_string()),
            _ => None,
        })
        .collect()
}

/// An iPAddress name: four bytes for IPv4, sixteen for IPv6, anything else malformed.
fn ip_address(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names_and_both_address_families_are_read_in_order() {
        let mut parameters = rcgen::CertificateParams::new(vec![
            "lab.example".to_string(),
            "192.0.2.7".to_string(),
            "2001:db8::7".to_string(),
        ])
        .unwrap();
        parameters
            .subject_alt_names
            .push(rcgen::SanType::Rfc822Name(
                "someone@example.com".try_into().unwrap(),
            ));
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = parameters.self_signed(&key).unwrap();
        let (_, parsed) = x509_parser::parse_x509_certificate(certificate.der()).unwrap();
        assert_eq!(
            subject_alternative_names(&parsed),
            ["lab.example", "192.0.2.7", "2001:db8::7"]
        );
    }
}
