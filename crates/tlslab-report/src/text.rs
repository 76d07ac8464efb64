//! The human-readable summary.

use std::fmt::Write;

use tlslab_core::Phase;

use crate::summary::{ConfigSummary, RunSummary};

/// Milliseconds with precision that suits their size.
pub(crate) fn millis(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.1}")
    } else if value >= 1.0 {
        format!("{value:.3}")
    } else {
        format!("{value:.4}")
    }
}

pub(crate) fn thousands(value: f64) -> String {
    let whole = value.round() as i64;
    let digits = whole.abs().to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if whole < 0 {
        format!("-{grouped}")
    } else {
        grouped
    }
}

/// How the summary is rendered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// Each Config's details (phases, limit, CPU, bytes, trust, network, ...) and every
    /// comparison's full statistics, besides the table.
    pub verbose: bool,
    /// The width to lay the table out for; `None` (a pipe) lays it out for 80 columns.
    pub width: Option<usize>,
}

/// The width the table is laid out for when nothing says otherwise: a classic terminal.
const DEFAULT_WIDTH: usize = 80;

/// The run summary: the words every Config shares, a table with one row per Config, the
/// warnings that matter, and the answer to the question the matrix asks (the factorial
/// comparison when Configs cross dimensions, each Config against the first otherwise).
/// `options.verbose` adds each Config's details and the full statistics. Text from outside
/// (labels, peers' errors, the store's path) is escaped for a terminal ([`crate::terminal`]).
pub fn render_text(summary: &RunSummary, options: &TextOptions) -> String {
    let summary = &crate::terminal::run_summary(summary);
    let labels: Vec<String> = summary
        .configs
        .iter()
        .map(|config| config.label.clone())
        .collect();
    // The summary's names (the user's labels whole), or, for a summary made without them,
    // the labels' own.
    let names = if summary.names.shown.len() == labels.len() {
        summary.names.clone()
    } else {
        crate::names::Names::of_labels(&labels, &Default::default())
    };
    // A lone Config shares all its words: its label goes above the table, its row unnamed.
    let (common, short) = match labels.as_slice() {
        [label] => (label.clone(), vec![String::new()]),
        _ => (
            names.common.clone(),
            labels.iter().map(|label| names.name(label)).collect(),
        ),
    };
    let mut out = String::new();
    if !common.is_empty() {
        let _ = writeln!(out, "all: {common}");
    }
    out.push_str(&render_table(
        summary,
        &short,
        options.width.unwrap_or(DEFAULT_WIDTH),
    ));
    out.push('\n');
    if options.verbose {
        out.push_str(&details_of_each(summary));
    } else {
        out.push_str(&notes_and_outcomes(summary, &labels, &short));
    }
    // Labels in warnings and comparisons are the names in the table too.
    let name = |label: &str| -> String { names.name(label) };
    out.push_str(&render_answer(summary, options.verbose, &name));
    out.push_str(&render_gains_and_knees(summary, &name));
    if options.verbose {
        for warning in &summary.warnings {
            let _ = writeln!(out, "warning: {warning}");
        }
    } else {
        for warning in brief_warnings(summary, &labels, &short) {
            let _ = writeln!(out, "warning: {warning}");
        }
    }
    let _ = writeln!(out, "{}", result_line(summary));
    out
}

/// Without `--verbose`: the notes under the table and what became of the attempts, each
/// Config by its name in the table (`short`), then a blank line when there was any.
fn notes_and_outcomes(summary: &RunSummary, labels: &[String], short: &[String]) -> String {
    // The table's names (none for a lone Config).
    let row_name = |label: &str| -> String {
        labels
            .iter()
            .position(|other| other == label)
            .and_then(|index| short.get(index).cloned())
            .unwrap_or_else(|| label.to_string())
    };
    let mut notes = render_notes(summary, short);
    for line in crate::outcomes::lines(&summary.configs, summary.phase_change.as_ref(), &row_name) {
        let _ = writeln!(notes, "{line}");
    }
    if !notes.is_empty() {
        notes.push('\n');
    }
    notes
}

