//! Probes that observe rustls' state machine without patching it.
//!
//! rustls calls the certificate verifier and the key log synchronously from inside
//! `process_new_packets`. The TCP client installs a per-thread record before each call and
//! takes it back right after, so callbacks reach the attempt that caused them without any
//! locking and without a per-attempt `ClientConfig`. Over QUIC, quinn makes those calls on its
//! own driver task, so each QUIC attempt gets probes that report into a record it shares.

use std::cell::Cell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, ClientSessionStore};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, KeyLog, NamedGroup, SignatureScheme};

/// What the callbacks saw during one `process_new_packets` call.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Observed {
    pub verify_start: Option<Instant>,
    pub verify_end: Option<Instant>,
    pub signature_scheme: Option<SignatureScheme>,
    /// The client derived its application traffic keys: its Finished is next.
    pub traffic_keys: Option<Instant>,
    /// The server asked for a client certificate: whether the client had one to send.
    pub client_certificate: Option<bool>,
    /// The verifier was called but validated nothing (`--insecure`): its
    /// call still marks when the client reacted to the server's flight, but it is no
    /// `cert_validation` (a microsecond of bookkeeping would pass for one).
    pub checked_nothing: bool,
    /// Mutual TLS: when the client's CertificateVerify signature began and ended.
    pub client_signature: Option<(Instant, Instant)>,
    /// Mutual TLS: what the client's Certificate and CertificateVerify carried.
    pub client_certificate_sizes: Option<CertificateSizes>,
}

/// What the client's Certificate and CertificateVerify messages carry, to size them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CertificateSizes {
    /// Certificates in the chain sent, and their DER bytes together.
    pub certificates: u64,
    pub der_bytes: u64,
    /// The signature's bytes (an ECDSA signature's DER length varies by a byte or two).
    pub signature_bytes: u64,
}

impl CertificateSizes {
    /// The bytes of both handshake messages, headers included, as RFC 8446 §4.4.2 and
    /// §4.4.3 (TLS 1.3) or RFC 5246 §7.4.6 and §7.4.8 (TLS 1.2) encode them. rustls does not
    /// expose the messages it writes (in TLS 1.3 they leave encrypted), so they are sized
    /// from what they hold; the OpenSSL client reads the same sizes from its message callback.
    pub fn message_bytes(&self, tls13: bool) -> u64 {
        const HEADER: u64 = 4;
        // TLS 1.3: an empty request context (1 byte) and, per entry, empty extensions (2).
        let (context, per_entry) = if tls13 { (1, 3 + 2) } else { (0, 3) };
        let certificate = HEADER + context + 3 + self.der_bytes + per_entry * self.certificates;
        // Scheme (2), signature length (2), signature.
        let certificate_verify = HEADER + 2 + 2 + self.signature_bytes;
        certificate + certificate_verify
    }
}

thread_local! {
    static OBSERVED: Cell<Observed> = Cell::new(Observed::default());
}

/// Runs `call` (a synchronous rustls call) and returns what the probes saw during it.
pub(crate) fn observe<T>(call: impl FnOnce() -> T) -> (T, Observed) {
    OBSERVED.with(|cell| cell.set(Observed::default()));
    let result = call();
    (result, OBSERVED.with(Cell::take))
}

/// Where probes report what they see.
#[derive(Debug, Clone, Default)]
pub(crate) enum Report {
    /// The calling thread's record, taken by [`observe`] (TCP: rustls runs on our task).
    #[default]
    ThreadLocal,
    /// A record shared with one attempt (QUIC: rustls runs on quinn's driver task).
    Shared(Arc<Mutex<Observed>>),
}

