//! `tlslab report`: the flags as a [`ReportRequest`], and what was written said. The
//! report is the report workflow's ([`tlslab_workflow::report`]).

use tlslab_workflow::report::{ReportFormat, ReportRequest};

use crate::cli::{self, ReportArgs};
use crate::failure::CliError;

pub fn report(args: &ReportArgs) -> Result<i32, CliError> {
    let request = ReportRequest {
        results: crate::location::to_read(args.results.as_deref(), &args.store)?,
        output: args.output.clone(),
        format: args.format.map(|format| match format {
            cli::ReportFormat::Html => ReportFormat::Html,
            cli::ReportFormat::Md => ReportFormat::Markdown,
        }),
        png: args.png.clone(),
        force: args.force,
        metric: args.metric.clone(),
    };
    let outcome = tlslab_workflow::report::report(&request, &crate::run::notices())?;
    crate::output::note(format_args!("wrote {}", outcome.output.display()));
    Ok(0)
}
