//! [`Experiment`]: what the user asked for, from a TOML file or the equivalent flags.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::arrival::{ArrivalRate, Arrivals};
use crate::config::{expand, Config, ConfigError};
use crate::dimension::{
    Backend, CertCache, CertProfile, Cipher, CloseMode, DnsMode, Ech, Emulator, Group, HelloRetry,
    Http, InvalidValue, KeepAlive, Mtls, Resume, Scheme, SuiteSpec, TlsVersion, Transport,
};
use crate::duration;
use crate::network::{Loss, Rate};

/// Everything a run needs to know. Every list is a matrix dimension; an experiment file and the
/// command-line flags fill the same struct, so `--dump-experiment` prints a file that reproduces
/// the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Experiment {
    /// TLS versions to offer, one Config each.
    pub tls: Vec<TlsVersion>,
    /// Cipher suites: short bulk-cipher names or full IANA/OpenSSL names.
    pub suite: Vec<SuiteSpec>,
    /// Key-exchange groups.
    pub group: Vec<Group>,
    /// Lab server certificate profiles (ignored for external targets).
    pub cert: Vec<CertProfile>,
    /// Certificates the lab server sends: the leaf plus intermediates.
    pub chain: Vec<u8>,
    /// Concurrent agents per Config. In an open loop they share the schedule: when all are
    /// busy, the next start waits for one, and the wait counts in that attempt's latency.
    pub concurrency: Vec<u32>,
    /// How attempts start: `closed` (each agent starts its next attempt when its last one
    /// ends), a schedule of `500/s` (open loop: latency counts from each intended start), or
    /// a ramp `100/s..2000/s` swept in steps, each step a Config.
    pub arrival_rate: Vec<ArrivalRate>,
    /// How an open loop spaces its arrivals: `uniform` (exactly 1/rate apart) or `poisson`
    /// (exponential gaps of that mean, drawn from the run's seed).
    #[serde(skip_serializing_if = "is_uniform")]
    pub arrivals: Arrivals,
    /// Measured time per Config instead of a handshake count (open loop: the count is the
    /// rate times this; a ramp's steps share it).
    #[serde(
        with = "duration::serde_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration: Option<Duration>,
    /// Measured handshakes per Config.
    pub handshakes: u64,
    /// Warm-up handshakes per Config, stored and flagged, excluded from statistics.
    pub warmup: u64,
    /// Handshakes per Config per round (one block); default: a tenth of `handshakes`, at least
    /// the concurrency.
    pub block: Option<u64>,
    /// Seed for the shuffled order of blocks; drawn and recorded when absent.
    pub seed: Option<u64>,
    /// Per-attempt time limit.
    #[serde(with = "duration::serde_text")]
    pub timeout: Duration,
    /// Session resumption (`off`, `tickets`, `session-id`): with resumption each agent's first
    /// handshake is full and the rest resume. `resume = true` in older files means `tickets`.
    #[serde(deserialize_with = "resume_values")]
    pub resume: Vec<Resume>,
    /// TLS 1.3 0-RTT: bytes of early data to send on resumed handshakes (the request, padded
    /// to this size); 0 sends none.
    pub early_data: Vec<u64>,
    /// Whether the client skips re-verifying certificate chains it already verified.
    pub cert_cache: Vec<CertCache>,
    /// TLS 1.3: whether the client's first key share is for another group, so the server
    /// asks again (a HelloRetryRequest).
    pub hello_retry: Vec<HelloRetry>,
    /// Mutual TLS with the lab server: `on` makes it require a client certificate (issued by
    /// the lab root of `client_cert_profile`), which the client presents. Targets that ask
    /// for one get `client_cert` and `client_key` instead.
    pub mtls: Vec<Mtls>,
    /// The key type of the lab client certificate the client presents under `mtls = ["on"]`.
    pub client_cert_profile: CertProfile,
    /// HTTP keep-alive: `off` (every attempt a new connection and handshake) or `on` (an
    /// agent's first request opens a connection, the rest reuse it; HTTP/1.1 over TCP).
    pub keep_alive: Vec<KeepAlive>,
    /// `https`, or `http`: plain HTTP to the same host (the lab server's plain port), what
    /// TLS costs a request side by side.
    pub scheme: Vec<Scheme>,
    /// TLS over TCP, or QUIC.
    pub transport: Vec<Transport>,
    /// The request sent after the handshake (`none`, `1.1`, `2` over TCP, `3` over QUIC).
    pub http: Vec<Http>,
    /// The request's path.
    pub path: String,
    /// Page mode: each attempt loads a page, the document at `path` and these resources
    /// (`86:30KB`), as a browser does: six connections over HTTP/1.1, one over HTTP/2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<crate::Page>,
    /// Size in bytes of the body the lab server answers every request with.
    pub body: u64,
    /// After the run, re-send captured 0-RTT flights to the lab server and count how many of
    /// them it rejects (anti-replay).
    pub replay: bool,
    /// How the client closes connections after the handshake.
    pub close: CloseMode,
    /// An external server (`host:port`) instead of the lab server.
    pub target: Option<String>,
    /// Addresses pinned for `host:port` names, as curl's `--resolve` (`HOST:PORT:ADDR`,
    /// IPv6 in brackets): no DNS query is made for a pinned name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resolve: Vec<crate::PinnedAddress>,
    /// When the target's name is resolved: `once` per run (attempts time no lookups) or
    /// `per-attempt` (each attempt resolves before it connects: the `dns` phase).
    pub dns: DnsMode,
    /// Server name to send and verify (default: the target's host, or `localhost`).
    pub sni: Option<String>,
    /// The port of the target's plain HTTP, for `scheme = ["http"]` (default 80).
    pub plain_port: Option<u16>,
    /// PEM file of trusted roots for an external target (default: the system roots).
    pub ca: Option<PathBuf>,
    /// PEM file of the certificate chain (leaf first) the client presents to a target that
    /// asks for one (mutual TLS); given together with `client_key`.
    pub client_cert: Option<PathBuf>,
    /// PEM file of the private key of `client_cert` (PKCS#8, SEC1 or PKCS#1).
    pub client_key: Option<PathBuf>,
    /// Skip certificate verification (recorded in every sample and printed in the summary).
    pub insecure: bool,
    /// Public-key pins the server's certificate must match (`sha256//BASE64`, several
    /// separated by `;`, as curl's `--pinnedpubkey`); with `insecure`, the pin alone.
    pub pin: Option<String>,
    /// Limits the run must keep for exit code 0 (`p99<5ms`, `errors<1%`, `rate>1000/s`,
    /// optionally for the Configs whose label contains a text: `mlkem: p99<5ms`); a broken
    /// one exits 4.
    pub thresholds: Vec<String>,
    /// Labels for the Configs, in matrix order (default: automatic labels).
    pub labels: Vec<String>,
    /// Exact Configs (`[[config]]` tables), each a partial Config over the default
    /// dimensions (not the values above) and the run-level values. A table names dimensions
    /// (one value, or a list that it crosses) and optionally its `label`. Whether the crossed
    /// matrix runs too is `matrix`.
    #[serde(rename = "config", skip_serializing_if = "Vec::is_empty")]
    pub explicit: Vec<toml::Table>,
    /// With `[[config]]` tables: whether the crossed matrix of the dimensions above runs
    /// next to them. The run then has the union: the matrix's Configs, then each table's that
    /// the matrix lacks (a Config both make runs once, named by the table's label if it has
    /// one). Unset, a file's tables run alone unless its top level names a dimension (`tls`,
    /// `suite`, ...), and a dimension flag (`--tls`, ...) given with the file sets it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<bool>,
    /// TLS libraries: each value is one Config whose client and lab server both use it.
    pub backend: Vec<Backend>,
    /// Client libraries, crossed with `server_backend`; either list replaces `backend` on
    /// its side (the other side keeps `backend`).
    pub client_backend: Vec<Backend>,
    /// Lab server libraries, crossed with `client_backend`.
    pub server_backend: Vec<Backend>,
    /// Encrypted ClientHello: `off`, `on` (the lab server's configuration, or `ech_config`
    /// for a target), `grease`.
    pub ech: Vec<Ech>,
    /// The ECHConfigList of an external target, base64 (as in its HTTPS DNS record).
    pub ech_config: Option<String>,
    /// The public name in the lab server's ECH configuration: the name an observer sees in
    /// the outer ClientHello.
    pub ech_public_name: String,
    /// Drop invalid combinations instead of rejecting the experiment.
    pub skip_invalid: bool,
    /// Highest tolerated fraction of failed attempts before the exit code says so.
    pub max_error_rate: f64,
    /// Sequential stopping: a Config stops once the 95% CI half-width of its median handshake
    /// is at most this fraction of the median (`handshakes` stays the maximum).
    pub until_ci: Option<f64>,
    /// Emulated round-trip delays (half each way). Any network dimension puts client and
    /// server on an emulated link; none means plain loopback.
    #[serde(with = "duration::serde_list")]
    pub rtt: Vec<Duration>,
    /// Emulated delay variation per packet and direction (order preserving).
    #[serde(with = "duration::serde_list")]
    pub jitter: Vec<Duration>,
    /// Emulated random packet loss per direction.
    pub loss: Vec<Loss>,
    /// Emulated bandwidth per direction (`rate` in files written before it was renamed).
    #[serde(alias = "rate")]
    pub bandwidth: Vec<Rate>,
    /// Which emulator carries the packets.
    pub emulator: Emulator,
    /// A command that starts the server to measure (nginx, haproxy) in the server's network
    /// namespace instead of the lab server; `target` names its port.
    pub server_cmd: Option<String>,
}

