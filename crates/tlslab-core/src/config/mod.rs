//! [`Config`]: one labelled point of the matrix. `validate.rs` checks an experiment's
//! run-level values, `rules.rs` decides which combinations of dimension values can run, and
//! `expand.rs` turns the experiment into labelled Configs.

mod expand;
mod rules;
mod validate;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub(crate) use expand::is_dimension_key;
pub use expand::{expand, expand_explicit, expand_matrix_and_tables};

use crate::causes::Cause;
use crate::dimension::{
    Backend, CertProfile, CloseMode, DnsMode, Ech, Group, Http, Resume, Scheme, SuiteSpec,
    TlsVersion, Transport,
};
use crate::network::Network;

/// Where the handshakes go.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Endpoint {
    /// The embedded lab server, started by tlslab with this certificate profile and chain.
    Lab {
        /// The certificate profile the lab server presents.
        cert: CertProfile,
        /// How many certificates it sends.
        chain: u8,
    },
    /// An external server.
    Target {
        /// `host:port`, as given.
        address: String,
        /// The server name sent, and the one its certificate must carry.
        sni: String,
        /// Roots to trust instead of the system's (`--ca`).
        ca: Option<PathBuf>,
        /// The certificate the client presents when the server asks for one (mutual TLS).
        client_identity: Option<ClientIdentity>,
    },
}

/// The PEM files of the certificate chain and private key a client presents when the server
/// asks for a certificate (`--client-cert`, `--client-key`). Paths only: the engine reads
/// them before the run, so an unreadable or mismatched pair stops it before the first attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ClientIdentity {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The leaf's private key.
    pub key: PathBuf,
}

/// Everything needed to run one kind of handshake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Position in the matrix; also the Config's id in the store.
    pub index: usize,
    /// The name reports use for it: the values that set it apart, or the user's.
    pub label: String,
    /// The one TLS version offered.
    pub version: TlsVersion,
    /// The cipher suite offered.
    pub suite: SuiteSpec,
    /// The key exchange group offered.
    pub group: Group,
    /// Where the handshakes go.
    pub endpoint: Endpoint,
    /// Agents making attempts at once.
    pub concurrency: u32,
    /// Attempts per second on a schedule (open loop); `None` in a closed loop.
    pub arrival_rate: Option<f64>,
    /// The measured time this Config's schedule runs for (`--duration`, a ramp's steps
    /// share it); `None` when `handshakes` counts instead.
    #[serde(skip)]
    pub arrival_time: Option<Duration>,
    /// Fresh handshakes, or resumption by ticket or session ID.
    pub resume: Resume,
    /// Bytes of TLS 1.3 early data (0-RTT) on resumed handshakes; 0 sends none.
    pub early_data: u64,
    /// The client skips re-verifying chains it already verified.
    pub cert_cache: bool,
    /// The client's first key share is for another group: the server asks again.
    pub hello_retry: bool,
    /// Mutual TLS with the lab server: it requires a client certificate, and the client
    /// presents the lab client certificate of this profile; `None` when it asks for none.
    pub mtls: Option<CertProfile>,
    /// An agent keeps its connection for its next request (HTTP/1.1 keep-alive).
    pub keep_alive: bool,
    /// HTTP over TLS, or plain HTTP.
    pub scheme: Scheme,
    /// TCP or QUIC.
    pub transport: Transport,
    /// The request after the handshake, if any.
    pub http: Http,
    /// The request's path.
    pub path: String,
    /// Page mode: the resources each attempt loads after the document at `path`.
    pub page: Option<crate::Page>,
    /// Certificates go unverified (`--insecure`).
    pub insecure: bool,
    /// Public keys the server's certificate must carry (`--pin`).
    pub pins: Option<crate::Pins>,
    /// The TLS library of the client.
    pub client_backend: Backend,
    /// The TLS library of the lab server; `None` for an external target.
    pub server_backend: Option<Backend>,
    /// Encrypted ClientHello.
    pub ech: Ech,
    /// How connections end: a reset, or close_notify and FIN.
    pub close: CloseMode,
    /// When the target's name is resolved: once per run, or before each attempt (`dns`).
    pub dns: DnsMode,
    #[serde(skip)]
    /// One attempt's time limit.
    pub timeout: Duration,
    /// The emulated link, or `None` for plain loopback (or the real network to a target).
    pub network: Option<Network>,
    /// Body bytes of the lab server's responses.
    #[serde(skip)]
    pub body: u64,
    /// A target's ECHConfigList (`--ech-config`), decoded; a lab server announces its own.
    #[serde(skip)]
    pub ech_config: Option<Vec<u8>>,
    /// The public name in the ECH configuration of an OpenSSL lab server.
    #[serde(skip)]
    pub ech_public_name: String,
}

