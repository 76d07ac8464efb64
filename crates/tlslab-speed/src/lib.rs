//! `tlslab speed`: what each cryptographic primitive of a TLS handshake costs this machine,
//! per backend, in operations per second and time per operation. The price list a
//! handshake's work is priced with (issue 34), laid out as `openssl speed` lays out its own.
//!
//! Two backends, each measured through the library a handshake calls: `rustls` is aws-lc-rs,
//! rustls' crypto provider ([`aws_lc`]); `openssl` is the OpenSSL 4 the openssl backend links
//! ([`openssl_backend`]). A primitive a backend lacks is a row that says so, never a missing
//! row. Keys are made once per process ([`keys`]): big RSA keys take seconds to generate, and
//! both backends sign with the same key (aws-lc-rs reads OpenSSL's PKCS #8).
//!
//! Each operation is timed the same way ([`timing`]): a warm-up call, then as many calls as
//! fit in the time asked, on each of N threads at once, counted and summed into an aggregate
//! rate. The hybrid key exchanges (X25519MLKEM768 and its kin) are the sums of their parts'
//! times, said in their rows.

mod aws_lc;
mod error;
mod keys;
mod openssl_backend;
mod timing;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

pub use error::SpeedError;

/// A library measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// aws-lc-rs, the crypto provider of tlslab's rustls.
    Rustls,
    /// The linked OpenSSL 4.
    Openssl,
}

impl Backend {
    /// Both, in the order they are printed.
    pub const ALL: [Backend; 2] = [Backend::Rustls, Backend::Openssl];

    /// The name `--backend` takes.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Rustls => "rustls",
            Backend::Openssl => "openssl",
        }
    }

    /// The backend `--backend` names, if any.
    pub fn parse(text: &str) -> Option<Backend> {
        Backend::ALL
            .into_iter()
            .find(|backend| backend.name().eq_ignore_ascii_case(text.trim()))
    }

    /// The library that does the work, with the version it reports itself when it can (the
    /// caller adds aws-lc-rs' version, which the crate does not report).
    pub fn library(self) -> String {
        match self {
            Backend::Rustls => "aws-lc-rs".into(),
            Backend::Openssl => openssl::version::version().to_string(),
        }
    }
}

/// What a primitive is for; each kind is its own table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Sign and verify (a CertificateVerify, a certificate).
    Signature,
    /// An ephemeral Diffie-Hellman share made and a shared secret derived.
    KeyExchange,
    /// ML-KEM: key generation, encapsulation, decapsulation.
    Kem,
    /// A hybrid group, as the sum of its parts.
    Hybrid,
    /// A TLS 1.3 suite's AEAD, one record sealed or opened.
    Aead,
    /// HKDF, as TLS 1.3's key schedule calls it.
    Hkdf,
}

impl Kind {
    /// The name in `--json` and the store.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Signature => "signature",
            Kind::KeyExchange => "key_exchange",
            Kind::Kem => "kem",
            Kind::Hybrid => "hybrid",
            Kind::Aead => "aead",
            Kind::Hkdf => "hkdf",
        }
    }

    /// The operations of a primitive of this kind, in table order.
    pub fn operations(self) -> &'static [&'static str] {
        match self {
            Kind::Signature => &["sign", "verify"],
            Kind::KeyExchange => &["keygen", "derive"],
            Kind::Kem => &["keygen", "encapsulate", "decapsulate"],
            Kind::Hybrid => &["client_share", "server_share", "client_finish"],
            Kind::Aead => &["seal", "open"],
            Kind::Hkdf => &["extract", "expand"],
        }
    }
}

/// One primitive of the price list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Primitive {
    /// Its name on the command line, in `--json` and in the store (`rsa2048`, `x25519`).
    pub name: &'static str,
    /// Its table.
    pub kind: Kind,
    /// Its label in the table, as `openssl speed` writes it (`rsa 2048 bits`).
    pub label: &'static str,
    /// A record's plaintext size, for an AEAD.
    pub bytes: Option<usize>,
    /// A hybrid's parts: its classical group and its ML-KEM.
    pub parts: Option<(&'static str, &'static str)>,
}

