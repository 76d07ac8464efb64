//! The answer a summary gives to the question its Configs ask, on one metric, with every
//! contrast credited only where it holds (DESIGN.md section 6):
//!
//! - Configs that cross two or more dimensions (every Config takes part in a contrast that
//!   changes one dimension, or dimensions that always change together) are answered by
//!   dimension, the others held fixed (`compare --by` for each), each answer named by every
//!   dimension its contrasts change (`suite+cert` when each suite came with its own
//!   certificate). A dimension no contrast changes alone is left out, with the reason.
//! - Otherwise (one dimension varies, or hand-picked Configs that differ in several at once)
//!   each Config is set against the first, each line naming every dimension in which the two
//!   differ.
//! - Each session technique against the full handshake that differs from it in the
//!   technique's dimensions alone, named by them.

use std::collections::BTreeSet;

use tlslab_stats::CompareOptions;
use tlslab_store::{ConfigRow, StoreError};

use crate::comparison::{compare_groups, Comparisons};
use crate::dimensions::{differences, TECHNIQUES};
use crate::factorial::Factorial;
use crate::summary::Gain;
use crate::verdict::Verdict;

/// A Config's values of the metric, in milliseconds.
pub(crate) type Values<'a> = dyn Fn(&ConfigRow) -> Result<Vec<f64>, StoreError> + 'a;

/// What a summary concludes from its Configs' values of one metric.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    /// Each Config against the first (with two or more Configs).
    pub comparisons: Option<Comparisons>,
    /// The by-dimension comparisons, when they are the answer.
    pub factorials: Vec<Factorial>,
    /// The answer's lines: the by-dimension answers, or each Config against the first.
    pub verdicts: Vec<Verdict>,
    /// What the answer could not say, and why.
    pub left_out: Vec<String>,
    pub gains: Vec<Gain>,
    pub warnings: Vec<String>,
}

