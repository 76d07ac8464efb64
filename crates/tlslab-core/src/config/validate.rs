//! The checks an experiment must pass before its matrix expands: every dimension has a
//! value, and every run-level value is in range and makes sense with the others.

use base64::Engine;

use super::{
    error, ConfigError, MAX_BODY, MAX_CONCURRENCY, MAX_EARLY_DATA, MAX_EMULATED_DELAY,
    MAX_HANDSHAKES,
};
use crate::dimension::{DnsMode, Ech, Mtls, Scheme};
use crate::experiment::Experiment;

/// What the checks decoded once for every Config.
#[derive(Debug, Default)]
pub(super) struct Checked {
    /// `--ech-config`: the target's ECHConfigList.
    pub ech_config: Option<Vec<u8>>,
    /// `--pin`.
    pub pins: Option<crate::Pins>,
    /// `--client-cert` with `--client-key`.
    pub client_identity: Option<crate::ClientIdentity>,
}

pub(super) fn require_nonempty<T>(values: &[T], name: &str) -> Result<(), ConfigError> {
    if values.is_empty() {
        return Err(error(
            format!("the {name} dimension is empty"),
            format!("give at least one value for {name}"),
        ));
    }
    Ok(())
}

/// One check of an experiment: the error of the first value it finds wrong.
type Check = fn(&Experiment) -> Result<(), ConfigError>;

/// The checks of an experiment's run-level values, in the order a user meets their errors:
/// each one names the value that is wrong and says what to give instead.
const CHECKS: &[Check] = &[
    check_dimensions,
    check_arrivals,
    check_ech,
    check_request,
    check_lab_only_options,
    check_counts,
    check_emulated_delays,
    check_stopping,
    check_server_command,
    check_name_resolution,
    |experiment| pins(experiment).map(drop),
    check_thresholds,
];

/// Checks the run-level values of `experiment`, and decodes those every Config shares.
pub(super) fn validate(experiment: &Experiment) -> Result<Checked, ConfigError> {
    for check in CHECKS {
        check(experiment)?;
    }
    let ech_config = experiment
        .ech_config
        .as_deref()
        .map(decode_ech_config)
        .transpose()?;
    let pins = pins(experiment)?;
    let client_identity = client_identity(experiment)?;
    Ok(Checked {
        ech_config,
        pins,
        client_identity,
    })
}

/// Every dimension has at least one value.
fn check_dimensions(experiment: &Experiment) -> Result<(), ConfigError> {
    require_nonempty(&experiment.tls, "tls")?;
    require_nonempty(&experiment.suite, "suite")?;
    require_nonempty(&experiment.group, "group")?;
    require_nonempty(&experiment.concurrency, "concurrency")?;
    require_nonempty(&experiment.transport, "transport")?;
    require_nonempty(&experiment.http, "http")?;
    require_nonempty(&experiment.resume, "resume")?;
    require_nonempty(&experiment.early_data, "early-data")?;
    require_nonempty(&experiment.cert_cache, "cert-cache")?;
    require_nonempty(&experiment.hello_retry, "hello-retry")?;
    require_nonempty(&experiment.mtls, "mtls")?;
    require_nonempty(&experiment.keep_alive, "keep-alive")?;
    require_nonempty(&experiment.scheme, "scheme")?;
    require_nonempty(&experiment.backend, "backend")?;
    require_nonempty(&experiment.ech, "ech")?;
    Ok(())
}

/// Poisson arrivals need an open loop to space.
fn check_arrivals(experiment: &Experiment) -> Result<(), ConfigError> {
    if experiment.arrivals == crate::Arrivals::Poisson
        && experiment
            .arrival_rate
            .iter()
            .all(|rate| *rate == crate::ArrivalRate::Closed)
    {
        return Err(error(
            "--arrivals poisson spaces an open loop's arrivals, but every Config is a closed loop",
            "give --arrival-rate too, for example --arrival-rate 500/s --arrivals poisson",
        ));
    }
    Ok(())
}

/// ECH against a target needs its ECHConfigList, which only a target takes, and which
/// must decode.
fn check_ech(experiment: &Experiment) -> Result<(), ConfigError> {
    if experiment.ech.contains(&Ech::On)
        && experiment.target.is_some()
        && experiment.ech_config.is_none()
    {
        return Err(error(
            "ECH against an external target needs the target's ECHConfigList",
            "give --ech-config BASE64 (the ech= value of the target's HTTPS DNS record, \
             for example from `dig +short HTTPS host`)",
        ));
    }
    if experiment.ech_config.is_some() && experiment.target.is_none() {
        return Err(error(
            "--ech-config applies to external targets only",
            "the lab server's ECH configuration is used automatically; add --target host:port",
        ));
    }
    if let Some(text) = experiment.ech_config.as_deref() {
        decode_ech_config(text)?;
    }
    Ok(())
}

