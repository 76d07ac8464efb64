//! The scan section of the report: each scan the store holds (`tlslab scan --out`), read
//! from its stored `--json` object (schema in docs/scan.md) into facts and tables that the
//! HTML and Markdown renderers lay out alike. Reading JSON keeps this crate off tlslab-scan:
//! the analysing wing reads what producers stored, whoever they were.

use serde_json::Value;
use tlslab_store::ScanRow;

use crate::tables::Table;

/// One scan, ready to lay out.
pub struct ScanSection {
    /// `127.0.0.1:8443 (SNI localhost), 2026-11-25T15:53:29Z`.
    pub heading: String,
    /// (what, finding): versions, suites, groups, certificate, grade.
    pub facts: Table,
    /// The grade's reasons and notes, one line each.
    pub grade_reasons: Vec<String>,
    /// Mozilla's guidelines: level, verdict.
    pub mozilla: Table,
    /// The cost table; `None` when the scan was not timed.
    pub costs: Option<Table>,
    /// What the cost table was measured with (handshakes per choice, certificate, ...).
    pub costs_note: Option<String>,
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    }
}

fn list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| items.iter().map(text).collect())
        .unwrap_or_default()
}

fn table(headers: &[&str], text_columns: Vec<usize>) -> Table {
    Table {
        headers: headers.iter().map(|header| header.to_string()).collect(),
        rows: Vec::new(),
        text_columns,
    }
}

/// The section of one stored scan.
pub fn section(scan: &ScanRow) -> ScanSection {
    let report = &scan.report;
    let grade = &report["grade"];
    let mut grade_reasons = list(&grade["reasons"]);
    grade_reasons.extend(
        list(&grade["notes"])
            .into_iter()
            .map(|note| format!("note: {note}")),
    );
    let (costs, costs_note) = match costs(&report["timing"]) {
        Some((costs, note)) => (Some(costs), Some(note)),
        None => (None, None),
    };
    ScanSection {
        heading: format!(
            "{}{}, {}",
            scan.target,
            scan.server_name
                .as_deref()
                .map(|name| format!(" (SNI {name})"))
                .unwrap_or_default(),
            scan.scanned_at
        ),
        facts: facts(report),
        grade_reasons,
        mozilla: mozilla(report),
        costs,
        costs_note,
    }
}

/// What the scan found, a row per finding: versions and their suites, groups, ALPN, the
/// certificate and its chain, HSTS, the grade and the connections it took.
fn facts(report: &Value) -> Table {
    let mut facts = table(&["what", "found"], vec![0, 1]);
    let mut fact = |what: &str, found: String| facts.rows.push(vec![what.into(), found]);
    let versions: Vec<String> = report["versions"]
        .as_array()
        .map(|versions| versions.iter().map(|v| text(&v["version"])).collect())
        .unwrap_or_default();
    fact("versions", versions.join(", "));
    for version in report["versions"].as_array().into_iter().flatten() {
        fact(
            &format!("{} suites", text(&version["version"])),
            format!(
                "{} ({} order)",
                list(&version["suites"]).join(", "),
                text(&version["order"])
            ),
        );
    }
    for (name, key) in [("TLS 1.3", "groups_tls13"), ("TLS 1.2", "groups_tls12")] {
        if !report[key].is_null() {
            fact(
                &format!("{name} groups"),
                format!(
                    "{} ({} order)",
                    list(&report[key]["groups"]).join(", "),
                    text(&report[key]["order"])
                ),
            );
        }
    }
    fact("ALPN", list(&report["alpn"]).join(", "));
    for (what, found) in certificate_facts(&report["certificates"]) {
        fact(what, found);
    }
    let grade = &report["grade"];
    fact(
        "grade",
        format!(
            "{} (score {}: protocol {}, key exchange {}, cipher {})",
            text(&grade["letter"]),
            text(&grade["score"]),
            text(&grade["protocol_score"]),
            text(&grade["key_exchange_score"]),
            text(&grade["cipher_score"])
        ),
    );
    fact(
        "connections",
        format!(
            "{} for the scan{}",
            text(&report["connections"]),
            report["timing"]["connections"]
                .as_u64()
                .map(|timed| format!(", {timed} timed"))
                .unwrap_or_default()
        ),
    );
    facts
}

