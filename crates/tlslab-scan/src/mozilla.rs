//! Mozilla's server-side TLS guidelines (old, intermediate, modern; versions 5.7, 5.8 and
//! 6.0 as Mozilla publishes them in JSON, shipped in `data/mozilla/`): for each level, whether
//! the server's configuration matches, or the changes that would make it match, in the
//! spirit of Mozilla's `analyze.py`.
//!
//! "Matches" judges what a server's TLS configuration decides: versions, suites, groups and
//! (where the level asks for it) server order. What the certificate's issuer decides (key
//! type and curve, signature, lifespan) is listed apart as certificate notes, so a lab
//! certificate's 20-year validity does not hide whether the configuration is right.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tls_parser::{TlsCipherAu, TlsCipherKx, TlsCipherMac, TlsCipherSuite};

use crate::certificate::KeyKind;
use crate::hello::{group_name, groups, Version};
use crate::scan::{Order, Report};

/// The guideline files, oldest first.
pub const GUIDELINES: [(&str, &str); 3] = [
    (
        "5.7",
        include_str!("../data/mozilla/server-side-tls-5.7.json"),
    ),
    (
        "5.8",
        include_str!("../data/mozilla/server-side-tls-5.8.json"),
    ),
    (
        "6.0",
        include_str!("../data/mozilla/server-side-tls-6.0.json"),
    ),
];

/// The levels in the order they are reported, strictest first.
const LEVELS: [&str; 3] = ["modern", "intermediate", "old"];

/// The parts of one level's configuration a scan can check.
#[derive(Debug, Clone, Deserialize)]
pub struct Profile {
    /// TLS 1.3 suites, IANA names.
    pub ciphersuites: Vec<String>,
    /// The suites before TLS 1.3.
    pub ciphers: Ciphers,
    /// The versions the level keeps, by Mozilla's names (`TLSv1.2`).
    pub tls_versions: Vec<String>,
    /// OpenSSL's group names: `X25519`, `prime256v1`, `secp384r1`, `X25519MLKEM768`.
    pub tls_curves: Vec<String>,
    /// Whether the server's suite order must be enforced.
    pub server_preferred_order: bool,
    /// The certificate key types the level accepts.
    pub certificate_types: Vec<String>,
    /// The EC curves a certificate key may use.
    pub certificate_curves: Vec<String>,
    /// The signature algorithms a certificate may be signed with.
    pub certificate_signatures: Vec<String>,
    /// The smallest RSA key the level accepts, in bits.
    pub rsa_key_size: Option<usize>,
    /// The smallest finite-field DHE prime the level accepts, in bits.
    pub dh_param_size: Option<u32>,
    /// The longest validity the level accepts, in days.
    pub maximum_certificate_lifespan: Option<u64>,
}

/// A level's pre-1.3 suites, as the guideline's JSON lists them.
#[derive(Debug, Clone, Deserialize)]
pub struct Ciphers {
    /// Pre-1.3 suites, IANA names (the `openssl`, `go` and `caddy` lists say the same).
    pub iana: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Guideline {
    configurations: BTreeMap<String, Profile>,
}

/// One level of one guideline, judged.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileResult {
    /// The guideline's version (`5.7`), since levels change between versions.
    pub guideline: String,
    /// The level: `modern`, `intermediate` or `old`.
    pub level: String,
    /// The configuration (versions, suites, groups, order) matches the level.
    pub matches: bool,
    /// What to change to match, one change a line.
    pub changes: Vec<String>,
    /// What the certificate would need for the level (its issuer decides these).
    pub certificate_notes: Vec<String>,
}

/// Every shipped guideline's profiles by level; a file that does not parse is a build
/// error waiting to happen, so the unit test below reads each.
pub fn profiles() -> Vec<(String, String, Profile)> {
    let mut out = Vec::new();
    for (version, text) in GUIDELINES {
        let Ok(guideline) = serde_json::from_str::<Guideline>(text) else {
            continue;
        };
        for level in LEVELS {
            if let Some(profile) = guideline.configurations.get(level) {
                out.push((version.to_string(), level.to_string(), profile.clone()));
            }
        }
    }
    out
}

/// A group name in the guidelines (OpenSSL's) as a code point.
fn curve_code_point(name: &str) -> Option<u16> {
    match name {
        "X25519" => Some(groups::X25519),
        "X448" => Some(groups::X448),
        "prime256v1" | "secp256r1" => Some(groups::SECP256R1),
        "secp384r1" => Some(groups::SECP384R1),
        "secp521r1" => Some(groups::SECP521R1),
        "X25519MLKEM768" => Some(groups::X25519MLKEM768),
        "SecP256r1MLKEM768" => Some(groups::SECP256R1MLKEM768),
        "SecP384r1MLKEM1024" => Some(groups::SECP384R1MLKEM1024),
        "ffdhe2048" => Some(groups::FFDHE2048),
        "ffdhe3072" => Some(groups::FFDHE3072),
        "ffdhe4096" => Some(groups::FFDHE4096),
        "ffdhe6144" => Some(groups::FFDHE6144),
        "ffdhe8192" => Some(groups::FFDHE8192),
        _ => None,
    }
}