const fn primitive(name: &'static str, kind: Kind, label: &'static str) -> Primitive {
    Primitive {
        name,
        kind,
        label,
        bytes: None,
        parts: None,
    }
}

const fn aead(name: &'static str, label: &'static str, bytes: usize) -> Primitive {
    Primitive {
        name,
        kind: Kind::Aead,
        label,
        bytes: Some(bytes),
        parts: None,
    }
}

const fn hybrid(
    name: &'static str,
    label: &'static str,
    parts: (&'static str, &'static str),
) -> Primitive {
    Primitive {
        name,
        kind: Kind::Hybrid,
        label,
        bytes: None,
        parts: Some(parts),
    }
}

/// Every primitive, in the order the tables list them.
pub const PRIMITIVES: &[Primitive] = &[
    primitive("rsa512", Kind::Signature, "rsa 512 bits"),
    primitive("rsa1024", Kind::Signature, "rsa 1024 bits"),
    primitive("rsa2048", Kind::Signature, "rsa 2048 bits"),
    primitive("rsa3072", Kind::Signature, "rsa 3072 bits"),
    primitive("rsa4096", Kind::Signature, "rsa 4096 bits"),
    primitive("rsa7680", Kind::Signature, "rsa 7680 bits"),
    primitive("rsa15360", Kind::Signature, "rsa 15360 bits"),
    primitive("dsa1024", Kind::Signature, "dsa 1024 bits"),
    primitive("dsa2048", Kind::Signature, "dsa 2048 bits"),
    primitive("ecdsa-p256", Kind::Signature, "ecdsa P-256"),
    primitive("ecdsa-p384", Kind::Signature, "ecdsa P-384"),
    primitive("ecdsa-p521", Kind::Signature, "ecdsa P-521"),
    primitive("ed25519", Kind::Signature, "Ed25519"),
    primitive("ed448", Kind::Signature, "Ed448"),
    primitive("mldsa44", Kind::Signature, "ML-DSA-44"),
    primitive("mldsa65", Kind::Signature, "ML-DSA-65"),
    primitive("mldsa87", Kind::Signature, "ML-DSA-87"),
    primitive("x25519", Kind::KeyExchange, "X25519"),
    primitive("p256", Kind::KeyExchange, "ECDH P-256"),
    primitive("p384", Kind::KeyExchange, "ECDH P-384"),
    primitive("ffdhe2048", Kind::KeyExchange, "ffdhe2048"),
    primitive("ffdhe3072", Kind::KeyExchange, "ffdhe3072"),
    primitive("mlkem768", Kind::Kem, "ML-KEM-768"),
    primitive("mlkem1024", Kind::Kem, "ML-KEM-1024"),
    hybrid("x25519mlkem768", "X25519MLKEM768", ("x25519", "mlkem768")),
    hybrid(
        "secp256r1mlkem768",
        "SecP256r1MLKEM768",
        ("p256", "mlkem768"),
    ),
    hybrid(
        "secp384r1mlkem1024",
        "SecP384r1MLKEM1024",
        ("p384", "mlkem1024"),
    ),
    aead("aes128gcm", "TLS_AES_128_GCM_SHA256", 16384),
    aead("aes128gcm", "TLS_AES_128_GCM_SHA256", 1024),
    aead("aes256gcm", "TLS_AES_256_GCM_SHA384", 16384),
    aead("aes256gcm", "TLS_AES_256_GCM_SHA384", 1024),
    aead("chacha20", "TLS_CHACHA20_POLY1305_SHA256", 16384),
    aead("chacha20", "TLS_CHACHA20_POLY1305_SHA256", 1024),
    primitive("hkdf-sha256", Kind::Hkdf, "HKDF-SHA256"),
    primitive("hkdf-sha384", Kind::Hkdf, "HKDF-SHA384"),
];

