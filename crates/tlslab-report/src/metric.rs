//! The one metric a summary's table, its verdicts and its gains use, and a report's headings
//! name (DESIGN.md section 6: each verdict names its metric, and a table, its verdicts and its
//! gains use the same one).
//!
//! The default follows the question the Configs ask:
//!
//! 1. `total` (start → the response's last byte) when a Config sends its requests on kept
//!    connections or over plain HTTP (`tlslab load`): most of its requests shake no hands.
//! 2. `handshake` (start → the handshake's end) when some Config sends no request: the
//!    handshake is the only time every Config has.
//! 3. `ttfb` (start → the response's first byte) when every Config sends a request and the
//!    Configs vary a dimension whose effect a handshake cannot show whole: a session technique
//!    (`resume`, `early-data`, `cert-cache`: 0-RTT sends the request inside the handshake, and
//!    its handshake lasts as long as a resumed one) or the transport and HTTP version (QUIC
//!    carries the request in a connection TCP still has to open).
//! 4. `handshake` otherwise: the Configs differ in what the handshake does (version, suite,
//!    group, certificate, ...), and the request after it is the same for all.
//!
//! `--metric` (run, compare, report) overrides the choice for all of them together.

use serde::Serialize;
use tlslab_store::ConfigRow;

/// Dimensions whose effect a handshake cannot show whole: what they change is measured to the
/// response's first byte (rule 3 above).
const MEASURED_TO_THE_RESPONSE: [&str; 5] =
    ["resume", "early-data", "cert-cache", "transport", "http"];

/// The metric of a summary and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metric {
    /// A phase or event name, as `--metric` takes it: `handshake`, `ttfb`, `total`, ...
    pub name: String,
    /// Why this one, in words: `--metric`, or the rule of the Configs' question.
    pub reason: String,
}

impl Metric {
    /// The metric `asked` names (`--metric`), else the one the Configs' question calls for.
    pub fn choose(configs: &[ConfigRow], asked: Option<&str>) -> Metric {
        match asked {
            Some(name) => Metric {
                name: name.to_string(),
                reason: "asked for with --metric".into(),
            },
            None => Metric::default_for(configs),
        }
    }

    /// The metric the Configs' question calls for (the rules in the module's documentation).
    pub fn default_for(configs: &[ConfigRow]) -> Metric {
        let metric = |name: &str, reason: String| Metric {
            name: name.to_string(),
            reason,
        };
        if configs
            .iter()
            .any(|config| config.keep_alive || config.scheme == "http")
        {
            return metric(
                "total",
                "requests on kept connections or over plain HTTP, most of which shake no hands"
                    .into(),
            );
        }
        if configs.iter().any(|config| config.http == "none") {
            let reason = if configs.iter().all(|config| config.http == "none") {
                "the Configs send no request"
            } else {
                "not every Config sends a request"
            };
            return metric("handshake", reason.into());
        }
        let varied = crate::dimensions::varied_dimensions(configs);
        let asked: Vec<&str> = MEASURED_TO_THE_RESPONSE
            .into_iter()
            .filter(|name| {
                crate::dimensions::find(name)
                    .is_some_and(|(_, value)| crate::dimensions::varies(configs, *value))
            })
            .collect();
        if !asked.is_empty() {
            return metric(
                "ttfb",
                format!(
                    "the Configs vary {}, whose effect a handshake cannot show whole",
                    crate::dimensions::in_words(&asked)
                ),
            );
        }
        metric(
            "handshake",
            if varied.is_empty() {
                "every Config sends the same request".into()
            } else {
                "the Configs differ in the handshake, not in the request after it".into()
            },
        )
    }

    /// What the metric measures, in words.
    pub fn describe(&self) -> String {
        describe(&self.name)
    }
}

/// What the metric named `name` measures, in words.
pub fn describe(name: &str) -> String {
    match name {
        "handshake" => "start to the handshake's end".into(),
        "tls_handshake" => "ClientHello to the handshake's end".into(),
        "ttfb" => "start to the response's first byte".into(),
        "total" => "start to the response's last byte".into(),
        "latency" => "intended start to the end".into(),
        other => format!("the {other} phase"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimensions::tests::row;

    #[test]
    fn the_metric_follows_the_question() {
        let handshakes = [
            row(1, "a", |c| c.version = "1.2".into()),
            row(2, "b", |_| {}),
        ];
        assert_eq!(Metric::default_for(&handshakes).name, "handshake");
        // A request after each handshake does not change the question of tls 1.2 against 1.3.
        let requests = handshakes.clone().map(|mut config| {
            config.http = "1.1".into();
            config
        });
        assert_eq!(Metric::default_for(&requests).name, "handshake");
        // A session technique or the transport is measured to the response.
        let early = [
            row(1, "a", |c| {
                c.http = "1.1".into();
                c.resumption = "tickets".into();
            }),
            row(2, "b", |c| {
                c.http = "1.1".into();
                c.resumption = "tickets".into();
                c.early_data_bytes = 1024;
            }),
        ];
        let chosen = Metric::default_for(&early);
        assert_eq!(chosen.name, "ttfb");
        assert!(chosen.reason.contains("early-data"), "{}", chosen.reason);
        let transports = [
            row(1, "a", |c| c.http = "2".into()),
            row(2, "b", |c| {
                c.http = "3".into();
                c.transport = "quic".into();
            }),
        ];
        let chosen = Metric::default_for(&transports);
        assert_eq!(chosen.name, "ttfb");
        assert!(
            chosen.reason.contains("transport and http"),
            "{}",
            chosen.reason
        );
        // ... but not when some Config sends no request: the handshake is all they share.
        let mixed = [row(1, "a", |_| {}), early[1].clone()];
        assert_eq!(Metric::default_for(&mixed).name, "handshake");
        // Kept connections: the request's whole time.
        let kept = [row(1, "a", |c| {
            c.http = "1.1".into();
            c.keep_alive = true;
        })];
        assert_eq!(Metric::default_for(&kept).name, "total");
        // --metric overrides.
        let asked = Metric::choose(&early, Some("server_response"));
        assert_eq!(asked.name, "server_response");
        assert_eq!(asked.describe(), "the server_response phase");
    }
}