/// The request path, the body and the early data fit what the lab server takes.
fn check_request(experiment: &Experiment) -> Result<(), ConfigError> {
    if !experiment.path.starts_with('/') {
        return Err(error(
            format!("request path '{}' does not start with /", experiment.path),
            "give an absolute path such as --path /index.html",
        ));
    }
    if experiment.body > MAX_BODY {
        return Err(error(
            format!(
                "a body of {} bytes is above the lab server's limit",
                experiment.body
            ),
            format!("give --body {MAX_BODY} or less"),
        ));
    }
    if let Some(&size) = experiment
        .early_data
        .iter()
        .find(|&&size| size > MAX_EARLY_DATA)
    {
        return Err(error(
            format!("{size} bytes of early data is more than a server accepts"),
            format!("give --early-data {MAX_EARLY_DATA} or less"),
        ));
    }
    Ok(())
}

/// Replays and `--mtls on` need the lab server (and replays need early data).
fn check_lab_only_options(experiment: &Experiment) -> Result<(), ConfigError> {
    if experiment.replay && experiment.early_data.iter().all(|&size| size == 0) {
        return Err(error(
            "--replay re-sends 0-RTT flights, but the experiment sends no early data",
            "add --resume tickets --early-data 1024",
        ));
    }
    // The lab server is the one tlslab can configure to ask; an external server asks (or
    // not) by its own configuration, and the client answers with the user's pair.
    if experiment.mtls.contains(&Mtls::On) && experiment.target.is_some() {
        return Err(error(
            "--mtls on makes the lab server require a client certificate; a target decides that itself",
            "for a target that asks for a client certificate, give --client-cert FILE --client-key FILE \
             and drop --mtls",
        ));
    }
    if experiment.replay && experiment.target.is_some() {
        return Err(error(
            "--replay needs the lab server, which counts the replays it rejects",
            "drop --target, or drop --replay",
        ));
    }
    Ok(())
}

/// Handshake counts and concurrency within what one machine runs.
fn check_counts(experiment: &Experiment) -> Result<(), ConfigError> {
    if experiment.handshakes == 0 {
        return Err(error(
            "handshakes is 0",
            "ask for at least one handshake per config (-n)",
        ));
    }
    for (count, name) in [
        (experiment.handshakes, "-n"),
        (experiment.warmup, "--warmup"),
    ] {
        if count > MAX_HANDSHAKES {
            return Err(error(
                format!("{name} {count} is more handshakes than a run can take"),
                format!("give {name} {MAX_HANDSHAKES} or less per config"),
            ));
        }
    }
    if let Some(&zero) = experiment.concurrency.iter().find(|&&c| c == 0) {
        return Err(error(
            format!("concurrency {zero} is not possible"),
            "use at least one agent (-c 1)",
        ));
    }
    if let Some(&many) = experiment
        .concurrency
        .iter()
        .find(|&&c| c > MAX_CONCURRENCY)
    {
        return Err(error(
            format!("concurrency {many} is more agents than one machine runs"),
            format!(
                "give -c {MAX_CONCURRENCY} or less (each agent holds a socket and a task); \
                 spread more over several machines"
            ),
        ));
    }
    Ok(())
}

/// Emulated delays within what the emulator holds packets for.
fn check_emulated_delays(experiment: &Experiment) -> Result<(), ConfigError> {
    for (values, name) in [(&experiment.rtt, "--rtt"), (&experiment.jitter, "--jitter")] {
        if let Some(long) = values.iter().find(|&&value| value > MAX_EMULATED_DELAY) {
            return Err(error(
                format!(
                    "{name} {} is longer than the emulator delays packets",
                    crate::duration::format(*long)
                ),
                format!("give {name} 60s or less"),
            ));
        }
    }
    Ok(())
}

/// `--until-ci`, the timeout and the error rate that stop a run make sense.
fn check_stopping(experiment: &Experiment) -> Result<(), ConfigError> {
    if let Some(target) = experiment.until_ci {
        if !(target > 0.0 && target < 1.0) {
            return Err(error(
                format!("--until-ci {target} is not a fraction of the median"),
                "give a relative half-width such as --until-ci 2% (or 0.02)",
            ));
        }
    }
    if experiment.timeout.is_zero() {
        return Err(error(
            "the timeout is 0",
            "give a timeout such as --timeout 10s",
        ));
    }
    if !(0.0..=1.0).contains(&experiment.max_error_rate) {
        return Err(error(
            format!(
                "max error rate {} is not a fraction",
                experiment.max_error_rate
            ),
            "give a value between 0 and 1, for example --max-error-rate 0.01",
        ));
    }
    Ok(())
}