/// The table's metric, what it measures and why it is the one, then the answer: the
/// verdicts (with `verbose`, the full statistics of each factorial or comparison) and what
/// the answer left out.
fn render_answer(summary: &RunSummary, verbose: bool, name: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    // Above the verdicts and the gains that use it too (and whenever it is not the
    // handshake a table is expected to show).
    if !summary.verdicts.is_empty() || !summary.gains.is_empty() || summary.metric != "handshake" {
        let _ = writeln!(
            out,
            "metric: {} ({}): {}",
            summary.metric,
            crate::metric::describe(&summary.metric),
            summary.metric_reason
        );
    }
    if verbose && !summary.factorials.is_empty() {
        for factorial in &summary.factorials {
            out.push_str(&crate::factorial::render_factorial(factorial));
        }
    } else if let (true, Some(comparisons)) = (verbose, &summary.comparisons) {
        out.push_str(&crate::comparison::render_named_comparisons(
            comparisons,
            "ms",
            name,
        ));
    } else {
        out.push_str(&crate::verdict::render_verdicts(&summary.verdicts, name));
    }
    for reason in &summary.left_out {
        // `render_factorial` has said its own values left out.
        let said = verbose
            && summary.factorials.iter().any(|factorial| {
                factorial
                    .left_out
                    .iter()
                    .any(|own| *reason == format!("{} {own}", factorial.name()))
            });
        if !said {
            let _ = writeln!(out, "  left out: {reason}");
        }
    }
    if !summary.verdicts.is_empty()
        || !summary.left_out.is_empty()
        || (summary.gains.is_empty() && summary.metric != "handshake")
    {
        out.push('\n');
    }
    out
}

/// The session techniques' gains and the knees of the rate sweeps, each followed by a
/// blank line.
fn render_gains_and_knees(summary: &RunSummary, name: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    if !summary.gains.is_empty() {
        out.push_str(&render_named_gains(&summary.gains, name));
        out.push('\n');
    }
    if !summary.knees.is_empty() {
        out.push_str("knee (p99 latency from intended start against arrival rate):\n");
        for knee in &summary.knees {
            let _ = writeln!(out, "  {}", knee.describe());
        }
        out.push('\n');
    }
    out
}

/// The warnings of a summary without `--verbose`: queueing said once for every Config it
/// concerns, the rest one line each, labels shortened to the words in the table (`short`).
fn brief_warnings(summary: &RunSummary, labels: &[String], short: &[String]) -> Vec<String> {
    let queued: Vec<String> = summary
        .configs
        .iter()
        .filter_map(|config| {
            let bottleneck = config.bottleneck.as_ref()?;
            bottleneck
                .mostly_queue()
                .then(|| crate::summary::queue_warning(&config.label, bottleneck))
        })
        .collect();
    let mut lines: Vec<String> = summary
        .warnings
        .iter()
        .filter(|warning| !queued.contains(warning))
        .map(|warning| shorten_labels(warning, labels, short))
        .collect();
    lines.extend(queue_lines(summary, short));
    lines
}

/// The summary's last line: how many attempts, how many failed, how long, the seed and the
/// results file. `run --quiet` prints this line alone.
pub fn result_line(summary: &RunSummary) -> String {
    let store = tlslab_core::terminal::escape(&summary.store);
    format!(
        "{} attempts, {} errors{}{}{} · results: {}",
        summary.attempted,
        summary.errors,
        match summary.incomplete {
            0 => String::new(),
            count => format!(" (and {count} incomplete: the capture shows only their start)"),
        },
        summary
            .duration_s
            .map_or(String::new(), |s| format!(" in {s:.1} s")),
        summary
            .seed
            .map_or(String::new(), |seed| format!(" · seed {seed}")),
        store
    )
}

/// What `run --quiet` says on stderr: the warnings, each with its Config's whole label (there
/// is no table to shorten them against), one `warning: ` line each.
pub fn quiet_warnings(summary: &RunSummary) -> Vec<String> {
    let summary = &crate::terminal::run_summary(summary);
    let labels: Vec<String> = summary
        .configs
        .iter()
        .map(|config| config.label.clone())
        .collect();
    brief_warnings(summary, &labels, &labels)
        .into_iter()
        .map(|warning| format!("warning: {warning}"))
        .collect()
}

/// `'full label'` as `'short label'` wherever a warning quotes a Config.
fn shorten_labels(text: &str, labels: &[String], short: &[String]) -> String {
    let mut text = text.to_string();
    // Longest first, so that no label is replaced inside a longer one that contains it.
    let mut pairs: Vec<(&String, &String)> = labels.iter().zip(short).collect();
    pairs.sort_by_key(|(label, _)| std::cmp::Reverse(label.len()));
    for (label, short) in pairs.into_iter().filter(|(_, short)| !short.is_empty()) {
        text = text.replace(&format!("'{label}'"), &format!("'{short}'"));
    }
    text
}

