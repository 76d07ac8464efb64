//! A rustls server connection over a `TcpStream` as one `AsyncRead + AsyncWrite` stream of
//! plaintext, for hyper: the same sans-IO loop the lab server always ran, turned inside out.
//!
//! Early data is readable as soon as rustls accepted it, before the client's Finished, and
//! what is written then goes out at once as 0.5-RTT data (`send_half_rtt_data`): a 0-RTT
//! request is answered a round trip before the handshake completes.
//!
//! A handshake that ends with the client's Finished and leaves the server nothing to send (no
//! tickets) has the client's Finished acknowledged at once
//! ([`tlslab_backend::server_socket::acknowledge_now`]): a client with Nagle on would otherwise
//! hold its request for the kernel's delayed-ACK timer.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use rustls::ServerConnection;
use tlslab_backend::server_socket::{self, Advance, ServerStream};
use tlslab_backend::Counters;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How many bytes one read from the socket takes: a full TLS record and its header.
const READ_SIZE: usize = 18 * 1024;

/// One TLS connection of the lab server, seen as plaintext.
pub(super) struct TlsStream {
    socket: TcpStream,
    connection: ServerConnection,
    counters: Arc<Counters>,
    counted_early: bool,
    /// Bytes read from the socket; `incoming[start..end]` are not yet given to rustls (it
    /// takes them only as fast as its plaintext is read, so its buffer never overflows).
    incoming: Box<[u8]>,
    start: usize,
    end: usize,
    /// TLS bytes rustls produced; `outgoing[sent..]` are not yet written to the socket.
    outgoing: Vec<u8>,
    sent: usize,
    /// A failed handshake's error, returned once the alert rustls queued has been sent.
    failure: Option<io::Error>,
    /// The handshake just ended with the client's message and nothing went back since: the
    /// client's Finished waits for an ACK that no data of ours carries.
    unacknowledged: bool,
}

impl TlsStream {
    pub(super) fn new(
        socket: TcpStream,
        connection: ServerConnection,
        counters: Arc<Counters>,
    ) -> TlsStream {
        TlsStream {
            socket,
            connection,
            counters,
            counted_early: false,
            incoming: vec![0; READ_SIZE].into_boxed_slice(),
            start: 0,
            end: 0,
            outgoing: Vec::with_capacity(8 * 1024),
            sent: 0,
            failure: None,
            unacknowledged: false,
        }
    }

    /// Writes everything rustls has queued (handshake flight, tickets, alerts, records) to the
    /// socket.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.sent == self.outgoing.len() {
                self.outgoing.clear();
                self.sent = 0;
                if !self.connection.wants_write() {
                    return Poll::Ready(Ok(()));
                }
                while self.connection.wants_write() {
                    self.connection.write_tls(&mut self.outgoing)?;
                }
            }
            let written =
                ready!(Pin::new(&mut self.socket).poll_write(cx, &self.outgoing[self.sent..]))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += written;
            // These bytes carry the ACK of everything received.
            self.unacknowledged = false;
        }
    }

    /// Plaintext rustls already has: early data first (it precedes everything sent after the
    /// handshake), then application data. `None` when more TLS bytes are needed.
    fn read_plaintext(&mut self, buffer: &mut ReadBuf<'_>) -> Option<io::Result<()>> {
        if let Some(mut early) = self.connection.early_data() {
            match early.read(buffer.initialize_unfilled()) {
                Ok(0) => {}
                Ok(count) => {
                    if !self.counted_early {
                        self.counted_early = true;
                        self.counters.early_data_accepted();
                    }
                    buffer.advance(count);
                    return Some(Ok(()));
                }
                Err(error) => return Some(Err(error)),
            }
        }
        match self.connection.reader().read(buffer.initialize_unfilled()) {
            // Zero bytes: the client's close_notify, the end of the stream.
            Ok(count) => {
                buffer.advance(count);
                Some(Ok(()))
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => None,
            // The socket ended without close_notify: most clients leave that way, and for
            // HTTP it is just the end.
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Some(Ok(())),
            Err(error) => Some(Err(error)),
        }
    }
}

impl Drop for TlsStream {
    fn drop(&mut self) {
        // hyper drops a connection it gave up on (a request that is not HTTP, an error)
        // without shutting it down: the client still gets close_notify, not a bare TCP close
        // it could take for a truncation, as far as the socket takes it without waiting.
        if self.connection.is_handshaking() {
            return;
        }
        self.connection.send_close_notify();
        while self.connection.wants_write() {
            if self.connection.write_tls(&mut self.outgoing).is_err() {
                return;
            }
        }
        while self.sent < self.outgoing.len() {
            match self.socket.try_write(&self.outgoing[self.sent..]) {
                Ok(written) if written > 0 => self.sent += written,
                _ => return,
            }
        }
    }
}

impl ServerStream for TlsStream {
    fn failure(&mut self) -> &mut Option<io::Error> {
        &mut self.failure
    }

    fn advance(&mut self, buffer: &mut ReadBuf<'_>) -> Advance {
        if let Some(result) = self.read_plaintext(buffer) {
            return Advance::Done(result);
        }
        if self.start >= self.end {
            return Advance::NeedBytes;
        }
        let mut data = &self.incoming[self.start..self.end];
        let taken = match self.connection.read_tls(&mut data) {
            Ok(taken) => taken,
            Err(error) => return Advance::Done(Err(error)),
        };
        self.start += taken;
        let handshaking = self.connection.is_handshaking();
        if let Err(error) = self.connection.process_new_packets() {
            self.failure = Some(io::Error::other(error));
        }
        // Ended by the client, with no tickets (nor anything else) to send back.
        if handshaking && !self.connection.is_handshaking() && !self.connection.wants_write() {
            self.unacknowledged = true;
        }
        Advance::Again
    }

    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        TlsStream::poll_send(self, cx)
    }

    fn unacknowledged(&mut self) -> &mut bool {
        &mut self.unacknowledged
    }

    fn socket_and_buffer(&mut self) -> (&mut TcpStream, &mut [u8]) {
        (&mut self.socket, &mut self.incoming)
    }

    fn received(&mut self, count: usize) {
        self.start = 0;
        self.end = count;
    }

    fn ended(&mut self, buffer: &mut ReadBuf<'_>) -> io::Result<()> {
        // Tell rustls, so its reader reports how the stream ended.
        self.connection.read_tls(&mut io::empty())?;
        self.read_plaintext(buffer).unwrap_or(Ok(()))
    }
}

impl tlslab_site::Negotiated for TlsStream {
    fn protocol(&self) -> Option<&[u8]> {
        self.connection.alpn_protocol()
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        server_socket::poll_read(self.get_mut(), cx, buffer)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Backpressure: no new plaintext while the previous records are still on their way.
        ready!(this.poll_send(cx))?;
        // With `send_half_rtt_data`, rustls encrypts this at once even before the client's
        // Finished (0.5-RTT data); the buffer limit is off, so it takes everything.
        let taken = this.connection.writer().write(data)?;
        // Out now, not at the next flush: that is what answers 0-RTT a round trip early.
        if let Poll::Ready(Err(error)) = this.poll_send(cx) {
            return Poll::Ready(Err(error));
        }
        Poll::Ready(Ok(taken))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.socket).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.connection.send_close_notify();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.socket).poll_shutdown(cx)
    }
}
