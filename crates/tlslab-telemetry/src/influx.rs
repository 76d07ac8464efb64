//! InfluxDB points: one `tlslab_handshake` point per Sample, in line protocol, posted in
//! batches by a writer thread.
//!
//! The URL is the write endpoint as the InfluxDB version names it: 1.x
//! `http://host:8086/write?db=tlslab` (user and password as `u=` and `p=`), 2.x and 3.x
//! `http://host:8086/api/v2/write?org=ORG&bucket=BUCKET` with the token in `INFLUX_TOKEN`.
//! Points carry nanosecond timestamps (the connection's first packet), so the URL needs no
//! `precision`. A 1.x database named by `db=` is created when missing, as Telegraf does.
//!
//! The producer never waits for InfluxDB: points queue (up to [`QUEUE`]) and a full queue
//! drops points, counted in the [`InfluxReport`]; a failed write is retried with the next
//! batch until [`PENDING`] points wait, then the oldest are dropped and counted. The store
//! keeps every Sample whatever InfluxDB does.

use std::fmt::Write as _;
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tlslab_core::{Phase, Sample};

use crate::TelemetryError;

/// Points waiting for the writer thread.
const QUEUE: usize = 100_000;
/// Points kept for a retry while InfluxDB fails.
const PENDING: usize = 50_000;
/// Points per write (InfluxDB suggests 5,000 to 10,000).
const BATCH: usize = 5_000;
/// The longest a point waits before it is written.
const EVERY: Duration = Duration::from_secs(1);
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long a server that answers with errors is given to become ready.
const STARTUP: Duration = Duration::from_secs(3);

/// What InfluxDB took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InfluxReport {
    /// Points InfluxDB accepted.
    pub written: u64,
    /// Points dropped: a full queue, or too many waiting while writes failed.
    pub dropped: u64,
    /// The last write's error, when writes failed.
    pub last_error: Option<String>,
}

enum Message {
    Point(String),
    Flush,
}

/// The writer thread and its queue.
pub struct Writer {
    queue: SyncSender<Message>,
    thread: JoinHandle<InfluxReport>,
    /// Points the full queue refused.
    refused: std::sync::atomic::AtomicU64,
    /// Whether a full queue makes the producer wait instead of dropping the point.
    waits: bool,
}

/// Escapes a tag key or value (commas, spaces and equals signs).
fn tag(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            ',' | ' ' | '=' => {
                out.push('\\');
                out.push(character);
            }
            // A line break would end the point.
            '\n' | '\r' => out.push(' '),
            _ => out.push(character),
        }
    }
    if out.is_empty() {
        "none".into()
    } else {
        out
    }
}

