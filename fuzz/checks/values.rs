//! Every value a user types on the command line (durations, percentages, rates, suites,
//! groups, pages and the other dimensions) and page description files, as any text: each
//! parses or is an error with a hint.

use tlslab_core::{Experiment, Overrides};

pub fn check(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let values: Vec<String> = text.split(',').map(str::to_string).collect();
    let one = Some(text.to_string());
    let many = Some(values);
    let overrides = Overrides {
        tls: many.clone(),
        suite: many.clone(),
        group: many.clone(),
        cert: many.clone(),
        timeout: one.clone(),
        resume: many.clone(),
        cert_cache: many.clone(),
        transport: many.clone(),
        http: many.clone(),
        backend: many.clone(),
        client_backend: many.clone(),
        server_backend: many.clone(),
        ech: many.clone(),
        ech_config: one.clone(),
        close: one.clone(),
        target: one.clone(),
        until_ci: one.clone(),
        rtt: many.clone(),
        jitter: many.clone(),
        loss: many.clone(),
        bandwidth: many.clone(),
        arrival_rate: many.clone(),
        duration: one.clone(),
        emulator: one.clone(),
        ..Overrides::default()
    };
    // Each value on its own, then all of them together, then expanded.
    for field in 0..10 {
        let mut single = Overrides::default();
        match field {
            0 => single.timeout = one.clone(),
            1 => single.until_ci = one.clone(),
            2 => single.rtt = many.clone(),
            3 => single.loss = many.clone(),
            4 => single.bandwidth = many.clone(),
            5 => single.suite = many.clone(),
            6 => single.group = many.clone(),
            7 => single.arrival_rate = many.clone(),
            8 => {
                single.arrival_rate = Some(vec!["100/s".to_string()]);
                single.duration = one.clone();
            }
            _ => single.emulator = one.clone(),
        }
        let mut experiment = Experiment::default();
        if experiment.apply(&single).is_ok() {
            let _ = experiment.configs();
        }
    }
    let mut experiment = Experiment::default();
    if experiment.apply(&overrides).is_ok() {
        let _ = experiment.configs();
    }
    let _ = text.parse::<tlslab_backend::Suite>();
    // A page as --page takes it, and as a description file (lines, or a HAR file's JSON);
    // whatever parses must print as a list that parses to the same page.
    for page in [
        text.parse::<tlslab_core::Page>(),
        tlslab_core::Page::from_description(text),
    ]
    .into_iter()
    .flatten()
    {
        assert_eq!(
            page.to_string().parse::<tlslab_core::Page>().ok(),
            Some(page)
        );
    }
}
