//! Failures in the server's terms: from an error class and what the client saw (the example
//! the store keeps, from either TLS library), the likely cause and what to change, said the
//! way the server's operator would fix it.

use tlslab_store::ConfigRow;

/// Whether `example` mentions any of `needles` (both libraries' wordings).
fn mentions(example: &str, needles: &[&str]) -> bool {
    let lower = example.to_ascii_lowercase();
    needles
        .iter()
        .any(|needle| lower.contains(&needle.to_ascii_lowercase()))
}

/// The description of what the server sent, in an example that has one (both clients write
/// "the server sent ..."; the rustls client then says what it trusted).
fn sent(example: &str) -> &str {
    let Some((_, after)) = example.split_once("the server sent ") else {
        return "";
    };
    after
        .split_once("; trusted:")
        .map_or(after, |(sent, _)| sent)
}

/// The cause and the fix of failures of `class` whose example is `example`, or `None`
/// when the example says nothing more than the class.
pub fn diagnose(class: &str, example: &str, config: &ConfigRow) -> Option<String> {
    let version = &config.version;
    let text = match class {
        // First, before the alerts it hides behind: TLS 1.2 servers answer a missing client
        // certificate with handshake_failure, which otherwise means no shared suite.
        _ if mentions(example, &["asked for a client certificate and none was sent"]) => {
            "the server requires a client certificate and none was sent: pass --client-cert FILE --client-key FILE (nginx: a certificate issued by its ssl_client_certificate CA)".into()
        }
        "alert" if mentions(example, &["alert 70 "]) => format!(
            "the server does not enable TLS {version} (it answered protocol_version): enable it \
             (nginx: ssl_protocols ... TLSv{version}; before nginx 1.23.4 the default has no TLS 1.3)"
        ),
        "alert" if mentions(example, &["alert 40 "]) => format!(
            "the server shares no cipher suite or key-exchange group with this Config (it \
             answered handshake_failure to {} with {} in TLS {version}): choose --suite and \
             --group values the server enables",
            config.suite, config.group
        ),
        "alert" if mentions(example, &["alert 116 "]) => {
            "the server requires a client certificate (certificate_required): pass --client-cert FILE --client-key FILE (nginx: a certificate issued by its ssl_client_certificate CA)".into()
        }
        "alert" if mentions(example, &["alert 112 "]) => {
            "the server does not serve the name sent (unrecognized_name): give --sni with a name it serves".into()
        }
        "not_tls" => "the port does not speak TLS (a plain-HTTP port answers with 'HTTP/1.1 400', \
             which neither library reads as TLS): give the server's TLS port"
            .into(),
        "certificate" if mentions(example, &["not pinned"]) => {
            "the server's key is not one of --pin's: the error shows the pin of the key it sent".into()
        }
        "certificate" if mentions(example, &["NotValidForName", "hostname mismatch"]) => {
            "the certificate does not name the server name sent: give --sni with one of the names the error lists".into()
        }
        "certificate" if mentions(example, &["Expired", "certificate has expired"]) => {
            "the server's certificate has expired (or this machine's clock is wrong): renew it, or check the clock".into()
        }
        "certificate" if mentions(example, &["NotValidYet", "not yet valid"]) => {
            "the server's certificate is not valid yet: check this machine's clock".into()
        }
        // The description of what the server sent says "self-signed;".
        "certificate"
            if mentions(sent(example), &["self-signed;"])
                && mentions(
                    example,
                    &[
                        "CaUsedAsEndEntity",
                        "UnknownIssuer",
                        "self-signed certificate",
                        "self signed certificate",
                    ],
                ) =>
        {
            "the server's certificate is self-signed: give that very certificate with --ca (or pin its key with --pin)".into()
        }
        "certificate"
            if mentions(
                example,
                &[
                    "UnknownIssuer",
                    "unable to get local issuer",
                    "unable to verify the first certificate",
                ],
            ) =>
        {
            "the chain does not lead to a trusted root: give the issuing CA with --ca; if it is the right CA, the server sends an incomplete chain (add the intermediate certificates to its certificate file, as nginx's ssl_certificate)".into()
        }
        "reset" => "the server reset the connection during the handshake: a TLS-terminating proxy or load balancer in front of it, or a server that refuses this ClientHello".into(),
        "refused" => "nothing accepts connections on the port: check the address and that the server runs".into(),
        "timeout" => "the server did not finish the handshake within --timeout: a firewall dropping packets, or an overloaded server".into(),
        _ => return None,
    };
    Some(text)
}