/// A string field value, quoted.
fn string_field(text: &str) -> String {
    let mut out = String::from("\"");
    for character in text.chars() {
        match character {
            '"' | '\\' => {
                out.push('\\');
                out.push(character);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(character),
        }
    }
    out.push('"');
    out
}

/// One Sample as a line-protocol point. Tags are what a dashboard groups by (negotiated
/// version, suite, group, outcome, the server and the capture point); fields are the phases
/// in microseconds and the byte counts.
pub fn line(sample: &Sample, run_started_at_unix_ns: u64) -> String {
    let negotiated = &sample.negotiated;
    let text = |value: &Option<String>| tag(value.as_deref().unwrap_or(""));
    let outcome = sample
        .error
        .map_or(sample.outcome.as_str(), |class| class.as_str());
    let mut point = format!(
        "tlslab_handshake,version={},suite={},group={},outcome={}",
        text(&negotiated.version),
        text(&negotiated.suite),
        text(&negotiated.group),
        tag(outcome),
    );
    if let Some(resumed) = negotiated.resumed {
        let _ = write!(point, ",resumed={resumed}");
    }
    let observed = sample.observed.as_deref();
    if let Some(observed) = observed {
        let _ = write!(
            point,
            ",server={},source={},vantage={}",
            tag(&observed.server.to_string()),
            tag(&observed.source),
            observed.vantage.as_str()
        );
    }
    // Always at least one field: line protocol requires it.
    let _ = write!(
        point,
        " bytes_sent={}i,bytes_received={}i",
        sample.bytes_sent, sample.bytes_received
    );
    for phase in Phase::ALL {
        if let Some(nanos) = sample.timeline.phase(phase) {
            let _ = write!(point, ",{}_us={}", phase.name(), nanos as f64 / 1e3);
        }
    }
    if let Some(observed) = observed {
        if let Some(rtt) = observed.network_rtt_ns {
            let _ = write!(point, ",network_rtt_us={}", rtt as f64 / 1e3);
        }
        let _ = write!(point, ",retransmissions={}i", observed.retransmissions);
    }
    if let Some(detail) = &sample.error_detail {
        let _ = write!(point, ",error={}", string_field(detail));
    }
    let timestamp = observed.map_or(
        run_started_at_unix_ns.saturating_add(sample.started_at),
        |observed| observed.first_packet_unix_ns,
    );
    let _ = write!(point, " {timestamp}");
    point
}

/// Why a write to InfluxDB failed.
#[derive(Debug, thiserror::Error)]
enum PostError {
    /// No answer: the address, the connection or the time limit.
    #[error("InfluxDB did not answer")]
    Unanswered(#[from] ureq::Error),
    /// InfluxDB answered, and refused the write.
    #[error("InfluxDB answered {status}: {answer}")]
    Refused {
        status: ureq::http::StatusCode,
        answer: String,
    },
}

/// The write endpoint, checked.
struct Endpoint {
    url: String,
    token: Option<String>,
}

impl Endpoint {
    fn post(&self, agent: &ureq::Agent, body: &str) -> Result<(), PostError> {
        let mut request = agent
            .post(&self.url)
            .header("Content-Type", "text/plain; charset=utf-8");
        if let Some(token) = &self.token {
            request = request.header("Authorization", &format!("Token {token}"));
        }
        let mut response = request.send(body)?;
        if response.status().is_success() {
            return Ok(());
        }
        let status = response.status();
        let answer = response
            .body_mut()
            .with_config()
            .limit(4096)
            .read_to_string()
            .unwrap_or_default();
        Err(PostError::Refused {
            status,
            answer: answer.trim().to_string(),
        })
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(TIMEOUT))
        .build()
        .into()
}

impl Writer {
    /// Checks that InfluxDB answers at `url` (creating a 1.x database named by `db=`), then
    /// starts the writer thread.
    pub fn connect(url: &str) -> Result<Writer, TelemetryError> {
        let uri: ureq::http::Uri = url.parse().map_err(|error| {
            TelemetryError::usage(
                format!("--influx {url}: not a URL"),
                "for example --influx 'http://127.0.0.1:8086/write?db=tlslab'",
            )
            .caused_by(error)
        })?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(TelemetryError::usage(
                format!("--influx {url}: only http:// URLs are written to"),
                "give InfluxDB's http:// write URL (behind TLS, point it at a local relay such as Telegraf's influxdb_listener)",
            ));
        }
        let endpoint = Endpoint {
            url: url.to_string(),
            token: std::env::var("INFLUX_TOKEN")
                .ok()
                .filter(|token| !token.is_empty()),
        };
        let agent = agent();
        // An InfluxDB that has just started answers before it can create or write: a server
        // that answers with an error is asked again for up to STARTUP; one that does not
        // answer at all fails at once.
        let started = Instant::now();
        loop {
            if let Some(database) = database_of(&uri) {
                create_database(&agent, &uri, &database)?;
            }
            // An empty write checks the address, the endpoint and the credentials at once.
            match endpoint.post(&agent, "") {
                Ok(()) => break,
                Err(error) if started.elapsed() < STARTUP => {
                    let _ = error;
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(error) => {
                    return Err(TelemetryError::new(
                        format!("--influx {url}: cannot write"),
                        "check that InfluxDB runs there, the database or bucket exists and INFLUX_TOKEN (2.x) or u=/p= (1.x) grant writing",
                    )
                    .caused_by(error))
                }
            }
        }
        let (queue, points) = mpsc::sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("influx".into())
            .spawn(move || write_points(&endpoint, &agent, &points))
            .map_err(|error| {
                TelemetryError::new(
                    "cannot start the InfluxDB writer",
                    "the system is out of threads or memory",
                )
                .caused_by(error)
            })?;
        Ok(Writer {
            queue,
            thread,
            refused: Default::default(),
            waits: false,
        })
    }

    /// Makes a full queue hold the producer up instead of dropping points: for a producer
    /// that reads files, which may go at InfluxDB's pace, unlike live traffic.
    pub fn waiting(mut self) -> Writer {
        self.waits = true;
        self
    }

    /// Queues one point; when the queue is full the point is dropped and counted (or, for
    /// a [`Writer::waiting`] writer, waits for room).
    pub fn send(&self, point: String) {
        let refused = if self.waits {
            self.queue.send(Message::Point(point)).is_err()
        } else {
            matches!(
                self.queue.try_send(Message::Point(point)),
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_))
            )
        };
        if refused {
            self.refused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Asks for the queued points to be written now.
    pub fn flush(&self) {
        let _ = self.queue.try_send(Message::Flush);
    }

    /// Writes what is queued, stops the thread and says what InfluxDB took.
    pub fn close(self) -> InfluxReport {
        drop(self.queue);
        let mut report = self.thread.join().unwrap_or_else(|_| InfluxReport {
            last_error: Some("the InfluxDB writer stopped".into()),
            ..Default::default()
        });
        report.dropped += self.refused.into_inner();
        report
    }
}

/// The 1.x database a `/write?db=NAME` URL names.
fn database_of(uri: &ureq::http::Uri) -> Option<String> {
    if !uri.path().ends_with("/write") || uri.path().ends_with("/api/v2/write") {
        return None;
    }
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("db="))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
}

/// `CREATE DATABASE` on the same server (a no-op when it exists), keeping the URL's
/// credentials.
fn create_database(
    agent: &ureq::Agent,
    uri: &ureq::http::Uri,
    database: &str,
) -> Result<(), TelemetryError> {
    let authority = uri.authority().map_or("", |authority| authority.as_str());
    let prefix = uri.path().trim_end_matches("/write");
    let credentials: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| pair.starts_with("u=") || pair.starts_with("p="))
        .collect();
    let statement = format!("CREATE DATABASE \"{}\"", database.replace('"', "\\\""));
    let query = format!("http://{authority}{prefix}/query?{}", credentials.join("&"));
    // What it answers is not checked: the write check that follows says what is wrong.
    agent
        .post(&query)
        .send_form([("q", statement.as_str())])
        .map(drop)
        .map_err(|error| {
            TelemetryError::new(
                format!("--influx: cannot reach InfluxDB at {authority}"),
                "start InfluxDB, or correct the host and port in --influx",
            )
            .caused_by(error)
        })
}

