//! The store's columns, each named once: the tables below drive the schema, its upgrades,
//! the inserts (by name) and the export, so a new measurement is one line here.

use foldhash::HashMap;
use std::borrow::Cow;
use std::net::SocketAddr;

use rusqlite::types::{ToSql, ToSqlOutput, Value, ValueRef};
use tlslab_core::{ConfigRecord, Event, Phase, Sample};

/// How a sample column is filled from a [`Sample`].
#[derive(Clone, Copy)]
pub enum Fill {
    /// A value computed from the sample (its negotiated names, its byte counts).
    With(for<'a> fn(&'a Sample) -> Cell<'a>),
    /// The time of one event of the sample's timeline, relative to its start.
    Event(Event),
    /// The duration of one phase, from its two events, so exports need no subtraction.
    Phase(Phase),
    /// An address, stored as its text (`127.0.0.1:443`).
    Address(fn(&Sample) -> Option<SocketAddr>),
}

/// Addresses as the text stored for them, each formatted once while it is known: every
/// request of a load run stores its server's address, and formatting it anew for each row
/// cost 0.6% of the client's CPU. At most [`Addresses::KNOWN`] are known at once (a
/// capture's clients are many): past it they are forgotten and learnt again.
#[derive(Default)]
pub struct Addresses(HashMap<SocketAddr, String>);

impl Addresses {
    const KNOWN: usize = 1024;

    /// Learns the addresses `sample` stores (`fills` are the sink's address fills).
    pub fn learn(&mut self, fills: &[fn(&Sample) -> Option<SocketAddr>], sample: &Sample) {
        for fill in fills {
            if let Some(address) = fill(sample) {
                if !self.0.contains_key(&address) {
                    if self.0.len() >= Self::KNOWN {
                        self.0.clear();
                    }
                    self.0.insert(address, address.to_string());
                }
            }
        }
    }
}

/// One field of an exported sample row.
#[derive(Clone, Copy)]
pub struct Field {
    /// The name in exports (and, for sample columns, usually the column's too).
    pub name: &'static str,
    /// Whether the value is the sample's own or its Config's, which decides the join.
    pub source: Source,
    /// Stored as 0 or 1, exported to JSON as `false` or `true`.
    pub boolean: bool,
}

/// Where a field's value is stored.
#[derive(Clone, Copy)]
pub enum Source {
    /// A column of the samples table: its name, SQL type and how a sample fills it.
    Sample {
        column: &'static str,
        sql: &'static str,
        fill: Fill,
    },
    /// A column of the configs table: every sample of a Config shares the value.
    Config { column: &'static str },
}

/// A sample's value for one column, as bound to the insert. Text the sample holds is
/// borrowed (binding copies it into SQLite once): owned copies of a captured sample's dozen
/// names cost an allocation and a free each, per sample, on the insert's path.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    /// SQL NULL: what the sample does not have (no request, no capture of the wire).
    Null,
    /// A count or a time in nanoseconds.
    Integer(i64),
    /// A name or a description, borrowed from the sample when it can be.
    Text(Cow<'a, str>),
}

impl<'a> Cell<'a> {
    fn text(value: Option<&'a str>) -> Cell<'a> {
        value.map_or(Cell::Null, |text| Cell::Text(Cow::Borrowed(text)))
    }

    /// Text made for the column (an address, a list joined).
    fn owned(value: Option<String>) -> Cell<'a> {
        value.map_or(Cell::Null, |text| Cell::Text(Cow::Owned(text)))
    }

    fn integer(value: Option<u64>) -> Cell<'a> {
        value.map_or(Cell::Null, |number| Cell::Integer(number as i64))
    }

    fn flag(value: Option<bool>) -> Cell<'a> {
        value.map_or(Cell::Null, |flag| Cell::Integer(i64::from(flag)))
    }
}

impl ToSql for Cell<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Cell::Null => ValueRef::Null,
            Cell::Integer(number) => ValueRef::Integer(*number),
            Cell::Text(text) => ValueRef::Text(text.as_bytes()),
        }))
    }
}

