//! `tlslab scan HOST[:PORT]...`: what each server supports, Mozilla's verdict and a grade,
//! printed for a person (one screen) or as JSON. The scan workflow (tlslab-workflow) does
//! the work, with tlslab-scan's scanner.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use tlslab_scan::Report;
use tlslab_workflow::scan::{ScanRequest, Scanned, Timing};

use crate::failure::{exit_code, CliError};
use crate::output;

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
    /// The same as --out, for a results file (sqlite://PATH or a path), or a PostgreSQL
    /// database (postgres://USER@HOST/DATABASE), beside its runs; $TLSLAB_STORE is not read
    /// (a scan is stored only when asked).
    #[arg(long, value_name = "PATH", conflicts_with = "out")]
    pub store: Option<String>,
    /// With --out: replace an existing file that is not a results store (never a store or
    /// an input).
    #[arg(long)]
    pub force: bool,
}

/// A duration option: positive, as `example` shows.
fn duration(option: &str, text: &str, example: &str) -> Result<Duration, CliError> {
    tlslab_core::duration::parse(text)
        .ok()
        .filter(|duration| *duration > Duration::ZERO)
        .ok_or_else(|| CliError::usage(format!("{option} {text}: not a duration"), example))
}

fn request(args: &ScanArgs) -> Result<ScanRequest, CliError> {
    let timeout = duration(
        "--timeout",
        &args.timeout,
        "for example --timeout 5s or --timeout 500ms",
    )?;
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
        .filter(|&n| n > tlslab_workflow::scan::MAX_TIMING_HANDSHAKES)
    {
        // Said with --no-timing too: the number is wrong whatever else is asked.
        let timing = Some(Timing {
            handshakes: Some(handshakes),
            delay,
        });
        tlslab_workflow::scan::check_timing(timing)?;
    }
    Ok(ScanRequest {
        targets: args.targets.clone(),
        server_name: args.sni.clone(),
        concurrency: args.concurrency,
        timeout,
        ca: args.ca.clone(),
        timing: (!args.no_timing).then_some(Timing {
            handshakes: args.timing_handshakes,
            delay,
        }),
        out: scan_store(args)?,
        force: args.force,
        invocation: crate::run::invocation()?,
    })
}

/// The results store the scans are added to: `--out`, or `--store` (a file or a database).
fn scan_store(args: &ScanArgs) -> Result<Option<tlslab_store::Location>, CliError> {
    let Some(text) = &args.store else {
        return Ok(args.out.clone().map(tlslab_store::Location::File));
    };
    Ok(Some(
        tlslab_store::Location::parse(text).map_err(tlslab_workflow::WorkflowError::from)?,
    ))
}

pub fn scan(args: &ScanArgs) -> Result<i32, CliError> {
    let request = request(args)?;
    // No signal handler: Ctrl-C ends a scan at once, as it always has.
    let control = tlslab_workflow::Control::default();
    let mut printed = Ok(());
    let mut each = |scanned: &Scanned| match scanned {
        Scanned::Report(report) => {
            if !args.json && printed.is_ok() {
                printed = print_report(report);
                if printed.is_err() {
                    control.stop.request();
                }
            }
            // The findings are printed (they are what could be read), the reason for the
            // missing grade is the error.
            if report.malformed_answers > 0 {
                malformed_error(report).print();
            }
        }
        Scanned::Failed(error) => CliError::of(error).print(),
    };
    let outcome = tlslab_workflow::scan::scan(&request, &control, &mut each)?;
    printed?;
    if args.json {
        let text = serde_json::to_string_pretty(&outcome.reports)
            .map_err(|error| CliError::environment(format!("cannot write JSON: {error}"), ""))?;
        writeln!(output::stdout(), "{text}").map_err(output::write_failed)?;
    }
    Ok(outcome.kind().map_or(0, exit_code))
}

