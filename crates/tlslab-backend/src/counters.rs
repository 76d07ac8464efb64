//! What a lab server counts, whatever its library, and how the count travels on the control
//! channel to the run.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// What a lab server has seen, counted as it happens by every connection.
#[derive(Debug, Default)]
pub struct Counters {
    /// Tickets presented and found in the session cache (each can be found once), or, with
    /// stateless tickets, resumed handshakes.
    pub tickets_redeemed: AtomicU64,
    /// Tickets presented again after they were spent: replays, refused.
    pub replays_rejected: AtomicU64,
    /// Connections whose early data the server accepted.
    pub early_data_accepted: AtomicU64,
    /// HTTP requests answered.
    pub requests: AtomicU64,
    /// Mutual TLS: client certificates the server verified (chain and CertificateVerify
    /// signature), and the nanoseconds spent verifying them, summed.
    pub client_verifications: AtomicU64,
    /// See `client_verifications`: the nanoseconds.
    pub client_verify_ns: AtomicU64,
}

/// A reading of [`Counters`], as the control channel carries it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSnapshot {
    /// Resumptions the server accepted.
    pub tickets_redeemed: u64,
    /// 0-RTT flights refused as replays.
    pub replays_rejected: u64,
    /// Connections whose early data the server accepted.
    pub early_data_accepted: u64,
    /// HTTP requests answered.
    pub requests: u64,
    /// Absent from servers built before mutual TLS was timed: zero.
    #[serde(default)]
    pub client_verifications: u64,
    #[serde(default)]
    /// Nanoseconds spent verifying those client certificates, summed.
    pub client_verify_ns: u64,
}

impl Counters {
    /// The counts now, for the control channel; each counter is read on its own.
    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            tickets_redeemed: self.tickets_redeemed.load(Ordering::Relaxed),
            replays_rejected: self.replays_rejected.load(Ordering::Relaxed),
            early_data_accepted: self.early_data_accepted.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            client_verifications: self.client_verifications.load(Ordering::Relaxed),
            client_verify_ns: self.client_verify_ns.load(Ordering::Relaxed),
        }
    }

    /// Counts a verified (or refused) client certificate and the time its check took.
    pub fn client_verified(&self, took: std::time::Duration) {
        self.client_verifications.fetch_add(1, Ordering::Relaxed);
        self.client_verify_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Adds time to the last counted client verification (a signature checked after the
    /// chain), without counting another.
    pub fn client_verification_continued(&self, took: std::time::Duration) {
        self.client_verify_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Counts a ticket found in the cache, or a resumed handshake.
    pub fn ticket_redeemed(&self) {
        self.tickets_redeemed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a spent ticket presented again.
    pub fn replay_rejected(&self) {
        self.replays_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection whose early data was read.
    pub fn early_data_accepted(&self) {
        self.early_data_accepted.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts answered HTTP requests.
    pub fn answered(&self, requests: u64) {
        self.requests.fetch_add(requests, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_count_and_travel_as_json() {
        let counters = Counters::default();
        counters.ticket_redeemed();
        counters.replay_rejected();
        counters.replay_rejected();
        counters.answered(3);
        counters.client_verified(std::time::Duration::from_micros(40));
        counters.client_verification_continued(std::time::Duration::from_micros(2));
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.replays_rejected, 2);
        let line = serde_json::to_string(&snapshot).unwrap();
        assert_eq!(
            line,
            r#"{"tickets_redeemed":1,"replays_rejected":2,"early_data_accepted":0,"requests":3,"client_verifications":1,"client_verify_ns":42000}"#
        );
        // A server from before mutual TLS was timed answers without the two counts.
        let older: CounterSnapshot = serde_json::from_str(
            r#"{"tickets_redeemed":0,"replays_rejected":0,"early_data_accepted":0,"requests":0}"#,
        )
        .unwrap();
        assert_eq!(older.client_verifications, 0);
        assert_eq!(
            serde_json::from_str::<CounterSnapshot>(&line).unwrap(),
            snapshot
        );
    }
}
