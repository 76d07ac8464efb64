//! [`Page`]: a web page as page mode loads it, a document and its resources (`86:30KB` is 86
//! resources of 30 kB each, several groups comma-separated), as the website case study
//! measured page load times over HTTP and HTTPS.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::config::MAX_BODY;
use crate::dimension::InvalidValue;

/// The most resources one page has: far beyond any real page, and each is a request.
pub const MAX_RESOURCES: u64 = 10_000;

/// A page's resources: groups of (count, bytes each), in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub groups: Vec<(u64, u64)>,
}

impl Page {
    /// Every resource's size, in order.
    pub fn resources(&self) -> impl Iterator<Item = u64> + '_ {
        self.groups
            .iter()
            .flat_map(|&(count, bytes)| std::iter::repeat_n(bytes, count as usize))
    }

    /// How many resources the page has (the document not counted).
    pub fn count(&self) -> u64 {
        self.groups.iter().map(|(count, _)| count).sum()
    }
}

/// `30KB`, `1MiB`, `512`: bytes, decimal (kB, MB) or binary (KiB, MiB) units.
fn parse_bytes(text: &str) -> Result<u64, InvalidValue> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| {
        InvalidValue(format!(
            "resource size '{text}' is not a number of bytes (for example 30KB)"
        ))
    })?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        other => {
            return Err(InvalidValue(format!(
                "resource size '{text}' has an unknown unit '{other}' (use B, KB, MB, KiB or MiB)"
            )))
        }
    };
    let bytes = number * scale;
    if !bytes.is_finite() || bytes > MAX_BODY as f64 {
        return Err(InvalidValue(format!(
            "resource size '{text}' is above the lab server's 64 MiB"
        )));
    }
    Ok(bytes.round() as u64)
}

impl FromStr for Page {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<Page, InvalidValue> {
        let mut groups = Vec::new();
        for group in text.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            let (count, bytes) = group.split_once(':').ok_or_else(|| {
                InvalidValue(format!(
                    "page group '{group}' is not COUNT:SIZE (for example 86:30KB)"
                ))
            })?;
            let count: u64 = count.trim().parse().map_err(|_| {
                InvalidValue(format!(
                    "page group '{group}': '{count}' is not a whole number of resources"
                ))
            })?;
            groups.push((count, parse_bytes(bytes)?));
        }
        let page = Page { groups };
        if page.count() == 0 || page.count() > MAX_RESOURCES {
            return Err(InvalidValue(format!(
                "page '{text}' has {} resources; a page has 1 to {MAX_RESOURCES}",
                page.count()
            )));
        }
        Ok(page)
    }
}

impl fmt::Display for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|(count, bytes)| format!("{count}:{bytes}"))
            .collect();
        f.write_str(&groups.join(","))
    }
}

impl Serialize for Page {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Page {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_parse_their_groups_and_round_trip() {
        let page: Page = "86:30KB, 2:1MiB,1:512".parse().unwrap();
        assert_eq!(page.groups, vec![(86, 30_000), (2, 1_048_576), (1, 512)]);
        assert_eq!(page.count(), 89);
        assert_eq!(page.resources().filter(|&size| size == 30_000).count(), 86);
        assert_eq!(page.to_string().parse::<Page>().unwrap(), page);
    }

    #[test]
    fn bad_pages_say_what_would_do() {
        for (text, expected) in [
            ("86", "COUNT:SIZE"),
            ("x:30KB", "whole number"),
            ("2:30XB", "unknown unit"),
            ("2:100MB", "64 MiB"),
            ("0:1KB", "1 to 10000"),
            ("20000:1KB", "1 to 10000"),
            ("", "1 to 10000"),
        ] {
            let error = text.parse::<Page>().unwrap_err();
            assert!(error.0.contains(expected), "{text}: {error}");
        }
    }
}
