//! Passive analysis: the TLS handshakes in packet captures, as the same [`Sample`]s an active
//! run records, streamed into any [`Sink`] (the results store), so `compare`, `report` and
//! `export` work on captures unchanged.
//!
//! Layers, bottom up: [`packets`] reads pcap and pcapng files (compressed or not) into TCP
//! and UDP segments; `stream` puts each TCP direction back in order, every byte keeping the
//! time of the packet that carried it; `tls` frames records and handshake messages and turns
//! them into the events of the phase model; `flows` keeps the connections in progress and
//! hands each on when its handshake is over; `samples` makes the Sample and the key of the
//! Config it belongs to (what was negotiated); `filter` is `--filter`. Depends on
//! `tlslab-core` and libpcap (for its BPF compiler) alone: no TLS library, no store.
//!
//! ```no_run
//! use tlslab_capture::Analyser;
//! # fn example(sink: &mut dyn tlslab_core::Sink) -> Result<(), Box<dyn std::error::Error>> {
//! // The caller has begun the run on the sink (RunInfo with Source::Pcap).
//! let mut analyser = Analyser::new(sink);
//! analyser.read_file("handshakes.pcapng".as_ref())?;
//! let report = analyser.finish()?;
//! println!(
//!     "{} handshakes, {} failed, {} incomplete",
//!     report.connections, report.errors, report.incomplete
//! );
//! # Ok(()) }
//! ```
//!
//! [`Sample`]: tlslab_core::Sample
//! [`Sink`]: tlslab_core::Sink

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod crosscheck;
pub mod filter;
mod flows;
pub mod keys;
pub mod live;
pub mod packets;
mod quic;
mod samples;
mod stream;
mod timed;
mod tls;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tlslab_core::{ConfigRecord, Record, Sink, SinkError};

pub use flows::FlowCounts;
pub use packets::{CaptureError, SkipReason, Summary};
use samples::ConfigKey;

/// What reading the captures found, for the summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Each capture read, with what reading it saw.
    pub files: Vec<(String, Summary)>,
    /// How many TCP and UDP flows were met, and how many were not TLS.
    pub flows: FlowCounts,
    /// TLS handshakes stored (any outcome), how many of them failed, and how many the
    /// captures show only the start of.
    pub connections: u64,
    /// See `connections`: those that failed.
    pub errors: u64,
    /// See `connections`: those stored as incomplete (the capture ended, or lacks their
    /// later records), neither succeeded nor failed.
    pub incomplete: u64,
    /// Configs: the distinct settings the handshakes negotiated.
    pub configs: usize,
    /// Capture time from the first packet to the last, in nanoseconds.
    pub span_ns: u64,
}

/// Reads captures into a sink: connections become Samples, negotiated combinations
/// Configs (announced with [`Record::Config`] before their first Sample).
pub struct Analyser<'a> {
    sink: &'a mut dyn Sink,
    flows: flows::Flows,
    quic: quic::QuicFlows,
    /// Looked up once per connection: foldhash, seeded per process like the flow table,
    /// costs less than SipHash on these string keys.
    configs: HashMap<ConfigKey, usize, foldhash::fast::RandomState>,
    /// The first packet's time: Samples' `started_at` counts from it.
    run_start: Option<u64>,
    sources: Vec<String>,
    report: Report,
    /// The sink's first refusal: nothing more is written after it.
    failure: Option<SinkError>,
    /// Set (by a signal) to stop: the rest of the input is skipped.
    stop: Option<Arc<AtomicBool>>,
    /// `--filter`: the packets of files it leaves out are not analysed.
    filter: Option<filter::Filter>,
    /// Connections a segment completed, on their way to the sink (empty between segments).
    done: Vec<flows::Connection>,
    /// Where the packets were captured, when the user knows it: replaces what the gaps say.
    vantage: Option<tlslab_core::Vantage>,
    /// The capture point's name, carried by every Config (several capture points write one
    /// run).
    capture_point: Option<String>,
    /// The number of the first Config: a writer that joined a run numbers its Configs from
    /// its own block, apart from the other writers'.
    first_config: usize,
}

