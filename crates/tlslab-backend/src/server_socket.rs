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
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
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

/// What one step of a TLS library gave the reader.
pub enum Advance {
    /// Plaintext in the reader's buffer, the end of the stream, or an error to return.
    Done(io::Result<()>),
    /// The library moved on (it took bytes, or set a failure): look again.
    Again,
    /// The library needs more bytes from the client.
    NeedBytes,
}

/// A lab server's TLS stream as [`poll_read`] drives it: both libraries' servers read the same
/// way, and only their steps differ.
pub trait ServerStream {
    /// The failure that ends the connection once its alert is sent, if one happened.
    fn failure(&mut self) -> &mut Option<io::Error>;
    /// Runs the library with the bytes already received, for plaintext in `buffer`.
    fn advance(&mut self, buffer: &mut ReadBuf<'_>) -> Advance;
    /// Writes what the library queued (flights, tickets, alerts, records) to the socket.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    /// Whether the client's last message is still unacknowledged (see [`acknowledge_now`]).
    fn unacknowledged(&mut self) -> &mut bool;
    /// The socket, and the buffer its bytes are read into.
    fn socket_and_buffer(&mut self) -> (&mut TcpStream, &mut [u8]);
    /// The first `count` bytes of the buffer came from the client.
    fn received(&mut self, count: usize);
    /// The client closed its side; what the reader gets last.
    fn ended(&mut self, buffer: &mut ReadBuf<'_>) -> io::Result<()>;
}

/// `AsyncRead::poll_read` of a lab server's TLS stream: the library's steps until the reader
/// has plaintext, sending what each step queued before waiting for the client (which may be
/// waiting for it), and acknowledging a Finished nothing answered.
pub fn poll_read(
    stream: &mut impl ServerStream,
    cx: &mut Context<'_>,
    buffer: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    loop {
        if stream.failure().is_some() {
            // The alert reaches the client if it can; the error is the connection's end.
            let _ = ready!(stream.poll_send(cx));
            let failure = stream.failure().take();
            return Poll::Ready(Err(failure.unwrap_or_else(|| io::ErrorKind::Other.into())));
        }
        match stream.advance(buffer) {
            Advance::Done(result) => return Poll::Ready(result),
            Advance::Again => continue,
            Advance::NeedBytes => {}
        }
        // Everything read is processed: send the flight, tickets or alerts it caused before
        // waiting for the client, which may be waiting for them.
        ready!(stream.poll_send(cx))?;
        // Nothing answered the client's Finished (no request came with it): acknowledge it
        // before waiting for the request it may be holding back.
        if std::mem::take(stream.unacknowledged()) {
            acknowledge_now(stream.socket_and_buffer().0);
        }
        let (socket, incoming) = stream.socket_and_buffer();
        let mut read = ReadBuf::new(incoming);
        ready!(Pin::new(socket).poll_read(cx, &mut read))?;
        let count = read.filled().len();
        if count == 0 {
            return Poll::Ready(stream.ended(buffer));
        }
        stream.received(count);
    }
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
