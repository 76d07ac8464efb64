//! `tlslab load`'s figures: per Config what ApacheBench reports (time taken, requests per
//! second, time per request, transfer rate, the connection-times table, the percentiles),
//! and what it does not (failures by class and status, the TLS handshake's share of the
//! time, CPU per request on each side, percentiles to p99.9), and HTTPS against plain HTTP as
//! the percentage increase with an interval and a test.
//!
//! ab's definitions, followed here so its figures can be compared: Connect is the time to an
//! open connection (for HTTPS, after the TLS handshake; 0 for a request on a kept
//! connection); Waiting is from then (ab: from the request's last byte, which follows at
//! once) to the response's first byte; Processing is Total minus Connect; Total is the
//! request's whole time. Time per request is concurrency × time taken / requests.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use tlslab_stats::{compare, CompareOptions, Summary};
use tlslab_store::{ConfigRow, RequestRow, Store, StoreError};

use crate::schedule::{OpenLoop, Percentiles};
use crate::text::millis;

/// min, mean, sd, median and max of one column of ab's connection-times table, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Times {
    /// The fastest request.
    pub min: f64,
    /// The mean, which ab prints first.
    pub mean: f64,
    /// The standard deviation (`[+/-sd]`); 0 for one request, as ab prints it.
    pub sd: f64,
    /// The median.
    pub median: f64,
    /// The slowest request.
    pub max: f64,
}

impl Times {
    /// The times of nanosecond values, in ms; only the median needs an order, and it is
    /// selected rather than sorted for (the connect, processing and waiting columns of a
    /// large load run were three of the summary's four sorts).
    fn of_nanos(mut values: Vec<f64>) -> Option<Times> {
        if values.is_empty() {
            return None;
        }
        for value in &mut values {
            *value /= 1e6;
        }
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(min, max), &value| {
                (min.min(value), max.max(value))
            });
        Some(Times {
            min,
            mean: tlslab_stats::mean(&values),
            sd: tlslab_stats::standard_deviation(&values),
            median: tlslab_stats::median_in_place(&mut values),
            max,
        })
    }

    /// The times of values in ms, sorted.
    fn of_sorted(sorted: &[f64]) -> Option<Times> {
        let summary = Summary::of_sorted(sorted)?;
        Some(Times {
            min: summary.min,
            mean: summary.mean,
            sd: summary.sd,
            median: summary.median,
            max: summary.max,
        })
    }
}

/// Nanosecond values in ms, sorted, in the vector that held them (a load summary's columns
/// hold a value per request: copying them to convert and again to sort would double its
/// memory).
fn sorted_millis(mut values: Vec<f64>) -> Vec<f64> {
    for value in &mut values {
        *value /= 1e6;
    }
    values.sort_unstable_by(f64::total_cmp);
    values
}