/// The families a word may name instead of one primitive: `rsa` is every RSA size.
const FAMILIES: &[(&str, &str)] = &[
    ("rsa", "rsa"),
    ("dsa", "dsa"),
    ("ecdsa", "ecdsa-"),
    ("mldsa", "mldsa"),
    ("mlkem", "mlkem"),
    ("ffdhe", "ffdhe"),
    ("hkdf", "hkdf-"),
];

/// The primitives `words` name (a primitive's name, a family such as `rsa` or `ecdsa`, or a
/// kind such as `signature` or `aead`), in table order; every primitive when there are none.
/// A hybrid brings its parts, whose times it sums. The error names the word no primitive
/// answers to.
pub fn select(words: &[String]) -> Result<Vec<Primitive>, SpeedError> {
    if words.is_empty() {
        return Ok(PRIMITIVES.to_vec());
    }
    let mut chosen = vec![false; PRIMITIVES.len()];
    for word in words {
        let word = word.trim().to_ascii_lowercase();
        let family = FAMILIES
            .iter()
            .find(|(name, _)| *name == word)
            .map(|(_, prefix)| *prefix);
        let mut found = false;
        for (index, primitive) in PRIMITIVES.iter().enumerate() {
            let matches = primitive.name == word
                || primitive.kind.name() == word
                || family.is_some_and(|prefix| {
                    primitive.name.starts_with(prefix)
                        && (prefix != "dsa" || !primitive.name.starts_with("ml"))
                });
            if matches {
                chosen[index] = true;
                found = true;
            }
        }
        if !found {
            return Err(SpeedError::UnknownPrimitive { word });
        }
    }
    // A hybrid's parts are measured with it.
    for index in 0..PRIMITIVES.len() {
        if let (true, Some((classical, kem))) = (chosen[index], PRIMITIVES[index].parts) {
            for (other, primitive) in PRIMITIVES.iter().enumerate() {
                if primitive.name == classical || primitive.name == kem {
                    chosen[other] = true;
                }
            }
        }
    }
    Ok(PRIMITIVES
        .iter()
        .zip(chosen)
        .filter(|(_, chosen)| *chosen)
        .map(|(primitive, _)| *primitive)
        .collect())
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The backends, in the order given.
    pub backends: Vec<Backend>,
    /// Thread counts: each is measured apart (1 and N: how the rate scales).
    pub threads: Vec<u32>,
    /// How long each operation runs on each thread count.
    pub duration: Duration,
    /// The primitives ([`select`]).
    pub primitives: Vec<Primitive>,
}

/// One operation of one primitive on one backend at one thread count: a row of `--json` and
/// of the store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    /// `rustls` or `openssl`.
    pub backend: Backend,
    /// The library that did the work (`aws-lc-rs 1.19.0`, `OpenSSL 4.0.3 …`).
    pub library: String,
    /// The table.
    pub kind: Kind,
    /// The primitive's name ([`Primitive::name`]).
    pub primitive: &'static str,
    /// `sign`, `verify`, `keygen`, `derive`, `encapsulate`, `decapsulate`, `seal`, `open`,
    /// `extract`, `expand`, or a hybrid's `client_share`, `server_share`, `client_finish`.
    pub operation: &'static str,
    /// An AEAD record's plaintext bytes.
    pub bytes: Option<u64>,
    /// Threads running the operation at once.
    pub threads: u32,
    /// Operations completed, summed over the threads (0 for a hybrid's sum).
    pub operations: u64,
    /// Seconds measured on each thread (the longest).
    pub seconds: f64,
    /// Operations per second, all threads together; `None` when not measured.
    pub per_second: Option<f64>,
    /// Wall-clock seconds one operation takes on one thread; `None` when not measured.
    pub seconds_per_operation: Option<f64>,
    /// CPU seconds one operation takes on the thread that runs it (as `openssl speed`
    /// counts user time): the price a handshake's work is priced with, steady when other
    /// work shares the machine; `None` when not measured.
    pub cpu_seconds_per_operation: Option<f64>,
    /// Whether the backend has this primitive: a row of `false` says why in `note`.
    pub supported: bool,
    /// Why a primitive is missing or failed, or how a row was computed.
    pub note: Option<String>,
}

