//! Each Config's client in the library it names, behind the trial loop's [`Connector`], so
//! the loop does not care which library measures.

use std::net::SocketAddr;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

use tlslab_backend::{
    attempt_over_tcp, exchange, open_over_tcp, Attempt, Channel, Client as _, ClientSettings,
    Failure, PlainChannel, Request,
};
use tlslab_core::{
    Backend, Config, ConnectionUse, ErrorClass, Event, Http, Page, Scheme, Transport,
};

use crate::page::{self, Origin};
use tlslab_tls::QuicAttemptOptions;

use crate::error::RunError;
use crate::routes::Route;
use crate::transport::{connect_first, Lookup};
use crate::trials::Connector;
use tokio::net::TcpStream;

/// One Config's client, and where it goes.
pub struct ConfigClient {
    config: Arc<Config>,
    /// Where it connects: the preferred address first, then the name's other addresses,
    /// tried when the one before refuses or is slow to answer.
    addresses: Vec<SocketAddr>,
    /// `--dns per-attempt`: each attempt looks the server up before it connects.
    lookup: Option<Lookup>,
    library: Library,
    /// The request after the handshake (or, for plain HTTP, alone), if the Config sends one.
    request: Option<Request>,
    /// The server's name: the `Host` of page mode's requests.
    authority: String,
}

enum Library {
    Rustls(tlslab_tls::Client),
    Openssl(tlslab_openssl::Client),
    /// Plain HTTP (`--scheme http`): no TLS library at all.
    Plain,
}

/// One agent's sessions with a [`ConfigClient`], and its kept connection (HTTP keep-alive).
#[derive(Clone)]
pub struct Agent {
    sessions: Sessions,
    /// Shared by the agent's clones, which all belong to one task: never contended, and
    /// never held across an await (the connection is taken out for the request), so a plain
    /// mutex, cheaper than tokio's. Only keep-alive Configs' agents have one: an agent is
    /// made for every concurrent attempt, and the others need none.
    kept: Option<Arc<std::sync::Mutex<Option<Kept>>>>,
}

#[derive(Clone)]
enum Sessions {
    Rustls(tlslab_tls::AgentSession),
    Openssl(tlslab_openssl::AgentSession),
    Plain,
}

/// A connection an agent keeps for its next request, with its number and the requests it
/// has carried.
struct Kept {
    channel: KeptChannel,
    /// The server's address the connection was opened to.
    address: SocketAddr,
    id: u64,
    requests: u32,
}

enum KeptChannel {
    // Boxed: rustls' connection state is a kilobyte, the others a tenth of that.
    Rustls(Box<tlslab_tls::Established>),
    Openssl(tlslab_openssl::Established),
    Plain(PlainChannel),
    /// HTTP/2 over any of them: hyper's client owns the channel.
    Http2(page::Http2Session),
    /// HTTP/3: a QUIC connection, each request a new stream.
    Quic(Box<tlslab_tls::QuicSession>),
}

/// Connections are numbered from 1 in the order they are opened, across the process (one run).
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

fn next_connection() -> u64 {
    CONNECTIONS.fetch_add(1, Ordering::Relaxed) + 1
}