/// One Config under load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadConfig {
    /// The Config's label.
    pub label: String,
    /// `https` or `http`.
    pub scheme: String,
    /// The HTTP version (`1.1`, `2`, `3`).
    pub http: String,
    /// Requests reused their connection (ab's `-k`).
    pub keep_alive: bool,
    /// Requests in flight at once (ab's `-c`); `None` for a capture.
    pub concurrency: Option<i64>,
    /// Host and port the requests went to.
    pub address: String,
    /// The request's path (ab's "Document Path").
    pub path: Option<String>,
    /// Measured trial time, in seconds.
    pub time_taken_s: f64,
    /// Requests that succeeded.
    pub complete: i64,
    /// Requests that failed, whatever the class.
    pub failed: i64,
    /// Failed requests per error class.
    pub failures: BTreeMap<String, i64>,
    /// Complete requests per HTTP status.
    pub statuses: BTreeMap<i64, i64>,
    /// Requests that did not open their connection (they reused a kept one).
    pub reused_connection: i64,
    /// Connections opened.
    pub connections: i64,
    /// Response bytes read from the socket (headers, body, TLS record overhead).
    pub total_transferred: i64,
    /// Response body bytes.
    pub body_transferred: i64,
    /// The most common body size.
    pub document_length: Option<i64>,
    /// Complete requests per second of time taken (ab's "Requests per second").
    pub requests_per_second: Option<f64>,
    /// ab's "time per request (mean)": concurrency × time taken / requests, in ms.
    pub time_per_request_ms: Option<f64>,
    /// ab's "(mean, across all concurrent requests)": time taken / requests, in ms.
    pub time_per_request_all_ms: Option<f64>,
    /// Response bytes read per second, in KiB.
    pub transfer_rate_kib: Option<f64>,
    /// ab's Connect row: to an open connection, TLS included (0 on a kept one).
    pub connect: Option<Times>,
    /// ab's Processing row: from the open connection to the response's end.
    pub processing: Option<Times>,
    /// ab's Waiting row: from the open connection to the response's first byte.
    pub waiting: Option<Times>,
    /// ab's Total row: the whole request.
    pub total: Option<Times>,
    /// Percentiles of the request's whole time, in ms (to p99.9 and the longest).
    pub percentiles: Option<Percentiles>,
    /// ab's percentile rows (50, 66, 75, 80, 90, 95, 98, 99%), computed as ab does: the
    /// sorted times at index n × p / 100, in ms.
    pub ab_percentiles: Vec<(u32, f64)>,
    /// The TLS handshakes' share of all requests' time (0 for plain HTTP).
    pub handshake_share: Option<f64>,
    /// This process's CPU per request, in ms: what the load generator cost.
    pub client_cpu_per_request_ms: Option<f64>,
    /// The lab server's CPU per request, in ms; `None` against a target.
    pub server_cpu_per_request_ms: Option<f64>,
    /// An open loop's schedule and latency from each intended start.
    pub open_loop: Option<OpenLoop>,
    /// What the handshakes negotiated most often, in ab's words (`TLSv1.3,TLS_AES_128_GCM_SHA256`).
    pub tls_protocol: Option<String>,
    /// The key exchange, in ab's words (`X25519 253 bits`).
    pub temp_key: Option<String>,
    /// The server name the client sent (HTTPS).
    pub server_name: Option<String>,
    /// The first response's `Server` field (ab's "Server Software").
    pub server_software: Option<String>,
}

/// A suite as IANA names it, as ab prints it (rustls writes TLS 1.3 suites `TLS13_...`).
fn iana_suite(suite: &str) -> String {
    match suite.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => suite.to_string(),
    }
}

/// The suite's cipher's secret bits, which ab prints twice (OpenSSL's `SSL_CIPHER_get_bits`:
/// the bits used and the algorithm's, equal for every AEAD suite).
fn cipher_bits(suite: &str) -> Option<u32> {
    if suite.contains("AES_128") {
        Some(128)
    } else if suite.contains("AES_256") || suite.contains("CHACHA20") {
        Some(256)
    } else {
        None
    }
}

/// A key-exchange group as ab (OpenSSL's `SSL_get_peer_tmp_key`) describes it.
fn temp_key(group: &str) -> String {
    match group.to_ascii_lowercase().as_str() {
        "x25519" => "X25519 253 bits".into(),
        "x448" => "X448 448 bits".into(),
        "secp256r1" | "p-256" | "prime256v1" => "ECDH prime256v1 256 bits".into(),
        "secp384r1" | "p-384" => "ECDH secp384r1 384 bits".into(),
        "secp521r1" | "p-521" => "ECDH secp521r1 521 bits".into(),
        // Post-quantum and hybrid groups have no such line in ab: their name says it.
        other => other.to_string(),
    }
}

