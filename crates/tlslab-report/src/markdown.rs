//! The Markdown report: the summary, comparison, phase and error tables for papers and pull
//! requests (GitHub-flavoured tables), with links to PNG charts when they were written.

use std::fmt::Write;

use crate::charts::{charts_for, ChartKind};
use crate::data::ReportData;
use crate::scans;
use crate::tables::{self, Table};
use tlslab_store::ScanRow;

/// Escapes a table cell: a pipe would end the cell and a newline the row, and HTML in a
/// label or a server's error message must show as text (Markdown renders inline HTML), as
/// the HTML report shows it.
fn cell(text: &str) -> String {
    text_line(text).replace('|', "\\|")
}

/// One line of text in Markdown: tags shown as text (quotes can stay: they matter only
/// inside a tag), line breaks folded, other controls shown as escapes (a Markdown file is
/// read on a terminal too).
fn text_line(text: &str) -> String {
    tlslab_core::terminal::escape(&text.replace(['\n', '\r'], " "))
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `text` in a code block: the fence is longer than any run of backticks inside, so nothing
/// in the text can end the block; controls show as escapes, the lines stay.
fn code_block(language: &str, text: &str) -> String {
    let text = tlslab_core::terminal::escape_lines(text);
    let longest = text
        .split(|character| character != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{language}\n{text}\n{fence}")
}

/// `text` as inline code, whatever backticks it holds; controls and line breaks show as
/// escapes.
fn inline_code(text: &str) -> String {
    let text = tlslab_core::terminal::escape(text);
    let longest = text
        .split(|character| character != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

fn write_table(out: &mut String, table: &Table) {
    let headers: Vec<String> = table.headers.iter().map(|h| cell(h)).collect();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let rule: Vec<&str> = (0..table.headers.len())
        .map(|column| {
            if table.is_numeric(column) {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for row in &table.rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

/// Renders the report. `chart_links` is the directory of the PNG charts relative to the
/// Markdown file (as it should appear in links), when they were written.
pub fn render_markdown(data: &ReportData, chart_links: Option<&str>) -> String {
    let summary = &data.summary;
    let mut out = String::new();
    let _ = writeln!(out, "# tlslab report\n");
    let _ = writeln!(
        out,
        "{}  \n{}\n",
        inline_code(&summary.store),
        text_line(&tables::run_line(data))
    );
    for warning in &summary.warnings {
        let _ = writeln!(out, "> **Warning:** {}  ", text_line(warning));
    }
    if !summary.warnings.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "## Summary: {}\n", text_line(&summary.metric));
    let _ = writeln!(out, "{}\n", text_line(&tables::summary_note(data)));
    write_table(&mut out, &tables::summary(data));
    if let Some(table) = tables::factorial(data) {
        let _ = writeln!(out, "## By dimension: {}\n", text_line(&summary.metric));
        let _ = writeln!(out, "{}\n", text_line(&tables::factorial_note(data)));
        write_table(&mut out, &table);
    }
    if let (Some(table), Some(note)) = (tables::comparisons(data), tables::comparison_note(data)) {
        let _ = writeln!(out, "## Comparisons: {}\n", text_line(&summary.metric));
        let _ = writeln!(out, "{}\n", text_line(&note));
        write_table(&mut out, &table);
    }
    if let Some(table) = tables::agents(data) {
        out.push_str("## Agents\n\n");
        out.push_str(
            "Each agent of the distributed run: its share of the merged figures above.\n\n",
        );
        write_table(&mut out, &table);
    }
    if let Some(table) = tables::time_to_first_byte(data) {
        out.push_str("## Time to first byte\n\n");
        write_table(&mut out, &table);
    }
    if let Some(table) = tables::gains(data) {
        let _ = writeln!(
            out,
            "## Session techniques: {}\n",
            text_line(&summary.metric)
        );
        let _ = writeln!(out, "{}\n", text_line(&tables::gains_note(data)));
        write_table(&mut out, &table);
    }
    if let Some(table) = tables::load(data) {
        out.push_str("## Requests under load\n\n");
        write_table(&mut out, &table);
    }
    if let Some(table) = tables::scheme_increases(data) {
        out.push_str("## HTTPS against plain HTTP\n\n");
        write_table(&mut out, &table);
    }
    if let Some(table) = tables::open_loops(data) {
        out.push_str("## Open loops\n\n");
        write_table(&mut out, &table);
        for knee in &summary.knees {
            let _ = writeln!(out, "- {}", text_line(&knee.describe()));
        }
        if !summary.knees.is_empty() {
            out.push('\n');
        }
    }
    out.push_str("## Median per phase (ms)\n\n");
    write_table(&mut out, &tables::phases(data));
    if let Some(table) = tables::errors(data) {
        out.push_str("## Errors\n\n");
        write_table(&mut out, &table);
    }
    if let Some(directory) = chart_links {
        out.push_str("## Charts\n\n");
        for kind in charts_for(data) {
            let _ = writeln!(
                out,
                "![{}]({}/{}.png)  \n*{}*\n",
                kind.title(),
                directory.trim_end_matches('/'),
                kind.name(),
                kind.caption()
            );
        }
    }
    if data.run.source == "active" {
        let _ = writeln!(
            out,
            "## Experiment\n\nCommand line:\n\n{}\n\n{}\n",
            code_block("sh", &tables::command_line(&data.run.command_line)),
            code_block("toml", data.run.experiment.trim_end())
        );
    } else {
        // A capture has no experiment: say what was read.
        let _ = writeln!(
            out,
            "## Source\n\n{}: {}\n",
            data.run.source,
            inline_code(data.run.source_detail.as_deref().unwrap_or_default())
        );
    }
    out.push_str("## Environment\n\n");
    write_table(&mut out, &tables::environment(data));
    write_scans(&mut out, &data.scans);
    out
}

/// The report of a store that holds scans and no run (`tlslab scan --out`).
pub fn render_scan_report_markdown(store: &str, scans: &[ScanRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# tlslab scan report\n\n{}\n", inline_code(store));
    write_scans(&mut out, scans);
    out
}

/// "## Scans": per scan its findings, grade, Mozilla verdicts and cost table.
fn write_scans(out: &mut String, scans: &[ScanRow]) {
    if scans.is_empty() {
        return;
    }
    out.push_str("## Scans\n\n");
    for scan in scans {
        let section = scans::section(scan);
        let _ = writeln!(out, "### {}\n", text_line(&section.heading));
        write_table(out, &section.facts);
        for reason in &section.grade_reasons {
            let _ = writeln!(out, "- {}", text_line(reason));
        }
        if !section.grade_reasons.is_empty() {
            out.push('\n');
        }
        out.push_str("#### Mozilla's guidelines\n\n");
        write_table(out, &section.mozilla);
        if let (Some(costs), Some(note)) = (&section.costs, &section.costs_note) {
            out.push_str("#### Cost of each choice\n\n");
            let _ = writeln!(out, "{}\n", text_line(note));
            write_table(out, costs);
        }
        let _ = writeln!(out, "Command line: {}\n", inline_code(&scan.command_line));
    }
}

/// The PNG file name of a chart.
pub fn png_name(kind: ChartKind) -> String {
    format!("{}.png", kind.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_server_words_show_as_text_and_cannot_break_out() {
        assert_eq!(
            cell("<img src=x onerror=alert(1)> | a"),
            "&lt;img src=x onerror=alert(1)&gt; \\| a"
        );
        assert_eq!(cell("two\nlines"), "two lines");
        assert_eq!(cell("evil\u{1b}[31m"), "evil\\x1b[31m");
        assert_eq!(inline_code("a\nb.db"), "`a\\nb.db`");
        assert_eq!(
            code_block("sh", "tlslab run\n--label '\u{1b}]0;x\u{7}'"),
            "```sh\ntlslab run\n--label '\\x1b]0;x\\x07'\n```"
        );
        assert_eq!(code_block("toml", "a = 1"), "```toml\na = 1\n```");
        assert_eq!(
            code_block("toml", "labels = [\"```\"]"),
            "````toml\nlabels = [\"```\"]\n````"
        );
        assert_eq!(inline_code("r.db"), "`r.db`");
        assert_eq!(inline_code("a`b.db"), "`` a`b.db ``");
    }
}
