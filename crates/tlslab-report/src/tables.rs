//! The report's tables as plain rows of text, so the HTML and the Markdown renderers show the
//! same numbers with the same precision.

use tlslab_core::Phase;

use crate::comparison::p_value;
use crate::data::ReportData;
use crate::text::{millis, thousands};

/// A table: a heading row and text cells. Columns after the first are numbers unless listed
/// in `text_columns`, and renderers right-align them.
pub struct Table {
    /// The heading row.
    pub headers: Vec<String>,
    /// The rows, as text.
    pub rows: Vec<Vec<String>>,
    /// The columns of text, which renderers align left; the others are numbers.
    pub text_columns: Vec<usize>,
}

impl Table {
    fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            text_columns: vec![0],
        }
    }

    /// Whether `column` holds numbers, which renderers align right.
    pub fn is_numeric(&self, column: usize) -> bool {
        !self.text_columns.contains(&column)
    }
}

fn optional(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map(format).unwrap_or_else(|| "–".into())
}

/// One row per Config: outcomes, the statistics of the summary's metric (which its headers
/// name), rate and CPU.
pub fn summary(data: &ReportData) -> Table {
    let metric = &data.summary.metric;
    let median = format!("{metric} median ms");
    let p90 = format!("{metric} p90 ms");
    let p99 = format!("{metric} p99 ms");
    let mean = format!("{metric} mean ms (95% CI)");
    let mut table = Table::new(&[
        "config",
        "attempted",
        "ok",
        "failed",
        median.as_str(),
        p90.as_str(),
        p99.as_str(),
        mean.as_str(),
        "handshakes/s",
        "server CPU ms/handshake",
        "client CPU ms/handshake",
        "limit (queueing)",
    ]);
    let resuming = data.summary.configs.iter().any(|c| c.resumed.is_some());
    if resuming {
        table.headers.push("resumed / full".into());
    }
    for config in &data.summary.configs {
        let handshake = config.metric_ms;
        let mut row = vec![
            config.label.clone(),
            thousands(config.attempted as f64),
            thousands(config.ok as f64),
            thousands((config.attempted - config.ok) as f64),
            optional(handshake.map(|h| h.median), millis),
            optional(handshake.map(|h| h.p90), millis),
            optional(handshake.map(|h| h.p99), millis),
            handshake.map_or("–".into(), |h| h.mean_with_interval(millis)),
            optional(config.handshakes_per_second, thousands),
            optional(config.server_cpu_per_handshake_ms, millis),
            optional(config.client_cpu_per_handshake_ms, millis),
            config.bottleneck.as_ref().map_or("–".into(), |bottleneck| {
                match bottleneck.queueing_share {
                    Some(share) => format!("{} ({:.0}%)", bottleneck.limit, share * 100.0),
                    None => bottleneck.limit.clone(),
                }
            }),
        ];
        if resuming {
            row.push(match (config.resumed, config.full) {
                (Some(resumed), Some(full)) => format!("{resumed} / {full}"),
                _ => "–".into(),
            });
        }
        table.rows.push(row);
    }
    table
}

/// One row per Config against the baseline, naming the dimensions in which it differs from
/// it, or `None` with a single Config.
pub fn comparisons(data: &ReportData) -> Option<Table> {
    let set = data.summary.comparisons.as_ref()?;
    let mut table = Table::new(&[
        "config",
        "differs in",
        "verdict",
        "median ms",
        "difference ms (95% CI)",
        "ratio (95% CI)",
        "Mann-Whitney p",
        "Holm p",
        "rank-biserial r",
        "Hedges' g",
    ]);
    table.text_columns.extend([1, 2]);
    for compared in &set.comparisons {
        let comparison = &compared.comparison;
        table.rows.push(vec![
            comparison.other.clone(),
            crate::dimensions::joined(&compared.dimensions),
            format!("{} {}", set.metric, comparison.verdict),
            millis(comparison.median_other),
            format!(
                "{:+.4} ({:+.4} to {:+.4})",
                comparison.diff_median, comparison.diff_median_ci[0], comparison.diff_median_ci[1]
            ),
            format!(
                "{:.3} ({:.3}–{:.3})",
                comparison.ratio_median,
                comparison.ratio_median_ci[0],
                comparison.ratio_median_ci[1]
            ),
            p_value(comparison.mann_whitney_p)
                .trim_start_matches("= ")
                .to_string(),
            p_value(comparison.mann_whitney_p_holm)
                .trim_start_matches("= ")
                .to_string(),
            format!("{:+.3}", comparison.rank_biserial),
            format!("{:+.3}", comparison.hedges_g),
        ]);
    }
    Some(table)
}