/// Files leave the default arrival process out, so files written before it existed and
/// after read alike.
fn is_uniform(arrivals: &Arrivals) -> bool {
    *arrivals == Arrivals::Uniform
}

impl Default for Experiment {
    fn default() -> Self {
        Experiment {
            tls: vec![TlsVersion::Tls13],
            suite: vec![SuiteSpec::of(Cipher::Aes128Gcm)],
            group: vec![Group::X25519],
            cert: vec![CertProfile::EcdsaP256],
            chain: vec![1],
            concurrency: vec![1],
            arrival_rate: vec![ArrivalRate::Closed],
            arrivals: Arrivals::Uniform,
            duration: None,
            handshakes: 1000,
            warmup: 20,
            block: None,
            seed: None,
            timeout: Duration::from_secs(10),
            resume: vec![Resume::Off],
            early_data: vec![0],
            cert_cache: vec![CertCache::Off],
            hello_retry: vec![HelloRetry::Off],
            mtls: vec![Mtls::Off],
            client_cert_profile: CertProfile::EcdsaP256,
            keep_alive: vec![KeepAlive::Off],
            scheme: vec![Scheme::Https],
            transport: vec![Transport::Tcp],
            http: vec![Http::None],
            path: "/".to_string(),
            page: None,
            body: 1024,
            replay: false,
            close: CloseMode::Reset,
            target: None,
            resolve: Vec::new(),
            dns: DnsMode::Once,
            sni: None,
            plain_port: None,
            ca: None,
            client_cert: None,
            client_key: None,
            insecure: false,
            pin: None,
            thresholds: Vec::new(),
            labels: Vec::new(),
            explicit: Vec::new(),
            matrix: None,
            backend: vec![Backend::Rustls],
            client_backend: Vec::new(),
            server_backend: Vec::new(),
            ech: vec![Ech::Off],
            ech_config: None,
            ech_public_name: "public.tlslab.test".to_string(),
            skip_invalid: false,
            max_error_rate: 0.0,
            until_ci: None,
            rtt: Vec::new(),
            jitter: Vec::new(),
            loss: Vec::new(),
            bandwidth: Vec::new(),
            emulator: Emulator::Auto,
            server_cmd: None,
        }
    }
}