/// A backend's operations of one primitive: each makes, per thread, the closure that does
/// one operation (its keys and buffers made before the clock starts), or says why the
/// backend lacks that operation (aws-lc-rs verifies with a 1024-bit RSA key but does not
/// sign); or why the backend lacks the primitive.
pub(crate) type Prepared = Result<Vec<(&'static str, Result<Factory, SpeedError>)>, SpeedError>;

/// Makes one thread's worker.
pub(crate) type Factory = Arc<dyn Fn() -> Result<Worker, SpeedError> + Send + Sync>;

/// One operation per call.
pub(crate) type Worker = Box<dyn FnMut() -> Result<(), SpeedError>>;

/// Wraps a worker-making closure as a [`Factory`] of an operation the backend has.
pub(crate) fn factory<F>(make: F) -> Result<Factory, SpeedError>
where
    F: Fn() -> Result<Worker, SpeedError> + Send + Sync + 'static,
{
    Ok(Arc::new(make))
}

/// Measures `plan`, handing each row to `each` as it is measured (a big RSA key's generation
/// comes first and takes seconds). `stop` is asked between operations: when it says yes, the
/// rows so far are returned.
pub fn measure(
    plan: &Plan,
    stop: &dyn Fn() -> bool,
    each: &mut dyn FnMut(&Measurement),
) -> Vec<Measurement> {
    let mut rows: Vec<Measurement> = Vec::new();
    'backends: for &backend in &plan.backends {
        let library = backend.library();
        for &threads in &plan.threads {
            for primitive in &plan.primitives {
                if stop() {
                    break 'backends;
                }
                let base = Measurement {
                    backend,
                    library: library.clone(),
                    kind: primitive.kind,
                    primitive: primitive.name,
                    operation: "",
                    bytes: primitive.bytes.map(|bytes| bytes as u64),
                    threads,
                    operations: 0,
                    seconds: 0.0,
                    per_second: None,
                    seconds_per_operation: None,
                    cpu_seconds_per_operation: None,
                    supported: true,
                    note: None,
                };
                let measured: Vec<Measurement> = if primitive.kind == Kind::Hybrid {
                    hybrid_rows(primitive, &base, &rows)
                } else {
                    let prepared = match backend {
                        Backend::Rustls => aws_lc::prepare(primitive),
                        Backend::Openssl => openssl_backend::prepare(primitive),
                    };
                    match prepared {
                        Err(reason) => primitive
                            .kind
                            .operations()
                            .iter()
                            .map(|operation| Measurement {
                                operation,
                                supported: false,
                                note: Some(reason.described()),
                                ..base.clone()
                            })
                            .collect(),
                        Ok(operations) => operations
                            .into_iter()
                            .map(|(operation, make)| {
                                let row = Measurement {
                                    operation,
                                    ..base.clone()
                                };
                                let make = match make {
                                    Ok(make) => make,
                                    Err(reason) => {
                                        return Measurement {
                                            supported: false,
                                            note: Some(reason.described()),
                                            ..row
                                        }
                                    }
                                };
                                let note = match backend {
                                    Backend::Rustls => aws_lc::note(primitive, operation),
                                    Backend::Openssl => None,
                                };
                                match timing::run(&make, threads, plan.duration) {
                                    Ok(counted) => Measurement {
                                        note,
                                        operations: counted.operations,
                                        seconds: counted.seconds,
                                        per_second: Some(counted.per_second),
                                        seconds_per_operation: Some(counted.seconds_per_operation),
                                        cpu_seconds_per_operation: Some(
                                            counted.cpu_seconds_per_operation,
                                        ),
                                        ..row
                                    },
                                    Err(error) => Measurement {
                                        note: Some(format!("failed: {}", error.described())),
                                        ..row
                                    },
                                }
                            })
                            .collect(),
                    }
                };
                for row in measured {
                    each(&row);
                    rows.push(row);
                }
            }
        }
    }
    rows
}

