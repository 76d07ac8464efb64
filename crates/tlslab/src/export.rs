//! `tlslab export` (the flags as an [`ExportRequest`] into a file or stdout; the export is
//! the export workflow's, [`tlslab_workflow::export`]) and `tlslab pki` (its paths and pins
//! printed; made and read by [`tlslab_workflow::pki`]).

use tlslab_workflow::export::{Destination, ExportFormat, ExportRequest};

use crate::cli::{ExportArgs, Format, PkiArgs};
use crate::failure::CliError;
use crate::output;

pub fn export(args: &ExportArgs) -> Result<i32, CliError> {
    let request = ExportRequest {
        results: crate::location::to_read(args.results.as_deref(), &args.store)?,
        format: match args.format {
            Format::Csv => ExportFormat::Csv,
            Format::Jsonl => ExportFormat::JsonLines,
        },
        scans: args.scans,
        speed: args.speed,
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
    use tlslab_workflow::pki;
    if let Some(path) = &args.pin_of {
        output::print(format_args!("{}\n", pki::pin_of(path)?))?;
        return Ok(0);
    }
    let profile = pki::profile(&args.cert)?;
    let lab = tlslab_workflow::open_pki(args.pki_dir.as_deref())?;
    let chain = pki::chain(&lab, profile, args.chain)?;
    output::print(format_args!(
        "chain {}\nkey {}\nroot {}\n",
        chain.chain_pem.display(),
        chain.key_pem.display(),
        chain.root_pem.display()
    ))?;
    if args.client {
        let client = pki::client_certificate(&lab, profile)?;
        output::print(format_args!(
            "client certificate {}\nclient key {}\n",
            client.certificate_pem.display(),
            client.key_pem.display()
        ))?;
    }
    Ok(0)
}
