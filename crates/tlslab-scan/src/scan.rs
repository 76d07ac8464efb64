//! The scan: which probes, in which order, and what their answers mean.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use tls_parser::{TlsCipherAu, TlsCipherKx, TlsCipherSuite};

use crate::certificate::{self, Certificates, KeyKind, TrustAnchors, Wanted};
use crate::grade::{self, Grade};
use crate::hello::{
    group_name, groups, legacy_suites, suite_name, ClientHello, Version, TLS13_SUITES,
};
use crate::mozilla::{self, ProfileResult};
use crate::probe::{Answer, ProbeError, Prober, ServerHello};

/// What to scan: a host and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host name or IP address, resolved once per scan.
    pub host: String,
    /// The port; 443 when not given.
    pub port: u16,
}

impl Target {
    /// `HOST`, `HOST:PORT`, `[V6]:PORT` or a bare IPv6 address; the port defaults to 443.
    pub fn parse(text: &str) -> Result<Target, ScanError> {
        let invalid = || ScanError::Target {
            text: text.to_string(),
        };
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(invalid)?;
            match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => return Err(invalid()),
            }
        } else if text.matches(':').count() > 1 {
            (text, None)
        } else {
            match text.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            }
        };
        let port = match port {
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|port| *port > 0)
                .ok_or_else(invalid)?,
            None => 443,
        };
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(invalid());
        }
        Ok(Target {
            host: host.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(formatter, "[{}]:{}", self.host, self.port)
        } else {
            write!(formatter, "{}:{}", self.host, self.port)
        }
    }
}

/// How to scan.
#[derive(Debug, Clone)]
pub struct Options {
    /// The name sent as SNI and checked against the certificate; the host when `None`.
    pub server_name: Option<String>,
    /// Connections open to the target at once.
    pub concurrency: usize,
    /// Per probe: connecting, and waiting for each answer.
    pub timeout: Duration,
    /// What the certificate chain is judged by (`--ca`); the system's roots when `None`.
    pub trust_anchors: Option<TrustAnchors>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            server_name: None,
            concurrency: 4,
            timeout: Duration::from_secs(5),
            trust_anchors: None,
        }
    }
}

/// A scan that could not be made at all (one probe failing is not this). What failed
/// underneath (the resolver, the socket, the PEM or X.509 reader) is kept as the
/// [`source`](std::error::Error::source); [`ScanError::hint`] says what to do and
/// [`ScanError::kind`] whose problem it is, which decides the exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// The target as written is not `HOST[:PORT]`.
    #[error("{text:?} is not HOST[:PORT]")]
    Target {
        /// What was given.
        text: String,
    },
    /// The `--ca` file cannot be read.
    #[error("cannot read --ca {}", path.display())]
    TrustFile {
        /// The file given.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The `--ca` file is not PEM.
    #[error("--ca {}: not PEM", path.display())]
    TrustPem {
        /// The file given.
        path: PathBuf,
        /// What the PEM reader said.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The `--ca` file holds no certificate: trusting nothing would grade every server T
    /// for a typing mistake.
    #[error("--ca {}: no CERTIFICATE in it", path.display())]
    TrustEmpty {
        /// The file given.
        path: PathBuf,
    },
    /// A certificate in the `--ca` file is not X.509.
    #[error("--ca {}: certificate {number} does not parse", path.display())]
    TrustCertificate {
        /// The file given.
        path: PathBuf,
        /// Which certificate, counting from 1.
        number: usize,
        /// What the X.509 reader said.
        #[source]
        source: x509_parser::error::X509Error,
    },
    /// The host name does not resolve.
    #[error("cannot resolve {host}")]
    Resolve {
        /// The host name.
        host: String,
        /// What the resolver said.
        #[source]
        source: std::io::Error,
    },
    /// The host name resolves to no address at all.
    #[error("cannot resolve {host}: no address")]
    NoAddress {
        /// The host name.
        host: String,
    },
    /// The first plain connection failed: nothing to probe.
    #[error("cannot connect to {target} ({address})")]
    Unreachable {
        /// The target as written.
        target: String,
        /// The address it resolved to.
        address: SocketAddr,
        /// Why the connection failed (boxed: a ScanError travels in every Result of a scan
        /// and of the workflows around it, and a probe's error is the largest part).
        #[source]
        source: Box<ProbeError>,
    },
    /// Every probe was answered with something that is not TLS.
    #[error("{target} ({address}) does not speak TLS")]
    NotTls {
        /// The target as written.
        target: String,
        /// The address it resolved to.
        address: SocketAddr,
    },
    /// Every probe was answered with a handshake that does not parse: nothing can be graded.
    #[error("{target} ({address}) answered every ClientHello with a malformed handshake ({why})")]
    Malformed {
        /// The target as written.
        target: String,
        /// The address it resolved to.
        address: SocketAddr,
        /// The first malformed answer, as "version: what is wrong" (a boxed str: see
        /// `Unreachable`).
        why: Box<str>,
    },
    /// No version from SSL 3.0 to TLS 1.3 was accepted.
    #[error("{target} ({address}) accepted no version from SSL 3.0 to TLS 1.3{failed}")]
    NoVersion {
        /// The target as written.
        target: String,
        /// The address it resolved to.
        address: SocketAddr,
        /// Which probes failed, as "; N of M probes failed (...)", or empty.
        failed: Box<str>,
    },
}

/// Whose problem a [`ScanError`] is, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanErrorKind {
    /// The target as written cannot be scanned (not HOST[:PORT]), or `--ca` is unusable.
    Usage,
    /// The target does not resolve, does not answer, or does not speak TLS.
    Environment,
}