/// HTTPS against plain HTTP for Configs that differ in nothing else.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemeIncrease {
    /// The HTTPS Config's label.
    pub https: String,
    /// The plain HTTP Config's label.
    pub http: String,
    /// (HTTPS − HTTP) / HTTP of the median request time, in percent, with its 95% bootstrap
    /// interval.
    pub median_increase_percent: f64,
    /// The 95% bootstrap interval of `median_increase_percent`.
    pub median_increase_ci: [f64; 2],
    /// Mann-Whitney's two-sided p of the request times.
    pub p: f64,
    /// The study's figures: the increase of the time taken and the drop of requests per
    /// second, in percent.
    pub time_taken_increase_percent: Option<f64>,
    /// See `time_taken_increase_percent`.
    pub requests_per_second_change_percent: Option<f64>,
}

/// A load run's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSummary {
    /// Each Config's figures, in the run's order.
    pub configs: Vec<LoadConfig>,
    /// HTTPS against plain HTTP, for each pair of Configs that differ in the scheme alone.
    pub increases: Vec<SchemeIncrease>,
}

fn nanos(value: Option<i64>) -> Option<f64> {
    value.map(|value| value as f64)
}

/// The time to an open connection: after the handshake over TLS, after connect() in plain
/// HTTP, nothing on a kept connection.
fn connect_time(request: &RequestRow) -> f64 {
    if request.connection_request.unwrap_or(1) > 1 {
        return 0.0;
    }
    nanos(request.handshake_done.or(request.tcp_connected)).unwrap_or(0.0)
}

/// What a load summary keeps of a Config's requests, read one at a time.
#[derive(Default)]
struct Tally {
    complete: i64,
    requests: i64,
    failures: BTreeMap<String, i64>,
    statuses: BTreeMap<i64, i64>,
    lengths: BTreeMap<i64, i64>,
    reused_connection: i64,
    total_transferred: i64,
    body_transferred: i64,
    /// ab's columns of the complete requests, in ns.
    connect: Vec<f64>,
    total: Vec<f64>,
    waiting: Vec<f64>,
    processing: Vec<f64>,
    /// The TLS handshakes of the complete requests that opened their connection, summed.
    handshakes: f64,
    handshake_count: usize,
}

impl Tally {
    fn add(&mut self, request: RequestRow) {
        self.requests += 1;
        if request.connection_request.unwrap_or(1) > 1 {
            self.reused_connection += 1;
        }
        if !request.ok {
            *self
                .failures
                .entry(request.error.unwrap_or_else(|| "unknown".into()))
                .or_insert(0) += 1;
            return;
        }
        let Some(response_done) = nanos(request.response_done) else {
            return;
        };
        self.complete += 1;
        if let Some(status) = request.status {
            *self.statuses.entry(status).or_insert(0) += 1;
        }
        if let Some(length) = request.body_bytes {
            *self.lengths.entry(length).or_insert(0) += 1;
            self.body_transferred += length;
        }
        self.total_transferred += request.wire_bytes.unwrap_or(0);
        let connect = connect_time(&request);
        self.connect.push(connect);
        self.total.push(response_done);
        if let Some(first_byte) = nanos(request.first_byte) {
            self.waiting.push(first_byte - connect);
        }
        self.processing.push(response_done - connect);
        if request.connection_request.unwrap_or(1) == 1 {
            if let (Some(done), Some(connected)) =
                (nanos(request.handshake_done), nanos(request.tcp_connected))
            {
                self.handshakes += done - connected;
                self.handshake_count += 1;
            }
        }
    }
}

