//! The cross-check: a run's own timestamps against the packets of the same handshakes. Each
//! active sample is matched to its connection by the client's address and port (and, as a
//! busy run reuses ports, to the one of those connections that began nearest it); for every
//! event both sides have, the difference between the run's wall-clock time of the event and
//! the packet's capture time says how close the two instruments agree (the run's clock is
//! placed on the wall clock once, at its start).

use std::collections::HashMap;
use std::net::SocketAddr;

use tlslab_core::{Event, Sample, Timeline};

/// An active sample as the cross-check needs it.
#[derive(Debug, Clone)]
pub struct RunSample {
    /// The client's address and port, which names its connection in the capture.
    pub client: SocketAddr,
    /// When the attempt started, in nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// The run's own times of the attempt's events, from its start.
    pub timeline: Timeline,
}

/// How far apart the two are for one event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agreement {
    /// The event the two clocks are compared at.
    pub event: Event,
    /// Handshakes where both sides have the event.
    pub matched: usize,
    /// Median and 99th percentile of |run − capture|, in nanoseconds.
    pub median_ns: f64,
    /// See `median_ns`: the 99th percentile.
    pub p99_ns: f64,
    /// Median of run − capture: positive when the run saw the event later than the wire.
    pub median_signed_ns: f64,
}

/// The whole cross-check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CrossCheck {
    /// Active samples matched to a captured connection, and those that were not.
    pub matched: usize,
    /// Active samples no captured connection answered to.
    pub unmatched: usize,
    /// The agreement at each event both sides saw, in the phase model's order.
    pub events: Vec<Agreement>,
}

/// The events both a client and a capture can time.
const COMPARED: [Event; 8] = [
    Event::Start,
    Event::TcpConnected,
    Event::ClientHelloSent,
    Event::ServerHelloReceived,
    Event::ServerFlightReceived,
    Event::ClientFinishedSent,
    Event::HandshakeDone,
    Event::FirstByte,
];

/// Type-7 quantile of sorted `values`.
fn quantile(sorted: &[f64], probability: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let position = probability * (sorted.len() - 1) as f64;
    let lower = position.floor() as usize;
    let upper = position.ceil() as usize;
    sorted[lower] + (sorted[upper] - sorted[lower]) * (position - lower as f64)
}

/// Matches `run` to `captured` (a capture's samples of the same run) and measures each event.
pub fn cross_check(run: &[RunSample], captured: &[Sample]) -> CrossCheck {
    let mut by_client: HashMap<SocketAddr, Vec<(u64, &Sample)>> = HashMap::new();
    // A QUIC client's socket is bound to the unspecified address: its port alone names it.
    let mut by_port: HashMap<u16, Vec<(u64, &Sample)>> = HashMap::new();
    for sample in captured {
        if let (Some(client), Some(observed)) = (sample.client_address, &sample.observed) {
            let connection = (observed.first_packet_unix_ns, sample);
            by_client.entry(client).or_default().push(connection);
            by_port.entry(client.port()).or_default().push(connection);
        }
    }
    let mut differences: Vec<Vec<f64>> = vec![Vec::new(); COMPARED.len()];
    let mut check = CrossCheck::default();
    for active in run {
        let candidates = if active.client.ip().is_unspecified() {
            by_port.get(&active.client.port())
        } else {
            by_client.get(&active.client)
        };
        let nearest = candidates.and_then(|connections| {
            connections
                .iter()
                .min_by_key(|(first_packet, _)| first_packet.abs_diff(active.start_unix_ns))
        });
        let Some((_, passive)) = nearest else {
            check.unmatched += 1;
            continue;
        };
        let Some(observed) = passive.observed.as_deref() else {
            check.unmatched += 1;
            continue;
        };
        check.matched += 1;
        for (index, event) in COMPARED.into_iter().enumerate() {
            let (Some(run_at), Some(wire_at)) =
                (active.timeline.get(event), passive.timeline.get(event))
            else {
                continue;
            };
            let run_at = active.start_unix_ns.saturating_add(run_at) as f64;
            let wire_at = observed.first_packet_unix_ns.saturating_add(wire_at) as f64;
            differences[index].push(run_at - wire_at);
        }
    }
    for (event, mut signed) in COMPARED.into_iter().zip(differences) {
        if signed.is_empty() {
            continue;
        }
        let mut absolute: Vec<f64> = signed.iter().map(|difference| difference.abs()).collect();
        absolute.sort_by(f64::total_cmp);
        signed.sort_by(f64::total_cmp);
        check.events.push(Agreement {
            event,
            matched: signed.len(),
            median_ns: quantile(&absolute, 0.5),
            p99_ns: quantile(&absolute, 0.99),
            median_signed_ns: quantile(&signed, 0.5),
        });
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlslab_core::{Observed, Vantage};

    fn timeline(events: &[(Event, u64)]) -> Timeline {
        let mut timeline = Timeline::default();
        for &(event, at) in events {
            timeline.set(event, at);
        }
        timeline
    }

    fn captured(client: SocketAddr, first_packet_unix_ns: u64, events: &[(Event, u64)]) -> Sample {
        Sample::builder()
            .timeline(timeline(events))
            .client_address(client)
            .observed(Observed {
                source: "test".into(),
                vantage: Vantage::Local,
                server: "127.0.0.1:443".parse().unwrap(),
                first_packet_unix_ns,
                network_rtt_ns: None,
                retransmissions: 0,
                missing_bytes: 0,
                offered: Default::default(),
            })
            .build()
    }

    #[test]
    fn samples_meet_by_client_port_and_differences_are_on_the_wall_clock() {
        let one: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let two: SocketAddr = "127.0.0.1:40002".parse().unwrap();
        let run = [
            RunSample {
                client: one,
                start_unix_ns: 1_000,
                timeline: timeline(&[(Event::Start, 0), (Event::ClientHelloSent, 500)]),
            },
            RunSample {
                client: two,
                start_unix_ns: 5_000,
                timeline: timeline(&[(Event::Start, 0), (Event::ClientHelloSent, 400)]),
            },
            RunSample {
                client: "127.0.0.1:40003".parse().unwrap(),
                start_unix_ns: 0,
                timeline: Timeline::default(),
            },
        ];
        // The wire saw the first connection's SYN 20 ns after the run started it, its
        // ClientHello 30 ns before the run's timestamp; the second's 10 ns after.
        // The first port was used again much later: that connection is not this sample's.
        let capture = [
            captured(
                one,
                9_000_000,
                &[(Event::Start, 0), (Event::ClientHelloSent, 7)],
            ),
            captured(
                one,
                1_020,
                &[(Event::Start, 0), (Event::ClientHelloSent, 450)],
            ),
            captured(
                two,
                5_000,
                &[(Event::Start, 0), (Event::ClientHelloSent, 410)],
            ),
        ];
        let check = cross_check(&run, &capture);
        assert_eq!((check.matched, check.unmatched), (2, 1));
        let hello = check
            .events
            .iter()
            .find(|agreement| agreement.event == Event::ClientHelloSent)
            .unwrap();
        assert_eq!(hello.matched, 2);
        assert_eq!(hello.median_ns, 20.0); // |+30| and |-10|
        assert_eq!(hello.median_signed_ns, 10.0);
    }
}
