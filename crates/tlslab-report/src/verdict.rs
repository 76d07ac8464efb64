//! A summary's answer, one verdict per line it prints: what is compared, credited to which
//! dimensions, on which metric. The text is made from these, and `--json` prints them, so the
//! two say the same thing.

use std::fmt::Write as _;

use serde::Serialize;

use crate::comparison::{p_value, ratio_with_interval};
use crate::dimensions::joined;

/// What a verdict sets against what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// A value of one dimension (or of dimensions that change together) against its
    /// baseline value, every other dimension held fixed (`compare --by`'s pooled answer).
    Dimension,
    /// One Config against the first: they may differ in several dimensions, all named.
    Config,
}

/// One verdict of a summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// What the verdict sets against what: by dimension, or a Config against the first.
    pub kind: VerdictKind,
    /// Every dimension in which the Configs compared differ (by `--by` name), in flag order:
    /// the effect is theirs together. One name only when they differ in that one alone.
    pub dimensions: Vec<String>,
    /// The other side: the dimensions' values (`1.3`, `aes256gcm+ecdsa-p256`), or a Config's
    /// label.
    pub other: String,
    /// The baseline side, in the same terms.
    pub baseline: String,
    /// The phase compared (`handshake`, `ttfb`, `total`, ...): the summary's table's.
    pub metric: String,
    /// The change in words, as printed: `30.9% faster`, `no detectable difference`.
    pub verdict: String,
    /// The ratio of medians (other / baseline) and its 95% interval.
    pub ratio: f64,
    /// See `ratio`.
    pub ratio_ci: [f64; 2],
    /// The test's p: van Elteren's over strata, a lone stratum's Mann-Whitney, or (a Config
    /// against the first) Mann-Whitney's adjusted by Holm across the comparisons.
    pub p_value: Option<f64>,
    /// The strata pooled, for a by-dimension answer.
    pub strata: Option<usize>,
    /// The dimensions the effect depends on (a by-dimension answer).
    pub depends_on: Vec<String>,
}

impl Verdict {
    /// The verdict as one line, `name` shortening a Config's label (the words every Config
    /// shares are said once above the table):
    /// `  suite+cert aes256gcm+ecdsa-p256 vs aes128gcm+rsa2048: 30.9% faster in handshake (…)`
    /// or `  tls1.3 chacha20 [tls+suite+cert]: 12.0% faster in handshake (…)`.
    pub fn line(&self, name: &dyn Fn(&str) -> String) -> String {
        let mut line = match self.kind {
            VerdictKind::Dimension => format!(
                "  {} {} vs {}: ",
                joined(&self.dimensions),
                self.other,
                self.baseline
            ),
            VerdictKind::Config => {
                format!("  {} [{}]: ", name(&self.other), joined(&self.dimensions))
            }
        };
        let _ = write!(
            line,
            "{} in {} ({}",
            self.verdict,
            self.metric,
            ratio_with_interval(self.ratio, self.ratio_ci)
        );
        match (self.strata, self.p_value) {
            (Some(strata), _) => {
                let _ = write!(
                    line,
                    ", {strata} {}",
                    if strata == 1 { "stratum" } else { "strata" }
                );
            }
            (None, Some(p)) => {
                let _ = write!(line, ", p {}", p_value(p));
            }
            (None, None) => {}
        }
        line.push(')');
        if !self.depends_on.is_empty() {
            let _ = write!(line, "; depends on {}", self.depends_on.join(" and "));
        }
        line
    }
}

/// The verdicts of a summary under their heading, which names the metric and what they set
/// against what; nothing without verdicts.
pub fn render_verdicts(verdicts: &[Verdict], name: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    let Some(first) = verdicts.first() else {
        return out;
    };
    let _ = match first.kind {
        VerdictKind::Dimension => writeln!(
            out,
            "{} by each dimension, the others held fixed (median ratio, 95% CI over strata):",
            first.metric
        ),
        VerdictKind::Config => writeln!(
            out,
            "{} of each Config against '{}' [the dimensions it differs in] (median ratio, 95% CI, Holm p):",
            first.metric,
            name(&first.baseline)
        ),
    };
    for verdict in verdicts {
        let _ = writeln!(out, "{}", verdict.line(name));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_names_its_dimensions_and_its_metric() {
        let by_dimension = Verdict {
            kind: VerdictKind::Dimension,
            dimensions: vec!["suite".into(), "cert".into()],
            other: "aes256gcm+ecdsa-p256".into(),
            baseline: "aes128gcm+rsa2048".into(),
            metric: "handshake".into(),
            verdict: "30.9% faster".into(),
            ratio: 0.691,
            ratio_ci: [0.68, 0.70],
            p_value: Some(0.0001),
            strata: Some(1),
            depends_on: Vec::new(),
        };
        let same = |label: &str| label.to_string();
        assert_eq!(
            by_dimension.line(&same),
            "  suite+cert aes256gcm+ecdsa-p256 vs aes128gcm+rsa2048: 30.9% faster in handshake (×0.691 [0.680, 0.700], 1 stratum)"
        );
        let against_the_first = Verdict {
            kind: VerdictKind::Config,
            dimensions: vec!["tls".into(), "suite".into()],
            other: "tls1.3 chacha20 x25519".into(),
            baseline: "tls1.2 aes128gcm x25519".into(),
            strata: None,
            ..by_dimension
        };
        let short = |label: &str| label.replace(" x25519", "");
        let text = render_verdicts(&[against_the_first], &short);
        assert_eq!(
            text,
            "handshake of each Config against 'tls1.2 aes128gcm' [the dimensions it differs in] (median ratio, 95% CI, Holm p):\n  tls1.3 chacha20 [tls+suite]: 30.9% faster in handshake (×0.691 [0.680, 0.700], p < 0.001)\n"
        );
    }
}