/// Whether a server with this certificate could negotiate `suite` at all: ECDSA suites need
/// an ECDSA key, RSA-authenticated ones an RSA key. Suggesting a suite the server can never
/// pick would be a change that changes nothing.
fn usable_with(suite: &TlsCipherSuite, key: KeyKind) -> bool {
    match suite.au {
        TlsCipherAu::Tls13 => true,
        TlsCipherAu::Ecdsa => key == KeyKind::Ecdsa,
        TlsCipherAu::Rsa => key == KeyKind::Rsa,
        _ => false,
    }
}

/// AEAD suites and the SHA-256/384 MACs came with TLS 1.2 (RFC 5246): no server can
/// negotiate them in TLS 1.0 or 1.1, so a change asking for them there would change nothing.
fn needs_tls12(suite: &TlsCipherSuite) -> bool {
    matches!(
        suite.mac,
        TlsCipherMac::Aead | TlsCipherMac::HmacSha256 | TlsCipherMac::HmacSha384
    )
}

/// Judges `report` against every level of every shipped guideline.
pub fn check(report: &Report) -> Vec<ProfileResult> {
    profiles()
        .into_iter()
        .map(|(guideline, level, profile)| {
            let (changes, certificate_notes) = judge(report, &profile);
            ProfileResult {
                guideline,
                level,
                matches: changes.is_empty(),
                changes,
                certificate_notes,
            }
        })
        .collect()
}

/// The changes that would make `report`'s server match `profile`, and notes on its
/// certificate: versions, then each version's suites and order, DH parameters, groups.
fn judge(report: &Report, profile: &Profile) -> (Vec<String>, Vec<String>) {
    let wanted_versions: Vec<Version> = Version::ALL
        .into_iter()
        .filter(|version| {
            profile
                .tls_versions
                .iter()
                .any(|name| name == version.mozilla_name())
        })
        .collect();
    let mut changes = Vec::new();
    for version in Version::ALL {
        match (report.supports(version), wanted_versions.contains(&version)) {
            (true, false) => changes.push(format!("disable {}", version.name())),
            (false, true) => changes.push(format!("enable {}", version.name())),
            _ => {}
        }
    }
    changes.extend(suite_changes(report, profile, &wanted_versions));
    changes.extend(dh_change(report, profile, &wanted_versions));
    changes.extend(group_changes(report, profile));
    (changes, certificate_notes(report, profile))
}

/// For each version the level keeps: the suites to remove and to add (only those the
/// server's key and the version can negotiate), and the server's order where it is wanted.
fn suite_changes(report: &Report, profile: &Profile, wanted_versions: &[Version]) -> Vec<String> {
    let mut changes = Vec::new();
    let key = report
        .certificates
        .leaf()
        .map_or(KeyKind::Other, |leaf| leaf.key_kind);
    for support in &report.versions {
        let Some(version) = support.protocol else {
            continue;
        };
        let allowed = if version == Version::Tls13 {
            &profile.ciphersuites
        } else {
            &profile.ciphers.iana
        };
        // Suites of a version the level drops go with the version.
        if !wanted_versions.contains(&version) {
            continue;
        }
        let remove: Vec<&str> = support
            .suites
            .iter()
            .filter(|name| !allowed.contains(name))
            .map(String::as_str)
            .collect();
        if !remove.is_empty() {
            changes.push(format!(
                "{}: remove suites {}",
                version.name(),
                remove.join(", ")
            ));
        }
        let add: Vec<&str> = allowed
            .iter()
            .filter(|name| !support.suites.contains(name))
            .filter(|name| {
                TlsCipherSuite::from_name(name).is_some_and(|suite| {
                    usable_with(suite, key)
                        && (version == Version::Tls13) == (suite.kx == TlsCipherKx::Tls13)
                        && (version >= Version::Tls12 || !needs_tls12(suite))
                })
            })
            .map(String::as_str)
            .collect();
        if !add.is_empty() {
            changes.push(format!("{}: add suites {}", version.name(), add.join(", ")));
        }
        if profile.server_preferred_order && support.order == Order::Client {
            changes.push(format!(
                "{}: enforce the server's suite order",
                version.name()
            ));
        }
    }
    changes
}

