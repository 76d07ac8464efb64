//! A grade in the manner of SSL Labs' SSL Server Rating Guide (first pass): protocol support
//! 30%, key exchange 30%, cipher strength 40%, a score from 0 to 100, a letter, then the caps
//! the guide's later revisions added, each explained in one line.
//!
//! What the guide does not weigh is not weighed here either: post-quantum key exchange
//! (X25519MLKEM768 offered or not) changes no score; the report says so.

use serde::Serialize;
use tls_parser::{TlsCipherAu, TlsCipherEnc, TlsCipherKx, TlsCipherMac, TlsCipherSuite};

use crate::certificate::{hsts_max_age, KeyKind};
use crate::hello::{groups, Version};
use crate::scan::{Order, Report, VersionSupport};

/// HSTS for A+: at least six months (the guide's threshold).
pub const HSTS_MINIMUM_SECONDS: u64 = 15_768_000;

/// The grade of one scan: the letter, the scores it rests on, and the reasons for each cap,
/// so that a reader can check the letter against the guide.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Grade {
    /// `A+` to `F`, or `T` (certificate not trusted) and `M` (name mismatch).
    pub letter: String,
    /// The letter the configuration earns when the certificate is set aside.
    pub letter_if_trusted: String,
    /// The weighted sum of the three scores (30%, 30%, 40%), 0 to 100.
    pub score: u32,
    /// The best and worst versions' mean on the guide's protocol table.
    pub protocol_score: u32,
    /// The weakest key exchange on the guide's table of RSA-equivalent bits.
    pub key_exchange_score: u32,
    /// The strongest and weakest ciphers' mean on the guide's table of key bits.
    pub cipher_score: u32,
    /// One line per cap applied, and why.
    pub reasons: Vec<String>,
    /// What the grade does not say.
    pub notes: Vec<String>,
}

impl Grade {
    /// No grade: `malformed` probes got answers that could not be read, so the findings
    /// may be what a broken server happened to send, and any letter would be a guess.
    /// The letters are `-`, the scores 0, and the one reason says why.
    pub fn withheld(malformed: u64) -> Grade {
        Grade {
            letter: "-".into(),
            letter_if_trusted: "-".into(),
            reasons: vec![format!(
                "not graded: {malformed} {} a malformed answer (see probe_errors)",
                if malformed == 1 {
                    "probe got"
                } else {
                    "probes got"
                }
            )],
            ..Grade::default()
        }
    }
}

/// Letters from best to worst; a cap keeps the worse of two.
const LETTERS: [&str; 8] = ["A+", "A", "A-", "B", "C", "D", "E", "F"];

