//! The replay probe (`--replay`): the first flights of accepted 0-RTT attempts are kept
//! during the run; afterwards each is re-sent on a new connection, and the lab server's
//! counters say how many replays it refused and how many tickets it redeemed again.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tlslab_core::{Config, Record, ReplayRecord, Transport};

use crate::servers::LabServers;
use crate::writer::Records;

/// The probe re-sends at most this many flights per Config.
pub const REPLAYED_FLIGHTS: usize = 100;

/// Captured first flights of one Config's 0-RTT attempts (each a list of datagrams, or one
/// TCP write).
#[derive(Debug, Clone, Default)]
pub struct Flights(Arc<Mutex<Vec<Vec<Vec<u8>>>>>);

impl Flights {
    /// Keeps a flight, unless it is empty or enough are kept.
    pub fn keep(&self, flight: Vec<Vec<u8>>) {
        let mut flights = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if flights.len() < REPLAYED_FLIGHTS && !flight.is_empty() {
            flights.push(flight);
        }
    }

    /// The flights kept so far, leaving none.
    pub fn take(&self) -> Vec<Vec<Vec<u8>>> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Re-sends each Config's captured flights to its lab server and records what the server
/// did with them.
pub fn probe(
    runtime: &tokio::runtime::Runtime,
    configs: &[Config],
    addresses: &[SocketAddr],
    flights: &[Flights],
    servers: &mut LabServers,
    records: &Records,
) {
    for ((config, &address), flights) in configs.iter().zip(addresses).zip(flights) {
        let Some(server) = servers.of(config) else {
            continue;
        };
        let captured = flights.take();
        if captured.is_empty() {
            continue;
        }
        let before = server.counters();
        let transport = config.transport;
        let patience = config
            .network
            .map_or(Duration::ZERO, |network| network.rtt * 2)
            + Duration::from_millis(50);
        // On a runtime thread: those are in the client namespace, this one is not.
        let replays = runtime.spawn(async move {
            let mut sent = 0;
            for flight in &captured {
                let replayed = match transport {
                    Transport::Tcp => {
                        tlslab_tls::replay_tcp(address, &flight.concat(), patience).await
                    }
                    Transport::Quic => tlslab_tls::replay_quic(address, flight, patience).await,
                };
                sent += u64::from(replayed.is_ok());
            }
            sent
        });
        let sent = runtime.block_on(replays).unwrap_or(0);
        // The server handles each replay on its own task; give the last ones a moment.
        std::thread::sleep(patience);
        if let (Some(before), Some(after)) = (before, server.counters()) {
            records.send(Record::Replay(ReplayRecord {
                config: config.index,
                sent,
                rejected: after
                    .replays_rejected
                    .saturating_sub(before.replays_rejected),
                accepted: after
                    .tickets_redeemed
                    .saturating_sub(before.tickets_redeemed),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flights_are_kept_up_to_the_limit_and_taken_once() {
        let flights = Flights::default();
        flights.keep(Vec::new());
        for _ in 0..REPLAYED_FLIGHTS + 5 {
            flights.keep(vec![vec![22, 3, 1]]);
        }
        assert_eq!(flights.take().len(), REPLAYED_FLIGHTS);
        assert!(flights.take().is_empty());
    }
}
