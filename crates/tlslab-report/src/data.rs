//! What a report shows, read from the store once: the run summary plus, per Config, the
//! sorted handshake times that the charts draw.

use tlslab_stats::{median_ci, quantile};
use tlslab_store::{ConfigRow, RunRow, Store, StoreError};

use crate::summary::RunSummary;

/// Resamples for the median's bootstrap interval in the charts; the interval's ends move by
/// well under 1% of the median between seeds at this count.
const MEDIAN_CI_RESAMPLES: usize = 2_000;

/// One Config's data for the charts.
#[derive(Debug, Clone)]
pub struct ConfigData {
    /// The Config's full label.
    pub label: String,
    /// The label without the words every Config shares (see [`ReportData::common_label`]).
    pub short_label: String,
    /// The dimensions other than concurrency, shortened the same way: Configs that differ only
    /// in concurrency share this, and become one line in the concurrency chart.
    pub series_by_concurrency: String,
    /// The same for the RTT chart: every dimension but the emulated RTT.
    pub series_by_rtt: String,
    /// `None` for a capture's Configs.
    pub concurrency: Option<f64>,
    /// The emulated round-trip time, when the Config ran on an emulated link.
    pub rtt_ms: Option<f64>,
    /// Successful measured handshakes, milliseconds, ascending.
    pub handshake_ms: Vec<f64>,
    /// 95% bootstrap interval of the median handshake.
    pub median_ci: Option<(f64, f64)>,
    /// Each round's median handshake, warm-up rounds included (the latency-per-round chart).
    pub rounds: Vec<tlslab_store::RoundMedian>,
}

impl ConfigData {
    /// The `q` quantile (type 7) of the successful handshakes, in ms; `None` without any.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        (!self.handshake_ms.is_empty()).then(|| quantile(&self.handshake_ms, q))
    }
}

/// Everything a report needs.
#[derive(Debug, Clone)]
pub struct ReportData {
    /// The run's summary, which the tables print.
    pub summary: RunSummary,
    /// The run as stored: its command line, experiment and environment, for the report's end.
    pub run: RunRow,
    /// Parallel to `summary.configs`.
    pub configs: Vec<ConfigData>,
    /// Label words every Config shares, said once in chart captions instead of on every row.
    pub common_label: String,
    /// Requests under load, when every Config sent one (`tlslab load`, `run --http`).
    pub load: Option<crate::load::LoadSummary>,
    /// With Configs that cross two or more dimensions: the median against one, a line per
    /// level of another (the interaction chart).
    pub interaction: Option<Interaction>,
    /// The scans the store also holds (`tlslab scan --out`), oldest first.
    pub scans: Vec<tlslab_store::ScanRow>,
    /// A distributed run's agents, each with what it did (none for a run of one process).
    pub agents: Vec<tlslab_store::postgres::agents::AgentRow>,
}

/// The median handshake against the levels of one dimension (`x`), one line per level of
/// another (`line`); Configs that differ in further dimensions are pooled by the median of
/// their medians.
#[derive(Debug, Clone, PartialEq)]
pub struct Interaction {
    /// The dimension along the x axis.
    pub x: String,
    /// The dimension each line is a level of.
    pub line: String,
    /// The levels of `x`, in order.
    pub x_levels: Vec<String>,
    /// Per level of `line`: the median (ms) at each of `x_levels`, where Configs measured it.
    pub lines: Vec<(String, Vec<Option<f64>>)>,
}

impl Interaction {
    fn of(rows: &[ConfigRow], configs: &[ConfigData], dimensions: &[String]) -> Option<Self> {
        if dimensions.len() < 2 {
            return None;
        }
        let values = |name: &str| -> Vec<String> {
            crate::levels::distinct_ordered(
                rows.iter()
                    .map(|row| crate::dimensions::dimension_value(name, row).unwrap_or_default()),
            )
        };
        // The dimension with the most levels along x (a sweep reads best there), the next
        // as lines.
        let mut by_levels: Vec<(&String, Vec<String>)> =
            dimensions.iter().map(|name| (name, values(name))).collect();
        by_levels.sort_by_key(|(_, levels)| std::cmp::Reverse(levels.len()));
        let (x, x_levels) = by_levels[0].clone();
        let (line, line_levels) = by_levels[1].clone();
        let lines = line_levels
            .iter()
            .map(|line_level| {
                let medians = x_levels
                    .iter()
                    .map(|x_level| {
                        let mut medians: Vec<f64> = rows
                            .iter()
                            .zip(configs)
                            .filter(|(row, _)| {
                                crate::dimensions::dimension_value(x, row).as_ref() == Some(x_level)
                                    && crate::dimensions::dimension_value(line, row).as_ref()
                                        == Some(line_level)
                            })
                            .filter_map(|(_, config)| config.quantile(0.5))
                            .collect();
                        medians.sort_by(f64::total_cmp);
                        (!medians.is_empty()).then(|| quantile(&medians, 0.5))
                    })
                    .collect();
                (line_level.clone(), medians)
            })
            .collect();
        Some(Interaction {
            x: x.clone(),
            line: line.clone(),
            x_levels,
            lines,
        })
    }
}

impl ReportData {
    /// Everything a report of `store` needs, on the metric the Configs' question calls for.
    pub fn from_store(store: &Store) -> Result<ReportData, StoreError> {
        ReportData::from_store_on(store, None)
    }