fn worse<'a>(a: &'a str, b: &'a str) -> &'a str {
    let rank = |letter: &str| LETTERS.iter().position(|l| *l == letter).unwrap_or(7);
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

fn protocol_points(version: Version) -> u32 {
    match version {
        Version::Ssl3 => 80,
        Version::Tls10 => 90,
        Version::Tls11 => 95,
        Version::Tls12 | Version::Tls13 => 100,
    }
}

/// The guide's key-exchange table, on RSA-equivalent bits.
fn key_exchange_points(bits: u32) -> u32 {
    match bits {
        0 => 0,
        1..=511 => 20,
        512..=1023 => 40,
        1024..=2047 => 80,
        2048..=4095 => 90,
        _ => 100,
    }
}

/// The guide's cipher table on effective key bits.
fn cipher_points(bits: u32) -> u32 {
    match bits {
        0 => 0,
        1..=127 => 20,
        128..=255 => 80,
        _ => 100,
    }
}

/// RSA-equivalent strength of a group (NIST SP 800-57): 256-bit curves ~ 3072-bit RSA. A
/// hybrid counts as its classical half: the guide does not weigh post-quantum security.
fn group_bits(group: u16) -> u32 {
    match group {
        groups::X25519 | groups::SECP256R1 | groups::X25519MLKEM768 | groups::SECP256R1MLKEM768 => {
            3072
        }
        groups::SECP384R1 | groups::SECP384R1MLKEM1024 => 7680,
        groups::SECP521R1 | groups::X448 => 15360,
        groups::FFDHE2048 => 2048,
        groups::FFDHE3072 => 3072,
        groups::FFDHE4096 => 4096,
        groups::FFDHE6144 => 6144,
        groups::FFDHE8192 => 8192,
        // Pure ML-KEM has no classical strength to compare; the guide has no row for it.
        _ => 3072,
    }
}

/// Effective key bits of a suite's cipher (3DES gives 112, not its 168 key bits).
fn cipher_bits(suite: &TlsCipherSuite) -> u32 {
    match suite.enc {
        TlsCipherEnc::Null => 0,
        TlsCipherEnc::TripleDes => 112,
        _ => u32::from(suite.enc_size),
    }
}

/// What the guide's rules read of a report, worked out once.
struct Findings<'a> {
    report: &'a Report,
    /// The versions the server accepted.
    supported: Vec<Version>,
    /// Every suite accepted, in any version.
    suites: Vec<&'static TlsCipherSuite>,
    /// Every group accepted, in TLS 1.3 and 1.2.
    group_ids: Vec<u16>,
    /// The weakest key exchange among the suites, in RSA-equivalent bits (0: none at all).
    weakest_exchange: u32,
    /// A DHE suite's prime was not read, and 2048 bits were assumed for it.
    dhe_assumed: bool,
}