impl ScanError {
    /// Whose problem this is: the user's words or the network and the server.
    pub fn kind(&self) -> ScanErrorKind {
        match self {
            ScanError::Target { .. }
            | ScanError::TrustFile { .. }
            | ScanError::TrustPem { .. }
            | ScanError::TrustEmpty { .. }
            | ScanError::TrustCertificate { .. } => ScanErrorKind::Usage,
            _ => ScanErrorKind::Environment,
        }
    }

    /// What the user can do about it, in words.
    pub fn hint(&self) -> &'static str {
        match self {
            ScanError::Target { .. } => {
                "for example example.com, example.com:8443, 127.0.0.1:443 or [::1]:443"
            }
            ScanError::TrustFile { .. }
            | ScanError::TrustPem { .. }
            | ScanError::TrustEmpty { .. }
            | ScanError::TrustCertificate { .. } => {
                "give a PEM file with one or more CERTIFICATE blocks (a CA's root, or the server's own self-signed certificate)"
            }
            ScanError::Resolve { .. } | ScanError::NoAddress { .. } => {
                "check the host name (and DNS on this machine)"
            }
            ScanError::Unreachable { source, .. } => match **source {
                ProbeError::Refused => "nothing listens on that port; check the host and port",
                ProbeError::Timeout => {
                    "no answer: a firewall, a wrong address, or --timeout too short"
                }
                _ => "check that the host is reachable from here",
            },
            ScanError::NotTls { .. } => {
                "is this a plain-text port (HTTP, SMTP before STARTTLS)? tlslab scan needs a port that starts with TLS"
            }
            ScanError::Malformed { .. } => {
                "the server, or something in front of it, breaks TLS: `tlslab run --target` against it fails with not_tls too; scan the server behind it, or report the bug to its vendor"
            }
            ScanError::NoVersion { .. } => {
                "check --sni (a server may refuse an unknown name) and --timeout"
            }
        }
    }
}

/// Whose preference decides among what both sides support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The server picks its favourite whatever the client's order: the list is its order.
    Server,
    /// The server takes the client's first acceptable choice.
    Client,
    /// Neither consistently (for instance, ChaCha20 first only for clients that prefer it).
    Mixed,
    /// One choice: there is no order to tell.
    Single,
    /// A probe failed before the order was told (the list may be incomplete too).
    Unknown,
}

impl Order {
    /// The order in words, as the text report prints it.
    pub fn describe(self) -> &'static str {
        match self {
            Order::Server => "server order",
            Order::Client => "client order",
            Order::Mixed => "mixed order",
            Order::Single => "one choice",
            Order::Unknown => "order unknown: a probe failed",
        }
    }
}

/// One supported version and its suites.
#[derive(Debug, Clone, Serialize)]
pub struct VersionSupport {
    /// The version's name (`TLS 1.2`).
    pub version: String,
    /// IANA names; in the server's order when `order` is `server`.
    pub suites: Vec<String>,
    /// Whose preference decides among its suites.
    pub order: Order,
    /// False when a probe failed before the server declined: more suites may be supported.
    pub complete: bool,
    /// The finite-field group of each DHE suite, from its ServerKeyExchange (TLS 1.2 and
    /// older; TLS 1.3's finite-field groups are in `groups_tls13`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dhe: Vec<DheParameters>,
    /// The version, for the grade and Mozilla's verdict (not in the JSON, which has `version`).
    #[serde(skip)]
    pub protocol: Option<Version>,
    /// The suites by code point, in the order of `suites`, for the grade's tables.
    #[serde(skip)]
    pub suite_ids: Vec<u16>,
}

