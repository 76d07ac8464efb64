//! A lab server running in this process (`tlslab serve`): the rustls one on TCP and QUIC, or
//! the OpenSSL one on TCP with an ECH key of its own; either also serves its site over
//! plain-text HTTP on a second port.

use std::net::SocketAddr;
use std::sync::Arc;

use tlslab_backend::{CounterSnapshot, ServerSettings};
use tlslab_core::Backend;
use tlslab_pki::ServedChain;

use crate::error::RunError;
use crate::lab::Ready;
use crate::stop::Stop;
use crate::transport::{bind_listener, raise_file_limit};

/// What a lab server serves and where.
#[derive(Debug)]
pub struct LabOptions {
    pub backend: Backend,
    pub chain: ServedChain,
    pub settings: ServerSettings,
    /// Port 0 picks a free port (the same number for TCP and UDP).
    pub listen: SocketAddr,
    /// Where to serve plain-text HTTP; `None`: a free port on `listen`'s address.
    pub plain_listen: Option<SocketAddr>,
    /// The public name in the OpenSSL server's ECH configuration.
    pub ech_public_name: String,
}

/// A lab server accepting connections on its own runtime until it is dropped.
pub struct RunningLab {
    runtime: tokio::runtime::Runtime,
    /// Where it listens (TCP, and UDP for QUIC on rustls).
    pub local: SocketAddr,
    /// Where it serves the same site over plain-text HTTP/1.1 and h2c (no TLS handshakes).
    pub plain: SocketAddr,
    /// The ECHConfigList clients need (OpenSSL only), base64.
    pub ech_config: Option<String>,
    counters: Box<dyn Fn() -> CounterSnapshot + Send + Sync>,
}

impl RunningLab {
    /// What the server has counted so far.
    pub fn counters(&self) -> CounterSnapshot {
        (self.counters)()
    }

    /// Serves `tlslab run`: announces the server on stdout, then answers control requests
    /// until stdin closes.
    pub fn answer_control_requests(self) {
        let ready = Ready {
            listening: self.local,
            plain: Some(self.plain),
            ech_config: self.ech_config.clone(),
        };
        crate::lab::answer_control_requests(&ready, || self.counters());
        self.runtime.shutdown_background();
    }

    /// Serves until `stop` is requested.
    pub fn serve_until(self, stop: &Stop) {
        while !stop.is_requested() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        self.runtime.shutdown_background();
    }
}

/// Starts the lab server `options` describe.
pub fn start(options: &LabOptions) -> Result<RunningLab, RunError> {
    // Thousands of agents need as many sockets; a lower limit only means fewer agents fit.
    let _ = raise_file_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| RunError::environment(error.to_string(), "check the process limits"))?;
    match options.backend {
        Backend::Rustls => start_rustls(options, runtime),
        Backend::Openssl => start_openssl(options, runtime),
    }
}