impl<'a> Findings<'a> {
    /// `None` when the server accepted no version: nothing to grade.
    fn of(report: &'a Report) -> Option<Findings<'a>> {
        let supported: Vec<Version> = report.versions.iter().filter_map(|v| v.protocol).collect();
        if supported.is_empty() {
            return None;
        }
        let suites: Vec<&'static TlsCipherSuite> = report
            .versions
            .iter()
            .flat_map(|v| &v.suite_ids)
            .filter_map(|id| TlsCipherSuite::from_id(*id))
            .collect();
        let group_ids: Vec<u16> = [&report.groups_tls13, &report.groups_tls12]
            .into_iter()
            .flatten()
            .flat_map(|support| support.group_ids.iter().copied())
            .collect();
        let (weakest_exchange, dhe_assumed) = weakest_exchange(report, &suites, &group_ids);
        Some(Findings {
            report,
            supported,
            suites,
            group_ids,
            weakest_exchange,
            dhe_assumed,
        })
    }

    fn supports(&self, version: Version) -> bool {
        self.supported.contains(&version)
    }

    fn any_suite(&self, test: impl Fn(&TlsCipherSuite) -> bool) -> bool {
        self.suites.iter().any(|suite| test(suite))
    }

    /// The suite modern clients get without TLS 1.3: the newest version's first suite, when
    /// the server enforces its order (with client order they get their own favourite, an
    /// ECDHE AEAD suite when the server has one).
    fn favourite(&self) -> Option<(&'a VersionSupport, &'static TlsCipherSuite)> {
        if self.supports(Version::Tls13) {
            return None;
        }
        let newest = self
            .report
            .versions
            .iter()
            .max_by_key(|v| v.protocol)
            .filter(|v| v.order == Order::Server)?;
        let favourite = newest
            .suite_ids
            .first()
            .and_then(|id| TlsCipherSuite::from_id(*id))?;
        Some((newest, favourite))
    }
}

/// The weakest key exchange of `suites` in RSA-equivalent bits, and whether a DHE prime had
/// to be assumed.
fn weakest_exchange(report: &Report, suites: &[&TlsCipherSuite], group_ids: &[u16]) -> (u32, bool) {
    let leaf = report.certificates.leaf();
    // RSA key exchange uses the RSA certificate's key, which on a dual-certificate server
    // may be the second chain's; ECDSA keys authenticate and do not carry the key exchange.
    let rsa_leaves: Vec<u32> = leaf
        .into_iter()
        .chain(
            report
                .certificates
                .others
                .iter()
                .filter_map(|other| other.chain.first()),
        )
        .filter(|leaf| leaf.key_kind == KeyKind::Rsa)
        .map(|leaf| leaf.key_bits as u32)
        .collect();
    let certificate_bits = match (leaf, rsa_leaves.iter().min()) {
        (None, _) => 0,
        (Some(_), Some(bits)) => *bits,
        (Some(_), None) => 3072,
    };
    let weakest_group = group_ids.iter().map(|g| group_bits(*g)).min();
    // Each DHE suite's measured prime; the smallest where versions differ.
    let mut dhe_bits: std::collections::BTreeMap<u16, u32> = std::collections::BTreeMap::new();
    for parameters in report.versions.iter().flat_map(|v| &v.dhe) {
        let bits = dhe_bits
            .entry(parameters.suite_id)
            .or_insert(parameters.bits);
        *bits = (*bits).min(parameters.bits);
    }
    let mut dhe_assumed = false;
    let mut exchange_bits: Vec<u32> = Vec::new();
    for suite in suites {
        exchange_bits.push(match suite.kx {
            TlsCipherKx::Rsa => certificate_bits,
            TlsCipherKx::Ecdhe | TlsCipherKx::Tls13 => weakest_group.unwrap_or(3072),
            TlsCipherKx::Dhe => match dhe_bits.get(&suite.id.0) {
                Some(bits) => *bits,
                None => {
                    dhe_assumed = true;
                    2048
                }
            },
            // Static DH takes its group from the certificate, which the scan does not
            // read for it (no server in use has such a certificate): the common size.
            TlsCipherKx::Dh => {
                dhe_assumed = true;
                2048
            }
            _ => 0,
        });
        if suite.au == TlsCipherAu::Null && suite.kx != TlsCipherKx::Tls13 {
            exchange_bits.push(0);
        }
    }
    (
        exchange_bits.iter().copied().min().unwrap_or(0),
        dhe_assumed,
    )
}

/// The guide's three scores and their weighted sum.
struct Scores {
    protocol: u32,
    key_exchange: u32,
    cipher: u32,
    total: u32,
}

impl Scores {
    /// Protocol support 30% (the best and worst versions' mean), key exchange 30% (the
    /// weakest), cipher strength 40% (the strongest and weakest ciphers' mean).
    fn of(findings: &Findings) -> Scores {
        let points = |version: Option<&Version>| version.map_or(0, |v| protocol_points(*v));
        let protocol =
            (points(findings.supported.iter().max()) + points(findings.supported.iter().min())) / 2;
        let key_exchange = key_exchange_points(findings.weakest_exchange);
        let cipher_scores: Vec<u32> = findings
            .suites
            .iter()
            .map(|s| cipher_points(cipher_bits(s)))
            .collect();
        let cipher = match (cipher_scores.iter().max(), cipher_scores.iter().min()) {
            (Some(strongest), Some(weakest)) => (strongest + weakest) / 2,
            _ => 0,
        };
        Scores {
            protocol,
            key_exchange,
            cipher,
            total: (protocol * 30 + key_exchange * 30 + cipher * 40) / 100,
        }
    }

    /// The letter the score alone earns.
    fn letter(&self) -> &'static str {
        match self.total {
            80.. => "A",
            65..=79 => "B",
            50..=64 => "C",
            35..=49 => "D",
            20..=34 => "E",
            _ => "F",
        }
    }
}

/// One of the caps the guide's revisions added: the grade is no better than `letter` when
/// `applies` gives a reason, which the report prints as "letter: reason".
struct Cap {
    letter: &'static str,
    applies: fn(&Findings) -> Option<String>,
}

fn is_aead(suite: &TlsCipherSuite) -> bool {
    suite.mac == TlsCipherMac::Aead
}

fn is_forward_secret(suite: &TlsCipherSuite) -> bool {
    matches!(
        suite.kx,
        TlsCipherKx::Ecdhe | TlsCipherKx::Dhe | TlsCipherKx::Tls13
    )
}

