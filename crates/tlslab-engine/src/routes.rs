//! Where each Config's handshakes go, and what its client trusts and offers: the lab
//! server's address and root, or a target's resolved (or `--resolve`-pinned) address and
//! `--ca` (through the emulated link when there is one), and the ECH configuration to offer;
//! with `--dns per-attempt`, the lookup each attempt makes.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use std::sync::Arc;

use tlslab_backend::{ClientCertificate, EchMode, Trust};
use tlslab_core::{
    ClientIdentity, Config, DnsMode, Ech, Endpoint, Experiment, NameResolution, PinnedAddress,
    Scheme,
};

use crate::error::RunError;
use crate::network::{EmulatedNetwork, ExternalServer};
use crate::servers::LabServers;
use crate::transport::{list, resolve_all, system_resolver, Lookup};

/// Where one Config's handshakes go, and how its client reaches the server.
#[derive(Debug, Clone)]
pub struct Route {
    /// Where every attempt connects with `--dns once`; with `per-attempt`, where the lookup
    /// before the run pointed (the stored Config's address).
    pub address: SocketAddr,
    /// The name's other addresses, in the resolver's order: where an attempt goes when
    /// `address` refuses or does not answer (`transport::connect_first`); empty for the lab
    /// server, an address literal, and on the emulated link (which routes one address).
    pub fallbacks: Vec<SocketAddr>,
    /// `--dns per-attempt`: the lookup each attempt makes before it connects.
    pub lookup: Option<Lookup>,
    pub server_name: String,
    pub trust: Trust,
    pub ech: EchMode,
    /// `--client-cert` and `--client-key`, read once for every Config of the target.
    pub client_certificate: Option<Arc<ClientCertificate>>,
}

/// The `--resolve` pin that answers for `target` (`host:port`), if any.
fn pinned<'a>(target: &str, pins: &'a [PinnedAddress]) -> Option<&'a PinnedAddress> {
    let host = tlslab_core::config::target_host(target)?;
    let port = target.rsplit_once(':')?.1.parse::<u16>().ok()?;
    pins.iter().find(|pin| pin.answers(host, port))
}

/// Every address `target` stands for, and who said so: its `--resolve` pin, itself (an
/// address literal), or the system's resolver.
async fn look_up(
    target: &str,
    pins: &[PinnedAddress],
) -> std::io::Result<(Vec<SocketAddr>, String)> {
    if let Some(pin) = pinned(target, pins) {
        return Ok((
            pin.socket_addresses(),
            format!("--resolve {pin} (no query)"),
        ));
    }
    let literal =
        tlslab_core::config::target_host(target).is_some_and(|host| host.parse::<IpAddr>().is_ok());
    let addresses = resolve_all(target).await?;
    let resolver = if literal {
        "none: an address literal".to_string()
    } else {
        system_resolver()
    };
    Ok((addresses, resolver))
}

/// Resolves every target name once, before the run (with `--dns once` the run times no DNS
/// lookups), records what each resolution found, and routes it through the emulated link
/// when there is one.
struct Resolver<'a> {
    runtime: &'a tokio::runtime::Runtime,
    emulated: Option<&'a EmulatedNetwork>,
    pins: &'a [PinnedAddress],
    /// Each target's addresses as attempts reach them, the first preferred.
    resolved: HashMap<String, Vec<SocketAddr>>,
    resolutions: Vec<NameResolution>,
    /// Client certificates already read: every Config of a target shares one.
    client_certificates: HashMap<ClientIdentity, Arc<ClientCertificate>>,
}

