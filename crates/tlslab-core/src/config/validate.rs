//! The checks an experiment must pass before its matrix expands: every dimension has a
//! value, and every run-level value is in range and makes sense with the others.

use base64::Engine;

use super::{
    error, ConfigError, MAX_BODY, MAX_CONCURRENCY, MAX_EARLY_DATA, MAX_EMULATED_DELAY,
    MAX_HANDSHAKES,
};
use crate::dimension::Ech;
use crate::experiment::Experiment;

/// What the checks decoded once for every Config.
#[derive(Debug, Default)]
pub(super) struct Checked {
    /// `--ech-config`: the target's ECHConfigList.
    pub ech_config: Option<Vec<u8>>,
    /// `--pin`.
    pub pins: Option<crate::Pins>,
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

/// Checks the run-level values of `experiment`.
pub(super) fn validate(experiment: &Experiment) -> Result<Checked, ConfigError> {
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
    require_nonempty(&experiment.keep_alive, "keep-alive")?;
    require_nonempty(&experiment.scheme, "scheme")?;
    require_nonempty(&experiment.backend, "backend")?;
    require_nonempty(&experiment.ech, "ech")?;
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
    let ech_config = experiment
        .ech_config
        .as_deref()
        .map(decode_ech_config)
        .transpose()?;
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
    if experiment.replay && experiment.early_data.iter().all(|&size| size == 0) {
        return Err(error(
            "--replay re-sends 0-RTT flights, but the experiment sends no early data",
            "add --resume tickets --early-data 1024",
        ));
    }
    if experiment.replay && experiment.target.is_some() {
        return Err(error(
            "--replay needs the lab server, which counts the replays it rejects",
            "drop --target, or drop --replay",
        ));
    }
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
    if experiment.server_cmd.is_some() && experiment.target.is_none() {
        return Err(error(
            "--server-cmd needs --target to name the port the server listens on",
            "for example --server-cmd 'nginx -c /etc/tlslab/nginx.conf' --target 127.0.0.1:8443",
        ));
    }
    let pins = experiment
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
        .transpose()?;
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
    Ok(Checked { ech_config, pins })
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
