//! `tlslab capture`: the flags become a request for the capture workflow
//! (tlslab-workflow), which runs until its duration or Ctrl-C; what it stored is printed
//! here.

use tlslab_workflow::capture::CaptureRequest;

use crate::cli::CaptureArgs;
use crate::failure::CliError;
use crate::output;
use crate::passive;

fn request(args: &CaptureArgs) -> Result<CaptureRequest, CliError> {
    // Checked before anything else, as the options are read.
    tlslab_workflow::capture::check_filter(args.filter.as_deref())?;
    let duration = args
        .duration
        .as_deref()
        .map(tlslab_core::duration::parse)
        .transpose()
        .map_err(|problem| {
            CliError::usage(
                format!("--duration: {problem}"),
                "for example --duration 30s or --duration 10m",
            )
        })?;
    let rotation = args
        .rotate
        .as_deref()
        .map(tlslab_workflow::capture::rotation)
        .transpose()?;
    Ok(CaptureRequest {
        interface: args.interface.clone(),
        filter: args.filter.clone(),
        duration,
        store: crate::location::to_write(args.store.as_deref(), args.out.as_deref())?,
        write: args.write.clone(),
        rotation,
        force: args.force,
        key_log: args.keylog.clone(),
        vantage: args.vantage.map(|vantage| vantage.vantage()),
        metrics: args.metrics,
        influx: args.influx.clone(),
        invocation: crate::run::invocation()?,
        capture_point: args.capture_point.clone(),
        join: args.run,
    })
}

pub fn capture(args: &CaptureArgs) -> Result<i32, CliError> {
    let request = request(args)?;
    let outcome = tlslab_workflow::capture::capture(&request, &crate::run::control(None))?;
    if let (Some(first), Some(last), true) = (
        outcome.files.first(),
        outcome.files.last(),
        outcome.files.len() > 1,
    ) {
        output::note(format_args!(
            "packets written to {} files, {} to {}",
            outcome.files.len(),
            first.display(),
            last.display()
        ));
    }
    let passive = &outcome.passive;
    if let Some(influx) = &passive.influx {
        passive::say_what_influx_took(influx);
    }
    passive::print_summary(passive, args.json)?;
    Ok(0)
}
