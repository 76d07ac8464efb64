//! What `--help`, the man pages and the shell completions add to the clap definitions of
//! `cli.rs`, from the sources that decide them, so that none can drift:
//!
//! - each option's default, read from `Experiment::default()` (and `tlslab load`'s
//!   defaults): a flag left out and an experiment file that leaves its key out agree, so the
//!   flags carry no clap `default_value` (it would override the file) and the help says the
//!   experiment's value instead;
//! - the values an option takes, from core's spellings, which bash, zsh and fish complete
//!   (core still parses and checks them, with its own messages, so `--tls 1.2,1.3` stays a
//!   comma-separated list and a full suite name not offered for completion still works);
//! - a better tip for a mistyped flag than clap's own (`--tsl` is `--tls`, not `--mtls`).

use std::ffi::OsStr;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Command, CommandFactory};
use tlslab_core::{
    Backend, CertCache, CertProfile, CloseMode, DnsMode, Ech, Emulator, Experiment, Group,
    HelloRetry, Http, KeepAlive, LegacySuite, Mtls, Phase, Resume, Scheme, SuiteSpec, TlsVersion,
    Transport,
};

use crate::cli::Cli;

/// The command line as the parser, `--help`, the man pages and the completions see it.
pub fn command() -> Command {
    let mut command = Cli::command();
    for (name, defaults) in [
        ("run", Experiment::default()),
        ("load", tlslab_workflow::load::defaults(false)),
    ] {
        command = command.mut_subcommand(name, |subcommand| {
            with_values(with_defaults(subcommand, &defaults), RUN_VALUES)
        });
    }
    for (name, values) in [
        ("serve", SERVE_VALUES),
        ("pki", SERVE_VALUES),
        ("compare", METRIC_VALUES),
        ("report", METRIC_VALUES),
        ("plan", METRIC_VALUES),
    ] {
        command = command.mut_subcommand(name, |subcommand| with_values(subcommand, values));
    }
    command
}

/// Accepts any text, as the `String` the field holds (core parses it), and offers `values`
/// to the shell completions.
#[derive(Clone)]
struct Offered(Vec<String>);

impl TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        command: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(command, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(PossibleValue::new)))
    }
}

/// The canonical spellings of a dimension's values.
fn spellings<T: Copy>(all: &[T], spelled: fn(T) -> &'static str) -> Vec<String> {
    all.iter()
        .map(|value| spelled(*value).to_string())
        .collect()
}

/// Every suite `--suite` takes by name: the short names, the IANA names (the parser's own
/// list) and the legacy suites' OpenSSL names.
fn suites() -> Vec<String> {
    let mut names: Vec<String> = "?"
        .parse::<SuiteSpec>()
        .err()
        .map(|error| error.valid.iter().map(|name| name.to_string()).collect())
        .unwrap_or_default();
    names.extend(
        LegacySuite::ALL
            .iter()
            .map(|suite| suite.openssl_name().to_string()),
    );
    names
}

fn phases() -> Vec<String> {
    Phase::ALL
        .iter()
        .map(|phase| phase.name().to_string())
        .collect()
}

/// Which options of a command take which values (by clap id).
type Values = &'static [(&'static str, fn() -> Vec<String>)];

const RUN_VALUES: Values = &[
    ("tls", || spellings(TlsVersion::ALL, TlsVersion::as_str)),
    ("suite", suites),
    ("group", || spellings(Group::ALL, Group::as_str)),
    ("cert", || spellings(CertProfile::ALL, CertProfile::as_str)),
    ("client_cert_profile", || {
        spellings(CertProfile::ALL, CertProfile::as_str)
    }),
    ("backend", || spellings(Backend::ALL, Backend::as_str)),
    ("client_backend", || {
        spellings(Backend::ALL, Backend::as_str)
    }),
    ("server_backend", || {
        spellings(Backend::ALL, Backend::as_str)
    }),
    ("transport", || spellings(Transport::ALL, Transport::as_str)),
    ("http", || spellings(Http::ALL, Http::as_str)),
    ("resume", || spellings(Resume::ALL, Resume::as_str)),
    ("cert_cache", || {
        spellings(CertCache::ALL, CertCache::as_str)
    }),
    ("hello_retry", || {
        spellings(HelloRetry::ALL, HelloRetry::as_str)
    }),
    ("mtls", || spellings(Mtls::ALL, Mtls::as_str)),
    ("keep_alive", || {
        spellings(KeepAlive::ALL, KeepAlive::as_str)
    }),
    ("scheme", || spellings(Scheme::ALL, Scheme::as_str)),
    ("ech", || spellings(Ech::ALL, Ech::as_str)),
    ("close", || spellings(CloseMode::ALL, CloseMode::as_str)),
    ("dns", || spellings(DnsMode::ALL, DnsMode::as_str)),
    ("emulator", || spellings(Emulator::ALL, Emulator::as_str)),
    ("arrivals", || vec!["uniform".into(), "poisson".into()]),
    ("metric", phases),
];

