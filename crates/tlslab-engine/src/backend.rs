//! The client of one Config in the TLS library the Config names, behind one interface, so
//! the run loop does not care which library measures.

use std::time::Duration;

use tlslab_core::{Backend, Config, Event, Transport};
use tlslab_openssl::Suite;
use tlslab_tls::{
    AgentSession, Attempt, Client, ClientSettings, EchMode, Failure, QuicAttemptOptions, Trust,
};

/// One Config's client.
pub(crate) enum ConfigClient {
    Rustls(Client),
    Openssl(tlslab_openssl::Client),
}

/// One agent's sessions with a [`ConfigClient`].
#[derive(Clone)]
pub(crate) enum Agent {
    Rustls(AgentSession),
    Openssl(tlslab_openssl::AgentSession),
}

impl ConfigClient {
    /// The client `config` asks for, reaching `server_name` with `trust`, offering `ech`.
    pub(crate) fn new(
        config: &Config,
        server_name: String,
        trust: Trust,
        ech: EchMode,
    ) -> Result<ConfigClient, String> {
        let settings = ClientSettings {
            version: config.version,
            cipher: config.suite.cipher,
            group: config.group,
            server_name,
            trust,
            resume: config.resume,
            early_data: config.early_data,
            cert_cache: config.cert_cache,
            transport: config.transport,
            http: config.http,
            path: config.path.clone(),
            ech,
        };
        match config.client_backend {
            Backend::Rustls => Client::new(&settings).map(ConfigClient::Rustls),
            Backend::Openssl => {
                let mut options = tlslab_openssl::ClientOptions::from_settings(&settings);
                if let Some(legacy) = config.suite.legacy {
                    options.suite = Suite::Legacy(legacy);
                }
                tlslab_openssl::Client::new(&options).map(ConfigClient::Openssl)
            }
        }
    }

    pub(crate) fn agent_session(&self) -> Agent {
        match self {
            ConfigClient::Rustls(client) => Agent::Rustls(client.agent_session()),
            ConfigClient::Openssl(client) => Agent::Openssl(client.agent_session()),
        }
    }

    /// One attempt: connect (TCP) or open a QUIC connection to `address`, handshake, the
    /// optional request, the ticket of a resuming Config, close.
    pub(crate) async fn attempt(
        &self,
        config: &Config,
        agent: &Agent,
        attempt: &mut Attempt,
        address: std::net::SocketAddr,
    ) -> Result<(), Failure> {
        if config.transport == Transport::Quic {
            let (ConfigClient::Rustls(client), Agent::Rustls(session)) = (self, agent) else {
                unreachable!("QUIC Configs run on rustls (rejected otherwise when expanded)")
            };
            let options = QuicAttemptOptions {
                capture: attempt.captured.is_some(),
                ticket_deadline: attempt.origin + config.timeout / 2,
            };
            return client
                .quic_attempt(session, attempt, address, options)
                .await;
        }
        let stream = tlslab_net::connect(address, config.close)
            .await
            .map_err(|error| Failure::new(tlslab_net::classify(&error), error.to_string()))?;
        attempt.mark(Event::TcpConnected);
        // Waiting for the ticket happens after the handshake and is not part of it; it never
        // takes more than half the attempt's time limit, so it cannot turn into a timeout.
        let patience = |attempt: &Attempt| -> Option<Duration> {
            config
                .resumes()
                .then(|| attempt.ticket_patience().min(config.timeout / 2))
        };
        match (self, agent) {
            (ConfigClient::Rustls(client), Agent::Rustls(session)) => {
                let mut established = client.handshake(session, attempt, stream).await?;
                established.exchange(attempt).await?;
                if let Some(patience) = patience(attempt) {
                    established.await_ticket(attempt, patience).await;
                }
                established.close(config.close).await;
            }
            (ConfigClient::Openssl(client), Agent::Openssl(session)) => {
                let mut established = client.handshake(session, attempt, stream).await?;
                established.exchange(attempt).await?;
                if let Some(patience) = patience(attempt) {
                    established.await_ticket(patience).await;
                }
                established.close(config.close).await;
            }
            _ => unreachable!("an agent's session comes from its Config's client"),
        }
        Ok(())
    }
}
