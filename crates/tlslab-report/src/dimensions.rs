//! The dimensions a stored Config has, and in which of them two Configs differ: what decides
//! to which dimension a contrast may be credited (DESIGN.md section 6). An effect is credited
//! to one dimension only when the Configs compared differ in that dimension alone; otherwise
//! the contrast is named by every dimension that differs ([`differences`], [`joined`]).

use std::collections::BTreeMap;

use tlslab_store::ConfigRow;

/// A dimension of a stored Config, as `--by` names it.
pub(crate) type Dimension = (&'static str, fn(&ConfigRow) -> String);

fn text(value: &Option<String>) -> String {
    value.clone().unwrap_or_else(|| "–".into())
}

fn number<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "–".into(), |value| value.to_string())
}

/// A duration in nanoseconds as its flag takes it (`30ms`), `–` without one.
fn millis(nanos: Option<i64>) -> String {
    number(nanos.map(|nanos| format!("{}ms", nanos as f64 / 1e6)))
}

/// Every dimension a Config can differ in, by the name of its flag: every key a `[[config]]`
/// table may set (`backend` is `client-backend` and `server-backend` together), and what a
/// capture tells Configs apart by. A Config's value of each is what the store keeps, so two
/// Configs equal in every one of these are the same Config.
pub(crate) const DIMENSIONS: &[Dimension] = &[
    ("tls", |c| c.version.clone()),
    ("suite", |c| c.suite.clone()),
    ("group", |c| c.group.clone()),
    ("cert", |c| text(&c.cert)),
    ("chain", |c| number(c.chain)),
    ("concurrency", |c| number(c.concurrency)),
    ("arrival-rate", |c| {
        c.arrival_rate
            .map_or_else(|| "closed".into(), tlslab_core::arrival::format_rate)
    }),
    ("transport", |c| c.transport.clone()),
    ("http", |c| c.http.clone()),
    ("resume", |c| c.resumption.clone()),
    ("early-data", |c| c.early_data_bytes.to_string()),
    ("cert-cache", |c| switch(c.cert_cache)),
    ("hello-retry", |c| switch(c.hello_retry)),
    ("mtls", |c| switch(c.mtls)),
    ("keep-alive", |c| switch(c.keep_alive)),
    ("scheme", |c| c.scheme.clone()),
    ("client-backend", |c| text(&c.client_backend)),
    ("server-backend", |c| text(&c.server_backend)),
    ("ech", |c| c.ech.clone()),
    ("rtt", |c| millis(c.rtt_ns)),
    ("jitter", |c| millis(c.jitter_ns)),
    ("loss", |c| number(c.loss)),
    ("bandwidth", |c| {
        number(
            c.rate_bps
                .map(|bps| tlslab_core::network::Rate(bps.max(0) as u64)),
        )
    }),
    ("target", |c| text(&c.target)),
    // Where a capture saw the handshakes: capture points writing one run are told apart.
    ("capture-point", |c| text(&c.capture_point)),
];

/// `--backend`: both libraries, which the flag sets together. A contrast that changes the
/// client's and the server's library is named by it, as the run was asked for (`backend
/// openssl vs rustls`), not as `client-backend+server-backend`. Its value is the library, or
/// `client/server` when the two differ.
const BACKEND: Dimension = ("backend", |c| {
    match (&c.client_backend, &c.server_backend) {
        (Some(client), Some(server)) if client != server => format!("{client}/{server}"),
        (client, _) => text(client),
    }
});

