//! [`ArrivalRate`]: how a Config's attempts start.
//!
//! Closed loop (the default, `closed`): each agent starts its next attempt when its last one
//! ends, so a server that stalls also stalls the load, and the stall shows in only the few
//! attempts that were in flight (coordinated omission). Open loop (`500/s`): attempts start
//! on a schedule whatever the server does, and each one's latency counts from the moment the
//! schedule meant it to start, so a queue shows in every attempt that waited in it. A ramp
//! (`100/s..2000/s`) is a sweep of constant rates, each step a Config of its own, so each
//! step is measured in a steady state, interleaved with the others, and the rate at which
//! latency breaks (the knee) can be read off the steps.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dimension::InvalidValue;

/// The highest rate one run schedules: a million attempts per second is beyond what one
/// machine's handshakes reach, and keeps the schedule's arithmetic exact.
pub const MAX_RATE: f64 = 1_000_000.0;

/// Steps of a ramp when the spelling gives none.
pub const RAMP_STEPS: u32 = 10;

/// How attempts start: closed loop, a fixed rate, or a ramp swept in steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalRate {
    /// Each agent starts its next attempt when its last one ends.
    Closed,
    /// Attempts per second, on a schedule.
    PerSecond(f64),
    /// Rates from `from` to `to` per second, in `steps` evenly spaced steps (both ends
    /// included), each a Config.
    Ramp { from: f64, to: f64, steps: u32 },
}

impl ArrivalRate {
    /// The constant rates this value stands for: none for a closed loop, one for a rate, one
    /// per step for a ramp.
    pub fn rates(self) -> Vec<Option<f64>> {
        match self {
            ArrivalRate::Closed => vec![None],
            ArrivalRate::PerSecond(rate) => vec![Some(rate)],
            ArrivalRate::Ramp { from, to, steps } => (0..steps)
                .map(|step| Some(from + (to - from) * f64::from(step) / f64::from(steps - 1)))
                .collect(),
        }
    }

    /// How many Configs share this value's measured time (a ramp's steps share it).
    pub fn steps(self) -> u32 {
        match self {
            ArrivalRate::Ramp { steps, .. } => steps,
            _ => 1,
        }
    }
}

/// A rate as labels and output show it: whole numbers from 10/s up, one decimal below.
pub fn format_rate(rate: f64) -> String {
    if rate >= 10.0 || rate.fract() == 0.0 {
        format!("{}/s", rate.round())
    } else {
        format!("{rate:.1}/s")
    }
}

/// `500/s`, `30000/min`, or `2.5/s`: attempts per second.
fn parse_rate(text: &str) -> Result<f64, InvalidValue> {
    let text = text.trim();
    let (number, per) = match text.split_once('/') {
        Some((number, unit)) => {
            let per = match unit.trim().to_ascii_lowercase().as_str() {
                "s" | "sec" | "second" => 1.0,
                "m" | "min" | "minute" => 60.0,
                other => {
                    return Err(InvalidValue(format!(
                        "arrival rate '{text}' has an unknown unit '/{other}' (use /s or /min, \
                         for example 500/s)"
                    )))
                }
            };
            (number.trim(), per)
        }
        None => {
            return Err(InvalidValue(format!(
                "arrival rate '{text}' has no unit: add one, for example {text}/s"
            )))
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        InvalidValue(format!(
            "arrival rate '{text}' is not a number per second (for example 500/s)"
        ))
    })?;
    let rate = value / per;
    if !rate.is_finite() || rate <= 0.0 || rate > MAX_RATE {
        return Err(InvalidValue(format!(
            "arrival rate '{text}' is out of range: more than 0 and at most {MAX_RATE}/s"
        )));
    }
    Ok(rate)
}