impl Agent {
    /// The connection the agent kept, taken out for a request.
    fn take_kept(&self) -> Option<Kept> {
        let kept = self.kept.as_ref()?;
        kept.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Keeps `connection` for the agent's next request (an agent without keep-alive keeps
    /// nothing).
    fn keep(&self, connection: Kept) {
        if let Some(kept) = &self.kept {
            *kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(connection);
        }
    }
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
        settings.client_certificate = route.client_certificate;
        let cannot = |error: &dyn std::fmt::Display, hint: &str| {
            RunError::environment(
                format!("cannot set up the client for '{}': {error}", config.label),
                hint,
            )
        };
        let library = match (config.scheme, config.client_backend) {
            (Scheme::Http, _) => Library::Plain,
            (Scheme::Https, Backend::Rustls) => tlslab_tls::Client::new(&settings)
                .map(Library::Rustls)
                .map_err(|error| cannot(&tlslab_core::WithCauses(&error), error.hint()))?,
            (Scheme::Https, Backend::Openssl) => tlslab_openssl::Client::new(&settings)
                .map(Library::Openssl)
                .map_err(|error| cannot(&tlslab_core::WithCauses(&error), error.hint()))?,
        };
        Ok(ConfigClient {
            config: Arc::new(config.clone()),
            addresses: std::iter::once(route.address)
                .chain(route.fallbacks)
                .collect(),
            lookup: route.lookup,
            library,
            request: settings.request(),
            authority: settings.server_name.clone(),
        })
    }

    /// The agent's next request on the connection it kept, if it kept one; `None` when it
    /// must open a connection. A connection that failed is not kept, nor one whose request
    /// was cut short (a timeout or a stop drops this future, and the connection with it).
    async fn on_kept(&self, agent: &Agent, attempt: &mut Attempt) -> Option<Result<(), Failure>> {
        let request = self.request.as_ref()?;
        let mut kept = agent.take_kept()?;
        kept.requests = kept.requests.saturating_add(1);
        attempt.without_handshake();
        attempt.peer_address = Some(kept.address);
        attempt.connection = Some(ConnectionUse {
            id: kept.id,
            request: kept.requests,
        });
        let result = match &mut kept.channel {
            KeptChannel::Rustls(channel) => {
                exchange(channel.as_mut(), attempt, request, false).await
            }
            KeptChannel::Openssl(channel) => exchange(channel, attempt, request, false).await,
            KeptChannel::Plain(channel) => exchange(channel, attempt, request, false).await,
            KeptChannel::Http2(session) => self.request_on(session, attempt).await,
            KeptChannel::Quic(session) => session.request(attempt, &request.bytes).await,
        };
        match result {
            Ok(()) => {
                agent.keep(kept);
                Some(Ok(()))
            }
            // The server had closed the connection (a keep-alive limit or timeout): nothing
            // came back, so open a new one for this request (once: the new connection is
            // not a kept one).
            Err(_) if attempt.timeline.get(Event::FirstByte).is_none() => {
                attempt.start_over();
                attempt.peer_address = None;
                None
            }
            Err(failure) => Some(Err(failure)),
        }
    }
}

