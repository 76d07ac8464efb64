//! The numbers a run summary shows, computed from the store.

use std::collections::BTreeMap;

use serde::Serialize;
use tlslab_core::Phase;
use tlslab_stats::{CompareOptions, ComparisonSet, Summary};
use tlslab_store::{ConfigRow, ReplayRow, Store, StoreError};

use crate::comparison::compare_groups;

/// Statistics of one metric in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Distribution {
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    /// The 99.9th percentile (type 7, as the others): the tail a busy service sees every
    /// thousand handshakes.
    pub p999: f64,
    pub min: f64,
    pub max: f64,
    /// 95% confidence interval of the mean (Student t).
    pub mean_ci: [f64; 2],
}

impl Distribution {
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
    pub emulator: String,
    pub rtt_ms: f64,
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
    pub technique: String,
    pub label: String,
    pub baseline: String,
    /// `ttfb` when the Configs send a request (what a user waits for), else `handshake`.
    pub metric: String,
    pub median_ms: f64,
    pub baseline_median_ms: f64,
    /// The share of the baseline's median saved: 1 − median / baseline median.
    pub gain: f64,
    /// 95% bootstrap interval of the gain.
    pub gain_ci: [f64; 2],
    /// Mann-Whitney p of the two samples.
    pub p: f64,
}

/// What a Config does beyond a full handshake, or `None` for a full handshake.
fn technique(config: &ConfigRow) -> Option<String> {
    if config.early_data_bytes > 0 {
        Some(format!("0-RTT ({})", config.resumption))
    } else if config.resumption != "off" {
        Some(format!("resumption ({})", config.resumption))
    } else if config.cert_cache {
        Some("certificate cache".to_string())
    } else {
        None
    }
}

/// Everything but the session techniques: Configs equal in this are a technique and its
/// baseline.
fn setting(config: &ConfigRow) -> impl PartialEq + '_ {
    (
        (&config.version, &config.suite, &config.group, &config.cert),
        (config.chain, &config.target, config.concurrency),
        (
            config.rtt_ns,
            config.loss.map(f64::to_bits),
            &config.emulator,
        ),
        (&config.transport, &config.http),
        (
            config.hello_retry,
            config.mtls,
            &config.client_backend,
            &config.server_backend,
            &config.ech,
        ),
    )
}

/// Pairs every technique Config with its full-handshake baseline and measures the gain.
fn gains(store: &Store, configs: &[ConfigRow]) -> Result<Vec<Gain>, StoreError> {
    let mut gains = Vec::new();
    for config in configs {
        let Some(name) = technique(config) else {
            continue;
        };
        let Some(baseline) = configs
            .iter()
            .find(|other| technique(other).is_none() && setting(other) == setting(config))
        else {
            continue;
        };
        let metric = if config.http != "none" {
            "ttfb"
        } else {
            "handshake"
        };
        let millis = |id| -> Result<Vec<f64>, StoreError> {
            Ok(store
                .phase_values(id, metric)?
                .into_iter()
                .map(|nanos| nanos / 1e6)
                .collect())
        };
        let (values, baseline_values) = (millis(config.id)?, millis(baseline.id)?);
        let Ok(comparison) = tlslab_stats::compare(
            &baseline.label,
            &baseline_values,
            &config.label,
            &values,
            &CompareOptions::default(),
        ) else {
            continue;
        };
        gains.push(Gain {
            technique: name,
            label: config.label.clone(),
            baseline: baseline.label.clone(),
            metric: metric.to_string(),
            median_ms: comparison.median_other,
            baseline_median_ms: comparison.median_baseline,
            gain: 1.0 - comparison.ratio_median,
            gain_ci: [
                1.0 - comparison.ratio_median_ci[1],
                1.0 - comparison.ratio_median_ci[0],
            ],
            p: comparison.mann_whitney_p,
        });
    }
    Ok(gains)
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

/// One Config's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSummary {
    pub label: String,
    /// Measured attempts (warm-up excluded).
    pub attempted: i64,
    pub ok: i64,
    /// Failed attempts per error class.
    pub errors: BTreeMap<String, i64>,
    /// One description per error class, to say what happened.
    pub error_examples: BTreeMap<String, String>,
    /// The likely cause and fix per error class, in the server's terms, where the example
    /// tells.
    pub diagnoses: BTreeMap<String, String>,
    /// The full handshake (start → handshake_done) of successful attempts, in ms.
    pub handshake_ms: Option<Distribution>,
    /// tcp or quic.
    pub transport: String,
    /// Time to the first byte of the response (start → first_byte), when there was a request.
    pub ttfb_ms: Option<Distribution>,
    /// Median bytes of the client's first flight and of the server's first flight.
    pub client_hello_bytes: Option<i64>,
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
    pub server_peak_rss_bytes: Option<i64>,
    pub client_peak_rss_bytes: i64,
    /// Successful handshakes that resumed, and those that offered nothing or were refused.
    pub resumed: Option<i64>,
    pub full: Option<i64>,
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
    pub store: String,
    pub started_at: String,
    pub complete: bool,
    pub reason: Option<String>,
    /// The plan's seed; `None` for a capture.
    pub seed: Option<u64>,
    pub duration_s: Option<f64>,
    pub attempted: i64,
    pub errors: i64,
    pub insecure: bool,
    pub configs: Vec<ConfigSummary>,
    /// Things a careful reader must know (a saturated client, certificate checks off).
    pub warnings: Vec<String>,
    /// Each Config's handshake against the first one's, when there are several.
    pub comparisons: Option<ComparisonSet>,
    /// The dimensions the Configs vary (by `compare --by` name; dimensions that change
    /// together are named once).
    pub dimensions: Vec<String>,
    /// With two or more `dimensions`: the effect of each with the others held fixed
    /// (`tlslab compare --by`), the answer a crossed matrix was built for. A dimension that no
    /// stratum holds two values of has no entry.
    pub factorials: Vec<crate::factorial::Factorial>,
    /// What the comparisons compare: `handshake`, or `total` (the request's whole time) when
    /// every Config sends a request (a load run, where kept connections shake no hands).
    pub comparison_metric: String,
    /// Session techniques against their full-handshake baselines.
    pub gains: Vec<Gain>,
    /// Where latency breaks across each sweep of arrival rates.
    pub knees: Vec<crate::schedule::Knee>,
}

