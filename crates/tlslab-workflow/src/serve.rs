//! `serve`: the lab server, until the caller stops it, or answering a run's control
//! requests (as the child `tlslab run` starts).

use std::net::SocketAddr;
use std::path::PathBuf;

use tlslab_backend::ServerSettings;
use tlslab_core::{Backend, CertProfile, ServerResumption};
use tlslab_engine::serve::{start, LabOptions};

use crate::{Control, Notice, WorkflowError};

/// The lab server to start.
#[derive(Debug, Clone)]
pub struct ServeRequest {
    /// The TLS library serving.
    pub backend: Backend,
    /// The certificate's key type.
    pub cert: CertProfile,
    /// Certificates sent (the leaf and `chain - 1` intermediates), 1 to 5.
    pub chain: u8,
    /// Where it listens (port 0: a free port).
    pub listen: SocketAddr,
    /// Where it serves plain-text HTTP; a free port on `listen`'s address when `None`.
    pub plain_listen: Option<SocketAddr>,
    /// Session resumption offered.
    pub resumption: ServerResumption,
    /// Whether TLS 1.3 early data is accepted.
    pub early_data: bool,
    /// Body bytes of every response.
    pub body: u64,
    /// The public name of the OpenSSL server's ECH configuration.
    pub ech_public_name: String,
    /// Require a client certificate issued by the lab's root of this profile.
    pub client_cert_profile: Option<CertProfile>,
    /// The lab's certificate directory; the default one when `None`.
    pub pki_dir: Option<PathBuf>,
    /// Until stopped, or answering a run's control requests.
    pub mode: ServeMode,
    /// A distributed run this server's CPU time and memory are reported into, as it goes
    /// (`--store URL --run ID`): each trial's server cost, though the server is its own
    /// host.
    pub report_to: Option<(tlslab_store::Location, i64)>,
}

impl ServeRequest {
    /// rustls with an ECDSA P-256 leaf on `listen`, as `tlslab serve` without options.
    pub fn new(listen: SocketAddr) -> ServeRequest {
        ServeRequest {
            backend: Backend::Rustls,
            cert: CertProfile::EcdsaP256,
            chain: 1,
            listen,
            plain_listen: None,
            resumption: ServerResumption::Off,
            early_data: false,
            body: 1024,
            ech_public_name: "public.tlslab.test".into(),
            client_cert_profile: None,
            pki_dir: None,
            mode: ServeMode::UntilStopped,
            report_to: None,
        }
    }
}

/// How long the server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeMode {
    /// Until the caller's stop token is requested.
    UntilStopped,
    /// Announces itself on stdout and answers a run's control requests until stdin closes
    /// (`tlslab serve --control`, started by the engine).
    Control,
}

/// A lab server that listens, as [`Notice::Serving`] says it.
#[derive(Debug, Clone)]
pub struct Serving {
    /// The TLS library serving.
    pub backend: Backend,
    /// Where it listens for TLS (and QUIC, on rustls).
    pub local: SocketAddr,
    /// Where it serves plain-text HTTP.
    pub plain: SocketAddr,
    /// The certificate's key type.
    pub cert: CertProfile,
    /// Certificates sent.
    pub chain: u8,
    /// The root a client must trust, as a PEM file.
    pub root: PathBuf,
    /// The ECH configuration clients need (OpenSSL only), base64.
    pub ech_config: Option<String>,
    /// The lab's client certificate, when one is required.
    pub client: Option<ClientFiles>,
}

/// The lab's client certificate as files: what a client presents to a server that requires
/// one.
#[derive(Debug, Clone)]
pub struct ClientFiles {
    /// The root that issued it (what the server trusts).
    pub root: PathBuf,
    /// The certificate.
    pub certificate: PathBuf,
    /// Its key.
    pub key: PathBuf,
}

/// Starts the lab server `request` describes, says where it listens
/// ([`Notice::Serving`]), and serves until `control.stop` is requested (or, in
/// [`ServeMode::Control`], until stdin closes).
pub fn serve(request: &ServeRequest, control: &Control) -> Result<(), WorkflowError> {
    if request.body > tlslab_core::config::MAX_BODY {
        return Err(WorkflowError::usage(
            format!(
                "a body of {} bytes is above the lab server's limit",
                request.body
            ),
            format!("give --body {} or less", tlslab_core::config::MAX_BODY),
        ));
    }
    let pki = crate::open_pki(request.pki_dir.as_deref())?;
    let chain = pki
        .chain(request.cert, request.chain)
        .map_err(|error| WorkflowError::usage(error.message(), error.hint()))?;
    // Made here, before the server listens, so a client can present it at once.
    let client_certificate = request
        .client_cert_profile
        .map(|profile| pki.client_certificate(profile))
        .transpose()
        .map_err(WorkflowError::Pki)?;
    let root = chain.root_pem.clone();
    // The run is reached before the server listens: a wrong URL or run is said at once.
    let reporter = request
        .report_to
        .as_ref()
        .map(|(location, run)| crate::agents::UsageReporter::start(location, *run))
        .transpose()?;
    let lab = start(&LabOptions {
        backend: request.backend,
        chain,
        settings: ServerSettings {
            resumption: request.resumption,
            early_data: request.early_data,
            body: request.body,
            client_roots: client_certificate
                .iter()
                .map(|client| client.root.clone())
                .collect(),
        },
        listen: request.listen,
        plain_listen: request.plain_listen,
        ech_public_name: request.ech_public_name.clone(),
    })
    .map_err(|source| WorkflowError::Engine {
        source,
        results: None,
    })?;
    if request.mode == ServeMode::Control {
        lab.answer_control_requests();
        return Ok(());
    }
    control.notice(Notice::Serving(Serving {
        backend: request.backend,
        local: lab.local,
        plain: lab.plain,
        cert: request.cert,
        chain: request.chain,
        root,
        ech_config: lab.ech_config.clone(),
        client: client_certificate.map(|client| ClientFiles {
            root: client.root_pem,
            certificate: client.certificate_pem,
            key: client.key_pem,
        }),
    }));
    lab.serve_until(&control.stop);
    match reporter {
        Some(reporter) => reporter.finish(),
        None => Ok(()),
    }
}
