//! Open loops: whether a Config's schedule was kept, its latency from each intended start,
//! and, across the steps of a rate sweep, the rate at which latency breaks (the knee).

use std::collections::BTreeMap;

use serde::Serialize;
use tlslab_core::arrival::format_rate;
use tlslab_store::{ConfigRow, Store, StoreError};

/// An attempt that started this much after its intended time waited for an agent (or for
/// the load generator).
const LATE_NS: f64 = 1e6;

/// A schedule is kept when at least this share of its rate was achieved and at most
/// [`LATE_SHARE_KEPT`] of its attempts started late.
const ACHIEVED_KEPT: f64 = 0.99;
const LATE_SHARE_KEPT: f64 = 0.01;

/// The knee: the first rate whose median latency is more than this many times the lowest
/// rate's (and at least [`KNEE_MIN_GROWTH_MS`] more), or that started less than
/// [`KNEE_ACHIEVED`] of its rate. The median, not the p99: a queue that builds moves the
/// middle of the distribution, while a p99 of a few hundred samples moves with any hiccup.
const KNEE_FACTOR: f64 = 2.0;
const KNEE_MIN_GROWTH_MS: f64 = 1.0;
const KNEE_ACHIEVED: f64 = 0.95;

/// Percentiles of a set of times in milliseconds: exact (type-7 quantiles, as `tlslab run`'s
/// table computes them, and numpy), with the observed maximum. Every value is at hand when a
/// summary is read from a store, so a histogram's bucket edges (an HdrHistogram's three
/// significant digits put 50.223 ms at 50.233) would only make this line disagree with the
/// table of observed values beside it and with the exported samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    /// How many attempts.
    pub n: u64,
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile: where a knee shows first.
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
    /// The slowest attempt.
    pub max: f64,
}

impl Percentiles {
    /// Percentiles of nanosecond values; `None` without any (non-finite values, which no
    /// stored time is, are left out).
    pub fn of_nanos(values: &[f64]) -> Option<Percentiles> {
        let mut millis: Vec<f64> = values
            .iter()
            .filter(|value| value.is_finite())
            .map(|value| value / 1e6)
            .collect();
        millis.sort_unstable_by(f64::total_cmp);
        Percentiles::of_sorted_millis(&millis)
    }

    /// Percentiles of values in ms already sorted ascending; `None` without any.
    pub fn of_sorted_millis(sorted: &[f64]) -> Option<Percentiles> {
        let max = *sorted.last()?;
        let at = |q: f64| tlslab_stats::quantile(sorted, q);
        Some(Percentiles {
            n: sorted.len() as u64,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p999: at(0.999),
            max,
        })
    }
}

/// One open-loop Config: its schedule and the latency its users saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenLoop {
    /// Attempts per second the schedule asked for.
    pub asked_per_second: f64,
    /// Attempts per second that started, over the measured trials' start spans.
    pub achieved_per_second: Option<f64>,
    /// From each attempt's intended start to its end (successful attempts).
    pub latency_ms: Option<Percentiles>,
    /// Share of attempts that started more than 1 ms after their intended time.
    pub late_share: f64,
    /// The 99th percentile of how late attempts started, in ms.
    pub delay_p99_ms: Option<f64>,
    /// The rate was achieved and almost every attempt started on time.
    pub schedule_kept: bool,
}

impl OpenLoop {
    /// `config`'s open loop, or `None` for a closed loop.
    pub fn of(store: &Store, config: &ConfigRow) -> Result<Option<OpenLoop>, StoreError> {
        let Some(asked) = config.arrival_rate else {
            return Ok(None);
        };
        let spans = store.trial_start_spans(config.id)?;
        let (intervals, nanos) = spans
            .iter()
            .filter(|(count, _)| *count > 1)
            .fold((0i64, 0i64), |(intervals, nanos), (count, span)| {
                (intervals + count - 1, nanos + span)
            });
        let achieved = (nanos > 0).then(|| intervals as f64 / (nanos as f64 / 1e9));
        let delays = store.phase_values(config.id, "schedule_delay")?;
        let late = delays.iter().filter(|&&delay| delay > LATE_NS).count();
        let late_share = if delays.is_empty() {
            0.0
        } else {
            late as f64 / delays.len() as f64
        };
        let delay_p99_ms = Percentiles::of_nanos(&delays).map(|delay| delay.p99);
        let schedule_kept = achieved.is_none_or(|achieved| achieved >= ACHIEVED_KEPT * asked)
            && late_share <= LATE_SHARE_KEPT;
        Ok(Some(OpenLoop {
            asked_per_second: asked,
            achieved_per_second: achieved,
            latency_ms: Percentiles::of_nanos(&store.phase_values(config.id, "latency")?),
            late_share,
            delay_p99_ms,
            schedule_kept,
        }))
    }

