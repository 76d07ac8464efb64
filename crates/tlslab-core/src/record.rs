//! The record contract: what a producer of [`Sample`]s hands to a [`Sink`] (the results store,
//! or anything else that wants them), and the run-level records around the samples.
//!
//! The engine is one producer; a capture reader or a scanner is another. Each writes a store
//! with this crate and `tlslab-store` alone: nothing here measures, opens a socket or knows a
//! TLS library. What measures (reading this process's CPU time, probing the machine) lives in
//! the engine and fills these types.

use serde::{Deserialize, Serialize};

use crate::causes::Cause;
use crate::experiment::Experiment;
use crate::network::Network;
use crate::plan::{Plan, Trial};
use crate::sample::Sample;

/// What a run is, written once before the first sample.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// Where the Samples come from.
    pub source: Source,
    /// What the user asked an active run for; `None` for a capture.
    pub experiment: Option<Experiment>,
    /// The Configs known before the first sample (a capture announces each when it meets
    /// it, with [`Record::Config`]).
    pub configs: Vec<ConfigRecord>,
    /// An active run's plan (with its seed); `None` for a capture.
    pub plan: Option<Plan>,
    /// The machine and software that ran it, to judge numbers from elsewhere by.
    pub environment: Environment,
    /// The command that started it.
    pub command_line: Vec<String>,
    /// When it started, nanoseconds since the Unix epoch.
    pub started_at_unix_ns: u64,
}

/// Where a run's Samples came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Handshakes tlslab made itself (`tlslab run`).
    Active,
    /// Packet captures read afterwards (`tlslab pcap`).
    Pcap {
        /// The capture files, in the order they were read.
        files: Vec<String>,
    },
    /// A live interface (`tlslab capture`).
    Capture {
        /// The interface's name.
        interface: String,
    },
}

impl Source {
    /// `active`, `pcap` or `capture`: the store's `runs.source`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Active => "active",
            Source::Pcap { .. } => "pcap",
            Source::Capture { .. } => "capture",
        }
    }

    /// The files or the interface, for people.
    pub fn detail(&self) -> Option<String> {
        match self {
            Source::Active => None,
            Source::Pcap { files } => Some(files.join(", ")),
            Source::Capture { interface } => Some(interface.clone()),
        }
    }
}

/// A Config as the store keeps it: what any producer can say about the handshakes it
/// groups, as text. The engine's Configs become one each ([`Config::record`]); a capture
/// reader makes one for each negotiated combination it meets.
///
/// [`Config::record`]: crate::Config::record
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigRecord {
    /// The Config's id in the store, unique within the run.
    pub index: usize,
    /// The name reports use for it.
    pub label: String,
    /// TLS version, suite and group: asked for (active) or negotiated (passive).
    pub version: String,
    /// The cipher suite offered (a capture: negotiated).
    pub suite: String,
    /// The key exchange group offered (a capture: negotiated).
    pub group: String,
    /// The lab server's certificate profile and chain depth.
    pub cert: Option<String>,
    /// The lab server's chain depth.
    pub chain: Option<u8>,
    /// An external target as given (host:port) and the server name sent.
    pub target: Option<String>,
    /// The server name sent.
    pub sni: Option<String>,
    /// Where the handshakes went: the address connected to, or the server a capture saw.
    pub address: String,
    /// Connections at once; `None` when a capture cannot know.
    pub concurrency: Option<u32>,
    /// Attempts per second on a schedule (open loop); `None` in a closed loop or a capture.
    pub arrival_rate: Option<f64>,
    /// `off`, `tickets` or `session-id`.
    pub resumption: String,
    /// 0-RTT data per resumed handshake; 0 for none.
    pub early_data_bytes: u64,
    /// Clients skipped chains they had verified before.
    pub cert_cache: bool,
    /// The client's first key share was for another group (a HelloRetryRequest expected).
    pub hello_retry: bool,
    /// Mutual TLS with the lab server: it required a client certificate (`--mtls on`).
    pub mtls: bool,
    /// The profile of the lab client certificate presented under `mtls`; `None` otherwise.
    pub client_cert_profile: Option<String>,
    /// An agent kept its connection for its next request.
    pub keep_alive: bool,
    /// `https`, or `http` (plain); captures say `https`.
    pub scheme: String,
    /// Page mode: the page's resources (`86:30000`); `None` otherwise.
    pub page: Option<String>,
    /// What the client trusted: `lab root`, `CA file`, `system roots` or `insecure`, with
    /// ` + pin` under `--pin`; `None` for a capture's Configs.
    pub trust: Option<String>,
    /// Certificates went unverified (`--insecure`).
    pub insecure: bool,
    /// `tcp` or `quic`.
    pub transport: String,
    /// The request after the handshake: `none`, `1.1`, `2`, `3`.
    pub http: String,
    /// The request's path; `None` without a request.
    pub path: Option<String>,
    /// The libraries on each side, where known.
    pub client_backend: Option<String>,
    /// See `client_backend`: the server's.
    pub server_backend: Option<String>,
    /// The ECH mode: `off`, `on` or `grease` (a capture: what the ClientHello offered).
    pub ech: String,
    /// The emulated link, and the emulator that carried it.
    pub network: Option<Network>,
    /// The emulator that carried `network`.
    pub emulator: Option<String>,
    /// Where a capture saw its handshakes (`--capture-point`, by default the host and the
    /// interface): several capture points write one run, and each Config is one point's.
    /// `None` for an active run's Configs.
    pub capture_point: Option<String>,
    /// The producer's whole description of the Config, as JSON.
    pub description: String,
}