fn text(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |text| Value::Text(text.to_string()))
}

fn integer(value: Option<u64>) -> Value {
    value.map_or(Value::Null, |number| Value::Integer(number as i64))
}

fn flag(value: Option<bool>) -> Value {
    value.map_or(Value::Null, |flag| Value::Integer(i64::from(flag)))
}

fn observed<'a, T>(
    sample: &'a Sample,
    part: impl FnOnce(&'a tlslab_core::Observed) -> T,
) -> Option<T> {
    sample.observed.as_deref().map(part)
}

/// The server's flights that carried a QUIC response, when the client told them apart.
fn flights(sample: &Sample) -> Option<tlslab_core::ResponseFlights> {
    sample.quic.and_then(|path| path.response_flights)
}

/// A sample column holding an address, as text.
const fn address(name: &'static str, fill: fn(&Sample) -> Option<SocketAddr>) -> Field {
    Field {
        name,
        source: Source::Sample {
            column: name,
            sql: "TEXT",
            fill: Fill::Address(fill),
        },
        boolean: false,
    }
}

const fn sample(
    name: &'static str,
    sql: &'static str,
    fill: for<'a> fn(&'a Sample) -> Cell<'a>,
) -> Field {
    Field {
        name,
        source: Source::Sample {
            column: name,
            sql,
            fill: Fill::With(fill),
        },
        boolean: false,
    }
}

/// A sample column exported to JSON as a boolean.
const fn boolean(field: Field) -> Field {
    Field {
        boolean: true,
        ..field
    }
}

const fn config(name: &'static str, column: &'static str) -> Field {
    Field {
        name,
        source: Source::Config { column },
        boolean: false,
    }
}