impl Report {
    fn update(&self, change: impl FnOnce(&mut Observed)) {
        match self {
            Report::ThreadLocal => OBSERVED.with(|cell| {
                let mut observed = cell.get();
                change(&mut observed);
                cell.set(observed);
            }),
            Report::Shared(shared) => change(&mut shared.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// Chains the client has verified, byte for byte (`--cert-cache on`): a chain seen again
/// for the same server name is accepted without verifying it again, as browsers that cache
/// intermediate and leaf verification do. The handshake signature is still checked.
#[derive(Debug, Default)]
pub(crate) struct VerifiedChains {
    chains: Mutex<HashSet<Vec<u8>>>,
}

impl VerifiedChains {
    fn key(
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
    ) -> Vec<u8> {
        let name = server_name.to_str();
        let mut key = Vec::with_capacity(
            name.len()
                + 1
                + end_entity.len()
                + intermediates.iter().map(|c| c.len()).sum::<usize>(),
        );
        key.extend_from_slice(name.as_bytes());
        key.push(0);
        for certificate in std::iter::once(end_entity).chain(intermediates) {
            key.extend_from_slice(&(certificate.len() as u32).to_be_bytes());
            key.extend_from_slice(certificate);
        }
        key
    }
}

/// Wraps a verifier to time chain verification and note the handshake signature scheme.
#[derive(Debug)]
pub(crate) struct TimedVerifier {
    pub inner: Arc<dyn ServerCertVerifier>,
    pub cache: Option<Arc<VerifiedChains>>,
    pub report: Report,
    /// Whether `inner` checks anything; see [`Observed::checked_nothing`].
    pub checks: bool,
}

impl ServerCertVerifier for TimedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let start = Instant::now();
        self.report
            .update(|observed| observed.verify_start = Some(start));
        let key = self
            .cache
            .as_ref()
            .map(|_| VerifiedChains::key(end_entity, intermediates, server_name));
        let cached = match (&self.cache, &key) {
            (Some(cache), Some(key)) => cache
                .chains
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(key),
            _ => false,
        };
        let result = if cached {
            Ok(ServerCertVerified::assertion())
        } else {
            self.inner.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            )
        };
        let end = Instant::now();
        let checks = self.checks;
        self.report.update(|observed| {
            observed.verify_end = Some(end);
            observed.checked_nothing = !checks;
        });
        if let (Ok(_), false, Some(cache), Some(key)) = (&result, cached, &self.cache, key) {
            cache
                .chains
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key);
        }
        result
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // The handshake signature is part of validating the server: it counts as verification.
        self.report
            .update(|observed| observed.signature_scheme = Some(dss.scheme));
        let result = self.inner.verify_tls12_signature(message, cert, dss);
        let end = Instant::now();
        self.report
            .update(|observed| observed.verify_end = Some(end));
        result
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.report
            .update(|observed| observed.signature_scheme = Some(dss.scheme));
        let result = self.inner.verify_tls13_signature(message, cert, dss);
        let end = Instant::now();
        self.report
            .update(|observed| observed.verify_end = Some(end));
        result
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

/// Accepts any certificate (`--insecure`) but still reports the signature scheme.
#[derive(Debug)]
pub(crate) struct NoVerification {
    pub schemes: Vec<SignatureScheme>,
}

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes.clone()
    }
}

/// A key log that records when the client's application keys come into being, and writes
/// every secret to the run's key log file when there is one.
#[derive(Debug, Default)]
pub(crate) struct TrafficKeyProbe {
    pub report: Report,
    pub file: Option<Arc<tlslab_backend::KeyLogFile>>,
}

impl TrafficKeyProbe {
    fn marks_finished(label: &str) -> bool {
        // TLS 1.3: derived on processing the server Finished; TLS 1.2: the master secret,
        // derived right before the client's ChangeCipherSpec and Finished.
        label == "CLIENT_TRAFFIC_SECRET_0" || label == "CLIENT_RANDOM"
    }
}

impl KeyLog for TrafficKeyProbe {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        if let Some(file) = &self.file {
            file.log(label, client_random, secret);
        }
        if Self::marks_finished(label) {
            let now = Instant::now();
            self.report.update(|observed| {
                observed.traffic_keys.get_or_insert(now);
            });
        }
    }

    fn will_log(&self, label: &str) -> bool {
        self.file.is_some() || Self::marks_finished(label)
    }
}

/// One agent's session cache, counting the TLS 1.3 tickets it receives so the client knows
/// when it holds a ticket for its next handshake.
#[derive(Debug)]
pub(crate) struct CountingSessionStore {
    inner: ClientSessionMemoryCache,
    tickets: AtomicU64,
    /// Wakes a QUIC attempt waiting for its ticket (quinn processes it on its own task).
    arrived: tokio::sync::Notify,
    /// A key-share group to start with every time (`--hello-retry on`).
    guess: Option<NamedGroup>,
}

impl CountingSessionStore {
    pub fn new() -> Self {
        CountingSessionStore {
            inner: ClientSessionMemoryCache::new(16),
            tickets: AtomicU64::new(0),
            arrived: tokio::sync::Notify::new(),
            guess: None,
        }
    }

    /// Starts every handshake with a key share for `guess` (see [`KeyShareGuess`]).
    pub fn with_guess(mut self, guess: Option<NamedGroup>) -> Self {
        self.guess = guess;
        self
    }

    pub fn tickets_received(&self) -> u64 {
        self.tickets.load(Ordering::Relaxed)
    }

    /// Waits until more than `before` tickets have arrived.
    pub async fn ticket_after(&self, before: u64) {
        loop {
            let notified = self.arrived.notified();
            if self.tickets_received() > before {
                return;
            }
            notified.await;
        }
    }
}

impl ClientSessionStore for CountingSessionStore {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        // A guess stays wrong: what the server chose is not remembered.
        if self.guess.is_none() {
            self.inner.set_kx_hint(server_name, group)
        }
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.guess.or_else(|| self.inner.kx_hint(server_name))
    }

    fn set_tls12_session(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.inner.set_tls12_session(server_name, value);
        self.arrived.notify_waiters();
    }

    fn tls12_session(
        &self,
        server_name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.inner.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.inner.remove_tls12_session(server_name)
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.inner.insert_tls13_ticket(server_name, value);
        self.tickets.fetch_add(1, Ordering::Relaxed);
        self.arrived.notify_waiters();
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        self.inner.take_tls13_ticket(server_name)
    }
}