impl Resolver<'_> {
    /// `--client-cert` and `--client-key`, read and checked once; a pair that cannot be used
    /// is the user's input, so the run stops before its first attempt.
    fn client_certificate(
        &mut self,
        identity: &ClientIdentity,
    ) -> Result<Arc<ClientCertificate>, RunError> {
        if let Some(loaded) = self.client_certificates.get(identity) {
            return Ok(loaded.clone());
        }
        let credentials = tlslab_pki::load_client_credentials(&identity.cert, &identity.key)
            .map_err(|error| {
                RunError::configuration(
                    format!("{}{}", error.message(), tlslab_core::Causes(&error)),
                    error.hint(),
                )
            })?;
        let loaded = Arc::new(ClientCertificate {
            chain: credentials.chain,
            key: credentials.key,
        });
        self.client_certificates
            .insert(identity.clone(), loaded.clone());
        Ok(loaded)
    }

    /// Through the emulated link, when there is one.
    fn reach(&self, address: SocketAddr) -> Result<SocketAddr, RunError> {
        match self.emulated {
            Some(emulated) => Ok(emulated.network.route(address)?),
            None => Ok(address),
        }
    }

    /// `target`'s addresses, the first preferred, the others its fallbacks.
    fn target(&mut self, target: &str, mode: DnsMode) -> Result<Vec<SocketAddr>, RunError> {
        if let Some(addresses) = self.resolved.get(target) {
            return Ok(addresses.clone());
        }
        let (addresses, resolver) =
            self.runtime
                .block_on(look_up(target, self.pins))
                .map_err(|error| {
                    // The target's form was checked with the experiment: a name that does
                    // not resolve is this machine's name service's answer, an environment
                    // problem (exit 3), as `tlslab scan` says of the same name.
                    RunError::environment(
                        format!("cannot resolve target '{target}'"),
                        "check the host name, pin its address (--resolve HOST:PORT:ADDRESS), or \
                     give an IP address: --target 127.0.0.1:8443",
                    )
                    .because(error)
                })?;
        // The first address is preferred (the environment records it as used); the others
        // are fallbacks for attempts it refuses, in the resolver's order (which already
        // follows RFC 6724's preferences, as RFC 8305 asks). The emulated link routes one
        // address, so there the first is all.
        let used = addresses[0];
        let reached = match self.emulated {
            Some(_) => vec![self.reach(used)?],
            None => addresses.clone(),
        };
        self.resolutions.push(NameResolution {
            name: target.to_string(),
            addresses,
            used,
            resolver,
            mode,
        });
        self.resolved.insert(target.to_string(), reached.clone());
        Ok(reached)
    }

    /// `--dns per-attempt` against the lab server: each attempt looks up `localhost`, the
    /// name the lab server's certificate carries, which must lead to the address the lab
    /// server listens on (checked here once, so a machine where it does not fails before the
    /// run instead of on every attempt).
    fn lab(&mut self, address: SocketAddr) -> Result<Lookup, RunError> {
        let name = format!("localhost:{}", address.port());
        let lookup = Lookup {
            name: name.clone(),
            pinned: None,
            required: Some(address),
        };
        if !self.resolved.contains_key(&name) {
            let addresses = self.runtime.block_on(resolve_all(&name)).map_err(|error| {
                RunError::environment(
                    "--dns per-attempt looks the lab server up as 'localhost', which does not resolve",
                    "add '127.0.0.1 localhost' to /etc/hosts, or use --dns once",
                )
                .because(error)
            })?;
            if !addresses.contains(&address) {
                return Err(RunError::environment(
                    format!(
                        "--dns per-attempt looks the lab server up as 'localhost', which resolves to {}, not to the lab server's {address}",
                        list(&addresses)
                    ),
                    "add '127.0.0.1 localhost' to /etc/hosts, or use --dns once",
                ));
            }
            self.resolutions.push(NameResolution {
                name: name.clone(),
                addresses,
                used: address,
                resolver: format!("{}, for the lab server's name", system_resolver()),
                mode: DnsMode::PerAttempt,
            });
            self.resolved.insert(name, vec![address]);
        }
        Ok(lookup)
    }
}

/// `--server-cmd`: the user's server, started where the lab server would run; the target
/// names its port (and, without emulation, its host). Its address is then the target's.
pub fn start_external_server(
    experiment: &Experiment,
    runtime: &tokio::runtime::Runtime,
    emulated: Option<&EmulatedNetwork>,
) -> Result<Option<(ExternalServer, String, SocketAddr)>, RunError> {
    let (Some(command), Some(target)) = (&experiment.server_cmd, &experiment.target) else {
        return Ok(None);
    };
    let given = runtime
        .block_on(look_up(target, &experiment.resolve))
        .map_err(|error| {
            RunError::environment(
                format!("cannot resolve target '{target}'"),
                "with --server-cmd, give the port the server listens on: --target 127.0.0.1:8443",
            )
            .because(error)
        })?;
    let given = given.0[0];
    let listening = match emulated {
        Some(emulated) => SocketAddr::new(emulated.network.server_ip(), given.port()),
        None => given,
    };
    let server = ExternalServer::start(command, listening, emulated)?;
    let reach = match emulated {
        Some(emulated) => emulated.network.route(listening)?,
        None => listening,
    };
    Ok(Some((server, target.clone(), reach)))
}

