//! Prometheus metrics of the handshakes seen, and the HTTP endpoint that serves them.
//!
//! `tlslab_handshakes_total{version, suite, group, outcome}` counts handshakes;
//! `tlslab_phase_seconds{phase}` is a histogram of every phase a handshake showed (the
//! phase model's names, as in the store). Metric names follow Prometheus' conventions (base
//! units, `_total` for counters), and the text is written by `prometheus-client`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tlslab_core::{Phase, Sample};

use crate::TelemetryError;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandshakeLabels {
    version: String,
    suite: String,
    group: String,
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: &'static str,
}

/// 50 µs to about 6.5 s, doubling: a loopback handshake's parts to a lossy
/// intercontinental one.
fn phase_histogram() -> Histogram {
    Histogram::new(exponential_buckets(50e-6, 2.0, 18))
}

/// The counters and histograms, updated by [`crate::Telemetry`] and read by the endpoint.
pub struct Metrics {
    registry: Registry,
    handshakes: Family<HandshakeLabels, Counter>,
    phases: Family<PhaseLabels, Histogram, fn() -> Histogram>,
}

/// What one Sample adds to the metrics, taken before the Sample moves into the store.
pub struct Observation {
    labels: HandshakeLabels,
    phases: Vec<(&'static str, f64)>,
}

impl Observation {
    /// What the metrics keep of `sample`: its labels and phase times, without the rest.
    pub fn of(sample: &Sample) -> Observation {
        let negotiated = &sample.negotiated;
        let text = |value: &Option<String>| value.clone().unwrap_or_else(|| "none".into());
        Observation {
            labels: HandshakeLabels {
                version: text(&negotiated.version),
                suite: text(&negotiated.suite),
                group: text(&negotiated.group),
                outcome: sample.outcome.as_str().to_string(),
            },
            phases: Phase::ALL
                .into_iter()
                .filter_map(|phase| {
                    let nanos = sample.timeline.phase(phase)?;
                    Some((phase.name(), nanos as f64 / 1e9))
                })
                .collect(),
        }
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty metrics: every counter and histogram at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let handshakes = Family::<HandshakeLabels, Counter>::default();
        registry.register(
            "tlslab_handshakes",
            "TLS handshakes seen, by negotiated version, suite, group and outcome",
            handshakes.clone(),
        );
        let phases = Family::<PhaseLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            phase_histogram,
        );
        registry.register(
            "tlslab_phase_seconds",
            "Handshake phases (the phase model's names), in seconds",
            phases.clone(),
        );
        Metrics {
            registry,
            handshakes,
            phases,
        }
    }

    /// Counts one handshake, from a thread that is not the writer's.
    pub fn observe(&self, observation: Observation) {
        self.handshakes.get_or_create(&observation.labels).inc();
        for (phase, seconds) in observation.phases {
            self.phases
                .get_or_create(&PhaseLabels { phase })
                .observe(seconds);
        }
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail; an error would leave the text cut short.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// The metrics endpoint, served on its own thread until dropped.
pub struct MetricsServer {
    address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// The address bound (the port chosen when 0 was asked for).
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves `GET /metrics` on `address` (HTTP/1.1, as Prometheus scrapes).
pub fn serve(address: SocketAddr, metrics: Arc<Metrics>) -> Result<MetricsServer, TelemetryError> {
    // Bound here, not on the thread, so that a port in use is an error before the capture
    // starts.
    let cannot = |error: std::io::Error| {
        TelemetryError::new(
            format!("cannot serve metrics on {address}"),
            "give --metrics a free address and port, for example 127.0.0.1:9464",
        )
        .caused_by(error)
    };
    let listener = std::net::TcpListener::bind(address).map_err(cannot)?;
    listener.set_nonblocking(true).map_err(cannot)?;
    let bound = listener.local_addr().map_err(cannot)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(cannot)?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || runtime.block_on(accept(listener, metrics, stopped)))
        .map_err(cannot)?;
    Ok(MetricsServer {
        address: bound,
        stop: Some(stop),
        thread: Some(thread),
    })
}

async fn accept(
    listener: std::net::TcpListener,
    metrics: Arc<Metrics>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let connection = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        // A failed accept (too many open files) is the scraper's to retry.
        let Ok((stream, _)) = connection else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let metrics = metrics.clone();
                async move { Ok::<_, Infallible>(answer(&request, &metrics)) }
            });
            // A scraper that goes away mid-answer ends only its own connection.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer(request: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        (&Method::GET, "/") => (
            StatusCode::OK,
            "text/plain; charset=utf-8",
            "tlslab capture agent: metrics at /metrics\n".to_string(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: the metrics are at /metrics\n".to_string(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::{Event, Outcome};

    #[test]
    fn an_address_in_use_keeps_the_systems_error_as_the_cause() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = taken.local_addr().unwrap();
        let Err(error) = serve(address, Arc::new(Metrics::new())) else {
            panic!("{address} was served twice");
        };
        assert!(!error.usage);
        assert_eq!(error.message, format!("cannot serve metrics on {address}"));
        let cause = std::error::Error::source(&error)
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .expect("the bind error is kept");
        assert_eq!(cause.kind(), std::io::ErrorKind::AddrInUse);
    }

    fn sample(version: &str, outcome: Outcome) -> Sample {
        Sample::builder()
            .round(0)
            .outcome(outcome)
            .version(version)
            .event(Event::Start, 0)
            .event(Event::HandshakeDone, 3_000_000)
            .build()
    }

    #[test]
    fn handshakes_count_by_what_they_negotiated_and_phases_fill_histograms() {
        let metrics = Metrics::new();
        metrics.observe(Observation::of(&sample("1.3", Outcome::Ok)));
        metrics.observe(Observation::of(&sample("1.3", Outcome::Ok)));
        metrics.observe(Observation::of(&sample("1.2", Outcome::Ok)));
        let text = metrics.encode();
        assert!(
            text.contains(
                "tlslab_handshakes_total{version=\"1.3\",suite=\"none\",group=\"none\",outcome=\"ok\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("tlslab_phase_seconds_count{phase=\"handshake\"} 3"));
        // 3 ms falls in the 3.2 ms bucket, not the 1.6 ms one.
        assert!(text.contains("tlslab_phase_seconds_bucket{le=\"0.0016\",phase=\"handshake\"} 0"));
        assert!(text.ends_with("# EOF\n"));
    }
}
