//! TCP the way a handshake benchmark needs it: names resolved once (or, with `--dns
//! per-attempt`, by each attempt, timed), connections with Nagle off and an abortive close,
//! listeners with a deep backlog, and enough file descriptors.
//!
//! Connections are closed with an RST by default (`SO_LINGER` 0): at thousands of handshakes
//! per second, graceful closes would leave every local port in TIME_WAIT within a minute
//! (docs/architecture.md, "Plan and measurement rules").

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use tlslab_backend::Failure;
use tlslab_core::{CloseMode, ErrorClass};
use tokio::net::{TcpSocket, TcpStream};

/// Resolves `host:port` once, before any attempt, so attempts time no DNS lookups.
pub async fn resolve(target: &str) -> io::Result<SocketAddr> {
    tokio::net::lookup_host(target)
        .await?
        .next()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("'{target}' resolved to no address"),
            )
        })
}

/// Every address `host:port` resolves to, in the resolver's order (getaddrinfo, on tokio's
/// blocking pool).
pub async fn resolve_all(target: &str) -> io::Result<Vec<SocketAddr>> {
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host(target).await?.collect();
    if addresses.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("'{target}' resolved to no address"),
        ));
    }
    Ok(addresses)
}

/// How an attempt of `--dns per-attempt` finds its server: its own lookup of `name`, or the
/// `--resolve` pin for it (no query, as curl does), before it connects.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// `host:port` as the resolver takes it.
    pub name: String,
    /// A `--resolve` pin's addresses: the lookup is answered without a query.
    pub pinned: Option<Vec<SocketAddr>>,
    /// The address the lookup must return (the lab server listens on one address only);
    /// `None`: the first one returned, as a client without Happy Eyeballs takes it.
    pub required: Option<SocketAddr>,
}

impl Lookup {
    /// The addresses this attempt may connect to, the first preferred (see
    /// [`connect_first`]); a failed lookup is the attempt's failure, of class `dns`.
    pub async fn addresses(&self) -> Result<Vec<SocketAddr>, Failure> {
        if let Some(pinned) = self.pinned.as_ref().filter(|pinned| !pinned.is_empty()) {
            return Ok(pinned.clone());
        }
        let addresses = resolve_all(&self.name).await.map_err(|error| {
            Failure::new(
                ErrorClass::Dns,
                format!("cannot resolve '{}': {error}", self.name),
            )
        })?;
        match self.required {
            None => Ok(addresses),
            Some(required) if addresses.contains(&required) => Ok(vec![required]),
            Some(required) => Err(Failure::new(
                ErrorClass::Dns,
                format!(
                    "'{}' resolved to {}, not to {required}",
                    self.name,
                    list(&addresses)
                ),
            )),
        }
    }
}

/// Addresses for people: `127.0.0.1:8443, [::1]:8443`.
pub fn list(addresses: &[SocketAddr]) -> String {
    addresses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who answers a lookup on this machine: getaddrinfo, with the nameservers of
/// `/etc/resolv.conf` (what it asks when `/etc/hosts` has no answer).
pub fn system_resolver() -> String {
    let servers = std::fs::read_to_string("/etc/resolv.conf")
        .map(|text| nameservers(&text))
        .unwrap_or_default();
    if servers.is_empty() {
        "getaddrinfo (no nameserver in /etc/resolv.conf)".to_string()
    } else {
        format!("getaddrinfo (nameservers {})", servers.join(", "))
    }
}

/// The `nameserver` lines of a resolv.conf, in order.
fn nameservers(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("nameserver"))
                .then(|| words.next())
                .flatten()
                .map(str::to_string)
        })
        .collect()
}

fn socket_for(address: SocketAddr) -> io::Result<TcpSocket> {
    if address.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
}

/// Opens a TCP connection with Nagle off and, for [`CloseMode::Reset`], an abortive close.
pub async fn connect(address: SocketAddr, close: CloseMode) -> io::Result<TcpStream> {
    connect_timed(address, close)
        .await
        .map(|(stream, _)| stream)
}

/// [`connect`], and when the connection was established by the kernel's account
/// (`tlslab_backend::wire::connected_at`: the call plus the SYN's round trip, without the
/// wake-up that follows); `None` when the kernel cannot say.
pub async fn connect_timed(
    address: SocketAddr,
    close: CloseMode,
) -> io::Result<(TcpStream, Option<Instant>)> {
    let socket = socket_for(address)?;
    socket.set_nodelay(true)?;
    if close == CloseMode::Reset {
        socket.set_zero_linger()?;
    }
    // The future makes the call on its first poll, at once.
    let issued = Instant::now();
    let stream = socket.connect(address).await?;
    let established = tlslab_backend::wire::connected_at(&stream, issued);
    Ok((stream, established))
}

/// How long an attempt waits for a connection to one address before it also tries the
/// next: RFC 8305's recommended Connection Attempt Delay.
pub const FALLBACK_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