/// One executed block.
#[derive(Debug, Clone, Serialize)]
pub struct TrialRecord {
    /// The block of the plan it ran.
    pub trial: Trial,
    /// Agents that ran it.
    pub concurrency: u32,
    /// Nanoseconds since the run started.
    pub started_at: u64,
    /// How long it ran.
    pub duration_ns: u64,
    /// Attempts it started, measured or not.
    pub attempted: u64,
    /// CPU the lab server spent during the trial (`None` for external targets).
    pub server: Option<Usage>,
    /// CPU this process spent during the trial: the load generator's own cost.
    pub client: Usage,
    /// What the emulated link carried during the trial; `None` without one, or with netem
    /// (its queue is the kernel's).
    pub link: Option<LinkUsage>,
    /// Mutual TLS: the lab server's checks of client certificates during the trial (`None`
    /// without a lab server that asks for them). The lab server reports per trial, not per
    /// handshake, so this is the trial's sum.
    pub server_client_verifications: Option<ClientVerifications>,
}

/// What an emulated link carried during one trial, from its forwarder's statistics: enough
/// to tell when the link, not a CPU, limited the rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkUsage {
    /// Bytes the link carried from the client towards the server.
    pub bytes_to_server: u64,
    /// Bytes the link carried back to the client.
    pub bytes_to_client: u64,
    /// Packets dropped because the bandwidth queue was full (not the profile's random loss).
    pub queue_drops: u64,
}

/// Client certificates a lab server verified (chain and CertificateVerify signature), and
/// the time that took, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientVerifications {
    /// Client certificates verified.
    pub count: u64,
    /// Nanoseconds spent verifying them, summed.
    pub nanos: u64,
}

impl ClientVerifications {
    /// The verifications between `earlier` and `self`.
    pub fn since(&self, earlier: &ClientVerifications) -> ClientVerifications {
        ClientVerifications {
            count: self.count.saturating_sub(earlier.count),
            nanos: self.nanos.saturating_sub(earlier.nanos),
        }
    }
}

/// Something a producer streams to the sink.
#[derive(Debug, Clone)]
pub enum Record {
    /// A Config met during the run (a capture's new combination), before its first sample.
    Config(Box<ConfigRecord>),
    /// One attempt.
    Sample(Box<Sample>),
    /// One block of the plan, once it ran.
    Trial(TrialRecord),
    /// A Config met the `--until-ci` target and runs no more blocks.
    Stopped(EarlyStop),
    /// The replay probe's result for one Config.
    Replay(ReplayRecord),
}

