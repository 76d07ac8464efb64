//! `tlslab export` and `tlslab pki`.

use std::io::{BufWriter, Write};

use tlslab_store::ExportFormat;

use crate::cli::{ExportArgs, Format, PkiArgs};
use crate::failure::CliError;
use crate::output;
use tlslab_workflow::files;

pub fn export(args: &ExportArgs) -> Result<i32, CliError> {
    if let Some(path) = &args.output {
        let output = files::Output::new("-o", path, files::Kind::Export);
        files::claim(&output, &[&args.results], args.force)?;
    }
    let store = output::open_store(&args.results)?;
    let format = match args.format {
        Format::Csv => ExportFormat::Csv,
        Format::Jsonl => ExportFormat::JsonLines,
    };
    let write = |out: &mut dyn Write| -> Result<(), CliError> {
        if args.scans {
            write_scans(&store, out)
        } else {
            tlslab_store::export(&store, format, out)?;
            Ok(())
        }
    };
    match &args.output {
        Some(path) => {
            // Into a temporary file beside the output, renamed into place once whole.
            let file = files::temporary_beside(path)?;
            let mut out = BufWriter::new(file);
            write(&mut out)?;
            let file = out
                .into_inner()
                .map_err(|error| files::cannot_write(path, error.into_error()))?;
            files::finish(file, path)?;
        }
        None => {
            let mut out = BufWriter::new(output::stdout());
            write(&mut out)?;
            out.flush().map_err(output::write_failed)?;
        }
    }
    Ok(0)
}

/// `--scans`: each stored scan as one JSON line, its `--json` object under `scan`.
fn write_scans(store: &tlslab_store::Store, out: &mut dyn Write) -> Result<(), CliError> {
    for scan in store.scans()? {
        let line = serde_json::json!({
            "id": scan.id,
            "scanned_at": scan.scanned_at,
            "target": scan.target,
            "address": scan.address,
            "server_name": scan.server_name,
            "grade": scan.grade,
            "connections": scan.connections,
            "command_line": scan.command_line,
            "scan": scan.report,
        });
        writeln!(out, "{line}").map_err(output::write_failed)?;
    }
    Ok(())
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
