//! `tlslab scan HOST[:PORT]...`: what each server supports, Mozilla's verdict and a grade,
//! printed for a person (one screen) or as JSON. The scanning is tlslab-scan's.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use tlslab_scan::certificate::TrustAnchors;
use tlslab_scan::{Options, Report, ScanError, ScanErrorKind, Target};

use crate::failure::{CliError, EXIT_ENVIRONMENT, EXIT_FAILURES};
use crate::output;
use tlslab_workflow::files;

const SCAN_EXAMPLES: &str = "Examples:
  tlslab scan example.com
  tlslab scan 127.0.0.1:8443 --sni localhost --json
  tlslab scan mail.example.com:465 example.org --concurrency 2 --timeout 10s
  tlslab scan 127.0.0.1:8443 --sni localhost --ca lab-root.pem
  tlslab scan example.com --timing-handshakes 40 --delay 50ms
  tlslab scan example.com --no-timing
  tlslab scan example.com --out scans.db && tlslab report scans.db";

#[derive(Debug, Args)]
#[command(after_help = SCAN_EXAMPLES)]
pub struct ScanArgs {
    /// Servers to scan, HOST or HOST:PORT (port 443 when not given).
    #[arg(required = true, value_name = "HOST[:PORT]")]
    pub targets: Vec<String>,
    /// The name to send as SNI and check the certificate against (default: the host).
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// Print the report as JSON (a list, one object per target).
    #[arg(long)]
    pub json: bool,
    /// Connections open to one target at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub concurrency: usize,
    /// How long one probe waits to connect, and for each answer.
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub timeout: String,
    /// Judge the certificate chain by these certificates (PEM) instead of the system's
    /// roots: a lab PKI's root, or a self-signed server's own certificate.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
    /// Skip the cost table: no timed handshakes after the scan.
    #[arg(long)]
    pub no_timing: bool,
    /// Measured handshakes per supported version × suite × group in the cost table (one
    /// warm-up handshake each comes first). Default: 20, fewer (down to 5) when the table
    /// would otherwise make more than 400 connections. At most 100,000.
    #[arg(long, value_name = "N")]
    pub timing_handshakes: Option<u64>,
    /// Pause between two timed handshakes to one target (they run one at a time).
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,
    /// Also store each target's scan in this results store (created if missing; a
    /// store that exists keeps its runs and earlier scans), for `tlslab report` and
    /// comparisons over time.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    /// With --out: replace an existing file that is not a results store (never a store or
    /// an input).
    #[arg(long)]
    pub force: bool,
}

fn from_scan_error(error: ScanError) -> CliError {
    match error.kind {
        ScanErrorKind::Usage => CliError::usage(error.message, error.hint),
        ScanErrorKind::Environment => CliError::environment(error.message, error.hint),
    }
}

/// The most handshakes `--timing-handshakes` may ask per choice: the cost table keeps each
/// one's times in memory until the table is made.
const MAX_TIMING_HANDSHAKES: u64 = 100_000;