/// Connects to the first of `addresses` that accepts, as Happy Eyeballs (RFC 8305 §5) does,
/// kept simple: the addresses are tried in the resolver's order (no re-sorting by family);
/// each next one starts when the one before failed, or after [`FALLBACK_DELAY`] without an
/// answer, racing the connects still pending; the first to connect wins and the others are
/// dropped (closing their sockets). Returns the stream and the address that answered; when
/// none did, the last error seen. With them, when the kernel says the connection was
/// established ([`connect_timed`]).
pub async fn connect_first(
    addresses: &[SocketAddr],
    close: CloseMode,
) -> io::Result<(TcpStream, SocketAddr, Option<Instant>)> {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    // One address, the usual case: no fallback to race, so none of the machinery below on
    // the handshake's path.
    if let [address] = addresses {
        return connect_timed(*address, close)
            .await
            .map(|(stream, established)| (stream, *address, established));
    }
    let attempt =
        |address: SocketAddr| async move { (address, connect_timed(address, close).await) };
    let mut waiting = addresses.iter().copied();
    let mut pending = FuturesUnordered::new();
    let mut last_error = None;
    loop {
        if pending.is_empty() {
            match waiting.next() {
                Some(address) => pending.push(attempt(address)),
                None => {
                    return Err(last_error.unwrap_or_else(|| {
                        io::Error::new(io::ErrorKind::NotFound, "no address to connect to")
                    }))
                }
            }
        }
        let more = waiting.len() > 0;
        tokio::select! {
            Some((address, result)) = pending.next() => match result {
                Ok((stream, established)) => return Ok((stream, address, established)),
                Err(error) => {
                    last_error = Some(error);
                    // A refusal needs no waiting: the next address starts at once.
                    if let Some(address) = waiting.next() {
                        pending.push(attempt(address));
                    }
                }
            },
            _ = tokio::time::sleep(FALLBACK_DELAY), if more => {
                if let Some(address) = waiting.next() {
                    pending.push(attempt(address));
                }
            }
        }
    }
}

/// Binds a listener with a deep accept backlog: thousands of agents connect at once when a
/// trial starts, and the default backlog would turn the overflow into one-second SYN retries.
pub fn bind_listener(address: SocketAddr) -> io::Result<tokio::net::TcpListener> {
    let socket = socket_for(address)?;
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(4096)
}

/// Raises the soft limit on open files to the hard limit: 2,000 agents need 2,000 sockets on
/// the client and as many on the lab server, far above the usual soft limit of 1,024.
/// Returns the new soft limit (`None`: unlimited).
pub fn raise_file_limit() -> io::Result<Option<u64>> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )?;
    }
    Ok(getrlimit(Resource::Nofile).current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::ErrorClass;

    #[tokio::test]
    async fn a_closed_port_is_refused_and_classified() {
        // Bind then drop a listener: the port is now known to be closed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let error = connect(address, CloseMode::Reset).await.unwrap_err();
        assert_eq!(ErrorClass::of_io_error(&error), ErrorClass::Refused);
    }

    #[tokio::test]
    async fn connects_and_resolves_localhost() {
        let listener = bind_listener("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = listener.local_addr().unwrap().port();
        let address = resolve(&format!("localhost:{port}")).await.unwrap();
        assert_eq!(address.port(), port);
        let stream = connect(listener.local_addr().unwrap(), CloseMode::Graceful)
            .await
            .unwrap();
        assert!(stream.nodelay().unwrap());
        assert!(resolve("no-such-host.invalid:443").await.is_err());
    }

    #[test]
    fn nameservers_are_read_in_order_and_comments_skipped() {
        let text = "# generated\nsearch lab\nnameserver 10.0.0.53\n;nameserver 9.9.9.9\n\
                    nameserver   2001:db8::53  # v6\noptions edns0\n";
        assert_eq!(nameservers(text), ["10.0.0.53", "2001:db8::53"]);
        assert!(nameservers("").is_empty());
    }

    #[tokio::test]
    async fn a_lookup_is_pinned_or_resolved_and_a_required_address_is_checked() {
        let pinned = Lookup {
            name: "tlslab-test.invalid:443".into(),
            pinned: Some(vec!["192.0.2.7:443".parse().unwrap()]),
            required: None,
        };
        assert_eq!(
            pinned.addresses().await.unwrap(),
            ["192.0.2.7:443".parse().unwrap()]
        );
        let unknown = Lookup {
            pinned: None,
            ..pinned.clone()
        };
        assert_eq!(
            unknown.addresses().await.unwrap_err().class,
            ErrorClass::Dns
        );
        let literal = Lookup {
            name: "127.0.0.1:8443".into(),
            pinned: None,
            required: Some("127.0.0.1:8443".parse().unwrap()),
        };
        assert_eq!(
            literal.addresses().await.unwrap(),
            ["127.0.0.1:8443".parse().unwrap()]
        );
        let elsewhere = Lookup {
            required: Some("127.0.0.2:8443".parse().unwrap()),
            ..literal
        };
        let failure = elsewhere.addresses().await.unwrap_err();
        assert!(
            failure.detail.contains("not to 127.0.0.2:8443"),
            "{}",
            failure.detail
        );
    }

    #[tokio::test]
    async fn an_address_that_refuses_falls_back_to_the_next() {
        let listener = bind_listener("127.0.0.1:0".parse().unwrap()).unwrap();
        let open = listener.local_addr().unwrap();
        // Bind then drop a listener: the port is now known to be closed.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let (_, used, _) = connect_first(&[closed, open], CloseMode::Reset)
            .await
            .unwrap();
        assert_eq!(used, open);
        // The first that answers is taken, not the last.
        let (_, used, _) = connect_first(&[open, closed], CloseMode::Reset)
            .await
            .unwrap();
        assert_eq!(used, open);
        // None answers: the last refusal is the error.
        let error = connect_first(&[closed, closed], CloseMode::Reset)
            .await
            .unwrap_err();
        assert_eq!(ErrorClass::of_io_error(&error), ErrorClass::Refused);
    }

    #[test]
    fn the_file_limit_is_at_least_the_usual_soft_limit() {
        assert!(raise_file_limit()
            .unwrap()
            .is_none_or(|limit| limit >= 1024));
    }
}