/// Every exported field before the timings, in export order.
const FIELDS: &[Field] = &[
    config("config", "label"),
    sample("round", "INTEGER NOT NULL", |s| {
        Cell::integer(Some(u64::from(s.round)))
    }),
    sample("agent", "INTEGER NOT NULL", |s| {
        Cell::integer(Some(u64::from(s.agent)))
    }),
    boolean(sample("warmup", "INTEGER NOT NULL", |s| {
        Cell::flag(Some(s.warmup))
    })),
    sample("outcome", "TEXT NOT NULL", |s| {
        Cell::text(Some(s.outcome.as_str()))
    }),
    sample("error", "TEXT", |s| {
        Cell::text(s.error.map(|class| class.as_str()))
    }),
    sample("error_detail", "TEXT", |s| {
        Cell::text(s.error_detail.as_deref())
    }),
    sample("version", "TEXT", |s| {
        Cell::text(s.negotiated.version.as_deref())
    }),
    sample("suite", "TEXT", |s| {
        Cell::text(s.negotiated.suite.as_deref())
    }),
    sample("group", "TEXT", |s| {
        Cell::text(s.negotiated.group.as_deref())
    }),
    sample("signature_scheme", "TEXT", |s| {
        Cell::text(s.negotiated.signature_scheme.as_deref())
    }),
    sample("alpn", "TEXT", |s| Cell::text(s.negotiated.alpn.as_deref())),
    boolean(sample("resumed", "INTEGER", |s| {
        Cell::flag(s.negotiated.resumed)
    })),
    boolean(sample("insecure", "INTEGER NOT NULL", |s| {
        Cell::flag(Some(s.insecure))
    })),
    sample("bytes_sent", "INTEGER NOT NULL", |s| {
        Cell::integer(Some(s.bytes_sent))
    }),
    sample("bytes_received", "INTEGER NOT NULL", |s| {
        Cell::integer(Some(s.bytes_received))
    }),
    sample("client_hello_bytes", "INTEGER", |s| {
        Cell::integer(s.client_hello_bytes)
    }),
    // Schema 3: flight sizes, early data, the response, QUIC's path statistics.
    sample("server_flight_bytes", "INTEGER", |s| {
        Cell::integer(s.server_flight_bytes)
    }),
    sample("early_data_accepted", "INTEGER", |s| {
        Cell::flag(s.negotiated.early_data)
    }),
    sample("http_status", "INTEGER", |s| {
        Cell::integer(s.response.and_then(|r| r.status).map(u64::from))
    }),
    sample("response_bytes", "INTEGER", |s| {
        Cell::integer(s.response.map(|r| r.body_bytes))
    }),
    sample("quic_rtt_ns", "INTEGER", |s| {
        Cell::integer(s.quic.map(|q| q.rtt_ns))
    }),
    sample("datagrams_sent", "INTEGER", |s| {
        Cell::integer(s.quic.map(|q| q.datagrams_sent))
    }),
    sample("datagrams_received", "INTEGER", |s| {
        Cell::integer(s.quic.map(|q| q.datagrams_received))
    }),
    sample("packets_sent", "INTEGER", |s| {
        Cell::integer(s.quic.map(|q| q.packets_sent))
    }),
    sample("packets_lost", "INTEGER", |s| {
        Cell::integer(s.quic.map(|q| q.packets_lost))
    }),
    // Schema 4: what became of ECH.
    sample("ech", "TEXT", |s| {
        Cell::text(s.negotiated.ech.map(|status| status.as_str()))
    }),
    // The Config's transport, request, session techniques, libraries and ECH mode (`ech`
    // above is what became of ECH in the sample).
    config("transport", "transport"),
    config("http", "http"),
    config("resumption", "resumption"),
    config("early_data_bytes", "early_data_bytes"),
    config("cert_cache", "cert_cache"),
    config("client_backend", "client_backend"),
    config("server_backend", "server_backend"),
    config("ech_mode", "ech"),
    // The network profile is the Config's; every sample of it ran on that link.
    config("rtt_ns", "rtt_ns"),
    config("jitter_ns", "jitter_ns"),
    config("loss", "loss"),
    config("rate_bps", "rate_bps"),
    config("emulator", "emulator"),
    config("capture_point", "capture_point"),
    // Schema 5: where a capture saw the connection (NULL for active runs).
    sample("capture", "TEXT", |s| {
        Cell::text(observed(s, |o| o.source.as_str()))
    }),
    sample("vantage", "TEXT", |s| {
        Cell::text(observed(s, |o| o.vantage.as_str()))
    }),
    address("client", |s| s.client_address),
    // The server tlslab's socket connected to (schema 8; before, only a capture's), or the
    // one a capture saw.
    address("server", Sample::server),
    sample("captured_at_unix_ns", "INTEGER", |s| {
        Cell::integer(observed(s, |o| o.first_packet_unix_ns))
    }),
    sample("network_rtt_ns", "INTEGER", |s| {
        Cell::integer(observed(s, |o| o.network_rtt_ns).flatten())
    }),
    sample("retransmissions", "INTEGER", |s| {
        Cell::integer(observed(s, |o| o.retransmissions))
    }),
    sample("missing_bytes", "INTEGER", |s| {
        Cell::integer(observed(s, |o| o.missing_bytes))
    }),
    // Schema 6: whether the server asked again for a key share, and whether the Config
    // made the client guess wrong.
    boolean(sample("hello_retry", "INTEGER", |s| {
        Cell::flag(s.negotiated.hello_retry)
    })),
    config("hello_retry_asked", "hello_retry"),
    config("trust", "trust"),
    // Schema 7: the open loop's schedule (its latency and delay are timing columns), HTTP
    // keep-alive and the scheme, and which connection carried each request.
    config("arrival_rate", "arrival_rate"),
    config("keep_alive", "keep_alive"),
    config("scheme", "scheme"),
    config("page", "page"),
    sample("connection", "INTEGER", |s| {
        Cell::integer(s.connection.map(|c| c.id))
    }),
    sample("connection_request", "INTEGER", |s| {
        Cell::integer(s.connection.map(|c| u64::from(c.request)))
    }),
    sample("response_wire_bytes", "INTEGER", |s| {
        Cell::integer(s.response_wire_bytes)
    }),
    // What a captured ClientHello offered, comma-separated in the client's order.
    sample("offered_versions", "TEXT", |s| {
        Cell::owned(observed(s, |o| o.offered.versions.join(",")))
    }),
    sample("offered_suites", "TEXT", |s| {
        Cell::owned(observed(s, |o| o.offered.suites.join(",")))
    }),
    sample("offered_groups", "TEXT", |s| {
        Cell::owned(observed(s, |o| o.offered.groups.join(",")))
    }),
    sample("offered_key_shares", "TEXT", |s| {
        Cell::owned(observed(s, |o| {
            o.offered
                .key_shares
                .iter()
                .map(|(group, size)| format!("{group}:{size}"))
                .collect::<Vec<_>>()
                .join(",")
        }))
    }),
    sample("offered_alpn", "TEXT", |s| {
        Cell::owned(observed(s, |o| o.offered.alpn.join(",")))
    }),
    // Schema 8: the address family each connection used (a host with both answers either;
    // with `--dns per-attempt` each attempt's lookup chooses). Its lookup is the `dns`
    // phase below, ended by the `resolved` event.
    sample("address_family", "TEXT", |s| {
        Cell::text(
            s.server()
                .or(s.client_address)
                .map(tlslab_core::resolution::family),
        )
    }),
    // Schema 9: mutual TLS. Whether the server asked for a client certificate and whether
    // the client sent one (NULL when the attempt did not get that far, or a capture could
    // not see it), and the Config's `--mtls` and the lab client certificate's profile.
    sample("client_certificate", "TEXT", |s| {
        Cell::text(
            s.negotiated
                .client_certificate
                .map(|status| status.as_str()),
        )
    }),
    config("mtls", "mtls"),
    config("client_cert_profile", "client_cert_profile"),
    // Schema 11: what the client's certificate added to its flight (its signing time is the
    // `client_signing` phase, between `client_sign_start` and `client_sign_end`).
    sample("client_certificate_bytes", "INTEGER", |s| {
        Cell::integer(s.client_certificate_bytes)
    }),
    // Schema 12: the response's `Server` field (ab's "Server Software"), on the request that
    // opened its connection.
    sample("server_software", "TEXT", |s| {
        Cell::text(s.server_software.as_deref())
    }),
    // Schema 14: the server's flights that carried a QUIC response, from its first byte to its
    // last (`QuicPath::response_flights`): round trips, then datagrams and bytes of the
    // first flight and of the later ones.
    sample("response_round_trips", "INTEGER", |s| {
        Cell::integer(flights(s).map(|f| f.round_trips))
    }),
    sample("response_first_flight_datagrams", "INTEGER", |s| {
        Cell::integer(flights(s).map(|f| f.first_datagrams))
    }),
    sample("response_first_flight_bytes", "INTEGER", |s| {
        Cell::integer(flights(s).map(|f| f.first_bytes))
    }),
    sample("response_later_datagrams", "INTEGER", |s| {
        Cell::integer(flights(s).map(|f| f.later_datagrams))
    }),
    sample("response_later_bytes", "INTEGER", |s| {
        Cell::integer(flights(s).map(|f| f.later_bytes))
    }),
    // Schema 15: which clock timed the wire events (the kernel's socket timestamps, or the
    // user-space clock where the kernel had none); NULL for a capture and for requests on a
    // kept connection, which shake no hands.
    sample("wire_clock", "TEXT", |s| {
        Cell::text(s.wire_clock.map(tlslab_core::WireClock::as_str))
    }),
    Field {
        name: "started_at",
        source: Source::Sample {
            column: "started_at_ns",
            sql: "INTEGER NOT NULL",
            fill: Fill::With(|s| Cell::integer(Some(s.started_at))),
        },
        boolean: false,
    },
];