pub fn scan(args: &ScanArgs) -> Result<i32, CliError> {
    let timeout = tlslab_core::duration::parse(&args.timeout)
        .ok()
        .filter(|timeout| *timeout > Duration::ZERO)
        .ok_or_else(|| {
            CliError::usage(
                format!("--timeout {}: not a duration", args.timeout),
                "for example --timeout 5s or --timeout 500ms",
            )
        })?;
    if args.concurrency == 0 {
        return Err(CliError::usage(
            "--concurrency 0: no probe could run",
            "give 1 or more (4 is polite to one server)",
        ));
    }
    let delay = args
        .delay
        .as_deref()
        .map(|text| {
            tlslab_core::duration::parse(text).map_err(|error| {
                CliError::usage(
                    format!("--delay {text}: {error}"),
                    "for example --delay 100ms or --delay 1s",
                )
            })
        })
        .transpose()?;
    if let Some(handshakes) = args
        .timing_handshakes
        .filter(|&n| n > MAX_TIMING_HANDSHAKES)
    {
        return Err(CliError::usage(
            format!(
                "--timing-handshakes {handshakes}: more than {MAX_TIMING_HANDSHAKES} per choice"
            ),
            "the cost table is a short timed run, its samples kept in memory; for a long one, \
             run `tlslab run --target HOST:PORT` with the choice's --tls, --suite and --group",
        ));
    }
    if args.timing_handshakes == Some(0) && !args.no_timing {
        return Err(CliError::usage(
            "--timing-handshakes 0: the cost table would have no figures",
            "give 1 or more (20 is the default), or --no-timing to skip the table",
        ));
    }
    if let Some(path) = &args.out {
        // Checked before the first connection: a scan is not made to be thrown away.
        let output = files::Output::new("--out", path, files::Kind::Scans);
        let inputs: Vec<&std::path::Path> = args.ca.as_deref().into_iter().collect();
        let write = files::claim(&output, &inputs, args.force)?;
        files::make_room(path, write)?;
    }
    // Every target is checked before the first connection.
    let targets = args
        .targets
        .iter()
        .map(|text| Target::parse(text))
        .collect::<Result<Vec<_>, _>>()
        .map_err(from_scan_error)?;
    let trust_anchors = args
        .ca
        .as_deref()
        .map(TrustAnchors::load)
        .transpose()
        .map_err(from_scan_error)?;
    let options = Options {
        server_name: args.sni.clone(),
        concurrency: args.concurrency,
        timeout,
        trust_anchors,
    };
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    let mut incomplete = false;
    for target in &targets {
        let started_unix_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        match tlslab_scan::scan(target, &options) {
            Ok(mut report) => {
                if !args.no_timing {
                    let timing = crate::scan_cost::TimingOptions {
                        handshakes: args.timing_handshakes,
                        delay,
                        timeout,
                        ca: args.ca.clone(),
                    };
                    report.timing = Some(crate::scan_cost::time_choices(&report, target, &timing));
                }
                if !args.json {
                    print_report(&report)?;
                }
                if let Some(path) = &args.out {
                    store(path, &report, started_unix_ns)?;
                }
                // The findings are printed (they are what could be read), the reason for
                // the missing grade is the error.
                if report.malformed_answers > 0 {
                    incomplete = true;
                    malformed_error(&report).print();
                }
                reports.push(report);
            }
            // One target that cannot be scanned does not stop the others.
            Err(error) if targets.len() > 1 => {
                let error = from_scan_error(error);
                error.print();
                failures.push(error);
            }
            Err(error) => return Err(from_scan_error(error)),
        }
    }
    if args.json {
        let text = serde_json::to_string_pretty(&reports)
            .map_err(|error| CliError::environment(format!("cannot write JSON: {error}"), ""))?;
        writeln!(output::stdout(), "{text}").map_err(output::write_failed)?;
    }
    Ok(if !failures.is_empty() {
        EXIT_ENVIRONMENT
    } else if incomplete {
        EXIT_FAILURES
    } else {
        0
    })
}

/// A scan that finished, but with probes whose answers could not be read: the exit code is
/// `run`'s for attempts that failed (its `not_tls`), the report has no grade.
fn malformed_error(report: &Report) -> CliError {
    let count = report.malformed_answers;
    CliError {
        code: EXIT_FAILURES,
        causes: Vec::new(),
        message: format!(
            "{}: {count} {} a malformed answer, so it is not graded; what could be read is above",
            report.target,
            if count == 1 {
                "probe got"
            } else {
                "probes got"
            }
        ),
        hint: "the server (or something in front of it) sent TLS that does not parse (listed \
               under probe errors); `tlslab run --target` against it fails with not_tls. Scan \
               it again, or the server behind the middlebox"
            .into(),
    }
}

/// Adds `report` to the results store at `path`.
fn store(path: &std::path::Path, report: &Report, started_unix_ns: u64) -> Result<(), CliError> {
    let json = serde_json::to_value(report)
        .map_err(|error| CliError::environment(format!("cannot write JSON: {error}"), ""))?;
    let scan = tlslab_store::NewScan {
        scanned_at_unix_ns: started_unix_ns,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: std::env::args().collect(),
        target: report.target.clone(),
        address: report.address.clone(),
        server_name: report.server_name.clone(),
        grade: report.grade.letter.to_string(),
        connections: report.connections + report.timing.as_ref().map_or(0, |t| t.connections),
        report: json,
    };
    tlslab_store::add_scan(path, &scan)?;
    Ok(())
}