/// The answer for `rows`, whose values of `metric` `values` gives.
pub(crate) fn answer(
    rows: &[ConfigRow],
    values: &Values,
    metric: &str,
    options: &CompareOptions,
) -> Result<Answer, StoreError> {
    let mut answer = Answer {
        gains: gains(rows, values, metric, options)?,
        ..Answer::default()
    };
    if rows.len() < 2 {
        return Ok(answer);
    }
    let groups = rows
        .iter()
        .map(|row| Ok((row.label.clone(), values(row)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    let comparable: BTreeSet<String> = groups
        .iter()
        .filter(|(_, values)| values.len() >= 2)
        .map(|(label, _)| label.clone())
        .collect();
    match compare_groups(groups, metric, options) {
        Ok((set, left_out)) => {
            if !left_out.is_empty() {
                answer.warnings.push(format!(
                    "left out of the comparison (fewer than 2 successful samples): {}",
                    left_out.join(", ")
                ));
            }
            answer.comparisons = Some(Comparisons::new(set, metric, rows));
        }
        Err(error) => answer.warnings.push(format!(
            "no comparison between configs: {}",
            crate::in_one_line(&error)
        )),
    }
    let dimensions = crate::dimensions::varied_dimensions(rows);
    if dimensions.len() >= 2 {
        let mut factorials = Vec::new();
        let mut left_out = Vec::new();
        for dimension in &dimensions {
            match crate::factorial::factorial_of(rows, dimension, None, metric, options, values) {
                Ok(factorial) => {
                    left_out.extend(
                        factorial
                            .left_out
                            .iter()
                            .map(|reason| format!("{} {reason}", factorial.name())),
                    );
                    factorials.push(factorial);
                }
                Err(error) => left_out.push(format!("{dimension}: {}", crate::in_one_line(&error))),
            }
        }
        let compared: BTreeSet<&str> = factorials
            .iter()
            .flat_map(|factorial| &factorial.contrasts)
            .flat_map(|contrast| {
                [
                    contrast.comparison.baseline.as_str(),
                    contrast.comparison.other.as_str(),
                ]
            })
            .collect();
        // Crossed: every Config with samples to compare is in a contrast of one dimension
        // (or of dimensions that change together). Otherwise a Config the by-dimension
        // answers leave out would go unanswered, and hand-picked Configs are better set
        // against the first, naming what differs.
        if !compared.is_empty()
            && comparable
                .iter()
                .all(|label| compared.contains(label.as_str()))
        {
            answer.verdicts = crate::factorial::answers(&factorials, options.alpha);
            answer.factorials = factorials;
            answer.left_out = left_out;
            return Ok(answer);
        }
    }
    if let Some(comparisons) = &answer.comparisons {
        answer.verdicts = comparisons.verdicts(options.alpha);
    }
    Ok(answer)
}

/// What a Config does beyond a full handshake, naming every technique it sets, or `None`
/// for a full handshake.
fn technique(config: &ConfigRow) -> Option<String> {
    let mut names = Vec::new();
    if config.early_data_bytes > 0 {
        names.push(format!("0-RTT ({})", config.resumption));
    } else if config.resumption != "off" {
        names.push(format!("resumption ({})", config.resumption));
    }
    if config.cert_cache {
        names.push("certificate cache".to_string());
    }
    (!names.is_empty()).then(|| names.join(" + "))
}

/// Pairs every technique Config with its full-handshake baseline, the Config that differs from
/// it in the techniques' dimensions alone, and measures the gain on `metric`.
pub(crate) fn gains(
    configs: &[ConfigRow],
    values: &Values,
    metric: &str,
    options: &CompareOptions,
) -> Result<Vec<Gain>, StoreError> {
    let mut gains = Vec::new();
    for config in configs {
        let Some(name) = technique(config) else {
            continue;
        };
        let Some(baseline) = configs.iter().find(|other| {
            technique(other).is_none()
                && differences(other, config)
                    .iter()
                    .all(|dimension| TECHNIQUES.contains(dimension))
        }) else {
            continue;
        };
        let (values, baseline_values) = (values(config)?, values(baseline)?);
        let Ok(comparison) = tlslab_stats::compare(
            &baseline.label,
            &baseline_values,
            &config.label,
            &values,
            options,
        ) else {
            continue;
        };
        gains.push(Gain {
            technique: name,
            dimensions: differences(baseline, config)
                .into_iter()
                .map(String::from)
                .collect(),
            label: config.label.clone(),
            baseline: baseline.label.clone(),
            metric: metric.to_string(),
            median_ms: comparison.median_other,
            baseline_median_ms: comparison.median_baseline,
            gain: 1.0 - comparison.ratio_median,
            gain_ci: [
                1.0 - comparison.ratio_median_ci[1],
                1.0 - comparison.ratio_median_ci[0],
            ],
            p: comparison.mann_whitney_p,
        });
    }
    Ok(gains)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimensions::tests::row;
    use crate::dimensions::{differences, joined};
    use crate::verdict::{render_verdicts, VerdictKind};
    use proptest::prelude::*;

    /// Each dimension a `[[config]]` table can set, with the values a test draws from: the
    /// first is the default every Config starts from.
    type Setter = fn(&mut ConfigRow, usize);
    const SETTINGS: &[(usize, Setter)] = &[
        (2, |c, i| c.version = ["1.3", "1.2"][i].into()),
        (3, |c, i| {
            c.suite = ["aes128gcm", "aes256gcm", "chacha20"][i].into()
        }),
        (3, |c, i| {
            c.cert = Some(["ecdsa-p256", "rsa2048", "ed25519"][i].into())
        }),
        (2, |c, i| c.concurrency = Some([1, 4][i])),
        (2, |c, i| c.resumption = ["off", "tickets"][i].into()),
        (2, |c, i| c.early_data_bytes = [0, 1024][i]),
        (2, |c, i| c.cert_cache = i == 1),
        (2, |c, i| c.transport = ["tcp", "quic"][i].into()),
        (2, |c, i| c.http = ["1.1", "3"][i].into()),
        (2, |c, i| c.rtt_ns = [None, Some(30_000_000)][i]),
        (2, |c, i| c.jitter_ns = [None, Some(5_000_000)][i]),
        (2, |c, i| {
            c.client_backend = Some(["rustls", "openssl"][i].into())
        }),
        (2, |c, i| {
            c.server_backend = Some(["rustls", "openssl"][i].into())
        }),
    ];

    /// A set of explicit Configs: each sets a few dimensions (drawn from 2 to 4 the set
    /// varies, so that some cross, some change together and some differ in several at
    /// once) and has a few values of the metric. Configs equal in every dimension are one,
    /// as the expander makes them.
    fn configs() -> impl Strategy<Value = (Vec<ConfigRow>, Vec<Vec<f64>>)> {
        let varied = proptest::sample::subsequence((0..SETTINGS.len()).collect::<Vec<_>>(), 2..=4);
        (varied, 2..=7usize).prop_flat_map(|(varied, count)| {
            let config = varied
                .iter()
                .map(|&setting| 0..SETTINGS[setting].0)
                .collect::<Vec<_>>();
            let values = proptest::collection::vec(1.0..10.0f64, 2..8);
            (
                Just(varied),
                proptest::collection::vec((config, values), count),
            )
                .prop_map(|(varied, drawn)| {
                    let mut rows: Vec<ConfigRow> = Vec::new();
                    let mut values = Vec::new();
                    for (choices, metric) in drawn {
                        let mut config = row(rows.len() as i64 + 1, "", |_| {});
                        for (&setting, &choice) in varied.iter().zip(&choices) {
                            (SETTINGS[setting].1)(&mut config, choice);
                        }
                        config.label = format!("config{}", rows.len() + 1);
                        if rows
                            .iter()
                            .all(|kept| !differences(kept, &config).is_empty())
                        {
                            rows.push(config);
                            values.push(metric);
                        }
                    }
                    (rows, values)
                })
        })
    }

    /// The Configs labelled `baseline` and `other` differ in exactly `credited`.
    fn differ_in_exactly(rows: &[ConfigRow], baseline: &str, other: &str, credited: &[String]) {
        let find = |label: &str| {
            rows.iter()
                .find(|row| row.label == label)
                .unwrap_or_else(|| panic!("no Config '{label}'"))
        };
        let differ = differences(find(baseline), find(other));
        assert_eq!(
            differ, credited,
            "'{other}' against '{baseline}' credited to {credited:?}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// No printed or JSON contrast is ever credited to a dimension unless the Configs
        /// compared differ in that dimension alone: every verdict, every stratum's contrast,
        /// every Config against the first and every gain names every dimension in which its
        /// Configs differ, and no other; and the text says what the JSON says.
        #[test]
        fn contrasts_are_credited_only_where_they_hold((rows, values) in configs()) {
            let options = CompareOptions {
                resamples: 99,
                ..CompareOptions::default()
            };
            let of = |config: &ConfigRow| -> Result<Vec<f64>, StoreError> {
                let index = rows.iter().position(|row| row.id == config.id).unwrap_or(0);
                Ok(values[index].clone())
            };
            let answer = answer(&rows, &of, "handshake", &options).unwrap();
            if rows.len() >= 2 {
                prop_assert!(!answer.verdicts.is_empty(), "two Configs and no verdict");
            }
            // The JSON's contrasts.
            let json = serde_json::to_value((
                &answer.verdicts,
                &answer.factorials,
                &answer.comparisons,
                &answer.gains,
            ))
            .unwrap();
            let strings = |value: &serde_json::Value| -> Vec<String> {
                value
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|name| name.as_str().unwrap().to_string())
                    .collect()
            };
            for factorial in json[1].as_array().unwrap() {
                for contrast in factorial["contrasts"].as_array().unwrap() {
                    let credited = strings(&contrast["dimensions"]);
                    prop_assert_eq!(&credited, &strings(&factorial["dimensions"]));
                    differ_in_exactly(
                        &rows,
                        contrast["comparison"]["baseline"].as_str().unwrap(),
                        contrast["comparison"]["other"].as_str().unwrap(),
                        &credited,
                    );
                }
            }
            if let Some(comparisons) = json[2].as_object() {
                let baseline = comparisons["baseline"].as_str().unwrap();
                for compared in comparisons["comparisons"].as_array().unwrap() {
                    differ_in_exactly(
                        &rows,
                        baseline,
                        compared["other"].as_str().unwrap(),
                        &strings(&compared["dimensions"]),
                    );
                }
            }
            for gain in json[3].as_array().unwrap() {
                let credited = strings(&gain["dimensions"]);
                prop_assert!(credited.iter().all(|name| TECHNIQUES.contains(&name.as_str())));
                differ_in_exactly(
                    &rows,
                    gain["baseline"].as_str().unwrap(),
                    gain["label"].as_str().unwrap(),
                    &credited,
                );
            }
            // The printed verdicts: each line credits what its first words (a by-dimension
            // answer) or its brackets (a Config against the first) name, and every pair of
            // Configs behind it differs in exactly that.
            let text = render_verdicts(&answer.verdicts, &|label| label.to_string());
            let lines: Vec<&str> = text.lines().skip(1).collect();
            prop_assert_eq!(lines.len(), answer.verdicts.len());
            for (line, verdict) in lines.iter().zip(&answer.verdicts) {
                prop_assert!(line.contains(&format!(" in {} (", verdict.metric)), "{}", line);
                match verdict.kind {
                    VerdictKind::Dimension => {
                        let named = line.trim_start().split(' ').next().unwrap();
                        let credited: Vec<String> =
                            named.split('+').map(String::from).collect();
                        prop_assert_eq!(named, joined(&verdict.dimensions));
                        let factorial = answer
                            .factorials
                            .iter()
                            .find(|factorial| factorial.dimensions == credited)
                            .expect("the factorial behind a by-dimension answer");
                        let behind: Vec<_> = factorial
                            .contrasts
                            .iter()
                            .filter(|contrast| factorial.value(&contrast.level) == verdict.other)
                            .collect();
                        prop_assert!(!behind.is_empty(), "{}", line);
                        for contrast in behind {
                            differ_in_exactly(
                                &rows,
                                &contrast.comparison.baseline,
                                &contrast.comparison.other,
                                &credited,
                            );
                        }
                    }
                    VerdictKind::Config => {
                        let named = line
                            .split_once(" [")
                            .and_then(|(_, rest)| rest.split_once("]: "))
                            .map(|(named, _)| named)
                            .expect("a Config's line names what differs in brackets");
                        let credited: Vec<String> =
                            named.split('+').map(String::from).collect();
                        differ_in_exactly(&rows, &verdict.baseline, &verdict.other, &credited);
                    }
                }
            }
        }
    }

    #[test]
    fn hand_picked_configs_are_set_against_the_first_naming_what_differs() {
        // examples/explicit-configs.toml: a TLS 1.2 pair that changes suite and certificate
        // together, and a TLS 1.3 Config that changes all three.
        let rows = [
            row(1, "ecdhe-rsa aes128gcm", |c| {
                c.version = "1.2".into();
                c.cert = Some("rsa2048".into());
            }),
            row(2, "ecdhe-ecdsa aes256gcm", |c| {
                c.version = "1.2".into();
                c.suite = "aes256gcm".into();
            }),
            row(3, "tls1.3 chacha20 ed25519", |c| {
                c.suite = "chacha20".into();
                c.cert = Some("ed25519".into());
            }),
        ];
        let of = |config: &ConfigRow| -> Result<Vec<f64>, StoreError> {
            let base = [10.0, 7.0, 5.0][config.id as usize - 1];
            Ok((0..20).map(|i| base + f64::from(i) * 0.01).collect())
        };
        let answer = answer(&rows, &of, "handshake", &CompareOptions::default()).unwrap();
        assert!(answer.factorials.is_empty(), "{:?}", answer.factorials);
        let credited: Vec<&[String]> = answer
            .verdicts
            .iter()
            .map(|verdict| verdict.dimensions.as_slice())
            .collect();
        assert_eq!(
            credited,
            [
                &["suite".to_string(), "cert".to_string()][..],
                &["tls".to_string(), "suite".to_string(), "cert".to_string()][..]
            ]
        );
        // `compare --by suite` names the certificate with it.
        let by_suite = crate::factorial::factorial_of(
            &rows,
            "suite",
            None,
            "handshake",
            &CompareOptions::default(),
            &of,
        )
        .unwrap();
        assert_eq!(by_suite.dimensions, ["suite", "cert"]);
        assert_eq!(by_suite.name(), "suite+cert");
        assert_eq!(by_suite.value(&by_suite.baseline), "aes128gcm+rsa2048");
        let text = crate::factorial::render_factorial(&by_suite);
        assert!(
            text.contains("  aes256gcm+ecdsa-p256 vs aes128gcm+rsa2048: ratio 0.70"),
            "{text}"
        );
    }

    #[test]
    fn a_value_no_config_changes_alone_is_left_out_with_the_reason() {
        // examples/cipher-cert-matrix.toml in small: TLS 1.2 runs only its own suite, TLS 1.3
        // two others, each at two RTTs.
        let mut rows = Vec::new();
        for rtt in [30_000_000, 100_000_000] {
            for (version, suite) in [
                ("1.2", "ecdhe-rsa"),
                ("1.3", "aes256gcm"),
                ("1.3", "chacha20"),
            ] {
                let id = rows.len() as i64 + 1;
                rows.push(row(id, &format!("{version} {suite} {rtt}"), |c| {
                    c.version = version.into();
                    c.suite = suite.into();
                    c.rtt_ns = Some(rtt);
                }));
            }
        }
        let of = |config: &ConfigRow| -> Result<Vec<f64>, StoreError> {
            Ok((0..10)
                .map(|i| config.id as f64 + f64::from(i) * 0.01)
                .collect())
        };
        let answer = answer(&rows, &of, "handshake", &CompareOptions::default()).unwrap();
        // Every Config is in a contrast (of the RTT), so the answer is by dimension ...
        assert!(!answer.factorials.is_empty());
        let suite = answer
            .factorials
            .iter()
            .find(|factorial| factorial.by == "suite")
            .unwrap();
        // ... the suites are set against the first one a Config shares everything else with,
        assert_eq!(suite.baseline, "aes256gcm");
        // ... and what no contrast changes alone is left out, saying why.
        assert_eq!(
            answer.left_out,
            [
                "tls: no two Configs differ in tls alone: the closest pairs that change it also change suite",
                "suite ecdhe-rsa: no Config with it differs from one with aes256gcm in suite alone",
            ]
        );
    }
}