fn is_anonymous(suite: &TlsCipherSuite) -> bool {
    suite.au == TlsCipherAu::Null && suite.kx != TlsCipherKx::Tls13
}

fn is_cbc(suite: &TlsCipherSuite) -> bool {
    suite.enc_mode == tls_parser::TlsCipherEncMode::Cbc
}

/// `reason` when `holds`.
fn when(holds: bool, reason: &str) -> Option<String> {
    holds.then(|| reason.to_string())
}

/// The caps, in the order the report lists them.
const CAPS: &[Cap] = &[
    Cap {
        letter: "F",
        applies: |f| {
            when(
                f.supports(Version::Ssl3) && f.any_suite(is_cbc),
                "SSL 3.0 with CBC suites (POODLE, CVE-2014-3566)",
            )
        },
    },
    Cap {
        letter: "C",
        applies: |f| {
            when(
                f.supports(Version::Ssl3) && !f.any_suite(is_cbc),
                "SSL 3.0 supported",
            )
        },
    },
    Cap {
        letter: "B",
        applies: |f| {
            when(
                f.supports(Version::Tls10) || f.supports(Version::Tls11),
                "TLS 1.0 or 1.1 supported (deprecated, RFC 8996)",
            )
        },
    },
    Cap {
        letter: "C",
        applies: |f| {
            when(
                !f.supports(Version::Tls12) && !f.supports(Version::Tls13),
                "no TLS 1.2 or 1.3",
            )
        },
    },
    Cap {
        letter: "C",
        applies: |f| {
            when(
                f.any_suite(|s| s.enc == TlsCipherEnc::Rc4),
                "RC4 suites accepted (RFC 7465 forbids them)",
            )
        },
    },
    Cap {
        letter: "C",
        applies: |f| {
            when(
                f.any_suite(|s| s.enc == TlsCipherEnc::TripleDes),
                "3DES suites accepted (64-bit blocks, Sweet32)",
            )
        },
    },
    Cap {
        letter: "F",
        applies: |f| {
            when(
                f.any_suite(|s| s.name.contains("EXPORT")),
                "export suites accepted (FREAK, Logjam)",
            )
        },
    },
    Cap {
        letter: "F",
        applies: |f| {
            when(
                f.any_suite(|s| s.enc == TlsCipherEnc::Null),
                "suites without encryption (NULL) accepted",
            )
        },
    },
    Cap {
        letter: "F",
        applies: |f| {
            when(
                f.any_suite(is_anonymous),
                "anonymous suites accepted (no server authentication)",
            )
        },
    },
    Cap {
        letter: "B",
        applies: |f| {
            when(
                !f.any_suite(is_forward_secret),
                "no forward secrecy (no ECDHE, DHE or TLS 1.3 suite)",
            )
        },
    },
    Cap {
        letter: "B",
        applies: |f| {
            when(
                !f.suites.is_empty() && !f.any_suite(is_aead),
                "no AEAD suite (GCM, CCM or ChaCha20-Poly1305): CBC only",
            )
        },
    },
    // The guide's A- warnings (2009i, 2014). Modern clients speak TLS 1.3 when the server
    // does, and every 1.3 suite is AEAD with forward secrecy.
    Cap {
        letter: "A-",
        applies: |f| {
            let (support, favourite) = f.favourite()?;
            (!is_forward_secret(favourite) && f.any_suite(is_forward_secret)).then(|| {
                format!(
                    "no forward secrecy with modern clients: in {} the server prefers {}",
                    support.version, favourite.name
                )
            })
        },
    },
    Cap {
        letter: "A-",
        applies: |f| {
            let (support, favourite) = f.favourite()?;
            (!is_aead(favourite) && f.any_suite(is_aead)).then(|| {
                format!(
                    "no AEAD with modern clients: in {} the server prefers {}",
                    support.version, favourite.name
                )
            })
        },
    },
    Cap {
        letter: "A-",
        applies: |f| {
            when(
                f.report.secure_renegotiation == Some(false),
                "no secure renegotiation (RFC 5746 renegotiation_info not answered)",
            )
        },
    },
    Cap {
        letter: "F",
        applies: |f| {
            (1..1024)
                .contains(&f.weakest_exchange)
                .then(|| format!("key exchange of {} bits", f.weakest_exchange))
        },
    },
    Cap {
        letter: "B",
        applies: |f| {
            (1024..2048)
                .contains(&f.weakest_exchange)
                .then(|| format!("key exchange of {} bits (under 2048)", f.weakest_exchange))
        },
    },
];