impl LoadConfig {
    fn of(store: &Store, config: &ConfigRow) -> Result<LoadConfig, StoreError> {
        let mut tally = Tally::default();
        store.for_each_request(config.id, |request| tally.add(request))?;
        let totals = store.trial_totals(config.id)?;
        let negotiated = store.negotiated(config.id)?;
        let time_taken_s = totals.duration_ns as f64 / 1e9;
        let complete = tally.complete;
        let failed = tally.requests - complete;
        let document_length = tally
            .lengths
            .iter()
            .max_by_key(|(_, count)| **count)
            .map(|(length, _)| *length);
        let connections = tally.requests - tally.reused_connection;
        let (total_transferred, body_transferred) =
            (tally.total_transferred, tally.body_transferred);
        // Summed in request order, as before the columns are sorted.
        let all: f64 = tally.total.iter().sum();
        let total = sorted_millis(tally.total);
        let percentiles = Percentiles::of_sorted_millis(&total);
        let handshakes = tally.handshakes;
        let per_second = |value: f64| (time_taken_s > 0.0).then(|| value / time_taken_s);
        let per_request = |nanos: i64| (complete > 0).then(|| nanos as f64 / complete as f64 / 1e6);
        let concurrency = config.concurrency.unwrap_or(1) as f64;
        Ok(LoadConfig {
            label: config.label.clone(),
            scheme: config.scheme.clone(),
            http: config.http.clone(),
            keep_alive: config.keep_alive,
            concurrency: config.concurrency,
            address: config.address.clone(),
            path: config.path.clone(),
            time_taken_s,
            complete,
            failed,
            failures: tally.failures,
            statuses: tally.statuses,
            reused_connection: tally.reused_connection,
            connections,
            total_transferred,
            body_transferred,
            document_length,
            requests_per_second: per_second(complete as f64),
            time_per_request_ms: (complete > 0)
                .then(|| concurrency * time_taken_s * 1e3 / complete as f64),
            time_per_request_all_ms: (complete > 0).then(|| time_taken_s * 1e3 / complete as f64),
            transfer_rate_kib: per_second(total_transferred as f64 / 1024.0),
            connect: Times::of_nanos(tally.connect),
            processing: Times::of_nanos(tally.processing),
            waiting: Times::of_nanos(tally.waiting),
            total: Times::of_sorted(&total),
            percentiles,
            ab_percentiles: ab_percentiles(&total),
            handshake_share: (all > 0.0 && tally.handshake_count > 0).then(|| handshakes / all),
            client_cpu_per_request_ms: per_request(totals.client_cpu_ns),
            server_cpu_per_request_ms: totals.server_cpu_ns.and_then(per_request),
            open_loop: OpenLoop::of(store, config)?,
            tls_protocol: negotiated.as_ref().map(|n| match &n.suite {
                Some(suite) => format!(
                    "TLSv{},{}{}",
                    n.version,
                    iana_suite(suite),
                    cipher_bits(suite).map_or(String::new(), |bits| format!(",{bits},{bits}"))
                ),
                None => format!("TLSv{}", n.version),
            }),
            temp_key: negotiated
                .as_ref()
                .and_then(|n| n.group.as_deref())
                .map(temp_key),
            // Without --sni: the lab server's name, or the target's host.
            server_name: (config.scheme == "https").then(|| {
                config.sni.clone().unwrap_or_else(|| match &config.target {
                    None => "localhost".to_string(),
                    Some(target) => target
                        .rsplit_once(':')
                        .map_or(target.clone(), |(host, _)| host.to_string()),
                })
            }),
            server_software: store.server_software(config.id)?,
        })
    }
}

/// ab's percentile rows of times in ms, sorted.
fn ab_percentiles(sorted: &[f64]) -> Vec<(u32, f64)> {
    if sorted.is_empty() {
        return Vec::new();
    }
    [50, 66, 75, 80, 90, 95, 98, 99]
        .into_iter()
        .map(|percent| {
            let index = (sorted.len() * percent as usize / 100).min(sorted.len() - 1);
            (percent, sorted[index])
        })
        .collect()
}

/// The settings two Configs must share for their schemes to be compared.
fn setting(config: &ConfigRow) -> impl PartialEq + '_ {
    (
        (config.concurrency, config.keep_alive, &config.http),
        (config.arrival_rate.map(f64::to_bits), config.rtt_ns),
        (config.loss.map(f64::to_bits), config.rate_bps, &config.path),
    )
}

