//! The numbers a run summary shows, computed from the store.

use std::collections::BTreeMap;

use serde::Serialize;
use tlslab_core::{ErrorClass, Phase};
use tlslab_stats::{CompareOptions, Summary};
use tlslab_store::{ConfigRow, ReplayRow, Store, StoreError};

use crate::comparison::Comparisons;
use crate::metric::Metric;

/// Statistics of one metric in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Distribution {
    /// The number of values.
    pub n: usize,
    /// The mean, which a t-interval speaks of.
    pub mean: f64,
    /// The sample standard deviation; NaN for one value.
    pub sd: f64,
    /// The median: the table's figure, since handshake times are skewed.
    pub median: f64,
    /// The 90th percentile (type 7).
    pub p90: f64,
    /// The 99th percentile (type 7).
    pub p99: f64,
    /// The 99.9th percentile (type 7, as the others): the tail a busy service sees every
    /// thousand handshakes.
    pub p999: f64,
    /// The fastest.
    pub min: f64,
    /// The slowest.
    pub max: f64,
    /// 95% confidence interval of the mean (Student t).
    pub mean_ci: [f64; 2],
}

impl Distribution {
    /// The mean's 95% interval, or `None` for a single value, whose interval and standard
    /// deviation are undefined (NaN, which no output may print).
    pub fn mean_interval(&self) -> Option<[f64; 2]> {
        self.mean_ci
            .iter()
            .all(|end| end.is_finite())
            .then_some(self.mean_ci)
    }

    /// The mean and its interval as the tables show them: `mean (low–high)`, and for a
    /// single value, which has no interval, says so.
    pub fn mean_with_interval(&self, format: impl Fn(f64) -> String) -> String {
        match self.mean_interval() {
            Some([low, high]) => {
                format!("{} ({}–{})", format(self.mean), format(low), format(high))
            }
            None => format!("{} (one value: no interval)", format(self.mean)),
        }
    }

    /// Statistics of nanosecond values, reported in milliseconds.
    pub fn of_nanos(values: &[f64]) -> Option<Distribution> {
        let mut millis: Vec<f64> = values.iter().map(|v| v / 1e6).collect();
        // `Summary::of` refuses a NaN or an infinity; its sorted copy is not ours to read for
        // p99.9, so sort here and check the same way.
        if millis.iter().any(|value| !value.is_finite()) {
            return None;
        }
        millis.sort_by(f64::total_cmp);
        let summary = Summary::of_sorted(&millis)?;
        Some(Distribution {
            n: summary.n,
            mean: summary.mean,
            sd: summary.sd,
            median: summary.median,
            p90: summary.p90,
            p99: summary.p99,
            p999: tlslab_stats::quantile(&millis, 0.999),
            min: summary.min,
            max: summary.max,
            mean_ci: [summary.mean_ci.0, summary.mean_ci.1],
        })
    }
}

/// A Config's emulated network, and the physics check of its median against the round trips a
/// handshake needs (docs/architecture.md, "Network emulation", physics check).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetworkSummary {
    /// Which emulator carried the packets (netem, tun, relay).
    pub emulator: String,
    /// The emulated round trip.
    pub rtt_ms: f64,
    /// The emulated packet loss (0 to 1).
    pub loss: f64,
    /// Round trips a handshake of this kind must wait for (TCP connect included when the
    /// emulator delays it).
    pub round_trips: u32,
    /// `round_trips` × RTT: no handshake can be faster.
    pub floor_ms: f64,
    /// The median TCP connect: one round trip, measured.
    pub measured_rtt_ms: Option<f64>,
    /// What is wrong when the median is below the floor or far above it.
    pub physics: Option<String>,
}

/// Handshakes above this share of the floor, plus [`PHYSICS_SLACK_MS`], are "far above" it:
/// something besides round trips (CPU, queueing, transmission, loss) dominates.
const PHYSICS_FAR_ABOVE: f64 = 1.5;
const PHYSICS_SLACK_MS: f64 = 5.0;

/// The round trips a full (or resumed) handshake waits for: TCP's SYN/SYN-ACK, then TLS 1.3's
/// one flight each way, or TLS 1.2's two (one when resumed). QUIC has no separate connect: its
/// first flight is the TLS 1.3 one.
pub fn round_trips(version: &str, resume: bool, connect_delayed: bool) -> u32 {
    let tls = match (version, resume) {
        ("1.2", false) => 2,
        _ => 1,
    };
    tls + u32::from(connect_delayed)
}

/// One technique's gain over the full handshake of the same Config otherwise: session
/// resumption, 0-RTT, certificate caching.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gain {
    /// Every technique the Config sets (`0-RTT (tickets)`, `resumption (tickets) +
    /// certificate cache`).
    pub technique: String,
    /// Every dimension in which the Config differs from its baseline: the technique's, and
    /// nothing else.
    pub dimensions: Vec<String>,
    /// The Config that sets the technique.
    pub label: String,
    /// The Config with the full handshake it is set against.
    pub baseline: String,
    /// The summary's metric (see [`crate::metric`]).
    pub metric: String,
    /// The Config's median of the metric.
    pub median_ms: f64,
    /// The baseline's median of the metric.
    pub baseline_median_ms: f64,
    /// The share of the baseline's median saved: 1 − median / baseline median.
    pub gain: f64,
    /// 95% bootstrap interval of the gain.
    pub gain_ci: [f64; 2],
    /// Mann-Whitney p of the two samples.
    pub p: f64,
}

