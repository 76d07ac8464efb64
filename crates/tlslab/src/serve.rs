//! `tlslab serve`: the flags become a request for the serve workflow (tlslab-workflow); its
//! banner is said here.

use std::net::SocketAddr;
use std::sync::Arc;

use tlslab_core::{Backend, CertProfile, ServerResumption};
use tlslab_workflow::serve::{ServeMode, ServeRequest, Serving};
use tlslab_workflow::Notice;

use crate::cli::ServeArgs;
use crate::failure::CliError;
use crate::output;

/// An address to listen on, as `option` gives it.
fn address(text: &str, option: &str) -> Result<SocketAddr, CliError> {
    text.parse().map_err(|_| {
        CliError::usage(
            format!("'{text}' is not an address to listen on"),
            format!("give ip:port, for example {option} 127.0.0.1:8443"),
        )
    })
}

fn request(args: &ServeArgs) -> Result<ServeRequest, CliError> {
    let backend: Backend = args
        .backend
        .parse()
        .map_err(|error| CliError::usage(error, "give --backend rustls or --backend openssl"))?;
    let cert: CertProfile = args
        .cert
        .parse()
        .map_err(|error| CliError::usage(error, "for example --cert ecdsa-p256"))?;
    let listen = address(&args.listen, "--listen")?;
    let plain_listen = args
        .plain_listen
        .as_deref()
        .map(|text| address(text, "--plain-listen"))
        .transpose()?;
    let resumption = ServerResumption::parse(&args.resumption).ok_or_else(|| {
        CliError::usage(
            format!("unknown resumption '{}'", args.resumption),
            "give --resumption off, tickets or cache",
        )
    })?;
    let client_cert_profile = args
        .client_cert_profile
        .as_deref()
        .map(|text| {
            text.parse::<CertProfile>().map_err(|error| {
                CliError::usage(error, "for example --client-cert-profile ecdsa-p256")
            })
        })
        .transpose()?;
    Ok(ServeRequest {
        backend,
        cert,
        chain: args.chain,
        listen,
        plain_listen,
        resumption,
        early_data: args.early_data,
        body: args.body,
        ech_public_name: args.ech_public_name.clone(),
        client_cert_profile,
        pki_dir: args.pki_dir.clone(),
        report_to: match (&args.store, args.run) {
            (Some(store), Some(run)) => {
                crate::location::to_write(Some(store), None)?.map(|location| (location, run))
            }
            _ => None,
        },
        mode: match args.control {
            true => ServeMode::Control,
            false => ServeMode::UntilStopped,
        },
    })
}

pub fn serve(args: &ServeArgs) -> Result<i32, CliError> {
    let request = request(args)?;
    // As a run's child (--control) the server ends when its stdin closes, and a signal ends
    // it at once, as before any handler; standalone, Ctrl-C and SIGTERM stop it.
    let mut control = match request.mode {
        ServeMode::Control => tlslab_workflow::Control::default(),
        ServeMode::UntilStopped => crate::run::control(None),
    };
    let public_name = args.ech_public_name.clone();
    control.notices = Some(Arc::new(move |notice: &Notice| match notice {
        Notice::Serving(serving) => banner(serving, &public_name),
        other => crate::run::print_notice(other),
    }));
    tlslab_workflow::serve::serve(&request, &control)?;
    Ok(0)
}

/// Where the server listens, what it sends, and what a client must trust.
fn banner(serving: &Serving, ech_public_name: &str) {
    let Serving {
        local,
        plain,
        cert,
        chain,
        root,
        ..
    } = serving;
    if !local.ip().is_loopback() {
        output::note(format_args!(
            "warning: the lab server listens on {local}, which other machines can reach, and \
             answers anyone who connects; --listen 127.0.0.1:PORT keeps it on this machine"
        ));
    }
    match (serving.backend, &serving.ech_config) {
        (Backend::Openssl, Some(ech_config)) => output::note(format_args!(
            "tlslab OpenSSL lab server on {local} TCP ({}; {cert}, {chain} certificate(s) sent); trust {} ; \\
             ECH public name {ech_public_name}, --ech-config {ech_config} ; plain HTTP on {plain} ; Ctrl-C stops",
            tlslab_openssl::openssl_version(),
            root.display(),
        )),
        _ => output::note(format_args!(
            "tlslab lab server on {local} TCP and UDP (TLS and QUIC; {cert}, {chain} certificate(s) sent); trust {} ; plain HTTP on {plain} ; Ctrl-C stops",
            root.display()
        )),
    }
    if let Some(client) = &serving.client {
        output::note(format_args!(
            "it requires a client certificate issued by {} ; the lab's: --cert {} --key {}",
            client.root.display(),
            client.certificate.display(),
            client.key.display()
        ));
    }
}