/// `names` with `client-backend` and `server-backend`, when both are there, as the one
/// `backend` in the first one's place.
pub(crate) fn with_backend(mut names: Vec<&'static str>) -> Vec<&'static str> {
    let client = names.iter().position(|name| *name == "client-backend");
    let server = names.iter().position(|name| *name == "server-backend");
    if let (Some(client), Some(server)) = (client, server) {
        names[client] = BACKEND.0;
        names.remove(server);
    }
    names
}

/// The dimensions a session technique is: a Config that sets one of them is measured against
/// the full handshake that differs from it in these alone.
pub(crate) const TECHNIQUES: [&str; 3] = ["resume", "early-data", "cert-cache"];

/// An on/off dimension's value as its flag takes it (`--mtls off,on`, `--baseline off`).
fn switch(on: bool) -> String {
    if on { "on" } else { "off" }.to_string()
}

/// The names of every dimension, in flag order.
pub(crate) fn names() -> Vec<&'static str> {
    DIMENSIONS
        .iter()
        .chain([&BACKEND])
        .map(|(name, _)| *name)
        .collect()
}

/// The dimension named `name` (an underscore for a hyphen too: `capture_point`, as the
/// store's column is spelt).
pub(crate) fn find(name: &str) -> Option<&'static Dimension> {
    let name = name.replace('_', "-");
    DIMENSIONS
        .iter()
        .chain([&BACKEND])
        .find(|(dimension, _)| *dimension == name)
}

/// A Config's value of the dimension named `name` (as `compare --by` names it).
pub(crate) fn dimension_value(name: &str, config: &ConfigRow) -> Option<String> {
    find(name).map(|(_, value)| value(config))
}

/// Every dimension in which two Configs differ, in flag order. A contrast between them may be
/// credited to one dimension only when this holds that one alone.
pub fn differences(one: &ConfigRow, other: &ConfigRow) -> Vec<&'static str> {
    with_backend(
        DIMENSIONS
            .iter()
            .filter(|(_, value)| value(one) != value(other))
            .map(|(name, _)| *name)
            .collect(),
    )
}

/// Several dimensions (or their values) as one name: `suite+cert`, `aes256gcm+ecdsa-p256`.
pub fn joined<S: AsRef<str>>(parts: &[S]) -> String {
    parts
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<&str>>()
        .join("+")
}

/// Dimension names in words: `suite`, `suite and cert`, `tls, suite and cert`.
pub fn in_words<S: AsRef<str>>(names: &[S]) -> String {
    match names {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [head @ .., last] => format!(
            "{} and {}",
            head.iter()
                .map(AsRef::as_ref)
                .collect::<Vec<&str>>()
                .join(", "),
            last.as_ref()
        ),
    }
}

/// Whether the Configs hold more than one value of a dimension.
pub(crate) fn varies(configs: &[ConfigRow], value: fn(&ConfigRow) -> String) -> bool {
    let first = configs.first().map(value);
    configs.iter().any(|config| Some(value(config)) != first)
}

/// Whether two dimensions change together: any two Configs equal in one are equal in the
/// other, and the other way round. No contrast among these Configs can tell their effects
/// apart: one that changes either changes both.
pub(crate) fn tied(
    configs: &[ConfigRow],
    one: fn(&ConfigRow) -> String,
    other: fn(&ConfigRow) -> String,
) -> bool {
    // A one-to-one map between their values is the same thing, found in one pass.
    let mut forward: BTreeMap<String, String> = BTreeMap::new();
    let mut backward: BTreeMap<String, String> = BTreeMap::new();
    configs.iter().all(|config| {
        let (a, b) = (one(config), other(config));
        let ahead = forward.entry(a.clone()).or_insert_with(|| b.clone()) == &b;
        let behind = backward.entry(b).or_insert(a.clone()) == &a;
        ahead && behind
    })
}

/// The dimension named `name` and those that vary and change together with it among
/// `configs`, in flag order: what a contrast of `name` changes, all of them.
pub(crate) fn tied_with(configs: &[ConfigRow], name: &str) -> Vec<&'static str> {
    let Some(&(first, value_of)) = find(name) else {
        return Vec::new();
    };
    let together = with_backend(
        DIMENSIONS
            .iter()
            .filter(|(other, value)| {
                *other == first || (varies(configs, *value) && tied(configs, value_of, *value))
            })
            .map(|(other, _)| *other)
            .collect(),
    );
    // `backend` over Configs that cross the two libraries changes with neither alone.
    if together.is_empty() {
        vec![first]
    } else {
        together
    }
}