const SERVE_VALUES: Values = &[
    ("cert", || spellings(CertProfile::ALL, CertProfile::as_str)),
    ("client_cert_profile", || {
        spellings(CertProfile::ALL, CertProfile::as_str)
    }),
    ("backend", || spellings(Backend::ALL, Backend::as_str)),
    ("resumption", || {
        vec!["off".into(), "tickets".into(), "cache".into()]
    }),
];

const METRIC_VALUES: Values = &[("metric", phases)];

/// `command` with each option of `values` offering its values to the completions (not
/// listed in `--help`, whose text names them already).
fn with_values(command: Command, values: Values) -> Command {
    // `mut_args` keeps the options in order (`mut_arg` moves one to the end, and with it
    // its heading).
    command.mut_args(
        |arg| match values.iter().find(|(id, _)| arg.get_id() == *id) {
            Some((_, list)) => arg.value_parser(Offered(list())).hide_possible_values(true),
            None => arg,
        },
    )
}

/// What a default that the experiment leaves empty means, by option.
const EMPTY_MEANS: &[(&str, &str)] = &[
    ("block", "a tenth of -n, at least -c"),
    ("seed", "drawn at random, and printed"),
    ("client_backend", "--backend's"),
    ("server_backend", "--backend's"),
    ("rtt", "none: loopback, no emulated link"),
    ("jitter", "0"),
    ("loss", "0"),
    ("bandwidth", "unlimited"),
    ("sni", "the target's host, or localhost"),
    ("ca", "the system roots"),
    ("plain_port", "80"),
];

/// An option's default in the experiment's own spelling: `1.3`, `1000`, `10s`, `1.2,1.3`;
/// `None` where the experiment has none (an absent value, an empty list, a switch).
fn spelled(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(text) => Some(text.clone()),
        toml::Value::Integer(number) => Some(number.to_string()),
        toml::Value::Float(number) => Some(number.to_string()),
        toml::Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(spelled)
            .collect::<Option<Vec<String>>>()
            .map(|items| items.join(",")),
        _ => None,
    }
}

/// The key an option fills in an experiment file, by clap id, where the two differ.
fn key_of(id: &str) -> &str {
    match id {
        "label" => "labels",
        other => other,
    }
}

/// Each option's default as the experiment `defaults` holds it.
pub fn defaults_of(command: &Command, defaults: &Experiment) -> Vec<(String, String)> {
    let mut table = toml::Value::try_from(defaults).unwrap_or(toml::Value::Boolean(false));
    // Files leave the default arrival process out.
    if let Some(table) = table.as_table_mut() {
        table
            .entry("arrivals")
            .or_insert_with(|| toml::Value::String(defaults.arrivals.to_string()));
    }
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && arg.get_long().is_some())
        .filter_map(|arg| {
            let id = arg.get_id().as_str();
            let value = table.get(key_of(id)).and_then(spelled).or_else(|| {
                EMPTY_MEANS
                    .iter()
                    .find(|(option, _)| *option == id)
                    .map(|(_, means)| means.to_string())
            })?;
            Some((id.to_string(), value))
        })
        .collect()
}

/// `command` with `[default: ...]` after each option's help, from `defaults`.
fn with_defaults(command: Command, defaults: &Experiment) -> Command {
    let defaults = defaults_of(&command, defaults);
    command.mut_args(|arg| {
        let Some((_, value)) = defaults.iter().find(|(id, _)| arg.get_id() == id) else {
            return arg;
        };
        let said = format!("[default: {value}]");
        let help = arg
            .get_help()
            .map_or_else(|| said.clone(), |help| format!("{help} {said}"));
        let long = arg.get_long_help().map(|help| format!("{help} {said}"));
        let arg = arg.help(help);
        match long {
            Some(long) => arg.long_help(long),
            None => arg,
        }
    })
}

