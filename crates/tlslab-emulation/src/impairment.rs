//! The per-direction link model of the userspace emulators: given a packet's arrival time and
//! size, decide whether it is dropped or when it is released. Pure arithmetic on monotonic
//! nanoseconds, so it is tested without privileges.

use crate::profile::{NetworkProfile, QUEUE_LIMIT_PACKETS};
use std::collections::VecDeque;

/// What happens to one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Write it out at this monotonic time (nanoseconds).
    Release(u64),
    DropLoss,
    DropQueueFull,
}

/// One direction of the link: random loss, then a rate-limited serializer with a bounded
/// queue, then a propagation delay with jitter that never reorders.
pub(crate) struct Impairment {
    delay_nanos: u64,
    jitter_nanos: u64,
    loss: f64,
    rate_bits_per_second: Option<u64>,
    random: fastrand::Rng,
    /// When the serializer finishes the last admitted packet.
    link_free_at: u64,
    /// Serialization end times of packets still queued for the link: the queue length.
    backlog: VecDeque<u64>,
    /// Release time of the previous packet: no packet goes out before it, so jitter never
    /// reorders (netem-with-rate semantics rather than netem's reordering tfifo).
    last_release: u64,
}

impl Impairment {
    pub(crate) fn new(profile: &NetworkProfile, random: fastrand::Rng) -> Impairment {
        let mut impairment = Impairment {
            delay_nanos: 0,
            jitter_nanos: 0,
            loss: 0.0,
            rate_bits_per_second: None,
            random,
            link_free_at: 0,
            backlog: VecDeque::new(),
            last_release: 0,
        };
        impairment.set_profile(profile);
        impairment
    }

    /// Takes effect for packets admitted afterwards; packets already scheduled keep their
    /// release times, and ordering against them is still preserved.
    pub(crate) fn set_profile(&mut self, profile: &NetworkProfile) {
        self.delay_nanos = duration_nanos(profile.one_way_delay());
        self.jitter_nanos = duration_nanos(profile.jitter);
        self.loss = profile.loss;
        self.rate_bits_per_second = profile.rate_bits_per_second;
    }

    pub(crate) fn admit(&mut self, now: u64, length: usize) -> Verdict {
        if self.loss > 0.0 && self.random.f64() < self.loss {
            return Verdict::DropLoss;
        }
        let mut departure = now;
        if let Some(rate) = self.rate_bits_per_second {
            while self.backlog.front().is_some_and(|&end| end <= now) {
                self.backlog.pop_front();
            }
            if self.backlog.len() >= QUEUE_LIMIT_PACKETS {
                return Verdict::DropQueueFull;
            }
            let serialization = (length as u128 * 8 * 1_000_000_000 / u128::from(rate)) as u64;
            departure = self.link_free_at.max(now) + serialization;
            self.link_free_at = departure;
            self.backlog.push_back(departure);
        }
        let mut delay = self.delay_nanos;
        if self.jitter_nanos > 0 {
            let low = self.delay_nanos.saturating_sub(self.jitter_nanos);
            let high = self.delay_nanos + self.jitter_nanos;
            delay = self.random.u64(low..=high);
        }
        let release = (departure + delay).max(self.last_release);
        self.last_release = release;
        Verdict::Release(release)
    }
}

pub(crate) fn duration_nanos(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn release(verdict: Verdict) -> u64 {
        match verdict {
            Verdict::Release(at) => at,
            other => panic!("expected a release, got {other:?}"),
        }
    }

    #[test]
    fn delay_is_half_the_rtt() {
        let profile = NetworkProfile::with_rtt(Duration::from_millis(20));
        let mut link = Impairment::new(&profile, fastrand::Rng::with_seed(1));
        assert_eq!(release(link.admit(1_000, 100)), 1_000 + 10_000_000);
    }

    #[test]
    fn jitter_varies_delay_but_never_reorders() {
        let profile = NetworkProfile {
            rtt: Duration::from_millis(20),
            jitter: Duration::from_millis(5),
            ..NetworkProfile::default()
        };
        let mut link = Impairment::new(&profile, fastrand::Rng::with_seed(7));
        let mut previous = 0;
        let mut delays = Vec::new();
        for packet in 0..10_000u64 {
            let now = packet * 1_000_000; // one per millisecond
            let at = release(link.admit(now, 100));
            assert!(
                at >= previous,
                "packet {packet} released before its predecessor"
            );
            assert!(at >= now + 5_000_000);
            previous = at;
            delays.push(at - now);
        }
        let shortest = *delays.iter().min().unwrap();
        let longest = *delays.iter().max().unwrap();
        assert!(longest - shortest > 4_000_000, "jitter had no effect");
        assert!(longest <= 15_000_000);
    }

    #[test]
    fn loss_drops_about_the_given_fraction() {
        let profile = NetworkProfile {
            loss: 0.25,
            ..NetworkProfile::default()
        };
        let mut link = Impairment::new(&profile, fastrand::Rng::with_seed(3));
        let dropped = (0..10_000)
            .filter(|_| link.admit(0, 100) == Verdict::DropLoss)
            .count();
        assert!((2_200..2_800).contains(&dropped), "dropped {dropped}");
    }

    #[test]
    fn rate_serializes_and_drops_at_the_queue_limit() {
        let profile = NetworkProfile {
            rate_bits_per_second: Some(8_000_000), // one byte per microsecond
            ..NetworkProfile::default()
        };
        let mut link = Impairment::new(&profile, fastrand::Rng::with_seed(5));
        assert_eq!(release(link.admit(0, 1_000)), 1_000_000);
        assert_eq!(release(link.admit(0, 1_000)), 2_000_000);
        for _ in 2..QUEUE_LIMIT_PACKETS {
            release(link.admit(0, 1_000));
        }
        assert_eq!(link.admit(0, 1_000), Verdict::DropQueueFull);
        // Once the first packet has left the link there is room for one more.
        assert!(matches!(link.admit(1_000_000, 1_000), Verdict::Release(_)));
    }
}