/// `resume` as a list of modes, one mode, or the boolean older experiment files used.
fn resume_values<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Resume>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Flag(bool),
        One(Resume),
        Many(Vec<Resume>),
    }
    Ok(match Given::deserialize(deserializer)? {
        Given::Flag(true) => vec![Resume::Tickets],
        Given::Flag(false) => vec![Resume::Off],
        Given::One(mode) => vec![mode],
        Given::Many(modes) => modes,
    })
}

impl Experiment {
    /// Reads an experiment file; the error names the file and the offending key.
    pub fn from_toml(text: &str) -> Result<Experiment, InvalidValue> {
        let mut experiment: Experiment = toml::from_str(text)
            .map_err(|error| InvalidValue::with_source(error.to_string(), error))?;
        if !experiment.explicit.is_empty() && experiment.matrix.is_none() {
            // A file that crosses dimensions at its top level and lists tables asks for both.
            let table: toml::Table = toml::from_str(text)
                .map_err(|error| InvalidValue::with_source(error.to_string(), error))?;
            if table.keys().any(|key| crate::config::is_dimension_key(key)) {
                experiment.matrix = Some(true);
            }
        }
        Ok(experiment)
    }

    /// The experiment as a TOML document that reproduces it.
    pub fn to_toml(&self) -> String {
        // The dump writes every dimension at the top: with tables that run alone it must say
        // so, or reading it back would cross the matrix too.
        if !self.explicit.is_empty() && self.matrix.is_none() {
            let mut dumped = self.clone();
            dumped.matrix = Some(false);
            return dumped.to_toml();
        }
        toml::to_string(self).expect("an experiment always serializes")
    }

