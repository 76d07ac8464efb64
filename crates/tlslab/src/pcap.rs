//! `tlslab pcap`: the flags become a request for the pcap workflow (tlslab-workflow); the
//! summary of what it stored and skipped is printed here.

use tlslab_workflow::pcap::PcapRequest;

use crate::cli::PcapArgs;
use crate::failure::{exit_code, CliError};
use crate::passive;

pub fn pcap(args: &PcapArgs) -> Result<i32, CliError> {
    let request = PcapRequest {
        captures: args.captures.clone(),
        store: crate::location::to_write(args.store.as_deref(), args.out.as_deref())?,
        force: args.force,
        key_log: args.keylog.clone(),
        filter: args.filter.clone(),
        vantage: args.vantage.map(|vantage| vantage.vantage()),
        influx: args.influx.clone(),
        invocation: crate::run::invocation()?,
    };
    let outcome = tlslab_workflow::pcap::pcap(&request, &crate::run::control(None))?;
    if let Some(influx) = &outcome.influx {
        passive::say_what_influx_took(influx);
    }
    passive::print_summary(&outcome, args.json)?;
    if outcome.interrupted {
        passive::interrupted(&outcome.results, &outcome.report);
    }
    Ok(outcome.kind().map_or(0, exit_code))
}