/// The report for a person. Each line is escaped whole for a terminal
/// ([`tlslab_core::terminal::escape`]): what the server sent (a certificate's subject, issuer
/// and names, ALPN, HSTS, its errors) shows its controls and line breaks as escapes, and
/// tlslab's own words hold none to change.
fn print_report(report: &Report) -> Result<(), CliError> {
    let mut text = String::new();
    let mut line = |content: String| {
        text.push_str(&tlslab_core::terminal::escape(&content));
        text.push('\n');
    };
    line(format!(
        "scan of {} ({}, SNI {})",
        report.target,
        report.address,
        report.server_name.as_deref().unwrap_or("none")
    ));
    let supported: Vec<&str> = report.versions.iter().map(|v| v.version.as_str()).collect();
    let refused: Vec<&str> = report
        .versions_offered
        .iter()
        .rev()
        .map(String::as_str)
        .filter(|name| !supported.contains(name))
        .collect();
    let unknown: Vec<&str> = report
        .versions_unknown
        .iter()
        .rev()
        .map(String::as_str)
        .collect();
    let refused: Vec<&str> = refused
        .into_iter()
        .filter(|name| !unknown.contains(name))
        .collect();
    line(format!(
        "versions     {}{}{}",
        supported.join(", "),
        if refused.is_empty() {
            String::new()
        } else {
            format!("   (refused: {})", refused.join(", "))
        },
        if unknown.is_empty() {
            String::new()
        } else {
            format!("   (unknown, the probe failed: {})", unknown.join(", "))
        }
    ));
    for version in &report.versions {
        line(format!(
            "{:<12} {} suites{}, {}",
            version.version,
            version.suites.len(),
            if version.complete {
                ""
            } else {
                " found before a probe failed"
            },
            version.order.describe()
        ));
        for suite in &version.suites {
            let dhe = version
                .dhe
                .iter()
                .find(|parameters| parameters.suite == *suite)
                .map(|parameters| match &parameters.group {
                    Some(group) => format!("  DH {} bits ({group})", parameters.bits),
                    None => format!("  DH {} bits", parameters.bits),
                })
                .unwrap_or_default();
            line(format!("               {suite}{dhe}"));
        }
    }
    for (name, groups) in [
        ("TLS 1.3", &report.groups_tls13),
        ("TLS 1.2", &report.groups_tls12),
    ] {
        if let Some(groups) = groups {
            line(match (groups.groups.is_empty(), groups.complete) {
                (true, true) => format!("groups {name} none found"),
                (true, false) => format!("groups {name} unknown: a probe failed"),
                (false, complete) => format!(
                    "groups {name} {}{} ({})",
                    groups.groups.join(", "),
                    if complete {
                        ""
                    } else {
                        ", then a probe failed"
                    },
                    groups.order.describe()
                ),
            });
        }
    }
    line(format!(
        "ALPN         {}",
        match &report.alpn {
            None => "unknown (an ALPN probe failed)".to_string(),
            Some(alpn) if alpn.is_empty() => "none selected".to_string(),
            Some(alpn) => alpn.join(", "),
        }
    ));
    if let Some(secure) = report.secure_renegotiation {
        line(format!(
            "renegotiation {}",
            if secure {
                "secure (RFC 5746)"
            } else {
                "NOT secure (no RFC 5746 renegotiation_info)"
            }
        ));
    }
    let certificates = &report.certificates;
    let yes_no = |value: Option<bool>| match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not checked",
    };
    if certificates.chain.is_empty() {
        line("certificate  none read".into());
    } else {
        line(format!(
            "certificate  {} sent ({}); in order: {}; names {}: {}; trusted{}: {}{}",
            certificates.chain.len(),
            certificates.source.as_deref().unwrap_or("?"),
            yes_no(certificates.chain_in_order),
            report.server_name.as_deref().unwrap_or("the host"),
            yes_no(certificates.name_matches),
            certificates
                .trusted_by
                .as_deref()
                .map(|anchors| format!(" by {anchors}"))
                .unwrap_or_default(),
            yes_no(certificates.trusted),
            certificates
                .trust_error
                .as_deref()
                .map(|error| format!(" ({error})"))
                .unwrap_or_default()
        ));
        for (index, certificate) in certificates.chain.iter().enumerate() {
            line(format!(
                "  {index} {}  {}  {}  {} to {}{}",
                certificate.subject,
                certificate.key,
                certificate.signature,
                certificate.not_before,
                certificate.not_after,
                if certificate.expired { " EXPIRED" } else { "" }
            ));
            line(format!("    issuer {}", certificate.issuer));
            if !certificate.names.is_empty() {
                line(format!("    names {}", certificate.names.join(", ")));
            }
        }
        // A dual-certificate server's other chain, one line each: the leaf and the checks.
        for other in &certificates.others {
            let Some(leaf) = other.chain.first() else {
                continue;
            };
            line(format!(
                "  also for {} clients: {}  {}  {}  to {}{}; {} sent; names {}: {}; trusted: {}{}",
                other.elicited_by,
                leaf.subject,
                leaf.key,
                leaf.signature,
                leaf.not_after,
                if leaf.expired { " EXPIRED" } else { "" },
                other.chain.len(),
                report.server_name.as_deref().unwrap_or("the host"),
                yes_no(other.name_matches),
                yes_no(other.trusted),
                other
                    .trust_error
                    .as_deref()
                    .map(|error| format!(" ({error})"))
                    .unwrap_or_default()
            ));
        }
    }
    line(format!(
        "HSTS         {}",
        certificates.hsts.as_deref().unwrap_or("none")
    ));
    for result in &report.mozilla {
        let verdict = if result.matches {
            "matches".to_string()
        } else {
            result.changes.join("; ")
        };
        let notes = if result.certificate_notes.is_empty() {
            String::new()
        } else {
            format!("  [certificate: {}]", result.certificate_notes.join("; "))
        };
        line(format!(
            "Mozilla {} {:<12} {verdict}{notes}",
            result.guideline, result.level
        ));
    }
    if report.malformed_answers > 0 {
        line("Mozilla      not judged: some answers could not be read".into());
    }
    let grade = &report.grade;
    if report.malformed_answers > 0 {
        line(format!("grade        none: {}", grade.reasons.join("; ")));
    } else {
        line(format!(
            "grade        {}{} (score {}: protocol {}, key exchange {}, cipher {})",
            grade.letter,
            if grade.letter == grade.letter_if_trusted {
                String::new()
            } else {
                format!(", {} if the certificate were fine", grade.letter_if_trusted)
            },
            grade.score,
            grade.protocol_score,
            grade.key_exchange_score,
            grade.cipher_score
        ));
        for reason in &grade.reasons {
            line(format!("             {reason}"));
        }
        for note in &grade.notes {
            line(format!("             note: {note}"));
        }
    }
    if let Some(costs) = &report.timing {
        for text in cost_lines(costs) {
            line(text);
        }
    }
    line(format!(
        "connections  {} in {:.2} s{}",
        report.connections,
        report.seconds,
        if report.probe_errors.is_empty() {
            String::new()
        } else {
            format!(
                "; {} probes failed ({})",
                report.probe_errors.len(),
                report.probe_errors.join("; ")
            )
        }
    ));
    write!(output::stdout(), "{text}").map_err(output::write_failed)
}