/// Every exported field, in export order: the fields above, then every event and every
/// phase in nanoseconds under its name in the phase model (docs/architecture.md, "Phases").
pub fn fields() -> impl Iterator<Item = Field> {
    let timing = |name: &'static str, fill: Fill| Field {
        name,
        source: Source::Sample {
            column: name,
            sql: "INTEGER",
            fill,
        },
        boolean: false,
    };
    FIELDS
        .iter()
        .copied()
        .chain(
            Event::ALL
                .iter()
                .map(move |&event| timing(event.name(), Fill::Event(event))),
        )
        .chain(
            Phase::ALL
                .iter()
                .map(move |&phase| timing(phase.name(), Fill::Phase(phase))),
        )
}

/// The samples table's measured columns: name, SQL type and how a sample fills each.
pub fn sample_columns() -> impl Iterator<Item = (&'static str, &'static str, Fill)> {
    fields().filter_map(|field| match field.source {
        Source::Sample { column, sql, fill } => Some((column, sql, fill)),
        Source::Config { .. } => None,
    })
}

/// The measured columns a request on a kept connection fills (and the `error` of a failed
/// one), in the order the samples table stores them: first, before every other column.
/// SQLite's records store a column's type in a header that lists every column up to the
/// last one a row fills (the bundled SQLite omits trailing NULLs, `SQLITE_ENABLE_NULL_TRIM`
/// in `.cargo/config.toml`), and a read decodes that header up to the column it wants. A
/// load run's request, stored with these first, has a header of 25 columns instead of 88:
/// shorter rows to write, and fewer header entries to decode for every value read back.
const STORED_FIRST: &[&str] = &[
    "round",
    "agent",
    "warmup",
    "outcome",
    "error",
    "insecure",
    "bytes_sent",
    "bytes_received",
    "started_at_ns",
    "http_status",
    "response_bytes",
    "response_wire_bytes",
    "connection",
    "connection_request",
    "server",
    "address_family",
    "start",
    "first_byte",
    "response_done",
    "ttfb",
    "total",
    "schedule_delay",
    "latency",
];

