//! How a summary names its Configs: the words every automatic label shares, said once above
//! the table (`all: aes128gcm x25519 ...`), then each Config by the words that tell it apart.
//! A label the user gave (`labels = [...]`, `--label`, a `[[config]]` table's `label`) is a
//! name chosen whole, and is shown whole: `without ECH` is never cut to `without`. An
//! automatic label whose every word the others share (the default backend, ECH off: words
//! left out of a label) is named by its values of the dimensions the Configs vary
//! (`rustls`, `ech off`), not by its whole label again. `compare --baseline` takes the
//! name shown as well as the full label.

use std::collections::BTreeSet;

use serde::Serialize;
use tlslab_store::{ConfigRow, Store, StoreError};

/// Each Config's label and the name a summary shows it by.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Names {
    /// The words every Config's label shares, shown once above the table; empty when no
    /// name leaves them out.
    pub common: String,
    /// Each Config's label and its name, in the Configs' order.
    pub shown: Vec<(String, String)>,
}

/// The labels the user chose in the run's experiment (TOML): `labels` and each
/// `[[config]]` table's `label`, trimmed as the expander trims them.
pub fn given_labels(experiment: &str) -> BTreeSet<String> {
    let Ok(experiment) = tlslab_core::Experiment::from_toml(experiment) else {
        return BTreeSet::new();
    };
    experiment
        .labels
        .iter()
        .map(|label| label.trim().to_string())
        .chain(experiment.explicit.iter().filter_map(|table| {
            table
                .get("label")
                .and_then(|label| label.as_str())
                .map(|label| label.trim().to_string())
        }))
        .collect()
}

impl Names {
    /// The names of `labels`, of which `given` are the user's: each automatic label without
    /// the words every label shares (a label left with none keeps its whole text), each
    /// given one whole.
    pub fn of_labels(labels: &[String], given: &BTreeSet<String>) -> Names {
        let automatic = labels.iter().any(|label| !given.contains(label));
        let (common, short) = if labels.len() >= 2 && automatic {
            crate::data::distinguishing_words(labels)
        } else {
            (String::new(), labels.to_vec())
        };
        let shown = labels
            .iter()
            .zip(short)
            .map(|(label, short)| {
                let name = if given.contains(label) {
                    label.clone()
                } else {
                    short
                };
                (label.clone(), name)
            })
            .collect::<Vec<_>>();
        // Said once only when some name leaves the words out.
        let shortened = shown.iter().any(|(label, name)| label != name);
        Names {
            common: if shortened { common } else { String::new() },
            shown,
        }
    }

    /// The names of stored Configs: as [`Names::of_labels`], and an automatic label whose
    /// every word the others share named by its values of the dimensions they vary.
    pub fn of(rows: &[ConfigRow], given: &BTreeSet<String>) -> Names {
        let labels: Vec<String> = rows.iter().map(|row| row.label.clone()).collect();
        let mut names = Names::of_labels(&labels, given);
        if names.common.is_empty() {
            return names;
        }
        // Both libraries as one `backend` when both vary (`rustls`, not `rustls rustls`).
        let varied = crate::dimensions::with_backend(crate::dimensions::varied_dimensions(rows));
        let mut taken: BTreeSet<String> = names.shown.iter().map(|(_, n)| n.clone()).collect();
        for (row, (label, name)) in rows.iter().zip(names.shown.iter_mut()) {
            if given.contains(label) || name != label {
                continue;
            }
            let values: Vec<String> = varied
                .iter()
                .filter_map(|dimension| {
                    let value = crate::dimensions::dimension_value(dimension, row)?;
                    // A value that does not say its dimension says it with its name.
                    Some(match value.as_str() {
                        "off" | "on" | "none" | "0" | "–" => format!("{dimension} {value}"),
                        _ => value,
                    })
                })
                .collect();
            let by_values = values.join(" ");
            if !by_values.is_empty() && !taken.contains(&by_values) {
                taken.insert(by_values.clone());
                *name = by_values;
            }
        }
        names
    }

    /// The names of a store's Configs, the user's labels read from its experiment.
    pub fn of_store(store: &Store) -> Result<Names, StoreError> {
        let given = given_labels(&store.run()?.experiment);
        Ok(Names::of(&store.configs()?, &given))
    }

    /// The name `label` is shown by (the label itself for one these names do not know).
    pub fn name(&self, label: &str) -> String {
        self.shown
            .iter()
            .find(|(known, _)| known == label)
            .map(|(_, name)| name.clone())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| label.to_string())
    }

    /// The label of the Config shown as `name`, when exactly one is.
    pub fn label_of(&self, name: &str) -> Option<&str> {
        let mut found = self
            .shown
            .iter()
            .filter(|(_, shown)| shown == name)
            .map(|(label, _)| label.as_str());
        let label = found.next()?;
        found.next().is_none().then_some(label)
    }

    /// `all: WORDS` and a newline, or nothing when no name leaves words out.
    pub fn common_line(&self) -> String {
        if self.common.is_empty() {
            String::new()
        } else {
            format!("all: {}\n", self.common)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimensions::tests::row;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn given_labels_are_shown_whole_and_never_factored() {
        let labels = strings(&["without ECH", "with ECH"]);
        let given: BTreeSet<String> = labels.iter().cloned().collect();
        let names = Names::of_labels(&labels, &given);
        assert_eq!(names.common_line(), "");
        assert_eq!(names.name("without ECH"), "without ECH");
        assert_eq!(names.name("with ECH"), "with ECH");
        // Automatic labels still lose what they share.
        let names = Names::of_labels(&labels, &BTreeSet::new());
        assert_eq!(names.common_line(), "all: ECH\n");
        assert_eq!(names.name("with ECH"), "with");
    }

    #[test]
    fn a_label_of_shared_words_alone_is_named_by_its_values() {
        let rows = vec![
            row(1, "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1", |_| {}),
            row(
                2,
                "tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1 openssl",
                |c| {
                    c.client_backend = Some("openssl".into());
                    c.server_backend = Some("openssl".into());
                },
            ),
        ];
        let names = Names::of(&rows, &BTreeSet::new());
        assert_eq!(
            names.common_line(),
            "all: tls1.3 aes128gcm x25519 ecdsa-p256 chain1 c1\n"
        );
        assert_eq!(names.name(&rows[0].label), "rustls");
        assert_eq!(names.name(&rows[1].label), "openssl");
        // The name shown finds the Config, as its label does.
        assert_eq!(names.label_of("rustls"), Some(rows[0].label.as_str()));
        assert_eq!(names.label_of("nothing"), None);
        let ech = vec![
            row(1, "tls1.3 aes128gcm openssl", |c| c.ech = "off".into()),
            row(2, "tls1.3 aes128gcm openssl ech", |c| c.ech = "on".into()),
        ];
        assert_eq!(
            Names::of(&ech, &BTreeSet::new()).name("tls1.3 aes128gcm openssl"),
            "ech off"
        );
    }

    #[test]
    fn given_labels_come_from_the_labels_list_and_the_tables() {
        let given = given_labels(
            "labels = [\" fast \", \"slow\"]\n[[config]]\nlabel = \"legacy\"\ntls = \"1.2\"\n",
        );
        assert_eq!(
            given.into_iter().collect::<Vec<_>>(),
            ["fast", "legacy", "slow"]
        );
    }
}