/// The writer thread: batches points, writes them, keeps failed batches for a retry.
fn write_points(
    endpoint: &Endpoint,
    agent: &ureq::Agent,
    points: &mpsc::Receiver<Message>,
) -> InfluxReport {
    let mut report = InfluxReport::default();
    let mut pending: std::collections::VecDeque<String> = Default::default();
    let mut oldest = Instant::now();
    let mut open = true;
    while open {
        let wait = EVERY.saturating_sub(oldest.elapsed());
        let write_now = match points.recv_timeout(wait) {
            Ok(Message::Point(point)) => {
                if pending.is_empty() {
                    oldest = Instant::now();
                }
                pending.push_back(point);
                pending.len() >= BATCH
            }
            Ok(Message::Flush) => true,
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => {
                open = false;
                true
            }
        };
        if !write_now || pending.is_empty() {
            continue;
        }
        while !pending.is_empty() {
            let count = pending.len().min(BATCH);
            let mut body = String::new();
            for point in pending.iter().take(count) {
                body.push_str(point);
                body.push('\n');
            }
            match endpoint.post(agent, &body) {
                Ok(()) => {
                    pending.drain(..count);
                    report.written += count as u64;
                }
                Err(error) => {
                    report.last_error = Some(tlslab_core::WithCauses(&error).to_string());
                    // Kept for the next try, within a bound.
                    while pending.len() > PENDING {
                        pending.pop_front();
                        report.dropped += 1;
                    }
                    if !open {
                        report.dropped += pending.len() as u64;
                        pending.clear();
                    }
                    break;
                }
            }
        }
        oldest = Instant::now();
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::{ErrorClass, Event};

    #[test]
    fn a_point_escapes_its_tags_and_carries_the_phases_present() {
        let mut sample = Sample::builder()
            .round(0)
            .started_at(5)
            .error(ErrorClass::Timeout, "no \"answer\"\nat all")
            .bytes(300, 0)
            .build();
        sample.negotiated.version = Some("TLS 1.3, draft=x".into());
        sample.timeline.set(Event::Start, 0);
        sample.timeline.set(Event::TcpConnected, 1_500);
        let point = line(&sample, 1_000);
        assert_eq!(
            point,
            "tlslab_handshake,version=TLS\\ 1.3\\,\\ draft\\=x,suite=none,group=none,\
             outcome=timeout bytes_sent=300i,bytes_received=0i,tcp_connect_us=1.5,\
             error=\"no \\\"answer\\\" at all\" 1005"
        );
    }

    #[test]
    fn only_a_1x_write_url_names_a_database() {
        let database = |url: &str| database_of(&url.parse().unwrap());
        assert_eq!(
            database("http://h:8086/write?u=a&db=lab&p=b").as_deref(),
            Some("lab")
        );
        assert_eq!(database("http://h:8086/api/v2/write?bucket=lab"), None);
        assert_eq!(database("http://h:8086/write"), None);
    }
}
