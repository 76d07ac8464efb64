//! What both lab servers do to a TCP connection they accepted, so that no client meets a
//! delayed-ACK stall, whatever its own socket options.
//!
//! Nagle's algorithm is off on every accepted socket ([`accepted`]): the server's writes
//! (its flight, tickets, responses) leave at once, never waiting for the client's ACK of an
//! earlier one.
//!
//! The other half is the client's Nagle, which the server cannot turn off. In TLS 1.3 (and a
//! resumed TLS 1.2 handshake) the client speaks last: it writes its Finished, then its
//! request. A client with Nagle on (ApacheBench, many libraries) holds the request until the
//! Finished is acknowledged. A server that sends session tickets acknowledges it with them;
//! one that sends nothing (the lab server without `--resumption`, nginx with `NumTickets 0`)
//! leaves the ACK to the kernel's delayed-ACK timer, since the socket answered the
//! ClientHello at once and the kernel now expects every segment to get a reply soon: 40 ms
//! on Linux, per connection. [`acknowledge_now`] sends that ACK when the server has read the
//! Finished and has nothing to answer with (OpenSSL's `SSL_connect` manual page describes
//! the client side of this; openssl/openssl#4237).

use std::io;

use tokio::net::TcpStream;

/// Sets what every accepted connection of a lab server needs: Nagle off.
pub fn accepted(socket: &TcpStream) -> io::Result<()> {
    socket.set_nodelay(true)
}

/// Acknowledges now what the socket received and the kernel would acknowledge only on its
/// delayed-ACK timer (Linux: `TCP_QUICKACK`, which sends a pending ACK at once). Called when a
/// handshake ended with the client's message and the server sends nothing back; where the
/// option does not exist, nothing happens. Best effort: a failure leaves the timer's ACK.
pub fn acknowledge_now(socket: &TcpStream) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let _ = socket2::SockRef::from(socket).set_tcp_quickack(true);
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = socket;
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;

    /// The kernel reports `TCP_QUICKACK` as "not delaying ACKs": usually false once a socket
    /// has answered what it received at once (the server's flight after the ClientHello), and
    /// true after [`acknowledge_now`], whatever it was.
    #[tokio::test]
    async fn an_accepted_socket_has_nagle_off_and_acknowledges_at_once_when_asked() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let client = tokio::net::TcpStream::connect(address).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        accepted(&server).unwrap();
        assert!(server.nodelay().unwrap());
        let mut buffer = [0; 64];
        for message in [&b"client hello"[..], b"finished"] {
            client.writable().await.unwrap();
            client.try_write(message).unwrap();
            let mut read = 0;
            while read < message.len() {
                server.readable().await.unwrap();
                read += server.try_read(&mut buffer).unwrap_or(0);
            }
            if message == b"client hello" {
                server.try_write(b"server flight").unwrap();
                client.readable().await.unwrap();
                client.try_read(&mut buffer).unwrap();
            }
        }
        acknowledge_now(&server);
        assert!(socket2::SockRef::from(&server).tcp_quickack().unwrap());
    }
}
