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
    /// Each group: how many resources, and the bytes of each.
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
        InvalidValue::new(format!(
            "resource size '{text}' is not a number of bytes (for example 30KB)"
        ))
    })?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(InvalidValue::new(format!(
                "resource size '{text}' has an unknown unit '{other}' (use B, KB, MB, KiB or MiB)"
            )))
        }
    };
    let bytes = number * scale;
    if !bytes.is_finite() || bytes > MAX_BODY as f64 {
        return Err(InvalidValue::new(format!(
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
                InvalidValue::new(format!(
                    "page group '{group}' is not COUNT:SIZE (for example 86:30KB)"
                ))
            })?;
            let count: u64 = count.trim().parse().map_err(|_| {
                InvalidValue::new(format!(
                    "page group '{group}': '{count}' is not a whole number of resources"
                ))
            })?;
            groups.push((count, parse_bytes(bytes)?));
        }
        let page = Page { groups };
        if page.count() == 0 || page.count() > MAX_RESOURCES {
            return Err(InvalidValue::new(format!(
                "page '{text}' has {} resources; a page has 1 to {MAX_RESOURCES}",
                page.count()
            )));
        }
        Ok(page)
    }
}

impl Page {
    /// A page description file's text: a HAR file (JSON, as a browser's developer tools save
    /// a page load: the first page's entries after its document, each response's body size),
    /// or lines of `COUNT:SIZE` or `SIZE` (`#` starts a comment). Neighbouring resources of one
    /// size make one group.
    pub fn from_description(text: &str) -> Result<Page, InvalidValue> {
        let sizes = if text.trim_start().starts_with('{') {
            har_sizes(text)?
        } else {
            let mut sizes = Vec::new();
            for line in text.lines() {
                let line = line.split('#').next().unwrap_or("").trim();
                if line.is_empty() {
                    continue;
                }
                let (count, size) = match line.split_once(':') {
                    Some((count, size)) => (
                        count.trim().parse::<u64>().map_err(|_| {
                            InvalidValue::new(format!(
                                "page line '{line}': '{count}' is not a whole number of resources"
                            ))
                        })?,
                        size,
                    ),
                    None => (1, line),
                };
                if count > MAX_RESOURCES {
                    return Err(too_many(count));
                }
                let bytes = parse_bytes(size)?;
                sizes.extend(std::iter::repeat_n(bytes, count as usize));
                if sizes.len() as u64 > MAX_RESOURCES {
                    return Err(too_many(sizes.len() as u64));
                }
            }
            sizes
        };
        let mut groups: Vec<(u64, u64)> = Vec::new();
        for bytes in sizes {
            match groups.last_mut() {
                Some((count, size)) if *size == bytes => *count += 1,
                _ => groups.push((1, bytes)),
            }
        }
        let page = Page { groups };
        match page.count() {
            0 => Err(InvalidValue::new(
                "the page description lists no resources; a page has 1 to 10000",
            )),
            count if count > MAX_RESOURCES => Err(too_many(count)),
            _ => Ok(page),
        }
    }
}

fn too_many(count: u64) -> InvalidValue {
    InvalidValue::new(format!(
        "the page description lists {count} resources; a page has 1 to {MAX_RESOURCES}"
    ))
}

/// The resources' body sizes in a HAR 1.2 file: the first page's entries (all entries when
/// the file names no page), in order, without the first (the document, which page mode
/// fetches from --path). A body size of -1 (unknown) falls back to the content's size.
fn har_sizes(text: &str) -> Result<Vec<u64>, InvalidValue> {
    // Only the fields read here; serde skips the rest of a HAR's (often large) entries.
    #[derive(Deserialize)]
    struct Har {
        log: Log,
    }
    #[derive(Deserialize)]
    struct Log {
        #[serde(default)]
        pages: Vec<HarPage>,
        entries: Vec<Entry>,
    }
    #[derive(Deserialize)]
    struct HarPage {
        id: String,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry {
        #[serde(default)]
        pageref: Option<String>,
        response: Response,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Response {
        #[serde(default)]
        body_size: Option<i64>,
        #[serde(default)]
        content: Option<Content>,
    }
    #[derive(Deserialize)]
    struct Content {
        #[serde(default)]
        size: Option<i64>,
    }
    let har: Har = serde_json::from_str(text).map_err(|error| {
        InvalidValue::with_source(
            format!("the page description is JSON but not a HAR file: {error}"),
            error,
        )
    })?;
    let first_page = har.log.pages.first().map(|page| page.id.as_str());
    let mut sizes = Vec::new();
    let entries = har
        .log
        .entries
        .iter()
        .filter(|entry| first_page.is_none() || entry.pageref.as_deref() == first_page)
        .skip(1);
    for entry in entries {
        let size = match entry.response.body_size {
            Some(size) if size >= 0 => size,
            _ => entry
                .response
                .content
                .as_ref()
                .and_then(|content| content.size)
                .unwrap_or(0)
                .max(0),
        };
        if size as u64 > MAX_BODY {
            return Err(InvalidValue::new(format!(
                "a resource of {size} bytes in the HAR file is above the lab server's 64 MiB"
            )));
        }
        sizes.push(size as u64);
        if sizes.len() as u64 > MAX_RESOURCES {
            return Err(too_many(sizes.len() as u64));
        }
    }
    Ok(sizes)
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
    fn description_files_as_lines_or_har() {
        let lines = "# a page\n2:30KB\n30KB   # one more of the same\n1MiB\n\n";
        let page = Page::from_description(lines).unwrap();
        assert_eq!(page.groups, vec![(3, 30_000), (1, 1_048_576)]);

        // A HAR of two pages: only the first page's entries count, its document not.
        let har = r#"{"log": {"version": "1.2", "pages": [{"id": "page_1"}, {"id": "page_2"}],
            "entries": [
              {"pageref": "page_1", "response": {"status": 200, "bodySize": 5000}},
              {"pageref": "page_1", "response": {"bodySize": 700, "content": {"size": 2100}}},
              {"pageref": "page_1", "response": {"bodySize": -1, "content": {"size": 900}}},
              {"pageref": "page_1", "response": {"bodySize": 700}},
              {"pageref": "page_2", "response": {"bodySize": 123}}
            ]}}"#;
        let page = Page::from_description(har).unwrap();
        assert_eq!(page.groups, vec![(1, 700), (1, 900), (1, 700)]);

        for (text, expected) in [
            ("", "no resources"),
            ("# nothing\n", "no resources"),
            ("x:1KB", "whole number"),
            ("20000:1KB", "1 to 10000"),
            ("{\"log\": 3}", "not a HAR"),
            (
                r#"{"log": {"entries": [{"response": {}}, {"response": {"bodySize": 99999999999}}]}}"#,
                "64 MiB",
            ),
        ] {
            let error = Page::from_description(text).unwrap_err();
            assert!(error.message.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn bad_pages_say_what_would_do() {
        for (text, expected) in [
            ("86", "COUNT:SIZE"),
            ("x:30KB", "whole number"),
            ("2:30XB", "unknown unit"),
            ("2:1GB", "64 MiB"),
            ("0:1KB", "1 to 10000"),
            ("20000:1KB", "1 to 10000"),
            ("", "1 to 10000"),
        ] {
            let error = text.parse::<Page>().unwrap_err();
            assert!(error.message.contains(expected), "{text}: {error}");
        }
    }
}
