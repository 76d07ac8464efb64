//! [`Overrides`]: values given on the command line, as typed, each replacing the experiment
//! file's when given. Flags and the file meet here, in one place: the binary only moves what
//! clap parsed into an `Overrides`, and [`Experiment::apply`] parses and checks each value
//! with the same parsers the file uses.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::config::{error, ConfigError};
use crate::duration;
use crate::experiment::Experiment;
use crate::network::parse_fraction;

/// Command-line values as typed; `None` (or `false`) leaves the experiment's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--tls`: the TLS versions, comma-separated.
    pub tls: Option<Vec<String>>,
    /// `--suite`: the cipher suites.
    pub suite: Option<Vec<String>>,
    /// `--group`: the key exchange groups.
    pub group: Option<Vec<String>>,
    /// `--cert`: the lab certificate profiles.
    pub cert: Option<Vec<String>>,
    /// `--chain`: the chain depths the lab server sends.
    pub chain: Option<Vec<u8>>,
    /// `-c`: the agents per Config.
    pub concurrency: Option<Vec<u32>>,
    /// `--arrival-rate`: an open loop's rates, or `closed`.
    pub arrival_rate: Option<Vec<String>>,
    /// `--arrivals`: how an open loop spaces its arrivals.
    pub arrivals: Option<String>,
    /// `--duration`: how long each Config runs instead of a count.
    pub duration: Option<String>,
    /// `-n`: measured handshakes per Config.
    pub handshakes: Option<u64>,
    /// `--warmup`: handshakes per Config before measuring.
    pub warmup: Option<u64>,
    /// `--block`: handshakes per trial of the plan.
    pub block: Option<u64>,
    /// `--seed`: the plan's shuffle, to repeat a run's order.
    pub seed: Option<u64>,
    /// `--timeout`: one attempt's time limit.
    pub timeout: Option<String>,
    /// `--resume`: fresh handshakes, or resumption by ticket or session ID.
    pub resume: Option<Vec<String>>,
    /// `--early-data`: bytes of 0-RTT data on resumed handshakes.
    pub early_data: Option<Vec<u64>>,
    /// `--cert-cache`: whether clients skip chains they verified before.
    pub cert_cache: Option<Vec<String>>,
    /// `--hello-retry`: whether the first key share is for another group.
    pub hello_retry: Option<Vec<String>>,
    /// `--mtls`: whether the lab server requires a client certificate.
    pub mtls: Option<Vec<String>>,
    /// `--client-cert-profile`: the lab client certificate's profile.
    pub client_cert_profile: Option<String>,
    /// `--keep-alive`: requests per connection.
    pub keep_alive: Option<Vec<String>>,
    /// `--scheme`: https, or plain http to compare against.
    pub scheme: Option<Vec<String>>,
    /// `--transport`: TCP or QUIC.
    pub transport: Option<Vec<String>>,
    /// `--http`: the request's HTTP version, or none.
    pub http: Option<Vec<String>>,
    /// `--path`: the request's path.
    pub path: Option<String>,
    /// `--page`: a page of resources to load instead of one request.
    pub page: Option<String>,
    /// `--backend`: the TLS library on both sides.
    pub backend: Option<Vec<String>>,
    /// `--client-backend`: the client's library, when it differs.
    pub client_backend: Option<Vec<String>>,
    /// `--server-backend`: the lab server's library, when it differs.
    pub server_backend: Option<Vec<String>>,
    /// `--ech`: Encrypted ClientHello off, on, or GREASE.
    pub ech: Option<Vec<String>>,
    /// `--ech-config`: a target's ECHConfigList, base64.
    pub ech_config: Option<String>,
    /// `--ech-public-name`: the outer SNI of the lab server's ECH.
    pub ech_public_name: Option<String>,
    /// `--body`: response body bytes the lab server sends.
    pub body: Option<u64>,
    /// `--replay`: re-send each 0-RTT flight to count rejected replays.
    pub replay: bool,
    /// `--close`: how connections end, reset or graceful.
    pub close: Option<String>,
    /// `--target`: an external server instead of the lab server.
    pub target: Option<String>,
    /// `--resolve HOST:PORT:ADDR`, each as typed.
    pub resolve: Option<Vec<String>>,
    /// `--dns`: resolve the target once, or before every attempt.
    pub dns: Option<String>,
    /// `--sni`: the server name sent, when not the target's host.
    pub sni: Option<String>,
    /// `--plain-port`: the target's plain-HTTP port, for `--scheme http`.
    pub plain_port: Option<u16>,
    /// `--ca`: a PEM file of roots to trust instead of the system's.
    pub ca: Option<PathBuf>,
    /// `--client-cert`: the certificate chain the client presents.
    pub client_cert: Option<PathBuf>,
    /// `--client-key`: its private key.
    pub client_key: Option<PathBuf>,
    /// `--insecure`: verify no certificate (a pin is still checked).
    pub insecure: bool,
    /// `--pin`: public-key pins the server's key must match.
    pub pin: Option<String>,
    /// `--threshold`: limits that decide the exit code.
    pub thresholds: Option<Vec<String>>,
    /// `--label`: names for the Configs, in matrix order.
    pub labels: Option<Vec<String>>,
    /// `--skip-invalid`: run the valid combinations, leaving out the rest.
    pub skip_invalid: bool,
    /// `--until-ci`: stop a Config once its median is known this closely.
    pub until_ci: Option<String>,
    /// `--max-error-rate`: the failed fraction that stops a Config.
    pub max_error_rate: Option<f64>,
    /// `--rtt`: emulated round trips.
    pub rtt: Option<Vec<String>>,
    /// `--jitter`: emulated delay variation.
    pub jitter: Option<Vec<String>>,
    /// `--loss`: emulated packet loss.
    pub loss: Option<Vec<String>>,
    /// `--bandwidth`: emulated link rates.
    pub bandwidth: Option<Vec<String>>,
    /// `--emulator`: which network emulator, or auto.
    pub emulator: Option<String>,
    /// `--server-cmd`: a server for tlslab to start and stop around the run.
    pub server_cmd: Option<String>,
}

