//! The HTML report: one self-contained file (inline CSS and SVG, no script, no font, no link
//! to anything outside it) that opens offline in any browser and prints legibly.

use std::fmt::Write;

use crate::charts::{charts_for, render_svg};
use crate::data::ReportData;
use crate::scans;
use crate::tables::{self, Table};
use crate::ReportError;
use tlslab_store::ScanRow;

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  margin: 0 auto; max-width: 1280px; padding: 1.5rem; color: #1a1a1a; line-height: 1.45; }
h1 { margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
.meta { color: #555; }
.warnings { background: #fff4e5; border-left: 4px solid #f0a020; padding: .6rem 1rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: .85rem; margin: .6rem 0; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid #e4e4e4; vertical-align: top; }
th { text-align: left; background: #f4f4f4; }
td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td:first-child { white-space: nowrap; }
td.text { min-width: 14rem; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1.5rem 0; }
figure h3 { margin: 0 0 .4rem; }
figcaption { color: #444; font-size: .85rem; max-width: 60rem; }
.chart svg { max-width: 100%; height: auto; display: block; }
pre { background: #f6f6f6; padding: .8rem; overflow-x: auto; font-size: .8rem; }
footer { margin-top: 3rem; color: #777; font-size: .8rem; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  figure, table, .warnings { break-inside: avoid; }
  .scroll { overflow: visible; }
  h2 { break-after: avoid; }
}
"#;

fn write_table(out: &mut String, table: &Table) {
    out.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for (column, header) in table.headers.iter().enumerate() {
        let class = if table.is_numeric(column) {
            " class=\"number\""
        } else {
            ""
        };
        let _ = write!(out, "<th{class}>{}</th>", escape(header));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (column, cell) in row.iter().enumerate() {
            let class = if table.is_numeric(column) {
                " class=\"number\""
            } else if column > 0 {
                " class=\"text\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// plotters writes a bare `<svg>` element; drop an XML declaration should a version add one,
/// since it is not allowed inside HTML.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(start) => &svg[start..],
        None => svg,
    }
}

/// Renders the whole report.
/// The report of a store that holds scans and no run (`tlslab scan --out`).
pub fn render_scan_report_html(store: &str, scans: &[ScanRow]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>tlslab scan report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>tlslab scan report</h1>\n<p class=\"meta\"><code>{}</code></p>\n",
        escape(store),
        escape(store)
    );
    write_scans(&mut out, scans);
    let _ = writeln!(
        out,
        "<footer>Made by tlslab {} from {}.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION"),
        escape(store)
    );
    out
}

/// "Scans": per scan its findings, grade, Mozilla verdicts and cost table.
fn write_scans(out: &mut String, scans: &[ScanRow]) {
    if scans.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"scans\">Scans</h2>\n");
    for scan in scans {
        let section = scans::section(scan);
        let _ = writeln!(out, "<h3>{}</h3>", escape(&section.heading));
        write_table(out, &section.facts);
        if !section.grade_reasons.is_empty() {
            out.push_str("<ul>\n");
            for reason in &section.grade_reasons {
                let _ = writeln!(out, "<li>{}</li>", escape(reason));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("<h4>Mozilla's guidelines</h4>\n");
        write_table(out, &section.mozilla);
        if let (Some(costs), Some(note)) = (&section.costs, &section.costs_note) {
            out.push_str("<h4>Cost of each choice</h4>\n");
            let _ = writeln!(out, "<p>{}</p>", escape(note));
            write_table(out, costs);
        }
        let _ = writeln!(
            out,
            "<p>Command line: <code>{}</code></p>",
            escape(&scan.command_line)
        );
    }
}

/// The report of `data` as one HTML page that needs nothing else: its styles and charts
/// (SVG) are inline, so it can be mailed or attached to a ticket as it is.
pub fn render_html(data: &ReportData) -> Result<String, ReportError> {
    let summary = &data.summary;
    let mut out = String::with_capacity(256 * 1024);
    let title = format!("tlslab report: {}", summary.store);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&title)
    );
    let _ = writeln!(out, "<h1>tlslab report</h1>");
    let _ = writeln!(
        out,
        "<p class=\"meta\"><code>{}</code><br>{}</p>",
        escape(&summary.store),
        escape(&tables::run_line(data))
    );
    if !summary.warnings.is_empty() {
        out.push_str("<div class=\"warnings\"><strong>Read with care</strong><ul>\n");
        for warning in &summary.warnings {
            let _ = writeln!(out, "<li>{}</li>", escape(warning));
        }
        out.push_str("</ul></div>\n");
    }

    write_summary(&mut out, data);
    write_answers(&mut out, data);
    write_requests(&mut out, data);
    write_charts(&mut out, data)?;
    write_phases_and_errors(&mut out, data);
    write_source(&mut out, data);
    write_scans(&mut out, &data.scans);
    let _ = writeln!(
        out,
        "<footer>Made by tlslab {} from {}.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION"),
        escape(&summary.store)
    );
    Ok(out)
}

/// The summary table on the metric, and each Config's sequential stopping.
fn write_summary(out: &mut String, data: &ReportData) {
    let summary = &data.summary;
    let _ = writeln!(
        out,
        "<h2 id=\"summary\">Summary: {}</h2>",
        escape(&summary.metric)
    );
    let _ = writeln!(out, "<p>{}</p>", escape(&tables::summary_note(data)));
    write_table(out, &tables::summary(data));
    let stopping: Vec<String> = summary
        .configs
        .iter()
        .filter_map(|c| Some(format!("{}: {}", c.label, c.stopping.as_ref()?)))
        .collect();
    if !stopping.is_empty() {
        out.push_str("<p>Sequential stopping (<code>--until-ci</code>):</p><ul>\n");
        for line in stopping {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
}

/// The answer: by dimension when the Configs cross dimensions, and each Config against the
/// first.
fn write_answers(out: &mut String, data: &ReportData) {
    let summary = &data.summary;
    if let Some(table) = tables::factorial(data) {
        let _ = writeln!(
            out,
            "<h2 id=\"by-dimension\">By dimension: {}</h2>",
            escape(&summary.metric)
        );
        let _ = writeln!(out, "<p>{}</p>", escape(&tables::factorial_note(data)));
        write_table(out, &table);
    }

    if let (Some(table), Some(note)) = (tables::comparisons(data), tables::comparison_note(data)) {
        let _ = writeln!(
            out,
            "<h2 id=\"comparisons\">Comparisons: {}</h2>",
            escape(&summary.metric)
        );
        let _ = writeln!(out, "<p>{}</p>", escape(&note));
        write_table(out, &table);
    }
}

/// What requests measured: time to first byte, session techniques, load, HTTPS against
/// plain HTTP, open loops.
fn write_requests(out: &mut String, data: &ReportData) {
    let summary = &data.summary;
    if let Some(table) = tables::agents(data) {
        out.push_str("<h2 id=\"agents\">Agents</h2>\n");
        out.push_str(
            "<p>Each agent of the distributed run: its share of the merged figures above.</p>\n",
        );
        write_table(out, &table);
    }
    if let Some(table) = tables::time_to_first_byte(data) {
        out.push_str("<h2 id=\"ttfb\">Time to first byte</h2>\n");
        out.push_str("<p>From each attempt's start to the first byte of its response: the handshake and the request, what a user waits for.</p>\n");
        write_table(out, &table);
    }
    if let Some(table) = tables::gains(data) {
        let _ = writeln!(
            out,
            "<h2 id=\"techniques\">Session techniques: {}</h2>",
            escape(&summary.metric)
        );
        let _ = writeln!(out, "<p>{}</p>", escape(&tables::gains_note(data)));
        write_table(out, &table);
    }
    if let Some(table) = tables::load(data) {
        out.push_str("<h2 id=\"load\">Requests under load</h2>\n");
        out.push_str("<p>ApacheBench's figures with its definitions: connect is the time to an open connection (TLS included; 0 on a kept one), waiting from there to the first response byte, total the whole request; time per request is concurrency × time taken / requests.</p>\n");
        write_table(out, &table);
    }
    if let Some(table) = tables::scheme_increases(data) {
        out.push_str("<h2 id=\"schemes\">HTTPS against plain HTTP</h2>\n");
        out.push_str("<p>The increase of the median request time with its 95% bootstrap interval, and the study's increase of time taken and change of requests per second.</p>\n");
        write_table(out, &table);
    }
    if let Some(table) = tables::open_loops(data) {
        out.push_str("<h2 id=\"open-loops\">Open loops</h2>\n");
        out.push_str("<p>Latency counts from each attempt's intended start, so waiting for a busy agent or a stalled server is measured, not omitted.</p>\n");
        write_table(out, &table);
        if !summary.knees.is_empty() {
            out.push_str("<ul>\n");
            for knee in &summary.knees {
                let _ = writeln!(out, "<li>{}</li>", escape(&knee.describe()));
            }
            out.push_str("</ul>\n");
        }
    }
}

/// Every chart that applies, inline as SVG.
fn write_charts(out: &mut String, data: &ReportData) -> Result<(), ReportError> {
    out.push_str("<h2 id=\"charts\">Charts</h2>\n");
    if !data.common_label.is_empty() {
        let _ = writeln!(
            out,
            "<p>Every config shares <strong>{}</strong>; rows and legends name only what differs.</p>",
            escape(&data.common_label)
        );
    }
    let charts = charts_for(data);
    if charts.is_empty() {
        out.push_str("<p>No successful handshake to draw.</p>\n");
    }
    for kind in charts {
        let svg = render_svg(kind, data)?;
        let _ = write!(
            out,
            "<figure id=\"{}\" class=\"chart-figure\">\n<h3>{}</h3>\n<div class=\"chart scroll\">{}</div>\n<figcaption>{}</figcaption>\n</figure>\n",
            kind.name(),
            escape(kind.title()),
            inline_svg(&svg),
            escape(kind.caption())
        );
    }
    Ok(())
}

/// The median of each phase, and the errors.
fn write_phases_and_errors(out: &mut String, data: &ReportData) {
    out.push_str("<h2 id=\"phases\">Median per phase (ms)</h2>\n");
    write_table(out, &tables::phases(data));

    out.push_str("<h2 id=\"errors\">Errors</h2>\n");
    match tables::errors(data) {
        Some(table) => write_table(out, &table),
        None => out.push_str("<p>Every measured attempt succeeded.</p>\n"),
    }
}

/// What the run was: its command line and experiment file, or what a capture read; and
/// the machine.
fn write_source(out: &mut String, data: &ReportData) {
    if data.run.source == "active" {
        out.push_str("<h2 id=\"experiment\">Experiment</h2>\n");
    } else {
        out.push_str("<h2 id=\"experiment\">Source</h2>\n");
    }
    let _ = writeln!(
        out,
        "<p>Command line: <code>{}</code></p>",
        escape(&tables::command_line(&data.run.command_line))
    );
    if data.run.source == "active" {
        let _ = writeln!(
            out,
            "<p>Run it again with this file (<code>tlslab run experiment.toml</code>; the seed fixes the order of trials):</p>\n<pre>{}</pre>",
            escape(&data.run.experiment)
        );
    } else {
        let _ = writeln!(
            out,
            "<p>{}: <code>{}</code></p>",
            escape(&data.run.source),
            escape(data.run.source_detail.as_deref().unwrap_or_default())
        );
    }
    out.push_str("<h2 id=\"environment\">Environment</h2>\n");
    write_table(out, &tables::environment(data));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
        assert_eq!(inline_svg("<?xml version=\"1.0\"?>\n<svg/>"), "<svg/>");
    }
}
