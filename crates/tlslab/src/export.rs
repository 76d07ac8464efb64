//! `tlslab export` (the flags as an [`ExportRequest`] into a file or stdout; the export is
//! the export workflow's, [`tlslab_workflow::export`]) and `tlslab pki`.

use tlslab_workflow::export::{Destination, ExportFormat, ExportRequest};

use crate::cli::{ExportArgs, Format, PkiArgs};
use crate::failure::CliError;
use crate::output;

pub fn export(args: &ExportArgs) -> Result<i32, CliError> {
    let request = ExportRequest {
        results: args.results.clone(),
        format: match args.format {
            Format::Csv => ExportFormat::Csv,
            Format::Jsonl => ExportFormat::JsonLines,
        },
        scans: args.scans,
        force: args.force,
    };
    let mut stdout = output::stdout();
    let destination = match &args.output {
        Some(path) => Destination::File(path.clone()),
        None => Destination::Writer(&mut stdout),
    };
    tlslab_workflow::export::export(&request, destination, &crate::run::notices())?;
    Ok(0)
}

pub fn pki(args: &PkiArgs) -> Result<i32, CliError> {
    if let Some(path) = &args.pin_of {
        let certificates = tlslab_pki::load_certificates(path).map_err(|error| {
            CliError::usage(
                format!("{error}{}", tlslab_core::Causes(&error)),
                "give a PEM file with the server's certificate",
            )
        })?;
        let pin = certificates
            .first()
            .and_then(|certificate| tlslab_backend::certificate::pin_of(certificate))
            .ok_or_else(|| {
                CliError::usage(
                    format!("{}: no certificate with a readable key", path.display()),
                    "give a PEM file with the server's certificate",
                )
            })?;
        output::print(format_args!("{pin}\n"))?;
        return Ok(0);
    }
    let profile = args
        .cert
        .parse()
        .map_err(|error| CliError::usage(error, "for example --cert ecdsa-p256"))?;
    let pki = tlslab_workflow::open_pki(args.pki_dir.as_deref())?;
    let chain = pki
        .chain(profile, args.chain)
        .map_err(|error| CliError::usage(error.to_string(), "the chain depth is 1 to 5"))?;
    output::print(format_args!(
        "chain {}\nkey {}\nroot {}\n",
        chain.chain_pem.display(),
        chain.key_pem.display(),
        chain.root_pem.display()
    ))?;
    if args.client {
        let client = pki.client_certificate(profile).map_err(|error| {
            CliError::environment(
                format!("{}{}", error.message(), tlslab_core::Causes(&error)),
                error.hint(),
            )
        })?;
        output::print(format_args!(
            "client certificate {}\nclient key {}\n",
            client.certificate_pem.display(),
            client.key_pem.display()
        ))?;
    }
    Ok(0)
}