/// The groups that carry a post-quantum key exchange, alone or in a hybrid.
const POST_QUANTUM_GROUPS: [u16; 6] = [
    groups::X25519MLKEM768,
    groups::SECP256R1MLKEM768,
    groups::SECP384R1MLKEM1024,
    groups::MLKEM768,
    groups::MLKEM1024,
    groups::MLKEM512,
];

/// Grades `report` as the guide does: the score's letter, each cap that applies, A+ for
/// HSTS, then T and M for the certificates.
pub fn grade(report: &Report) -> Grade {
    let Some(findings) = Findings::of(report) else {
        return Grade {
            letter: "F".into(),
            letter_if_trusted: "F".into(),
            reasons: vec!["no protocol version supported".into()],
            ..Grade::default()
        };
    };
    let scores = Scores::of(&findings);
    let mut cap = worse("A", scores.letter());
    let mut reasons = Vec::new();
    for rule in CAPS {
        if let Some(reason) = (rule.applies)(&findings) {
            cap = worse(cap, rule.letter);
            reasons.push(format!("{}: {reason}", rule.letter));
        }
    }
    let post_quantum = findings
        .group_ids
        .iter()
        .any(|group| POST_QUANTUM_GROUPS.contains(group));
    let mut notes = vec![format!(
        "post-quantum key exchange is not weighed by the guide (offered: {})",
        if post_quantum { "yes" } else { "no" }
    )];
    if findings.dhe_assumed {
        notes.push(
            "DH parameters of a suite were not read (its probe failed): assumed 2048 bits".into(),
        );
    }
    let mut letter = cap.to_string();
    strict_transport_security(report, &mut letter, &mut reasons, &mut notes);
    let letter_if_trusted = letter.clone();
    certificate_letters(report, &mut letter, &mut reasons, &mut notes);
    Grade {
        letter,
        letter_if_trusted,
        score: scores.total,
        protocol_score: scores.protocol,
        key_exchange_score: scores.key_exchange,
        cipher_score: scores.cipher,
        reasons,
        notes,
    }
}

/// A+: an A with no cap and HSTS of at least six months; else a note of why not.
fn strict_transport_security(
    report: &Report,
    letter: &mut String,
    reasons: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    match report.certificates.hsts.as_deref() {
        Some(value) if hsts_max_age(value).is_some_and(|age| age >= HSTS_MINIMUM_SECONDS) => {
            if letter == "A" {
                *letter = "A+".into();
                reasons.push("A+: HSTS with max-age of six months or more".into());
            }
        }
        Some(_) => notes.push("HSTS max-age under six months: no A+".into()),
        None if report.certificates.trusted.is_some() => {
            notes.push("no Strict-Transport-Security header on GET /: no A+".into())
        }
        None => notes.push("HSTS not checked (no HTTP request over rustls): no A+".into()),
    }
}