    /// Whether fewer attempts started than the schedule asked for.
    fn fell_behind(&self, share: f64) -> bool {
        self.achieved_per_second
            .is_some_and(|achieved| achieved < share * self.asked_per_second)
    }

    /// What a reader must know when the schedule was not kept.
    pub fn warning(&self, label: &str, concurrency: Option<i64>) -> Option<String> {
        if self.schedule_kept {
            return None;
        }
        let agents = concurrency.map_or_else(|| "the".to_string(), |c| format!("all {c}"));
        let consequence = if self.fell_behind(ACHIEVED_KEPT) {
            "their latency counts the wait, but the load was lower than asked"
        } else {
            "their latency counts the wait"
        };
        Some(format!(
            "'{label}': the schedule of {} was not kept ({}; {:.0}% of attempts started more \
             than 1 ms late, p99 {} ms): at times {agents} agents were busy (or the load \
             generator was), so those attempts waited; {consequence}; raise -c for a fully \
             open loop",
            format_rate(self.asked_per_second),
            self.achieved_per_second.map_or_else(
                || "rate unknown".into(),
                |a| format!("{} achieved", format_rate(a))
            ),
            self.late_share * 100.0,
            self.delay_p99_ms
                .map_or_else(|| "–".into(), crate::text::millis),
        ))
    }
}

/// One step of a rate sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Step {
    /// The arrival rate the step asked for.
    pub asked_per_second: f64,
    /// The rate it started attempts at; below the asked rate, the client fell behind.
    pub achieved_per_second: Option<f64>,
    /// Latency from the intended start, in ms.
    pub median_ms: Option<f64>,
    /// The 99th percentile latency from the intended start, in ms: what the knee is found on.
    pub p99_ms: Option<f64>,
}

/// Where latency breaks across the steps of a rate sweep (Configs equal but for their rate).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Knee {
    /// The Configs' shared label, the rate word left out.
    pub family: String,
    /// Every step, by rate.
    pub steps: Vec<Step>,
    /// The last rate before the break and the first after it; `None` when none broke.
    pub between: Option<(f64, f64)>,
}

impl Knee {
    /// The knee in one line: the rates it lies between and the p99 on either side, or that
    /// none of the steps broke.
    pub fn describe(&self) -> String {
        let latency = |rate: f64| {
            let step = self.steps.iter().find(|step| step.asked_per_second == rate);
            let ms = |value: Option<f64>| value.map_or_else(|| "–".into(), crate::text::millis);
            format!(
                "median {} ms, p99 {} ms",
                ms(step.and_then(|step| step.median_ms)),
                ms(step.and_then(|step| step.p99_ms))
            )
        };
        match self.between {
            Some((before, after)) => format!(
                "'{}': latency breaks between {} ({}) and {} ({})",
                self.family,
                format_rate(before),
                latency(before),
                format_rate(after),
                latency(after)
            ),
            None => format!(
                "'{}': no knee up to {} (the median latency stayed within {KNEE_FACTOR}× of the \
                 lowest rate's, and every step started at least {:.0}% of its rate)",
                self.family,
                format_rate(self.steps.last().map_or(0.0, |step| step.asked_per_second)),
                KNEE_ACHIEVED * 100.0
            ),
        }
    }
}