/// `--server-cmd` needs the port its server listens on.
fn check_server_command(experiment: &Experiment) -> Result<(), ConfigError> {
    if experiment.server_cmd.is_some() && experiment.target.is_none() {
        return Err(error(
            "--server-cmd needs --target to name the port the server listens on",
            "for example --server-cmd 'nginx -c /etc/tlslab/nginx.conf' --target 127.0.0.1:8443",
        ));
    }
    Ok(())
}

/// Every `--threshold` parses.
fn check_thresholds(experiment: &Experiment) -> Result<(), ConfigError> {
    for threshold in &experiment.thresholds {
        threshold
            .parse::<crate::threshold::Threshold>()
            .map_err(|problem| {
                error(
                    format!("--threshold {problem}"),
                    "for example --threshold 'p99<5ms' --threshold 'errors<1%' --threshold 'x25519mlkem768: server_response.median<2ms'",
                )
            })?;
    }
    Ok(())
}

/// `--pin`, parsed.
fn pins(experiment: &Experiment) -> Result<Option<crate::Pins>, ConfigError> {
    experiment
        .pin
        .as_deref()
        .map(|text| {
            crate::Pins::parse(text).map_err(|problem| {
                error(
                    format!("--pin: {problem}"),
                    "give sha256// and the base64 SHA-256 of the server's public key (as curl's --pinnedpubkey); a rejected certificate's error prints its pin",
                )
            })
        })
        .transpose()
}

/// `--client-cert` and `--client-key` come as a pair: a certificate without its key cannot
/// sign the handshake, and a key alone has nothing to present.
fn client_identity(experiment: &Experiment) -> Result<Option<crate::ClientIdentity>, ConfigError> {
    match (&experiment.client_cert, &experiment.client_key) {
        (Some(cert), Some(key)) => Ok(Some(crate::ClientIdentity {
            cert: cert.clone(),
            key: key.clone(),
        })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(error(
            "--client-cert needs --client-key",
            "give the certificate's private key too: --client-cert client.pem --client-key client.key \
             (client_cert and client_key in an experiment file)",
        )),
        (None, Some(_)) => Err(error(
            "--client-key needs --client-cert",
            "give the certificate of the key too: --client-cert client.pem --client-key client.key \
             (client_cert and client_key in an experiment file)",
        )),
    }
}

/// `--resolve` pins name the target (a pin that answers for no name the run looks up would
/// be silently ignored, and the run would measure another address than the user meant), and
/// `--dns per-attempt` needs a route it can follow.
fn check_name_resolution(experiment: &Experiment) -> Result<(), ConfigError> {
    let emulated = !experiment.rtt.is_empty()
        || !experiment.jitter.is_empty()
        || !experiment.loss.is_empty()
        || !experiment.bandwidth.is_empty();
    if experiment.dns == DnsMode::PerAttempt && emulated {
        return Err(error(
            "--dns per-attempt cannot run on the emulated link yet",
            "the link routes the address resolved before the run; use --dns once with \
             --rtt/--jitter/--loss/--bandwidth, or drop them to time lookups",
        ));
    }
    let Some(target) = &experiment.target else {
        if let Some(pin) = experiment.resolve.first() {
            return Err(error(
                format!("--resolve {pin} applies to external targets only"),
                "the lab server's address is known without a lookup; add --target host:port \
                 with the pinned host and port, or drop --resolve",
            ));
        }
        return Ok(());
    };
    let Some(host) = super::target_host(target) else {
        // expand() reports the malformed target itself.
        return Ok(());
    };
    let port = target
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse::<u16>().ok())
        .unwrap_or(0);
    // Plain HTTP Configs go to the same host on the plain port.
    let plain = experiment
        .scheme
        .contains(&Scheme::Http)
        .then(|| experiment.plain_port.unwrap_or(80));
    for pin in &experiment.resolve {
        let answers =
            pin.answers(host, port) || plain.is_some_and(|plain| pin.answers(host, plain));
        if !answers {
            return Err(error(
                format!("--resolve {pin} does not answer for the target {target}"),
                format!(
                    "the pin's host and port must be the target's, for example --resolve \
                     {host}:{port}:{}",
                    pin.addresses
                        .first()
                        .map(|address| match address {
                            std::net::IpAddr::V4(v4) => v4.to_string(),
                            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                        })
                        .unwrap_or_default()
                ),
            ));
        }
    }
    Ok(())
}

