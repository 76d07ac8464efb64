//! What the store's examples share: a run as a benchmark begins it.

use tlslab_core::*;

/// The default experiment's run, on loopback, on a machine described as "any".
pub fn info() -> RunInfo {
    let experiment = Experiment::default();
    let configs = experiment.configs().expect("the default Config");
    RunInfo {
        source: Source::Active,
        plan: None,
        experiment: Some(experiment),
        configs: configs
            .iter()
            .map(|config| config.record("127.0.0.1:4433".into(), None))
            .collect(),
        environment: Environment {
            tool_version: env!("CARGO_PKG_VERSION").into(),
            commit: "bench".into(),
            rustls_version: "n/a".into(),
            crypto_provider: "n/a".into(),
            openssl_version: None,
            cpu_model: "any".into(),
            cores: 1,
            kernel: "any".into(),
            hostname: "bench".into(),
            network: "loopback".into(),
            name_resolution: Vec::new(),
            wire_clock: None,
        },
        command_line: Vec::new(),
        started_at_unix_ns: 0,
    }
}
