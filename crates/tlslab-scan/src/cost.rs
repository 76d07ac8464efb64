//! What each supported choice costs: the list of version × suite × group combinations a scan
//! found ([`choices`]), and the shape of their timings ([`Costs`]). The timing itself is a
//! run of tlslab's engine, made by the binary (this crate depends on core alone, as the
//! architecture keeps producers apart from the engine).

use serde::Serialize;
use tls_parser::{TlsCipherKx, TlsCipherSuite};

use crate::hello::Version;
use crate::scan::Report;

/// One combination the server accepts: a version, a suite, and the group its key exchange
/// uses (`None` for RSA key transport, which agrees on no group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The version.
    pub version: Version,
    /// IANA name, as the scan reports it.
    pub suite: String,
    /// The group, by the name tlslab's `--group` takes; `None` for RSA key transport.
    pub group: Option<String>,
}

/// Every version × suite × group the scan found supported, newest version first, each list
/// in the report's order. TLS 1.3 suites cross the TLS 1.3 groups; before 1.3 an ECDHE suite
/// crosses the TLS 1.2 curves, a DHE suite takes the prime the server sent for it, and RSA
/// key transport has no group. Versions older than TLS 1.2 are one entry each with suite
/// `*`: tlslab's clients do not speak them, so there is nothing to cross.
pub fn choices(report: &Report) -> Vec<Choice> {
    let mut choices = Vec::new();
    for support in &report.versions {
        let Some(version) = support.protocol else {
            continue;
        };
        if version < Version::Tls12 {
            choices.push(Choice {
                version,
                suite: "*".into(),
                group: None,
            });
            continue;
        }
        for (suite, id) in support.suites.iter().zip(&support.suite_ids) {
            let groups: Vec<Option<String>> = if version == Version::Tls13 {
                report.groups_tls13.as_ref().map_or_else(Vec::new, |found| {
                    found.groups.iter().cloned().map(Some).collect()
                })
            } else {
                match TlsCipherSuite::from_id(*id).map(|suite| suite.kx) {
                    Some(TlsCipherKx::Ecdhe) => {
                        report.groups_tls12.as_ref().map_or_else(Vec::new, |found| {
                            found.groups.iter().cloned().map(Some).collect()
                        })
                    }
                    Some(TlsCipherKx::Dhe) => vec![support
                        .dhe
                        .iter()
                        .find(|parameters| parameters.suite_id == *id)
                        .map(|parameters| {
                            parameters
                                .group
                                .clone()
                                .unwrap_or_else(|| format!("custom DH {} bits", parameters.bits))
                        })],
                    _ => vec![None],
                }
            };
            // A version with suites but no group found still gets its suites listed.
            let groups = if groups.is_empty() {
                vec![None]
            } else {
                groups
            };
            for group in groups {
                choices.push(Choice {
                    version,
                    suite: suite.clone(),
                    group,
                });
            }
        }
    }
    choices
}

/// The timed runs of one scan (`--json`'s `timing`; `null` with `--no-timing`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Costs {
    /// Measured handshakes asked of each timed choice (`--timing-handshakes`).
    pub handshakes_per_choice: u64,
    /// Warm-up handshakes before them (not in the medians).
    pub warmup_per_choice: u64,
    /// The leaf certificate the server served during the scan (`ECDSA P-256`).
    pub certificate: Option<String>,
    /// Whether the timed clients verified the chain (by `--ca` or the system roots); a chain
    /// the scan found untrusted is timed without verification, and the medians then leave
    /// out what verifying it would cost.
    pub verified: bool,
    /// Connections the timed runs made (warm-up included).
    pub connections: u64,
    /// How long the timed runs took, wall clock.
    pub seconds: f64,
    /// One row per supported choice, in the order of [`choices`].
    pub rows: Vec<Cost>,
    /// Why the timed run as a whole failed, when it did (the rows then say "not timed").
    pub error: Option<String>,
}