/// With Configs that cross two or more dimensions: one row per dimension's value against its
/// baseline, every other dimension held fixed (the summary's answer lines), or `None`.
pub fn factorial(data: &ReportData) -> Option<Table> {
    let factorials = &data.summary.factorials;
    if factorials.is_empty() {
        return None;
    }
    let alpha = tlslab_stats::CompareOptions::default().alpha;
    let mut table = Table::new(&[
        "dimension",
        "value vs baseline",
        "verdict",
        "median ratio (95% CI over strata)",
        "strata",
        "p",
        "depends on",
    ]);
    table.text_columns.extend([1, 2, 6]);
    for answer in crate::factorial::answers(factorials, alpha) {
        table.rows.push(vec![
            crate::dimensions::joined(&answer.dimensions),
            format!("{} vs {}", answer.other, answer.baseline),
            format!("{} in {}", answer.verdict, answer.metric),
            format!(
                "{:.3} ({:.3}–{:.3})",
                answer.ratio, answer.ratio_ci[0], answer.ratio_ci[1]
            ),
            answer.strata.unwrap_or(1).to_string(),
            answer.p_value.map_or_else(
                || "–".into(),
                |p| p_value(p).trim_start_matches("= ").to_string(),
            ),
            if answer.depends_on.is_empty() {
                "–".into()
            } else {
                answer.depends_on.join(", ")
            },
        ]);
    }
    Some(table)
}

/// The run's command line as a shell reads it, so it can be pasted: the store keeps it as a
/// JSON array of arguments; each is quoted for a POSIX shell where it needs it (`shlex`). A
/// store whose field is not such an array shows the field as it is.
pub fn command_line(stored: &str) -> String {
    serde_json::from_str::<Vec<String>>(stored)
        .ok()
        .and_then(|arguments| shlex::try_join(arguments.iter().map(String::as_str)).ok())
        .unwrap_or_else(|| stored.to_string())
}

/// What the by-dimension table holds, in a sentence, naming its metric.
pub fn factorial_note(data: &ReportData) -> String {
    format!(
        "The {} ({}) of each value of a dimension against its baseline with every other dimension held fixed: the median of the per-stratum ratios of medians with a bootstrap interval over strata, van Elteren's stratified test (with one stratum, that stratum's own interval and Mann-Whitney test), and the dimensions the effect depends on (Kruskal-Wallis across their levels). Dimensions that change together in every Config (each suite with its own certificate) are named together, as in suite+cert: no contrast tells their effects apart.{}",
        data.summary.metric,
        crate::metric::describe(&data.summary.metric),
        if data.summary.left_out.is_empty() {
            String::new()
        } else {
            format!(" Left out: {}.", data.summary.left_out.join("; "))
        }
    )
}

/// What the report's summary table holds, in a sentence: its metric, and why.
pub fn summary_note(data: &ReportData) -> String {
    format!(
        "Times are the {} ({}) of successful measured attempts (warm-up excluded): the metric of every comparison below, because {} (tlslab report --metric picks another).",
        data.summary.metric,
        crate::metric::describe(&data.summary.metric),
        data.summary.metric_reason
    )
}

/// A sentence on the comparisons: the baseline and the Kruskal-Wallis test across all Configs.
pub fn comparison_note(data: &ReportData) -> Option<String> {
    let set = data.summary.comparisons.as_ref()?;
    let first = &set.comparisons.first()?.comparison;
    let mut note = format!(
        "The {} ({}) of each config against the baseline '{}' (n = {}, median {} ms), naming every dimension in which it differs from the baseline. A difference is called only when the 95% BCa bootstrap interval of the difference of medians excludes 0 and the Holm-adjusted Mann-Whitney p is below 0.05.",
        set.metric,
        crate::metric::describe(&set.metric),
        set.baseline,
        first.n_baseline,
        millis(first.median_baseline)
    );
    if let Some(kruskal) = &set.kruskal_wallis {
        note.push_str(&format!(
            " Kruskal-Wallis across all {} configs: H = {:.2}, df = {}, p {}.",
            kruskal.df + 1,
            kruskal.h,
            kruskal.df,
            p_value(kruskal.p_value)
        ));
    }
    Some(note)
}

/// Median of each additive phase per Config, in milliseconds.
pub fn phases(data: &ReportData) -> Table {
    let mut headers = vec!["config"];
    headers.extend(Phase::PARTS.iter().map(|phase| phase.name()));
    headers.push("handshake");
    let mut table = Table::new(&headers);
    for config in &data.summary.configs {
        let mut row = vec![config.label.clone()];
        row.extend(
            Phase::PARTS
                .iter()
                .map(|phase| optional(config.phase_medians_ms.get(phase.name()).copied(), millis)),
        );
        row.push(optional(config.handshake_ms.map(|h| h.median), millis));
        table.rows.push(row);
    }
    table
}

