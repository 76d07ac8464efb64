//! Expansion: the matrix of an experiment as labelled [`Config`]s in matrix order, each
//! combination checked by the rules in `rules.rs`.

use std::collections::HashSet;
use std::time::Duration;

use super::rules::{
    invalid_backend_reason, invalid_reason, invalid_session_reason, Backends, Session,
};
use super::validate::{require_nonempty, validate, Checked};
use super::{error, target_host, Config, ConfigError, Endpoint, MAX_TRIALS};
use crate::arrival::format_rate;
use crate::dimension::{
    Backend, CertCache, Ech, Group, HelloRetry, Http, KeepAlive, KeyKind, Mtls, Resume, Scheme,
    SuiteSpec, TlsVersion, Transport,
};
use crate::experiment::Experiment;
use crate::network::{Loss, Network, NetworkDimensions};

/// Expands an experiment into Configs in matrix order: version, suite, group, certificate,
/// chain, concurrency (the last varies fastest).
pub fn expand(experiment: &Experiment) -> Result<Vec<Config>, ConfigError> {
    let checked = validate(experiment)?;
    let endpoints = endpoints(experiment, &checked)?;

    let named = NetworkDimensions {
        rtt: !experiment.rtt.is_empty(),
        jitter: !experiment.jitter.is_empty(),
        loss: !experiment.loss.is_empty(),
        rate: !experiment.bandwidth.is_empty(),
    };
    let matrix = Matrix {
        experiment,
        checked: &checked,
        networks: networks(experiment, &named),
        named,
        arrivals: arrivals(experiment)?,
        sizes_differ: experiment
            .early_data
            .iter()
            .filter(|&&size| size > 0)
            .count()
            > 1,
    };
    let sessions = sessions(experiment);

    let mut configs = Vec::new();
    let mut rejected = Vec::new();
    for &version in &experiment.tls {
        for suite in &experiment.suite {
            for &group in &experiment.group {
                for endpoint in &endpoints {
                    let cert = match endpoint {
                        Endpoint::Lab { cert, .. } => Some(*cert),
                        Endpoint::Target { .. } => None,
                    };
                    let rsa_transport_group = experiment
                        .group
                        .iter()
                        .copied()
                        .find(|group| !group.is_finite_field());
                    if let Some(reason) =
                        invalid_reason(version, suite, group, cert, rsa_transport_group)
                    {
                        rejected.push(reason);
                        continue;
                    }
                    let combinations = backend_pairs(experiment, cert.is_some())
                        .into_iter()
                        .flat_map(|pair| experiment.ech.iter().map(move |&ech| (pair, ech)))
                        .flat_map(|(pair, ech)| {
                            sessions.iter().map(move |&session| (pair, ech, session))
                        });
                    for (backends, ech, session) in combinations {
                        if let Some(reason) =
                            invalid_session_reason(version, session).or_else(|| {
                                invalid_backend_reason(
                                    version, suite, group, backends, ech, session,
                                )
                            })
                        {
                            rejected.push(reason);
                            continue;
                        }
                        if session.mtls
                            && version == TlsVersion::Tls12
                            && experiment.client_cert_profile.key_kind() == KeyKind::MlDsa
                        {
                            rejected.push(format!(
                                "a {} client certificate signs TLS 1.3 handshakes only, not TLS 1.2",
                                experiment.client_cert_profile
                            ));
                            continue;
                        }
                        let combination = Combination {
                            version,
                            suite,
                            group,
                            endpoint,
                            session,
                            backends,
                            ech,
                        };
                        push_configs(&mut configs, &matrix, &combination);
                    }
                }
            }
        }
    }

    if !rejected.is_empty() && !experiment.skip_invalid {
        rejected.sort();
        rejected.dedup();
        return Err(error(
            format!("invalid combinations: {}", rejected.join("; ")),
            "change or drop the values named above, or add --skip-invalid to run only the \
             valid combinations of the matrix",
        ));
    }
    if configs.is_empty() {
        return Err(error(
            "no valid combination is left in the matrix",
            valid_values_hint(),
        ));
    }

    apply_labels(experiment, &mut configs)?;
    check_plan_size(experiment, &configs)?;
    Ok(configs)
}

/// Where the Configs connect: the `--target`, or the lab server at every certificate and
/// chain depth asked for (options that only a target takes are refused for the lab).
fn endpoints(experiment: &Experiment, checked: &Checked) -> Result<Vec<Endpoint>, ConfigError> {
    Ok(match &experiment.target {
        Some(address) => {
            let host = target_host(address).ok_or_else(|| {
                error(
                    format!("target '{address}' is not host:port"),
                    "write the target as host:port, for example --target example.com:443 or --target [::1]:8443",
                )
            })?;
            let sni = experiment.sni.clone().unwrap_or_else(|| host.to_string());
            vec![Endpoint::Target {
                address: address.clone(),
                sni,
                ca: experiment.ca.clone(),
                client_identity: checked.client_identity.clone(),
            }]
        }
        None => {
            require_nonempty(&experiment.cert, "cert")?;
            require_nonempty(&experiment.chain, "chain")?;
            if let Some(&depth) = experiment.chain.iter().find(|&&d| !(1..=5).contains(&d)) {
                return Err(error(
                    format!("chain depth {depth} is out of range"),
                    "the lab server sends 1 to 5 certificates (leaf plus intermediates): --chain 1..5",
                ));
            }
            if experiment.ca.is_some() {
                return Err(error(
                    "--ca applies to external targets only",
                    "the lab server's root is trusted automatically; add --target host:port to use --ca",
                ));
            }
            if checked.client_identity.is_some() {
                return Err(error(
                    "--client-cert and --client-key apply to external targets only",
                    "for a target that requires a client certificate add --target host:port; \
                     --mtls on makes the lab server require the lab's own",
                ));
            }
            let mut endpoints = Vec::new();
            for &cert in &experiment.cert {
                for &chain in &experiment.chain {
                    endpoints.push(Endpoint::Lab { cert, chain });
                }
            }
            endpoints
        }
    })
}