impl ConfigClient {
    /// Where this attempt may connect, the first preferred: the route's addresses, or, with
    /// `--dns per-attempt`, what the attempt's own lookup returned (`resolved` marks its end:
    /// the `dns` phase). The preferred one is the attempt's `peer_address` until a
    /// connection says which answered.
    async fn addresses(
        &self,
        attempt: &mut Attempt,
    ) -> Result<std::borrow::Cow<'_, [SocketAddr]>, Failure> {
        // Resolved once (the default): the attempt borrows the addresses, allocating nothing.
        let addresses = match &self.lookup {
            None => std::borrow::Cow::Borrowed(self.addresses.as_slice()),
            Some(lookup) => {
                let addresses = lookup.addresses().await?;
                attempt.mark(Event::Resolved);
                std::borrow::Cow::Owned(addresses)
            }
        };
        attempt.peer_address = addresses.first().copied();
        Ok(addresses)
    }

    /// The attempt's TCP connection: the first of its addresses to accept
    /// (`transport::connect_first`), recorded as its `peer_address`, with `tcp_connected`.
    async fn connect(&self, attempt: &mut Attempt) -> Result<(TcpStream, SocketAddr), Failure> {
        let addresses = self.addresses(attempt).await?;
        let (stream, address, established) = connect_first(&addresses, self.config.close)
            .await
            .map_err(|error| Failure::io(&error))?;
        attempt.connected(established);
        attempt.peer_address = Some(address);
        Ok((stream, address))
    }

    /// Where page mode's requests go, with how to open another connection.
    /// `https` or `http`, as a request's URI names it.
    fn scheme_name(&self) -> &'static str {
        match self.config.scheme {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }

    /// The Config's request on a kept HTTP/2 connection (a new stream).
    async fn request_on(
        &self,
        session: &mut page::Http2Session,
        attempt: &mut Attempt,
    ) -> Result<(), Failure> {
        session
            .request(
                attempt,
                self.scheme_name(),
                &self.authority,
                &self.config.path,
            )
            .await
    }

    fn origin<'a, Open>(&self, open: &'a Open) -> Origin<'a, Open> {
        Origin {
            scheme: self.scheme_name(),
            authority: self.authority.clone(),
            path: self.config.path.clone(),
            http: self.config.http,
            open,
        }
    }

    /// Page mode: the first connection's handshake is the attempt's; `page::load` does the
    /// rest over it and the connections it opens.
    async fn load_page(
        &self,
        agent: &Agent,
        attempt: &mut Attempt,
        page: &Page,
    ) -> Result<(), Failure> {
        let config = &self.config;
        // The page's other connections reuse the attempt's lookup, as a browser's do.
        let (stream, address) = self.connect(attempt).await?;
        attempt.local_address = stream.local_addr().ok();
        attempt.connection = Some(ConnectionUse {
            id: next_connection(),
            request: 1,
        });
        match (&self.library, &agent.sessions) {
            (Library::Rustls(client), Sessions::Rustls(session)) => {
                let first = client.handshake(session, attempt, stream).await?.channel;
                let open = || async {
                    let stream = page::connect(address, config.close).await?;
                    let mut own = Attempt::start();
                    Ok(client.handshake(session, &mut own, stream).await?.channel)
                };
                page::load(attempt, first, self.origin(&open), page).await
            }
            (Library::Openssl(client), Sessions::Openssl(session)) => {
                let first = client.handshake(session, attempt, stream).await?.channel;
                let open = || async {
                    let stream = page::connect(address, config.close).await?;
                    let mut own = Attempt::start();
                    Ok(client.handshake(session, &mut own, stream).await?.channel)
                };
                page::load(attempt, first, self.origin(&open), page).await
            }
            (Library::Plain, Sessions::Plain) => {
                let first = PlainChannel::new(stream, attempt);
                let open = || async {
                    let stream = page::connect(address, config.close).await?;
                    Ok(PlainChannel::new(stream, &mut Attempt::start()))
                };
                page::load(attempt, first, self.origin(&open), page).await
            }
            _ => Err(another_library()),
        }
    }
}

impl Connector for ConfigClient {
    type Agent = Agent;

    fn agent(&self) -> Agent {
        let sessions = match &self.library {
            Library::Rustls(client) => Sessions::Rustls(client.agent_session()),
            Library::Openssl(client) => Sessions::Openssl(client.agent_session()),
            Library::Plain => Sessions::Plain,
        };
        Agent {
            sessions,
            kept: self.config.keep_alive.then(Arc::default),
        }
    }

