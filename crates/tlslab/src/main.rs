//! tlslab: a TLS handshake performance lab. The binary is a thin layer over the library
//! crates: each subcommand parses its flags into a request for a workflow of
//! tlslab-workflow (or a report call), prints what comes back, handles the signals that
//! stop it, and maps the outcome to an exit code (failure.rs).

#![forbid(unsafe_code)]

mod agent;
mod capture;
mod cli;
mod compare;
mod crosscheck;
mod export;
mod failure;
mod help;
mod load;
mod location;
mod manual;
mod output;
mod passive;
mod pcap;
mod plan;
mod report;
mod run;
mod scan;
mod serve;
mod speed;
mod store;

use clap::FromArgMatches;

/// mimalloc instead of glibc's allocator: a Sample is allocated where a handshake is read and
/// freed on the results writer's thread, a pattern glibc's per-thread arenas handle slowly
/// (its allocator took about a tenth of `tlslab pcap`'s reading thread; docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use crate::cli::{Cli, Command};

/// `--version` in long form: the commit and the TLS libraries this binary links.
fn long_version() -> String {
    let environment =
        tlslab_engine::environment::capture(env!("CARGO_PKG_VERSION"), env!("TLSLAB_COMMIT"));
    format!(
        "{} (commit {})\nrustls {} (crypto provider {})\naws-lc-rs {} (aws-lc-sys {})\n{}",
        env!("CARGO_PKG_VERSION"),
        env!("TLSLAB_COMMIT"),
        environment.rustls_version,
        environment.crypto_provider,
        tlslab_engine::environment::AWS_LC_RS_VERSION,
        tlslab_engine::environment::AWS_LC_SYS_VERSION,
        environment
            .openssl_version
            .unwrap_or_else(|| "OpenSSL: not linked".into())
    )
}

fn main() {
    let mut command = help::command();
    // Only --version needs the libraries' versions.
    if std::env::args().any(|argument| argument == "--version") {
        command = command.long_version(long_version());
    }
    let parsed = command
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        // --help and --version are answers, not errors.
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            std::process::exit(0);
        }
        Err(mut error) => {
            // clap's own message ("error: ..." with a usage line), then our hint.
            help::better_tip(&mut error, &std::env::args().collect::<Vec<_>>());
            let _ = error.print();
            output::note(
                "hint: `tlslab help` lists the commands, `tlslab <command> --help` its options",
            );
            std::process::exit(failure::exit_code(tlslab_workflow::ErrorKind::Usage));
        }
    };
    let result = match &cli.command {
        Command::Run(args) => run::run(args),
        Command::Load(args) => load::load(args),
        Command::Serve(args) => serve::serve(args),
        Command::Compare(args) => compare::compare(args),
        Command::Report(args) => report::report(args),
        Command::Export(args) => export::export(args),
        Command::Pki(args) => export::pki(args),
        Command::Pcap(args) => pcap::pcap(args),
        Command::Capture(args) => capture::capture(args),
        Command::Plan(args) => plan::plan(args),
        Command::Scan(args) => scan::scan(args),
        Command::Speed(args) => speed::speed(args),
        Command::Store(args) => store::store(args),
        Command::Agent(args) => agent::agent(args),
        Command::Completions(args) => manual::completions(args),
        Command::Man(args) => manual::man(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            error.print();
            std::process::exit(error.code);
        }
    }
}
