//! What the emulated network does to packets, and its validation.

use crate::EmulationError;
use std::time::Duration;

/// The impairment between client and server. Each direction gets half of it: `rtt / 2` of
/// delay, its own `jitter`, its own `loss`, its own rate limit. The default is no impairment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetworkProfile {
    /// Round-trip delay added: half in each direction.
    pub rtt: Duration,
    /// Per packet and direction, the delay is uniform in `[rtt/2 - jitter, rtt/2 + jitter]`
    /// (clamped at zero), but a packet is never released before the previous packet of its
    /// direction: jitter varies latency without reordering, as real paths mostly do.
    pub jitter: Duration,
    /// Fraction of packets dropped at random, independently per packet and direction, 0 to 1.
    pub loss: f64,
    /// Link rate per direction. Packets beyond the rate wait in a bounded queue
    /// ([`QUEUE_LIMIT_PACKETS`]) and are dropped at the tail when it is full.
    pub rate_bits_per_second: Option<u64>,
}

/// Packets waiting for a rate-limited link, per direction: netem's default limit, so both
/// emulators drop at the same backlog.
pub const QUEUE_LIMIT_PACKETS: usize = 1000;

impl NetworkProfile {
    /// A profile with only a round-trip delay.
    pub fn with_rtt(rtt: Duration) -> NetworkProfile {
        NetworkProfile {
            rtt,
            ..NetworkProfile::default()
        }
    }

    /// The delay of one direction before jitter.
    pub fn one_way_delay(&self) -> Duration {
        self.rtt / 2
    }

    /// Rejects values that no emulator can apply, before any of them is changed.
    pub fn validate(&self) -> Result<(), EmulationError> {
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(EmulationError::new(
                format!("loss {} is not a fraction between 0 and 1", self.loss),
                "give loss as a fraction, e.g. 0.01 for 1%",
            ));
        }
        if self.rate_bits_per_second == Some(0) {
            return Err(EmulationError::new(
                "a rate of 0 bits per second would stop all traffic",
                "leave the rate unset for an unlimited link",
            ));
        }
        // Delays beyond this are typos (a minute of RTT); they would also overflow netem's
        // microsecond fields on some tc versions.
        let limit = Duration::from_secs(60);
        if self.rtt > limit || self.jitter > limit {
            return Err(EmulationError::new(
                format!(
                    "rtt {:?} or jitter {:?} is above the limit of {limit:?}",
                    self.rtt, self.jitter
                ),
                "give delays in milliseconds, e.g. 50ms",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rejects_impossible_values() {
        assert!(NetworkProfile::default().validate().is_ok());
        let bad_loss = NetworkProfile {
            loss: 1.5,
            ..NetworkProfile::default()
        };
        assert!(bad_loss.validate().is_err());
        let zero_rate = NetworkProfile {
            rate_bits_per_second: Some(0),
            ..NetworkProfile::default()
        };
        assert!(zero_rate.validate().is_err());
        assert_eq!(
            NetworkProfile::with_rtt(Duration::from_millis(20)).one_way_delay(),
            Duration::from_millis(10)
        );
    }
}
