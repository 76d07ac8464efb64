//! tlslab: a TLS handshake performance lab. The binary is a thin layer over the library
//! crates: each subcommand parses its flags and calls into them.

mod capture;
mod cli;
mod compare;
mod crosscheck;
mod export;
mod failure;
mod files;
mod output;
mod passive;
mod pcap;
mod report;
mod run;
mod serve;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version are answers, not errors.
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            std::process::exit(0);
        }
        Err(error) => {
            // clap's own message ("error: ..." with a usage line), then our hint.
            let _ = error.print();
            output::note(
                "hint: `tlslab help` lists the commands, `tlslab <command> --help` its options",
            );
            std::process::exit(failure::EXIT_USAGE);
        }
    };
    let result = match &cli.command {
        Command::Run(args) => run::run(args),
        Command::Serve(args) => serve::serve(args),
        Command::Compare(args) => compare::compare(args),
        Command::Report(args) => report::report(args),
        Command::Export(args) => export::export(args),
        Command::Pki(args) => export::pki(args),
        Command::Pcap(args) => pcap::pcap(args),
        Command::Capture(args) => capture::capture(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            error.print();
            std::process::exit(error.code);
        }
    }
}
