//! `tlslab serve`: the lab server, standalone or as a child of `tlslab run`.

use std::net::SocketAddr;

use tlslab_backend::ServerSettings;
use tlslab_core::{Backend, CertProfile, ServerResumption};
use tlslab_engine::serve::{start, LabOptions};

use crate::cli::ServeArgs;
use crate::failure::CliError;
use crate::output;

pub fn serve(args: &ServeArgs) -> Result<i32, CliError> {
    let backend: Backend = args
        .backend
        .parse()
        .map_err(|error| CliError::usage(error, "give --backend rustls or --backend openssl"))?;
    let cert: CertProfile = args
        .cert
        .parse()
        .map_err(|error| CliError::usage(error, "for example --cert ecdsa-p256"))?;
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        CliError::usage(
            format!("'{}' is not an address to listen on", args.listen),
            "give ip:port, for example --listen 127.0.0.1:8443",
        )
    })?;
    let plain_listen: Option<SocketAddr> = match &args.plain_listen {
        Some(text) => Some(text.parse().map_err(|_| {
            CliError::usage(
                format!("'{text}' is not an address to listen on"),
                "give ip:port, for example --plain-listen 127.0.0.1:8080",
            )
        })?),
        None => None,
    };
    let pki = crate::run::open_pki(&args.pki_dir)?;
    let chain = pki.chain(cert, args.chain).map_err(|error| {
        CliError::usage(error.to_string(), "the chain depth is 1 to 5 certificates")
    })?;
    let resumption = ServerResumption::parse(&args.resumption).ok_or_else(|| {
        CliError::usage(
            format!("unknown resumption '{}'", args.resumption),
            "give --resumption off, tickets or cache",
        )
    })?;
    if args.body > tlslab_core::config::MAX_BODY {
        return Err(CliError::usage(
            format!(
                "a body of {} bytes is above the lab server's limit",
                args.body
            ),
            format!("give --body {} or less", tlslab_core::config::MAX_BODY),
        ));
    }
    let client_certificate = match &args.client_cert_profile {
        Some(text) => {
            let profile: CertProfile = text.parse().map_err(|error| {
                CliError::usage(error, "for example --client-cert-profile ecdsa-p256")
            })?;
            // Made here, before the server listens, so a client can present it at once.
            Some(pki.client_certificate(profile).map_err(|error| {
                CliError::environment(
                    format!("{}{}", error.message(), tlslab_core::Causes(&error)),
                    error.hint(),
                )
            })?)
        }
        None => None,
    };
    let root = chain.root_pem.clone();
    let lab = start(&LabOptions {
        backend,
        chain,
        settings: ServerSettings {
            resumption,
            early_data: args.early_data,
            body: args.body,
            client_roots: client_certificate
                .iter()
                .map(|client| client.root.clone())
                .collect(),
        },
        listen,
        plain_listen,
        ech_public_name: args.ech_public_name.clone(),
    })?;
    if args.control {
        lab.answer_control_requests();
        return Ok(0);
    }
    let local = lab.local;
    let plain = lab.plain;
    if !local.ip().is_loopback() {
        output::note(format_args!(
            "warning: the lab server listens on {local}, which other machines can reach, and \
             answers anyone who connects; --listen 127.0.0.1:PORT keeps it on this machine"
        ));
    }
    match (backend, &lab.ech_config) {
        (Backend::Openssl, Some(ech_config)) => output::note(format_args!(
            "tlslab OpenSSL lab server on {local} TCP ({}; {cert}, {} certificate(s) sent); trust {} ; \\
             ECH public name {}, --ech-config {ech_config} ; plain HTTP on {plain} ; Ctrl-C stops",
            tlslab_openssl::openssl_version(),
            args.chain,
            root.display(),
            args.ech_public_name,
        )),
        _ => output::note(format_args!(
            "tlslab lab server on {local} TCP and UDP (TLS and QUIC; {cert}, {} certificate(s) sent); trust {} ; plain HTTP on {plain} ; Ctrl-C stops",
            args.chain,
            root.display()
        )),
    }
    if let Some(client) = &client_certificate {
        output::note(format_args!(
            "it requires a client certificate issued by {} ; the lab's: --cert {} --key {}",
            client.root_pem.display(),
            client.certificate_pem.display(),
            client.key_pem.display()
        ));
    }
    lab.serve_until(&crate::run::stop_on_signals());
    Ok(0)
}
