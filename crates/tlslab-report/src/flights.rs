//! How a Config's responses arrived: the server's flights from each response's first byte to
//! its last, as the QUIC client's socket received them (`QuicPath::response_flights`). The
//! line that explains why a response took a round trip more than its first byte: the first
//! flight stopped at the server's congestion window, and the rest waited for the client's
//! acknowledgements.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use tlslab_core::ResponseFlights;

use crate::text::thousands;

/// A Config's response flights over its successful measured samples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlightsSummary {
    /// Samples whose flights the client told apart.
    pub samples: u64,
    /// Samples per number of round trips from the response's first byte to its last.
    pub round_trips: BTreeMap<u64, u64>,
    /// Medians: datagrams and UDP payload bytes of the flight with the first byte, and of the
    /// later flights together.
    pub first_datagrams: u64,
    /// See `first_datagrams`.
    pub first_bytes: u64,
    /// See `first_datagrams`.
    pub later_datagrams: u64,
    /// See `first_datagrams`.
    pub later_bytes: u64,
}

impl FlightsSummary {
    /// `None` when no sample told its flights apart (TCP, no request, or an RTT too short).
    pub fn of(flights: &[ResponseFlights]) -> Option<FlightsSummary> {
        if flights.is_empty() {
            return None;
        }
        let median = |field: fn(&ResponseFlights) -> u64| {
            let mut values: Vec<u64> = flights.iter().map(field).collect();
            values.sort_unstable();
            values[values.len() / 2]
        };
        let mut round_trips = BTreeMap::new();
        for sample in flights {
            *round_trips.entry(sample.round_trips).or_insert(0) += 1;
        }
        Some(FlightsSummary {
            samples: flights.len() as u64,
            round_trips,
            first_datagrams: median(|f| f.first_datagrams),
            first_bytes: median(|f| f.first_bytes),
            later_datagrams: median(|f| f.later_datagrams),
            later_bytes: median(|f| f.later_bytes),
        })
    }

    /// One line: the commonest number of round trips (and the others), then the flights.
    pub fn describe(&self) -> String {
        let round_trips = |count: u64| match count {
            1 => "1 round trip".to_string(),
            _ => format!("{count} round trips"),
        };
        let mut counts: Vec<(u64, u64)> = self.round_trips.iter().map(|(k, v)| (*k, *v)).collect();
        // The commonest first; ties by fewer round trips.
        counts.sort_by_key(|&(trips, samples)| (std::cmp::Reverse(samples), trips));
        let mut line = String::from("response in ");
        for (index, (trips, samples)) in counts.iter().enumerate() {
            if index > 0 {
                line.push_str(", ");
            }
            let _ = write!(
                line,
                "{} ({samples} of {})",
                round_trips(*trips),
                self.samples
            );
        }
        line.push_str(" from first byte to last · ");
        if self.later_datagrams == 0 {
            let _ = write!(
                line,
                "that flight {} datagrams, {} B",
                self.first_datagrams,
                thousands(self.first_bytes as f64)
            );
        } else {
            let _ = write!(
                line,
                "first flight {} datagrams, {} B, later {} datagrams, {} B",
                self.first_datagrams,
                thousands(self.first_bytes as f64),
                self.later_datagrams,
                thousands(self.later_bytes as f64)
            );
        }
        line.push_str(" (medians)");
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flights(round_trips: u64, first: (u64, u64), later: (u64, u64)) -> ResponseFlights {
        ResponseFlights {
            round_trips,
            first_datagrams: first.0,
            first_bytes: first.1,
            later_datagrams: later.0,
            later_bytes: later.1,
        }
    }

    #[test]
    fn a_window_cut_response_says_what_each_flight_carried() {
        let summary = FlightsSummary::of(&[
            flights(2, (13, 11_097), (2, 2_071)),
            flights(2, (11, 10_997), (2, 2_115)),
            flights(1, (15, 12_400), (0, 0)),
        ])
        .expect("summary");
        assert_eq!(
            summary.describe(),
            "response in 2 round trips (2 of 3), 1 round trip (1 of 3) from first byte to last \
             · first flight 13 datagrams, 11,097 B, later 2 datagrams, 2,071 B (medians)"
        );
    }

    #[test]
    fn a_response_in_one_flight_names_that_flight() {
        let summary = FlightsSummary::of(&[flights(1, (9, 10_333), (0, 0))]).expect("summary");
        assert_eq!(
            summary.describe(),
            "response in 1 round trip (1 of 1) from first byte to last · that flight 9 \
             datagrams, 10,333 B (medians)"
        );
        assert_eq!(FlightsSummary::of(&[]), None);
    }
}