impl Config {
    /// Whether an agent carries something from one attempt to its next: a kept connection,
    /// or a session to resume (its first handshake is full, the rest resume).
    pub fn agents_keep_state(&self) -> bool {
        self.keep_alive || self.resume != Resume::Off
    }

    /// The Config as the store keeps it; `address` is where its handshakes went, `emulator`
    /// what carried its emulated link.
    pub fn record(&self, address: String, emulator: Option<String>) -> crate::ConfigRecord {
        let (cert, chain, target, sni) = match &self.endpoint {
            Endpoint::Lab { cert, chain } => {
                (Some(cert.as_str().to_string()), Some(*chain), None, None)
            }
            Endpoint::Target { address, sni, .. } => {
                (None, None, Some(address.clone()), Some(sni.clone()))
            }
        };
        crate::ConfigRecord {
            index: self.index,
            label: self.label.clone(),
            version: self.version.as_str().to_string(),
            suite: self.suite.name.clone(),
            group: self.group.as_str().to_string(),
            cert,
            chain,
            target,
            sni,
            address,
            concurrency: Some(self.concurrency),
            arrival_rate: self.arrival_rate,
            resumption: self.resume.as_str().to_string(),
            early_data_bytes: self.early_data,
            cert_cache: self.cert_cache,
            hello_retry: self.hello_retry,
            mtls: self.mtls.is_some(),
            client_cert_profile: self.mtls.map(|profile| profile.as_str().to_string()),
            keep_alive: self.keep_alive,
            scheme: self.scheme.as_str().to_string(),
            page: self.page.as_ref().map(ToString::to_string),
            trust: Some(self.trust()),
            insecure: self.insecure,
            transport: self.transport.as_str().to_string(),
            http: self.http.as_str().to_string(),
            path: (self.http != Http::None).then(|| self.path.clone()),
            client_backend: Some(self.client_backend.as_str().to_string()),
            server_backend: self
                .server_backend
                .map(|backend| backend.as_str().to_string()),
            ech: self.ech.as_str().to_string(),
            network: self.network,
            emulator: self.network.and(emulator),
            capture_point: None,
            description: serde_json::to_string(self).unwrap_or_else(|_| "null".into()),
        }
    }

    /// What the client trusts, in words: the lab root, a CA file, the system roots or
    /// nothing (`--insecure`), with ` + pin` under `--pin` and ` + client certificate` with
    /// `--client-cert`.
    pub fn trust(&self) -> String {
        if self.scheme == Scheme::Http {
            return "plain HTTP (no TLS)".to_string();
        }
        let base = match (&self.endpoint, self.insecure) {
            (_, true) => "insecure",
            (Endpoint::Lab { .. }, false) => "lab root",
            (Endpoint::Target { ca: Some(_), .. }, false) => "CA file",
            (Endpoint::Target { ca: None, .. }, false) => "system roots",
        };
        let mut trust = base.to_string();
        if self.pins.is_some() {
            trust.push_str(" + pin");
        }
        // What the client proves belongs beside what it checks: a run against a server that
        // requires client certificates reads differently from one that does not.
        if self.mtls.is_some()
            || matches!(
                self.endpoint,
                Endpoint::Target {
                    client_identity: Some(_),
                    ..
                }
            )
        {
            trust.push_str(" + client certificate");
        }
        trust
    }

    /// The certificate profile when the endpoint is the lab server.
    pub fn cert(&self) -> Option<CertProfile> {
        match self.endpoint {
            Endpoint::Lab { cert, .. } => Some(cert),
            Endpoint::Target { .. } => None,
        }
    }

    /// Whether the Config resumes sessions after each agent's first handshake.
    pub fn resumes(&self) -> bool {
        self.resume != Resume::Off
    }

