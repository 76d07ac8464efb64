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

/// The number of the alert an example names first (`alert 48 (...)`, as every client
/// writes a received alert).
fn alert_number(example: &str) -> Option<u8> {
    let (_, after) = example.split_once("alert ")?;
    after.split(' ').next()?.parse().ok()
}

/// The text between `start` and the next `end` in `text`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let (_, after) = text.split_once(start)?;
    after.split_once(end).map(|(inside, _)| inside)
}

/// The dates and the clock both clients write when the server's certificate is outside its
/// validity (`certificate expired on DATE (this machine's clock read CLOCK)`): `(DATE, CLOCK)`.
fn dates<'a>(example: &'a str, phrase: &str) -> Option<(&'a str, &'a str)> {
    let date = between(example, phrase, " (this machine's clock read ")?;
    let clock = between(example, "(this machine's clock read ", ")")?;
    Some((date, clock))
}

/// How many certificates the server sent ("2 certificates") and who issued the last, as
/// both clients write it when no trusted certificate issued it (`chain sent: N
/// certificates, the last issued by 'NAME'`, then `; ...` or the end).
fn chain_end(example: &str) -> Option<(&str, &str)> {
    let count = between(example, "chain sent: ", ",")?;
    let (_, after) = example.split_once("the last issued by '")?;
    // The name may hold quotes itself: it ends at the quote before "; " or the end.
    let issuer = match after.split_once("'; ") {
        Some((issuer, _)) => issuer,
        None => after.strip_suffix('\'')?,
    };
    Some((count, issuer))
}

/// One rule of the diagnosis: failures of `class` (of any class when `None`) whose example
/// and Config `applies` to are explained by `explain`. The first rule that applies speaks,
/// so a rule that an alert hides behind comes before that alert's.
struct Rule {
    class: Option<&'static str>,
    applies: fn(&str, &ConfigRow) -> bool,
    explain: fn(&str, &ConfigRow) -> String,
}

/// A rule that applies to every example of its class.
fn always(_: &str, _: &ConfigRow) -> bool {
    true
}

