//! tlslab-telemetry: what a long-running producer of Samples (the capture agent today, a
//! shared agent later) tells monitoring while it writes its results store.
//!
//! [`Telemetry`] wraps any [`Sink`]: every record goes on to the wrapped sink unchanged, and
//! each Sample the sink took also counts in the Prometheus [`Metrics`] (served by
//! [`metrics::serve`]) and becomes one InfluxDB point ([`influx::Writer`]). Monitoring
//! therefore sees exactly what the store holds, and neither can slow the producer: metrics
//! are counters in memory, points go to a writer thread through a bounded queue.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tlslab_telemetry::{influx, metrics, Metrics, Telemetry};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = tlslab_store::Store::create(std::path::Path::new("agent.db"))?.into_sink();
//! let counts = Arc::new(Metrics::new());
//! let server = metrics::serve("127.0.0.1:9464".parse()?, counts.clone())?;
//! let points = influx::Writer::connect("http://127.0.0.1:8086/write?db=tlslab")?;
//! let mut sink = Telemetry::new(store).with_metrics(counts).with_influx(points);
//! // ... a producer writes records into `sink` ...
//! let (store, influx) = sink.close();
//! println!("{} points written", influx.map_or(0, |report| report.written));
//! # drop((store, server));
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod influx;
pub mod metrics;

use tlslab_core::{Record, RunEnd, RunInfo, Sink, SinkError};

pub use influx::InfluxReport;
pub use metrics::Metrics;

/// Why telemetry could not start: an address that cannot be bound, an InfluxDB that cannot
/// be reached. Each says what to change.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct TelemetryError {
    /// What could not start, naming the option concerned.
    pub message: String,
    /// What to change.
    pub hint: String,
    /// The option's value is wrong (not the environment it points at).
    pub usage: bool,
    /// The error underneath (the socket's, the URL parser's, InfluxDB's answer), kept whole
    /// so the command line can show the chain of causes.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl TelemetryError {
    fn new(message: impl Into<String>, hint: impl Into<String>) -> TelemetryError {
        TelemetryError {
            message: message.into(),
            hint: hint.into(),
            usage: false,
            source: None,
        }
    }

    /// The same error, with `source` as the cause underneath it.
    fn caused_by(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> TelemetryError {
        self.source = Some(source.into());
        self
    }

    fn usage(message: impl Into<String>, hint: impl Into<String>) -> TelemetryError {
        TelemetryError {
            usage: true,
            ..TelemetryError::new(message, hint)
        }
    }
}

/// A sink that also feeds metrics and InfluxDB with every Sample the wrapped sink took.
pub struct Telemetry<S> {
    inner: S,
    metrics: Option<std::sync::Arc<Metrics>>,
    influx: Option<influx::Writer>,
    /// The run's start: a Sample without capture times is placed from it.
    started_at_unix_ns: u64,
}

impl<S: Sink> Telemetry<S> {
    /// Wraps `inner`, which takes every record first; telemetry only watches.
    pub fn new(inner: S) -> Telemetry<S> {
        Telemetry {
            inner,
            metrics: None,
            influx: None,
            started_at_unix_ns: 0,
        }
    }

    /// Also counts every Sample in `metrics`, for Prometheus to scrape.
    pub fn with_metrics(mut self, metrics: std::sync::Arc<Metrics>) -> Telemetry<S> {
        self.metrics = Some(metrics);
        self
    }

    /// Also writes every Sample to InfluxDB through `writer`.
    pub fn with_influx(mut self, writer: influx::Writer) -> Telemetry<S> {
        self.influx = Some(writer);
        self
    }

    /// The wrapped sink, and what InfluxDB took once the last points were sent.
    pub fn close(self) -> (S, Option<InfluxReport>) {
        (self.inner, self.influx.map(influx::Writer::close))
    }
}

impl<S: Sink> Sink for Telemetry<S> {
    fn begin(&mut self, info: &RunInfo) -> Result<(), SinkError> {
        self.started_at_unix_ns = info.started_at_unix_ns;
        self.inner.begin(info)
    }

    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        // Only what the store took is counted: the point is made before the record moves.
        let point = match (&record, &self.influx) {
            (Record::Sample(sample), Some(_)) if !sample.warmup => {
                Some(influx::line(sample, self.started_at_unix_ns))
            }
            _ => None,
        };
        let observed = match (&record, &self.metrics) {
            (Record::Sample(sample), Some(_)) if !sample.warmup => {
                Some(metrics::Observation::of(sample))
            }
            _ => None,
        };
        self.inner.record(record)?;
        if let (Some(metrics), Some(observed)) = (&self.metrics, observed) {
            metrics.observe(observed);
        }
        if let (Some(writer), Some(point)) = (&self.influx, point) {
            writer.send(point);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        if let Some(writer) = &self.influx {
            writer.flush();
        }
        self.inner.flush()
    }

    fn finish(&mut self, end: &RunEnd) -> Result<(), SinkError> {
        self.inner.finish(end)
    }
}