impl Overrides {
    /// The first matrix dimension the flags set, by its flag (`--tls`), if any.
    fn dimension_flag(&self) -> Option<&'static str> {
        let lists = [
            (self.tls.is_some(), "--tls"),
            (self.suite.is_some(), "--suite"),
            (self.group.is_some(), "--group"),
            (self.cert.is_some(), "--cert"),
            (self.chain.is_some(), "--chain"),
            (self.concurrency.is_some(), "--concurrency"),
            (self.arrival_rate.is_some(), "--arrival-rate"),
            (self.resume.is_some(), "--resume"),
            (self.early_data.is_some(), "--early-data"),
            (self.cert_cache.is_some(), "--cert-cache"),
            (self.hello_retry.is_some(), "--hello-retry"),
            (self.mtls.is_some(), "--mtls"),
            (self.keep_alive.is_some(), "--keep-alive"),
            (self.scheme.is_some(), "--scheme"),
            (self.transport.is_some(), "--transport"),
            (self.http.is_some(), "--http"),
            (self.backend.is_some(), "--backend"),
            (self.client_backend.is_some(), "--client-backend"),
            (self.server_backend.is_some(), "--server-backend"),
            (self.ech.is_some(), "--ech"),
            (self.rtt.is_some(), "--rtt"),
            (self.jitter.is_some(), "--jitter"),
            (self.loss.is_some(), "--loss"),
            (self.bandwidth.is_some(), "--bandwidth"),
        ];
        lists
            .into_iter()
            .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// A dimension's values, each parsed; the hint says how `option` takes them.
fn list<T: FromStr>(values: &[String], option: &str) -> Result<Vec<T>, ConfigError>
where
    T::Err: std::fmt::Display,
{
    values
        .iter()
        .map(|value| {
            value.parse::<T>().map_err(|problem| {
                error(
                    problem.to_string(),
                    format!(
                        "{option} takes one value or several, comma-separated; each is one \
                         point of that dimension of the matrix"
                    ),
                )
            })
        })
        .collect()
}

fn durations(values: &[String], example: &str) -> Result<Vec<Duration>, ConfigError> {
    values
        .iter()
        .map(|value| {
            duration::parse(value)
                .map_err(|problem| error(problem.to_string(), format!("for example {example}")))
        })
        .collect()
}

/// Replaces `target` with the parsed `given`, when given.
fn set<T, F>(
    target: &mut T,
    given: &Option<F>,
    parse: impl FnOnce(&F) -> Result<T, ConfigError>,
) -> Result<(), ConfigError> {
    if let Some(given) = given {
        *target = parse(given)?;
    }
    Ok(())
}

/// A value taken as given.
fn copy<T: Clone>(value: &T) -> Result<T, ConfigError> {
    Ok(value.clone())
}

/// An optional value, given.
fn some<T: Clone>(value: &T) -> Result<Option<T>, ConfigError> {
    Ok(Some(value.clone()))
}

impl Experiment {
    /// Applies command-line `overrides` on top of this experiment (a file's, or the default).
    pub fn apply(&mut self, overrides: &Overrides) -> Result<(), ConfigError> {
        let given = overrides;
        // Flags are the file's top level: with [[config]] tables, a dimension flag describes
        // the crossed matrix, which then runs next to them (never silently ignored).
        if let (false, Some(flag)) = (self.explicit.is_empty(), given.dimension_flag()) {
            if self.matrix == Some(false) {
                return Err(error(
                    format!("{flag} sets the crossed matrix, which this file turns off (matrix = false)"),
                    "set the value in the [[config]] tables, or write matrix = true to run the matrix next to them",
                ));
            }
            self.matrix = Some(true);
        }
        self.apply_dimensions(given)?;
        self.apply_network(given)?;
        self.apply_run(given)?;
        self.apply_target(given)?;
        Ok(())
    }

