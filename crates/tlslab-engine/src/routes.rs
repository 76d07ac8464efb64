//! Where each Config's handshakes go, and what its client trusts and offers: the lab
//! server's address and root, or a target's resolved address and `--ca` (through the
//! emulated link when there is one), and the ECH configuration to offer.

use std::collections::HashMap;
use std::net::SocketAddr;

use tlslab_backend::{EchMode, Trust};
use tlslab_core::{Config, Ech, Endpoint, Experiment, Scheme};

use crate::error::RunError;
use crate::network::{EmulatedNetwork, ExternalServer};
use crate::servers::LabServers;
use crate::transport::resolve;

/// Where one Config's handshakes go, and how its client reaches the server.
#[derive(Debug, Clone)]
pub struct Route {
    pub address: SocketAddr,
    pub server_name: String,
    pub trust: Trust,
    pub ech: EchMode,
}

/// Resolves every target name once (the run times no DNS lookups) and routes it through the
/// emulated link when there is one.
struct Resolver<'a> {
    runtime: &'a tokio::runtime::Runtime,
    emulated: Option<&'a EmulatedNetwork>,
    resolved: HashMap<String, SocketAddr>,
}

impl Resolver<'_> {
    /// Through the emulated link, when there is one.
    fn reach(&self, address: SocketAddr) -> Result<SocketAddr, RunError> {
        match self.emulated {
            Some(emulated) => Ok(emulated.network.route(address)?),
            None => Ok(address),
        }
    }

    fn target(&mut self, target: &str) -> Result<SocketAddr, RunError> {
        if let Some(address) = self.resolved.get(target) {
            return Ok(*address);
        }
        let resolved = self.runtime.block_on(resolve(target)).map_err(|error| {
            RunError::configuration(
                format!("cannot resolve target '{target}': {error}"),
                "check the host name, or give an IP address: --target 127.0.0.1:8443",
            )
        })?;
        let reached = self.reach(resolved)?;
        self.resolved.insert(target.to_string(), reached);
        Ok(reached)
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
    let given = runtime.block_on(resolve(target)).map_err(|error| {
        RunError::configuration(
            format!("cannot resolve target '{target}': {error}"),
            "with --server-cmd, give the port the server listens on: --target 127.0.0.1:8443",
        )
    })?;
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

/// The route of every Config, in order. `external` is the address of a `--server-cmd`
/// server under its target name.
pub fn routes(
    configs: &[Config],
    servers: &LabServers,
    runtime: &tokio::runtime::Runtime,
    emulated: Option<&EmulatedNetwork>,
    external: Option<(&str, SocketAddr)>,
) -> Result<Vec<Route>, RunError> {
    let mut resolver = Resolver {
        runtime,
        emulated,
        resolved: external
            .map(|(target, address)| (target.to_string(), address))
            .into_iter()
            .collect(),
    };
    configs
        .iter()
        .map(|config| route(config, servers, &mut resolver))
        .collect()
}

fn route(
    config: &Config,
    servers: &LabServers,
    resolver: &mut Resolver<'_>,
) -> Result<Route, RunError> {
    let (address, server_name, trust) = match &config.endpoint {
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
            (
                resolver.reach(address)?,
                "localhost".to_string(),
                Trust::Roots(vec![root.clone()]),
            )
        }
        Endpoint::Target { address, sni, ca } => {
            let address = resolver.target(address)?;
            let trust = match ca {
                Some(ca) => Trust::Roots(tlslab_pki::load_certificates(ca).map_err(|error| {
                    RunError::configuration(
                        format!("cannot use --ca {}: {error}", ca.display()),
                        "give a PEM file with the CA certificate(s) that issued the server's chain",
                    )
                })?),
                None => Trust::System,
            };
            (address, sni.clone(), trust)
        }
    };
    Ok(Route {
        address,
        server_name,
        trust: if config.insecure {
            Trust::Insecure
        } else {
            trust
        },
        ech: ech_mode(config, servers)?,
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