    /// Connect (TCP) or open a QUIC connection, handshake, the optional request, in TLS 1.3
    /// the server's acceptance, the ticket of a resuming Config, close. Waiting for the
    /// acceptance and the ticket happens after the handshake and is not part of it; it ends
    /// by half the attempt's time limit from its start, so it cannot turn into a timeout. With keep-alive, an agent's request goes on the connection it
    /// kept, when it has one, and a connection it opens stays open for the next.
    async fn attempt(&self, agent: &Agent, attempt: &mut Attempt) -> Result<(), Failure> {
        let config = &self.config;
        let ticket_limit = config.timeout / 2;
        if config.transport == Transport::Quic {
            let (Library::Rustls(client), Sessions::Rustls(session)) =
                (&self.library, &agent.sessions)
            else {
                return Err(another_library());
            };
            if config.keep_alive {
                if let Some(result) = self.on_kept(agent, attempt).await {
                    return result;
                }
            }
            let options = QuicAttemptOptions {
                capture: attempt.captured.is_some(),
                ticket_deadline: attempt.origin + ticket_limit,
            };
            // QUIC takes the preferred address: a UDP "connection" has no refusal to fall
            // back on.
            let address = self
                .addresses(attempt)
                .await?
                .first()
                .copied()
                .ok_or_else(|| {
                    Failure::new(
                        tlslab_core::ErrorClass::Dns,
                        "the name resolved to no address",
                    )
                })?;
            let id = next_connection();
            if self.request.is_some() {
                attempt.connection = Some(ConnectionUse { id, request: 1 });
            }
            if !config.keep_alive {
                return client
                    .quic_attempt(session, attempt, address, options)
                    .await;
            }
            let kept = client.quic_open(session, attempt, address, options).await?;
            agent.keep(Kept {
                channel: KeptChannel::Quic(Box::new(kept)),
                address,
                id,
                requests: 1,
            });
            return Ok(());
        }
        if let Some(page) = &config.page {
            return self.load_page(agent, attempt, page).await;
        }
        if config.keep_alive {
            if let Some(result) = self.on_kept(agent, attempt).await {
                return result;
            }
        }
        let (stream, address) = self.connect(attempt).await?;
        let id = next_connection();
        if self.request.is_some() {
            attempt.connection = Some(ConnectionUse { id, request: 1 });
        }
        let keep = |channel: KeptChannel| async move {
            agent.keep(Kept {
                channel,
                address,
                id,
                requests: 1,
            });
            Ok(())
        };
        if config.keep_alive && config.http == Http::Http2 {
            let mut session = match (&self.library, &agent.sessions) {
                (Library::Rustls(client), Sessions::Rustls(session)) => {
                    attempt.local_address = stream.local_addr().ok();
                    let channel = client.handshake(session, attempt, stream).await?.channel;
                    page::Http2Session::open(channel).await?
                }
                (Library::Openssl(client), Sessions::Openssl(session)) => {
                    attempt.local_address = stream.local_addr().ok();
                    let channel = client.handshake(session, attempt, stream).await?.channel;
                    page::Http2Session::open(channel).await?
                }
                (Library::Plain, Sessions::Plain) => {
                    page::Http2Session::open(PlainChannel::new(stream, attempt)).await?
                }
                _ => return Err(another_library()),
            };
            self.request_on(&mut session, attempt).await?;
            return keep(KeptChannel::Http2(session)).await;
        }
        match (&self.library, &agent.sessions) {
            (Library::Rustls(client), Sessions::Rustls(session)) if config.keep_alive => {
                let channel = open_over_tcp(client, session, attempt, stream, ticket_limit).await?;
                keep(KeptChannel::Rustls(Box::new(channel))).await
            }
            (Library::Openssl(client), Sessions::Openssl(session)) if config.keep_alive => {
                let channel = open_over_tcp(client, session, attempt, stream, ticket_limit).await?;
                keep(KeptChannel::Openssl(channel)).await
            }
            (Library::Rustls(client), Sessions::Rustls(session)) => {
                attempt_over_tcp(client, session, attempt, stream, config.close, ticket_limit).await
            }
            (Library::Openssl(client), Sessions::Openssl(session)) => {
                attempt_over_tcp(client, session, attempt, stream, config.close, ticket_limit).await
            }
            (Library::Plain, Sessions::Plain) => {
                let mut channel = PlainChannel::new(stream, attempt);
                if let Some(request) = &self.request {
                    exchange(&mut channel, attempt, request, false).await?;
                }
                if config.keep_alive {
                    keep(KeptChannel::Plain(channel)).await
                } else {
                    channel.close(config.close).await;
                    Ok(())
                }
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