    /// [`ReportData::from_store`] with the summary's tables and verdicts on the metric
    /// `metric` names (`--metric`), or on the one the Configs' question calls for.
    pub fn from_store_on(store: &Store, metric: Option<&str>) -> Result<ReportData, StoreError> {
        let summary = RunSummary::from_store_on(store, metric)?;
        let run = store.run()?;
        let rows = store.configs()?;
        let labels: Vec<String> = rows.iter().map(|row| row.label.clone()).collect();
        let (common_label, short_labels) = distinguishing_words(&labels);
        // Series names: every dimension but the one on the x axis, in label order.
        let series_names = |leave_out: &str| -> Vec<String> {
            let names: Vec<String> = rows
                .iter()
                .map(|row| {
                    let mut words = vec![format!("tls{}", row.version), row.suite.clone()];
                    words.push(row.group.clone());
                    words.extend(row.cert.clone());
                    words.extend(row.chain.map(|chain| format!("chain{chain}")));
                    words.extend(row.target.clone());
                    if row.resume {
                        words.push("resume".into());
                    }
                    if let (Some(concurrency), true) = (row.concurrency, leave_out != "concurrency")
                    {
                        words.push(format!("c{concurrency}"));
                    }
                    if let (Some(rtt), true) = (row.rtt_ns, leave_out != "rtt") {
                        words.push(format!("rtt{}ms", rtt as f64 / 1e6));
                    }
                    if let Some(loss) = row.loss.filter(|loss| *loss > 0.0) {
                        words.push(format!("loss{}%", loss * 100.0));
                    }
                    words.join(" ")
                })
                .collect();
            distinguishing_words(&names).1
        };
        let by_concurrency = series_names("concurrency");
        let by_rtt = series_names("rtt");
        let mut configs = Vec::with_capacity(rows.len());
        for (((row, short_label), series_by_concurrency), series_by_rtt) in rows
            .iter()
            .zip(short_labels)
            .zip(by_concurrency)
            .zip(by_rtt)
        {
            let mut handshake_ms: Vec<f64> = store
                .phase_values(row.id, "handshake")?
                .into_iter()
                .map(|nanos| nanos / 1e6)
                .collect();
            handshake_ms.sort_by(f64::total_cmp);
            let median_ci = (handshake_ms.len() >= 2)
                .then(|| median_ci(&handshake_ms, 0.95, MEDIAN_CI_RESAMPLES, row.id as u64));
            configs.push(ConfigData {
                label: row.label.clone(),
                short_label,
                series_by_concurrency,
                series_by_rtt,
                concurrency: row.concurrency.map(|concurrency| concurrency as f64),
                rtt_ms: row.rtt_ns.map(|rtt| rtt as f64 / 1e6),
                handshake_ms,
                median_ci,
                rounds: store.round_medians(row.id)?,
            });
        }
        let load = if rows.iter().all(|row| row.http != "none") {
            Some(crate::load::LoadSummary::from_store(store)?)
        } else {
            None
        };
        let interaction = Interaction::of(&rows, &configs, &summary.dimensions);
        Ok(ReportData {
            summary,
            run,
            configs,
            common_label,
            load,
            interaction,
            scans: store.scans()?,
            agents: store.agents()?,
        })
    }

    /// Whether concurrency takes more than one value, so latency against it can be drawn.
    pub fn concurrency_varies(&self) -> bool {
        varies(self.configs.iter().map(|c| c.concurrency))
    }

    /// Whether the emulated RTT takes more than one value.
    pub fn rtt_varies(&self) -> bool {
        varies(self.configs.iter().map(|c| c.rtt_ms))
    }
}

fn varies(values: impl Iterator<Item = Option<f64>>) -> bool {
    let mut values: Vec<f64> = values.flatten().collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values.len() > 1
}

/// Splits space-separated names into the words all of them share (in the first name's order)
/// and each name without those words. A name left empty keeps its full text.
pub fn distinguishing_words(names: &[String]) -> (String, Vec<String>) {
    if names.len() < 2 {
        return (String::new(), names.to_vec());
    }
    let common: Vec<&str> = names[0]
        .split_whitespace()
        .filter(|word| {
            names
                .iter()
                .all(|name| name.split_whitespace().any(|other| other == *word))
        })
        .collect();
    let short = names
        .iter()
        .map(|name| {
            let rest: Vec<&str> = name
                .split_whitespace()
                .filter(|word| !common.contains(word))
                .collect();
            if rest.is_empty() {
                name.clone()
            } else {
                rest.join(" ")
            }
        })
        .collect();
    (common.join(" "), short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_words_are_said_once() {
        let names: Vec<String> = [
            "tls1.2 aes128gcm x25519 c1",
            "tls1.3 aes128gcm x25519 c1",
            "tls1.3 aes128gcm x25519 c4",
        ]
        .map(String::from)
        .to_vec();
        let (common, short) = distinguishing_words(&names);
        assert_eq!(common, "aes128gcm x25519");
        assert_eq!(short, ["tls1.2 c1", "tls1.3 c1", "tls1.3 c4"]);
        let same = vec!["a b".to_string(), "a b".to_string()];
        assert_eq!(distinguishing_words(&same).1, same);
        assert_eq!(
            distinguishing_words(&names[..1]),
            (String::new(), names[..1].to_vec())
        );
    }
}
