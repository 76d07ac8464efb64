//! Human durations (`500ms`, `10s`, `2m`) for experiment files and flags.

use std::time::Duration;

use crate::dimension::InvalidValue;

/// The longest duration any field takes: longer values are mistakes (and would overflow).
pub const MAX: Duration = Duration::from_secs(24 * 60 * 60);

/// Parses `250us`, `500ms`, `10s`, `2m` (and `0`): a number and its unit, at most a day. A
/// bare number is refused: `--rtt 30` is more likely 30 ms than 30 s.
pub fn parse(text: &str) -> Result<Duration, InvalidValue> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        InvalidValue::new(format!(
            "'{text}' is not a duration (examples: 500ms, 10s, 2m)"
        ))
    })?;
    let scale = match unit.trim() {
        "" if value == 0.0 => 0.0,
        "" => {
            return Err(InvalidValue::new(format!(
                "'{text}' has no unit: add one (us, ms, s or m), as in {number}ms or {number}s"
            )))
        }
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        other => {
            return Err(InvalidValue::new(format!(
                "unknown duration unit '{other}' in '{text}' (use us, ms, s or m)"
            )))
        }
    };
    let seconds = value * scale;
    if !seconds.is_finite() || seconds > MAX.as_secs_f64() {
        return Err(InvalidValue::new(format!(
            "'{text}' is longer than a day, the longest duration tlslab takes"
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The shortest exact spelling of a duration, for `--dump-experiment`.
pub fn format(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos.is_multiple_of(1_000_000_000) {
        format!("{}s", nanos / 1_000_000_000)
    } else if nanos.is_multiple_of(1_000_000) {
        format!("{}ms", nanos / 1_000_000)
    } else {
        format!("{}us", nanos / 1_000)
    }
}

/// Serde glue so experiment files spell durations the way people do.
pub mod serde_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes the duration as text (`1.5ms`).
    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format(*value))
    }

    /// Reads a `30ms`-style text.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        super::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde glue for an optional duration (`duration = "30s"`, or absent).
pub mod serde_option {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes the duration as text, or nothing.
    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.serialize_str(&super::format(*value)),
            None => serializer.serialize_none(),
        }
    }

    /// Reads a `30ms`-style text.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(deserializer)?;
        super::parse(&text)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

/// Serde glue for lists of durations (`rtt = ["30ms", "150ms"]`).
pub mod serde_list {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes each as text.
    pub fn serialize<S: Serializer>(values: &[Duration], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(values.iter().map(|value| super::format(*value)))
    }

    /// Reads a list of `30ms`-style texts.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Duration>, D::Error> {
        Vec::<String>::deserialize(deserializer)?
            .iter()
            .map(|text| super::parse(text).map_err(serde::de::Error::custom))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_round_trips() {
        assert_eq!(parse("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("2m").unwrap(), Duration::from_secs(120));
        assert!(parse("ten seconds").is_err());
        assert!(parse("5h").is_err());
    }

    #[test]
    fn bare_numbers_and_absurd_lengths_are_refused_not_panics() {
        assert!(parse("30").unwrap_err().to_string().contains("add one"));
        for absurd in [
            "99999999999999999999s",
            "1e300s",
            "184467440737095516160000m",
            "1441m",
            "86401s",
        ] {
            let error = parse(absurd).unwrap_err().to_string();
            assert!(
                error.contains("longer than a day") || error.contains("unknown duration unit"),
                "{absurd}: {error}"
            );
        }
        assert_eq!(parse("1440m").unwrap(), MAX);
        assert_eq!(format(Duration::from_millis(1500)), "1500ms");
        assert_eq!(
            parse(&format(Duration::from_micros(250))).unwrap(),
            Duration::from_micros(250)
        );
    }
}