fn physics(label: &str, median_ms: f64, floor_ms: f64, round_trips: u32) -> Option<String> {
    if median_ms < floor_ms {
        Some(format!(
            "'{label}': median {median_ms:.1} ms is below the round-trip floor ({round_trips} × RTT = {floor_ms:.1} ms); the emulator did not delay these packets"
        ))
    } else if median_ms > floor_ms * PHYSICS_FAR_ABOVE + PHYSICS_SLACK_MS {
        Some(format!(
            "'{label}': median {median_ms:.1} ms is far above the round-trip floor ({round_trips} × RTT = {floor_ms:.1} ms); CPU, queueing, transmission time or loss dominate, not round trips"
        ))
    } else {
        None
    }
}

/// The TCP connect is one round trip: its median must be the emulated RTT, give or take the
/// loopback cost.
/// `link_queue`: the emulated link was full, so a connect longer than the round trip is its
/// queue, not a fault; one shorter than the round trip is still impossible.
fn connect_check(label: &str, connect_ms: f64, rtt_ms: f64, link_queue: bool) -> Option<String> {
    let slow = !link_queue && connect_ms > rtt_ms * 1.25 + 2.0;
    (connect_ms < rtt_ms || slow).then(|| {
        format!(
            "'{label}': the median TCP connect ({connect_ms:.1} ms) should be one emulated RTT ({rtt_ms:.1} ms); packets were delayed by something else"
        )
    })
}

/// What a Config's emulated link carried, for the diagnosis: the median over its trials of
/// the busier direction's share of the bandwidth (a trial starts and ends with the link part
/// idle, and one stalled trial should not hide the others), and its queue's drops.
fn link_of(
    trials: &[tlslab_store::LinkTrial],
    rate_bps: Option<i64>,
) -> Option<crate::bottleneck::Link> {
    if trials.is_empty() {
        return None;
    }
    let utilization = rate_bps.filter(|rate| *rate > 0).and_then(|rate| {
        let shares: Vec<f64> = trials
            .iter()
            .filter(|trial| trial.duration_ns > 0)
            .map(|trial| {
                let busier = trial.bytes_to_server.max(trial.bytes_to_client) as f64;
                busier * 8.0 / (rate as f64 * trial.duration_ns as f64 / 1e9)
            })
            .collect();
        (!shares.is_empty()).then(|| tlslab_stats::median(&shares))
    });
    Some(crate::bottleneck::Link {
        utilization,
        queue_drops: trials
            .iter()
            .map(|trial| trial.queue_drops.max(0) as u64)
            .sum(),
    })
}

/// The warning for a Config whose median handshake was mostly a queue at the lab server.
/// One function, so the text summary can tell these warnings from the others and say them
/// for all such Configs at once.
pub(crate) fn queue_warning(label: &str, bottleneck: &crate::bottleneck::Bottleneck) -> String {
    format!(
        "'{label}': {:.0}% of the median handshake was queueing {}: the latency measures the queue; {}",
        bottleneck.queueing_share.unwrap_or(0.0) * 100.0,
        bottleneck.queue_place(),
        if bottleneck.limit == "link" {
            "lower the concurrency or raise --bandwidth"
        } else {
            "lower the concurrency"
        }
    )
}

/// A warning when requests were answered, but not with success: the server's status says
/// why (ab's "Non-2xx responses"), and for the statuses a misconfigured run causes, what to
/// change. The requests still count as complete, as ab counts them.
fn status_warning(config: &ConfigRow, statuses: &[(i64, i64)]) -> Option<String> {
    let answered: i64 = statuses.iter().map(|(_, count)| count).sum();
    let failed: Vec<&(i64, i64)> = statuses
        .iter()
        .filter(|(status, _)| !(200..300).contains(status))
        .collect();
    let &(status, _) = *failed.first()?;
    let counts: Vec<String> = failed
        .iter()
        .map(|(status, count)| format!("{count} × {status}"))
        .collect();
    let client_certificate = config
        .trust
        .as_deref()
        .is_some_and(|trust| trust.contains("client certificate"));
    let cause = match status {
        // nginx's `ssl_verify_client on` completes the handshake without a certificate and
        // answers every request "400 No required SSL certificate was sent".
        400 if config.target.is_some() && !client_certificate => {
            "; a server that asks for a client certificate at the HTTP layer (nginx's ssl_verify_client on) answers 400 without one: pass --client-cert FILE --client-key FILE"
        }
        404 => "; check the request's path (--path, or the URL's)",
        421 => "; the server name does not select this site on the server (--sni)",
        _ => "",
    };
    Some(format!(
        "'{}': {} of {answered} responses were not a success ({}){cause}",
        config.label,
        failed.iter().map(|(_, count)| count).sum::<i64>(),
        counts.join(", ")
    ))
}

/// Whether a count is zero: the JSON leaves out the counts of incomplete handshakes that
/// only captures have.
fn is_zero(count: &i64) -> bool {
    *count == 0
}

