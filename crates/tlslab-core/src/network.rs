//! The emulated network between client and server: round-trip delay, jitter, random loss and
//! a rate limit. Each is a matrix dimension (`--rtt 30ms,150ms --loss 0,0.5%`); a Config
//! without any of them runs on plain loopback.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dimension::InvalidValue;
use crate::duration;

/// A packet loss probability, per packet and direction, as a fraction (0.005 = 0.5%).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Loss(pub f64);

/// A fraction written as a percentage (`0.5%`) or as a plain number (`0.005`).
pub(crate) fn parse_fraction(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    let (number, scale) = match trimmed.strip_suffix('%') {
        Some(percent) => (percent.trim(), 100.0),
        None => (trimmed, 1.0),
    };
    number.parse::<f64>().ok().map(|value| value / scale)
}

impl FromStr for Loss {
    type Err = InvalidValue;
    /// `0.5%` or a fraction such as `0.005`.
    fn from_str(text: &str) -> Result<Loss, InvalidValue> {
        let value = parse_fraction(text).ok_or_else(|| {
            InvalidValue::new(format!(
                "'{text}' is not a loss rate (examples: 0, 0.5%, 0.01)"
            ))
        })?;
        if !(0.0..1.0).contains(&value) {
            return Err(InvalidValue::new(format!(
                "loss '{text}' is not between 0 and 100% (exclusive)"
            )));
        }
        Ok(Loss(value))
    }
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Percent with at most four significant decimals, trailing zeros dropped.
        let percent = format!("{:.4}", self.0 * 100.0);
        let percent = percent.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{percent}%")
    }
}

/// A rate limit in bits per second, spelled as tc spells it (`100mbit`, `1gbit`, `512kbit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u64);

impl Rate {
    /// The fastest rate limit taken: 1 Tbit/s.
    pub const MAX: Rate = Rate(1_000_000_000_000);
}

impl FromStr for Rate {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<Rate, InvalidValue> {
        let lower = text.trim().to_ascii_lowercase();
        let split = lower
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(lower.len());
        let (number, unit) = lower.split_at(split);
        let scale = match unit {
            "bit" | "" => 1.0,
            "kbit" => 1e3,
            "mbit" => 1e6,
            "gbit" => 1e9,
            _ => {
                return Err(InvalidValue::new(format!(
                    "unknown rate unit in '{text}' (use bit, kbit, mbit or gbit, as in 100mbit)"
                )))
            }
        };
        let value = number.parse::<f64>().map_err(|_| {
            InvalidValue::new(format!("'{text}' is not a rate (examples: 10mbit, 1gbit)"))
        })? * scale;
        if !(value >= 1.0 && value.is_finite()) {
            return Err(InvalidValue::new(format!(
                "rate '{text}' must be at least 1 bit per second"
            )));
        }
        if value > Rate::MAX.0 as f64 {
            return Err(InvalidValue::new(format!(
                "rate '{text}' is above {}, faster than any link tlslab emulates",
                Rate::MAX
            )));
        }
        Ok(Rate(value.round() as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (scale, unit) in [
            (1_000_000_000, "gbit"),
            (1_000_000, "mbit"),
            (1_000, "kbit"),
        ] {
            if self.0.is_multiple_of(scale) {
                return write!(f, "{}{unit}", self.0 / scale);
            }
        }
        write!(f, "{}bit", self.0)
    }
}

/// Serde through the spelling people write (`"0.5%"`, `"100mbit"`); numbers are accepted for
/// loss too (`loss = [0, 0.01]`).
macro_rules! text_serde {
    ($type:ty) => {
        impl Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.to_string())
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[derive(Deserialize)]
                #[serde(untagged)]
                enum Written {
                    Text(String),
                    Number(f64),
                }
                let text = match Written::deserialize(deserializer)? {
                    Written::Text(text) => text,
                    Written::Number(number) => number.to_string(),
                };
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

text_serde!(Loss);
text_serde!(Rate);

/// One network profile: what the link between client and server does to every packet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Network {
    /// Round-trip delay added, half in each direction.
    #[serde(with = "duration::serde_text")]
    pub rtt: Duration,
    /// Per packet and direction, the delay varies by up to this much either way (order kept).
    #[serde(with = "duration::serde_text")]
    pub jitter: Duration,
    /// Random packet loss, each direction on its own.
    pub loss: Loss,
    /// The link's rate limit, if any.
    pub rate: Option<Rate>,
}

impl Network {
    /// The words this profile adds to an automatic label, for the dimensions the experiment
    /// names (`rtt100ms`, `jitter2ms`, `loss0.5%`, `rate100mbit`).
    pub fn label(&self, named: &NetworkDimensions) -> String {
        let mut words = Vec::new();
        if named.rtt {
            words.push(format!("rtt{}", duration::format(self.rtt)));
        }
        if named.jitter {
            words.push(format!("jitter{}", duration::format(self.jitter)));
        }
        if named.loss {
            words.push(format!("loss{}", self.loss));
        }
        if let (true, Some(rate)) = (named.rate, self.rate) {
            words.push(format!("rate{rate}"));
        }
        words.join(" ")
    }

    /// The least time a full handshake can take on this network: `round_trips` × RTT.
    pub fn floor(&self, round_trips: u32) -> Duration {
        self.rtt * round_trips
    }
}

/// Which network dimensions an experiment names (and so which appear in labels).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetworkDimensions {
    /// Round trips vary.
    pub rtt: bool,
    /// Jitter varies.
    pub jitter: bool,
    /// Loss varies.
    pub loss: bool,
    /// The rate varies.
    pub rate: bool,
}

impl NetworkDimensions {
    /// Whether any network dimension is named: the run then needs an emulator.
    pub fn any(&self) -> bool {
        self.rtt || self.jitter || self.loss || self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        assert_eq!("0.5%".parse::<Loss>().unwrap(), Loss(0.005));
        assert_eq!("0.01".parse::<Loss>().unwrap(), Loss(0.01));
        assert_eq!("0".parse::<Loss>().unwrap().to_string(), "0%");
        assert_eq!(Loss(0.005).to_string(), "0.5%");
        assert!("100%".parse::<Loss>().is_err());
        assert!("-1%".parse::<Loss>().is_err());
        assert_eq!("100mbit".parse::<Rate>().unwrap(), Rate(100_000_000));
        assert_eq!("1.5gbit".parse::<Rate>().unwrap().to_string(), "1500mbit");
        assert_eq!(Rate(12_345).to_string(), "12345bit");
        assert!("10mb".parse::<Rate>().is_err());
        // Stored as a signed 64-bit integer: an absurd rate is refused, not wrapped to -1.
        assert!("99999999999999999999gbit".parse::<Rate>().is_err());
        assert_eq!("1000gbit".parse::<Rate>().unwrap(), Rate::MAX);
        assert!("0kbit".parse::<Rate>().is_err());
    }

    #[test]
    fn labels_name_only_the_dimensions_given() {
        let network = Network {
            rtt: Duration::from_millis(100),
            jitter: Duration::from_millis(2),
            loss: Loss(0.01),
            rate: Some(Rate(10_000_000)),
        };
        let rtt_only = NetworkDimensions {
            rtt: true,
            ..NetworkDimensions::default()
        };
        assert_eq!(network.label(&rtt_only), "rtt100ms");
        let all = NetworkDimensions {
            rtt: true,
            jitter: true,
            loss: true,
            rate: true,
        };
        assert_eq!(network.label(&all), "rtt100ms jitter2ms loss1% rate10mbit");
        assert_eq!(network.floor(3), Duration::from_millis(300));
    }
}
