//! The OpenSSL lab server: every TLS 1.2 and 1.3 suite and group OpenSSL offers, driven by
//! the same in-memory pipe as the client.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use openssl::pkey::PKey;
use openssl::ssl::{
    ErrorCode, Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions, SslSessionCacheMode,
    SslStream, SslVersion,
};
use openssl::x509::X509;
use tlslab_tls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::ech::EchKey;
use crate::ffi;
use crate::probe::Pipe;
use crate::settings::Group;
use crate::Error;

/// Every TLS 1.3 suite OpenSSL implements, CCM included.
const TLS13_SUITES: &str = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:\
                            TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_CCM_SHA256";

/// Every TLS 1.2 suite with authentication: the AEAD suites, the CBC suites and the RSA key
/// transport suites a legacy Config may ask for.
const TLS12_SUITES: &str = "ALL:!aNULL:!eNULL";

/// Server-side settings shared by every connection of one lab server instance.
#[derive(Debug, Clone, Default)]
pub struct ServerSettings {
    /// TLS 1.3 and 1.2 tickets and a stateful cache for TLS 1.2 session IDs; without it, no
    /// tickets and no cache, so fresh-handshake measurements hold no ticket-issuing work.
    pub resumption: bool,
    /// Accept ECH with this key.
    pub ech: Option<EchKey>,
}

/// A configured server: one `SSL_CTX` shared by every connection.
#[derive(Clone)]
pub struct ServerConfig {
    context: SslContext,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig").finish_non_exhaustive()
    }
}

/// Builds a server for `certificates` (leaf first, then intermediates, as tlslab-pki's
/// `ServedChain::certificates`) and the leaf's `key` (PKCS#8, PKCS#1 or SEC1 DER).
///
/// Everything is enabled, so the client alone decides what a Config negotiates and one
/// server serves every client-side Config with the same certificate.
pub fn server_config(
    certificates: &[CertificateDer<'_>],
    key: &PrivateKeyDer<'_>,
    settings: &ServerSettings,
) -> Result<Arc<ServerConfig>, Error> {
    let (leaf, intermediates) = certificates
        .split_first()
        .ok_or_else(|| Error::new("the server needs at least one certificate"))?;
    let mut builder = SslContextBuilder::new(SslMethod::tls_server())?;
    builder.set_min_proto_version(Some(SslVersion::TLS1_2))?;
    builder.set_max_proto_version(Some(SslVersion::TLS1_3))?;
    // Level 0: the lab server accepts whatever a client offers, including what OpenSSL's
    // default level refuses (SHA-1 signatures, small DH groups, from old clients); the
    // client's settings decide what a Config negotiates. The three legacy suites tlslab
    // offers would negotiate at the default level too.
    builder.set_security_level(0);
    builder.set_cipher_list(TLS12_SUITES)?;
    builder.set_ciphersuites(TLS13_SUITES)?;
    let groups: Vec<&str> = Group::ALL
        .iter()
        .map(|group| group.openssl_name())
        .collect();
    builder.set_groups_list(&groups.join(":"))?;
    // SAFETY: the context is live.
    unsafe { ffi::set_dh_auto(builder.as_ptr()) };
    let leaf = X509::from_der(leaf)?;
    builder.set_certificate(&leaf)?;
    for intermediate in intermediates {
        builder.add_extra_chain_cert(X509::from_der(intermediate)?)?;
    }
    let key = PKey::private_key_from_der(key.secret_der())?;
    builder.set_private_key(&key)?;
    builder.check_private_key()?;
    if settings.resumption {
        builder.set_session_cache_mode(SslSessionCacheMode::SERVER);
        builder.set_session_id_context(b"tlslab")?;
    } else {
        builder.set_session_cache_mode(SslSessionCacheMode::OFF);
        builder.set_options(SslOptions::NO_TICKET);
        builder.set_num_tickets(0)?;
    }
    if let Some(key) = &settings.ech {
        let store = key.store()?;
        // SAFETY: both are live; the context takes its own copy of the store.
        if unsafe { ffi::SSL_CTX_set1_echstore(builder.as_ptr(), store.0) } != 1 {
            return Err(Error::openssl("OpenSSL did not accept the ECH store"));
        }
    }
    Ok(Arc::new(ServerConfig {
        context: builder.build(),
    }))
}

/// Accepts connections forever, one task each.
pub async fn serve(listener: TcpListener, config: Arc<ServerConfig>) -> io::Result<()> {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let config = config.clone();
                tokio::spawn(async move {
                    let _ = serve_connection(stream, &config).await;
                });
            }
            // Out of file descriptors: back off instead of spinning; the clients will see
            // slow connects, not a dead server.
            Err(error) if matches!(error.raw_os_error(), Some(24 | 23)) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(_) => {}
        }
    }
}

/// Runs one connection: the handshake, then reads and drops application data until the
/// client leaves.
pub async fn serve_connection(mut socket: TcpStream, config: &ServerConfig) -> io::Result<()> {
    socket.set_nodelay(true)?;
    let ssl = Ssl::new(&config.context).map_err(io::Error::other)?;
    let mut tls = SslStream::new(ssl, Pipe::default()).map_err(io::Error::other)?;
    let mut buffer = vec![0u8; 16 * 1024];
    let mut plaintext = [0u8; 4096];
    let mut handshaking = true;
    loop {
        if handshaking {
            let result = tls.accept();
            flush(&mut tls, &mut socket).await?;
            match result {
                Ok(()) => handshaking = false,
                Err(error) if error.code() == ErrorCode::WANT_READ => {}
                // The alert OpenSSL queued went out with the flush.
                Err(error) => return Err(io::Error::other(error.to_string())),
            }
        }
        if !handshaking {
            // Application data is read and dropped: the lab server measures handshakes.
            loop {
                match tls.ssl_read(&mut plaintext) {
                    Ok(_) => continue,
                    Err(error) if error.code() == ErrorCode::WANT_READ => break,
                    Err(error) if error.code() == ErrorCode::ZERO_RETURN => {
                        let _ = tls.shutdown();
                        flush(&mut tls, &mut socket).await?;
                        return Ok(());
                    }
                    Err(error) => return Err(io::Error::other(error.to_string())),
                }
            }
            // Tickets and key updates written while reading.
            flush(&mut tls, &mut socket).await?;
        }
        let read = socket.read(&mut buffer).await?;
        if read == 0 {
            return Ok(());
        }
        tls.get_mut().push(&buffer[..read]);
    }
}

async fn flush(tls: &mut SslStream<Pipe>, socket: &mut TcpStream) -> io::Result<()> {
    let pipe = tls.get_mut();
    if pipe.outgoing.is_empty() {
        return Ok(());
    }
    socket.write_all(&pipe.outgoing).await?;
    pipe.outgoing.clear();
    Ok(())
}

impl ServerConfig {
    /// The raw context, for settings this crate does not wrap.
    pub fn context(&self) -> &SslContext {
        &self.context
    }
}

// The context is only read after it is built; OpenSSL locks what connections share.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ServerConfig>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_chain_is_refused() {
        let key = PrivateKeyDer::Pkcs8(Vec::<u8>::new().into());
        let error = server_config(&[], &key, &ServerSettings::default()).unwrap_err();
        assert!(error.to_string().contains("at least one certificate"));
    }
}