/// Replaces clap's tip for a mistyped flag when a flag of the command is fewer edits away:
/// clap ranks by Jaro similarity, under which `--tsl` is closer to `--mtls` than to
/// `--tls`; a swap of two letters is one edit (optimal string alignment), and that is the
/// typo people make.
pub fn better_tip(error: &mut clap::Error, arguments: &[String]) {
    if error.kind() != ErrorKind::UnknownArgument {
        return;
    }
    let Some(ContextValue::String(typed)) = error.get(ContextKind::InvalidArg) else {
        return;
    };
    let Some(typed) = typed.strip_prefix("--").map(str::to_string) else {
        return;
    };
    let mut root = command();
    root.build();
    let Some(subcommand) = arguments.iter().skip(1).find_map(|word| {
        root.find_subcommand(word)
            .map(|found| found.get_name().to_string())
    }) else {
        return;
    };
    let Some(subcommand) = root.find_subcommand_mut(&subcommand) else {
        return;
    };
    let Some(ours) = closest_flag(subcommand, &typed) else {
        return;
    };
    let theirs = match error.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(flag)) => Some(flag.trim_start_matches('-').to_string()),
        _ => None,
    };
    let distance = |flag: &str| strsim::osa_distance(&typed, flag);
    if theirs
        .as_deref()
        .is_some_and(|theirs| distance(theirs) <= distance(&ours))
    {
        return;
    }
    error.insert(
        ContextKind::SuggestedArg,
        ContextValue::String(format!("--{ours}")),
    );
    // clap's usage line shows its own suggestion as required: the plain usage instead.
    error.insert(
        ContextKind::Usage,
        ContextValue::StyledStr(subcommand.render_usage()),
    );
}

/// The long flag of `command` (aliases included) fewest edits from `typed`, when it is
/// close enough to be a typo: at most two edits, and fewer than half its letters.
fn closest_flag(command: &Command, typed: &str) -> Option<String> {
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .flat_map(|arg| {
            arg.get_long()
                .into_iter()
                .chain(arg.get_all_aliases().into_iter().flatten())
        })
        .map(|flag| (strsim::osa_distance(typed, flag), flag))
        .filter(|(distance, flag)| *distance <= 2 && *distance * 2 < flag.len())
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, flag)| flag.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help_of(command: &Command, id: &str) -> String {
        command
            .get_arguments()
            .find(|arg| arg.get_id() == id)
            .and_then(|arg| arg.get_help())
            .map(|help| help.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn run_and_load_help_say_the_experiments_defaults() {
        let root = command();
        let run = root.find_subcommand("run").unwrap();
        for (id, default) in [
            ("tls", "1.3"),
            ("handshakes", "1000"),
            ("concurrency", "1"),
            ("warmup", "20"),
            ("timeout", "10s"),
            ("backend", "rustls"),
            ("http", "none"),
            ("block", "a tenth of -n, at least -c"),
        ] {
            let help = help_of(run, id);
            assert!(
                help.ends_with(&format!("[default: {default}]")),
                "--{id}: {help}"
            );
        }
        let load = root.find_subcommand("load").unwrap();
        assert!(help_of(load, "http").ends_with("[default: 1.1]"));
        assert!(help_of(load, "keep_alive").ends_with("[default: on]"));
    }

    #[test]
    fn every_option_of_run_that_takes_a_value_says_its_default_or_needs_none() {
        // Options with no default: a value is given or the feature is off.
        let none = [
            "experiment",
            "arrival_rate",
            "duration",
            "page",
            "ech_config",
            "target",
            "resolve",
            "client_cert",
            "client_key",
            "pin",
            "thresholds",
            "label",
            "until_ci",
            "server_cmd",
            "out",
            "pki_dir",
            "keylog",
            "capture",
            "metric",
        ];
        let root = command();
        let run = root.find_subcommand("run").unwrap();
        for arg in run.get_arguments() {
            let id = arg.get_id().as_str();
            let takes_value = arg.get_num_args().is_none_or(|range| range.takes_values());
            if arg.is_hide_set() || none.contains(&id) || !takes_value || id == "help" {
                continue;
            }
            if matches!(
                arg.get_action(),
                clap::ArgAction::SetTrue | clap::ArgAction::Help
            ) {
                continue;
            }
            let help = help_of(run, id);
            assert!(
                help.contains("[default: ") || help.contains("default:"),
                "--{id} says no default: {help}"
            );
        }
    }

    #[test]
    fn a_swapped_pair_of_letters_is_one_edit() {
        let root = command();
        let run = root.find_subcommand("run").unwrap();
        assert_eq!(closest_flag(run, "tsl").as_deref(), Some("tls"));
        assert_eq!(
            closest_flag(run, "hanshakes").as_deref(),
            Some("handshakes")
        );
        assert_eq!(closest_flag(run, "zzzzzz"), None);
    }
}