/// A duration given in ms, with three significant digits in the unit that suits it: µs
/// below 1 ms, ms below 1 s, s above.
pub fn duration(millis: f64) -> String {
    if !millis.is_finite() {
        return "–".into();
    }
    let three_digits = |value: f64| -> String {
        let magnitude = value.abs();
        if magnitude >= 100.0 {
            format!("{value:.0}")
        } else if magnitude >= 10.0 {
            format!("{value:.1}")
        } else {
            format!("{value:.2}")
        }
    };
    // Rounding can carry into the next unit (999.7 µs is 1.00 ms, not "1000 µs").
    let micros = millis * 1e3;
    if micros.abs() < 999.5 {
        return format!("{} µs", three_digits(micros));
    }
    if millis.abs() < 999.5 {
        return format!("{} ms", three_digits(millis));
    }
    format!("{} s", three_digits(millis / 1e3))
}

/// Attempts per second as `3,950/s` (one decimal below 10).
fn rate(per_second: f64) -> String {
    if per_second < 10.0 {
        format!("{per_second:.1}/s")
    } else {
        format!("{}/s", thousands(per_second))
    }
}

/// One row per Config: its distinguishing words, n, median, p90, p99, p99.9, max, rate and,
/// when any Config failed, its errors, all of the summary's metric (its header's first cell),
/// which the verdicts and the gains below compare. When the names make a row wider than
/// `width`, each name goes on a line of its own above its numbers.
fn render_table(summary: &RunSummary, names: &[String], width: usize) -> String {
    let errors = summary
        .configs
        .iter()
        .any(|config| config.attempted > config.ok);
    let mut header: Vec<String> = [
        summary.metric.as_str(),
        "n",
        "median",
        "p90",
        "p99",
        "p99.9",
        "max",
        "rate",
    ]
    .map(String::from)
    .to_vec();
    if errors {
        header.push("errors".into());
    }
    let mut rows = vec![header];
    for (config, name) in summary.configs.iter().zip(names) {
        let distribution = config.metric_ms;
        let mut row = vec![
            name.clone(),
            distribution.map_or(config.ok, |d| d.n as i64).to_string(),
        ];
        match distribution {
            Some(d) => row.extend([d.median, d.p90, d.p99, d.p999, d.max].map(duration)),
            None => row.extend(std::iter::repeat_n("–".to_string(), 5)),
        }
        // A rate of nothing but failures is no rate.
        row.push(
            config
                .handshakes_per_second
                .filter(|_| config.ok > 0)
                .map_or_else(|| "–".into(), rate),
        );
        if errors {
            row.push((config.attempted - config.ok).to_string());
        }
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numbers_width: usize = widths[1..].iter().map(|width| width + 2).sum();
    let names_apart = widths[0] + numbers_width > width;
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        if names_apart {
            // The first cell (the metric in the header, a Config's name in a row) on a line
            // of its own, the numbers indented below it.
            let _ = writeln!(out, "{}", row[0]);
        } else {
            let _ = write!(line, "{:<width$}", row[0], width = widths[0]);
        }
        for (cell, width) in row.iter().zip(&widths).skip(1) {
            let _ = write!(line, "  {cell:>width$}", width = *width);
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// What a careful reader must see without `--verbose`, one line each: why each error
/// class happened, and which side limited a Config's rate.
fn render_notes(summary: &RunSummary, names: &[String]) -> String {
    let mut out = String::new();
    for (config, name) in summary.configs.iter().zip(names) {
        for (class, count) in &config.errors {
            let why = config
                .diagnoses
                .get(class)
                .map(|diagnosis| format!("why: {diagnosis}"))
                .or_else(|| config.error_examples.get(class).cloned())
                .unwrap_or_default();
            let _ = writeln!(out, "failed: {}{count} {class}: {why}", quoted(name));
        }
    }
    for limit in ["server", "client", "link"] {
        // A queue is warned about on its own (`queue_lines`).
        let limited: Vec<(&crate::summary::ConfigSummary, &String)> = summary
            .configs
            .iter()
            .zip(names)
            .filter(|(config, _)| {
                config
                    .bottleneck
                    .as_ref()
                    .is_some_and(|b| b.limit == limit && !b.mostly_queue())
            })
            .collect();
        match limited.as_slice() {
            [] => {}
            [(config, name)] => {
                if let Some(bottleneck) = &config.bottleneck {
                    let _ = writeln!(out, "limit: {}{}", quoted(name), bottleneck.describe());
                }
            }
            several if limit == "link" => {
                let _ = writeln!(
                    out,
                    "limit: the emulated link in {} (its bandwidth queue full)",
                    which(
                        several.iter().map(|(_, name)| name.as_str()),
                        summary.configs.len()
                    )
                );
            }
            several => {
                let utilization = |config: &crate::summary::ConfigSummary| {
                    config.bottleneck.as_ref().map_or(0.0, |b| {
                        if limit == "server" {
                            b.server_utilization
                        } else {
                            b.client_utilization
                        }
                    })
                };
                let (low, high) = span(several.iter().map(|(config, _)| utilization(config)));
                let _ = writeln!(
                    out,
                    "limit: the {} in {} (its CPU {} of all cores)",
                    if limit == "server" {
                        "lab server"
                    } else {
                        "client"
                    },
                    which(
                        several.iter().map(|(_, name)| name.as_str()),
                        summary.configs.len()
                    ),
                    percent_span(low, high)
                );
            }
        }
    }
    out
}

/// The smallest and largest of some shares.
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), value| {
        (low.min(value), high.max(value))
    })
}