/// A session store that keeps nothing but always hints one key-share group: rustls sends its
/// first key share for the hinted group, and lists the Config's group before it, so a server
/// that picks by the client's list asks again with a HelloRetryRequest (`--hello-retry on`
/// without resumption). rustls has no other way to choose the first key share.
#[derive(Debug)]
pub(crate) struct KeyShareGuess(pub NamedGroup);

impl ClientSessionStore for KeyShareGuess {
    fn set_kx_hint(&self, _: ServerName<'static>, _: NamedGroup) {}

    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        Some(self.0)
    }

    fn set_tls12_session(
        &self,
        _: ServerName<'static>,
        _: rustls::client::Tls12ClientSessionValue,
    ) {
    }

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<rustls::client::Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {}

    fn insert_tls13_ticket(
        &self,
        _: ServerName<'static>,
        _: rustls::client::Tls13ClientSessionValue,
    ) {
    }

    fn take_tls13_ticket(
        &self,
        _: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        None
    }
}

/// The client's certificate resolver, wrapped: rustls asks it only when the server sends a
/// CertificateRequest, so each call tells the attempt that the server asked, and whether a
/// certificate went back.
#[derive(Debug)]
pub(crate) struct CertificateRequestProbe {
    pub inner: Arc<dyn rustls::client::ResolvesClientCert>,
    pub report: Report,
}

impl rustls::client::ResolvesClientCert for CertificateRequestProbe {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        schemes: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        let resolved = self.inner.resolve(root_hint_subjects, schemes);
        let sent = resolved.is_some();
        self.report
            .update(|observed| observed.client_certificate = Some(sent));
        // The key signs the CertificateVerify: wrapped, it times the signature.
        resolved.map(|certified| {
            let sizes = CertificateSizes {
                certificates: certified.cert.len() as u64,
                der_bytes: certified.cert.iter().map(|der| der.len() as u64).sum(),
                signature_bytes: 0,
            };
            self.report
                .update(|observed| observed.client_certificate_sizes = Some(sizes));
            Arc::new(rustls::sign::CertifiedKey {
                cert: certified.cert.clone(),
                key: Arc::new(TimedSigningKey {
                    inner: certified.key.clone(),
                    report: self.report.clone(),
                }),
                ocsp: certified.ocsp.clone(),
            })
        })
    }

    fn only_raw_public_keys(&self) -> bool {
        self.inner.only_raw_public_keys()
    }

    fn has_certs(&self) -> bool {
        self.inner.has_certs()
    }
}

/// The client certificate's key, wrapped so that its signature over the handshake (the
/// CertificateVerify) is timed: the `client_signing` phase.
#[derive(Debug)]
struct TimedSigningKey {
    inner: Arc<dyn rustls::sign::SigningKey>,
    report: Report,
}

impl rustls::sign::SigningKey for TimedSigningKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn rustls::sign::Signer>> {
        let inner = self.inner.choose_scheme(offered)?;
        Some(Box::new(TimedSigner {
            inner,
            report: self.report.clone(),
        }))
    }

    fn public_key(&self) -> Option<rustls::pki_types::SubjectPublicKeyInfoDer<'_>> {
        self.inner.public_key()
    }

    fn algorithm(&self) -> rustls::SignatureAlgorithm {
        self.inner.algorithm()
    }
}

#[derive(Debug)]
struct TimedSigner {
    inner: Box<dyn rustls::sign::Signer>,
    report: Report,
}

impl rustls::sign::Signer for TimedSigner {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        let start = Instant::now();
        let signature = self.inner.sign(message);
        let end = Instant::now();
        let length = signature.as_ref().map_or(0, |bytes| bytes.len() as u64);
        self.report.update(|observed| {
            observed.client_signature = Some((start, end));
            if let Some(sizes) = observed.client_certificate_sizes.as_mut() {
                sizes.signature_bytes = length;
            }
        });
        signature
    }

    fn scheme(&self) -> SignatureScheme {
        self.inner.scheme()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_messages_are_sized_as_each_version_encodes_them() {
        // One 500-byte certificate and a 72-byte signature.
        let sizes = CertificateSizes {
            certificates: 1,
            der_bytes: 500,
            signature_bytes: 72,
        };
        // TLS 1.3: 4 + 1 + 3 + (3 + 500 + 2) = 513, and 4 + 2 + 2 + 72 = 80.
        assert_eq!(sizes.message_bytes(true), 593);
        // TLS 1.2: 4 + 3 + (3 + 500) = 510, and the same 80.
        assert_eq!(sizes.message_bytes(false), 590);
    }
}
