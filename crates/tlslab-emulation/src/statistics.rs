//! Counters and the added-delay error histogram the forwarders keep.

use std::time::Duration;

/// What one direction of the emulated link did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirectionStatistics {
    /// Packets (relay: chunks) written to the other side.
    pub packets_forwarded: u64,
    /// Bytes of those packets, as written.
    pub bytes_forwarded: u64,
    /// Dropped on purpose by the profile's random loss.
    pub dropped_loss: u64,
    /// Dropped at the tail because the rate queue (or the delay line's memory cap) was full.
    pub dropped_queue_full: u64,
    /// Writes the kernel refused (the device or connection went away).
    pub write_errors: u64,
}

impl DirectionStatistics {
    fn merge(&mut self, other: &DirectionStatistics) {
        self.packets_forwarded += other.packets_forwarded;
        self.bytes_forwarded += other.bytes_forwarded;
        self.dropped_loss += other.dropped_loss;
        self.dropped_queue_full += other.dropped_queue_full;
        self.write_errors += other.write_errors;
    }
}

/// Statistics of a forwarder (the tun emulator's thread, or the relay's) since creation or the
/// last [`reset`](crate::Network::reset_statistics). The netem emulator has no userspace
/// forwarder, so its statistics stay empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwarderStatistics {
    /// Packets from the client towards the server.
    pub client_to_server: DirectionStatistics,
    /// Packets from the server back to the client.
    pub server_to_client: DirectionStatistics,
    /// Actual release time minus scheduled release time, for every forwarded packet of both
    /// directions: how far the emulated delay overshot the profile.
    pub delay_error: DelayErrorHistogram,
}

impl ForwarderStatistics {
    pub(crate) fn merge(&mut self, other: &ForwarderStatistics) {
        self.client_to_server.merge(&other.client_to_server);
        self.server_to_client.merge(&other.server_to_client);
        self.delay_error.merge(&other.delay_error);
    }
}

/// Values below this are counted exactly, in nanoseconds.
const EXACT_LIMIT: u64 = 128;
/// Buckets per power of two above `EXACT_LIMIT`: 1.6 % relative resolution.
const SUB_BUCKETS: u64 = 64;
/// Powers of two covered above `EXACT_LIMIT` (2^7 ns to 2^41 ns, about 36 minutes); larger
/// values land in the last bucket.
const POWERS: u64 = 34;
const BUCKETS: usize = (EXACT_LIMIT + POWERS * SUB_BUCKETS) as usize;

/// A log-linear histogram of nanosecond values: recording is an index computation and an
/// increment, so the forwarder can afford it for every packet, and quantiles are within 1.6 %.
#[derive(Clone, PartialEq, Eq)]
pub struct DelayErrorHistogram {
    counts: Vec<u64>,
    count: u64,
    sum_nanos: u128,
    max_nanos: u64,
}

impl Default for DelayErrorHistogram {
    fn default() -> DelayErrorHistogram {
        DelayErrorHistogram {
            counts: vec![0; BUCKETS],
            count: 0,
            sum_nanos: 0,
            max_nanos: 0,
        }
    }
}

impl std::fmt::Debug for DelayErrorHistogram {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DelayErrorHistogram")
            .field("count", &self.count)
            .field("p50", &self.quantile(0.5))
            .field("p99", &self.quantile(0.99))
            .field("max", &self.max())
            .finish()
    }
}

fn bucket_of(nanos: u64) -> usize {
    if nanos < EXACT_LIMIT {
        return nanos as usize;
    }
    let power = 63 - u64::from(nanos.leading_zeros()); // >= 7
    let first_power = EXACT_LIMIT.trailing_zeros() as u64; // 7
    if power >= first_power + POWERS {
        return BUCKETS - 1;
    }
    let sub = (nanos >> (power - 6)) - SUB_BUCKETS;
    (EXACT_LIMIT + (power - first_power) * SUB_BUCKETS + sub) as usize
}

/// The largest value that lands in `bucket`: quantiles report it, so they never understate.
fn bucket_upper(bucket: usize) -> u64 {
    let bucket = bucket as u64;
    if bucket < EXACT_LIMIT {
        return bucket;
    }
    let first_power = EXACT_LIMIT.trailing_zeros() as u64;
    let power = first_power + (bucket - EXACT_LIMIT) / SUB_BUCKETS;
    let sub = (bucket - EXACT_LIMIT) % SUB_BUCKETS;
    ((SUB_BUCKETS + sub + 1) << (power - 6)) - 1
}

impl DelayErrorHistogram {
    /// Counts one packet's release `error` (late by that much).
    pub fn record(&mut self, error: Duration) {
        self.record_nanos(u64::try_from(error.as_nanos()).unwrap_or(u64::MAX));
    }

    pub(crate) fn record_nanos(&mut self, nanos: u64) {
        self.counts[bucket_of(nanos)] += 1;
        self.count += 1;
        self.sum_nanos += u128::from(nanos);
        self.max_nanos = self.max_nanos.max(nanos);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The latest a packet left after its scheduled time.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_nanos)
    }

    /// The average lateness; zero before any packet.
    pub fn mean(&self) -> Duration {
        match self.count {
            0 => Duration::ZERO,
            count => Duration::from_nanos((self.sum_nanos / u128::from(count)) as u64),
        }
    }

    /// The value below which a fraction `q` (0 to 1) of the recorded values lie, rounded up to
    /// its bucket's upper edge and capped at the maximum; zero when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_nanos(bucket_upper(bucket).min(self.max_nanos));
            }
        }
        self.max()
    }

    pub(crate) fn merge(&mut self, other: &DelayErrorHistogram) {
        if other.count == 0 {
            return;
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum_nanos += other.sum_nanos;
        self.max_nanos = self.max_nanos.max(other.max_nanos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_contain_their_values() {
        let mut previous = 0;
        for value in (0..5_000u64).chain((1..40).map(|power| (1u64 << power) + 12345)) {
            let bucket = bucket_of(value);
            assert!(bucket >= previous, "value {value}");
            previous = bucket;
            if bucket < BUCKETS - 1 {
                assert!(
                    bucket_upper(bucket) >= value,
                    "value {value} bucket {bucket}"
                );
                if bucket > 0 {
                    assert!(bucket_upper(bucket - 1) < value, "value {value}");
                }
            }
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_within_two_percent() {
        let mut histogram = DelayErrorHistogram::default();
        for micros in 1..=1000u64 {
            histogram.record(Duration::from_micros(micros));
        }
        let p99 = histogram.quantile(0.99).as_nanos() as f64;
        assert!((p99 / 990_000.0 - 1.0).abs() < 0.02, "p99 {p99}");
        assert_eq!(histogram.quantile(1.0), Duration::from_micros(1000));
        assert_eq!(histogram.count(), 1000);
        let mut merged = DelayErrorHistogram::default();
        merged.merge(&histogram);
        merged.merge(&histogram);
        assert_eq!(merged.count(), 2000);
        assert_eq!(merged.quantile(0.5), histogram.quantile(0.5));
    }
}