/// The cost table: one line per version × suite × group, its medians or why it was not timed.
pub fn cost_lines(costs: &tlslab_scan::cost::Costs) -> Vec<String> {
    let mut lines = vec![format!(
        "cost         {} handshakes per choice (+{} warm-up), certificate {}{}; {} connections in {:.2} s",
        costs.handshakes_per_choice,
        costs.warmup_per_choice,
        costs.certificate.as_deref().unwrap_or("unknown"),
        if costs.verified {
            ""
        } else {
            " (not verified: untrusted)"
        },
        costs.connections,
        costs.seconds
    )];
    if let Some(error) = &costs.error {
        lines.push(format!("             the timed run failed: {error}"));
    }
    let suite_width = costs
        .rows
        .iter()
        .map(|row| row.suite.len())
        .max()
        .unwrap_or(0);
    let group_width = costs
        .rows
        .iter()
        .map(|row| row.group.as_deref().map_or(1, str::len))
        .max()
        .unwrap_or(0)
        .max(5);
    lines.push(format!(
        "  {:<7}  {:<suite_width$}  {:<group_width$}  {:<7}  {:>3}  {:>9}  {:>9}",
        "version", "suite", "group", "client", "n", "handshake", "response"
    ));
    for row in &costs.rows {
        let group = row.group.as_deref().unwrap_or("-");
        let start = format!(
            "  {:<7}  {:<suite_width$}  {group:<group_width$}",
            row.version, row.suite
        );
        let millis = |value: Option<f64>| value.map_or("-".to_string(), |ms| format!("{ms:.2} ms"));
        lines.push(match &row.not_timed {
            Some(why) => format!("{start}  not timed: {why}"),
            None => format!(
                "{start}  {:<7}  {:>3}  {:>9}  {:>9}{}",
                row.backend.as_deref().unwrap_or("?"),
                row.handshakes,
                millis(row.median_handshake_ms),
                millis(row.median_server_response_ms),
                if row.errors > 0 {
                    format!("  ({} failed)", row.errors)
                } else {
                    String::new()
                }
            ),
        });
    }
    lines
}