/// What every Config of an experiment shares as it is expanded: the experiment, its checked
/// values, and the dimensions that vary fastest (arrival, network).
struct Matrix<'a> {
    experiment: &'a Experiment,
    checked: &'a Checked,
    named: NetworkDimensions,
    networks: Vec<Option<Network>>,
    arrivals: Vec<Arrival>,
    /// More than one early-data size is asked for, so labels name the size.
    sizes_differ: bool,
}

/// One valid combination of the slower dimensions, before concurrency, arrival and network.
struct Combination<'a> {
    version: TlsVersion,
    suite: &'a SuiteSpec,
    group: Group,
    endpoint: &'a Endpoint,
    session: Session,
    backends: Backends,
    ech: Ech,
}

/// Adds the Configs of `combination` at every concurrency, arrival and network, labelled;
/// plain HTTP is one Config whatever the TLS dimensions say.
fn push_configs(configs: &mut Vec<Config>, matrix: &Matrix<'_>, combination: &Combination<'_>) {
    let &Combination {
        version,
        suite,
        group,
        endpoint,
        session,
        backends,
        ech,
    } = combination;
    for ((&concurrency, arrival), network) in matrix
        .experiment
        .concurrency
        .iter()
        .flat_map(|c| matrix.arrivals.iter().map(move |a| (c, a)))
        .flat_map(|ca| matrix.networks.iter().map(move |n| (ca, n)))
    {
        let mut label = automatic_label(
            version,
            suite,
            group,
            endpoint,
            concurrency,
            session,
            matrix.sizes_differ,
        );
        if session.scheme == Scheme::Https {
            label.push_str(&backend_words(backends, ech));
        }
        if let Some(rate) = arrival.rate {
            label = format!("{label} {}", format_rate(rate));
        }
        if let Some(network) = network {
            label = format!("{label} {}", network.label(&matrix.named));
        }
        // Plain HTTP is one Config whatever the TLS dimensions say: the
        // first of their combinations stands for all.
        if session.scheme == Scheme::Http
            && configs.iter().any(|config: &Config| config.label == label)
        {
            continue;
        }
        let index = configs.len();
        configs.push(Config {
            index,
            label,
            version,
            suite: suite.clone(),
            group,
            endpoint: match session.scheme {
                Scheme::Https => endpoint.clone(),
                Scheme::Http => plain_endpoint(endpoint, matrix.experiment),
            },
            concurrency,
            arrival_rate: arrival.rate,
            arrival_time: arrival.time,
            resume: session.resume,
            early_data: session.early_data,
            cert_cache: session.cert_cache,
            hello_retry: session.hello_retry,
            mtls: session
                .mtls
                .then_some(matrix.experiment.client_cert_profile),
            keep_alive: session.keep_alive,
            scheme: session.scheme,
            transport: session.transport,
            http: session.http,
            path: matrix.experiment.path.clone(),
            page: matrix.experiment.page.clone(),
            insecure: matrix.experiment.insecure,
            pins: matrix.checked.pins.clone(),
            client_backend: backends.0,
            server_backend: backends.1,
            ech,
            close: matrix.experiment.close,
            dns: matrix.experiment.dns,
            timeout: matrix.experiment.timeout,
            network: *network,
            body: matrix.experiment.body,
            ech_config: matrix.checked.ech_config.clone(),
            ech_public_name: matrix.experiment.ech_public_name.clone(),
        });
    }
}