/// `41%`, or `36–46%` for a span.
fn percent_span(low: f64, high: f64) -> String {
    let (low, high) = ((low * 100.0).round(), (high * 100.0).round());
    if low == high {
        format!("{low:.0}%")
    } else {
        format!("{low:.0}–{high:.0}%")
    }
}

/// Which Configs a line is about: their names when a few, else how many of all.
fn which<'a>(names: impl ExactSizeIterator<Item = &'a str>, total: usize) -> String {
    let count = names.len();
    if count <= 3 {
        names
            .map(|name| format!("'{name}'"))
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        format!("{count} of {total} Configs")
    }
}

/// The warnings for the Configs whose latency mostly measured a queue: one line for all
/// those whose queue was in the same place (the lab server, the emulated link).
fn queue_lines(summary: &RunSummary, names: &[String]) -> Vec<String> {
    let queued: Vec<(&crate::bottleneck::Bottleneck, &String)> = summary
        .configs
        .iter()
        .zip(names)
        .filter_map(|(config, name)| {
            let bottleneck = config.bottleneck.as_ref()?;
            bottleneck.mostly_queue().then_some((bottleneck, name))
        })
        .collect();
    let mut places: Vec<&'static str> = Vec::new();
    for (bottleneck, _) in &queued {
        if !places.contains(&bottleneck.queue_place()) {
            places.push(bottleneck.queue_place());
        }
    }
    places
        .into_iter()
        .map(|place| {
            let here: Vec<&(&crate::bottleneck::Bottleneck, &String)> = queued
                .iter()
                .filter(|(bottleneck, _)| bottleneck.queue_place() == place)
                .collect();
            let (low, high) = span(
                here.iter()
                    .map(|(bottleneck, _)| bottleneck.queueing_share.unwrap_or(0.0)),
            );
            let link = here.iter().any(|(bottleneck, _)| bottleneck.limit == "link");
            let who = match here.as_slice() {
                [(_, name)] if name.is_empty() => String::new(),
                _ => format!(
                    "{}: ",
                    which(
                        here.iter().map(|(_, name)| name.as_str()),
                        summary.configs.len()
                    )
                ),
            };
            format!(
                "{who}{} of the median handshake was queueing {place}: the latency measures the queue; {}",
                percent_span(low, high),
                if link {
                    "lower the concurrency or raise --bandwidth"
                } else {
                    "lower the concurrency"
                }
            )
        })
        .collect()
}

/// `'name' ` to say which Config a note is about; nothing for a lone Config, whose label is
/// above the table.
fn quoted(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!("'{name}' ")
    }
}

/// Each Config's details, one block each: what `--verbose` adds under the table (and under
/// `tlslab load`'s figures), escaped for a terminal.
pub fn render_details_of_each(summary: &RunSummary) -> String {
    details_of_each(&crate::terminal::run_summary(summary))
}

/// [`render_details_of_each`] of a summary already escaped.
fn details_of_each(summary: &RunSummary) -> String {
    let mut out = String::new();
    for config in &summary.configs {
        out.push_str(&render_details(config));
        out.push('\n');
    }
    out
}

/// The aspects of a Config's details, in the order `--verbose` prints them; each writes its
/// lines, or none when the Config has nothing of it.
const DETAILS: &[fn(&ConfigSummary, &mut String)] = &[
    trust_line,
    handshake_line,
    schedule_lines,
    ttfb_line,
    phases_line,
    outcome_lines,
    rate_lines,
    bytes_line,
    flights_line,
    mutual_tls_line,
    ech_line,
    replay_line,
    stopping_line,
    network_line,
];