impl LoadSummary {
    /// The figures of `store`'s run, one pass over its requests per Config.
    pub fn from_store(store: &Store) -> Result<LoadSummary, StoreError> {
        let rows = store.configs()?;
        let mut configs = Vec::new();
        for row in &rows {
            configs.push(LoadConfig::of(store, row)?);
        }
        let mut increases = Vec::new();
        for (https, https_load) in rows.iter().zip(&configs) {
            if https.scheme != "https" {
                continue;
            }
            let Some((http, http_load)) = rows
                .iter()
                .zip(&configs)
                .find(|(http, _)| http.scheme == "http" && setting(http) == setting(https))
            else {
                continue;
            };
            let times = |config: &ConfigRow| store.phase_values(config.id, "total");
            let options = CompareOptions::default();
            let Ok(comparison) = compare(
                &http.label,
                &times(http)?,
                &https.label,
                &times(https)?,
                &options,
            ) else {
                continue;
            };
            let percent = |ratio: f64| (ratio - 1.0) * 100.0;
            let change = |https: Option<f64>, http: Option<f64>| match (https, http) {
                (Some(https), Some(http)) if http > 0.0 => Some((https - http) / http * 100.0),
                _ => None,
            };
            increases.push(SchemeIncrease {
                https: https.label.clone(),
                http: http.label.clone(),
                median_increase_percent: percent(comparison.ratio_median),
                median_increase_ci: [
                    percent(comparison.ratio_median_ci[0]),
                    percent(comparison.ratio_median_ci[1]),
                ],
                p: comparison.mann_whitney_p,
                time_taken_increase_percent: change(
                    Some(https_load.time_taken_s),
                    Some(http_load.time_taken_s),
                ),
                requests_per_second_change_percent: change(
                    https_load.requests_per_second,
                    http_load.requests_per_second,
                ),
            });
        }
        Ok(LoadSummary { configs, increases })
    }
}

fn times_row(out: &mut String, name: &str, times: Option<Times>) {
    if let Some(t) = times {
        let _ = writeln!(
            out,
            "  {name:<11}{:>9} {:>9} {:>8} {:>9} {:>9}",
            millis(t.min),
            millis(t.mean),
            // One value has no standard deviation (NaN): a dash, as for any missing figure.
            if t.sd.is_finite() {
                millis(t.sd)
            } else {
                "–".to_string()
            },
            millis(t.median),
            millis(t.max)
        );
    }
}

fn p(value: f64) -> String {
    if value < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {value:.3}")
    }
}