/// What the lab server did with re-sent 0-RTT flights (`--replay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReplayRecord {
    /// The Config whose early data was replayed.
    pub config: usize,
    /// Captured first flights re-sent.
    pub sent: u64,
    /// Replays the server recognised as a spent ticket and refused.
    pub rejected: u64,
    /// Tickets the server redeemed during the probe: a replay it accepted (should be 0).
    pub accepted: u64,
}

/// A Config that stopped before its planned handshakes (`--until-ci`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EarlyStop {
    /// The Config that stopped.
    pub config: usize,
    /// The last round it ran.
    pub round: u32,
    /// Samples it had then.
    pub samples: usize,
    /// The relative half-width of the median's 95% interval that met the target.
    pub relative_half_width: f64,
}

/// How the run ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunEnd {
    /// Every planned handshake was attempted.
    pub complete: bool,
    /// Why it stopped early, when it did.
    pub reason: Option<String>,
    /// How long the run took.
    pub duration_ns: u64,
    /// Attempts started, measured or not.
    pub attempted: u64,
    /// Attempts that failed.
    pub errors: u64,
}

/// Why a sink could not take a record, and what the user can do about it; with the error
/// that caused it (the database's, the system's), when there is one, kept as its
/// [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct SinkError {
    /// What failed.
    pub message: String,
    /// What the user can do about it.
    pub hint: String,
    /// The error under it, its source: a `caused by:` line.
    source: Option<Cause>,
}

crate::causes::message_hint_cause!(SinkError);

/// Where records go: the results store, or anything else that wants them. A producer calls
/// `begin` once, `record` for each record, `flush` when nothing arrived for a while, and
/// `finish` once at the end, also after an interruption.
pub trait Sink: Send {
    /// The run begins; called once, first.
    fn begin(&mut self, info: &RunInfo) -> Result<(), SinkError>;
    /// Takes one record; records arrive in the order they were made.
    fn record(&mut self, record: Record) -> Result<(), SinkError>;
    /// Called when no record arrived for a while: a chance to commit a partial batch.
    fn flush(&mut self) -> Result<(), SinkError>;
    /// The run ended; called once, last, also after an interruption.
    fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError>;
}

/// A boxed sink is a sink, so that a producer can take whichever one the command line chose
/// (a store, a store behind telemetry, nothing) and still hand it to a
/// [`SinkThread`](crate::SinkThread).
impl<T: Sink + ?Sized> Sink for Box<T> {
    fn begin(&mut self, info: &RunInfo) -> Result<(), SinkError> {
        (**self).begin(info)
    }
    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        (**self).record(record)
    }
    fn flush(&mut self) -> Result<(), SinkError> {
        (**self).flush()
    }
    fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
        (**self).finish(end)
    }
}

/// Resource usage of a process: CPU time since it started, peak memory since the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// CPU time in user mode, nanoseconds.
    pub user_ns: u64,
    /// CPU time in the kernel, nanoseconds.
    pub system_ns: u64,
    /// The largest resident set, bytes.
    pub peak_rss_bytes: u64,
}

impl Usage {
    /// User and kernel CPU time together.
    pub fn cpu_ns(&self) -> u64 {
        self.user_ns + self.system_ns
    }

    /// CPU used between `earlier` and `self`; the peak is `self`'s.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            system_ns: self.system_ns.saturating_sub(earlier.system_ns),
            peak_rss_bytes: self.peak_rss_bytes,
        }
    }
}

/// What a reader of the results needs to know about where they were measured: tool and
/// library versions, machine, kernel, network. Stored as JSON with the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// tlslab's version.
    pub tool_version: String,
    /// The git commit it was built from, when known.
    pub commit: String,
    /// The rustls the binary links.
    pub rustls_version: String,
    /// rustls' cryptography provider (aws-lc-rs).
    pub crypto_provider: String,
    /// The linked OpenSSL (`OpenSSL 4.0.3 …`); absent from runs stored before the OpenSSL
    /// backend existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openssl_version: Option<String>,
    /// The CPU, as /proc/cpuinfo names it.
    pub cpu_model: String,
    /// Cores the run could use.
    pub cores: usize,
    /// The kernel's release.
    pub kernel: String,
    /// The machine's name.
    pub hostname: String,
    /// How the client reached the server (loopback, an emulated link, a route).
    pub network: String,
    /// How each target name was resolved (name, addresses, the one used, the resolver);
    /// empty for the lab server and for runs stored before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub name_resolution: Vec<crate::NameResolution>,
    /// What timed the wire events of tlslab's own client (measurement rule 12): the
    /// kernel's socket timestamps, or the user-space clock and why; absent from runs stored
    /// before it was recorded, and from captures (their times are the packets').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_clock: Option<String>,
}