/// The rules, in the order they are tried.
const RULES: &[Rule] = &[
    // First, before the alerts it hides behind: TLS 1.2 servers answer a missing client
    // certificate with handshake_failure, which otherwise means no shared suite.
    Rule {
        class: None,
        applies: |example, _| {
            mentions(
                example,
                &["asked for a client certificate and none was sent"],
            )
        },
        explain: |_, _| {
            "the server requires a client certificate and none was sent: pass --client-cert FILE --client-key FILE (nginx: a certificate issued by its ssl_client_certificate CA)".into()
        },
    },
    // TLS 1.2 servers refuse a client certificate during the handshake, TLS 1.3 ones
    // after the client's Finished; the client's library names the alert.
    Rule {
        class: Some("alert"),
        applies: |example, _| {
            mentions(example, &["the server refused the client certificate sent"])
        },
        explain: |example, _| {
            let reason = match alert_number(example) {
                Some(48) => "it does not trust the certificate's issuer (unknown_ca)",
                Some(45) => "the certificate is out of its dates (certificate_expired)",
                Some(44) => "the certificate is revoked (certificate_revoked)",
                Some(49) => "its access rules deny this certificate (access_denied)",
                _ => "it cannot use or verify the certificate (bad_certificate, unsupported_certificate or certificate_unknown)",
            };
            format!(
                "the server refused the client certificate sent: {reason}: give --client-cert a \
                 certificate issued by a CA the server trusts (nginx: ssl_client_certificate; \
                 openssl s_server: -CAfile), valid now and made for client authentication \
                 (extendedKeyUsage clientAuth)"
            )
        },
    },
    Rule {
        class: Some("alert"),
        applies: |example, _| mentions(example, &["alert 70 "]),
        explain: |_, config| {
            let version = &config.version;
            format!(
                "the server does not enable TLS {version} (it answered protocol_version): enable it \
                 (nginx: ssl_protocols ... TLSv{version}; before nginx 1.23.4 the default has no TLS 1.3)"
            )
        },
    },
    // handshake_failure carries no choice of the server's, so what it would have taken is
    // not known: the hint says what was offered and where each is set.
    Rule {
        class: Some("alert"),
        applies: |example, _| mentions(example, &["alert 40 "]),
        explain: |_, config| {
            format!(
                "the server shares no cipher suite or no key-exchange group with this Config: it \
                 answered handshake_failure to a TLS {} ClientHello offering the suite {} \
                 and the group {} (first among its groups), and that alert does not say which it lacks or what it would \
                 choose: enable them on the server (nginx: ssl_ciphers, or ssl_conf_command \
                 Ciphersuites for TLS 1.3; ssl_ecdh_curve for groups) or choose --suite and --group \
                 values it enables",
                config.version, config.suite, config.group
            )
        },
    },
    Rule {
        class: Some("alert"),
        applies: |example, _| mentions(example, &["alert 116 "]),
        explain: |_, _| {
            "the server requires a client certificate (certificate_required): pass --client-cert FILE --client-key FILE (nginx: a certificate issued by its ssl_client_certificate CA)".into()
        },
    },
    Rule {
        class: Some("alert"),
        applies: |example, _| mentions(example, &["alert 112 "]),
        explain: |_, _| {
            "the server does not serve the name sent (unrecognized_name): give --sni with a name it serves".into()
        },
    },
    // Any other alert that answered the client's Finished (TLS 1.3): the server judged the
    // client's second flight then, after the client was done.
    Rule {
        class: Some("alert"),
        applies: |example, _| mentions(example, &["after the client's Finished"]),
        explain: |_, _| {
            "the server refused the handshake after the client's Finished (a TLS 1.3 server judges the client's Finished and certificate only then, so the handshake looked complete to the client): the alert says why, and the server's error log says more".into()
        },
    },
    Rule {
        class: Some("protocol"),
        applies: |example, _| mentions(example, &["without accepting the handshake"]),
        explain: |_, _| {
            "the server closed the connection right after the client's Finished instead of accepting the handshake, as some servers refuse a TLS 1.3 client's certificate (or its absence) or its Finished: see the server's error log; if it requires client certificates, pass --client-cert FILE --client-key FILE".into()
        },
    },
    Rule {
        class: Some("not_tls"),
        applies: always,
        explain: |_, _| {
            "the port does not speak TLS (a plain-HTTP port answers with 'HTTP/1.1 400', \
             which neither library reads as TLS): give the server's TLS port"
                .into()
        },
    },
    Rule {
        class: Some("certificate"),
        applies: |example, _| mentions(example, &["not pinned"]),
        explain: |_, _| {
            "the server's key is not one of --pin's: the error shows the pin of the key it sent"
                .into()
        },
    },
    Rule {
        class: Some("certificate"),
        applies: |example, _| mentions(example, &["NotValidForName", "hostname mismatch"]),
        // The names the certificate holds, from the description of what was sent.
        explain: |example, _| {
            match between(sent(example), "(names ", ";") {
            Some(names) => format!(
                "the certificate does not name the server name sent (it names {names}): \
                 give --sni with one of those names, or give the server a certificate for \
                 the name used"
            ),
            None => "the certificate does not name the server name sent: give --sni with one of the names the error lists".into(),
        }
        },
    },
    Rule {
        class: Some("certificate"),
        applies: |example, _| mentions(example, &["Expired", "certificate has expired"]),
        explain: |example, _| {
            match dates(example, "certificate expired on ") {
            Some((date, clock)) => format!(
                "the server's certificate expired on {date}, and this machine's clock read \
                 {clock}: renew it (nginx: the file in ssl_certificate), or set the clock \
                 right if it is wrong"
            ),
            None => "the server's certificate has expired (or this machine's clock is wrong): renew it, or check the clock".into(),
        }
        },
    },
    Rule {
        class: Some("certificate"),
        applies: |example, _| mentions(example, &["NotValidYet", "not yet valid"]),
        explain: |example, _| match dates(example, "not valid before ") {
            Some((date, clock)) => format!(
                "the server's certificate is not valid before {date}, and this machine's \
                 clock read {clock}: check this machine's clock, or give the server a \
                 certificate valid now"
            ),
            None => "the server's certificate is not valid yet: check this machine's clock".into(),
        },
    },
    // The description of what the server sent says "self-signed;".
    Rule {
        class: Some("certificate"),
        applies: |example, _| {
            mentions(sent(example), &["self-signed;"])
                && mentions(
                    example,
                    &[
                        "CaUsedAsEndEntity",
                        "UnknownIssuer",
                        "self-signed certificate",
                        "self signed certificate",
                    ],
                )
        },
        explain: |_, _| {
            "the server's certificate is self-signed: give that very certificate with --ca (or pin its key with --pin)".into()
        },
    },
    // Issued by a CA, yet a CA itself: rustls refuses it as the server's own.
    Rule {
        class: Some("certificate"),
        applies: |example, _| mentions(example, &["CaUsedAsEndEntity"]),
        explain: |_, _| {
            "the server's certificate is a CA certificate (basicConstraints CA:TRUE), which rustls refuses as a server's own where OpenSSL and curl accept it: issue the server an end-entity certificate (CA:FALSE), or trust that exact certificate with --ca FILE, or its key with --pin".into()
        },
    },
    Rule {
        class: Some("certificate"),
        applies: |example, _| {
            mentions(
                example,
                &[
                    "UnknownIssuer",
                    "unable to get local issuer",
                    "unable to verify the first certificate",
                ],
            )
        },
        explain: |example, _| {
            match chain_end(example) {
            Some((count, issuer)) => format!(
                "the chain does not lead to a trusted root: the chain the server sent \
                 ({count}) ends with a certificate issued by '{issuer}', which it did not \
                 send and which is not trusted: if '{issuer}' is an intermediate of the CA \
                 you trust, the server sends an incomplete chain (add that certificate after \
                 the server's own in its certificate file, as nginx's ssl_certificate); \
                 otherwise give its CA with --ca"
            ),
            None => "the chain does not lead to a trusted root: give the issuing CA with --ca; if it is the right CA, the server sends an incomplete chain (add the intermediate certificates to its certificate file, as nginx's ssl_certificate)".into(),
        }
        },
    },
    Rule {
        class: Some("reset"),
        applies: always,
        explain: |_, _| {
            "the server reset the connection during the handshake: a TLS-terminating proxy or load balancer in front of it, or a server that refuses this ClientHello".into()
        },
    },
    Rule {
        class: Some("refused"),
        applies: always,
        explain: |_, _| {
            "nothing accepts connections on the port: check the address and that the server runs"
                .into()
        },
    },
    // Plain HTTP has no handshake to wait for: the client waited for the connection or the
    // response (the example says which).
    Rule {
        class: Some("timeout"),
        applies: |_, config| config.scheme == "http",
        explain: |_, _| {
            "the server did not answer within --timeout: a firewall dropping packets, a server that accepts connections but does not serve them, or an overloaded server".into()
        },
    },
    Rule {
        class: Some("timeout"),
        applies: always,
        explain: |_, _| {
            "the server did not finish the handshake within --timeout: a firewall dropping packets, or an overloaded server".into()
        },
    },
];