    /// Expands the matrix into labelled Configs, validating every combination.
    pub fn configs(&self) -> Result<Vec<Config>, ConfigError> {
        match (self.explicit.is_empty(), self.matrix) {
            (true, _) => expand(self),
            (false, Some(true)) => crate::config::expand_matrix_and_tables(self),
            (false, _) => crate::config::expand_explicit(self),
        }
    }

    /// Measured handshakes for `config`: `handshakes`, or, with `duration` in an open loop,
    /// as many as the Config's schedule starts in its share of that time.
    pub fn handshakes_for(&self, config: &Config) -> u64 {
        match (config.arrival_rate, config.arrival_time) {
            (Some(rate), Some(time)) => ((rate * time.as_secs_f64()).ceil() as u64).max(1),
            _ => self.handshakes,
        }
    }

    /// The block size for `config`: `block`, or a tenth of its handshakes, at least its
    /// concurrency.
    pub fn block_size(&self, config: &Config) -> u64 {
        let handshakes = self.handshakes_for(config);
        let size = self
            .block
            .unwrap_or_else(|| handshakes.div_ceil(10).max(u64::from(config.concurrency)));
        size.clamp(1, handshakes.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_round_trips_and_rejects_unknown_keys() {
        let experiment = Experiment {
            tls: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            suite: vec!["ECDHE-RSA-AES128-GCM-SHA256".parse().unwrap()],
            timeout: Duration::from_millis(1500),
            ..Experiment::default()
        };
        let text = experiment.to_toml();
        assert_eq!(Experiment::from_toml(&text).unwrap(), experiment);

        let error = Experiment::from_toml("tls = [\"1.3\"]\nhandshake = 5\n").unwrap_err();
        assert!(error.to_string().contains("handshake"), "{error}");
        let error = Experiment::from_toml("group = [\"x448\"]").unwrap_err();
        assert!(error.to_string().contains("x25519"), "{error}");
        // The TOML parser's error is kept under it, whole, as its source.
        let error = Experiment::from_toml("tls = [\"1.3\"\n").unwrap_err();
        let source = std::error::Error::source(&error).expect("the parser's error as source");
        assert!(source.is::<toml::de::Error>(), "{source:?}");
    }

    #[test]
    fn resume_accepts_the_old_boolean_one_mode_or_a_list() {
        let old = Experiment::from_toml("resume = true").unwrap();
        assert_eq!(old.resume, vec![Resume::Tickets]);
        let one = Experiment::from_toml("resume = \"session-id\"").unwrap();
        assert_eq!(one.resume, vec![Resume::SessionId]);
        let many = Experiment::from_toml("resume = [\"off\", \"tickets\"]").unwrap();
        assert_eq!(many.resume, vec![Resume::Off, Resume::Tickets]);
        assert!(Experiment::from_toml("resume = \"sometimes\"").is_err());
    }

    #[test]
    fn block_defaults_to_a_tenth_but_at_least_the_concurrency() {
        let experiment = Experiment {
            handshakes: 300,
            concurrency: vec![4, 50, 1000],
            ..Experiment::default()
        };
        let configs = experiment.configs().unwrap();
        assert_eq!(experiment.block_size(&configs[0]), 30);
        assert_eq!(experiment.block_size(&configs[1]), 50);
        assert_eq!(experiment.block_size(&configs[2]), 300);
    }

    #[test]
    fn an_open_loop_for_a_duration_makes_its_rate_times_its_time() {
        let experiment = Experiment {
            arrival_rate: vec![
                "closed".parse().unwrap(),
                "150/s".parse().unwrap(),
                "100/s..1000/s".parse().unwrap(),
            ],
            duration: Some(Duration::from_secs(5)),
            handshakes: 77,
            ..Experiment::default()
        };
        // A closed loop beside open ones keeps its count.
        let mixed = experiment.configs().unwrap();
        assert_eq!(experiment.handshakes_for(&mixed[0]), 77);
        let experiment = Experiment {
            arrival_rate: experiment.arrival_rate[1..].to_vec(),
            ..experiment
        };
        let configs = experiment.configs().unwrap();
        assert_eq!(configs.len(), 11);
        assert!(configs[0].label.ends_with(" 150/s"), "{}", configs[0].label);
        assert_eq!(experiment.handshakes_for(&configs[0]), 750);
        // The ramp's ten steps share the 5 s: half a second each.
        assert_eq!(configs[1].arrival_rate, Some(100.0));
        assert_eq!(experiment.handshakes_for(&configs[1]), 50);
        assert_eq!(experiment.handshakes_for(&configs[10]), 500);
        let plan = crate::Plan::new(&experiment, &configs, 1);
        assert_eq!(plan.measured_handshakes(10), 500);
        // Without a duration, a schedule paces -n handshakes.
        let paced = Experiment {
            duration: None,
            ..experiment
        };
        let configs = paced.configs().unwrap();
        assert_eq!(paced.handshakes_for(&configs[0]), 77);
    }

    #[test]
    fn a_closed_loop_for_a_duration_runs_timed_blocks() {
        let experiment = Experiment {
            duration: Some(Duration::from_secs(5)),
            tls: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            warmup: 4,
            ..Experiment::default()
        };
        let configs = experiment.configs().unwrap();
        let plan = crate::Plan::new(&experiment, &configs, 3);
        for config in [0, 1] {
            let measured: Vec<_> = plan
                .trials
                .iter()
                .filter(|trial| trial.config == config && !trial.warmup)
                .collect();
            assert_eq!(measured.len(), 10);
            assert!(measured.iter().all(|trial| trial.handshakes == 0
                && trial.time_limit == Some(Duration::from_millis(500))));
        }
        // The progress display follows the clock: two Configs of 5 s each.
        assert_eq!(plan.timed_duration(), Some(Duration::from_secs(10)));
        // Warm-up counts its attempts still.
        assert!(plan
            .trials
            .iter()
            .filter(|trial| trial.warmup)
            .all(|trial| trial.handshakes == 4 && trial.time_limit.is_none()));
        // A short duration makes fewer blocks, none under 100 ms.
        let short = Experiment {
            duration: Some(Duration::from_millis(250)),
            ..experiment
        };
        let plan = crate::Plan::new(&short, &short.configs().unwrap(), 3);
        let timed: Vec<_> = plan.trials.iter().filter_map(|t| t.time_limit).collect();
        assert_eq!(timed, vec![Duration::from_millis(125); 4]);
    }

    #[test]
    fn files_still_read_the_old_name_of_bandwidth() {
        let old = Experiment::from_toml("rtt = [\"10ms\"]\nrate = [\"100mbit\"]").unwrap();
        assert_eq!(old.bandwidth, vec![Rate(100_000_000)]);
        let new = Experiment::from_toml("bandwidth = [\"100mbit\"]").unwrap();
        assert_eq!(new.bandwidth, old.bandwidth);
    }
}
