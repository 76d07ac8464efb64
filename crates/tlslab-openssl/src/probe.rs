//! Observing OpenSSL's state machine without patching it, and feeding it bytes without
//! letting it touch the socket.
//!
//! OpenSSL calls the message callback and the certificate verification callback
//! synchronously from inside `SSL_connect`. As the rustls probes do, the client installs a
//! per-thread record before each call and takes it back right after, so the callbacks reach
//! the attempt that caused them without locking and without a per-attempt `SSL_CTX`.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::time::Instant;

use libc::{c_int, c_void, size_t};
use openssl_sys::{SSL, X509_STORE_CTX};

use crate::ffi;

/// The socket side of an `SslStream`: bytes read from the socket wait in `incoming` until
/// OpenSSL asks for them, and what OpenSSL writes collects in `outgoing` until the caller
/// sends it. OpenSSL sees "would block" when `incoming` runs dry, which is what lets one
/// async loop drive it (the memory-BIO pattern, through the openssl crate's stream BIO).
#[derive(Debug, Default)]
pub(crate) struct Pipe {
    incoming: Vec<u8>,
    consumed: usize,
    pub outgoing: Vec<u8>,
}

impl Pipe {
    pub fn push(&mut self, data: &[u8]) {
        if self.consumed == self.incoming.len() {
            self.incoming.clear();
            self.consumed = 0;
        }
        self.incoming.extend_from_slice(data);
    }
}

impl Read for Pipe {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let available = &self.incoming[self.consumed..];
        if available.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let count = available.len().min(buffer.len());
        buffer[..count].copy_from_slice(&available[..count]);
        self.consumed += count;
        Ok(count)
    }
}

impl Write for Pipe {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.outgoing.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Which way a handshake message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the client to the server.
    Sent,
    /// From the server to the client.
    Received,
}

/// One handshake message, as the message callback saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SeenMessage {
    pub direction: Direction,
    pub kind: u8,
    pub length: usize,
    pub at: Instant,
}

/// What the callbacks saw during one `SSL_connect` call.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub messages: Vec<SeenMessage>,
    pub verify_start: Option<Instant>,
    pub verify_end: Option<Instant>,
    /// The server's handshake signature (TLS 1.3 CertificateVerify, TLS 1.2
    /// ServerKeyExchange) arrived after chain verification and is being checked; the next
    /// received message, or the end of the call, marks its end.
    signature_pending: bool,
    /// The server answered with a HelloRetryRequest.
    pub hello_retry: bool,
    /// `--pin` refused the server's key.
    pub pin_rejected: bool,
    /// The certificate verification or the pin refused, to say in the error what it was.
    pub rejected: Option<Vec<u8>>,
}

thread_local! {
    static OBSERVED: RefCell<Option<Observed>> = const { RefCell::new(None) };
}

/// Runs `call` (a synchronous OpenSSL call) and returns what the callbacks saw during it.
pub(crate) fn observe<T>(call: impl FnOnce() -> T) -> (T, Observed) {
    OBSERVED.with(|cell| *cell.borrow_mut() = Some(Observed::default()));
    let result = call();
    let mut observed = OBSERVED
        .with(|cell| cell.borrow_mut().take())
        .unwrap_or_default();
    if observed.signature_pending {
        // The call ended (waiting for more bytes, or done) right after checking the signature.
        observed.verify_end = Some(Instant::now());
        observed.signature_pending = false;
    }
    (result, observed)
}

fn update(change: impl FnOnce(&mut Observed)) {
    OBSERVED.with(|cell| {
        // Outside `observe` (a server connection sharing the thread) nothing is recorded.
        if let Some(observed) = cell.borrow_mut().as_mut() {
            change(observed);
        }
    });
}

