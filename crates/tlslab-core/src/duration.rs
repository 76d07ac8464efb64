//! Human durations (`500ms`, `10s`, `2m`) for experiment files and flags.

use std::time::Duration;

use crate::dimension::InvalidValue;

/// Parses `250us`, `500ms`, `10s`, `2m`, or a bare number of seconds.
pub fn parse(text: &str) -> Result<Duration, InvalidValue> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        InvalidValue(format!(
            "'{text}' is not a duration (examples: 500ms, 10s, 2m)"
        ))
    })?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        other => {
            return Err(InvalidValue(format!(
                "unknown duration unit '{other}' in '{text}' (use us, ms, s or m)"
            )))
        }
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(InvalidValue(format!("'{text}' is not a valid duration")));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The shortest exact spelling of a duration, for `--dump-experiment`.
pub fn format(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos % 1_000_000_000 == 0 {
        format!("{}s", nanos / 1_000_000_000)
    } else if nanos % 1_000_000 == 0 {
        format!("{}ms", nanos / 1_000_000)
    } else {
        format!("{}us", nanos / 1_000)
    }
}

/// Serde glue so experiment files spell durations the way people do.
pub mod serde_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format(*value))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        super::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde glue for lists of durations (`rtt = ["30ms", "150ms"]`).
pub mod serde_list {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(values: &[Duration], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(values.iter().map(|value| super::format(*value)))
    }

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
        assert_eq!(parse("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse("2m").unwrap(), Duration::from_secs(120));
        assert!(parse("ten seconds").is_err());
        assert!(parse("5h").is_err());
        assert_eq!(format(Duration::from_millis(1500)), "1500ms");
        assert_eq!(
            parse(&format(Duration::from_micros(250))).unwrap(),
            Duration::from_micros(250)
        );
    }
}