impl FromStr for ArrivalRate {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<ArrivalRate, InvalidValue> {
        let trimmed = text.trim();
        if matches!(
            trimmed.to_ascii_lowercase().as_str(),
            "closed" | "none" | "off"
        ) {
            return Ok(ArrivalRate::Closed);
        }
        let Some((from, rest)) = trimmed.split_once("..") else {
            return parse_rate(trimmed).map(ArrivalRate::PerSecond);
        };
        let (to, steps) = match rest.split_once(':') {
            Some((to, steps)) => {
                let steps: u32 = steps.trim().parse().map_err(|_| {
                    InvalidValue(format!(
                        "ramp '{trimmed}': the steps after ':' must be a whole number (for \
                         example 100/s..2000/s:20)"
                    ))
                })?;
                (to, steps)
            }
            None => (rest, RAMP_STEPS),
        };
        if !(2..=100).contains(&steps) {
            return Err(InvalidValue(format!(
                "ramp '{trimmed}' has {steps} steps; a ramp takes 2 to 100"
            )));
        }
        let (from, to) = (parse_rate(from)?, parse_rate(to)?);
        if from >= to {
            return Err(InvalidValue(format!(
                "ramp '{trimmed}' does not rise: write the lower rate first (for example \
                 100/s..2000/s)"
            )));
        }
        Ok(ArrivalRate::Ramp { from, to, steps })
    }
}

impl fmt::Display for ArrivalRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rates print as given in attempts per second, in full precision, so a file written
        // by --dump-experiment reads back to the same value.
        match *self {
            ArrivalRate::Closed => f.write_str("closed"),
            ArrivalRate::PerSecond(rate) => write!(f, "{rate}/s"),
            ArrivalRate::Ramp {
                from,
                to,
                steps: RAMP_STEPS,
            } => write!(f, "{from}/s..{to}/s"),
            ArrivalRate::Ramp { from, to, steps } => write!(f, "{from}/s..{to}/s:{steps}"),
        }
    }
}

impl Serialize for ArrivalRate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ArrivalRate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_their_units_and_round_trip() {
        assert_eq!("closed".parse(), Ok(ArrivalRate::Closed));
        assert_eq!("500/s".parse(), Ok(ArrivalRate::PerSecond(500.0)));
        assert_eq!("600/min".parse(), Ok(ArrivalRate::PerSecond(10.0)));
        assert_eq!("2.5/s".parse(), Ok(ArrivalRate::PerSecond(2.5)));
        let ramp: ArrivalRate = "100/s..1000/s".parse().unwrap();
        assert_eq!(
            ramp,
            ArrivalRate::Ramp {
                from: 100.0,
                to: 1000.0,
                steps: 10
            }
        );
        for value in [
            ArrivalRate::Closed,
            ArrivalRate::PerSecond(1.0 / 3.0),
            ramp,
            "1/s..2/s:3".parse().unwrap(),
        ] {
            assert_eq!(value.to_string().parse::<ArrivalRate>(), Ok(value));
        }
    }

    #[test]
    fn a_ramp_is_evenly_spaced_steps_from_end_to_end() {
        let ramp: ArrivalRate = "100/s..1000/s".parse().unwrap();
        let rates: Vec<f64> = ramp.rates().into_iter().flatten().collect();
        assert_eq!(rates.len(), 10);
        assert_eq!(rates[0], 100.0);
        assert_eq!(rates[9], 1000.0);
        assert_eq!(rates[1], 200.0);
        assert_eq!(ArrivalRate::Closed.rates(), vec![None]);
    }

    #[test]
    fn bad_rates_say_what_would_do() {
        for (text, expected) in [
            ("500", "no unit"),
            ("500/h", "unknown unit"),
            ("0/s", "out of range"),
            ("-5/s", "out of range"),
            ("inf/s", "out of range"),
            ("NaN/s", "out of range"),
            ("2000000/s", "out of range"),
            ("fast/s", "not a number"),
            ("2000/s..100/s", "does not rise"),
            ("100/s..2000/s:1", "2 to 100"),
            ("100/s..2000/s:x", "whole number"),
        ] {
            let error = text.parse::<ArrivalRate>().unwrap_err();
            assert!(error.0.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn labels_show_whole_rates_and_small_ones_with_a_decimal() {
        assert_eq!(format_rate(500.0), "500/s");
        assert_eq!(format_rate(311.11), "311/s");
        assert_eq!(format_rate(2.5), "2.5/s");
        assert_eq!(format_rate(3.0), "3/s");
    }
}