/// The knees of every family of three or more open-loop Configs that differ only in rate.
pub fn knees(configs: &[(&ConfigRow, &OpenLoop)]) -> Vec<Knee> {
    let mut families: BTreeMap<String, Vec<Step>> = BTreeMap::new();
    for (config, open) in configs {
        let rate_word = format_rate(open.asked_per_second);
        let family: Vec<&str> = config
            .label
            .split(' ')
            .filter(|word| *word != rate_word)
            .collect();
        families.entry(family.join(" ")).or_default().push(Step {
            asked_per_second: open.asked_per_second,
            achieved_per_second: open.achieved_per_second,
            median_ms: open.latency_ms.map(|latency| latency.p50),
            p99_ms: open.latency_ms.map(|latency| latency.p99),
        });
    }
    families
        .into_iter()
        .filter(|(_, steps)| steps.len() >= 3)
        .map(|(family, mut steps)| {
            steps.sort_by(|a, b| a.asked_per_second.total_cmp(&b.asked_per_second));
            let baseline = steps[0].median_ms;
            let broke = |step: &Step| {
                step.achieved_per_second
                    .is_some_and(|achieved| achieved < KNEE_ACHIEVED * step.asked_per_second)
                    || matches!((baseline, step.median_ms), (Some(base), Some(median))
                        if median > KNEE_FACTOR * base && median - base >= KNEE_MIN_GROWTH_MS)
            };
            let between = steps
                .windows(2)
                .find(|pair| !broke(&pair[0]) && broke(&pair[1]))
                .map(|pair| (pair[0].asked_per_second, pair[1].asked_per_second));
            Knee {
                family,
                steps,
                between,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact_and_the_maximum_is_observed() {
        // 50.223 ms: an HdrHistogram of three significant digits reported 50.233.
        let mut values: Vec<f64> = (1..=999).map(|i| i as f64 * 1e6).collect();
        values.push(50_223_000.0 + 1_000e6);
        let percentiles = Percentiles::of_nanos(&values).unwrap();
        assert_eq!(percentiles.n, 1000);
        assert_eq!(percentiles.max, 1050.223);
        // numpy.percentile(values, [50, 90, 99], method='linear') / 1e6
        assert_eq!(percentiles.p50, 500.5);
        assert!((percentiles.p90 - 900.1).abs() < 1e-9, "{percentiles:?}");
        assert!((percentiles.p99 - 990.01).abs() < 1e-9, "{percentiles:?}");
        assert_eq!(Percentiles::of_nanos(&[]), None);
    }

    fn row(label: &str) -> ConfigRow {
        serde_json::from_value(serde_json::json!({
            "id": 1, "label": label, "version": "1.3", "suite": "aes128gcm", "group": "x25519",
            "cert": null, "chain": null, "target": null, "sni": null, "address": "",
            "concurrency": 4, "resume": false, "insecure": false, "description": "",
            "stopped_round": null, "stopped_samples": null, "stopped_half_width": null,
            "rtt_ns": null, "jitter_ns": null, "loss": null, "rate_bps": null,
            "emulator": null, "transport": "tcp", "http": "none", "resumption": "off",
            "early_data_bytes": 0, "cert_cache": false, "path": null,
            "client_backend": "rustls", "server_backend": "rustls", "ech": "off",
            "hello_retry": false, "trust": null, "arrival_rate": null,
            "keep_alive": false, "mtls": false, "scheme": "https", "path": null, "rate_bps": null
        }))
        .unwrap()
    }

    /// A step with this median latency, achieving its rate or only `achieved` of it.
    fn open(rate: f64, median: f64, achieved: f64) -> OpenLoop {
        OpenLoop {
            asked_per_second: rate,
            achieved_per_second: Some(rate * achieved),
            latency_ms: Some(Percentiles {
                n: 100,
                p50: median,
                p90: median * 2.0,
                p99: median * 3.0,
                p999: median * 3.0,
                max: median * 3.0,
            }),
            late_share: 0.0,
            delay_p99_ms: Some(0.0),
            schedule_kept: achieved >= ACHIEVED_KEPT,
        }
    }

    #[test]
    fn the_knee_is_where_the_median_more_than_doubles_or_the_rate_slips() {
        let rows: Vec<ConfigRow> = ["a c4 100/s", "a c4 200/s", "a c4 300/s", "a c4 400/s"]
            .iter()
            .map(|label| row(label))
            .collect();
        let loops = [
            open(100.0, 2.0, 1.0),
            open(200.0, 2.5, 1.0),
            open(300.0, 9.0, 1.0),
            open(400.0, 80.0, 0.5),
        ];
        let pairs: Vec<(&ConfigRow, &OpenLoop)> = rows.iter().zip(loops.iter()).collect();
        let found = knees(&pairs);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].family, "a c4");
        assert_eq!(found[0].between, Some((200.0, 300.0)));
        assert!(
            found[0]
                .describe()
                .contains("between 200/s (median 2.500 ms, p99 7.500 ms) and 300/s"),
            "{}",
            found[0].describe()
        );
        // A flat sweep has no knee, and two rates are not a sweep.
        let flat = [
            open(100.0, 2.0, 1.0),
            open(200.0, 2.1, 1.0),
            open(300.0, 2.2, 1.0),
        ];
        let pairs: Vec<(&ConfigRow, &OpenLoop)> = rows.iter().zip(flat.iter()).collect();
        assert_eq!(knees_between(&pairs), vec![None]);
        assert!(knees(&pairs[..2]).is_empty());
        // A step that cannot start its rate is past the knee whatever its latency.
        let behind = [
            open(100.0, 2.0, 1.0),
            open(200.0, 2.0, 1.0),
            open(300.0, 2.0, 0.8),
        ];
        let pairs: Vec<(&ConfigRow, &OpenLoop)> = rows.iter().zip(behind.iter()).collect();
        assert_eq!(knees_between(&pairs), vec![Some((200.0, 300.0))]);
    }

    fn knees_between(pairs: &[(&ConfigRow, &OpenLoop)]) -> Vec<Option<(f64, f64)>> {
        knees(pairs).into_iter().map(|knee| knee.between).collect()
    }
}