/// The route of every Config, in order, and what resolving their names found (for the
/// run's environment). `external` is the address of a `--server-cmd` server under its target
/// name; `pins` are the `--resolve` pins.
pub fn routes(
    configs: &[Config],
    servers: &LabServers,
    runtime: &tokio::runtime::Runtime,
    emulated: Option<&EmulatedNetwork>,
    external: Option<(&str, SocketAddr)>,
    pins: &[PinnedAddress],
) -> Result<(Vec<Route>, Vec<NameResolution>), RunError> {
    let mut resolver = Resolver {
        runtime,
        emulated,
        pins,
        resolved: external
            .map(|(target, address)| (target.to_string(), vec![address]))
            .into_iter()
            .collect(),
        resolutions: Vec::new(),
        client_certificates: HashMap::new(),
    };
    let routes = configs
        .iter()
        .map(|config| route(config, servers, &mut resolver))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((routes, resolver.resolutions))
}

fn route(
    config: &Config,
    servers: &LabServers,
    resolver: &mut Resolver<'_>,
) -> Result<Route, RunError> {
    let per_attempt = config.dns == DnsMode::PerAttempt;
    let (addresses, lookup, server_name, trust, client_certificate) = match &config.endpoint {
        Endpoint::Lab { .. } => {
            let (Some(server), Some(root)) = (servers.get(config), servers.root(config)) else {
                return Err(RunError::environment(
                    format!("no lab server was started for '{}'", config.label),
                    "report this as a bug",
                ));
            };
            // Plain HTTP goes to the same lab server's plain port.
            let address = match (config.scheme, server.plain_address) {
                (Scheme::Https, _) => server.address,
                (Scheme::Http, Some(plain)) => plain,
                (Scheme::Http, None) => {
                    return Err(RunError::environment(
                        format!("the lab server of '{}' serves no plain HTTP", config.label),
                        "report this as a bug",
                    ))
                }
            };
            let lookup = per_attempt.then(|| resolver.lab(address)).transpose()?;
            (
                vec![resolver.reach(address)?],
                lookup,
                "localhost".to_string(),
                Trust::Roots(vec![root.clone()]),
                servers.client_certificate(config),
            )
        }
        Endpoint::Target {
            address: target,
            sni,
            ca,
            client_identity,
        } => {
            let addresses = resolver.target(target, config.dns)?;
            // Core rejects per-attempt lookups on the emulated link, so the address an
            // attempt resolves is the one it connects to.
            let lookup = per_attempt.then(|| Lookup {
                name: target.clone(),
                pinned: pinned(target, resolver.pins).map(PinnedAddress::socket_addresses),
                required: None,
            });
            let trust = match ca {
                Some(ca) => Trust::Roots(tlslab_pki::load_certificates(ca).map_err(|error| {
                    RunError::configuration(
                        format!("cannot use --ca {}", ca.display()),
                        "give a PEM file with the CA certificate(s) that issued the server's chain",
                    )
                    .because(error)
                })?),
                None => Trust::System,
            };
            let client_certificate = client_identity
                .as_ref()
                .map(|identity| resolver.client_certificate(identity))
                .transpose()?;
            (addresses, lookup, sni.clone(), trust, client_certificate)
        }
    };
    let Some((&address, fallbacks)) = addresses.split_first() else {
        return Err(RunError::environment(
            format!("no address for '{}'", config.label),
            "report this as a bug",
        ));
    };
    Ok(Route {
        address,
        fallbacks: fallbacks.to_vec(),
        lookup,
        server_name,
        trust: if config.insecure {
            Trust::Insecure
        } else {
            trust
        },
        ech: ech_mode(config, servers)?,
        client_certificate,
    })
}

/// The ECH a Config's client offers: its lab server's configuration, or the target's from
/// `--ech-config`.
fn ech_mode(config: &Config, servers: &LabServers) -> Result<EchMode, RunError> {
    match config.ech {
        Ech::Off => Ok(EchMode::Off),
        Ech::Grease => Ok(EchMode::Grease),
        Ech::On => {
            let list = match servers.get(config) {
                Some(server) => server.ech_config.clone(),
                None => config.ech_config.clone(),
            };
            list.map(EchMode::On).ok_or_else(|| {
                RunError::environment(
                    format!(
                        "the lab server of '{}' offers no ECH configuration",
                        config.label
                    ),
                    "ECH needs the OpenSSL lab server: --server-backend openssl",
                )
            })
        }
    }
}
