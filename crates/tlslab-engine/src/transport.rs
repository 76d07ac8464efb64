//! TCP the way a handshake benchmark needs it: names resolved once, connections with Nagle
//! off and an abortive close, listeners with a deep backlog, and enough file descriptors.
//!
//! Connections are closed with an RST by default (`SO_LINGER` 0): at thousands of handshakes
//! per second, graceful closes would leave every local port in TIME_WAIT within a minute
//! (docs/architecture.md, "Plan and measurement rules").

use std::io;
use std::net::SocketAddr;

use tlslab_core::CloseMode;
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

fn socket_for(address: SocketAddr) -> io::Result<TcpSocket> {
    if address.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
}

/// Opens a TCP connection with Nagle off and, for [`CloseMode::Reset`], an abortive close.
pub async fn connect(address: SocketAddr, close: CloseMode) -> io::Result<TcpStream> {
    let socket = socket_for(address)?;
    socket.set_nodelay(true)?;
    if close == CloseMode::Reset {
        socket.set_zero_linger()?;
    }
    socket.connect(address).await
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
    fn the_file_limit_is_at_least_the_usual_soft_limit() {
        assert!(raise_file_limit()
            .unwrap()
            .is_none_or(|limit| limit >= 1024));
    }
}