/// One Config's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSummary {
    /// The Config's label, as the user gave it.
    pub label: String,
    /// Measured attempts (warm-up excluded).
    pub attempted: i64,
    /// Measured attempts that succeeded.
    pub ok: i64,
    /// Failed attempts per error class.
    pub errors: BTreeMap<String, i64>,
    /// Handshakes a capture shows only the start of (outcome `incomplete`): neither
    /// succeeded nor failed, so counted here and not in `attempted`; their phases are in no
    /// statistic (`compare --include-incomplete` takes them in).
    #[serde(skip_serializing_if = "is_zero")]
    pub incomplete: i64,
    /// One description per error class, to say what happened.
    pub error_examples: BTreeMap<String, String>,
    /// The likely cause and fix per error class, in the server's terms, where the example
    /// tells.
    pub diagnoses: BTreeMap<String, String>,
    /// The full handshake (start → handshake_done) of successful attempts, in ms.
    pub handshake_ms: Option<Distribution>,
    /// The summary's metric (its `metric`) of successful attempts, in ms: what the table
    /// shows and the verdicts compare.
    pub metric_ms: Option<Distribution>,
    /// tcp or quic.
    pub transport: String,
    /// Time to the first byte of the response (start → first_byte), when there was a request.
    pub ttfb_ms: Option<Distribution>,
    /// Median bytes of the client's first flight and of the server's first flight.
    pub client_hello_bytes: Option<i64>,
    /// See `client_hello_bytes`.
    pub server_flight_bytes: Option<i64>,
    /// The server's flights that carried the responses (QUIC, with an RTT long enough to
    /// tell them apart): round trips from first byte to last, and what each flight carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_flights: Option<crate::flights::FlightsSummary>,
    /// 0-RTT attempts whose early data was accepted, and those refused.
    pub early_data: Option<(i64, i64)>,
    /// The replay probe: flights re-sent, rejected, accepted.
    pub replay: Option<ReplayRow>,
    /// Successful handshakes per ECH status (accepted, rejected, grease, not_offered), for
    /// Configs that offered ECH.
    pub ech: Vec<(String, i64)>,
    /// Median of each phase in ms (additive phases first).
    pub phase_medians_ms: BTreeMap<String, f64>,
    /// Measured attempts per second of trial time.
    pub handshakes_per_second: Option<f64>,
    /// Lab server CPU (user + system) per measured attempt, in ms.
    pub server_cpu_per_handshake_ms: Option<f64>,
    /// This process's CPU per measured attempt, in ms: the load generator's own cost.
    pub client_cpu_per_handshake_ms: Option<f64>,
    /// Client CPU over trial time and cores: near 1 means the client was the bottleneck.
    pub client_cpu_utilization: Option<f64>,
    /// Mutual TLS, step by step, when the client sent a certificate.
    pub mutual_tls: Option<MutualTls>,
    /// Which side limited the rate, and how much of the median was queueing (lab server
    /// Configs, whose server CPU is measured).
    pub bottleneck: Option<crate::bottleneck::Bottleneck>,
    /// The lab server's largest resident memory; `None` against a target.
    pub server_peak_rss_bytes: Option<i64>,
    /// This process's largest resident memory.
    pub client_peak_rss_bytes: i64,
    /// Successful handshakes that resumed, and those that offered nothing or were refused.
    pub resumed: Option<i64>,
    /// See `resumed`.
    pub full: Option<i64>,
    /// Certificate checks were off (`--insecure`): cert_validation is not measured.
    pub insecure: bool,
    /// What the client trusted, for a Config against a target.
    pub trust: Option<String>,
    /// With `--until-ci`: whether and why the Config stopped before its planned handshakes.
    pub stopping: Option<String>,
    /// The emulated network, when there was one.
    pub network: Option<NetworkSummary>,
    /// An open loop's schedule and the latency from each intended start.
    pub open_loop: Option<crate::schedule::OpenLoop>,
}

/// What mutual TLS cost a Config's handshakes, step by step: the client's CertificateVerify
/// signature (the `client_signing` phase), the lab server's check of the client's
/// certificate (chain and signature, counted per trial by the server), and what the client's
/// Certificate and CertificateVerify messages carried.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MutualTls {
    /// Median of the `client_signing` phase, in ms.
    pub client_signing_ms: Option<f64>,
    /// The lab server's mean time per client certificate checked, in ms; `None` against a
    /// target (its checks are not visible).
    pub server_check_ms: Option<f64>,
    /// Client certificates the lab server checked in the measured trials.
    pub server_checks: Option<i64>,
    /// Median bytes of the client's Certificate and CertificateVerify messages.
    pub certificate_bytes: Option<i64>,
}