/// A distributed run's agents: each one's shard, machine, what it stored, its rate over its
/// measured attempts, its CPU per attempt, its clock against the database server's and how
/// late it started; `None` for a run of one process.
pub fn agents(data: &ReportData) -> Option<Table> {
    let mut table = Table::new(&[
        "agent",
        "shard",
        "host (address)",
        "trials",
        "attempts",
        "failed",
        "rate/s",
        "CPU ms/attempt",
        "clock offset ms",
        "late ms",
        "ended",
    ]);
    table.text_columns.extend([1, 2, 10]);
    for agent in &data.agents {
        let host = match &agent.address {
            Some(address) => format!("{} ({address})", agent.host),
            None => agent.host.clone(),
        };
        let rate = (agent.span_ns > 0).then(|| agent.samples as f64 / (agent.span_ns as f64 / 1e9));
        let cpu = (agent.samples > 0).then(|| agent.cpu_ns as f64 / agent.samples as f64 / 1e6);
        table.rows.push(vec![
            agent.agent.to_string(),
            agent.shard.clone().unwrap_or_default(),
            host,
            thousands(agent.trials as f64),
            thousands(agent.samples as f64),
            thousands(agent.errors as f64),
            optional(rate, |rate| thousands(rate.round())),
            optional(cpu, millis),
            agent.clock.map_or_else(
                || "–".into(),
                |clock| {
                    format!(
                        "{:+.3} ± {:.3}",
                        clock.offset_ns as f64 / 1e6,
                        clock.uncertainty_ns as f64 / 1e6
                    )
                },
            ),
            agent
                .late_ns
                .map_or_else(|| "–".into(), |late| format!("{:.1}", late as f64 / 1e6)),
            match (&agent.reason, agent.complete, agent.finished) {
                (Some(reason), _, _) => reason.clone(),
                (None, true, _) => "complete".into(),
                (None, false, true) => "incomplete".into(),
                (None, false, false) => "running".into(),
            },
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// The time to first byte of each Config that sent a request: from the attempt's start to
/// the response's first byte (the user's wait, handshake included); `None` when none did.
pub fn time_to_first_byte(data: &ReportData) -> Option<Table> {
    let mut table = Table::new(&[
        "config",
        "n",
        "median ms",
        "p90 ms",
        "p99 ms",
        "mean ms (95% CI)",
        "handshake median ms",
    ]);
    for config in &data.summary.configs {
        let Some(ttfb) = &config.ttfb_ms else {
            continue;
        };
        table.rows.push(vec![
            config.label.clone(),
            thousands(ttfb.n as f64),
            millis(ttfb.median),
            millis(ttfb.p90),
            millis(ttfb.p99),
            ttfb.mean_with_interval(millis),
            optional(config.handshake_ms.map(|h| h.median), millis),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// What the report says above [`gains`], naming the metric.
pub fn gains_note(data: &ReportData) -> String {
    format!(
        "Each session technique against the full handshake that differs from it in the technique's dimensions alone: the share of the baseline's median {} ({}) it saves, with a 95% bootstrap interval and the Mann-Whitney p of the two samples.",
        data.summary.metric,
        crate::metric::describe(&data.summary.metric)
    )
}

/// Each session technique's gain over its full-handshake baseline (resumption, 0-RTT, the
/// certificate cache), as the summary says it; `None` when the run has none.
pub fn gains(data: &ReportData) -> Option<Table> {
    let mut table = Table::new(&[
        "technique",
        "config",
        "baseline",
        "of",
        "baseline median ms",
        "median ms",
        "gain (95% CI)",
        "Mann-Whitney p",
    ]);
    table.text_columns.extend([1, 2, 3]);
    for gain in &data.summary.gains {
        table.rows.push(vec![
            gain.technique.clone(),
            gain.label.clone(),
            gain.baseline.clone(),
            gain.metric.clone(),
            millis(gain.baseline_median_ms),
            millis(gain.median_ms),
            format!(
                "{:.1}% ({:.1}% to {:.1}%)",
                gain.gain * 100.0,
                gain.gain_ci[0] * 100.0,
                gain.gain_ci[1] * 100.0
            ),
            p_value(gain.p).trim_start_matches("= ").to_string(),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// One row per Config and error class, with an example of what happened; `None` when every
/// attempt succeeded.
pub fn errors(data: &ReportData) -> Option<Table> {
    let mut table = Table::new(&["config", "error class", "attempts", "example"]);
    table.text_columns.extend([1, 3]);
    for config in &data.summary.configs {
        for (class, count) in &config.errors {
            table.rows.push(vec![
                config.label.clone(),
                class.clone(),
                thousands(*count as f64),
                config
                    .error_examples
                    .get(class)
                    .cloned()
                    .unwrap_or_default(),
            ]);
        }
    }
    (!table.rows.is_empty()).then_some(table)
}

/// The machine and software the run measured on, from the stored environment.
pub fn environment(data: &ReportData) -> Table {
    let mut table = Table::new(&["", ""]);
    table.text_columns = vec![0, 1];
    if let Some(environment) = &data.run.environment {
        for (name, value) in environment.entries() {
            table.rows.push(vec![name.replace('_', " "), value]);
        }
    }
    table
}

/// One line about the run: when, how long, how many attempts, complete or not.
pub fn run_line(data: &ReportData) -> String {
    let summary = &data.summary;
    let mut line = format!(
        "Started {} · {} configs · {} measured attempts, {} failed",
        summary.started_at,
        summary.configs.len(),
        thousands(summary.attempted as f64),
        thousands(summary.errors as f64)
    );
    if let Some(seconds) = summary.duration_s {
        line.push_str(&format!(" · {seconds:.1} s"));
    }
    if let Some(seed) = summary.seed {
        line.push_str(&format!(" · seed {seed}"));
    }
    line.push_str(if summary.complete {
        " · complete"
    } else {
        " · INCOMPLETE"
    });
    line
}

/// Requests under load, one row per Config: ab's figures and the costs (`tlslab load`).
pub fn load(data: &ReportData) -> Option<Table> {
    let load = data.load.as_ref()?;
    let mut table = Table::new(&[
        "config",
        "complete",
        "failed",
        "requests/s",
        "time per request ms",
        "connect mean ms",
        "waiting mean ms",
        "total median ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "connections",
        "TLS handshake share",
        "client CPU ms/request",
        "server CPU ms/request",
    ]);
    for config in &load.configs {
        let percentiles = config.percentiles;
        table.rows.push(vec![
            config.label.clone(),
            thousands(config.complete as f64),
            thousands(config.failed as f64),
            optional(config.requests_per_second, thousands),
            optional(config.time_per_request_ms, millis),
            optional(config.connect.map(|t| t.mean), millis),
            optional(config.waiting.map(|t| t.mean), millis),
            optional(config.total.map(|t| t.median), millis),
            optional(percentiles.map(|p| p.p99), millis),
            optional(percentiles.map(|p| p.p999), millis),
            optional(percentiles.map(|p| p.max), millis),
            thousands(config.connections as f64),
            optional(config.handshake_share, |share| {
                format!("{:.1}%", share * 100.0)
            }),
            optional(config.client_cpu_per_request_ms, millis),
            optional(config.server_cpu_per_request_ms, millis),
        ]);
    }
    Some(table)
}

/// HTTPS against plain HTTP, per pair of Configs equal in everything else.
pub fn scheme_increases(data: &ReportData) -> Option<Table> {
    let load = data.load.as_ref()?;
    let mut table = Table::new(&[
        "HTTPS config",
        "HTTP config",
        "median request time increase",
        "95% CI",
        "Mann-Whitney p",
        "time taken",
        "requests/s",
    ]);
    table.text_columns.extend([1, 3]);
    for increase in &load.increases {
        let percent = |value: f64| format!("{value:+.1}%");
        table.rows.push(vec![
            increase.https.clone(),
            increase.http.clone(),
            percent(increase.median_increase_percent),
            format!(
                "{} to {}",
                percent(increase.median_increase_ci[0]),
                percent(increase.median_increase_ci[1])
            ),
            p_value(increase.p),
            optional(increase.time_taken_increase_percent, percent),
            optional(increase.requests_per_second_change_percent, percent),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

/// Open loops: the schedule asked and kept, and the latency from each intended start.
pub fn open_loops(data: &ReportData) -> Option<Table> {
    let mut table = Table::new(&[
        "config",
        "asked /s",
        "achieved /s",
        "started over 1 ms late",
        "latency p50 ms",
        "p90 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "schedule",
    ]);
    table.text_columns.push(9);
    for config in &data.summary.configs {
        let Some(open) = &config.open_loop else {
            continue;
        };
        let latency = open.latency_ms;
        table.rows.push(vec![
            config.label.clone(),
            thousands(open.asked_per_second),
            optional(open.achieved_per_second, thousands),
            format!("{:.1}%", open.late_share * 100.0),
            optional(latency.map(|l| l.p50), millis),
            optional(latency.map(|l| l.p90), millis),
            optional(latency.map(|l| l.p99), millis),
            optional(latency.map(|l| l.p999), millis),
            optional(latency.map(|l| l.max), millis),
            if open.schedule_kept {
                "kept"
            } else {
                "not kept"
            }
            .to_string(),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

#[cfg(test)]
mod command_line_tests {
    use super::command_line;

    #[test]
    fn the_command_line_is_quoted_for_a_shell() {
        assert_eq!(
            command_line(r#"["tlslab","run","--threshold","p99<5ms","--label","a b's"]"#),
            r#"tlslab run --threshold 'p99<5ms' --label "a b's""#
        );
        assert_eq!(command_line("not json"), "not json");
    }
}