/// A hybrid group's rows from its parts' rows, measured just before on the same backend and
/// thread count: the client's share (both keys made), the server's (its classical key made
/// and the secret derived, and an encapsulation), the client's finish (a derivation and a
/// decapsulation). Times add; so do their inverses' inverses for the rate.
fn hybrid_rows(
    primitive: &Primitive,
    base: &Measurement,
    rows: &[Measurement],
) -> Vec<Measurement> {
    let (classical, kem) = primitive.parts.unwrap_or(("", ""));
    let part = |name: &str, operation: &str| {
        rows.iter().find(|row| {
            row.backend == base.backend
                && row.threads == base.threads
                && row.primitive == name
                && row.operation == operation
        })
    };
    let sums: [(&'static str, [(&str, &str); 3]); 3] = [
        (
            "client_share",
            [(classical, "keygen"), (kem, "keygen"), ("", "")],
        ),
        (
            "server_share",
            [
                (classical, "keygen"),
                (classical, "derive"),
                (kem, "encapsulate"),
            ],
        ),
        (
            "client_finish",
            [(classical, "derive"), (kem, "decapsulate"), ("", "")],
        ),
    ];
    sums.into_iter()
        .map(|(operation, parts)| {
            let parts: Vec<(&str, &str)> = parts
                .into_iter()
                .filter(|(name, _)| !name.is_empty())
                .collect();
            let described: Vec<String> = parts
                .iter()
                .map(|(name, operation)| format!("{name} {operation}"))
                .collect();
            let found: Vec<&Measurement> = parts
                .iter()
                .filter_map(|(name, operation)| part(name, operation))
                .collect();
            let missing = found.len() < parts.len()
                || found.iter().any(|row| row.seconds_per_operation.is_none());
            if missing {
                let why = found
                    .iter()
                    .find_map(|row| row.note.clone())
                    .unwrap_or_else(|| "a part was not measured".into());
                return Measurement {
                    operation,
                    supported: found.iter().all(|row| row.supported),
                    note: Some(format!("sum of {}: {why}", described.join(" + "))),
                    ..base.clone()
                };
            }
            let time: f64 = found
                .iter()
                .filter_map(|row| row.seconds_per_operation)
                .sum();
            let cpu: f64 = found
                .iter()
                .filter_map(|row| row.cpu_seconds_per_operation)
                .sum();
            let inverse: f64 = found
                .iter()
                .filter_map(|row| row.per_second)
                .map(|rate| 1.0 / rate)
                .sum();
            Measurement {
                operation,
                seconds: found.iter().map(|row| row.seconds).fold(0.0, f64::max),
                per_second: Some(1.0 / inverse),
                seconds_per_operation: Some(time),
                cpu_seconds_per_operation: Some(cpu),
                note: Some(format!("sum of {}", described.join(" + "))),
                ..base.clone()
            }
        })
        .collect()
}

/// The message every signature signs: the size of a TLS 1.3 CertificateVerify's content (64
/// spaces, the 33-byte context string, a zero, a SHA-256 transcript hash).
pub(crate) const SIGNED: [u8; 130] = [0x20; 130];

/// The AEAD's additional data: a TLS 1.3 record header.
pub(crate) const RECORD_HEADER: [u8; 5] = [0x17, 0x03, 0x03, 0x40, 0x11];

/// An HKDF-Expand-Label's info for a 32-byte secret (`tls13 c hs traffic` with a SHA-256
/// transcript hash): the size TLS 1.3's schedule expands with.
pub(crate) fn expand_label_info(length: u16, hash_length: usize) -> Vec<u8> {
    let label = b"tls13 c hs traffic";
    let mut info = Vec::with_capacity(4 + label.len() + hash_length);
    info.extend_from_slice(&length.to_be_bytes());
    info.push(label.len() as u8);
    info.extend_from_slice(label);
    info.push(hash_length as u8);
    info.extend(std::iter::repeat_n(0x5a, hash_length));
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(words: &[&str]) -> Vec<&'static str> {
        let words: Vec<String> = words.iter().map(|word| word.to_string()).collect();
        select(&words)
            .unwrap()
            .iter()
            .map(|primitive| primitive.name)
            .collect()
    }

    #[test]
    fn a_family_names_its_sizes_and_a_hybrid_brings_its_parts() {
        assert_eq!(
            names(&["rsa"]),
            ["rsa512", "rsa1024", "rsa2048", "rsa3072", "rsa4096", "rsa7680", "rsa15360"]
        );
        assert_eq!(names(&["dsa"]), ["dsa1024", "dsa2048"]);
        assert_eq!(
            names(&["x25519mlkem768"]),
            ["x25519", "mlkem768", "x25519mlkem768"]
        );
        assert_eq!(names(&["aes128gcm"]), ["aes128gcm", "aes128gcm"]);
        assert_eq!(select(&[]).unwrap().len(), PRIMITIVES.len());
        assert_eq!(
            select(&["rsa2049".to_string()]).unwrap_err().to_string(),
            "rsa2049: no such primitive"
        );
    }

    #[test]
    fn every_primitive_is_measured_or_refused_with_a_reason_on_each_backend() {
        // The cheap ones: big RSA and DSA keys take seconds to make.
        let primitives = select(&[
            "ecdsa-p256".into(),
            "ed25519".into(),
            "ed448".into(),
            "mldsa44".into(),
            "kx".into(),
        ])
        .err()
        .map(|error| error.to_string());
        assert_eq!(primitives.as_deref(), Some("kx: no such primitive"));
        let plan = Plan {
            backends: Backend::ALL.to_vec(),
            threads: vec![1],
            duration: Duration::from_millis(2),
            primitives: select(&[
                "ecdsa-p256".into(),
                "ed25519".into(),
                "ed448".into(),
                "mldsa44".into(),
                "key_exchange".into(),
                "kem".into(),
                "hybrid".into(),
                "aead".into(),
                "hkdf".into(),
            ])
            .unwrap(),
        };
        let rows = measure(&plan, &|| false, &mut |_| {});
        for row in &rows {
            let failed = row
                .note
                .as_deref()
                .is_some_and(|note| note.contains("failed"));
            assert!(!failed, "{row:?}");
            if row.supported {
                assert!(row.per_second.is_some_and(|rate| rate > 0.0), "{row:?}");
            } else {
                assert!(row.note.is_some(), "{row:?}");
            }
        }
        let find = |backend, primitive, operation| {
            rows.iter()
                .find(|row| {
                    row.backend == backend
                        && row.primitive == primitive
                        && row.operation == operation
                })
                .unwrap_or_else(|| panic!("no {primitive} {operation} row"))
        };
        // What each library has: aws-lc-rs no Ed448 and no finite-field groups.
        assert!(!find(Backend::Rustls, "ed448", "sign").supported);
        assert!(!find(Backend::Rustls, "ffdhe2048", "keygen").supported);
        for backend in Backend::ALL {
            for (primitive, operation) in [
                ("ecdsa-p256", "verify"),
                ("ed25519", "sign"),
                ("mldsa44", "verify"),
                ("x25519", "derive"),
                ("mlkem768", "decapsulate"),
                ("x25519mlkem768", "server_share"),
                ("chacha20", "open"),
                ("hkdf-sha384", "expand"),
            ] {
                assert!(
                    find(backend, primitive, operation).supported,
                    "{backend:?} {primitive}"
                );
            }
        }
        assert!(find(Backend::Openssl, "ffdhe3072", "derive").supported);
        assert!(find(Backend::Openssl, "ed448", "verify").supported);
        // Both AEAD sizes, each its own row.
        let sizes: Vec<Option<u64>> = rows
            .iter()
            .filter(|row| {
                row.backend == Backend::Openssl
                    && row.primitive == "aes256gcm"
                    && row.operation == "seal"
            })
            .map(|row| row.bytes)
            .collect();
        assert_eq!(sizes, [Some(16384), Some(1024)]);
    }
}