    /// The matrix dimensions: lists of values, each checked against its spellings.
    fn apply_dimensions(&mut self, given: &Overrides) -> Result<(), ConfigError> {
        set(&mut self.tls, &given.tls, |values| list(values, "--tls"))?;
        set(&mut self.suite, &given.suite, |values| {
            list(values, "--suite")
        })?;
        set(&mut self.group, &given.group, |values| {
            list(values, "--group")
        })?;
        set(&mut self.cert, &given.cert, |values| list(values, "--cert"))?;
        set(&mut self.resume, &given.resume, |values| {
            list(values, "--resume")
        })?;
        set(&mut self.cert_cache, &given.cert_cache, |values| {
            list(values, "--cert-cache")
        })?;
        set(&mut self.hello_retry, &given.hello_retry, |values| {
            list(values, "--hello-retry")
        })?;
        set(&mut self.mtls, &given.mtls, |values| list(values, "--mtls"))?;
        set(
            &mut self.client_cert_profile,
            &given.client_cert_profile,
            |text| {
                text.parse()
                    .map_err(|problem: crate::dimension::ParseError| {
                        error(
                            problem.to_string(),
                            "--client-cert-profile takes one certificate profile, as --cert does \
                         (ecdsa-p256, rsa2048, ed25519, ...)",
                        )
                    })
            },
        )?;
        set(&mut self.keep_alive, &given.keep_alive, |values| {
            list(values, "--keep-alive")
        })?;
        set(&mut self.scheme, &given.scheme, |values| {
            list(values, "--scheme")
        })?;
        set(&mut self.transport, &given.transport, |values| {
            list(values, "--transport")
        })?;
        set(&mut self.http, &given.http, |values| list(values, "--http"))?;
        set(&mut self.backend, &given.backend, |values| {
            list(values, "--backend")
        })?;
        set(&mut self.client_backend, &given.client_backend, |values| {
            list(values, "--client-backend")
        })?;
        set(&mut self.server_backend, &given.server_backend, |values| {
            list(values, "--server-backend")
        })?;
        set(&mut self.ech, &given.ech, |values| list(values, "--ech"))?;
        set(&mut self.loss, &given.loss, |values| list(values, "--loss"))?;
        set(&mut self.bandwidth, &given.bandwidth, |values| {
            list(values, "--bandwidth")
        })?;
        Ok(())
    }

    /// The network: emulated delays, the timeout, the close, name resolution, the emulator,
    /// and `--until-ci`.
    fn apply_network(&mut self, given: &Overrides) -> Result<(), ConfigError> {
        set(&mut self.rtt, &given.rtt, |values| {
            durations(values, "--rtt 30ms,150ms")
        })?;
        set(&mut self.jitter, &given.jitter, |values| {
            durations(values, "--jitter 2ms")
        })?;
        set(&mut self.timeout, &given.timeout, |text| {
            duration::parse(text)
                .map_err(|problem| error(problem.to_string(), "for example --timeout 5s"))
        })?;
        set(&mut self.close, &given.close, |text| {
            text.parse()
                .map_err(|problem: crate::dimension::ParseError| {
                    error(problem.to_string(), "--close reset or --close graceful")
                })
        })?;
        set(&mut self.resolve, &given.resolve, |values| {
            values
                .iter()
                .map(|value| {
                    value.parse::<crate::PinnedAddress>().map_err(|problem| {
                        error(
                            problem.to_string(),
                            "write --resolve HOST:PORT:ADDRESS, for example --resolve \
                             example.com:443:192.0.2.7 or --resolve example.com:443:[2001:db8::7]",
                        )
                    })
                })
                .collect()
        })?;
        set(&mut self.dns, &given.dns, |text| {
            text.parse()
                .map_err(|problem: crate::dimension::ParseError| {
                    error(
                        problem.to_string(),
                        "--dns once resolves the target before the run; --dns per-attempt \
                         resolves it before each attempt and times the lookup",
                    )
                })
        })?;
        set(&mut self.emulator, &given.emulator, |text| {
            text.parse()
                .map_err(|problem: crate::dimension::ParseError| {
                    error(
                        problem.to_string(),
                        "--emulator auto picks the best one this machine supports",
                    )
                })
        })?;
        set(&mut self.until_ci, &given.until_ci, |text| {
            parse_fraction(text).map(Some).ok_or_else(|| {
                error(
                    format!("--until-ci '{text}' is not a percentage"),
                    "for example --until-ci 2% or --until-ci 0.02",
                )
            })
        })?;
        Ok(())
    }