/// Decodes an ECHConfigList given as base64. HTTPS DNS records use the standard alphabet;
/// the URL-safe one and missing padding are accepted too.
fn decode_ech_config(text: &str) -> Result<Vec<u8>, ConfigError> {
    let standard: String = text
        .trim()
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            other => other,
        })
        .collect();
    let lenient = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    match lenient.decode(standard) {
        Ok(list) if !list.is_empty() => Ok(list),
        _ => Err(error(
            "--ech-config is not base64",
            "give the ECHConfigList as base64, as in the ech= value of an HTTPS DNS record",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ech_configs_decode_from_either_alphabet_with_or_without_padding() {
        let standard = decode_ech_config("AEX+DQBB").unwrap();
        assert_eq!(standard, [0x00, 0x45, 0xfe, 0x0d, 0x00, 0x41]);
        assert_eq!(decode_ech_config(" AEX-DQBB ").unwrap(), standard);
        assert_eq!(decode_ech_config("AEX+DQ").unwrap(), standard[..4]);
        assert_eq!(decode_ech_config("AEX+DQ==").unwrap(), standard[..4]);
        for bad in ["not base64!", "", "A"] {
            assert!(decode_ech_config(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn poisson_arrivals_need_an_open_loop() {
        let closed = Experiment {
            arrivals: crate::Arrivals::Poisson,
            ..Experiment::default()
        };
        let problem = validate(&closed).unwrap_err();
        assert!(problem.to_string().contains("closed loop"), "{problem}");
        let open = Experiment {
            arrival_rate: vec!["500/s".parse().unwrap()],
            ..closed
        };
        assert!(validate(&open).is_ok());
    }

    #[test]
    fn resolve_pins_must_answer_for_the_target_and_lookups_need_a_plain_route() {
        let pinned = |target: Option<&str>, pin: &str| Experiment {
            target: target.map(str::to_string),
            resolve: vec![pin.parse().unwrap()],
            ..Experiment::default()
        };
        assert!(validate(&pinned(
            Some("example.com:443"),
            "EXAMPLE.com:443:192.0.2.7"
        ))
        .is_ok());
        let elsewhere = validate(&pinned(
            Some("example.com:443"),
            "example.com:8443:192.0.2.7",
        ))
        .unwrap_err();
        assert!(elsewhere.message.contains("does not answer"), "{elsewhere}");
        assert!(
            elsewhere.hint.contains("example.com:443:192.0.2.7"),
            "{}",
            elsewhere.hint
        );
        let lab = validate(&pinned(None, "localhost:443:127.0.0.1")).unwrap_err();
        assert!(lab.message.contains("external targets only"), "{lab}");
        // Plain HTTP Configs go to the plain port, which a pin may name.
        let plain = Experiment {
            scheme: vec![Scheme::Https, Scheme::Http],
            plain_port: Some(8080),
            ..pinned(Some("example.com:443"), "example.com:8080:192.0.2.7")
        };
        assert!(validate(&plain).is_ok());
        let emulated = Experiment {
            dns: DnsMode::PerAttempt,
            rtt: vec![std::time::Duration::from_millis(10)],
            ..Experiment::default()
        };
        assert!(validate(&emulated)
            .unwrap_err()
            .message
            .contains("emulated link"));
    }

    #[test]
    fn name_resolution_reads_from_a_file_as_from_flags() {
        let file = Experiment::from_toml(
            "target = \"example.com:443\"\nresolve = [\"example.com:443:[2001:db8::7]\"]\ndns = \"per-attempt\"",
        )
        .unwrap();
        assert_eq!(file.dns, DnsMode::PerAttempt);
        assert_eq!(file.resolve[0].to_string(), "example.com:443:[2001:db8::7]");
        assert_eq!(Experiment::from_toml(&file.to_toml()).unwrap(), file);
        let error = Experiment::from_toml("resolve = [\"example.com:443\"]").unwrap_err();
        assert!(error.to_string().contains("HOST:PORT:ADDRESS"), "{error}");
        let error = Experiment::from_toml("dns = \"sometimes\"").unwrap_err();
        assert!(error.to_string().contains("per-attempt"), "{error}");
        let configs = file.configs().unwrap();
        assert!(configs
            .iter()
            .all(|config| config.dns == DnsMode::PerAttempt));
    }

    #[test]
    fn every_dimension_needs_a_value() {
        let error = validate(&Experiment {
            group: Vec::new(),
            ..Experiment::default()
        })
        .unwrap_err();
        assert!(
            error.message.contains("group dimension is empty"),
            "{error}"
        );
    }
}