fn start_rustls(
    options: &LabOptions,
    runtime: tokio::runtime::Runtime,
) -> Result<RunningLab, RunError> {
    let lab = tlslab_tls::server::Lab::new(
        options.chain.certificates.clone(),
        options.chain.private_key.clone_key(),
        &options.settings,
    )
    .map_err(|error| {
        RunError::environment(
            format!(
                "cannot configure the lab server: {}",
                tlslab_core::WithCauses(&error)
            ),
            "delete the PKI cache directory to regenerate it",
        )
    })?;
    let lab = Arc::new(lab);
    let quic_config = lab.quic_config().map_err(|error| {
        RunError::environment(
            format!(
                "cannot configure the lab server's QUIC side: {}",
                tlslab_core::WithCauses(&error)
            ),
            "report this as a bug",
        )
    })?;
    let address = options.listen;
    // TLS over TCP and QUIC share one port number; with port 0, retry until a port is free on
    // both.
    let (listener, endpoint) = runtime
        .block_on(async {
            let mut last_error = None;
            for _ in 0..20 {
                let listener = bind_listener(address)?;
                let local = listener.local_addr()?;
                match std::net::UdpSocket::bind(local) {
                    Ok(socket) => {
                        let endpoint = tlslab_tls::quinn::Endpoint::new(
                            tlslab_tls::quinn::EndpointConfig::default(),
                            Some(quic_config.clone()),
                            socket,
                            Arc::new(tlslab_tls::quinn::TokioRuntime),
                        )?;
                        return Ok((listener, endpoint));
                    }
                    Err(error) if address.port() == 0 => last_error = Some(error),
                    Err(error) => return Err(error),
                }
            }
            Err(last_error.unwrap_or_else(|| std::io::Error::other("no free port")))
        })
        .map_err(|error: std::io::Error| {
            RunError::environment(
                format!("cannot listen on {address}: {error}"),
                "choose a free port (TCP and UDP), for example --listen 127.0.0.1:0",
            )
        })?;
    let local = listener
        .local_addr()
        .map_err(|error| RunError::environment(error.to_string(), "check the address"))?;
    let plain = serve_plain(options, &runtime, lab.site())?;
    runtime.spawn(tlslab_tls::server::serve_tcp(listener, lab.clone()));
    runtime.spawn(tlslab_tls::server::serve_quic(endpoint, lab.clone()));
    Ok(RunningLab {
        runtime,
        local,
        plain,
        ech_config: None,
        counters: Box::new(move || lab.counters()),
    })
}

/// The OpenSSL lab server: TLS over TCP, with an ECH key of its own whose configuration it
/// announces, so Configs with and without ECH share it.
fn start_openssl(
    options: &LabOptions,
    runtime: tokio::runtime::Runtime,
) -> Result<RunningLab, RunError> {
    let cannot = |what: &str, error: tlslab_openssl::Error| {
        RunError::environment(
            format!("cannot {what}: {}", tlslab_core::WithCauses(&error)),
            "check the OpenSSL build (scripts/openssl) and the PKI cache directory",
        )
    };
    let ech = tlslab_openssl::EchKey::generate(&options.ech_public_name)
        .map_err(|error| cannot("make an ECH key", error))?;
    let ech_config = ech
        .config_list_base64()
        .map_err(|error| cannot("encode the ECH configuration", error))?;
    let config = tlslab_openssl::server_config(
        &options.chain.certificates,
        &options.chain.private_key,
        &options.settings,
        Some(&ech),
    )
    .map_err(|error| cannot("configure the OpenSSL lab server", error))?;
    let address = options.listen;
    let listener = runtime
        .block_on(async { bind_listener(address) })
        .map_err(|error| {
            RunError::environment(
                format!("cannot listen on {address}: {error}"),
                "choose a free port, for example --listen 127.0.0.1:0",
            )
        })?;
    let local = listener
        .local_addr()
        .map_err(|error| RunError::environment(error.to_string(), "check the address"))?;
    let plain = serve_plain(options, &runtime, config.site())?;
    runtime.spawn(tlslab_openssl::serve(listener, config.clone()));
    Ok(RunningLab {
        runtime,
        local,
        plain,
        ech_config: Some(ech_config),
        counters: Box::new(move || config.counters()),
    })
}

/// Serves `site` over plain-text HTTP where `options` say (by default a free port on the TLS
/// address); returns where.
fn serve_plain(
    options: &LabOptions,
    runtime: &tokio::runtime::Runtime,
    site: &tlslab_site::Site,
) -> Result<SocketAddr, RunError> {
    let address = options
        .plain_listen
        .unwrap_or_else(|| SocketAddr::new(options.listen.ip(), 0));
    let cannot = |error: std::io::Error| {
        RunError::environment(
            format!("cannot listen for plain-text HTTP on {address}: {error}"),
            "choose a free port, for example --plain-listen 127.0.0.1:0",
        )
    };
    let listener = runtime
        .block_on(async { bind_listener(address) })
        .map_err(cannot)?;
    let local = listener.local_addr().map_err(cannot)?;
    runtime.spawn(tlslab_site::serve_plain(listener, site.clone()));
    Ok(local)
}