/// Larger DH parameters, when a kept version's DHE suite uses a prime below the level's
/// minimum.
fn dh_change(report: &Report, profile: &Profile, wanted_versions: &[Version]) -> Option<String> {
    let minimum = profile.dh_param_size?;
    let smallest = report
        .versions
        .iter()
        .filter(|support| {
            support
                .protocol
                .is_some_and(|v| wanted_versions.contains(&v))
        })
        .flat_map(|support| &support.dhe)
        .map(|parameters| parameters.bits)
        .min();
    smallest.filter(|bits| *bits < minimum).map(|bits| {
        format!(
            "use DH parameters of at least {minimum} bits (now {bits}; ffdhe{} from RFC 7919)",
            minimum.max(2048)
        )
    })
}

/// The groups to remove and to add, when the scan read the server's groups.
fn group_changes(report: &Report, profile: &Profile) -> Vec<String> {
    let mut changes = Vec::new();
    let wanted_groups: Vec<u16> = profile
        .tls_curves
        .iter()
        .filter_map(|name| curve_code_point(name))
        .collect();
    let mut offered: Vec<u16> = Vec::new();
    for support in [&report.groups_tls13, &report.groups_tls12]
        .into_iter()
        .flatten()
    {
        for group in &support.group_ids {
            if !offered.contains(group) {
                offered.push(*group);
            }
        }
    }
    if offered.is_empty() {
        return changes;
    }
    let remove: Vec<String> = offered
        .iter()
        .filter(|group| !wanted_groups.contains(group))
        .map(|group| group_name(*group))
        .collect();
    if !remove.is_empty() {
        changes.push(format!("remove groups {}", remove.join(", ")));
    }
    // A hybrid needs TLS 1.3: only ask for it from a server that speaks 1.3.
    let add: Vec<String> = wanted_groups
        .iter()
        .filter(|group| !offered.contains(group))
        .filter(|group| report.groups_tls13.is_some() || groups::TLS12_ECDHE.contains(group))
        .map(|group| group_name(*group))
        .collect();
    if !add.is_empty() {
        changes.push(format!("add groups {}", add.join(", ")));
    }
    changes
}

fn certificate_notes(report: &Report, profile: &Profile) -> Vec<String> {
    let Some(leaf) = report.certificates.leaf() else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    let kind = match leaf.key_kind {
        KeyKind::Rsa => "rsa",
        KeyKind::Ecdsa => "ecdsa",
        KeyKind::Other => "other",
    };
    if !profile
        .certificate_types
        .iter()
        .any(|wanted| wanted == kind)
    {
        notes.push(format!(
            "a {} key, not {}",
            profile.certificate_types.join(" or "),
            leaf.key
        ));
    }
    if leaf.key_kind == KeyKind::Ecdsa {
        let curve = match leaf.key_bits {
            256 => "prime256v1",
            384 => "secp384r1",
            521 => "secp521r1",
            _ => "unknown",
        };
        if !profile
            .certificate_curves
            .iter()
            .any(|wanted| wanted == curve)
        {
            notes.push(format!(
                "a key on {}, not {curve}",
                profile.certificate_curves.join(" or ")
            ));
        }
    }
    if let (KeyKind::Rsa, Some(minimum)) = (leaf.key_kind, profile.rsa_key_size) {
        if leaf.key_bits < minimum {
            notes.push(format!(
                "an RSA key of at least {minimum} bits, not {}",
                leaf.key_bits
            ));
        }
    }
    if !profile.certificate_signatures.contains(&leaf.signature) {
        notes.push(format!(
            "a signature of {}, not {}",
            profile.certificate_signatures.join(", "),
            leaf.signature
        ));
    }
    if let (Some(maximum), Some(days)) = (profile.maximum_certificate_lifespan, leaf.lifespan_days)
    {
        if days > maximum {
            notes.push(format!("a lifespan of at most {maximum} days, not {days}"));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_guideline_parses_with_its_levels() {
        let profiles = profiles();
        let names: Vec<String> = profiles
            .iter()
            .map(|(version, level, _)| format!("{version} {level}"))
            .collect();
        // 6.0 has no "old" level.
        assert_eq!(
            names,
            [
                "5.7 modern",
                "5.7 intermediate",
                "5.7 old",
                "5.8 modern",
                "5.8 intermediate",
                "5.8 old",
                "6.0 modern",
                "6.0 intermediate"
            ]
        );
        for (_, _, profile) in &profiles {
            for name in profile.ciphers.iana.iter().chain(&profile.ciphersuites) {
                assert!(TlsCipherSuite::from_name(name).is_some(), "{name}");
            }
            for curve in &profile.tls_curves {
                assert!(curve_code_point(curve).is_some(), "{curve}");
            }
        }
    }
}