/// [`sample_columns`] in the order the samples table stores them: [`STORED_FIRST`], then
/// the others in export order. Readers and the writer name every column, so the stored
/// order is free (stores made by earlier builds have the export order, and read the same).
pub fn stored_sample_columns() -> impl Iterator<Item = (&'static str, &'static str, Fill)> {
    let mut columns: Vec<_> = sample_columns().collect();
    // A stable sort: the columns not named in STORED_FIRST keep their export order.
    columns.sort_by_key(|(name, _, _)| {
        STORED_FIRST
            .iter()
            .position(|first| first == name)
            .unwrap_or(STORED_FIRST.len())
    });
    columns.into_iter()
}

/// The names of the timing columns (every event, then every phase).
pub fn timing_columns() -> impl Iterator<Item = &'static str> {
    Event::ALL
        .iter()
        .map(|event| event.name())
        .chain(Phase::ALL.iter().map(|phase| phase.name()))
}

impl Fill {
    /// The cell `sample` fills; an address's text borrowed from `addresses` when known there.
    pub fn value<'a>(self, sample: &'a Sample, addresses: &'a Addresses) -> Cell<'a> {
        match self {
            Fill::With(fill) => fill(sample),
            Fill::Event(event) => Cell::integer(sample.timeline.get(event)),
            Fill::Phase(phase) => Cell::integer(sample.timeline.phase(phase)),
            Fill::Address(fill) => match fill(sample) {
                None => Cell::Null,
                Some(address) => match addresses.0.get(&address) {
                    Some(text) => Cell::Text(Cow::Borrowed(text)),
                    None => Cell::owned(Some(address.to_string())),
                },
            },
        }
    }
}

/// A configs column: name, SQL type, and how a [`ConfigRecord`] fills it (`None`: filled
/// later).
pub type ConfigColumn = (
    &'static str,
    &'static str,
    Option<fn(&ConfigRecord) -> Value>,
);