impl<'a> Analyser<'a> {
    /// An analyser that hands every Sample and Config it finds to `sink`.
    pub fn new(sink: &'a mut dyn Sink) -> Analyser<'a> {
        Analyser {
            sink,
            flows: flows::Flows::default(),
            quic: quic::QuicFlows::default(),
            configs: HashMap::default(),
            run_start: None,
            sources: Vec::new(),
            report: Report::default(),
            failure: None,
            stop: None,
            filter: None,
            done: Vec::new(),
            vantage: None,
            capture_point: None,
            first_config: 0,
        }
    }

    /// Names the capture point: each Config says it, and its label ends with `@name`.
    pub fn at_capture_point(&mut self, name: &str) {
        self.capture_point = Some(name.to_string());
    }

    /// Numbers the Configs from `first` (a writer joining a run: its block of numbers).
    pub fn numbering_configs_from(&mut self, first: usize) {
        self.first_config = first;
    }

    /// Counts the Samples' times from `unix_ns` (the run's start, nanoseconds since the Unix
    /// epoch) rather than from the first packet: so the times of capture points writing one
    /// run count from one moment.
    pub fn starting_at(&mut self, unix_ns: u64) {
        self.run_start = Some(unix_ns);
    }

    /// Takes every connection as seen at `vantage` (`--vantage`) rather than reading it from
    /// the gaps of its handshake, which cannot tell when the peers' own work is as long as
    /// the round trip (QUIC on a fast network).
    pub fn known_vantage(&mut self, vantage: tlslab_core::Vantage) {
        self.vantage = Some(vantage);
    }

    /// Decrypts the TLS 1.3 handshakes whose secrets `keys` holds.
    pub fn use_keys(&mut self, keys: keys::KeyLog) {
        let keys = Arc::new(keys);
        self.quic.keys = Some(keys.clone());
        self.flows.keys = Some(keys);
    }

    /// Adds the secrets of a key log a capture embeds to those in use: the handshakes
    /// that begin after it are decrypted as if `--keylog` had given them.
    fn embedded_keys(&mut self, text: &[u8]) {
        let embedded = keys::KeyLog::parse(&String::from_utf8_lossy(text));
        if embedded.is_empty() {
            return;
        }
        // Handshakes in progress keep the log they began with; a capture writer puts its
        // secrets before the packets they open (editcap puts them at the file's start).
        let keys = match self.flows.keys.as_deref() {
            Some(known) => {
                let mut keys = known.clone();
                keys.merge(embedded);
                keys
            }
            None => embedded,
        };
        self.use_keys(keys);
    }

    /// Reads only the packets of files that `filter` passes (a live capture filters in the
    /// kernel instead: [`live::Live::open`]).
    pub fn use_filter(&mut self, filter: filter::Filter) {
        self.filter = Some(filter);
    }

    /// Stops analysing once `flag` is set: what was read is written, the rest skipped.
    pub fn stop_when(&mut self, flag: Arc<AtomicBool>) {
        self.stop = Some(flag);
    }

    /// Whether the sink refused a record: nothing more will be written.
    pub fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// Whether the stop flag was set.
    pub fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }

    /// Reads one capture file; connections that span files (a rotated capture) continue.
    pub fn read_file(&mut self, path: &Path) -> Result<(), CaptureError> {
        let name = path.display().to_string();
        let source = self.sources.len();
        self.sources.push(name.clone());
        let mut filter = self.filter.take();
        // Key logs the file embeds wait here for the next segment, which the analyser (and
        // so its keys) is borrowed for.
        let embedded: std::cell::RefCell<Vec<Vec<u8>>> = std::cell::RefCell::default();
        let summary = packets::read_with_secrets(
            path,
            filter.as_mut(),
            &mut |text| embedded.borrow_mut().push(text.to_vec()),
            |segment| {
                if !embedded.borrow().is_empty() {
                    for text in embedded.take() {
                        self.embedded_keys(&text);
                    }
                }
                self.segment(source, segment)
            },
        );
        self.filter = filter;
        let summary = summary?;
        self.report.files.push((name, summary));
        Ok(())
    }

    /// One decoded segment from `source` (an index into the files read so far, or a live
    /// interface the caller named with [`add_source`](Self::add_source)).
    pub fn segment(&mut self, source: usize, segment: &packets::Segment<'_>) {
        if self.failure.is_some() || self.stopped() {
            return;
        }
        let start = *self.run_start.get_or_insert(segment.timestamp_ns);
        self.report.span_ns = self
            .report
            .span_ns
            .max(segment.timestamp_ns.saturating_sub(start));
        // The vector is kept between segments: a connection is over a kilobyte, and a new
        // vector for each handed-on connection cost an allocation of several.
        let mut done = std::mem::take(&mut self.done);
        match &segment.transport {
            packets::Transport::Tcp(tcp) => self.flows.segment(
                source,
                segment.timestamp_ns,
                segment.source,
                segment.destination,
                tcp,
                &mut |connection| done.push(connection),
            ),
            packets::Transport::Udp { payload } => self.quic.datagram(
                source,
                segment.timestamp_ns,
                segment.source,
                segment.destination,
                payload,
                &mut |connection| done.push(connection),
            ),
        }
        for connection in done.drain(..) {
            self.connection(&connection);
        }
        self.done = done;
    }

    /// For a live capture, now and then: connections silent for a minute are given up, and
    /// the sink may commit what it holds.
    pub fn idle(&mut self, now_ns: u64) {
        if self.failure.is_some() {
            return;
        }
        let mut done = Vec::new();
        self.flows
            .sweep(now_ns, &mut |connection| done.push(connection));
        self.quic
            .sweep(now_ns, &mut |connection| done.push(connection));
        for connection in done {
            self.connection(&connection);
        }
        if let Err(error) = self.sink.flush() {
            self.failure = Some(error);
        }
    }