/// The cause and the fix of failures of `class` whose example is `example`, or `None`
/// when the example says nothing more than the class.
pub fn diagnose(class: &str, example: &str, config: &ConfigRow) -> Option<String> {
    RULES
        .iter()
        .find(|rule| {
            rule.class.is_none_or(|wanted| wanted == class) && (rule.applies)(example, config)
        })
        .map(|rule| (rule.explain)(example, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dates_and_the_clock_are_read_from_either_clients_words() {
        let example = "invalid peer certificate: certificate expired on 2021-01-01 00:00:00 UTC \
                       (this machine's clock read 2026-11-25 13:37:46 UTC): the server sent 'CN=x'";
        assert_eq!(
            dates(example, "certificate expired on "),
            Some(("2021-01-01 00:00:00 UTC", "2026-11-25 13:37:46 UTC"))
        );
        // OpenSSL's own words carry no dates.
        assert_eq!(
            dates("certificate has expired", "certificate expired on "),
            None
        );
    }

    #[test]
    fn a_refusal_after_the_finished_is_told_by_what_the_server_judged() {
        let config: ConfigRow = serde_json::from_value(serde_json::json!({
            "id": 1, "label": "tls1.3", "version": "1.3", "suite": "aes128gcm",
            "group": "x25519", "cert": null, "chain": null, "target": "127.0.0.1:443",
            "address": "127.0.0.1:443", "concurrency": 1, "resume": false, "insecure": false,
            "stopped_round": null, "stopped_samples": null, "stopped_half_width": null,
            "rtt_ns": null, "loss": null, "rate_bps": null, "emulator": null,
            "transport": "tcp", "http": "none", "resumption": "off", "early_data_bytes": 0,
            "cert_cache": false, "path": null, "client_backend": "rustls",
            "server_backend": null, "ech": "off", "hello_retry": false, "trust": null,
            "arrival_rate": null, "keep_alive": false, "mtls": false, "scheme": "https"
        }))
        .unwrap();
        let diagnose = |class: &str, example: &str| diagnose(class, example, &config).unwrap();
        // No certificate, whichever way the server said so.
        for (class, example) in [
            ("alert", "alert 116 (CertificateRequired), after the client's Finished; the server asked for a client certificate and none was sent"),
            ("protocol", "the server closed the connection after the client's Finished without accepting the handshake; the server asked for a client certificate and none was sent"),
        ] {
            assert!(
                diagnose(class, example).starts_with("the server requires a client certificate and none was sent: pass --client-cert"),
                "{example}"
            );
        }
        // A certificate it refused: the reason by the alert, both clients' words.
        for example in [
            "alert 48 (UnknownCA), after the client's Finished; the server refused the client certificate sent",
            "alert 48 (tlsv1 alert unknown ca), after the client's Finished; the server refused the client certificate sent",
        ] {
            assert!(diagnose("alert", example).contains("does not trust the certificate's issuer"));
        }
        assert!(diagnose(
            "alert",
            "alert 45 (CertificateExpired); the server refused the client certificate sent"
        )
        .contains("out of its dates"));
        // Anything else after the Finished, and a silent close.
        assert!(diagnose(
            "alert",
            "alert 51 (DecryptError), after the client's Finished"
        )
        .starts_with("the server refused the handshake after the client's Finished"));
        assert!(diagnose(
            "protocol",
            "the server closed the connection after the client's Finished without accepting the handshake"
        )
        .starts_with("the server closed the connection right after the client's Finished"));
    }

    #[test]
    fn the_end_of_the_chain_is_read_whether_more_follows_or_not() {
        let rustls = "UnknownIssuer: the server sent 'CN=a' (...); chain sent: 2 certificates, \
                      the last issued by 'O=Lab, CN=Lab's CA'; trusted: --ca holds 'CN=r'";
        assert_eq!(
            chain_end(rustls),
            Some(("2 certificates", "O=Lab, CN=Lab's CA"))
        );
        let openssl = "unable to get local issuer certificate: the server sent 'CN=a' (...); \
                       chain sent: 1 certificate, the last issued by 'CN=Intermediate'";
        assert_eq!(
            chain_end(openssl),
            Some(("1 certificate", "CN=Intermediate"))
        );
        // Cut short: no name rather than a wrong one.
        assert_eq!(
            chain_end("chain sent: 1 certificate, the last issued by 'CN=In"),
            None
        );
    }
}