/// The message callback: timestamps every handshake message in both directions.
///
/// OpenSSL reports a received message once it is complete and before it processes it, and a
/// sent message when it has been written into the outgoing buffer.
pub(crate) unsafe extern "C" fn message_callback(
    write_p: c_int,
    _version: c_int,
    content_type: c_int,
    buf: *const c_void,
    len: size_t,
    _ssl: *mut SSL,
    _arg: *mut c_void,
) {
    if content_type != ffi::SSL3_RT_HANDSHAKE || buf.is_null() || len == 0 {
        return;
    }
    let now = Instant::now();
    // SAFETY: OpenSSL passes `len` readable bytes; the first is the handshake type.
    let kind = unsafe { *(buf as *const u8) };
    let direction = if write_p != 0 {
        Direction::Sent
    } else {
        Direction::Received
    };
    // A ServerHello's random follows its 4-byte header and 2-byte legacy version.
    let hello_retry = direction == Direction::Received
        && kind == 2
        && len >= 38
        // SAFETY: `len` bytes are readable, and 38 of them are asked for.
        && unsafe { std::slice::from_raw_parts(buf as *const u8, 38) }[6..]
            == tlslab_core::names::HELLO_RETRY_RANDOM;
    update(|observed| {
        observed.hello_retry |= hello_retry;
        if direction == Direction::Received {
            if observed.signature_pending {
                observed.verify_end = Some(now);
                observed.signature_pending = false;
            }
            // CertificateVerify (15) or ServerKeyExchange (12) after the chain: checking its
            // signature is part of validating the server, as in the rustls client.
            if matches!(kind, 12 | 15) && observed.verify_start.is_some() {
                observed.signature_pending = true;
            }
        }
        observed.messages.push(SeenMessage {
            direction,
            kind,
            length: len,
            at: now,
        });
    });
}

/// Chain verification, timed: OpenSSL's own `X509_verify_cert` between two timestamps.
pub(crate) unsafe extern "C" fn timed_verification(
    context: *mut X509_STORE_CTX,
    arg: *mut c_void,
) -> c_int {
    let start = Instant::now();
    update(|observed| {
        observed.verify_start.get_or_insert(start);
    });
    // SAFETY: OpenSSL calls this with its live verification context, and `arg` as the
    // client context was given it (null, or its own pins; see `pin_check`).
    let mut result = unsafe { openssl_sys::X509_verify_cert(context) };
    if result == 1 {
        // SAFETY: as above.
        result = unsafe { pin_check(context, arg) };
    } else {
        // SAFETY: as above.
        let rejected = unsafe { leaf_der(context) };
        update(|observed| observed.rejected = rejected);
    }
    let end = Instant::now();
    update(|observed| observed.verify_end = Some(end));
    result
}

/// `--pin`: with `arg` pointing at the client's pins (or null for none), whether the
/// certificate being verified carries a pinned key: 1, or 0 with the error set.
///
/// # Safety
/// `context` is OpenSSL's live verification context; `arg` is null or points at the
/// [`Pins`](tlslab_core::Pins) the client context owns (it lives as long as the context).
unsafe fn pin_check(context: *mut X509_STORE_CTX, arg: *mut c_void) -> c_int {
    if arg.is_null() {
        return 1;
    }
    // SAFETY: the caller guarantees `arg` points at the context's live pins.
    let pins = unsafe { &*(arg as *const tlslab_core::Pins) };
    // SAFETY: the caller guarantees `context` is live.
    let der = unsafe { leaf_der(context) };
    if der
        .as_deref()
        .is_some_and(|der| tlslab_backend::certificate::pinned(pins, der))
    {
        return 1;
    }
    update(|observed| {
        observed.pin_rejected = true;
        observed.rejected = der;
    });
    // SAFETY: the caller guarantees `context` is live.
    unsafe {
        openssl_sys::X509_STORE_CTX_set_error(
            context,
            openssl_sys::X509_V_ERR_APPLICATION_VERIFICATION,
        )
    };
    0
}

/// The certificate being verified (the server's own), as DER.
///
/// # Safety
/// `context` is OpenSSL's live verification context.
unsafe fn leaf_der(context: *mut X509_STORE_CTX) -> Option<Vec<u8>> {
    // SAFETY: the caller guarantees `context` is live.
    let leaf = unsafe { ffi::X509_STORE_CTX_get0_cert(context) };
    if leaf.is_null() {
        return None;
    }
    // SAFETY: a non-null certificate the context holds for the whole verification, borrowed
    // only to encode it.
    unsafe { <openssl::x509::X509Ref as foreign_types::ForeignTypeRef>::from_ptr(leaf) }
        .to_der()
        .ok()
}

/// `--insecure`: accept any chain without looking at it (the handshake signature is still
/// checked by OpenSSL, which has no switch for that), unless `--pin` names keys.
pub(crate) unsafe extern "C" fn no_verification(
    context: *mut X509_STORE_CTX,
    arg: *mut c_void,
) -> c_int {
    // With --insecure a pin is all that is checked.
    // SAFETY: OpenSSL's live context, and the client context's `arg` (see `pin_check`).
    unsafe { pin_check(context, arg) }
}