/// The Diffie-Hellman group a DHE suite used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DheParameters {
    /// The suite's IANA name.
    pub suite: String,
    /// The suite's code point, to match it with its version's suites.
    #[serde(skip)]
    pub suite_id: u16,
    /// The prime's size in bits (2048 for ffdhe2048).
    pub bits: u32,
    /// The RFC 7919 name when the prime is one of its groups (`ffdhe2048`); `None` for a
    /// custom prime (an `openssl dhparam` file, or a server's built-in one).
    pub group: Option<String>,
}

impl DheParameters {
    fn of(suite_id: u16, prime: &[u8]) -> DheParameters {
        let bits = prime.first().map_or(0, |top| {
            (prime.len() as u32 - 1) * 8 + (8 - top.leading_zeros())
        });
        // RFC 7919's groups (their generator is 2: the prime alone identifies one).
        use rustls::ffdhe_groups::{FFDHE2048, FFDHE3072, FFDHE4096, FFDHE6144, FFDHE8192};
        let named = [
            (FFDHE2048, 0x0100),
            (FFDHE3072, 0x0101),
            (FFDHE4096, 0x0102),
            (FFDHE6144, 0x0103),
            (FFDHE8192, 0x0104),
        ];
        let group = named
            .iter()
            .find(|(group, _)| group.p == prime)
            .map(|(_, code_point)| group_name(*code_point));
        DheParameters {
            suite: suite_name(suite_id),
            suite_id,
            bits,
            group,
        }
    }
}

/// The groups one version's key exchange accepts.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSupport {
    /// The groups, by the names tlslab's `--group` takes, in the server's order when it has one.
    pub groups: Vec<String>,
    /// Whose preference decides among them.
    pub order: Order,
    /// False when a probe failed before the server declined: more groups may be supported.
    pub complete: bool,
    /// The groups by code point, for the grade's and Mozilla's tables.
    #[serde(skip)]
    pub group_ids: Vec<u16>,
}

/// Everything a scan found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The target as given (host:port).
    pub target: String,
    /// The address it resolved to: a scan measures one server, whatever the name resolves to
    /// later.
    pub address: String,
    /// The server name sent.
    pub server_name: Option<String>,
    /// Every version the scan asked about, supported or not, oldest first.
    pub versions_offered: Vec<String>,
    /// The supported versions, newest first, each with its suites.
    pub versions: Vec<VersionSupport>,
    /// Versions whose probe failed (see `probe_errors`): neither supported nor refused as
    /// far as the scan can tell.
    pub versions_unknown: Vec<String>,
    /// TLS 1.3's groups; `None` when the server does not speak TLS 1.3.
    pub groups_tls13: Option<GroupSupport>,
    /// TLS 1.2's ECDHE curves; `None` when the server does not speak TLS 1.2.
    pub groups_tls12: Option<GroupSupport>,
    /// Whether the newest pre-1.3 version's ServerHello answered the renegotiation_info we
    /// always send (RFC 5746); `None` for a TLS 1.3-only server (1.3 has no renegotiation).
    pub secure_renegotiation: Option<bool>,
    /// ALPN protocols the server selected when offered alone (read from a TLS 1.2 or older
    /// ServerHello, or from a rustls TLS 1.3 handshake when the server speaks only 1.3);
    /// `None` when no probe could ask.
    pub alpn: Option<Vec<String>>,
    /// The certificate chains, their trust and name match, and HSTS.
    pub certificates: Certificates,
    /// Each level of each Mozilla guideline, judged; empty when answers did not parse.
    pub mozilla: Vec<ProfileResult>,
    /// The grade, in the manner of SSL Labs' rating guide.
    pub grade: Grade,
    /// Connections the scan opened, so a server operator can tell a scan from an attack.
    pub connections: u64,
    /// How long the scan took, wall clock.
    pub seconds: f64,
    /// Probes that got no answer (timeouts, resets) or one that could not be read, as
    /// "what: why"; the scan went on.
    pub probe_errors: Vec<String>,
    /// Of those, probes whose answer was not TLS or did not parse (a ServerHello whose
    /// extensions run past its end). A scan with any is not graded and not judged by
    /// Mozilla's levels: what it found may be what a broken server happened to send.
    pub malformed_answers: u64,
    /// What each supported choice costs ([`crate::cost`]), filled by whoever times them
    /// (the binary, with tlslab's engine); `None` when not timed (`--no-timing`).
    pub timing: Option<crate::cost::Costs>,
}

impl Report {
    /// Whether the server accepted `version`.
    pub fn supports(&self, version: Version) -> bool {
        self.version(version).is_some()
    }

    /// What the server supports in `version`, when it accepts it.
    pub fn version(&self, version: Version) -> Option<&VersionSupport> {
        self.versions
            .iter()
            .find(|support| support.protocol == Some(version))
    }
}