/// Everything measured about one Config, a line per aspect (`--verbose`).
fn render_details(config: &ConfigSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", config.label);
    for detail in DETAILS {
        detail(config, &mut out);
    }
    out
}

/// What the client trusted, for a Config against a target.
fn trust_line(config: &ConfigSummary, out: &mut String) {
    if let Some(trust) = &config.trust {
        let _ = writeln!(out, "  trust      {trust}");
    }
}

/// The handshake's distribution, or why there is none.
fn handshake_line(config: &ConfigSummary, out: &mut String) {
    match &config.handshake_ms {
        Some(h) => {
            // One value has no interval and no sd (both NaN): say so rather than print NaN.
            let spread = match h.mean_interval() {
                Some([low, high]) => format!(
                    "(95% CI {}–{})   sd {}",
                    millis(low),
                    millis(high),
                    millis(h.sd)
                ),
                None => "(one value: no interval, no sd)".to_string(),
            };
            let _ = writeln!(
                out,
                "  handshake  median {} ms   mean {} ms {spread}   p90 {}   p99 {}",
                millis(h.median),
                millis(h.mean),
                millis(h.p90),
                millis(h.p99)
            );
        }
        None if config.ttfb_ms.is_some() => {
            let _ = writeln!(
                out,
                "  handshake  none measured: plain HTTP, or every measured request reused a kept connection"
            );
        }
        None => {
            let _ = writeln!(out, "  handshake  no successful handshake");
        }
    }
}

/// An open loop's schedule as asked and as kept, and the latency from each intended start.
fn schedule_lines(config: &ConfigSummary, out: &mut String) {
    if let Some(open) = &config.open_loop {
        let achieved = open
            .achieved_per_second
            .map_or_else(|| "–".to_string(), tlslab_core::arrival::format_rate);
        let _ = writeln!(
            out,
            "  schedule   {} asked, {achieved} achieved, {:.1}% started over 1 ms late{}",
            tlslab_core::arrival::format_rate(open.asked_per_second),
            open.late_share * 100.0,
            if open.schedule_kept {
                ""
            } else {
                " (not kept)"
            }
        );
        if let Some(latency) = &open.latency_ms {
            let _ = writeln!(
                out,
                "  latency    from intended start: p50 {} ms   p90 {}   p99 {}   p99.9 {}   max {}",
                millis(latency.p50),
                millis(latency.p90),
                millis(latency.p99),
                millis(latency.p999),
                millis(latency.max)
            );
        }
    }
}

/// The time to the response's first byte, when there was a request.
fn ttfb_line(config: &ConfigSummary, out: &mut String) {
    if let Some(ttfb) = &config.ttfb_ms {
        let _ = writeln!(
            out,
            "  ttfb       median {} ms   p90 {}   p99 {}",
            millis(ttfb.median),
            millis(ttfb.p90),
            millis(ttfb.p99)
        );
    }
}

/// Each phase's median, additive phases first.
fn phases_line(config: &ConfigSummary, out: &mut String) {
    if !config.phase_medians_ms.is_empty() {
        let phases: Vec<String> = Phase::PARTS
            .iter()
            .filter_map(|phase| {
                let value = config.phase_medians_ms.get(phase.name())?;
                Some(format!("{} {}", phase.name(), millis(*value)))
            })
            .collect();
        let _ = writeln!(out, "  phases     {} (medians, ms)", phases.join(" · "));
    }
}

/// The attempts by outcome with the session techniques' counts, then an example and a
/// diagnosis of each error class.
fn outcome_lines(config: &ConfigSummary, out: &mut String) {
    let mut outcome = format!("{} ok", config.ok);
    for (class, count) in &config.errors {
        let _ = write!(outcome, ", {count} {class}");
    }
    let mut sessions = String::new();
    if let (Some(resumed), Some(full)) = (config.resumed, config.full) {
        let _ = write!(sessions, "   resumed {resumed}, full {full}");
    }
    if let Some((accepted, refused)) = config.early_data {
        let _ = write!(
            sessions,
            "   early data accepted on {accepted} of {} 0-RTT attempts",
            accepted + refused
        );
    }
    let _ = writeln!(
        out,
        "  outcomes   {} of {} attempts{sessions}",
        outcome, config.attempted
    );
    if config.incomplete > 0 {
        let _ = writeln!(
            out,
            "             and {} incomplete: neither ok nor failed, in no statistic (compare \
             --include-incomplete takes them in)",
            config.incomplete
        );
    }
    for (class, example) in &config.error_examples {
        let _ = writeln!(out, "             {class}: {example}");
        if let Some(diagnosis) = config.diagnoses.get(class) {
            let _ = writeln!(out, "             why: {diagnosis}");
        }
    }
}

