//! `tlslab serve`: the lab server, standalone or as a child of `tlslab run`.

use std::net::SocketAddr;
use std::sync::Arc;

use tlslab_core::{Backend, CertProfile, ServerResumption};
use tlslab_engine::lab::{Ready, ServerCounters};
use tlslab_pki::ServedChain;
use tlslab_tls::server::{CounterSnapshot, LabSettings};

use crate::cli::ServeArgs;
use crate::failure::CliError;

pub fn serve(args: &ServeArgs) -> Result<i32, CliError> {
    let backend: Backend = args
        .backend
        .parse()
        .map_err(|error| CliError::usage(error, "give --backend rustls or --backend openssl"))?;
    let cert: CertProfile = args
        .cert
        .parse()
        .map_err(|error| CliError::usage(error, "for example --cert ecdsa-p256"))?;
    let address: SocketAddr = args.listen.parse().map_err(|_| {
        CliError::usage(
            format!("'{}' is not an address to listen on", args.listen),
            "give ip:port, for example --listen 127.0.0.1:8443",
        )
    })?;
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
    if backend == Backend::Openssl {
        return serve_openssl(args, address, cert, &chain, resumption);
    }
    let lab = tlslab_tls::server::Lab::new(
        chain.certificates.clone(),
        chain.private_key.clone_key(),
        &LabSettings {
            resumption,
            early_data: args.early_data,
            body: args.body,
        },
    )
    .map_err(|error| {
        CliError::environment(
            format!("cannot configure the lab server: {error}"),
            "delete the PKI cache directory to regenerate it",
        )
    })?;
    let lab = Arc::new(lab);
    let quic_config = lab.quic_config().map_err(|error| {
        CliError::environment(
            format!("cannot configure the lab server's QUIC side: {error}"),
            "report this as a bug",
        )
    })?;
    let _ = tlslab_net::raise_file_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::environment(error, "check the process limits"))?;
    // TLS over TCP and QUIC share one port number; with port 0, retry until a port is free on
    // both.
    let (listener, endpoint) = runtime
        .block_on(async {
            let mut last_error = None;
            for _ in 0..20 {
                let listener = tlslab_net::bind_listener(address)?;
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
            CliError::environment(
                format!("cannot listen on {address}: {error}"),
                "choose a free port (TCP and UDP), for example --listen 127.0.0.1:0",
            )
        })?;
    let local = listener
        .local_addr()
        .map_err(|error| CliError::environment(error, "check the address"))?;
    runtime.spawn(tlslab_tls::server::serve_tcp(listener, lab.clone()));
    runtime.spawn(tlslab_tls::server::serve_quic(endpoint, lab.clone()));
    if args.control {
        let lab = lab.clone();
        let ready = Ready {
            listening: local,
            ech_config: None,
        };
        tlslab_engine::answer_control_requests(&ready, move || counters(lab.counters()));
    } else {
        eprintln!(
            "tlslab lab server on {local} TCP and UDP (TLS and QUIC; {cert}, {} certificate(s) sent); trust {} ; Ctrl-C stops",
            args.chain,
            chain.root_pem.display()
        );
        runtime.block_on(async {
            let _ = tokio::signal::ctrl_c().await;
        });
    }
    runtime.shutdown_background();
    Ok(0)
}

fn counters(snapshot: CounterSnapshot) -> ServerCounters {
    ServerCounters {
        tickets_redeemed: snapshot.tickets_redeemed,
        replays_rejected: snapshot.replays_rejected,
        early_data_accepted: snapshot.early_data_accepted,
        requests: snapshot.requests,
    }
}

/// The OpenSSL lab server: TLS over TCP, with an ECH key of its own whose configuration it
/// announces (to `tlslab run` on the control channel, to people on stderr).
fn serve_openssl(
    args: &ServeArgs,
    address: SocketAddr,
    cert: CertProfile,
    chain: &ServedChain,
    resumption: ServerResumption,
) -> Result<i32, CliError> {
    let cannot = |what: &str, error: tlslab_openssl::Error| {
        CliError::environment(
            format!("cannot {what}: {error}"),
            "check the OpenSSL build (scripts/openssl) and the PKI cache directory",
        )
    };
    let ech = tlslab_openssl::EchKey::generate(&args.ech_public_name)
        .map_err(|error| cannot("make an ECH key", error))?;
    let ech_config = ech
        .config_list_base64()
        .map_err(|error| cannot("encode the ECH configuration", error))?;
    let config = tlslab_openssl::server_config(
        &chain.certificates,
        &chain.private_key,
        &tlslab_openssl::ServerSettings {
            resumption,
            early_data: args.early_data,
            body: args.body,
            ech: Some(ech),
        },
    )
    .map_err(|error| cannot("configure the OpenSSL lab server", error))?;
    let _ = tlslab_net::raise_file_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::environment(error, "check the process limits"))?;
    let listener = runtime
        .block_on(async { tlslab_net::bind_listener(address) })
        .map_err(|error| {
            CliError::environment(
                format!("cannot listen on {address}: {error}"),
                "choose a free port, for example --listen 127.0.0.1:0",
            )
        })?;
    let local = listener
        .local_addr()
        .map_err(|error| CliError::environment(error, "check the address"))?;
    runtime.spawn(tlslab_openssl::serve(listener, config.clone()));
    if args.control {
        let ready = Ready {
            listening: local,
            ech_config: Some(ech_config),
        };
        tlslab_engine::answer_control_requests(&ready, move || counters(config.counters()));
    } else {
        eprintln!(
            "tlslab OpenSSL lab server on {local} TCP ({}; {cert}, {} certificate(s) sent); trust {} ; \
             ECH public name {}, --ech-config {ech_config} ; Ctrl-C stops",
            tlslab_openssl::openssl_version(),
            args.chain,
            chain.root_pem.display(),
            args.ech_public_name,
        );
        runtime.block_on(async {
            let _ = tokio::signal::ctrl_c().await;
        });
    }
    runtime.shutdown_background();
    Ok(0)
}