/// Above this many successful samples, a Config's values are read one column at a time:
/// one pass over them all holds 16 values of 8 bytes per sample (64 MB here), one column at
/// a time one (and its sorted copy), so that the summary's memory stays well below 200 MB
/// on captures and runs of millions of handshakes, at the cost of a pass per column.
const ONE_PASS_LIMIT: usize = 500_000;

impl RunSummary {
    pub fn from_store(store: &Store) -> Result<RunSummary, StoreError> {
        RunSummary::from_store_in_passes(store, ONE_PASS_LIMIT)
    }

    /// [`RunSummary::from_store`], reading the values of a Config with more than
    /// `one_pass_limit` successful samples one column at a time (tests compare both ways).
    #[doc(hidden)]
    pub fn from_store_in_passes(
        store: &Store,
        one_pass_limit: usize,
    ) -> Result<RunSummary, StoreError> {
        let run = store.run()?;
        let until_ci = tlslab_core::Experiment::from_toml(&run.experiment)
            .ok()
            .and_then(|experiment| experiment.until_ci);
        let cores = run
            .environment
            .as_ref()
            .map_or(1, |environment| environment.cores)
            .max(1) as f64;
        let mut configs = Vec::new();
        let mut warnings = Vec::new();
        let rows = store.configs()?;
        let comparison_metric = if rows.iter().all(|row| row.http != "none") {
            "total"
        } else {
            "handshake"
        };
        // Every value of the successful samples the summary reads, in one pass over each
        // Config's samples (one column at a time above `one_pass_limit`): byte counts,
        // status, then the phases (and the comparison's metric when it is not among them).
        // One Config's values at a time: they are the summary's memory.
        let names: Vec<&str> = tlslab_store::MEASURED_COUNTS
            .into_iter()
            .chain(["handshake", "ttfb"])
            .chain(Phase::PARTS.iter().map(|phase| phase.name()))
            .chain((comparison_metric == "total").then_some("total"))
            .collect();
        // Each Config's values of the comparison's metric (ms), kept from the pass below for
        // the comparison and the factorial contrasts, which would read them again.
        let mut metric_values: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        for config in rows.iter().cloned() {
            let counts = store.outcome_counts(config.id)?;
            let attempted: i64 = counts.iter().map(|(_, count)| count).sum();
            let ok = counts
                .iter()
                .find(|(class, _)| class == "ok")
                .map_or(0, |(_, count)| *count);
            let errors: BTreeMap<String, i64> = counts
                .into_iter()
                .filter(|(class, _)| class != "ok")
                .collect();
            let mut error_examples = BTreeMap::new();
            let mut diagnoses = BTreeMap::new();
            for class in errors.keys() {
                if let Some(example) = store.error_example(config.id, class)? {
                    if let Some(diagnosis) = crate::diagnosis::diagnose(class, &example, &config) {
                        diagnoses.insert(class.clone(), diagnosis);
                    }
                    error_examples.insert(class.clone(), example);
                }
            }
            let in_one_pass = usize::try_from(ok).is_ok_and(|ok| ok <= one_pass_limit);
            let (mut timings, mut total) = if in_one_pass {
                let mut values = store.phases_values(config.id, &names)?;
                let total = match comparison_metric {
                    "total" => values.pop(),
                    _ => None,
                };
                let values: Box<dyn Iterator<Item = Result<Vec<f64>, StoreError>>> =
                    Box::new(values.into_iter().map(Ok));
                (values, total)
            } else {
                let id = config.id;
                let values: Box<dyn Iterator<Item = Result<Vec<f64>, StoreError>>> =
                    Box::new(names.iter().map(move |name| store.phase_values(id, name)));
                (values, None)
            };
            let mut next = || timings.next().unwrap_or_else(|| Ok(Vec::new()));
            let client_hello_bytes = Store::median_count(&next()?);
            let server_flight_bytes = Store::median_count(&next()?);
            let statuses = Store::count_statuses(&next()?);
            let client_certificate_bytes = Store::median_count(&next()?);
            let handshake = next()?;
            let handshake_ms = Distribution::of_nanos(&handshake);
            let ttfb_ms = Distribution::of_nanos(&next()?);
            let mut phase_medians_ms = BTreeMap::new();
            for phase in Phase::PARTS {
                let values = next()?;
                if let Some(summary) = Distribution::of_nanos(&values) {
                    phase_medians_ms.insert(phase.name().to_string(), summary.median);
                }
            }
            if comparison_metric == "total" && total.is_none() {
                total = Some(next()?);
            }
            metric_values.insert(
                config.id,
                total
                    .unwrap_or(handshake)
                    .into_iter()
                    .map(|nanos| nanos / 1e6)
                    .collect(),
            );
            let response_flights = match config.transport.as_str() {
                "quic" => crate::flights::FlightsSummary::of(&store.response_flights(config.id)?),
                _ => None,
            };
            let totals = store.trial_totals(config.id)?;
            let client_signing_ms = phase_medians_ms.get("client_signing").copied();
            let server_checks = totals.client_verifications.filter(|&count| count > 0);
            let mutual_tls = (client_signing_ms.is_some()
                || client_certificate_bytes.is_some()
                || server_checks.is_some())
            .then(|| MutualTls {
                client_signing_ms,
                server_check_ms: server_checks.and_then(|count| {
                    totals
                        .client_verify_ns
                        .map(|nanos| nanos as f64 / count as f64 / 1e6)
                }),
                server_checks,
                certificate_bytes: client_certificate_bytes,
            });
            let per_attempt = |nanos: i64| {
                (totals.attempted > 0).then(|| nanos as f64 / totals.attempted as f64 / 1e6)
            };
            let seconds = totals.duration_ns as f64 / 1e9;
            let client_cpu_utilization =
                (seconds > 0.0).then(|| totals.client_cpu_ns as f64 / 1e9 / seconds / cores);
            if client_cpu_utilization.is_some_and(|u| u > 0.9) {
                warnings.push(format!(
                    "'{}': the client used {:.0}% of all cores; the load generator, not the server, may limit these numbers",
                    config.label,
                    client_cpu_utilization.unwrap_or(0.0) * 100.0
                ));
            }
            let bottleneck = match (totals.server_cpu_ns, client_cpu_utilization) {
                (Some(server_ns), Some(client)) if seconds > 0.0 => {
                    let bottleneck = crate::bottleneck::diagnose(
                        server_ns as f64 / 1e9 / seconds / cores,
                        client,
                        handshake_ms.map(|h| h.median),
                        phase_medians_ms.get("server_response").copied(),
                        config.rtt_ns.map_or(0.0, |rtt| rtt as f64 / 1e6),
                        per_attempt(server_ns).unwrap_or(0.0),
                        link_of(&store.link_trials(config.id)?, config.rate_bps),
                    );
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
            let network = match (config.rtt_ns, &config.emulator) {
                (Some(rtt_ns), Some(emulator)) => {
                    let rtt_ms = rtt_ns as f64 / 1e6;
                    let connect_delayed = emulator != "relay" && !config.is_quic();
                    let trips = round_trips(&config.version, config.resume, connect_delayed);
                    let floor_ms = rtt_ms * f64::from(trips);
                    let measured_rtt_ms = phase_medians_ms.get("tcp_connect").copied();
                    let physics = handshake_ms
                        .filter(|_| rtt_ns > 0)
                        .and_then(|h| physics(&config.label, h.median, floor_ms, trips))
                        .or_else(|| {
                            let connect = measured_rtt_ms.filter(|_| emulator != "relay")?;
                            // A full link's queue delays the SYN too: said by the diagnosis.
                            let link_queue = bottleneck.as_ref().is_some_and(|b| b.limit == "link");
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
                _ => None,
            };
            let early_data = if config.early_data_bytes > 0 {
                Some(store.early_data_counts(config.id)?)
            } else {
                None
            };
            if let Some((accepted, refused)) = early_data {
                let sent = accepted + refused;
                if sent > 0 && (accepted as f64) < 0.99 * sent as f64 {
                    warnings.push(format!(
                        "'{}': the server accepted early data on only {accepted} of {sent} 0-RTT attempts",
                        config.label
                    ));
                }
            }
            let ech = if config.ech == "off" {
                Vec::new()
            } else {
                store.ech_counts(config.id)?
            };
            let not_accepted: i64 = ech
                .iter()
                .filter(|(status, _)| status != "accepted")
                .map(|(_, count)| count)
                .sum();
            if config.ech == "on" && not_accepted > 0 {
                warnings.push(format!(
                    "'{}': ECH was not accepted on {not_accepted} of {ok} successful handshakes (the real server name was visible)",
                    config.label
                ));
            }
            let open_loop = crate::schedule::OpenLoop::of(store, &config)?;
            if let Some(warning) = open_loop
                .as_ref()
                .and_then(|open| open.warning(&config.label, config.concurrency))
            {
                warnings.push(warning);
            }
            if config.http != "none" {
                if let Some(warning) = status_warning(&config, &statuses) {
                    warnings.push(warning);
                }
            }
            let replay = store.replay(config.id)?;
            if let Some(replay) = replay.filter(|r| r.accepted > 0) {
                warnings.push(format!(
                    "'{}': the server accepted {} of {} replayed 0-RTT flights",
                    config.label, replay.accepted, replay.sent
                ));
            }
            configs.push(ConfigSummary {
                label: config.label.clone(),
                attempted,
                ok,
                errors,
                error_examples,
                diagnoses,
                handshake_ms,
                transport: config.transport.clone(),
                ttfb_ms,
                client_hello_bytes,
                server_flight_bytes,
                response_flights,
                early_data,
                replay,
                ech,
                phase_medians_ms,
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
                stopping: until_ci.map(|target| match config.stopped() {
                    Some((round, samples, width)) => format!(
                        "stopped early after round {round} ({samples} handshakes): the median's 95% CI is ±{:.2}%, within ±{:.2}%",
                        width * 100.0,
                        target * 100.0
                    ),
                    None => format!(
                        "ran every planned handshake: the median's 95% CI never came within ±{:.2}%",
                        target * 100.0
                    ),
                }),
                network,
                open_loop,
            });
        }
        let insecure = configs.iter().any(|c| c.insecure);
        if insecure {
            warnings.push(
                "certificate verification was OFF (--insecure): cert_validation is not measured"
                    .to_string(),
            );
        }
        if !run.complete {
            warnings.push(format!(
                "the run is incomplete ({}); the samples taken are kept",
                run.reason.clone().unwrap_or_else(|| "stopped".into())
            ));
        }
        let open_loops: Vec<(&ConfigRow, &crate::schedule::OpenLoop)> = rows
            .iter()
            .zip(&configs)
            .filter_map(|(row, summary)| Some((row, summary.open_loop.as_ref()?)))
            .collect();
        let knees = crate::schedule::knees(&open_loops);
        let values = |config: &ConfigRow| -> Result<Vec<f64>, StoreError> {
            Ok(metric_values.get(&config.id).cloned().unwrap_or_default())
        };
        let comparisons = if configs.len() > 1 {
            let groups = rows
                .iter()
                .map(|row| Ok((row.label.clone(), values(row)?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            match compare_groups(groups, comparison_metric, &CompareOptions::default()) {
                Ok((set, left_out)) => {
                    if !left_out.is_empty() {
                        warnings.push(format!(
                            "left out of the comparison (fewer than 2 successful samples): {}",
                            left_out.join(", ")
                        ));
                    }
                    Some(set)
                }
                Err(error) => {
                    warnings.push(format!("no comparison between configs: {}", error.message));
                    None
                }
            }
        } else {
            None
        };
        let dimensions = crate::factorial::varied_dimensions(&rows);
        let factorials = if dimensions.len() >= 2 {
            dimensions
                .iter()
                .filter_map(|dimension| {
                    crate::factorial::factorial_of(
                        &rows,
                        dimension,
                        None,
                        comparison_metric,
                        &CompareOptions::default(),
                        &values,
                    )
                    .ok()
                })
                .collect()
        } else {
            Vec::new()
        };
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
            insecure,
            configs,
            warnings,
            comparisons,
            comparison_metric: comparison_metric.to_string(),
            dimensions: dimensions.iter().map(|name| name.to_string()).collect(),
            factorials,
            gains: gains(store, &rows)?,
            knees,
        })
    }
}