    /// The run's shape: chain depths, concurrency, arrivals, counts, the request and the page.
    fn apply_run(&mut self, given: &Overrides) -> Result<(), ConfigError> {
        set(&mut self.chain, &given.chain, copy)?;
        set(&mut self.concurrency, &given.concurrency, copy)?;
        set(&mut self.arrival_rate, &given.arrival_rate, |values| {
            list(values, "--arrival-rate")
        })?;
        set(&mut self.arrivals, &given.arrivals, |text| {
            text.parse().map_err(|problem: crate::InvalidValue| {
                error(
                    problem.to_string(),
                    "--arrivals uniform starts attempts exactly 1/rate apart; --arrivals \
                     poisson draws exponential gaps of that mean",
                )
            })
        })?;
        set(&mut self.duration, &given.duration, |text| {
            duration::parse(text)
                .map(Some)
                .map_err(|problem| error(problem.to_string(), "for example --duration 30s"))
        })?;
        set(&mut self.early_data, &given.early_data, copy)?;
        set(&mut self.labels, &given.labels, copy)?;
        set(&mut self.handshakes, &given.handshakes, copy)?;
        set(&mut self.warmup, &given.warmup, copy)?;
        set(&mut self.body, &given.body, copy)?;
        set(&mut self.max_error_rate, &given.max_error_rate, copy)?;
        set(&mut self.path, &given.path, copy)?;
        set(&mut self.page, &given.page, |text| {
            text.parse()
                .map(Some)
                .map_err(|problem: crate::InvalidValue| {
                    error(
                        problem.to_string(),
                        "for example --page 86:30KB (86 resources of 30 kB)",
                    )
                })
        })?;
        Ok(())
    }

    /// The target and what the client presents and checks there, and the switches.
    fn apply_target(&mut self, given: &Overrides) -> Result<(), ConfigError> {
        set(&mut self.ech_public_name, &given.ech_public_name, copy)?;
        set(&mut self.block, &given.block, some)?;
        set(&mut self.seed, &given.seed, some)?;
        set(&mut self.ech_config, &given.ech_config, some)?;
        set(&mut self.target, &given.target, some)?;
        set(&mut self.sni, &given.sni, some)?;
        set(&mut self.plain_port, &given.plain_port, some)?;
        set(&mut self.ca, &given.ca, some)?;
        set(&mut self.client_cert, &given.client_cert, some)?;
        set(&mut self.client_key, &given.client_key, some)?;
        set(&mut self.pin, &given.pin, some)?;
        set(&mut self.thresholds, &given.thresholds, copy)?;
        set(&mut self.server_cmd, &given.server_cmd, some)?;
        self.replay |= given.replay;
        self.insecure |= given.insecure;
        self.skip_invalid |= given.skip_invalid;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimension::{Group, TlsVersion};

    #[test]
    fn given_values_replace_the_experiments_and_the_rest_stay() {
        let mut experiment = Experiment::from_toml("handshakes = 50\nbody = 7").unwrap();
        experiment
            .apply(&Overrides {
                tls: Some(vec!["1.2".into(), "1.3".into()]),
                group: Some(vec!["p-256".into()]),
                until_ci: Some("2%".into()),
                rtt: Some(vec!["30ms".into()]),
                seed: Some(9),
                insecure: true,
                ..Overrides::default()
            })
            .unwrap();
        assert_eq!(experiment.tls, [TlsVersion::Tls12, TlsVersion::Tls13]);
        assert_eq!(experiment.group, [Group::Secp256r1]);
        assert_eq!(experiment.until_ci, Some(0.02));
        assert_eq!(experiment.rtt, [Duration::from_millis(30)]);
        assert_eq!((experiment.seed, experiment.insecure), (Some(9), true));
        assert_eq!((experiment.handshakes, experiment.body), (50, 7));
    }

    #[test]
    fn a_bad_value_names_itself_and_says_how_to_write_it() {
        let mut experiment = Experiment::default();
        let error = experiment
            .apply(&Overrides {
                tls: Some(vec!["1.4".into()]),
                ..Overrides::default()
            })
            .unwrap_err();
        assert!(error.message.contains("'1.4'"), "{error}");
        assert!(error.hint.contains("comma-separated"), "{}", error.hint);
        let error = experiment
            .apply(&Overrides {
                until_ci: Some("2x".into()),
                ..Overrides::default()
            })
            .unwrap_err();
        assert_eq!(error.message, "--until-ci '2x' is not a percentage");
        let error = experiment
            .apply(&Overrides {
                jitter: Some(vec!["2 parsecs".into()]),
                ..Overrides::default()
            })
            .unwrap_err();
        assert_eq!(error.hint, "for example --jitter 2ms");
    }
}