fn network<T>(config: &ConfigRecord, part: impl FnOnce(&tlslab_core::Network) -> T) -> Option<T> {
    config.network.as_ref().map(part)
}

/// The configs table's columns after `id` and `run_id`, with the schema version in
/// comments where they were added. Columns that a capture cannot fill are nullable in new
/// stores (older stores never hold a capture's Configs).
pub const CONFIG_COLUMNS: &[ConfigColumn] = &[
    ("label", "TEXT NOT NULL", Some(|c| text(Some(&c.label)))),
    ("version", "TEXT NOT NULL", Some(|c| text(Some(&c.version)))),
    ("suite", "TEXT NOT NULL", Some(|c| text(Some(&c.suite)))),
    ("group", "TEXT NOT NULL", Some(|c| text(Some(&c.group)))),
    ("cert", "TEXT", Some(|c| text(c.cert.as_deref()))),
    (
        "chain",
        "INTEGER",
        Some(|c| integer(c.chain.map(u64::from))),
    ),
    ("target", "TEXT", Some(|c| text(c.target.as_deref()))),
    ("sni", "TEXT", Some(|c| text(c.sni.as_deref()))),
    ("address", "TEXT NOT NULL", Some(|c| text(Some(&c.address)))),
    (
        "concurrency",
        "INTEGER",
        Some(|c| integer(c.concurrency.map(u64::from))),
    ),
    (
        "resume",
        "INTEGER NOT NULL",
        Some(|c| flag(Some(c.resumption != "off"))),
    ),
    (
        "insecure",
        "INTEGER NOT NULL",
        Some(|c| flag(Some(c.insecure))),
    ),
    (
        "description",
        "TEXT NOT NULL",
        Some(|c| text(Some(&c.description))),
    ),
    // Set when `--until-ci` stopped the Config early.
    ("stopped_round", "INTEGER", None),
    ("stopped_samples", "INTEGER", None),
    ("stopped_half_width", "REAL", None),
    // Schema 2: the emulated network, all NULL on loopback or a real network.
    (
        "rtt_ns",
        "INTEGER",
        Some(|c| integer(network(c, |n| n.rtt.as_nanos() as u64))),
    ),
    (
        "jitter_ns",
        "INTEGER",
        Some(|c| integer(network(c, |n| n.jitter.as_nanos() as u64))),
    ),
    (
        "loss",
        "REAL",
        Some(|c| network(c, |n| Value::Real(n.loss.0)).unwrap_or(Value::Null)),
    ),
    (
        "rate_bps",
        "INTEGER",
        Some(|c| integer(network(c, |n| n.rate.map(|rate| rate.0)).flatten())),
    ),
    ("emulator", "TEXT", Some(|c| text(c.emulator.as_deref()))),
    // Schema 3: transport, request and session techniques, with the values every older
    // Config had as defaults. `resumption` is the mode; `resume` says whether it is not off.
    (
        "transport",
        "TEXT NOT NULL DEFAULT 'tcp'",
        Some(|c| text(Some(&c.transport))),
    ),
    (
        "http",
        "TEXT NOT NULL DEFAULT 'none'",
        Some(|c| text(Some(&c.http))),
    ),
    (
        "resumption",
        "TEXT NOT NULL DEFAULT 'off'",
        Some(|c| text(Some(&c.resumption))),
    ),
    (
        "early_data_bytes",
        "INTEGER NOT NULL DEFAULT 0",
        Some(|c| integer(Some(c.early_data_bytes))),
    ),
    (
        "cert_cache",
        "INTEGER NOT NULL DEFAULT 0",
        Some(|c| flag(Some(c.cert_cache))),
    ),
    ("path", "TEXT", Some(|c| text(c.path.as_deref()))),
    // Schema 4: the TLS libraries (no server library for a target; neither for a capture)
    // and the ECH mode.
    (
        "client_backend",
        "TEXT DEFAULT 'rustls'",
        Some(|c| text(c.client_backend.as_deref())),
    ),
    (
        "server_backend",
        "TEXT",
        Some(|c| text(c.server_backend.as_deref())),
    ),
    (
        "ech",
        "TEXT NOT NULL DEFAULT 'off'",
        Some(|c| text(Some(&c.ech))),
    ),
    // Schema 6.
    (
        "hello_retry",
        "INTEGER NOT NULL DEFAULT 0",
        Some(|c| flag(Some(c.hello_retry))),
    ),
    ("trust", "TEXT", Some(|c| text(c.trust.as_deref()))),
    // Schema 7: the open loop's schedule, attempts per second (NULL: closed loop), HTTP
    // keep-alive, and plain HTTP beside HTTPS.
    (
        "arrival_rate",
        "REAL",
        Some(|c| c.arrival_rate.map_or(Value::Null, Value::Real)),
    ),
    (
        "keep_alive",
        "INTEGER NOT NULL DEFAULT 0",
        Some(|c| flag(Some(c.keep_alive))),
    ),
    (
        "scheme",
        "TEXT NOT NULL DEFAULT 'https'",
        Some(|c| text(Some(&c.scheme))),
    ),
    ("page", "TEXT", Some(|c| text(c.page.as_deref()))),
    // Schema 9: the lab server required a client certificate (`--mtls on`), and the profile
    // of the lab client certificate presented.
    (
        "mtls",
        "INTEGER NOT NULL DEFAULT 0",
        Some(|c| flag(Some(c.mtls))),
    ),
    (
        "client_cert_profile",
        "TEXT",
        Some(|c| text(c.client_cert_profile.as_deref())),
    ),
    // Schema 16: where a capture saw the Config's handshakes, when several capture points
    // write one run (NULL for an active run's Configs).
    (
        "capture_point",
        "TEXT",
        Some(|c| text(c.capture_point.as_deref())),
    ),
];

