//! The human-readable summary.

use std::fmt::Write;

use tlslab_core::Phase;

use crate::summary::RunSummary;

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

pub fn render_text(summary: &RunSummary) -> String {
    let mut out = String::new();
    for config in &summary.configs {
        let _ = writeln!(out, "{}", config.label);
        if let Some(trust) = &config.trust {
            let _ = writeln!(out, "  trust      {trust}");
        }
        match &config.handshake_ms {
            Some(h) => {
                let _ = writeln!(
                    out,
                    "  handshake  median {} ms   mean {} ms (95% CI {}–{})   sd {}   p90 {}   p99 {}",
                    millis(h.median),
                    millis(h.mean),
                    millis(h.mean_ci[0]),
                    millis(h.mean_ci[1]),
                    millis(h.sd),
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
        if let Some(ttfb) = &config.ttfb_ms {
            let _ = writeln!(
                out,
                "  ttfb       median {} ms   p90 {}   p99 {}",
                millis(ttfb.median),
                millis(ttfb.p90),
                millis(ttfb.p99)
            );
        }
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
        for (class, example) in &config.error_examples {
            let _ = writeln!(out, "             {class}: {example}");
            if let Some(diagnosis) = config.diagnoses.get(class) {
                let _ = writeln!(out, "             why: {diagnosis}");
            }
        }
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
        if let (Some(hello), Some(flight)) = (config.client_hello_bytes, config.server_flight_bytes)
        {
            let _ = writeln!(
                out,
                "  bytes      ClientHello {} · server flight {} (medians)",
                thousands(hello as f64),
                thousands(flight as f64)
            );
        }
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
        if let Some(replay) = &config.replay {
            let _ = writeln!(
                out,
                "  replay     {} captured 0-RTT flights re-sent: {} rejected as replays, {} accepted",
                replay.sent, replay.rejected, replay.accepted
            );
        }
        if let Some(stopping) = &config.stopping {
            let _ = writeln!(out, "  stopping   {stopping}");
        }
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
        out.push('\n');
    }
    if let Some(comparisons) = &summary.comparisons {
        out.push_str(&crate::comparison::render_comparisons(
            comparisons,
            &summary.comparison_metric,
            "ms",
        ));
        out.push('\n');
    }
    if !summary.gains.is_empty() {
        out.push_str(&render_gains(&summary.gains));
        out.push('\n');
    }
    if !summary.knees.is_empty() {
        out.push_str("knee (p99 latency from intended start against arrival rate):\n");
        for knee in &summary.knees {
            let _ = writeln!(out, "  {}", knee.describe());
        }
        out.push('\n');
    }
    for warning in &summary.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    let _ = writeln!(
        out,
        "{} attempts, {} errors{}{} · results: {}",
        summary.attempted,
        summary.errors,
        summary
            .duration_s
            .map_or(String::new(), |s| format!(" in {s:.1} s")),
        summary
            .seed
            .map_or(String::new(), |seed| format!(" · seed {seed}")),
        summary.store
    );
    out
}

/// Each technique's gain over its full-handshake baseline, with the 95% interval.
pub fn render_gains(gains: &[crate::summary::Gain]) -> String {
    let mut out = String::from("gains over the full handshake (median, 95% bootstrap CI):\n");
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
            gain.label,
            gain.baseline
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(millis(0.41234), "0.4123");
        assert_eq!(millis(201.37), "201.4");
    }
}