    /// The server-side part of a lab Config: Configs that share it share one lab server.
    pub fn server_key(&self) -> Option<ServerKey> {
        let resumption = match (self.resume, self.early_data > 0) {
            (Resume::Off, _) => ServerResumption::Off,
            // 0-RTT needs single-use tickets, which only a stateful cache can enforce (rustls
            // refuses early data on stateless tickets for that reason).
            (Resume::Tickets, false) => ServerResumption::Tickets,
            (Resume::Tickets, true) | (Resume::SessionId, _) => ServerResumption::Cache,
        };
        match self.endpoint {
            Endpoint::Lab { cert, chain } => Some(ServerKey {
                backend: self.server_backend.unwrap_or(Backend::Rustls),
                cert,
                chain,
                resumption,
                early_data: self.early_data > 0,
                body: self.body,
                client_certificates: self.mtls,
            }),
            Endpoint::Target { .. } => None,
        }
    }
}

/// How a lab server lets clients resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerResumption {
    /// No tickets, no cache: fresh-handshake measurements hold no ticket-issuing work.
    Off,
    /// Stateless encrypted tickets (TLS 1.2 RFC 5077 tickets and TLS 1.3 tickets).
    Tickets,
    /// A server-side session cache: TLS 1.2 session IDs, and TLS 1.3 tickets that name a cache
    /// entry and are removed when used, so each is accepted once (0-RTT anti-replay).
    Cache,
}

impl ServerResumption {
    /// The mode's spelling in the store and the lab server's options.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerResumption::Off => "off",
            ServerResumption::Tickets => "tickets",
            ServerResumption::Cache => "cache",
        }
    }

    /// The mode a spelling names, if any.
    pub fn parse(text: &str) -> Option<ServerResumption> {
        [
            ServerResumption::Off,
            ServerResumption::Tickets,
            ServerResumption::Cache,
        ]
        .into_iter()
        .find(|mode| mode.as_str() == text)
    }
}

/// What distinguishes one lab server instance from another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerKey {
    /// The TLS library serving.
    pub backend: Backend,
    /// The certificate profile it presents.
    pub cert: CertProfile,
    /// How many certificates it sends.
    pub chain: u8,
    /// Tickets or a session cache only when the Config resumes (docs/architecture.md, "Lab
    /// server"), so fresh handshakes do not pay for tickets nobody uses.
    pub resumption: ServerResumption,
    /// Accept TLS 1.3 early data.
    pub early_data: bool,
    /// Bytes of the body every HTTP response carries.
    pub body: u64,
    /// Mutual TLS: the server requires a client certificate issued by the lab root of this
    /// profile; `None` asks for none.
    pub client_certificates: Option<CertProfile>,
}

/// Why an experiment cannot run as written, and what to change; with the error that caused
/// it, when there is one (a threshold or pin that does not parse, a table that does not
/// read), kept as its [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct ConfigError {
    /// What cannot run, naming the value.
    pub message: String,
    /// What to give instead.
    pub hint: String,
    /// The error under it, its source: a `caused by:` line.
    source: Option<Cause>,
}

crate::causes::message_hint_cause!(ConfigError);

impl ConfigError {
    /// The same error told in `message` (its context added), its hint and cause kept.
    pub fn reworded(self, message: impl Into<String>) -> ConfigError {
        ConfigError {
            message: message.into(),
            ..self
        }
    }
}

pub(crate) fn error(message: impl Into<String>, hint: impl Into<String>) -> ConfigError {
    ConfigError::new(message, hint)
}

/// The host part of `host:port` (IPv6 literals in brackets), or `None` when malformed.
pub fn target_host(address: &str) -> Option<&str> {
    let (host, port) = address.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    // No host name or address holds white space: `a b:1` is a typing mistake (exit 2), not
    // a name to look up, as `tlslab scan` judges it.
    (!host.is_empty() && !host.contains(char::is_whitespace)).then_some(host)
}

/// The most handshakes (measured, and warm-up) per Config: beyond this a run would outlast
/// any machine, and counts would approach the store's integer range.
pub const MAX_HANDSHAKES: u64 = 1_000_000_000_000;

/// The most agents per Config: each holds a socket and a task, so memory and file
/// descriptors bound them.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The longest emulated round trip or jitter.
pub const MAX_EMULATED_DELAY: Duration = Duration::from_secs(60);

/// The most trials a plan holds: the plan is laid out before the run, one entry per block.
pub const MAX_TRIALS: usize = 1_000_000;

/// The largest response body the lab server sends.
pub const MAX_BODY: u64 = 64 << 20;

/// The largest early data a Config may send: rustls' default limit for a server that accepts
/// early data over TCP.
pub const MAX_EARLY_DATA: u64 = 16_384;