/// The load summary on a terminal: per Config ab's figures and ours, then HTTPS against HTTP;
/// the target's words (its `Server` field) and the labels escaped for a terminal.
pub fn render_load_text(summary: &LoadSummary) -> String {
    let summary = &crate::terminal::load_summary(summary);
    let mut out = String::new();
    for config in &summary.configs {
        let _ = writeln!(out, "{}", config.label);
        let _ = writeln!(
            out,
            "  server     {} at {}",
            config
                .server_software
                .as_deref()
                .unwrap_or("(no Server field)"),
            config.address
        );
        let mut failed = format!("{} failed", config.failed);
        for (class, count) in &config.failures {
            let _ = write!(failed, ", {count} {class}");
        }
        let statuses: Vec<String> = config
            .statuses
            .iter()
            .map(|(status, count)| format!("{count} × {status}"))
            .collect();
        let _ = writeln!(
            out,
            "  requests   {} complete, {failed} · status {} · {} connections, {} requests on kept ones",
            config.complete,
            if statuses.is_empty() { "–".into() } else { statuses.join(", ") },
            config.connections,
            config.reused_connection
        );
        let _ = writeln!(
            out,
            "  rate       {} requests/s in {:.3} s · time per request {} ms ({} ms across all concurrent) · {} KiB/s",
            config.requests_per_second.map_or("–".into(), |r| format!("{r:.1}")),
            config.time_taken_s,
            config.time_per_request_ms.map_or("–".into(), millis),
            config.time_per_request_all_ms.map_or("–".into(), millis),
            config.transfer_rate_kib.map_or("–".into(), |r| format!("{r:.1}")),
        );
        if let Some(percentiles) = &config.percentiles {
            let _ = writeln!(
                out,
                "  total      p50 {} ms   p90 {}   p99 {}   p99.9 {}   max {}",
                millis(percentiles.p50),
                millis(percentiles.p90),
                millis(percentiles.p99),
                millis(percentiles.p999),
                millis(percentiles.max)
            );
        }
        if let Some(open) = &config.open_loop {
            if let Some(latency) = &open.latency_ms {
                let _ = writeln!(
                    out,
                    "  latency    from intended start: p50 {} ms   p99 {}   p99.9 {}   max {} ({} asked)",
                    millis(latency.p50),
                    millis(latency.p99),
                    millis(latency.p999),
                    millis(latency.max),
                    tlslab_core::arrival::format_rate(open.asked_per_second)
                );
            }
        }
        let _ = writeln!(
            out,
            "  times (ms)       min      mean       sd    median       max"
        );
        times_row(&mut out, "connect", config.connect);
        times_row(&mut out, "processing", config.processing);
        times_row(&mut out, "waiting", config.waiting);
        times_row(&mut out, "total", config.total);
        let mut costs = Vec::new();
        if let Some(share) = config.handshake_share {
            costs.push(format!("TLS handshakes {:.1}% of the time", share * 100.0));
        }
        if let Some(client) = config.client_cpu_per_request_ms {
            costs.push(format!("client CPU {} ms/request", millis(client)));
        }
        if let Some(server) = config.server_cpu_per_request_ms {
            costs.push(format!("server CPU {} ms/request", millis(server)));
        }
        if !costs.is_empty() {
            let _ = writeln!(out, "  cost       {}", costs.join(" · "));
        }
        out.push('\n');
    }
    if !summary.increases.is_empty() {
        out.push_str("HTTPS against plain HTTP (median request time; 95% bootstrap CI):\n");
        for increase in &summary.increases {
            let _ = writeln!(
                out,
                "  '{}' vs '{}': {:+.1}% [{:+.1}%, {:+.1}%], Mann-Whitney {}{}{}",
                increase.https,
                increase.http,
                increase.median_increase_percent,
                increase.median_increase_ci[0],
                increase.median_increase_ci[1],
                p(increase.p),
                increase
                    .time_taken_increase_percent
                    .map_or(String::new(), |t| format!(" · time taken {t:+.1}%")),
                increase
                    .requests_per_second_change_percent
                    .map_or(String::new(), |r| format!(" · requests/s {r:+.1}%")),
            );
        }
        out.push('\n');
    }
    out
}

/// ApacheBench's own layout, one block per Config, so scripts that read ab's output (`grep
/// "Requests per second"`) read tlslab's. Each block is what `ab` prints for one run, the
/// target's words escaped for a terminal.
pub fn render_ab(summary: &LoadSummary) -> String {
    let summary = &crate::terminal::load_summary(summary);
    let mut out = String::new();
    for config in &summary.configs {
        let _ = writeln!(
            out,
            "This is tlslab load, in ApacheBench's layout ({})",
            config.label
        );
        out.push('\n');
        ab_server(config, &mut out);
        ab_figures(config, &mut out);
        ab_times(config, &mut out);
        out.push('\n');
    }
    out
}