impl Environment {
    /// Every field as a name and a value for people, in alphabetical order of the names (the
    /// order reports have always listed them in).
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        let mut entries = vec![
            ("commit", self.commit.clone()),
            ("cores", self.cores.to_string()),
            ("cpu_model", self.cpu_model.clone()),
            ("crypto_provider", self.crypto_provider.clone()),
            ("hostname", self.hostname.clone()),
            ("kernel", self.kernel.clone()),
        ];
        if !self.name_resolution.is_empty() {
            let resolutions: Vec<String> = self
                .name_resolution
                .iter()
                .map(ToString::to_string)
                .collect();
            entries.push(("name_resolution", resolutions.join("; ")));
        }
        entries.push(("network", self.network.clone()));
        if let Some(openssl) = &self.openssl_version {
            entries.push(("openssl_version", openssl.clone()));
        }
        entries.extend([
            ("rustls_version", self.rustls_version.clone()),
            ("tool_version", self.tool_version.clone()),
        ]);
        if let Some(clock) = &self.wire_clock {
            entries.push(("wire_clock", clock.clone()));
        }
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment() -> Environment {
        Environment {
            tool_version: "0.1.0".into(),
            commit: "abc".into(),
            rustls_version: "0.23.46".into(),
            crypto_provider: "aws-lc-rs".into(),
            openssl_version: Some("OpenSSL 4.0.3".into()),
            cpu_model: "a CPU".into(),
            cores: 2,
            kernel: "6.1".into(),
            hostname: "lab".into(),
            network: "loopback".into(),
            name_resolution: vec![crate::NameResolution {
                name: "localhost:8443".into(),
                addresses: vec![
                    "[::1]:8443".parse().unwrap(),
                    "127.0.0.1:8443".parse().unwrap(),
                ],
                used: "[::1]:8443".parse().unwrap(),
                resolver: "getaddrinfo".into(),
                mode: crate::DnsMode::PerAttempt,
            }],
            wire_clock: Some("kernel socket timestamps".into()),
        }
    }

    #[test]
    fn environment_entries_are_alphabetical_and_round_trip_through_json() {
        let environment = environment();
        let names: Vec<&str> = environment
            .entries()
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(names.len(), 12);
        assert!(environment.entries().contains(&(
            "name_resolution",
            "localhost:8443 -> ::1, 127.0.0.1 (used ::1; getaddrinfo; per-attempt)".to_string()
        )));
        let json = serde_json::to_string(&environment).unwrap();
        assert_eq!(
            serde_json::from_str::<Environment>(&json).unwrap(),
            environment
        );
        // Runs stored before the OpenSSL backend have no openssl_version.
        let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
        old.as_object_mut().unwrap().remove("openssl_version");
        old.as_object_mut().unwrap().remove("name_resolution");
        old.as_object_mut().unwrap().remove("wire_clock");
        let old: Environment = serde_json::from_value(old).unwrap();
        assert_eq!(old.openssl_version, None);
        assert_eq!(old.wire_clock, None);
        assert!(old.name_resolution.is_empty());
        assert!(!old
            .entries()
            .iter()
            .any(|(name, _)| *name == "openssl_version"));
    }

    #[test]
    fn usage_since_subtracts_cpu_and_keeps_the_later_peak() {
        let earlier = Usage {
            user_ns: 10,
            system_ns: 5,
            peak_rss_bytes: 100,
        };
        let later = Usage {
            user_ns: 25,
            system_ns: 6,
            peak_rss_bytes: 80,
        };
        let spent = later.since(&earlier);
        assert_eq!(spent.cpu_ns(), 16);
        assert_eq!(spent.peak_rss_bytes, 80);
        assert_eq!(earlier.since(&later).cpu_ns(), 0);
    }
}
