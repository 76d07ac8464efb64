//! Each Config's client in the library it names, behind the trial loop's [`Connector`], so
//! the loop does not care which library measures.

use std::net::SocketAddr;
use std::sync::Arc;

use tlslab_backend::{attempt_over_tcp, Attempt, ClientSettings, Failure};
use tlslab_core::{Backend, Config, ErrorClass, Event, Transport};
use tlslab_tls::QuicAttemptOptions;

use crate::error::RunError;
use crate::routes::Route;
use crate::transport::connect;
use crate::trials::Connector;

/// One Config's client, and where it goes.
pub struct ConfigClient {
    config: Arc<Config>,
    address: SocketAddr,
    library: Library,
}

enum Library {
    Rustls(tlslab_tls::Client),
    Openssl(tlslab_openssl::Client),
}

/// One agent's sessions with a [`ConfigClient`].
#[derive(Clone)]
pub enum Agent {
    Rustls(tlslab_tls::AgentSession),
    Openssl(tlslab_openssl::AgentSession),
}

impl ConfigClient {
    /// The client `config` asks for, on `route`.
    pub fn new(
        config: &Config,
        route: Route,
        key_log: Option<Arc<tlslab_backend::KeyLogFile>>,
    ) -> Result<ConfigClient, RunError> {
        let mut settings =
            ClientSettings::for_config(config, route.server_name, route.trust, route.ech);
        settings.key_log = key_log;
        let cannot = |error: &dyn std::fmt::Display, hint: &str| {
            RunError::environment(
                format!("cannot set up the client for '{}': {error}", config.label),
                hint,
            )
        };
        let library = match config.client_backend {
            Backend::Rustls => tlslab_tls::Client::new(&settings)
                .map(Library::Rustls)
                .map_err(|error| cannot(&error, error.hint()))?,
            Backend::Openssl => tlslab_openssl::Client::new(&settings)
                .map(Library::Openssl)
                .map_err(|error| cannot(&error, error.hint()))?,
        };
        Ok(ConfigClient {
            config: Arc::new(config.clone()),
            address: route.address,
            library,
        })
    }
}

impl Connector for ConfigClient {
    type Agent = Agent;

    fn agent(&self) -> Agent {
        match &self.library {
            Library::Rustls(client) => Agent::Rustls(client.agent_session()),
            Library::Openssl(client) => Agent::Openssl(client.agent_session()),
        }
    }

    /// Connect (TCP) or open a QUIC connection, handshake, the optional request, the ticket
    /// of a resuming Config, close. Waiting for the ticket happens after the handshake and is
    /// not part of it; it never takes more than half the attempt's time limit, so it cannot
    /// turn into a timeout.
    async fn attempt(&self, agent: &Agent, attempt: &mut Attempt) -> Result<(), Failure> {
        let config = &self.config;
        let ticket_limit = config.timeout / 2;
        if config.transport == Transport::Quic {
            let (Library::Rustls(client), Agent::Rustls(session)) = (&self.library, agent) else {
                return Err(another_library());
            };
            let options = QuicAttemptOptions {
                capture: attempt.captured.is_some(),
                ticket_deadline: attempt.origin + ticket_limit,
            };
            return client
                .quic_attempt(session, attempt, self.address, options)
                .await;
        }
        let stream = connect(self.address, config.close)
            .await
            .map_err(|error| Failure::io(&error))?;
        attempt.mark(Event::TcpConnected);
        match (&self.library, agent) {
            (Library::Rustls(client), Agent::Rustls(session)) => {
                attempt_over_tcp(client, session, attempt, stream, config.close, ticket_limit).await
            }
            (Library::Openssl(client), Agent::Openssl(session)) => {
                attempt_over_tcp(client, session, attempt, stream, config.close, ticket_limit).await
            }
            _ => Err(another_library()),
        }
    }
}

/// An agent's sessions come from its Config's client, so this cannot happen; it is a failed
/// attempt rather than a crash if it ever does.
fn another_library() -> Failure {
    Failure::new(
        ErrorClass::Local,
        "an agent of another library's client (a tlslab bug)",
    )
}