/// ab's description of the server and the document asked for.
fn ab_server(config: &LoadConfig, out: &mut String) {
    // ab prints the line, empty, when the server sent no `Server` field.
    let _ = writeln!(
        out,
        "Server Software:        {}",
        config.server_software.as_deref().unwrap_or("")
    );
    let (host, port) = config
        .address
        .rsplit_once(':')
        .map_or((config.address.as_str(), ""), |(host, port)| (host, port));
    let _ = writeln!(out, "Server Hostname:        {host}");
    let _ = writeln!(out, "Server Port:            {port}");
    if let Some(protocol) = &config.tls_protocol {
        let _ = writeln!(out, "SSL/TLS Protocol:       {protocol}");
    }
    if let Some(key) = &config.temp_key {
        let _ = writeln!(out, "Server Temp Key:        {key}");
    }
    if let Some(name) = &config.server_name {
        let _ = writeln!(out, "TLS Server Name:        {name}");
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "Document Path:          {}",
        config.path.as_deref().unwrap_or("/")
    );
    let _ = writeln!(
        out,
        "Document Length:        {} bytes",
        config.document_length.unwrap_or(0)
    );
    out.push('\n');
}

/// ab's figures of the run: concurrency, time taken, requests, bytes, rates.
fn ab_figures(config: &LoadConfig, out: &mut String) {
    let _ = writeln!(
        out,
        "Concurrency Level:      {}",
        config.concurrency.unwrap_or(1)
    );
    let _ = writeln!(
        out,
        "Time taken for tests:   {:.3} seconds",
        config.time_taken_s
    );
    let _ = writeln!(out, "Complete requests:      {}", config.complete);
    let _ = writeln!(out, "Failed requests:        {}", config.failed);
    let non_2xx: i64 = config
        .statuses
        .iter()
        .filter(|(status, _)| !(200..300).contains(*status))
        .map(|(_, count)| count)
        .sum();
    if non_2xx > 0 {
        let _ = writeln!(out, "Non-2xx responses:      {non_2xx}");
    }
    if config.keep_alive {
        let _ = writeln!(out, "Keep-Alive requests:    {}", config.complete);
    }
    let _ = writeln!(
        out,
        "Total transferred:      {} bytes",
        config.total_transferred
    );
    let _ = writeln!(
        out,
        "HTML transferred:       {} bytes",
        config.body_transferred
    );
    let _ = writeln!(
        out,
        "Requests per second:    {:.2} [#/sec] (mean)",
        config.requests_per_second.unwrap_or(0.0)
    );
    let _ = writeln!(
        out,
        "Time per request:       {:.3} [ms] (mean)",
        config.time_per_request_ms.unwrap_or(0.0)
    );
    let _ = writeln!(
        out,
        "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
        config.time_per_request_all_ms.unwrap_or(0.0)
    );
    let _ = writeln!(
        out,
        "Transfer rate:          {:.2} [Kbytes/sec] received",
        config.transfer_rate_kib.unwrap_or(0.0)
    );
    out.push('\n');
}

/// ab's connection times and the percentiles of the requests' times.
fn ab_times(config: &LoadConfig, out: &mut String) {
    let whole = |value: f64| format!("{:.0}", value);
    let _ = writeln!(out, "Connection Times (ms)");
    let _ = writeln!(out, "              min  mean[+/-sd] median   max");
    for (name, times) in [
        ("Connect:", config.connect),
        ("Processing:", config.processing),
        ("Waiting:", config.waiting),
        ("Total:", config.total),
    ] {
        if let Some(t) = times {
            let _ = writeln!(
                out,
                "{name:<12}{:>5} {:>5} {:>5.1} {:>6} {:>7}",
                whole(t.min),
                whole(t.mean),
                // ab prints 0.0 for one request, whose deviation is undefined (NaN here).
                if t.sd.is_finite() { t.sd } else { 0.0 },
                whole(t.median),
                whole(t.max)
            );
        }
    }
    if let Some(percentiles) = &config.percentiles {
        out.push('\n');
        let _ = writeln!(
            out,
            "Percentage of the requests served within a certain time (ms)"
        );
        for (percent, value) in &config.ab_percentiles {
            let _ = writeln!(out, "  {:>3}% {:>6}", percent, whole(*value));
        }
        let _ = writeln!(
            out,
            "  100% {:>6} (longest request)",
            whole(percentiles.max)
        );
    }
}
