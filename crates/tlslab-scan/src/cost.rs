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
    pub version: Version,
    /// IANA name, as the scan reports it.
    pub suite: String,
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
    pub seconds: f64,
    pub rows: Vec<Cost>,
    /// Why the timed run as a whole failed, when it did (the rows then say "not timed").
    pub error: Option<String>,
}

/// One choice's timing, or why it was not timed.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    pub version: String,
    pub suite: String,
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