    /// Names a live source (an interface); returns its index for [`segment`](Self::segment).
    pub fn add_source(&mut self, name: &str) -> usize {
        self.sources.push(name.to_string());
        self.sources.len() - 1
    }

    fn connection(&mut self, connection: &flows::Connection) {
        let source = self
            .sources
            .get(connection.source)
            .map_or("", String::as_str);
        let (key, mut sample) = samples::sample(
            connection,
            self.run_start.unwrap_or_default(),
            source,
            self.vantage,
        );
        let next = self.first_config + self.configs.len();
        let index = match self.configs.get(&key) {
            Some(index) => *index,
            None => {
                let mut record = config_record(next, &key, connection);
                if let Some(point) = &self.capture_point {
                    record.label = format!("{} @{point}", record.label);
                    record.capture_point = Some(point.clone());
                }
                if let Err(error) = self.sink.record(Record::Config(Box::new(record))) {
                    self.failure = Some(error);
                    return;
                }
                self.configs.insert(key, next);
                next
            }
        };
        sample.config = index;
        let outcome = sample.outcome;
        if let Err(error) = self.sink.record(Record::Sample(Box::new(sample))) {
            self.failure = Some(error);
            return;
        }
        self.report.connections += 1;
        self.report.errors += u64::from(outcome == tlslab_core::Outcome::Error);
        self.report.incomplete += u64::from(outcome == tlslab_core::Outcome::Incomplete);
    }

    /// The captures ended: handshakes still open are written (those in progress as
    /// incomplete), connections with nothing to store counted.
    /// Fails with the sink's first refusal.
    pub fn finish(mut self) -> Result<Report, SinkError> {
        let mut done = Vec::new();
        self.flows.finish(&mut |connection| done.push(connection));
        self.quic.finish(&mut |connection| done.push(connection));
        for connection in done {
            self.connection(&connection);
        }
        if let Some(failure) = self.failure {
            return Err(failure);
        }
        self.report.flows = self.flows.counts;
        self.report.flows.quic = self.quic.connections;
        self.report.flows.unfinished += self.quic.unfinished;
        self.report.configs = self.configs.len();
        Ok(self.report)
    }
}

/// Keeps every Sample in memory: for a capture read to be compared, not stored.
#[derive(Debug, Default)]
pub struct Collected {
    /// Every Sample, in the order the handshakes were read.
    pub samples: Vec<tlslab_core::Sample>,
}

impl Sink for Collected {
    fn begin(&mut self, _: &tlslab_core::RunInfo) -> Result<(), SinkError> {
        Ok(())
    }
    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        if let Record::Sample(sample) = record {
            self.samples.push(*sample);
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    fn finish(&mut self, _: &tlslab_core::RunEnd) -> Result<(), SinkError> {
        Ok(())
    }
}

/// The Samples of the capture at `path`, in memory, seen at `vantage` when that is known.
pub fn samples_of(
    path: &Path,
    vantage: Option<tlslab_core::Vantage>,
) -> Result<Vec<tlslab_core::Sample>, CaptureError> {
    let mut collected = Collected::default();
    let mut analyser = Analyser::new(&mut collected);
    if let Some(vantage) = vantage {
        analyser.known_vantage(vantage);
    }
    analyser.read_file(path)?;
    // Collecting never fails.
    let _ = analyser.finish();
    Ok(collected.samples)
}

/// The Config of a negotiated combination, as the store keeps it.
fn config_record(index: usize, key: &ConfigKey, connection: &flows::Connection) -> ConfigRecord {
    let none = || "none".to_string();
    ConfigRecord {
        index,
        label: key.label(),
        version: key.version.clone().unwrap_or_else(none),
        suite: key.suite.clone().unwrap_or_else(none),
        group: key.group.clone().unwrap_or_else(none),
        cert: None,
        chain: None,
        target: None,
        sni: key.server_name.clone(),
        address: connection.server.to_string(),
        concurrency: None,
        arrival_rate: None,
        resumption: key.resumption.to_string(),
        early_data_bytes: 0,
        cert_cache: false,
        keep_alive: false,
        scheme: "https".to_string(),
        page: None,
        hello_retry: key.hello_retry,
        mtls: false,
        client_cert_profile: None,
        trust: None,
        insecure: false,
        transport: key.transport.to_string(),
        http: "none".to_string(),
        path: None,
        client_backend: None,
        server_backend: None,
        ech: if key.ech { "on" } else { "off" }.to_string(),
        network: None,
        emulator: None,
        capture_point: None,
        description: serde_json::json!({
            "source": "capture",
            "version": key.version,
            "suite": key.suite,
            "group": key.group,
            "signature_scheme": key.signature_scheme,
            "server_name": key.server_name,
            "resumption": key.resumption,
            "ech": key.ech,
            "hello_retry": key.hello_retry,
            "unanswered": key.unanswered,
        })
        .to_string(),
    }
}