/// A run's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The results file, as given.
    pub store: String,
    /// When the run started, UTC.
    pub started_at: String,
    /// The run ended as planned; an incomplete run is summarized all the same.
    pub complete: bool,
    /// Why an incomplete run stopped.
    pub reason: Option<String>,
    /// The plan's seed; `None` for a capture.
    pub seed: Option<u64>,
    /// How long the run took.
    pub duration_s: Option<f64>,
    /// Measured attempts over every Config.
    pub attempted: i64,
    /// Failed measured attempts over every Config.
    pub errors: i64,
    /// Handshakes a capture shows only the start of, over every Config (not in
    /// `attempted`).
    #[serde(skip_serializing_if = "is_zero")]
    pub incomplete: i64,
    /// Some Config ran with certificate checks off.
    pub insecure: bool,
    /// One summary per Config, in the run's order.
    pub configs: Vec<ConfigSummary>,
    /// Things a careful reader must know (a saturated client, certificate checks off).
    pub warnings: Vec<String>,
    /// Each Config against the first one on `metric`, when there are several, each naming
    /// the dimensions in which it differs from the first.
    pub comparisons: Option<Comparisons>,
    /// The dimensions the Configs vary (by `compare --by` name; dimensions that change
    /// together are named once).
    pub dimensions: Vec<String>,
    /// With two or more `dimensions` that the Configs cross: the effect of each with the
    /// others held fixed (`tlslab compare --by`), the answer a crossed matrix was built for.
    /// A dimension that no stratum holds two values of has no entry (see `left_out`); Configs
    /// that do not cross their dimensions have none, and are answered each against the first.
    pub factorials: Vec<crate::factorial::Factorial>,
    /// The one metric of the table, the verdicts and the gains (`handshake`, `ttfb`,
    /// `total`, or any phase `--metric` names), chosen by the question the Configs ask
    /// ([`crate::metric`]).
    pub metric: String,
    /// Why that metric, in words.
    pub metric_reason: String,
    /// The summary's answer, one verdict per line it prints: the by-dimension answers when
    /// the Configs cross dimensions, else each Config against the first; each credited to
    /// every dimension in which the Configs compared differ.
    pub verdicts: Vec<crate::verdict::Verdict>,
    /// What the by-dimension answers could not say, and why (a dimension no contrast
    /// changes alone).
    pub left_out: Vec<String>,
    /// Session techniques against their full-handshake baselines.
    pub gains: Vec<Gain>,
    /// Where latency breaks across each sweep of arrival rates.
    pub knees: Vec<crate::schedule::Knee>,
    /// How the text names each Config: the words all share once, each by what tells it
    /// apart, the user's labels whole.
    pub names: crate::names::Names,
    /// The phase whose median moved most between two Configs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_change: Option<crate::outcomes::PhaseChange>,
}

/// Measurement rule 12: the warning when the kernel could not time the run's wire events
/// (the environment names the clock that did; see `tlslab_backend::wire::describe_clock`).
fn wire_clock_warning(environment: &tlslab_core::Environment) -> Option<String> {
    let clock = environment.wire_clock.as_deref()?;
    (!clock.starts_with("kernel")).then(|| {
        format!(
            "wire events (connect, ClientHello sent, ServerHello received, ...) were timed by the {clock}: late by each wake-up of the client's thread"
        )
    })
}

/// Above this many successful samples, a Config's values are read one column at a time:
/// one pass over them all holds 16 values of 8 bytes per sample (64 MB here), one column at
/// a time one (and its sorted copy), so that the summary's memory stays well below 200 MB
/// on captures and runs of millions of handshakes, at the cost of a pass per column.
const ONE_PASS_LIMIT: usize = 500_000;

impl RunSummary {
    /// The summary of `store`'s run, on the metric its Configs' question calls for.
    pub fn from_store(store: &Store) -> Result<RunSummary, StoreError> {
        RunSummary::from_store_on(store, None)
    }

    /// [`RunSummary::from_store`] on the metric `metric` names (`--metric`: its table, its
    /// verdicts and its gains), or on the one the Configs' question calls for.
    pub fn from_store_on(store: &Store, metric: Option<&str>) -> Result<RunSummary, StoreError> {
        RunSummary::read(store, ONE_PASS_LIMIT, metric)
    }

    /// [`RunSummary::from_store`], reading the values of a Config with more than
    /// `one_pass_limit` successful samples one column at a time (tests compare both ways).
    #[doc(hidden)]
    pub fn from_store_in_passes(
        store: &Store,
        one_pass_limit: usize,
    ) -> Result<RunSummary, StoreError> {
        RunSummary::read(store, one_pass_limit, None)
    }

    fn read(
        store: &Store,
        one_pass_limit: usize,
        asked: Option<&str>,
    ) -> Result<RunSummary, StoreError> {
        let run = store.run()?;
        let rows = store.configs()?;
        let config_names =
            crate::names::Names::of(&rows, &crate::names::given_labels(&run.experiment));
        let metric = Metric::choose(&rows, asked);
        let reading = Reading::new(&run, metric.name.as_str(), one_pass_limit);
        let mut configs = Vec::new();
        let mut warnings = Vec::new();
        // Each Config's values of the comparison's metric (ms), kept from its pass for the
        // comparison and the factorial contrasts, which would read them again.
        let mut metric_values: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        for config in &rows {
            let (summary, values) = reading.config(store, config, &mut warnings)?;
            metric_values.insert(config.id, values);
            configs.push(summary);
        }
        let insecure = configs.iter().any(|c| c.insecure);
        warnings.extend(run_warnings(&run, insecure));
        let open_loops: Vec<(&ConfigRow, &crate::schedule::OpenLoop)> = rows
            .iter()
            .zip(&configs)
            .filter_map(|(row, summary)| Some((row, summary.open_loop.as_ref()?)))
            .collect();
        let knees = crate::schedule::knees(&open_loops);
        let values = |config: &ConfigRow| -> Result<Vec<f64>, StoreError> {
            Ok(metric_values.get(&config.id).cloned().unwrap_or_default())
        };
        let answer =
            crate::answer::answer(&rows, &values, &metric.name, &CompareOptions::default())?;
        warnings.extend(answer.warnings);
        let dimensions = crate::dimensions::varied_dimensions(&rows);
        let phase_change =
            crate::outcomes::most_changed(&configs, &rows, !answer.factorials.is_empty());
        Ok(RunSummary {
            store: store.path().display().to_string(),
            started_at: run.started_at,
            complete: run.complete,
            reason: run.reason,
            // Stored as SQLite's signed integer; the bits are the u64 seed.
            seed: run.seed.map(|seed| seed as u64),
            duration_s: run.duration_ns.map(|ns| ns as f64 / 1e9),
            attempted: configs.iter().map(|c| c.attempted).sum(),
            errors: configs.iter().map(|c| c.attempted - c.ok).sum(),
            incomplete: configs.iter().map(|c| c.incomplete).sum(),
            insecure,
            configs,
            warnings,
            comparisons: answer.comparisons,
            metric: metric.name,
            metric_reason: metric.reason,
            verdicts: answer.verdicts,
            left_out: answer.left_out,
            dimensions: dimensions.iter().map(|name| name.to_string()).collect(),
            factorials: answer.factorials,
            gains: answer.gains,
            knees,
            names: config_names,
            phase_change,
        })
    }
}

