//! Property tests of the phase model: for every timeline a client can record (TCP or QUIC,
//! with or without a name lookup of its own (`--dns per-attempt`), with or without
//! certificate verification, with or without a client signature (mutual TLS), with or
//! without a request), the events are in
//! order and the additive phases add up to the handshake exactly.

use proptest::prelude::*;
use tlslab_core::{Event, Phase, Timeline};

/// A timeline as the clients record it: each event at or after the one before, the optional
/// ones present or not.
fn timelines() -> impl Strategy<Value = Timeline> {
    (
        prop::collection::vec(0u64..5_000_000, 13),
        any::<bool>(), // over TCP (QUIC has no tcp_connected)
        any::<bool>(), // the attempt resolved the name itself
        any::<bool>(), // the certificate was verified (not on resumption or --insecure)
        any::<bool>(), // a request followed
        any::<bool>(), // the server asked for a client certificate and the client signed
    )
        .prop_map(|(steps, tcp, resolved, verified, request, signed)| {
            let mut timeline = Timeline::default();
            let mut at = 0u64;
            let mut next = |index: usize| {
                at += steps[index];
                at
            };
            timeline.set(Event::Start, 0);
            let lookup = next(10);
            if resolved {
                timeline.set(Event::Resolved, lookup);
            }
            let connected = next(0);
            if tcp {
                timeline.set(Event::TcpConnected, connected);
            }
            timeline.set(Event::ClientHelloSent, next(1));
            timeline.set(Event::ServerHelloReceived, next(2));
            timeline.set(Event::ServerFlightReceived, next(3));
            let (verify_start, verify_end) = (next(4), next(5));
            if verified {
                timeline.set(Event::CertVerifyStart, verify_start);
                timeline.set(Event::CertVerifyEnd, verify_end);
            }
            let (sign_start, sign_end) = (next(11), next(12));
            if signed {
                timeline.set(Event::ClientSignStart, sign_start);
                timeline.set(Event::ClientSignEnd, sign_end);
            }
            timeline.set(Event::ClientFinishedSent, next(6));
            timeline.set(Event::HandshakeDone, next(7));
            let (first_byte, done) = (next(8), next(9));
            if request {
                timeline.set(Event::FirstByte, first_byte);
                timeline.set(Event::ResponseDone, done);
            }
            timeline
        })
}

proptest! {
    #[test]
    fn the_parts_add_up_to_the_handshake(timeline in timelines()) {
        prop_assert!(timeline.is_ordered());
        let parts: u64 = Phase::PARTS.iter().filter_map(|phase| timeline.phase(*phase)).sum();
        prop_assert_eq!(Some(parts), timeline.phase(Phase::Handshake));
    }

    #[test]
    fn open_loop_latency_is_the_wait_plus_the_whole(mut timeline in timelines(), wait in 0u64..10_000_000_000) {
        prop_assert_eq!(timeline.phase(Phase::Latency), None);
        prop_assert_eq!(timeline.phase(Phase::ScheduleDelay), None);
        timeline.set_schedule_delay(wait);
        let whole = timeline.phase(Phase::Total).or(timeline.phase(Phase::Handshake));
        prop_assert_eq!(timeline.phase(Phase::Latency), whole.map(|whole| whole + wait));
        prop_assert_eq!(timeline.phase(Phase::ScheduleDelay), Some(wait));
    }

    #[test]
    fn every_phase_lies_within_the_whole(timeline in timelines()) {
        let total = timeline
            .phase(Phase::Total)
            .or(timeline.phase(Phase::Handshake))
            .unwrap_or(0);
        for phase in Phase::ALL {
            if let Some(nanos) = timeline.phase(phase) {
                prop_assert!(nanos <= total, "{} = {nanos} > {total}", phase.name());
            }
        }
        prop_assert!(timeline.phase(Phase::TlsHandshake) <= timeline.phase(Phase::Handshake));
    }
}