/// Scans one target.
pub fn scan(target: &Target, options: &Options) -> Result<Report, ScanError> {
    let started = Instant::now();
    let address = resolve(target)?;
    let server_name = options
        .server_name
        .clone()
        .unwrap_or_else(|| target.host.clone());
    let prober = Prober::new(
        address,
        Some(server_name.clone()),
        options.timeout,
        options.concurrency,
    );
    // One plain connection first, so an unreachable target is one clear error, not a list
    // of failed probes.
    prober
        .limiter
        .with_permit(|| prober.connect())
        .map_err(|source| ScanError::Unreachable {
            target: target.to_string(),
            address,
            source: Box::new(source),
        })?;
    let answers = VersionAnswers::probe(&prober, target, address)?;
    let supported = &answers.supported;
    let found = Found::probe(&prober, supported);
    let other_flights = found
        .legacy_best
        .and_then(|version| other_flight(&prober, version, &found.versions, &found.flight))
        .into_iter()
        .collect();
    let certificates = certificate::inspect(
        &prober,
        &server_name,
        found.flight,
        other_flights,
        supported.contains(&Version::Tls12) || supported.contains(&Version::Tls13),
        options.trust_anchors.as_ref(),
    );
    let mut report = Report {
        target: target.to_string(),
        address: address.to_string(),
        server_name: prober.server_name.clone(),
        versions_offered: Version::ALL.iter().map(|v| v.name().to_string()).collect(),
        versions: found.versions,
        versions_unknown: answers
            .unknown
            .iter()
            .map(|version| version.name().to_string())
            .collect(),
        groups_tls13: found.groups_tls13,
        groups_tls12: found.groups_tls12,
        secure_renegotiation: answers.secure_renegotiation,
        alpn: found.alpn,
        certificates,
        mozilla: Vec::new(),
        grade: Grade::default(),
        connections: 0,
        seconds: 0.0,
        probe_errors: prober.errors(),
        malformed_answers: prober.malformed_answers(),
        timing: None,
    };
    if report.malformed_answers == 0 {
        report.mozilla = mozilla::check(&report);
        report.grade = grade::grade(&report);
    } else {
        report.grade = Grade::withheld(report.malformed_answers);
    }
    report.connections = prober.limiter.connections();
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What the first probe of each version told: which the server accepts, whether it
/// answers secure renegotiation, and which went unanswered.
struct VersionAnswers {
    supported: Vec<Version>,
    /// In the newest legacy version accepted (TLS 1.3 has no renegotiation).
    secure_renegotiation: Option<bool>,
    /// The versions whose probe failed: neither accepted nor refused.
    unknown: Vec<Version>,
}

impl VersionAnswers {
    /// One ClientHello of each version at once; an error when no answer can be graded.
    fn probe(
        prober: &Prober,
        target: &Target,
        address: SocketAddr,
    ) -> Result<VersionAnswers, ScanError> {
        let answers: Vec<(Version, Result<Answer, ProbeError>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = Version::ALL
                .iter()
                .map(|&version| {
                    let name = prober.server_name.as_deref();
                    scope.spawn(move || {
                        let hello = ClientHello::new(version, offered_suites(version), name);
                        (version, prober.probe(version.name(), &hello, false))
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|handle| handle.join().ok())
                .collect()
        });
        unusable(&answers, target, address)?;
        let supported: Vec<Version> = answers
            .iter()
            .filter(|(version, answer)| {
                matches!(answer, Ok(Answer::Hello(hello)) if hello.version == version.code_point())
            })
            .map(|(version, _)| *version)
            .collect();
        if supported.is_empty() {
            return Err(no_version(&answers, target, address));
        }
        let secure_renegotiation = answers
            .iter()
            .filter(|(version, _)| *version != Version::Tls13 && supported.contains(version))
            .max_by_key(|(version, _)| *version)
            .and_then(|(_, answer)| match answer {
                Ok(Answer::Hello(hello)) => Some(hello.secure_renegotiation),
                _ => None,
            });
        let unknown: Vec<Version> = answers
            .iter()
            .filter(|(_, answer)| answer.is_err())
            .map(|(version, _)| *version)
            .collect();
        Ok(VersionAnswers {
            supported,
            secure_renegotiation,
            unknown,
        })
    }
}

/// An error when every version's answer was not TLS, or TLS records whose handshake does
/// not parse: nothing can be graded.
fn unusable(
    answers: &[(Version, Result<Answer, ProbeError>)],
    target: &Target,
    address: SocketAddr,
) -> Result<(), ScanError> {
    if answers
        .iter()
        .all(|(_, answer)| matches!(answer, Err(ProbeError::NotTls)))
    {
        return Err(ScanError::NotTls {
            target: target.to_string(),
            address,
        });
    }
    if answers
        .iter()
        .all(|(_, answer)| matches!(answer, Err(error) if error.is_malformed()))
    {
        let why = answers
            .iter()
            .find_map(|(version, answer)| match answer {
                Err(error @ ProbeError::Malformed(_)) => {
                    Some(format!("{}: {error}", version.name()))
                }
                _ => None,
            })
            .unwrap_or_default();
        return Err(ScanError::Malformed {
            target: target.to_string(),
            address,
            why: why.into(),
        });
    }
    Ok(())
}

/// The error when no version was accepted, naming the probes that failed.
fn no_version(
    answers: &[(Version, Result<Answer, ProbeError>)],
    target: &Target,
    address: SocketAddr,
) -> ScanError {
    let failed: Vec<String> = answers
        .iter()
        .filter_map(|(version, answer)| {
            answer
                .as_ref()
                .err()
                .map(|error| format!("{}: {}", version.name(), error.in_one_line()))
        })
        .collect();
    ScanError::NoVersion {
        target: target.to_string(),
        address,
        failed: match failed.len() {
            0 => "".into(),
            count if count == answers.len() => ": every probe failed".into(),
            count => format!(
                "; {count} of {} probes failed ({})",
                answers.len(),
                failed.join("; ")
            )
            .into(),
        },
    }
}

/// What the probes after the versions found: suites per version, groups, ALPN and the
/// certificate flight.
struct Found {
    versions: Vec<VersionSupport>,
    groups_tls13: Option<GroupSupport>,
    groups_tls12: Option<GroupSupport>,
    alpn: Option<Vec<String>>,
    /// The certificate flight of the newest legacy version.
    flight: Vec<Vec<u8>>,
    /// The newest version before TLS 1.3 the server accepts (its flight is in the clear).
    legacy_best: Option<Version>,
}

impl Found {
    /// All at once: the limiter keeps the connections to the target bounded.
    fn probe(prober: &Prober, supported: &[Version]) -> Found {
        let legacy_best = supported
            .iter()
            .copied()
            .filter(|version| *version != Version::Tls13)
            .max();
        let mut found = std::thread::scope(|scope| {
            let suite_handles: Vec<_> = supported
                .iter()
                .map(|&version| scope.spawn(move || suites_of(prober, version)))
                .collect();
            let tls13 = supported
                .contains(&Version::Tls13)
                .then(|| scope.spawn(move || tls13_groups(prober)));
            let tls12 = supported
                .contains(&Version::Tls12)
                .then(|| scope.spawn(move || tls12_groups(prober)));
            let alpn = match legacy_best {
                Some(version) => Some(scope.spawn(move || alpn_of(prober, version))),
                None if supported.contains(&Version::Tls13) => {
                    Some(scope.spawn(move || alpn_tls13(prober)))
                }
                None => None,
            };
            let flight =
                legacy_best.map(|version| scope.spawn(move || certificate_flight(prober, version)));
            Found {
                versions: suite_handles
                    .into_iter()
                    .filter_map(|handle| handle.join().ok())
                    .collect::<Vec<_>>(),
                groups_tls13: tls13.and_then(|handle| handle.join().ok()),
                groups_tls12: tls12.and_then(|handle| handle.join().ok()),
                alpn: alpn.and_then(|handle| handle.join().ok()).flatten(),
                flight: flight
                    .and_then(|handle| handle.join().ok())
                    .unwrap_or_default(),
                legacy_best,
            }
        });
        found
            .versions
            .sort_by_key(|support| std::cmp::Reverse(support.protocol));
        found
    }
}

fn resolve(target: &Target) -> Result<SocketAddr, ScanError> {
    (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|source| ScanError::Resolve {
            host: target.host.clone(),
            source,
        })?
        .next()
        .ok_or_else(|| ScanError::NoAddress {
            host: target.host.clone(),
        })
}

fn offered_suites(version: Version) -> Vec<u16> {
    if version == Version::Tls13 {
        TLS13_SUITES.to_vec()
    } else {
        legacy_suites()
    }
}

/// What one probe of an enumeration learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// The server chose this one of the offer.
    Chosen(u16),
    /// It declined the whole offer (an alert, a close, another version or a choice outside
    /// the offer: a misbehaving server cannot keep a loop going).
    Declined,
    /// The probe failed (noted in the prober's errors): nothing was learnt, not a refusal.
    Failed,
}

/// The server's choice among `offered` ([`Pick`]).
fn choice(
    prober: &Prober,
    what: &str,
    hello: &ClientHello,
    flight: bool,
    version: Version,
    pick: impl Fn(&ServerHello) -> Option<u16>,
    offered: &[u16],
) -> Pick {
    match prober.probe(what, hello, flight) {
        Ok(Answer::Hello(answer)) if answer.version == version.code_point() => pick(&answer)
            .filter(|chosen| offered.contains(chosen))
            .map_or(Pick::Declined, Pick::Chosen),
        Ok(_) => Pick::Declined,
        Err(_) => Pick::Failed,
    }
}

/// What an enumeration found: the accepted candidates in discovery order, whose order the
/// server follows, and whether it ended on the server's refusal (`false`: on a failed probe,
/// so more may be accepted).
#[derive(Debug, PartialEq, Eq)]
struct Enumeration {
    accepted: Vec<u16>,
    order: Order,
    complete: bool,
}

/// Every candidate the server accepts and its order: offer the remaining candidates, take
/// the server's pick out, ask again until it declines. A server that follows its own order
/// picks its favourite of the remaining set each time, so the discovery order is its order;
/// one offer of the accepted set reversed then tells whose order it follows.
fn enumerate(candidates: &[u16], ask: impl Fn(&[u16]) -> Pick) -> Enumeration {
    let mut remaining = candidates.to_vec();
    let mut accepted = Vec::new();
    let mut complete = true;
    while !remaining.is_empty() {
        match ask(&remaining) {
            Pick::Chosen(chosen) => {
                remaining.retain(|candidate| *candidate != chosen);
                accepted.push(chosen);
            }
            Pick::Declined => break,
            Pick::Failed => {
                complete = false;
                break;
            }
        }
    }
    let order = match accepted.as_slice() {
        // "One choice" would be a finding the scan did not make.
        _ if !complete => Order::Unknown,
        [] | [_] => Order::Single,
        [first, .., last] => {
            let reversed: Vec<u16> = accepted.iter().rev().copied().collect();
            match ask(&reversed) {
                Pick::Chosen(chosen) if chosen == *first => Order::Server,
                // Taking the client's first may be a rule for that one choice (OpenSSL's
                // ChaCha20 priority, on by default in haproxy): ask once more with it last.
                Pick::Chosen(chosen) if chosen == *last => {
                    let mut rotated = reversed.clone();
                    rotated.rotate_left(1);
                    match ask(&rotated) {
                        Pick::Chosen(chosen) if Some(&chosen) == rotated.first() => Order::Client,
                        Pick::Failed => Order::Unknown,
                        _ => Order::Mixed,
                    }
                }
                Pick::Failed => Order::Unknown,
                _ => Order::Mixed,
            }
        }
    };
    Enumeration {
        accepted,
        order,
        complete,
    }
}

fn suites_of(prober: &Prober, version: Version) -> VersionSupport {
    let name = prober.server_name.as_deref();
    let what = format!("{} suites", version.name());
    // Before TLS 1.3 the whole first flight is in the clear: reading it to ServerHelloDone
    // costs no connection and gives each DHE suite's group (its ServerKeyExchange).
    let flight = version != Version::Tls13;
    let dhe = Mutex::new(Vec::new());
    let found = enumerate(&offered_suites(version), |offer| {
        let hello = ClientHello::new(version, offer.to_vec(), name);
        match prober.probe(&what, &hello, flight) {
            Ok(Answer::Hello(answer))
                if answer.version == version.code_point() && offer.contains(&answer.suite) =>
            {
                if let Some(prime) = &answer.dh_prime {
                    let mut dhe = dhe.lock().unwrap_or_else(|poison| poison.into_inner());
                    if !dhe
                        .iter()
                        .any(|known: &DheParameters| known.suite_id == answer.suite)
                    {
                        dhe.push(DheParameters::of(answer.suite, prime));
                    }
                }
                Pick::Chosen(answer.suite)
            }
            Ok(_) => Pick::Declined,
            Err(_) => Pick::Failed,
        }
    });
    let suite_ids = found.accepted;
    let mut dhe = dhe
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner());
    dhe.sort_by_key(|parameters| {
        suite_ids
            .iter()
            .position(|id| *id == parameters.suite_id)
            .unwrap_or(usize::MAX)
    });
    VersionSupport {
        version: version.name().into(),
        suites: suite_ids.iter().map(|id| suite_name(*id)).collect(),
        order: found.order,
        complete: found.complete,
        dhe,
        protocol: Some(version),
        suite_ids,
    }
}

fn group_support(found: Enumeration) -> GroupSupport {
    GroupSupport {
        groups: found.accepted.iter().map(|id| group_name(*id)).collect(),
        order: found.order,
        complete: found.complete,
        group_ids: found.accepted,
    }
}

/// TLS 1.3 groups: supported_groups lists the remaining groups and key_share is empty, so a
/// server that accepts one must answer with a HelloRetryRequest naming it (RFC 8446, 4.1.4).
/// No key share is ever sent, so none needs to be a valid public key (servers do check:
/// OpenSSL refuses a P-256 share that is not on the curve, and ML-KEM keys are checked).
fn tls13_groups(prober: &Prober) -> GroupSupport {
    let name = prober.server_name.as_deref();
    group_support(enumerate(&groups::TLS13, |offer| {
        let mut hello = ClientHello::new(Version::Tls13, TLS13_SUITES.to_vec(), name);
        hello.groups = offer.to_vec();
        hello.key_shares.clear();
        choice(
            prober,
            "TLS 1.3 groups",
            &hello,
            false,
            Version::Tls13,
            |answer| answer.group,
            offer,
        )
    }))
}

/// TLS 1.2 ECDHE curves: only ECDHE suites offered, the server's curve read from its
/// ServerKeyExchange. In TLS 1.2, supported_groups also limits the curve of an ECDSA
/// certificate (RFC 8422, 5.1), so once enumeration has taken the certificate's curve out of
/// the offer, the server declines every ECDSA suite and the curves after it go unseen. Each
/// curve not found is then offered once more first, ahead of those already accepted: a
/// server that follows the client picks it if it can. (One that enforces its own order picks
/// it only if it prefers it to those; such a curve can still be missed.)
fn tls12_groups(prober: &Prober) -> GroupSupport {
    let name = prober.server_name.as_deref();
    let ecdhe: Vec<u16> = legacy_suites()
        .into_iter()
        .filter(|id| {
            TlsCipherSuite::from_id(*id).is_some_and(|suite| suite.kx == TlsCipherKx::Ecdhe)
        })
        .collect();
    let ask = |offer: &[u16]| {
        let mut hello = ClientHello::new(Version::Tls12, ecdhe.clone(), name);
        hello.groups = offer.to_vec();
        choice(
            prober,
            "TLS 1.2 groups",
            &hello,
            true,
            Version::Tls12,
            |answer| answer.group,
            offer,
        )
    };
    let mut found = enumerate(&groups::TLS12_ECDHE, ask);
    if !found.accepted.is_empty() && found.complete {
        for group in groups::TLS12_ECDHE {
            if found.accepted.contains(&group) {
                continue;
            }
            let offer: Vec<u16> = std::iter::once(group)
                .chain(found.accepted.iter().copied())
                .collect();
            match ask(&offer) {
                Pick::Chosen(chosen) if chosen == group => found.accepted.push(group),
                Pick::Failed => found.complete = false,
                _ => {}
            }
        }
    }
    group_support(found)
}

/// Each protocol offered alone: the ones the server selects. Asked in TLS 1.2 or older,
/// where the ServerHello carries the choice in the clear (TLS 1.3 encrypts it). `None`
/// when a probe failed: "not selected" would be a finding the scan did not make.
fn alpn_of(prober: &Prober, version: Version) -> Option<Vec<String>> {
    let mut selected = Vec::new();
    for protocol in ["h2", "http/1.1"] {
        let mut hello = ClientHello::new(
            version,
            offered_suites(version),
            prober.server_name.as_deref(),
        );
        hello.alpn = vec![protocol.to_string()];
        match prober.probe("ALPN", &hello, false) {
            Ok(Answer::Hello(answer)) if answer.alpn.as_deref() == Some(protocol) => {
                selected.push(protocol.to_string());
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    Some(selected)
}

/// Each protocol offered alone in a TLS 1.3 handshake (a server that speaks only TLS 1.3
/// encrypts its choice, so only a completed handshake reads it). `None` when a handshake
/// failed: the failure is in the prober's errors, and "not selected" would be a finding the
/// scan did not make.
fn alpn_tls13(prober: &Prober) -> Option<Vec<String>> {
    let mut selected = Vec::new();
    let mut answered = true;
    for protocol in ["h2", "http/1.1"] {
        let result = prober
            .limiter
            .with_permit(|| certificate::tls13_alpn(prober, protocol));
        match result {
            Ok(choice) => {
                if choice.as_deref() == Some(protocol) {
                    selected.push(protocol.to_string());
                }
            }
            Err(error) => {
                answered = false;
                prober.note("ALPN (TLS 1.3)", &error);
            }
        }
    }
    answered.then_some(selected)
}

/// The chain as sent in the clear by the newest pre-1.3 version the server supports.
fn certificate_flight(prober: &Prober, version: Version) -> Vec<Vec<u8>> {
    let hello = ClientHello::new(
        version,
        offered_suites(version),
        prober.server_name.as_deref(),
    );
    match prober.probe("certificate", &hello, true) {
        Ok(Answer::Hello(answer)) => answer.certificates,
        _ => Vec::new(),
    }
}

/// The chain for the other key type than `flight`'s leaf, when `version` accepts suites
/// authenticated by it: one probe offering only those (ECDHE-ECDSA, or ECDHE-RSA, DHE-RSA
/// and RSA). A server with one certificate accepts only suites for its key, so this costs
/// a connection only on a server that may have two.
fn other_flight(
    prober: &Prober,
    version: Version,
    versions: &[VersionSupport],
    flight: &[Vec<u8>],
) -> Option<(Wanted, Vec<Vec<u8>>)> {
    let leaf = x509_parser::parse_x509_certificate(flight.first()?).ok()?.1;
    let kind = match leaf.public_key().parsed() {
        Ok(x509_parser::public_key::PublicKey::RSA(_)) => KeyKind::Rsa,
        Ok(x509_parser::public_key::PublicKey::EC(_)) => KeyKind::Ecdsa,
        _ => KeyKind::Other,
    };
    let wanted = Wanted::other_than(kind)?;
    let authentication = match wanted {
        Wanted::Ecdsa => TlsCipherAu::Ecdsa,
        Wanted::Rsa => TlsCipherAu::Rsa,
    };
    let suites: Vec<u16> = versions
        .iter()
        .find(|support| support.protocol == Some(version))?
        .suite_ids
        .iter()
        .copied()
        .filter(|id| TlsCipherSuite::from_id(*id).is_some_and(|suite| suite.au == authentication))
        .collect();
    if suites.is_empty() {
        return None;
    }
    let hello = ClientHello::new(version, suites, prober.server_name.as_deref());
    match prober.probe(&format!("{} certificate", wanted.name()), &hello, true) {
        Ok(Answer::Hello(answer)) => Some((wanted, answer.certificates)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_a_default_port() {
        let parse = |text| {
            Target::parse(text)
                .ok()
                .map(|target| (target.host, target.port))
        };
        assert_eq!(parse("example.com"), Some(("example.com".into(), 443)));
        assert_eq!(parse("127.0.0.1:8443"), Some(("127.0.0.1".into(), 8443)));
        assert_eq!(parse("[::1]:8443"), Some(("::1".into(), 8443)));
        assert_eq!(parse("::1"), Some(("::1".into(), 443)));
        for wrong in ["example.com:0", "example.com:https", ":443"] {
            let error = Target::parse(wrong).err().unwrap();
            assert!(matches!(&error, ScanError::Target { text } if text == wrong));
            assert_eq!(error.kind(), ScanErrorKind::Usage);
        }
    }

    #[test]
    fn enumeration_tells_server_order_from_client_order() {
        let found = |accepted: Vec<u16>, order| Enumeration {
            accepted,
            order,
            complete: true,
        };
        let pick = |chosen: Option<u16>| chosen.map_or(Pick::Declined, Pick::Chosen);
        let server_order = [3u16, 1, 2];
        let server = |offer: &[u16]| pick(server_order.iter().copied().find(|s| offer.contains(s)));
        assert_eq!(
            enumerate(&[1, 2, 3, 4], server),
            found(vec![3, 1, 2], Order::Server)
        );
        let supported = [2u16, 3];
        let client = |offer: &[u16]| pick(offer.iter().copied().find(|s| supported.contains(s)));
        assert_eq!(
            enumerate(&[1, 2, 3, 4], client),
            found(vec![2, 3], Order::Client)
        );
        // Server order, except that a client listing 2 first gets it (ChaCha20 priority).
        let chacha_priority = |offer: &[u16]| {
            if offer.first() == Some(&2) {
                Pick::Chosen(2)
            } else {
                pick(server_order.iter().copied().find(|s| offer.contains(s)))
            }
        };
        assert_eq!(
            enumerate(&[1, 2, 3, 4], chacha_priority),
            found(vec![3, 1, 2], Order::Mixed)
        );
        let none = |_: &[u16]| Pick::Declined;
        assert_eq!(enumerate(&[1, 2], none), found(vec![], Order::Single));
    }

    #[test]
    fn a_failed_probe_ends_an_enumeration_as_incomplete_not_as_a_refusal() {
        // The server accepts 1 and 2, but the second probe fails: one found, no order told.
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let flaky = |offer: &[u16]| match asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
            0 => Pick::Chosen(offer[0]),
            _ => Pick::Failed,
        };
        assert_eq!(
            enumerate(&[1, 2, 3], flaky),
            Enumeration {
                accepted: vec![1],
                order: Order::Unknown,
                complete: false,
            }
        );
        // All found, but the order probe fails: the list is whole, the order unknown.
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let order_fails =
            |offer: &[u16]| match asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
                0 | 1 => Pick::Chosen(offer[0]),
                2 => Pick::Declined,
                _ => Pick::Failed,
            };
        assert_eq!(
            enumerate(&[1, 2, 3], order_fails),
            Enumeration {
                accepted: vec![1, 2],
                order: Order::Unknown,
                complete: true,
            }
        );
    }
}
