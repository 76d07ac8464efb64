//! The run's lab servers: one child process per distinct [`ServerKey`] among the Configs,
//! each with the root its clients trust.

use std::collections::HashMap;
use std::path::Path;

use std::sync::Arc;

use rustls_pki_types::CertificateDer;
use tlslab_backend::ClientCertificate;
use tlslab_core::{CertProfile, Config, ServerKey};
use tlslab_pki::Pki;

use crate::error::RunError;
use crate::lab::LabServer;
use crate::stop::Stop;

/// The lab servers of a run, stopped when dropped.
#[derive(Default)]
pub struct LabServers {
    servers: HashMap<ServerKey, LabServer>,
    roots: HashMap<ServerKey, CertificateDer<'static>>,
    /// The lab client certificates `--mtls on` Configs present, by profile.
    client_certificates: HashMap<CertProfile, Arc<ClientCertificate>>,
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
                    format!(
                        "cannot prepare the {} certificate chain: {error}{}",
                        key.cert,
                        tlslab_core::Causes(&error)
                    ),
                    format!(
                        "check that {} is writable, or set TLSLAB_PKI_DIR",
                        pki.dir().display()
                    ),
                )
            })?;
            servers.roots.insert(key, chain.root.clone());
            if let Some(profile) = key.client_certificates {
                servers.prepare_client_certificate(pki, profile)?;
            }
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

    /// Issues (or reads) the lab client certificate of `profile` before the server that
    /// requires it starts, so the server finds its root and the clients their certificate.
    fn prepare_client_certificate(
        &mut self,
        pki: &Pki,
        profile: CertProfile,
    ) -> Result<(), RunError> {
        if self.client_certificates.contains_key(&profile) {
            return Ok(());
        }
        let client = pki.client_certificate(profile).map_err(|error| {
            RunError::environment(
                format!(
                    "cannot prepare the {profile} lab client certificate: {error}{}",
                    tlslab_core::Causes(&error)
                ),
                format!(
                    "check that {} is writable, or set TLSLAB_PKI_DIR",
                    pki.dir().display()
                ),
            )
        })?;
        self.client_certificates.insert(
            profile,
            Arc::new(ClientCertificate {
                chain: vec![client.certificate],
                key: client.private_key,
            }),
        );
        Ok(())
    }

    /// The lab client certificate `config` presents (`--mtls on`); `None` when its lab
    /// server asks for none, or for a target.
    pub fn client_certificate(&self, config: &Config) -> Option<Arc<ClientCertificate>> {
        self.client_certificates
            .get(&config.server_key()?.client_certificates?)
            .cloned()
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