/// Which side limited the rate, then the rate and the CPU each handshake cost.
fn rate_lines(config: &ConfigSummary, out: &mut String) {
    let mut rate = Vec::new();
    if let Some(per_second) = config.handshakes_per_second {
        let unit = if config.ttfb_ms.is_some() {
            "requests/s"
        } else {
            "handshakes/s"
        };
        rate.push(format!("{} {unit}", thousands(per_second)));
    }
    if let Some(bottleneck) = &config.bottleneck {
        let _ = writeln!(out, "  limit      {}", bottleneck.describe());
    }
    if let Some(server) = config.server_cpu_per_handshake_ms {
        rate.push(format!("server CPU {} ms/handshake", millis(server)));
    }
    if let Some(client) = config.client_cpu_per_handshake_ms {
        rate.push(format!("client CPU {} ms/handshake", millis(client)));
    }
    if !rate.is_empty() {
        let _ = writeln!(out, "  rate       {}", rate.join(" · "));
    }
}

/// The first flights' sizes.
fn bytes_line(config: &ConfigSummary, out: &mut String) {
    if let (Some(hello), Some(flight)) = (config.client_hello_bytes, config.server_flight_bytes) {
        let _ = writeln!(
            out,
            "  bytes      ClientHello {} · server flight {} (medians)",
            thousands(hello as f64),
            thousands(flight as f64)
        );
    }
}

/// The server's flights that carried the responses (QUIC).
fn flights_line(config: &ConfigSummary, out: &mut String) {
    if let Some(flights) = &config.response_flights {
        let _ = writeln!(out, "  flights    {}", flights.describe());
    }
}

/// Mutual TLS step by step.
fn mutual_tls_line(config: &ConfigSummary, out: &mut String) {
    if let Some(mutual) = &config.mutual_tls {
        let mut steps = Vec::new();
        if let Some(signing) = mutual.client_signing_ms {
            steps.push(format!("client signature {} ms (median)", millis(signing)));
        }
        if let (Some(check), Some(count)) = (mutual.server_check_ms, mutual.server_checks) {
            steps.push(format!(
                "server check {} ms per certificate (mean of {count})",
                millis(check)
            ));
        }
        if let Some(bytes) = mutual.certificate_bytes {
            steps.push(format!(
                "Certificate + CertificateVerify {} bytes (median)",
                thousands(bytes as f64)
            ));
        }
        let _ = writeln!(out, "  mutual TLS {}", steps.join(" · "));
    }
}

/// Successful handshakes per ECH status.
fn ech_line(config: &ConfigSummary, out: &mut String) {
    if !config.ech.is_empty() {
        let counts: Vec<String> = config
            .ech
            .iter()
            .map(|(status, count)| format!("{status} {count}"))
            .collect();
        let _ = writeln!(
            out,
            "  ech        {} (of {} successful handshakes)",
            counts.join(" · "),
            config.ok
        );
    }
}

/// The replay probe's flights and what became of them.
fn replay_line(config: &ConfigSummary, out: &mut String) {
    if let Some(replay) = &config.replay {
        let _ = writeln!(
            out,
            "  replay     {} captured 0-RTT flights re-sent: {} rejected as replays, {} accepted",
            replay.sent, replay.rejected, replay.accepted
        );
    }
}

/// With `--until-ci`: whether and why the Config stopped early.
fn stopping_line(config: &ConfigSummary, out: &mut String) {
    if let Some(stopping) = &config.stopping {
        let _ = writeln!(out, "  stopping   {stopping}");
    }
}

/// The emulated network, its round-trip floor and the physics check.
fn network_line(config: &ConfigSummary, out: &mut String) {
    if let Some(network) = &config.network {
        let measured = network
            .measured_rtt_ms
            .filter(|_| network.emulator != "relay")
            .map_or(String::new(), |rtt| {
                format!(" (TCP connect measured {})", millis(rtt))
            });
        let _ = writeln!(
            out,
            "  network    {} emulator · RTT {} ms{measured} · floor {} × RTT = {} ms · {}",
            network.emulator,
            millis(network.rtt_ms),
            network.round_trips,
            millis(network.floor_ms),
            if network.physics.is_some() {
                "physics check FAILED (see warnings)"
            } else {
                "physics check passed"
            }
        );
    }
}