/// The dimensions the Configs vary, by `--by` name, one name for dimensions that change
/// together (the first in flag order): the axes a factorial comparison can take one at a
/// time. Two or more mean the Configs cross dimensions, and comparing every Config with one
/// baseline would mix their effects.
pub fn varied_dimensions(configs: &[ConfigRow]) -> Vec<&'static str> {
    let mut chosen: Vec<&Dimension> = Vec::new();
    for dimension in DIMENSIONS {
        if varies(configs, dimension.1)
            && !chosen
                .iter()
                .any(|(_, value)| tied(configs, *value, dimension.1))
        {
            chosen.push(dimension);
        }
    }
    chosen.into_iter().map(|(name, _)| *name).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A stored Config of the defaults (TLS 1.3, aes128gcm, x25519, ecdsa-p256, c1, lab
    /// server), changed by `change`.
    pub(crate) fn row(id: i64, label: &str, change: impl FnOnce(&mut ConfigRow)) -> ConfigRow {
        let mut row = ConfigRow {
            id,
            label: label.into(),
            version: "1.3".into(),
            suite: "aes128gcm".into(),
            group: "x25519".into(),
            cert: Some("ecdsa-p256".into()),
            chain: Some(1),
            target: None,
            concurrency: Some(1),
            resume: false,
            insecure: false,
            stopped_round: None,
            stopped_samples: None,
            stopped_half_width: None,
            rtt_ns: None,
            jitter_ns: None,
            loss: None,
            emulator: None,
            capture_point: None,
            transport: "tcp".into(),
            http: "none".into(),
            resumption: "off".into(),
            early_data_bytes: 0,
            cert_cache: false,
            client_backend: Some("rustls".into()),
            server_backend: Some("rustls".into()),
            ech: "off".into(),
            hello_retry: false,
            trust: None,
            arrival_rate: None,
            keep_alive: false,
            mtls: false,
            scheme: "https".into(),
            address: "127.0.0.1:1".into(),
            path: None,
            rate_bps: None,
            sni: None,
        };
        change(&mut row);
        row
    }

    #[test]
    fn configs_differ_in_every_dimension_named_and_no_other() {
        let rsa = row(1, "a", |c| {
            c.version = "1.2".into();
            c.cert = Some("rsa2048".into());
        });
        let ecdsa = row(2, "b", |c| {
            c.version = "1.2".into();
            c.suite = "aes256gcm".into();
        });
        assert_eq!(differences(&rsa, &ecdsa), ["suite", "cert"]);
        assert_eq!(differences(&rsa, &rsa), Vec::<&str>::new());
        // What only the emulated link tells apart is a dimension too.
        let jitter = row(3, "c", |c| c.jitter_ns = Some(5_000_000));
        assert_eq!(differences(&row(4, "d", |_| {}), &jitter), ["jitter"]);
        assert_eq!(joined(&["suite", "cert"]), "suite+cert");
        assert_eq!(in_words(&["tls", "suite", "cert"]), "tls, suite and cert");
        assert_eq!(in_words(&["suite"]), "suite");
    }

    #[test]
    fn dimensions_that_change_together_are_named_together() {
        // examples/explicit-configs.toml: suite and certificate change together.
        let configs = [
            row(1, "a", |c| {
                c.version = "1.2".into();
                c.cert = Some("rsa2048".into());
            }),
            row(2, "b", |c| {
                c.version = "1.2".into();
                c.suite = "aes256gcm".into();
            }),
            row(3, "c", |c| {
                c.suite = "chacha20".into();
                c.cert = Some("ed25519".into());
            }),
        ];
        assert_eq!(varied_dimensions(&configs), ["tls", "suite"]);
        assert_eq!(tied_with(&configs, "suite"), ["suite", "cert"]);
        assert_eq!(tied_with(&configs, "cert"), ["suite", "cert"]);
        assert_eq!(tied_with(&configs, "tls"), ["tls"]);
    }
}