/// One choice's timing, or why it was not timed.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// The version, as the scan reports it (`TLS 1.3`).
    pub version: String,
    /// The suite's IANA name.
    pub suite: String,
    /// The group's name; `None` for RSA key transport.
    pub group: Option<String>,
    /// The client library that timed it (`rustls`, or `openssl` for what rustls lacks).
    pub backend: Option<String>,
    /// Measured handshakes that completed.
    pub handshakes: u64,
    /// Measured handshakes that failed.
    pub errors: u64,
    /// Median of start → handshake done (TCP connect included), in milliseconds.
    pub median_handshake_ms: Option<f64>,
    /// Median of ClientHello sent → ServerHello received: one round trip plus the server's
    /// work, in milliseconds.
    pub median_server_response_ms: Option<f64>,
    /// Why this choice was not timed; `None` when it was.
    pub not_timed: Option<String>,
}

impl Cost {
    /// A row for `choice` that was not timed, and why.
    pub fn not_timed(choice: &Choice, why: impl Into<String>) -> Cost {
        Cost {
            version: choice.version.name().into(),
            suite: choice.suite.clone(),
            group: choice.group.clone(),
            backend: None,
            handshakes: 0,
            errors: 0,
            median_handshake_ms: None,
            median_server_response_ms: None,
            not_timed: Some(why.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certificate::Certificates;
    use crate::grade::Grade;
    use crate::scan::{DheParameters, GroupSupport, Order, VersionSupport};

    fn support(
        version: Version,
        suites: &[(&str, u16)],
        dhe: Vec<DheParameters>,
    ) -> VersionSupport {
        VersionSupport {
            version: version.name().into(),
            suites: suites.iter().map(|(name, _)| name.to_string()).collect(),
            order: Order::Server,
            complete: true,
            dhe,
            protocol: Some(version),
            suite_ids: suites.iter().map(|(_, id)| *id).collect(),
        }
    }

    fn groups(names: &[&str]) -> Option<GroupSupport> {
        Some(GroupSupport {
            groups: names.iter().map(|name| name.to_string()).collect(),
            order: Order::Server,
            complete: true,
            group_ids: Vec::new(),
        })
    }

    #[test]
    fn choices_cross_suites_with_the_groups_their_key_exchange_uses() {
        let report = Report {
            target: "example.com:443".into(),
            address: "192.0.2.1:443".into(),
            server_name: None,
            versions_offered: Vec::new(),
            versions: vec![
                support(
                    Version::Tls13,
                    &[("TLS_AES_128_GCM_SHA256", 0x1301)],
                    Vec::new(),
                ),
                support(
                    Version::Tls12,
                    &[
                        ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xc02f),
                        ("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", 0x009e),
                        ("TLS_RSA_WITH_AES_256_GCM_SHA384", 0x009d),
                    ],
                    vec![DheParameters {
                        suite: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256".into(),
                        suite_id: 0x009e,
                        bits: 2048,
                        group: Some("ffdhe2048".into()),
                    }],
                ),
                support(
                    Version::Tls10,
                    &[("TLS_RSA_WITH_AES_128_CBC_SHA", 0x002f)],
                    Vec::new(),
                ),
            ],
            versions_unknown: Vec::new(),
            groups_tls13: groups(&["x25519", "x25519mlkem768"]),
            groups_tls12: groups(&["secp256r1"]),
            secure_renegotiation: Some(true),
            alpn: None,
            certificates: Certificates::default(),
            mozilla: Vec::new(),
            grade: Grade::default(),
            connections: 0,
            seconds: 0.0,
            probe_errors: Vec::new(),
            malformed_answers: 0,
            timing: None,
        };
        let listed: Vec<(Version, String, Option<String>)> = choices(&report)
            .into_iter()
            .map(|choice| (choice.version, choice.suite, choice.group))
            .collect();
        let row = |version, suite: &str, group: Option<&str>| {
            (version, suite.to_string(), group.map(str::to_string))
        };
        assert_eq!(
            listed,
            [
                row(Version::Tls13, "TLS_AES_128_GCM_SHA256", Some("x25519")),
                row(
                    Version::Tls13,
                    "TLS_AES_128_GCM_SHA256",
                    Some("x25519mlkem768")
                ),
                row(
                    Version::Tls12,
                    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                    Some("secp256r1")
                ),
                row(
                    Version::Tls12,
                    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
                    Some("ffdhe2048")
                ),
                row(Version::Tls12, "TLS_RSA_WITH_AES_256_GCM_SHA384", None),
                row(Version::Tls10, "*", None),
            ]
        );
    }
}
