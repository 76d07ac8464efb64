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
    Ramp {
        /// The first rate.
        from: f64,
        /// The last rate.
        to: f64,
        /// How many rates, both ends included.
        steps: u32,
    },
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

/// How an open loop spaces its arrivals.
///
/// `uniform` (the default) starts attempt i at exactly i / rate, as wrk2 and k6's
/// constant-arrival-rate do: the load is the same in every second and a queue that builds is
/// the server's. `poisson` draws the gaps from an exponential distribution of the same mean,
/// as independent users arrive: bursts then queue even below a server's capacity, which is
/// what a latency-versus-load curve of a real service shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    #[default]
    /// Attempts exactly 1/rate apart.
    Uniform,
    /// Exponential gaps of mean 1/rate, as independent users arrive.
    Poisson,
}

impl FromStr for Arrivals {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<Arrivals, InvalidValue> {
        match text.trim().to_ascii_lowercase().as_str() {
            "uniform" => Ok(Arrivals::Uniform),
            "poisson" => Ok(Arrivals::Poisson),
            other => Err(InvalidValue::new(format!(
                "arrivals '{other}' is not a known process (use uniform or poisson)"
            ))),
        }
    }
}

impl fmt::Display for Arrivals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arrivals::Uniform => "uniform",
            Arrivals::Poisson => "poisson",
        })
    }
}

/// One Config's schedule: the time of each of its arrivals, in order, across all its
/// blocks, as an offset from its first.
///
/// Arrival i is due at T(i), the sum of the gaps before it (T(0) = 0). A block that takes
/// arrivals s to s + k − 1 starts them at T(i) − T(s) after its own start and lasts
/// T(s + k) − T(s): exactly k / rate for uniform arrivals, so blocks laid end to end (with
/// other Configs' blocks between them) give the asked rate over the asked duration. A
/// uniform schedule computes each time from its index, so no rounding error accumulates
/// over millions of arrivals.
#[derive(Debug, Clone)]
pub struct ArrivalTimes {
    rate: f64,
    arrivals: Arrivals,
    /// The next arrival's index.
    index: u64,
    /// T(index), in nanoseconds.
    next_ns: u64,
    random: fastrand::Rng,
}

impl ArrivalTimes {
    /// The schedule of `rate` arrivals per second; a Poisson schedule draws its gaps from
    /// `seed`, so a run's schedule is reproduced by its recorded seed.
    pub fn new(rate: f64, arrivals: Arrivals, seed: u64) -> ArrivalTimes {
        ArrivalTimes {
            rate,
            arrivals,
            index: 0,
            next_ns: 0,
            random: fastrand::Rng::with_seed(seed),
        }
    }

    /// The due time of the next arrival, without taking it.
    pub fn peek(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.next_ns)
    }

    /// The due time of the next arrival, taken.
    pub fn next_due(&mut self) -> std::time::Duration {
        let due = self.next_ns;
        self.index += 1;
        self.next_ns = match self.arrivals {
            Arrivals::Uniform => (self.index as f64 * 1e9 / self.rate).round() as u64,
            Arrivals::Poisson => {
                // Inverse transform: 1 − U lies in (0, 1], so the logarithm is finite.
                let gap = -(1.0 - self.random.f64()).ln() / self.rate;
                due.saturating_add((gap * 1e9).round() as u64)
            }
        };
        std::time::Duration::from_nanos(due)
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
                    return Err(InvalidValue::new(format!(
                        "arrival rate '{text}' has an unknown unit '/{other}' (use /s or /min, \
                         for example 500/s)"
                    )))
                }
            };
            (number.trim(), per)
        }
        None => {
            return Err(InvalidValue::new(format!(
                "arrival rate '{text}' has no unit: add one, for example {text}/s"
            )))
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        InvalidValue::new(format!(
            "arrival rate '{text}' is not a number per second (for example 500/s)"
        ))
    })?;
    let rate = value / per;
    if !rate.is_finite() || rate <= 0.0 || rate > MAX_RATE {
        return Err(InvalidValue::new(format!(
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
                    InvalidValue::new(format!(
                        "ramp '{trimmed}': the steps after ':' must be a whole number (for \
                         example 100/s..2000/s:20)"
                    ))
                })?;
                (to, steps)
            }
            None => (rest, RAMP_STEPS),
        };
        if !(2..=100).contains(&steps) {
            return Err(InvalidValue::new(format!(
                "ramp '{trimmed}' has {steps} steps; a ramp takes 2 to 100"
            )));
        }
        let (from, to) = (parse_rate(from)?, parse_rate(to)?);
        if from >= to {
            return Err(InvalidValue::new(format!(
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
            assert!(error.message.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn a_uniform_schedule_is_exact_over_millions_of_arrivals() {
        let mut times = ArrivalTimes::new(3.0, Arrivals::Uniform, 1);
        assert_eq!(times.next_due(), std::time::Duration::ZERO);
        assert_eq!(times.next_due().as_nanos(), 333_333_333);
        assert_eq!(times.next_due().as_nanos(), 666_666_667);
        assert_eq!(times.peek(), std::time::Duration::from_secs(1));
        let mut times = ArrivalTimes::new(200.0, Arrivals::Uniform, 1);
        for _ in 0..2_000_000 {
            times.next_due();
        }
        assert_eq!(times.peek(), std::time::Duration::from_secs(10_000));
    }

    #[test]
    fn poisson_gaps_have_the_rates_mean_and_an_exponential_spread() {
        let mut times = ArrivalTimes::new(1_000.0, Arrivals::Poisson, 7);
        let mut gaps = Vec::new();
        let mut last = times.next_due();
        for _ in 0..100_000 {
            let due = times.next_due();
            gaps.push((due - last).as_secs_f64());
            last = due;
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        // The mean of 100,000 exponential gaps is within 1% of 1/rate (its standard error
        // is 0.3%); their coefficient of variation is 1 (a uniform schedule's is 0).
        assert!((mean - 1e-3).abs() < 1e-5, "mean gap {mean}");
        let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = variance.sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.02, "coefficient of variation {cv}");
        // The same seed draws the same schedule.
        let mut again = ArrivalTimes::new(1_000.0, Arrivals::Poisson, 7);
        let mut other = ArrivalTimes::new(1_000.0, Arrivals::Poisson, 8);
        let first: Vec<_> = (0..5).map(|_| again.next_due()).collect();
        let second: Vec<_> = (0..5).map(|_| other.next_due()).collect();
        let mut replay = ArrivalTimes::new(1_000.0, Arrivals::Poisson, 7);
        assert_eq!(first, (0..5).map(|_| replay.next_due()).collect::<Vec<_>>());
        assert_ne!(first, second);
    }

    #[test]
    fn arrival_processes_parse_and_print() {
        assert_eq!("Poisson".parse(), Ok(Arrivals::Poisson));
        assert_eq!("uniform".parse(), Ok(Arrivals::Uniform));
        assert!("bursty"
            .parse::<Arrivals>()
            .unwrap_err()
            .message
            .contains("uniform or poisson"));
        assert_eq!(Arrivals::Poisson.to_string(), "poisson");
    }

    #[test]
    fn labels_show_whole_rates_and_small_ones_with_a_decimal() {
        assert_eq!(format_rate(500.0), "500/s");
        assert_eq!(format_rate(311.11), "311/s");
        assert_eq!(format_rate(2.5), "2.5/s");
        assert_eq!(format_rate(3.0), "3/s");
    }
}