/// The warnings about the whole run: certificate checks off, wire events timed late, a run
/// cut short.
fn run_warnings(run: &tlslab_store::RunRow, insecure: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    if insecure {
        warnings.push(
            "certificate verification was OFF (--insecure): cert_validation is not measured"
                .to_string(),
        );
    }
    if let Some(warning) = run.environment.as_ref().and_then(wire_clock_warning) {
        warnings.push(warning);
    }
    if !run.complete {
        warnings.push(format!(
            "the run is incomplete ({}); the samples taken are kept",
            run.reason.clone().unwrap_or_else(|| "stopped".into())
        ));
    }
    warnings
}

/// What the summary of every Config of one run shares: which columns it reads, and what the
/// run says about its machine and its stopping rule.
struct Reading<'a> {
    /// Every value of the successful samples the summary reads, in one pass over each
    /// Config's samples (one column at a time above `one_pass_limit`): byte counts, status,
    /// then the phases (and the summary's metric when it is not among them). One Config's
    /// values at a time: they are the summary's memory.
    names: Vec<&'a str>,
    /// The summary's metric, when it is not among the timed phases and so read last.
    extra: Option<&'a str>,
    /// The summary's metric.
    metric: &'a str,
    one_pass_limit: usize,
    /// The client machine's cores, which CPU use is a share of.
    cores: f64,
    /// The `--until-ci` target, which each Config's stopping is told against.
    until_ci: Option<f64>,
}

/// A Config's successful samples, read in one pass or a column at a time.
struct Values {
    client_hello_bytes: Option<i64>,
    server_flight_bytes: Option<i64>,
    statuses: Vec<(i64, i64)>,
    client_certificate_bytes: Option<i64>,
    handshake_ms: Option<Distribution>,
    ttfb_ms: Option<Distribution>,
    phase_medians_ms: BTreeMap<String, f64>,
    /// The summary's metric, in ns.
    metric_nanos: Vec<f64>,
}

/// A Config's attempts by outcome: how many, how many succeeded, and each error class with
/// its count, an example and (where the example tells) a diagnosis.
struct Attempts {
    attempted: i64,
    ok: i64,
    errors: BTreeMap<String, i64>,
    incomplete: i64,
    error_examples: BTreeMap<String, String>,
    diagnoses: BTreeMap<String, String>,
}

impl Attempts {
    fn of(store: &Store, config: &ConfigRow) -> Result<Attempts, StoreError> {
        let counts = store.outcome_counts(config.id)?;
        let count_of = |name: &str| {
            counts
                .iter()
                .find(|(class, _)| class == name)
                .map_or(0, |(_, count)| *count)
        };
        let ok = count_of("ok");
        // A capture's incomplete handshakes are stored under their own class: neither
        // attempts that succeeded nor failures.
        let incomplete_class = ErrorClass::Incomplete.as_str();
        let incomplete = count_of(incomplete_class);
        let attempted: i64 = counts.iter().map(|(_, count)| count).sum::<i64>() - incomplete;
        let errors: BTreeMap<String, i64> = counts
            .into_iter()
            .filter(|(class, _)| class != "ok" && class != incomplete_class)
            .collect();
        let mut error_examples = BTreeMap::new();
        let mut diagnoses = BTreeMap::new();
        if incomplete > 0 {
            if let Some(example) = store.error_example(config.id, incomplete_class)? {
                error_examples.insert(incomplete_class.to_string(), example);
            }
        }
        for class in errors.keys() {
            if let Some(example) = store.error_example(config.id, class)? {
                if let Some(diagnosis) = crate::diagnosis::diagnose(class, &example, config) {
                    diagnoses.insert(class.clone(), diagnosis);
                }
                error_examples.insert(class.clone(), example);
            }
        }
        Ok(Attempts {
            attempted,
            ok,
            errors,
            incomplete,
            error_examples,
            diagnoses,
        })
    }
}