/// A scan that finished, but with probes whose answers could not be read: the exit code is
/// `run`'s for attempts that failed (its `not_tls`), the report has no grade.
fn malformed_error(report: &Report) -> CliError {
    let count = report.malformed_answers;
    CliError {
        code: exit_code(tlslab_workflow::ErrorKind::Failures),
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

/// The report for a person. Each line is escaped whole for a terminal
/// ([`tlslab_core::terminal::escape`]): what the server sent (a certificate's subject, issuer
/// and names, ALPN, HSTS, its errors) shows its controls and line breaks as escapes, and
/// tlslab's own words hold none to change.
fn print_report(report: &Report) -> Result<(), CliError> {
    let mut lines = Vec::new();
    for section in [
        header_and_versions,
        groups_and_extensions,
        certificates,
        judgements,
        costs_and_connections,
    ] {
        section(report, &mut lines);
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(&tlslab_core::terminal::escape(&line));
        text.push('\n');
    }
    write!(output::stdout(), "{text}").map_err(output::write_failed)
}

/// The target, and the versions it supports and refuses with their suites.
fn header_and_versions(report: &Report, out: &mut Vec<String>) {
    out.push(format!(
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
    out.push(format!(
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
        out.push(format!(
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
            out.push(format!("               {suite}{dhe}"));
        }
    }
}

/// The groups of each version, ALPN and renegotiation.
fn groups_and_extensions(report: &Report, out: &mut Vec<String>) {
    for (name, groups) in [
        ("TLS 1.3", &report.groups_tls13),
        ("TLS 1.2", &report.groups_tls12),
    ] {
        if let Some(groups) = groups {
            out.push(match (groups.groups.is_empty(), groups.complete) {
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
    out.push(format!(
        "ALPN         {}",
        match &report.alpn {
            None => "unknown (an ALPN probe failed)".to_string(),
            Some(alpn) if alpn.is_empty() => "none selected".to_string(),
            Some(alpn) => alpn.join(", "),
        }
    ));
    if let Some(secure) = report.secure_renegotiation {
        out.push(format!(
            "renegotiation {}",
            if secure {
                "secure (RFC 5746)"
            } else {
                "NOT secure (no RFC 5746 renegotiation_info)"
            }
        ));
    }
}

/// The certificate chain (and a dual-certificate server's other), with its checks.
fn certificates(report: &Report, out: &mut Vec<String>) {
    let certificates = &report.certificates;
    let yes_no = |value: Option<bool>| match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not checked",
    };
    if certificates.chain.is_empty() {
        out.push("certificate  none read".into());
    } else {
        out.push(format!(
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
            out.push(format!(
                "  {index} {}  {}  {}  {} to {}{}",
                certificate.subject,
                certificate.key,
                certificate.signature,
                certificate.not_before,
                certificate.not_after,
                if certificate.expired { " EXPIRED" } else { "" }
            ));
            out.push(format!("    issuer {}", certificate.issuer));
            if !certificate.names.is_empty() {
                out.push(format!("    names {}", certificate.names.join(", ")));
            }
        }
        // A dual-certificate server's other chain, one line each: the leaf and the checks.
        for other in &certificates.others {
            let Some(leaf) = other.chain.first() else {
                continue;
            };
            out.push(format!(
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
}

/// HSTS, Mozilla's verdicts and the grade.
fn judgements(report: &Report, out: &mut Vec<String>) {
    let certificates = &report.certificates;
    out.push(format!(
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
        out.push(format!(
            "Mozilla {} {:<12} {verdict}{notes}",
            result.guideline, result.level
        ));
    }
    if report.malformed_answers > 0 {
        out.push("Mozilla      not judged: some answers could not be read".into());
    }
    let grade = &report.grade;
    if report.malformed_answers > 0 {
        out.push(format!("grade        none: {}", grade.reasons.join("; ")));
    } else {
        out.push(format!(
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
            out.push(format!("             {reason}"));
        }
        for note in &grade.notes {
            out.push(format!("             note: {note}"));
        }
    }
}

/// The cost table and the connections the scan made.
fn costs_and_connections(report: &Report, out: &mut Vec<String>) {
    if let Some(costs) = &report.timing {
        out.extend(cost_lines(costs));
    }
    out.push(format!(
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