/// Each technique's gain over its full-handshake baseline, with the 95% interval, each
/// Config named by `name` (as the table names it).
fn render_named_gains(gains: &[crate::summary::Gain], name: &dyn Fn(&str) -> String) -> String {
    let mut out = format!(
        "gains over the full handshake (median {}, 95% bootstrap CI):\n",
        gains.first().map_or("", |gain| gain.metric.as_str())
    );
    for gain in gains {
        let _ = writeln!(
            out,
            "  {:<22} {:>6.1}% [{:.1}%, {:.1}%] of {} ({} → {} ms, p {})   '{}' vs '{}'",
            gain.technique,
            gain.gain * 100.0,
            gain.gain_ci[0] * 100.0,
            gain.gain_ci[1] * 100.0,
            gain.metric,
            millis(gain.baseline_median_ms),
            millis(gain.median_ms),
            if gain.p < 0.001 {
                "< 0.001".to_string()
            } else {
                format!("= {:.3}", gain.p)
            },
            name(&gain.label),
            name(&gain.baseline)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{ConfigSummary, Distribution};

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(millis(0.41234), "0.4123");
        assert_eq!(millis(201.37), "201.4");
    }

    #[test]
    fn durations_keep_three_digits_in_the_unit_that_suits_them() {
        assert_eq!(duration(0.2524), "252 µs");
        assert_eq!(duration(0.0252), "25.2 µs");
        assert_eq!(duration(0.00252), "2.52 µs");
        assert_eq!(duration(0.9997), "1.00 ms");
        assert_eq!(duration(1.234), "1.23 ms");
        assert_eq!(duration(12.34), "12.3 ms");
        assert_eq!(duration(123.4), "123 ms");
        assert_eq!(duration(999.7), "1.00 s");
        assert_eq!(duration(4321.0), "4.32 s");
        assert_eq!(duration(f64::NAN), "–");
        assert_eq!(rate(1285.4), "1,285/s");
        assert_eq!(rate(2.54), "2.5/s");
    }

    fn config(label: &str, median: f64, ok: i64, attempted: i64) -> ConfigSummary {
        let handshake = (ok > 0).then(|| Distribution {
            n: ok as usize,
            mean: median,
            sd: 0.1,
            median,
            p90: median * 1.5,
            p99: median * 2.0,
            p999: median * 2.5,
            min: median / 2.0,
            max: median * 3.0,
            mean_ci: [median * 0.9, median * 1.1],
        });
        ConfigSummary {
            label: label.into(),
            attempted,
            ok,
            errors: if attempted > ok {
                [("refused".to_string(), attempted - ok)].into()
            } else {
                Default::default()
            },
            incomplete: 0,
            error_examples: Default::default(),
            diagnoses: [(
                "refused".to_string(),
                "nothing accepts connections".to_string(),
            )]
            .into(),
            handshake_ms: handshake,
            metric_ms: handshake,
            transport: "tcp".into(),
            ttfb_ms: None,
            client_hello_bytes: Some(216),
            server_flight_bytes: Some(805),
            response_flights: None,
            early_data: None,
            replay: None,
            ech: Vec::new(),
            phase_medians_ms: [("server_response".to_string(), median / 3.0)].into(),
            handshakes_per_second: Some(1234.0),
            server_cpu_per_handshake_ms: Some(0.15),
            client_cpu_per_handshake_ms: Some(0.27),
            client_cpu_utilization: Some(0.3),
            mutual_tls: None,
            bottleneck: None,
            server_peak_rss_bytes: None,
            client_peak_rss_bytes: 1,
            resumed: None,
            full: None,
            insecure: false,
            trust: None,
            stopping: None,
            network: None,
            open_loop: None,
        }
    }

    fn summary(configs: Vec<ConfigSummary>) -> RunSummary {
        RunSummary {
            store: "results.db".into(),
            started_at: String::new(),
            complete: true,
            reason: None,
            seed: Some(7),
            duration_s: Some(1.0),
            attempted: configs.iter().map(|c| c.attempted).sum(),
            errors: configs.iter().map(|c| c.attempted - c.ok).sum(),
            incomplete: 0,
            insecure: false,
            configs,
            warnings: vec!["'tls1.3 aes128gcm x25519 c4': the client used 95% of all cores".into()],
            comparisons: None,
            metric: "handshake".into(),
            metric_reason: "the Configs send no request".into(),
            verdicts: Vec::new(),
            left_out: Vec::new(),
            dimensions: Vec::new(),
            factorials: Vec::new(),
            gains: Vec::new(),
            knees: Vec::new(),
            names: Default::default(),
            phase_change: None,
        }
    }

    #[test]
    fn the_default_summary_is_a_table_and_the_details_wait_for_verbose() {
        let run = summary(vec![
            config("tls1.2 aes128gcm x25519 c1", 0.345, 200, 200),
            config("tls1.3 aes128gcm x25519 c4", 1.01, 180, 200),
            config("tls1.3 aes128gcm x25519 c1", 0.0, 0, 200),
        ]);
        let text = render_text(&run, &TextOptions::default());
        assert!(
            text.starts_with("all: aes128gcm x25519\nhandshake "),
            "{text}"
        );
        assert!(
            text.contains(
                "\ntls1.2 c1  200   345 µs   518 µs   690 µs   862 µs  1.03 ms  1,234/s       0\n"
            ),
            "{text}"
        );
        // Nothing succeeded: no statistics and no rate.
        assert!(
            text.contains(
                "\ntls1.3 c1    0        –        –        –        –        –        –     200\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("failed: 'tls1.3 c4' 20 refused: why: nothing accepts connections\n"),
            "{text}"
        );
        // Warnings name Configs by their distinguishing words.
        assert!(
            text.contains("warning: 'tls1.3 c4': the client used 95% of all cores\n"),
            "{text}"
        );
        assert!(!text.contains("phases"), "{text}");
        assert!(
            text.lines().all(|line| line.chars().count() <= 80),
            "{text}"
        );
        let verbose = render_text(
            &run,
            &TextOptions {
                verbose: true,
                width: None,
            },
        );
        assert_eq!(verbose.matches("\n  phases     ").count(), 3, "{verbose}");
        assert!(
            verbose.contains("\n  bytes      ClientHello 216"),
            "{verbose}"
        );
    }

    #[test]
    fn text_from_outside_shows_its_controls_escaped_and_json_keeps_it() {
        let hostile = "sni=evil\u{1b}[31m\nerror: forged";
        let mut first = config(&format!("tls1.2 {hostile}"), 0.345, 190, 200);
        first.error_examples = [(
            "refused".to_string(),
            "the peer said \u{1b}]0;pwned\u{7}".to_string(),
        )]
        .into();
        first.diagnoses.clear();
        let mut run = summary(vec![
            first,
            config(&format!("tls1.3 {hostile}"), 1.01, 200, 200),
        ]);
        run.warnings = vec![format!(
            "'tls1.2 {hostile}': the client used 95% of all cores"
        )];
        run.store = "results\u{1b}[2J.db".into();
        for verbose in [false, true] {
            let text = render_text(
                &run,
                &TextOptions {
                    verbose,
                    width: None,
                },
            );
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "{text:?}"
            );
            assert!(
                !text.lines().any(|line| line.starts_with("error: forged")),
                "{text}"
            );
            assert!(text.contains("evil\\x1b[31m\\nerror: forged"), "{text}");
            assert!(text.contains("results\\x1b[2J.db"), "{text}");
            assert!(text.contains("the peer said \\x1b]0;pwned\\x07"), "{text}");
        }
        // Without --verbose the warning still names the Config by its short name.
        let text = render_text(&run, &TextOptions::default());
        assert!(
            text.contains("warning: 'tls1.2': the client used 95% of all cores"),
            "{text}"
        );
        let json = serde_json::to_string(&run).unwrap();
        assert!(json.contains("evil\\u001b[31m\\nerror: forged"), "{json}");
    }

    #[test]
    fn names_too_wide_for_the_terminal_go_above_their_numbers() {
        let long = "tls1.3 chacha20 x25519mlkem768 rsa4096 chain5 http1.1 rtt50ms";
        let run = summary(vec![
            config(&format!("{long} c1"), 2.0, 10, 10),
            config(&format!("tls1.2 {long} c4"), f64::NAN, 10, 10),
        ]);
        let text = render_text(
            &run,
            &TextOptions {
                verbose: false,
                width: Some(60),
            },
        );
        assert!(
            text.contains("\nhandshake\n   n   median      p90")
                && text.contains("\nc1\n  10  2.00 ms  3.00 ms"),
            "{text}"
        );
        // The table fits; the binary fits the words around it (`output::fit`).
        let table = text.split("\n\n").next().unwrap_or_default();
        assert!(
            table.lines().skip(1).all(|line| line.chars().count() <= 60),
            "{text}"
        );
        // A lone Config: its label above, its row unnamed.
        let one = summary(vec![config(&format!("{long} c1"), 2.0, 10, 10)]);
        let text = render_text(&one, &TextOptions::default());
        assert!(
            text.starts_with(&format!("all: {long} c1\nhandshake ")),
            "{text}"
        );
    }
}