impl<'a> Reading<'a> {
    fn new(run: &tlslab_store::RunRow, metric: &'a str, one_pass_limit: usize) -> Reading<'a> {
        let timed: Vec<&str> = ["handshake", "ttfb"]
            .into_iter()
            .chain(Phase::PARTS.iter().map(|phase| phase.name()))
            .collect();
        let extra = (!timed.contains(&metric)).then_some(metric);
        let names: Vec<&str> = tlslab_store::MEASURED_COUNTS
            .into_iter()
            .chain(timed.iter().copied())
            .chain(extra)
            .collect();
        Reading {
            names,
            extra,
            metric,
            one_pass_limit,
            cores: run
                .environment
                .as_ref()
                .map_or(1, |environment| environment.cores)
                .max(1) as f64,
            until_ci: tlslab_core::Experiment::from_toml(&run.experiment)
                .ok()
                .and_then(|experiment| experiment.until_ci),
        }
    }

    /// The values of `config`'s successful samples, in the order of `names`.
    fn values(&self, store: &Store, config: &ConfigRow, ok: i64) -> Result<Values, StoreError> {
        let in_one_pass = usize::try_from(ok).is_ok_and(|ok| ok <= self.one_pass_limit);
        let (mut timings, mut extra_values) = if in_one_pass {
            let mut values = store.phases_values(config.id, &self.names)?;
            let extra_values = self.extra.and_then(|_| values.pop());
            let values: Box<dyn Iterator<Item = Result<Vec<f64>, StoreError>>> =
                Box::new(values.into_iter().map(Ok));
            (values, extra_values)
        } else {
            let id = config.id;
            let values: Box<dyn Iterator<Item = Result<Vec<f64>, StoreError>>> = Box::new(
                self.names
                    .iter()
                    .map(move |name| store.phase_values(id, name)),
            );
            (values, None)
        };
        let mut next = || timings.next().unwrap_or_else(|| Ok(Vec::new()));
        let client_hello_bytes = Store::median_count(&next()?);
        let server_flight_bytes = Store::median_count(&next()?);
        let statuses = Store::count_statuses(&next()?);
        let client_certificate_bytes = Store::median_count(&next()?);
        // The metric's values, from the column of its name.
        let mut metric_nanos = None;
        let mut keep = |name: &str, values: &Vec<f64>| {
            if name == self.metric {
                metric_nanos = Some(values.clone());
            }
        };
        let handshake = next()?;
        keep("handshake", &handshake);
        let ttfb = next()?;
        keep("ttfb", &ttfb);
        let mut phase_medians_ms = BTreeMap::new();
        for phase in Phase::PARTS {
            let values = next()?;
            keep(phase.name(), &values);
            if let Some(summary) = Distribution::of_nanos(&values) {
                phase_medians_ms.insert(phase.name().to_string(), summary.median);
            }
        }
        if self.extra.is_some() && extra_values.is_none() {
            extra_values = Some(next()?);
        }
        Ok(Values {
            client_hello_bytes,
            server_flight_bytes,
            statuses,
            client_certificate_bytes,
            handshake_ms: Distribution::of_nanos(&handshake),
            ttfb_ms: Distribution::of_nanos(&ttfb),
            phase_medians_ms,
            metric_nanos: metric_nanos.or(extra_values).unwrap_or_default(),
        })
    }

    /// `config`'s summary and its values of the metric (ms); what a careful reader must
    /// know about it goes to `warnings`.
    fn config(
        &self,
        store: &Store,
        config: &ConfigRow,
        warnings: &mut Vec<String>,
    ) -> Result<(ConfigSummary, Vec<f64>), StoreError> {
        let attempts = Attempts::of(store, config)?;
        let ok = attempts.ok;
        let values = self.values(store, config, ok)?;
        let metric_ms = Distribution::of_nanos(&values.metric_nanos);
        let response_flights = match config.transport.as_str() {
            "quic" => crate::flights::FlightsSummary::of(&store.response_flights(config.id)?),
            _ => None,
        };
        let totals = store.trial_totals(config.id)?;
        let mutual_tls = mutual_tls(&values, &totals);
        let per_attempt = |nanos: i64| {
            (totals.attempted > 0).then(|| nanos as f64 / totals.attempted as f64 / 1e6)
        };
        let seconds = totals.duration_ns as f64 / 1e9;
        let client_cpu_utilization =
            (seconds > 0.0).then(|| totals.client_cpu_ns as f64 / 1e9 / seconds / self.cores);
        if client_cpu_utilization.is_some_and(|u| u > 0.9) {
            warnings.push(format!(
                "'{}': the client used {:.0}% of all cores; the load generator, not the server, may limit these numbers",
                config.label,
                client_cpu_utilization.unwrap_or(0.0) * 100.0
            ));
        }
        let bottleneck = match (totals.server_cpu_ns, client_cpu_utilization) {
            (Some(server_ns), Some(client)) if seconds > 0.0 => {
                let server = server_ns as f64 / 1e9 / seconds / self.cores;
                let per_handshake = per_attempt(server_ns).unwrap_or(0.0);
                let bottleneck = bottleneck(store, config, &values, server, client, per_handshake)?;
                if bottleneck.mostly_queue() {
                    warnings.push(queue_warning(&config.label, &bottleneck));
                }
                Some(bottleneck)
            }
            _ => None,
        };
        let (resumed, full) = if config.resume {
            let (resumed, full) = store.resumption_counts(config.id)?;
            (Some(resumed), Some(full))
        } else {
            (None, None)
        };
        let network = network(config, &values, bottleneck.as_ref(), warnings);
        let early_data = if config.early_data_bytes > 0 {
            Some(store.early_data_counts(config.id)?)
        } else {
            None
        };
        warnings.extend(early_data.and_then(|counts| early_data_warning(config, counts)));
        let ech = if config.ech == "off" {
            Vec::new()
        } else {
            store.ech_counts(config.id)?
        };
        warnings.extend(ech_warning(config, &ech, ok));
        let open_loop = crate::schedule::OpenLoop::of(store, config)?;
        warnings.extend(
            open_loop
                .as_ref()
                .and_then(|open| open.warning(&config.label, config.concurrency)),
        );
        warnings.extend(trust_warnings(store, config, ok, seconds, resumed, full)?);
        if config.http != "none" {
            warnings.extend(status_warning(config, &values.statuses));
        }
        let replay = store.replay(config.id)?;
        if let Some(replay) = replay.as_ref().filter(|r| r.accepted > 0) {
            warnings.push(format!(
                "'{}': the server accepted {} of {} replayed 0-RTT flights",
                config.label, replay.accepted, replay.sent
            ));
        }
        let summary = ConfigSummary {
            label: config.label.clone(),
            attempted: attempts.attempted,
            ok,
            errors: attempts.errors,
            incomplete: attempts.incomplete,
            error_examples: attempts.error_examples,
            diagnoses: attempts.diagnoses,
            handshake_ms: values.handshake_ms,
            metric_ms,
            transport: config.transport.clone(),
            ttfb_ms: values.ttfb_ms,
            client_hello_bytes: values.client_hello_bytes,
            server_flight_bytes: values.server_flight_bytes,
            response_flights,
            early_data,
            replay,
            ech,
            phase_medians_ms: values.phase_medians_ms,
            handshakes_per_second: (seconds > 0.0).then(|| totals.attempted as f64 / seconds),
            server_cpu_per_handshake_ms: totals.server_cpu_ns.and_then(per_attempt),
            client_cpu_per_handshake_ms: per_attempt(totals.client_cpu_ns),
            client_cpu_utilization,
            mutual_tls,
            bottleneck,
            server_peak_rss_bytes: totals.server_peak_rss_bytes,
            client_peak_rss_bytes: totals.client_peak_rss_bytes,
            resumed,
            full,
            insecure: config.insecure,
            trust: config.target.as_ref().and(config.trust.clone()),
            stopping: self.until_ci.map(|target| stopping(config, target)),
            network,
            open_loop,
        };
        let metric_ms_values = values
            .metric_nanos
            .into_iter()
            .map(|nanos| nanos / 1e6)
            .collect();
        Ok((summary, metric_ms_values))
    }
}

/// Which side limited `config`'s rate, from the server's and the client's CPU use (shares
/// of the cores), the server's CPU per handshake (ms) and what the emulated link carried.
fn bottleneck(
    store: &Store,
    config: &ConfigRow,
    values: &Values,
    server: f64,
    client: f64,
    server_per_handshake_ms: f64,
) -> Result<crate::bottleneck::Bottleneck, StoreError> {
    Ok(crate::bottleneck::diagnose(
        server,
        client,
        values.handshake_ms.map(|h| h.median),
        values.phase_medians_ms.get("server_response").copied(),
        config.rtt_ns.map_or(0.0, |rtt| rtt as f64 / 1e6),
        server_per_handshake_ms,
        link_of(&store.link_trials(config.id)?, config.rate_bps),
    ))
}

/// Mutual TLS step by step, when the client signed, sent a certificate, or the lab server
/// checked one.
fn mutual_tls(values: &Values, totals: &tlslab_store::TrialTotals) -> Option<MutualTls> {
    let client_signing_ms = values.phase_medians_ms.get("client_signing").copied();
    let server_checks = totals.client_verifications.filter(|&count| count > 0);
    (client_signing_ms.is_some()
        || values.client_certificate_bytes.is_some()
        || server_checks.is_some())
    .then(|| MutualTls {
        client_signing_ms,
        server_check_ms: server_checks.and_then(|count| {
            totals
                .client_verify_ns
                .map(|nanos| nanos as f64 / count as f64 / 1e6)
        }),
        server_checks,
        certificate_bytes: values.client_certificate_bytes,
    })
}

/// The emulated network of a Config that ran on one, with the physics check of its median
/// against the round trips it must take (a failed check goes to `warnings`).
fn network(
    config: &ConfigRow,
    values: &Values,
    bottleneck: Option<&crate::bottleneck::Bottleneck>,
    warnings: &mut Vec<String>,
) -> Option<NetworkSummary> {
    let (Some(rtt_ns), Some(emulator)) = (config.rtt_ns, &config.emulator) else {
        return None;
    };
    let rtt_ms = rtt_ns as f64 / 1e6;
    let connect_delayed = emulator != "relay" && !config.is_quic();
    let trips = round_trips(&config.version, config.resume, connect_delayed);
    let floor_ms = rtt_ms * f64::from(trips);
    let measured_rtt_ms = values.phase_medians_ms.get("tcp_connect").copied();
    let physics = values
        .handshake_ms
        .filter(|_| rtt_ns > 0)
        .and_then(|h| physics(&config.label, h.median, floor_ms, trips))
        .or_else(|| {
            let connect = measured_rtt_ms.filter(|_| emulator != "relay")?;
            // A full link's queue delays the SYN too: said by the diagnosis.
            let link_queue = bottleneck.is_some_and(|b| b.limit == "link");
            connect_check(&config.label, connect, rtt_ms, link_queue)
        });
    if let Some(problem) = &physics {
        warnings.push(format!("physics check: {problem}"));
    }
    Some(NetworkSummary {
        emulator: emulator.clone(),
        rtt_ms,
        loss: config.loss.unwrap_or(0.0),
        round_trips: trips,
        floor_ms,
        measured_rtt_ms,
        physics,
    })
}

/// The warning when the server refused early data on more than 1% of 0-RTT attempts.
fn early_data_warning(config: &ConfigRow, (accepted, refused): (i64, i64)) -> Option<String> {
    let sent = accepted + refused;
    (sent > 0 && (accepted as f64) < 0.99 * sent as f64).then(|| {
        format!(
            "'{}': the server accepted early data on only {accepted} of {sent} 0-RTT attempts",
            config.label
        )
    })
}

/// The warning when ECH was asked for and a successful handshake did without it: the real
/// server name was visible.
fn ech_warning(config: &ConfigRow, ech: &[(String, i64)], ok: i64) -> Option<String> {
    let not_accepted: i64 = ech
        .iter()
        .filter(|(status, _)| status != "accepted")
        .map(|(_, count)| count)
        .sum();
    (config.ech == "on" && not_accepted > 0).then(|| {
        format!(
            "'{}': ECH was not accepted on {not_accepted} of {ok} successful handshakes (the real server name was visible)",
            config.label
        )
    })
}

/// With `--until-ci`: whether `config` stopped before its planned handshakes, and why.
fn stopping(config: &ConfigRow, target: f64) -> String {
    match config.stopped() {
        Some((round, samples, width)) => format!(
            "stopped early after round {round} ({samples} handshakes): the median's 95% CI is ±{:.2}%, within ±{:.2}%",
            width * 100.0,
            target * 100.0
        ),
        None => format!(
            "ran every planned handshake: the median's 95% CI never came within ±{:.2}%",
            target * 100.0
        ),
    }
}

/// A Config whose measured part is shorter than this gives a rate that any stall of the
/// machine (a scheduler tick, a page fault, a timer's slack) moves by percents.
const SHORTEST_TRUSTED_NS: f64 = 100e6;
/// With fewer successful attempts than this, the tail percentiles are the largest one or two
/// values, and the median's interval spans much of the sample.
const SMALLEST_TRUSTED: i64 = 30;
/// Measured requests that opened their connection, as a share of a keep-alive Config's
/// requests, above which its figures are said to mix in handshakes.
const OPENED_SHARE_TRUSTED: f64 = 0.01;

/// Why a Config's figures are not to be trusted as they stand: measured too briefly, on too
/// few successes, or (keep-alive, resumption) with attempts in the measured part that did
/// what the Config says they do not (open a connection, a full handshake).
fn trust_warnings(
    store: &Store,
    config: &ConfigRow,
    ok: i64,
    seconds: f64,
    resumed: Option<i64>,
    full: Option<i64>,
) -> Result<Vec<String>, StoreError> {
    let mut warnings = Vec::new();
    let label = &config.label;
    if ok > 0 && seconds > 0.0 && seconds * 1e9 < SHORTEST_TRUSTED_NS {
        warnings.push(format!(
            "'{label}': measured for only {:.1} ms: a rate over so short a time moves with any \
             stall of the machine; measure for at least 100 ms (raise -n, or --duration 1s)",
            seconds * 1e3
        ));
    }
    if ok > 0 && ok < SMALLEST_TRUSTED {
        warnings.push(format!(
            "'{label}': only {ok} successful attempts: its p99 is about its largest value and \
             its median's interval is wide; raise -n to at least {SMALLEST_TRUSTED}"
        ));
    }
    if config.keep_alive {
        let (requests, opened) = store.request_counts(config.id)?;
        if requests > 0 && opened as f64 > OPENED_SHARE_TRUSTED * requests as f64 {
            warnings.push(format!(
                "'{label}': {opened} of {requests} measured keep-alive requests ({:.0}%) opened \
                 their connection, so its times include those handshakes (the server closed \
                 kept connections, or --warmup was below -c)",
                100.0 * opened as f64 / requests as f64
            ));
        }
    }
    if let (Some(resumed), Some(full)) = (resumed, full) {
        let all = resumed + full;
        if all > 0 && full as f64 > OPENED_SHARE_TRUSTED * all as f64 {
            warnings.push(format!(
                "'{label}': {full} of {all} measured handshakes ({:.0}%) were full, not resumed, \
                 so its times include them (the server declined the session, or --warmup was \
                 below -c)",
                100.0 * full as f64 / all as f64
            ));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_timed_by_the_user_space_clock_is_warned_of() {
        let mut environment: tlslab_core::Environment = serde_json::from_value(serde_json::json!({
            "tool_version": "0", "commit": "0", "rustls_version": "0", "crypto_provider": "0",
            "cpu_model": "0", "cores": 2, "kernel": "0", "hostname": "0", "network": "loopback"
        }))
        .unwrap();
        // Stored before the clock was recorded: nothing to say.
        assert_eq!(wire_clock_warning(&environment), None);
        environment.wire_clock = Some("kernel socket timestamps (SO_TIMESTAMPING)".into());
        assert_eq!(wire_clock_warning(&environment), None);
        environment.wire_clock =
            Some("user-space clock after each call returned (SO_TIMESTAMPING refused)".into());
        let warning = wire_clock_warning(&environment).unwrap();
        assert!(
            warning.contains("timed by the user-space clock"),
            "{warning}"
        );
    }
}