/// M for a certificate that does not name the server, T for one that is expired or not
/// trusted: for the first chain and for every other one.
fn certificate_letters(
    report: &Report,
    letter: &mut String,
    reasons: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let certificates = &report.certificates;
    let server = report.server_name.as_deref().unwrap_or("the server");
    let trusted_by = certificates.trusted_by.as_deref().unwrap_or("system roots");
    if certificates.name_matches == Some(false) {
        *letter = "M".into();
        reasons.push(format!("M: the certificate does not name {server}"));
    }
    if certificates.leaf().is_some_and(|leaf| leaf.expired) {
        *letter = "T".into();
        reasons.push("T: the certificate is expired or not yet valid".into());
    } else if certificates.trusted == Some(false) {
        *letter = "T".into();
        reasons.push(format!(
            "T: the chain is not trusted by the {trusted_by} ({})",
            certificates
                .trust_error
                .as_deref()
                .unwrap_or("unknown issuer")
        ));
    } else if certificates.trusted.is_none() {
        notes.push("trust not checked (no trust anchors, or no TLS 1.2+ connection)".into());
    }
    // A server with two chains (ECDSA and RSA) is graded by the worse, as SSL Labs does:
    // the clients that get the other chain meet its problems.
    for other in &certificates.others {
        let which = format!("the {} certificate", other.elicited_by);
        if other.name_matches == Some(false) {
            if letter != "T" {
                *letter = "M".into();
            }
            reasons.push(format!("M: {which} does not name {server}"));
        }
        if other.chain.first().is_some_and(|leaf| leaf.expired) {
            *letter = "T".into();
            reasons.push(format!("T: {which} is expired or not yet valid"));
        } else if other.trusted == Some(false) {
            *letter = "T".into();
            reasons.push(format!(
                "T: {which}'s chain is not trusted by the {trusted_by} ({})",
                other.trust_error.as_deref().unwrap_or("unknown issuer")
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certificate::{CertificateSummary, Certificates, OtherChain};
    use crate::scan::{GroupSupport, VersionSupport};

    fn report(versions: &[(Version, &[u16])], groups: &[u16], trusted: bool) -> Report {
        Report {
            target: "example.com:443".into(),
            address: "192.0.2.1:443".into(),
            server_name: Some("example.com".into()),
            versions_offered: Vec::new(),
            versions: versions
                .iter()
                .map(|(version, suites)| VersionSupport {
                    version: version.name().into(),
                    suites: Vec::new(),
                    order: Order::Server,
                    complete: true,
                    dhe: Vec::new(),
                    protocol: Some(*version),
                    suite_ids: suites.to_vec(),
                })
                .collect(),
            versions_unknown: Vec::new(),
            groups_tls13: Some(GroupSupport {
                groups: Vec::new(),
                order: Order::Server,
                complete: true,
                group_ids: groups.to_vec(),
            }),
            groups_tls12: None,
            secure_renegotiation: Some(true),
            alpn: None,
            certificates: Certificates {
                chain: vec![CertificateSummary {
                    subject: "CN=example.com".into(),
                    issuer: "CN=CA".into(),
                    key: "ECDSA P-256".into(),
                    key_kind: KeyKind::Ecdsa,
                    key_bits: 256,
                    signature: "ecdsa-with-SHA256".into(),
                    not_before: String::new(),
                    not_after: String::new(),
                    expired: false,
                    lifespan_days: Some(90),
                    names: vec!["example.com".into()],
                }],
                name_matches: Some(true),
                trusted: Some(trusted),
                ..Certificates::default()
            },
            mozilla: Vec::new(),
            grade: Grade::default(),
            connections: 0,
            seconds: 0.0,
            probe_errors: Vec::new(),
            malformed_answers: 0,
            timing: None,
        }
    }

    const MODERN: &[u16] = &[0x1301, 0x1302, 0x1303];
    const ECDHE_GCM: &[u16] = &[0xc02b, 0xc02c];

    #[test]
    fn a_modern_server_gets_an_a_and_hsts_makes_it_a_plus() {
        let mut modern = report(
            &[(Version::Tls13, MODERN), (Version::Tls12, ECDHE_GCM)],
            &[groups::X25519, groups::X25519MLKEM768],
            true,
        );
        let grade = grade(&modern);
        assert_eq!(grade.letter, "A", "{grade:?}");
        // TLS 1.2/1.3: 100; 256-bit curves ~ 3072-bit RSA: 90; AES-128 and 256: (80+100)/2.
        assert_eq!(
            (
                grade.protocol_score,
                grade.key_exchange_score,
                grade.cipher_score
            ),
            (100, 90, 90)
        );
        assert!(grade.notes[0].contains("not weighed") && grade.notes[0].ends_with("yes)"));
        modern.certificates.hsts = Some("max-age=63072000".into());
        assert_eq!(super::grade(&modern).letter, "A+");
        modern.certificates.hsts = Some("max-age=300".into());
        assert_eq!(super::grade(&modern).letter, "A");
    }

    #[test]
    fn caps_follow_the_guide() {
        let letter =
            |versions: &[(Version, &[u16])]| grade(&report(versions, &[groups::X25519], true));
        let old = letter(&[(Version::Tls12, ECDHE_GCM), (Version::Tls10, &[0xc009])]);
        assert_eq!(old.letter, "B", "{old:?}");
        assert!(old
            .reasons
            .iter()
            .any(|r| r.starts_with("B: TLS 1.0 or 1.1")));
        let no_tls12 = letter(&[(Version::Tls11, &[0xc009])]);
        assert_eq!(no_tls12.letter, "C", "{no_tls12:?}");
        let triple_des = letter(&[(Version::Tls12, &[0xc02b, 0x000a])]);
        assert_eq!(triple_des.letter, "C");
        assert!(triple_des.reasons.iter().any(|r| r.contains("3DES")));
        let rc4 = letter(&[(Version::Tls12, &[0xc02b, 0x0005])]);
        assert!(rc4.reasons.iter().any(|r| r.starts_with("C: RC4")));
        let poodle = letter(&[(Version::Tls12, ECDHE_GCM), (Version::Ssl3, &[0x002f])]);
        assert_eq!(poodle.letter, "F");
        let static_rsa = letter(&[(Version::Tls12, &[0x009c])]);
        assert_eq!(static_rsa.letter, "B");
        assert!(static_rsa
            .reasons
            .iter()
            .any(|r| r.contains("forward secrecy")));
        let export = letter(&[(Version::Tls12, &[0xc02b, 0x0003])]);
        assert_eq!(export.letter, "F");
    }

    #[test]
    fn warnings_give_a_minus_with_their_reason() {
        // Server order preferring static RSA with CBC, with ECDHE GCM also on: modern
        // clients get neither forward secrecy nor AEAD.
        let mut server = report(
            &[(Version::Tls12, &[0x002f, 0xc02b])],
            &[groups::X25519],
            true,
        );
        server.certificates.hsts = Some("max-age=63072000".into());
        let graded = grade(&server);
        assert_eq!(graded.letter, "A-", "{graded:?}");
        assert!(graded.reasons.contains(&"A-: no forward secrecy with modern clients: in TLS 1.2 the server prefers TLS_RSA_WITH_AES_128_CBC_SHA".to_string()), "{graded:?}");
        assert!(graded
            .reasons
            .iter()
            .any(|r| r.starts_with("A-: no AEAD with modern clients")));
        // The same suites in the client's order: modern clients pick ECDHE GCM.
        server.versions[0].order = Order::Client;
        assert_eq!(grade(&server).letter, "A+");
        // An older version's server order is not what modern clients see.
        server.versions[0].order = Order::Client;
        server.versions.push(VersionSupport {
            version: "TLS 1.0".into(),
            suites: Vec::new(),
            order: Order::Server,
            complete: true,
            dhe: Vec::new(),
            protocol: Some(Version::Tls10),
            suite_ids: vec![0x002f, 0xc009],
        });
        assert!(!grade(&server).reasons.iter().any(|r| r.starts_with("A-")));
        server.versions.pop();
        // TLS 1.3 on: modern clients never see the 1.2 order.
        server.versions[0].order = Order::Server;
        server.versions.insert(
            0,
            VersionSupport {
                version: "TLS 1.3".into(),
                suites: Vec::new(),
                order: Order::Client,
                complete: true,
                dhe: Vec::new(),
                protocol: Some(Version::Tls13),
                suite_ids: MODERN.to_vec(),
            },
        );
        assert_eq!(grade(&server).letter, "A+");
        server.secure_renegotiation = Some(false);
        let graded = grade(&server);
        assert_eq!(graded.letter, "A-");
        assert!(graded
            .reasons
            .iter()
            .any(|r| r.contains("secure renegotiation")));
        // CBC only: the 2018 rule caps at B.
        let cbc = grade(&report(
            &[(Version::Tls12, &[0xc009, 0xc00a])],
            &[groups::X25519],
            true,
        ));
        assert_eq!(cbc.letter, "B");
        assert!(cbc.reasons.iter().any(|r| r.starts_with("B: no AEAD")));
    }

    #[test]
    fn measured_dhe_primes_score_the_key_exchange() {
        use crate::scan::DheParameters;
        let dhe_suite = 0x009e; // TLS_DHE_RSA_WITH_AES_128_GCM_SHA256
        let with_prime = |bits: u32| {
            let mut server = report(
                &[(Version::Tls12, &[0xc02b, dhe_suite])],
                &[groups::X25519],
                true,
            );
            server.versions[0].dhe = vec![DheParameters {
                suite: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256".into(),
                suite_id: dhe_suite,
                bits,
                group: None,
            }];
            grade(&server)
        };
        let ffdhe2048 = with_prime(2048);
        assert_eq!(
            (ffdhe2048.letter.as_str(), ffdhe2048.key_exchange_score),
            ("A", 90)
        );
        assert!(!ffdhe2048.notes.iter().any(|note| note.contains("assumed")));
        let weak = with_prime(1024);
        assert_eq!((weak.letter.as_str(), weak.key_exchange_score), ("B", 80));
        assert!(weak
            .reasons
            .contains(&"B: key exchange of 1024 bits (under 2048)".to_string()));
        let broken = with_prime(512);
        assert_eq!(broken.letter, "F");
        // Not read: the common size is assumed, and the report says so.
        let unread = grade(&report(
            &[(Version::Tls12, &[0xc02b, dhe_suite])],
            &[groups::X25519],
            true,
        ));
        assert_eq!(unread.key_exchange_score, 90);
        assert!(unread
            .notes
            .iter()
            .any(|note| note.contains("assumed 2048")));
    }

    #[test]
    fn certificate_problems_are_t_and_m_with_the_letter_kept() {
        let untrusted = grade(&report(
            &[(Version::Tls13, MODERN)],
            &[groups::X25519],
            false,
        ));
        assert_eq!(
            (
                untrusted.letter.as_str(),
                untrusted.letter_if_trusted.as_str()
            ),
            ("T", "A")
        );
        let mut mismatch = report(&[(Version::Tls13, MODERN)], &[groups::X25519], true);
        mismatch.certificates.name_matches = Some(false);
        let graded = grade(&mismatch);
        assert_eq!(graded.letter, "M");
        assert!(graded
            .reasons
            .iter()
            .any(|r| r.contains("does not name example.com")));
    }

    #[test]
    fn a_second_chain_s_problems_grade_the_server() {
        let mut server = report(&[(Version::Tls13, MODERN)], &[groups::X25519], true);
        let mut rsa = server.certificates.chain[0].clone();
        rsa.key = "RSA 2048".into();
        rsa.key_kind = KeyKind::Rsa;
        rsa.key_bits = 2048;
        server.certificates.others.push(OtherChain {
            elicited_by: "RSA".into(),
            chain: vec![rsa],
            source: "TLS 1.2 Certificate message".into(),
            name_matches: Some(true),
            chain_in_order: Some(true),
            trusted: Some(true),
            trust_error: None,
        });
        assert_eq!(grade(&server).letter, "A");
        server.certificates.others[0].name_matches = Some(false);
        let mismatch = grade(&server);
        assert_eq!(mismatch.letter, "M");
        assert!(mismatch
            .reasons
            .iter()
            .any(|r| r.contains("the RSA certificate does not name")));
        server.certificates.others[0].trusted = Some(false);
        let untrusted = grade(&server);
        assert_eq!(
            (
                untrusted.letter.as_str(),
                untrusted.letter_if_trusted.as_str()
            ),
            ("T", "A")
        );
    }
}