/// `"name"`, quoted: some column names (`group`) are SQL keywords.
pub fn quoted(name: &str) -> String {
    format!("\"{name}\"")
}

/// The columns of a table as SQL definitions, each on its own line.
pub fn definitions<'a, S: AsRef<str>>(columns: impl Iterator<Item = (&'a str, S)>) -> String {
    columns
        .map(|(name, sql)| format!(",\n    {} {}", quoted(name), sql.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_stored_order_puts_a_requests_columns_first_and_keeps_every_column() {
        let stored: Vec<&str> = stored_sample_columns().map(|(name, _, _)| name).collect();
        assert_eq!(&stored[..STORED_FIRST.len()], STORED_FIRST);
        let mut exported: Vec<&str> = sample_columns().map(|(name, _, _)| name).collect();
        let rest: Vec<&str> = exported
            .iter()
            .copied()
            .filter(|name| !STORED_FIRST.contains(name))
            .collect();
        assert_eq!(&stored[STORED_FIRST.len()..], rest.as_slice());
        let mut sorted = stored.clone();
        sorted.sort_unstable();
        exported.sort_unstable();
        assert_eq!(sorted, exported);
    }

    #[test]
    fn every_field_and_column_is_named_once() {
        let names: Vec<&str> = fields().map(|field| field.name).collect();
        assert_eq!(names.len(), names.iter().collect::<HashSet<_>>().len());
        let columns: Vec<&str> = sample_columns().map(|(column, _, _)| column).collect();
        assert_eq!(columns.len(), columns.iter().collect::<HashSet<_>>().len());
        let configs: Vec<&str> = CONFIG_COLUMNS.iter().map(|(name, _, _)| *name).collect();
        assert_eq!(configs.len(), configs.iter().collect::<HashSet<_>>().len());
        // Every config field of the export is a configs column.
        for field in fields() {
            if let Source::Config { column } = field.source {
                assert!(configs.contains(&column), "{column}");
            }
        }
        assert_eq!(names[0], "config");
        assert_eq!(names.last(), Some(&"latency"));
    }
}