/// The labels given (`labels = [...]`) in place of the automatic ones, one per Config, and
/// every label distinct and non-empty.
fn apply_labels(experiment: &Experiment, configs: &mut [Config]) -> Result<(), ConfigError> {
    if !experiment.labels.is_empty() {
        if experiment.labels.len() != configs.len() {
            return Err(error(
                format!(
                    "{} labels given for {} {}",
                    experiment.labels.len(),
                    configs.len(),
                    if configs.len() == 1 {
                        "config"
                    } else {
                        "configs"
                    }
                ),
                format!(
                    "give one label per config, in matrix order: {}",
                    configs
                        .iter()
                        .map(|c| c.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        for (config, label) in configs.iter_mut().zip(&experiment.labels) {
            config.label = label.trim().to_string();
        }
    }
    let mut seen = HashSet::new();
    for config in configs.iter() {
        if config.label.is_empty() || !seen.insert(config.label.as_str()) {
            return Err(error(
                format!("label '{}' is empty or used twice", config.label),
                "give every config a distinct, non-empty label",
            ));
        }
    }
    Ok(())
}

/// The keys a `[[config]]` table may name: the matrix dimensions (run-level values such as
/// the handshake count belong at the top of the file).
const CONFIG_TABLE_KEYS: &[&str] = &[
    "tls",
    "suite",
    "group",
    "cert",
    "chain",
    "concurrency",
    "arrival_rate",
    "resume",
    "early_data",
    "cert_cache",
    "hello_retry",
    "mtls",
    "keep_alive",
    "scheme",
    "transport",
    "http",
    "backend",
    "client_backend",
    "server_backend",
    "ech",
    "rtt",
    "jitter",
    "loss",
    "rate",
    "bandwidth",
    "label",
];

/// The Configs of an experiment's `[[config]]` tables, in their order, and nothing else: each
/// table over the default dimensions and the experiment's run-level values (handshakes,
/// target, ...), expanded (a table with lists crosses them, so a matrix can sit next to
/// exact Configs).
pub fn expand_explicit(experiment: &Experiment) -> Result<Vec<Config>, ConfigError> {
    let tables = expand_tables(experiment)?;
    let configs = union(Vec::new(), tables)?;
    check_plan_size(experiment, &configs)?;
    Ok(configs)
}

/// The crossed matrix of an experiment's top-level dimensions and then its `[[config]]`
/// tables' Configs (`matrix = true`, or a file whose top level names a dimension): their
/// union, in that order, each Config once ([`union`]).
pub fn expand_matrix_and_tables(experiment: &Experiment) -> Result<Vec<Config>, ConfigError> {
    let mut matrix = experiment.clone();
    matrix.explicit.clear();
    let crossed = expand(&matrix)?;
    let tables = expand_tables(experiment)?;
    let configs = union(crossed, tables)?;
    check_plan_size(experiment, &configs)?;
    Ok(configs)
}

/// `first` then each of `tables` that is not already there. A Config made twice (by the
/// matrix and a table, or by two tables: every dimension equal, whatever the labels) runs
/// once, in its first place; a table's own `label` names it. Labels must then differ.
fn union(first: Vec<Config>, tables: Vec<(Config, bool)>) -> Result<Vec<Config>, ConfigError> {
    // Equal but for the name and the place.
    let same = |one: &Config, other: &Config| {
        let mut other = other.clone();
        other.index = one.index;
        other.label.clone_from(&one.label);
        *one == other
    };
    let mut configs = first;
    for (config, labelled) in tables {
        match configs.iter_mut().find(|kept| same(kept, &config)) {
            Some(kept) if labelled => kept.label = config.label,
            Some(_) => {}
            None => configs.push(config),
        }
    }
    let mut seen = HashSet::new();
    for (index, config) in configs.iter_mut().enumerate() {
        config.index = index;
        if !seen.insert(config.label.clone()) {
            return Err(error(
                format!("two different Configs are labelled '{}'", config.label),
                "give each [[config]] table different values or its own label",
            ));
        }
    }
    Ok(configs)
}

/// Each `[[config]]` table's Configs, in table order, and whether the table named them
/// (`label`).
fn expand_tables(experiment: &Experiment) -> Result<Vec<(Config, bool)>, ConfigError> {
    let serialize = |experiment: &Experiment| {
        toml::Value::try_from(experiment).map_err(|problem| {
            ConfigError::with_source(
                format!("the experiment does not serialize: {problem}"),
                "report this as a bug",
                problem,
            )
        })
    };
    let mut base = experiment.clone();
    base.explicit.clear();
    base.labels.clear();
    let mut base = serialize(&base)?;
    let defaults = serialize(&Experiment::default())?;
    if let (Some(root), Some(defaults)) = (base.as_table_mut(), defaults.as_table()) {
        for key in CONFIG_TABLE_KEYS {
            match defaults.get(*key) {
                Some(value) => root.insert(key.to_string(), value.clone()),
                None => root.remove(*key),
            };
        }
    }
    let mut configs: Vec<(Config, bool)> = Vec::new();
    for (number, table) in experiment.explicit.iter().enumerate() {
        let which = format!("[[config]] {}", number + 1);
        if let Some(key) = table
            .keys()
            .find(|key| !CONFIG_TABLE_KEYS.contains(&key.as_str()))
        {
            return Err(error(
                format!("{which}: '{key}' cannot be set per Config"),
                format!(
                    "a [[config]] table names dimensions ({}) and its label; set '{key}' at the top of the file",
                    CONFIG_TABLE_KEYS[..CONFIG_TABLE_KEYS.len() - 1].join(", ")
                ),
            ));
        }
        let mut value = base.clone();
        if let Some(root) = value.as_table_mut() {
            for (key, item) in table {
                if key == "label" {
                    continue;
                }
                // One value or a list: every dimension is a list.
                let list = match item {
                    toml::Value::Array(_) => item.clone(),
                    single => toml::Value::Array(vec![single.clone()]),
                };
                root.insert(key.clone(), list);
            }
        }
        let partial: Experiment = value.try_into().map_err(|problem| {
            ConfigError::with_source(
                format!("{which}: {problem}"),
                "give each dimension a value it takes at the top of a file",
                problem,
            )
        })?;
        let mut expanded = expand(&partial).map_err(|problem| {
            let message = format!("{which}: {}", problem.message);
            problem.reworded(message)
        })?;
        if let Some(label) = table.get("label") {
            let Some(label) = label.as_str().filter(|label| !label.trim().is_empty()) else {
                return Err(error(
                    format!("{which}: its label is not text"),
                    "write label = \"...\"",
                ));
            };
            if expanded.len() != 1 {
                return Err(error(
                    format!(
                        "{which} is {} Configs, and one label names one",
                        expanded.len()
                    ),
                    "drop the label (each Config gets an automatic one) or give single values",
                ));
            }
            expanded[0].label = label.trim().to_string();
        }
        let labelled = table.contains_key("label");
        configs.extend(expanded.into_iter().map(|config| (config, labelled)));
    }
    Ok(configs)
}

/// Whether `key` at the top of an experiment file sets a matrix dimension (one a
/// `[[config]]` table could set too).
pub(crate) fn is_dimension_key(key: &str) -> bool {
    key != "label" && CONFIG_TABLE_KEYS.contains(&key)
}

/// The plan holds one trial per block: refuse one too large to lay out, before it is.
fn check_plan_size(experiment: &Experiment, configs: &[Config]) -> Result<(), ConfigError> {
    let trials: u64 = configs
        .iter()
        .map(|config| {
            let block = experiment.block_size(config);
            experiment.handshakes_for(config).div_ceil(block) + u64::from(experiment.warmup > 0)
        })
        .sum();
    if trials > MAX_TRIALS as u64 {
        return Err(error(
            format!("the plan has {trials} blocks, more than the {MAX_TRIALS} a run lays out"),
            "raise --block (each Config's handshakes per round) or lower -n",
        ));
    }
    Ok(())
}

/// Every pair of client and lab server libraries, in matrix order. `backend` pairs each
/// library with itself; `client_backend` and `server_backend` cross the two sides. A target
/// has no lab server, so only the client's library varies.
fn backend_pairs(experiment: &Experiment, lab: bool) -> Vec<Backends> {
    let side = |values: &Vec<Backend>| {
        if values.is_empty() {
            experiment.backend.clone()
        } else {
            values.clone()
        }
    };
    let crossed = !experiment.client_backend.is_empty() || !experiment.server_backend.is_empty();
    let mut pairs: Vec<Backends> = Vec::new();
    if !lab {
        for client in side(&experiment.client_backend) {
            if !pairs.contains(&(client, None)) {
                pairs.push((client, None));
            }
        }
    } else if crossed {
        for client in side(&experiment.client_backend) {
            for server in side(&experiment.server_backend) {
                pairs.push((client, Some(server)));
            }
        }
    } else {
        pairs = experiment
            .backend
            .iter()
            .map(|&backend| (backend, Some(backend)))
            .collect();
    }
    pairs
}

/// Every combination of the session-level dimensions, in matrix order.
fn sessions(experiment: &Experiment) -> Vec<Session> {
    let mut sessions = Vec::new();
    for &transport in &experiment.transport {
        for &http in &experiment.http {
            for &resume in &experiment.resume {
                for &early_data in &experiment.early_data {
                    for &cert_cache in &experiment.cert_cache {
                        for &hello_retry in &experiment.hello_retry {
                            for (&mtls, &keep_alive) in experiment
                                .mtls
                                .iter()
                                .flat_map(|m| experiment.keep_alive.iter().map(move |k| (m, k)))
                            {
                                for &scheme in &experiment.scheme {
                                    // A 0-RTT request needs a request: HTTP/1.1 over TCP,
                                    // HTTP/3 over QUIC unless the experiment names one.
                                    let http = if http == Http::None && early_data > 0 {
                                        Http::default_for(transport)
                                    } else {
                                        http
                                    };
                                    sessions.push(Session {
                                        transport,
                                        http,
                                        resume,
                                        early_data,
                                        cert_cache: cert_cache == CertCache::On,
                                        hello_retry: hello_retry == HelloRetry::On,
                                        mtls: mtls == Mtls::On,
                                        keep_alive: keep_alive == KeepAlive::On,
                                        scheme,
                                        page: experiment.page.is_some(),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    sessions
}

/// Where a Config's plain HTTP goes: the lab server (its plain port, found when it starts),
/// or the target's host on `plain_port` (default 80).
fn plain_endpoint(endpoint: &Endpoint, experiment: &Experiment) -> Endpoint {
    match endpoint {
        Endpoint::Lab { .. } => endpoint.clone(),
        Endpoint::Target {
            address,
            sni,
            ca,
            client_identity,
        } => {
            let host = target_host(address).unwrap_or(address);
            let port = experiment.plain_port.unwrap_or(80);
            let address = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            Endpoint::Target {
                address,
                sni: sni.clone(),
                ca: ca.clone(),
                client_identity: client_identity.clone(),
            }
        }
    }
}

/// One Config's schedule: its rate (`None` in a closed loop) and measured time.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    rate: Option<f64>,
    time: Option<Duration>,
}

/// Every arrival rate of the experiment, a ramp's steps each on their own, with the measured
/// time each gets from `duration` (a ramp's steps share it).
fn arrivals(experiment: &Experiment) -> Result<Vec<Arrival>, ConfigError> {
    require_nonempty(&experiment.arrival_rate, "arrival-rate")?;
    if let Some(duration) = experiment.duration {
        if duration.is_zero() {
            return Err(error(
                "--duration 0 measures nothing",
                "give a length with a unit, for example --duration 30s",
            ));
        }
    }
    let mut arrivals = Vec::new();
    for &arrival in &experiment.arrival_rate {
        let steps = arrival.steps();
        for rate in arrival.rates() {
            let time = match (rate, experiment.duration) {
                (Some(_), Some(duration)) => Some(duration / steps),
                _ => None,
            };
            arrivals.push(Arrival { rate, time });
        }
    }
    Ok(arrivals)
}

/// Every combination of the network dimensions (unnamed ones at their neutral value), or one
/// `None` (loopback) when the experiment names none.
fn networks(experiment: &Experiment, named: &NetworkDimensions) -> Vec<Option<Network>> {
    if !named.any() {
        return vec![None];
    }
    let or_zero = |values: &[Duration]| {
        if values.is_empty() {
            vec![Duration::ZERO]
        } else {
            values.to_vec()
        }
    };
    let losses = if experiment.loss.is_empty() {
        vec![Loss(0.0)]
    } else {
        experiment.loss.clone()
    };
    let rates: Vec<_> = if experiment.bandwidth.is_empty() {
        vec![None]
    } else {
        experiment.bandwidth.iter().copied().map(Some).collect()
    };
    let mut networks = Vec::new();
    for rtt in or_zero(&experiment.rtt) {
        for jitter in or_zero(&experiment.jitter) {
            for &loss in &losses {
                for &rate in &rates {
                    networks.push(Some(Network {
                        rtt,
                        jitter,
                        loss,
                        rate,
                    }));
                }
            }
        }
    }
    networks
}

fn valid_values_hint() -> String {
    "TLS 1.3 suites: aes128gcm, aes256gcm, chacha20 (or TLS13_* names); TLS 1.2 suites: the same \
     short names or TLS_ECDHE_{ECDSA,RSA}_WITH_* names matching the certificate; legacy TLS 1.2 \
     suites (ECDHE-RSA-AES128-SHA, DHE-RSA-AES128-GCM-SHA256 with ffdhe2048/3072, \
     AES256-GCM-SHA384) and finite-field groups need --backend openssl; post-quantum groups \
     (x25519mlkem768, secp256r1mlkem768, mlkem768, mlkem1024), ML-DSA certificates and ECH need \
     TLS 1.3; add --skip-invalid to drop invalid combinations instead"
        .to_string()
}

/// The label words of the libraries (none for rustls on both sides, `openssl` for OpenSSL on
/// both, `client/server` when they differ) and of ECH.
fn backend_words((client, server): Backends, ech: Ech) -> String {
    let mut words = String::new();
    match server {
        Some(server) if server != client => words.push_str(&format!(" {client}/{server}")),
        _ if client != Backend::Rustls => words.push_str(&format!(" {client}")),
        _ => {}
    }
    match ech {
        Ech::Off => {}
        Ech::On => words.push_str(" ech"),
        Ech::Grease => words.push_str(" ech-grease"),
    }
    words
}

fn automatic_label(
    version: TlsVersion,
    suite: &SuiteSpec,
    group: Group,
    endpoint: &Endpoint,
    concurrency: u32,
    session: Session,
    sizes_differ: bool,
) -> String {
    // Plain HTTP has no TLS version, suite, group or certificate to name.
    let mut label = if session.scheme == Scheme::Http {
        "http".to_string()
    } else {
        let mut label = format!("{} {} {}", version.label(), suite.name, group);
        if suite.legacy.is_some() {
            label.push_str(" legacy");
        }
        if let Endpoint::Lab { cert, chain } = endpoint {
            label.push_str(&format!(" {cert} chain{chain}"));
        }
        label
    };
    label.push_str(&format!(" c{concurrency}"));
    if session.transport == Transport::Quic {
        label.push_str(" quic");
    }
    if session.http != Http::None {
        label.push_str(&format!(" {}", session.http.label()));
    }
    match session.resume {
        Resume::Off => {}
        Resume::Tickets => label.push_str(" tickets"),
        Resume::SessionId => label.push_str(" session-id"),
    }
    if session.early_data > 0 {
        label.push_str(" 0rtt");
        if sizes_differ {
            label.push_str(&format!("{}B", session.early_data));
        }
    }
    if session.cert_cache {
        label.push_str(" certcache");
    }
    if session.hello_retry {
        label.push_str(" hrr");
    }
    if session.mtls {
        label.push_str(" mtls");
    }
    if session.keep_alive {
        label.push_str(" keepalive");
    }
    if session.page {
        label.push_str(" page");
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerResumption;
    use crate::dimension::{CertProfile, Cipher};

    fn experiment() -> Experiment {
        Experiment {
            tls: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            suite: vec!["aes128gcm".parse().unwrap(), "chacha20".parse().unwrap()],
            group: vec![Group::X25519, Group::X25519Mlkem768],
            cert: vec![CertProfile::EcdsaP256, CertProfile::Rsa2048],
            chain: vec![1, 3],
            concurrency: vec![10],
            ..Experiment::default()
        }
    }

    #[test]
    fn invalid_combinations_are_rejected_with_the_valid_values() {
        let error = expand(&experiment()).unwrap_err();
        assert!(
            error
                .message
                .contains("x25519mlkem768 exists only in TLS 1.3"),
            "{error}"
        );
        assert!(error.hint.contains("--skip-invalid"));
    }

    #[test]
    fn skipping_invalid_combinations_keeps_the_rest_in_matrix_order() {
        let configs = expand(&Experiment {
            skip_invalid: true,
            ..experiment()
        })
        .unwrap();
        // TLS 1.2: 2 suites × 1 group × 4 endpoints; TLS 1.3: 2 × 2 × 4.
        assert_eq!(configs.len(), 8 + 16);
        assert_eq!(
            configs[0].label,
            "tls1.2 aes128gcm x25519 ecdsa-p256 chain1 c10"
        );
        assert!(configs.iter().enumerate().all(|(i, c)| c.index == i));
        assert!(configs
            .iter()
            .all(|c| !(c.version == TlsVersion::Tls12 && c.group.is_post_quantum())));
    }

    #[test]
    fn pinned_suites_must_match_version_and_certificate() {
        let rsa_suite = Experiment {
            tls: vec![TlsVersion::Tls12],
            suite: vec!["ECDHE-RSA-AES256-GCM-SHA384".parse().unwrap()],
            cert: vec![CertProfile::EcdsaP256],
            ..Experiment::default()
        };
        let error = expand(&rsa_suite).unwrap_err();
        assert!(error.message.contains("needs a RSA certificate"), "{error}");
        let tls13_suite = Experiment {
            tls: vec![TlsVersion::Tls12],
            suite: vec!["TLS13_AES_128_GCM_SHA256".parse().unwrap()],
            ..Experiment::default()
        };
        assert!(expand(&tls13_suite)
            .unwrap_err()
            .message
            .contains("only in TLS 1.3"));
    }

    #[test]
    fn labels_must_match_the_config_count_and_be_distinct() {
        let mut experiment = Experiment {
            tls: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            labels: vec!["old".into()],
            ..Experiment::default()
        };
        let error = expand(&experiment).unwrap_err();
        assert!(error.hint.contains("tls1.3 aes128gcm"), "{}", error.hint);
        experiment.labels = vec!["same".into(), "same".into()];
        assert!(expand(&experiment).is_err());
        experiment.labels = vec!["old".into(), "new".into()];
        let configs = expand(&experiment).unwrap();
        assert_eq!(configs[1].label, "new");
        assert_eq!(configs[1].suite.cipher, Cipher::Aes128Gcm);
    }

    #[test]
    fn targets_need_host_and_port_and_default_the_server_name() {
        let target = Experiment {
            target: Some("[::1]:8443".into()),
            ..Experiment::default()
        };
        let configs = expand(&target).unwrap();
        assert_eq!(configs[0].label, "tls1.3 aes128gcm x25519 c1");
        match &configs[0].endpoint {
            Endpoint::Target { sni, .. } => assert_eq!(sni, "::1"),
            other => panic!("unexpected endpoint {other:?}"),
        }
        let bad = Experiment {
            target: Some("localhost".into()),
            ..Experiment::default()
        };
        assert!(expand(&bad).unwrap_err().hint.contains("host:port"));
    }

    #[test]
    fn out_of_range_values_are_configuration_errors() {
        for experiment in [
            Experiment {
                handshakes: u64::MAX,
                ..Experiment::default()
            },
            Experiment {
                handshakes: 100_000_000_000,
                block: Some(1),
                ..Experiment::default()
            },
            Experiment {
                concurrency: vec![u32::MAX],
                ..Experiment::default()
            },
            Experiment {
                rtt: vec![Duration::from_secs(3600)],
                ..Experiment::default()
            },
            Experiment {
                chain: vec![6],
                ..Experiment::default()
            },
            Experiment {
                concurrency: vec![0],
                ..Experiment::default()
            },
            Experiment {
                handshakes: 0,
                ..Experiment::default()
            },
            Experiment {
                max_error_rate: 2.0,
                ..Experiment::default()
            },
        ] {
            assert!(expand(&experiment).is_err(), "{experiment:?}");
        }
    }

    #[test]
    fn session_dimensions_expand_and_reject_what_cannot_run() {
        let techniques = Experiment {
            resume: vec![Resume::Off, Resume::Tickets],
            early_data: vec![0, 1024],
            cert_cache: vec![CertCache::Off, CertCache::On],
            skip_invalid: true,
            ..Experiment::default()
        };
        let labels: Vec<String> = expand(&techniques)
            .unwrap()
            .into_iter()
            .map(|c| c.label)
            .collect();
        assert_eq!(
            labels,
            [
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1",
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1 certcache",
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1 tickets",
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1 h1 tickets 0rtt",
            ]
        );
        let error = expand(&Experiment {
            skip_invalid: false,
            ..techniques
        })
        .unwrap_err();
        assert!(error.message.contains("needs a resumed session"), "{error}");

        let quic = Experiment {
            tls: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            transport: vec![Transport::Quic],
            ..Experiment::default()
        };
        assert!(expand(&quic)
            .unwrap_err()
            .message
            .contains("QUIC carries TLS 1.3 only"));
        let h3_over_tcp = Experiment {
            http: vec![Http::Http3],
            ..Experiment::default()
        };
        assert!(expand(&h3_over_tcp)
            .unwrap_err()
            .message
            .contains("needs QUIC"));

        // 0-RTT needs single-use tickets, so the lab server keeps a cache.
        let zero_rtt = expand(&Experiment {
            transport: vec![Transport::Quic],
            resume: vec![Resume::Tickets],
            early_data: vec![512],
            ..Experiment::default()
        })
        .unwrap();
        assert_eq!(zero_rtt[0].http, Http::Http3);
        let key = zero_rtt[0].server_key().unwrap();
        assert_eq!(key.resumption, ServerResumption::Cache);
        assert!(key.early_data);
    }

    #[test]
    fn backends_pair_or_cross_and_label_the_config() {
        let paired = expand(&Experiment {
            backend: vec![Backend::Rustls, Backend::Openssl],
            ..Experiment::default()
        })
        .unwrap();
        let pairs: Vec<_> = paired
            .iter()
            .map(|c| (c.client_backend, c.server_backend))
            .collect();
        assert_eq!(
            pairs,
            [
                (Backend::Rustls, Some(Backend::Rustls)),
                (Backend::Openssl, Some(Backend::Openssl))
            ]
        );
        assert!(paired[1].label.ends_with(" openssl"), "{}", paired[1].label);
        assert_eq!(paired[1].server_key().unwrap().backend, Backend::Openssl);

        let crossed = expand(&Experiment {
            client_backend: vec![Backend::Rustls, Backend::Openssl],
            server_backend: vec![Backend::Openssl],
            ..Experiment::default()
        })
        .unwrap();
        assert_eq!(crossed.len(), 2);
        assert!(
            crossed[0].label.ends_with(" rustls/openssl"),
            "{}",
            crossed[0].label
        );

        // A target has no lab server: only the client's library varies.
        let target = expand(&Experiment {
            client_backend: vec![Backend::Rustls, Backend::Openssl],
            server_backend: vec![Backend::Rustls, Backend::Openssl],
            target: Some("example.com:443".into()),
            ..Experiment::default()
        })
        .unwrap();
        assert_eq!(target.len(), 2);
        assert!(target.iter().all(|c| c.server_backend.is_none()));
    }

    #[test]
    fn what_only_openssl_has_is_rejected_on_rustls_with_the_flag_to_use() {
        let legacy = Experiment {
            tls: vec![TlsVersion::Tls12],
            suite: vec!["DHE-RSA-AES128-GCM-SHA256".parse().unwrap()],
            group: vec![Group::Ffdhe2048],
            cert: vec![CertProfile::Rsa2048],
            ..Experiment::default()
        };
        let error = expand(&legacy).unwrap_err();
        assert!(
            error.message.contains("--client-backend openssl"),
            "{error}"
        );
        let configs = expand(&Experiment {
            backend: vec![Backend::Openssl],
            ..legacy.clone()
        })
        .unwrap();
        assert_eq!(
            configs[0].label,
            "tls1.2 TLS_DHE_RSA_WITH_AES_128_GCM_SHA256 ffdhe2048 legacy rsa2048 chain1 c1 openssl"
        );
        // The DHE suite needs a finite-field group, and an ECDHE suite must not get one.
        let error = expand(&Experiment {
            backend: vec![Backend::Openssl],
            group: vec![Group::X25519],
            ..legacy.clone()
        })
        .unwrap_err();
        assert!(error.message.contains("ffdhe2048 or ffdhe3072"), "{error}");
        let error = expand(&Experiment {
            backend: vec![Backend::Openssl],
            suite: vec!["aes128gcm".parse().unwrap()],
            ..legacy
        })
        .unwrap_err();
        assert!(error.message.contains("only with a DHE suite"), "{error}");

        // ECH: TLS 1.3 only, and only an OpenSSL lab server can accept it.
        let ech = Experiment {
            ech: vec![Ech::Off, Ech::On, Ech::Grease],
            ..Experiment::default()
        };
        let error = expand(&ech).unwrap_err();
        assert!(
            error.message.contains("--server-backend openssl"),
            "{error}"
        );
        let configs = expand(&Experiment {
            server_backend: vec![Backend::Openssl],
            ..ech.clone()
        })
        .unwrap();
        let words: Vec<_> = configs.iter().map(|c| c.label.clone()).collect();
        assert!(words[1].ends_with("rustls/openssl ech"), "{words:?}");
        assert!(words[2].ends_with("rustls/openssl ech-grease"), "{words:?}");
        let error = expand(&Experiment {
            tls: vec![TlsVersion::Tls12],
            backend: vec![Backend::Openssl],
            ..ech
        })
        .unwrap_err();
        assert!(error.message.contains("only in TLS 1.3"), "{error}");

        // ML-DSA certificates sign TLS 1.3 handshakes only.
        let error = expand(&Experiment {
            tls: vec![TlsVersion::Tls12],
            cert: vec![CertProfile::MlDsa65],
            ..Experiment::default()
        })
        .unwrap_err();
        assert!(error.message.contains("TLS 1.3 handshakes only"), "{error}");
    }

    #[test]
    fn mutual_tls_is_a_lab_dimension_with_its_own_lab_server() {
        let configs = expand(&Experiment {
            mtls: vec![Mtls::Off, Mtls::On],
            backend: vec![Backend::Rustls, Backend::Openssl],
            ..Experiment::default()
        })
        .unwrap();
        let labels: Vec<&str> = configs.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1",
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1 mtls",
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1 openssl",
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1 mtls openssl",
            ]
        );
        assert_eq!(configs[1].mtls, Some(CertProfile::EcdsaP256));
        assert!(configs[1].trust().ends_with("+ client certificate"));
        // A server that asks and one that does not are two lab servers.
        let keys: Vec<_> = configs.iter().map(|c| c.server_key().unwrap()).collect();
        assert_ne!(keys[0], keys[1]);
        assert_eq!(keys[1].client_certificates, Some(CertProfile::EcdsaP256));

        let target = expand(&Experiment {
            mtls: vec![Mtls::On],
            target: Some("example.com:443".into()),
            ..Experiment::default()
        })
        .unwrap_err();
        assert!(target.hint.contains("--client-cert"), "{target:?}");
        let plain = expand(&Experiment {
            mtls: vec![Mtls::On],
            scheme: vec![Scheme::Http],
            http: vec![Http::Http11],
            ..Experiment::default()
        })
        .unwrap_err();
        assert!(plain.message.contains("client certificate"), "{plain}");
        let ml_dsa = expand(&Experiment {
            tls: vec![TlsVersion::Tls12],
            mtls: vec![Mtls::On],
            client_cert_profile: CertProfile::MlDsa44,
            ..Experiment::default()
        })
        .unwrap_err();
        assert!(
            ml_dsa.message.contains("TLS 1.3 handshakes only"),
            "{ml_dsa}"
        );
    }

    #[test]
    fn ech_against_a_target_needs_its_configuration_in_base64() {
        let target = Experiment {
            ech: vec![Ech::On],
            target: Some("example.com:443".into()),
            ..Experiment::default()
        };
        assert!(expand(&target).unwrap_err().hint.contains("--ech-config"));
        let error = expand(&Experiment {
            ech_config: Some("not base64!".into()),
            ..target.clone()
        })
        .unwrap_err();
        assert!(error.message.contains("not base64"), "{error}");
        let configs = expand(&Experiment {
            ech_config: Some("AEX+DQBB".into()),
            ..target
        })
        .unwrap();
        assert_eq!(configs[0].ech, Ech::On);
        let error = expand(&Experiment {
            ech_config: Some("AEX+DQBB".into()),
            ..Experiment::default()
        })
        .unwrap_err();
        assert!(error.message.contains("external targets only"), "{error}");
    }

    #[test]
    fn config_tables_are_the_configs_and_nothing_else() {
        let experiment = Experiment::from_toml(
            "matrix = false\ntls = [\"1.2\", \"1.3\"]\ngroup = [\"x25519\", \"secp256r1\"]\n\
             [[config]]\ntls = \"1.3\"\nsuite = \"chacha20\"\ncert = \"ed25519\"\n\
             [[config]]\ntls = \"1.2\"\nsuite = \"aes256gcm\"\ncert = \"rsa2048\"\nlabel = \"legacy\"\n\
             [[config]]\ntls = \"1.3\"\ngroup = \"x25519mlkem768\"\ncert = \"mldsa65\"\n",
        )
        .unwrap();
        let configs = experiment.configs().unwrap();
        let labels: Vec<&str> = configs.iter().map(|config| config.label.as_str()).collect();
        assert_eq!(labels.len(), 3, "{labels:?}");
        assert_eq!(labels[1], "legacy");
        assert_eq!(configs[0].suite.cipher, crate::dimension::Cipher::Chacha20);
        // What a table does not name is the default (x25519), not the file's crossed lists.
        assert_eq!(configs[0].group, Group::X25519);
        assert_eq!(configs[2].group, Group::X25519Mlkem768);
        assert_eq!(
            configs
                .iter()
                .map(|config| config.index)
                .collect::<Vec<_>>(),
            [0, 1, 2]
        );
        let round_trip = Experiment::from_toml(&experiment.to_toml()).unwrap();
        assert_eq!(round_trip.configs().unwrap().len(), 3);
        // Without a dimension at the top, the tables run alone, and the dump says so.
        let alone = Experiment::from_toml("handshakes = 5\n[[config]]\ntls = \"1.2\"\n").unwrap();
        assert_eq!(alone.matrix, None);
        assert!(alone.to_toml().contains("matrix = false"));
        assert_eq!(alone.configs().unwrap().len(), 1);
    }

    #[test]
    fn config_tables_next_to_a_crossed_matrix_run_the_union_once_each() {
        let text = "tls = [\"1.2\", \"1.3\"]\nsuite = [\"aes128gcm\", \"chacha20\"]\n\
             [[config]]\ncert = \"rsa2048\"\n\
             [[config]]\nlabel = \"the 1.3 default\"\ntls = \"1.3\"\n\
             [[config]]\ntls = \"1.3\"\nsuite = [\"chacha20\", \"aes256gcm\"]\n";
        let experiment = Experiment::from_toml(text).unwrap();
        // The top level names dimensions: the matrix runs next to the tables.
        assert_eq!(experiment.matrix, Some(true));
        let configs = experiment.configs().unwrap();
        let described: Vec<(String, &str, Cipher, &str)> = configs
            .iter()
            .map(|config| {
                let cert = match &config.endpoint {
                    Endpoint::Lab { cert, .. } => cert.as_str(),
                    Endpoint::Target { .. } => "target",
                };
                (
                    config.label.clone(),
                    config.version.as_str(),
                    config.suite.cipher,
                    cert,
                )
            })
            .collect();
        // The matrix's four, then what the tables add: 1.3 with aes128gcm (the defaults) is the
        // matrix's and takes the table's label; chacha20 at 1.3 is the matrix's too.
        let expected = [
            ("1.2", Cipher::Aes128Gcm, "ecdsa-p256"),
            ("1.2", Cipher::Chacha20, "ecdsa-p256"),
            ("1.3", Cipher::Aes128Gcm, "ecdsa-p256"),
            ("1.3", Cipher::Chacha20, "ecdsa-p256"),
            ("1.3", Cipher::Aes128Gcm, "rsa2048"),
            ("1.3", Cipher::Aes256Gcm, "ecdsa-p256"),
        ];
        assert_eq!(configs.len(), expected.len(), "{described:?}");
        for (got, want) in described.iter().zip(expected) {
            assert_eq!((got.1, got.2, got.3), want, "{described:?}");
        }
        assert_eq!(described[2].0, "the 1.3 default", "{described:?}");
        assert_eq!(
            configs
                .iter()
                .map(|config| config.index)
                .collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
        // The dump reproduces the union.
        let dumped = experiment.to_toml();
        assert!(dumped.contains("matrix = true"), "{dumped}");
        assert_eq!(
            Experiment::from_toml(&dumped).unwrap().configs().unwrap(),
            configs
        );

        // `matrix = false` runs the tables alone (4 Configs: the third table makes two).
        let alone = Experiment::from_toml(&format!("matrix = false\n{text}")).unwrap();
        assert_eq!(alone.configs().unwrap().len(), 4);
        // A dimension flag given with a tables-only file crosses the matrix too; with
        // matrix = false it is refused rather than ignored.
        let flags = crate::Overrides {
            tls: Some(vec!["1.2".into()]),
            ..Default::default()
        };
        let mut tables = Experiment::from_toml("[[config]]\ncert = \"rsa2048\"\n").unwrap();
        tables.apply(&flags).unwrap();
        assert_eq!(tables.configs().unwrap().len(), 2);
        let mut off = alone.clone();
        let refused = off.apply(&flags).unwrap_err();
        assert!(
            refused.message.contains("--tls sets the crossed matrix"),
            "{refused}"
        );
        assert!(refused.hint.contains("matrix = true"), "{refused}");
    }

    #[test]
    fn a_config_table_names_dimensions_only() {
        let run_level = Experiment::from_toml("[[config]]\nhandshakes = 5\n").unwrap();
        let problem = run_level.configs().unwrap_err();
        assert!(
            problem.message.contains("[[config]] 1: 'handshakes'"),
            "{problem:?}"
        );
        let crossed =
            Experiment::from_toml("[[config]]\ntls = [\"1.2\", \"1.3\"]\nlabel = \"x\"\n").unwrap();
        assert!(crossed.configs().unwrap_err().message.contains("2 Configs"));
        let invalid = Experiment::from_toml("[[config]]\ntls = \"1.4\"\n").unwrap();
        let problem = invalid.configs().unwrap_err();
        assert!(problem.message.starts_with("[[config]] 1:"), "{problem:?}");
        // The table's reading failed in the TOML parser: its error is the source.
        let source = std::error::Error::source(&problem).expect("the parser's error as source");
        assert!(source.to_string().contains("1.4"), "{source}");
    }
}
