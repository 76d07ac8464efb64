//! The run's lab servers: one child process per distinct [`ServerKey`] among the Configs,
//! each with the root its clients trust.

use std::collections::HashMap;
use std::path::Path;

use rustls_pki_types::CertificateDer;
use tlslab_core::{Config, ServerKey};
use tlslab_pki::Pki;

use crate::error::RunError;
use crate::lab::LabServer;
use crate::stop::Stop;

/// The lab servers of a run, stopped when dropped.
#[derive(Default)]
pub struct LabServers {
    servers: HashMap<ServerKey, LabServer>,
    roots: HashMap<ServerKey, CertificateDer<'static>>,
    /// Requested when any of them exits during the run (the run's halt).
    exited: Stop,
}

impl LabServers {
    /// Prepares each distinct server's certificate chain and starts it (`program serve
    /// --control`), inside the server namespace of `network` when there is one; `exited` is
    /// requested if one exits during the run.
    pub fn start(
        configs: &[Config],
        program: &Path,
        pki: &Pki,
        network: Option<&tlslab_emulation::Network>,
        exited: Stop,
    ) -> Result<LabServers, RunError> {
        let mut servers = LabServers {
            exited,
            ..LabServers::default()
        };
        for config in configs {
            let Some(key) = config.server_key() else {
                continue;
            };
            if servers.servers.contains_key(&key) {
                continue;
            }
            let chain = pki.chain(key.cert, key.chain).map_err(|error| {
                RunError::environment(
                    format!("cannot prepare the {} certificate chain: {error}", key.cert),
                    format!(
                        "check that {} is writable, or set TLSLAB_PKI_DIR",
                        pki.dir().display()
                    ),
                )
            })?;
            servers.roots.insert(key, chain.root.clone());
            let server = LabServer::spawn(
                program,
                pki.dir(),
                key,
                &config.ech_public_name,
                network,
                servers.exited.clone(),
            )?;
            servers.servers.insert(key, server);
        }
        Ok(servers)
    }

    /// Why the run cannot go on, when a lab server exited.
    pub fn failure(&mut self) -> Option<RunError> {
        if !self.exited.is_requested() {
            return None;
        }
        self.servers.values_mut().find_map(LabServer::failure)
    }

    /// The lab server of `config`; `None` for a target.
    pub fn of(&mut self, config: &Config) -> Option<&mut LabServer> {
        self.servers.get_mut(&config.server_key()?)
    }

    /// The lab server of `config`, to read its address and ECH configuration.
    pub fn get(&self, config: &Config) -> Option<&LabServer> {
        self.servers.get(&config.server_key()?)
    }

    /// The root that `config`'s lab server's chain ends in.
    pub fn root(&self, config: &Config) -> Option<&CertificateDer<'static>> {
        self.roots.get(&config.server_key()?)
    }
}