/// The leaf certificate (when one was read), the chain's trust and name match, and HSTS.
fn certificate_facts(certificates: &Value) -> Vec<(&'static str, String)> {
    let mut facts = Vec::new();
    if let Some(leaf) = certificates["chain"]
        .as_array()
        .and_then(|chain| chain.first())
    {
        facts.push((
            "certificate",
            format!(
                "{}, {}, {}, issued by {}, until {}",
                text(&leaf["subject"]),
                text(&leaf["key"]),
                text(&leaf["signature"]),
                text(&leaf["issuer"]),
                text(&leaf["not_after"])
            ),
        ));
    }
    facts.push((
        "chain",
        format!(
            "{} sent; trusted: {}{}; name matches: {}",
            certificates["chain"].as_array().map_or(0, Vec::len),
            text(&certificates["trusted"]),
            certificates["trusted_by"]
                .as_str()
                .map(|by| format!(" (by {by})"))
                .unwrap_or_default(),
            text(&certificates["name_matches"])
        ),
    ));
    facts.push(("HSTS", text(&certificates["hsts"])));
    facts
}

/// Mozilla's guidelines: each level, and whether the server matches it or what to change.
fn mozilla(report: &Value) -> Table {
    let mut mozilla = table(&["guideline", "level", "verdict"], vec![0, 1, 2]);
    for result in report["mozilla"].as_array().into_iter().flatten() {
        let verdict = if result["matches"] == Value::Bool(true) {
            "matches".to_string()
        } else {
            list(&result["changes"]).join("; ")
        };
        mozilla.rows.push(vec![
            text(&result["guideline"]),
            text(&result["level"]),
            verdict,
        ]);
    }
    mozilla
}

/// The cost table of a timed scan and what it was measured with; `None` when the scan was
/// not timed.
fn costs(timing: &Value) -> Option<(Table, String)> {
    if !timing.is_object() {
        return None;
    }
    let mut costs = table(
        &[
            "version",
            "suite",
            "group",
            "client",
            "handshakes",
            "median handshake ms",
            "median server response ms",
        ],
        vec![0, 1, 2, 3],
    );
    let millis = |value: &Value| value.as_f64().map_or("–".into(), |ms| format!("{ms:.2}"));
    for row in timing["rows"].as_array().into_iter().flatten() {
        let mut cells = vec![
            text(&row["version"]),
            text(&row["suite"]),
            text(&row["group"]),
        ];
        match row["not_timed"].as_str() {
            Some(why) => cells.extend([
                format!("not timed: {why}"),
                "–".into(),
                "–".into(),
                "–".into(),
            ]),
            None => cells.extend([
                text(&row["backend"]),
                match row["errors"].as_u64() {
                    Some(errors) if errors > 0 => {
                        format!("{} ({errors} failed)", text(&row["handshakes"]))
                    }
                    _ => text(&row["handshakes"]),
                },
                millis(&row["median_handshake_ms"]),
                millis(&row["median_server_response_ms"]),
            ]),
        }
        costs.rows.push(cells);
    }
    let note = format!(
        "{} handshakes per choice after {} warm-up, one at a time; certificate {}{}{}.",
        text(&timing["handshakes_per_choice"]),
        text(&timing["warmup_per_choice"]),
        text(&timing["certificate"]),
        if timing["verified"] == Value::Bool(true) {
            ", verified"
        } else {
            ", not verified (untrusted)"
        },
        timing["error"]
            .as_str()
            .map(|error| format!("; the timed run failed: {error}"))
            .unwrap_or_default()
    );
    Some((costs, note))
}
