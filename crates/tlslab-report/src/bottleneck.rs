//! Which side limited a Config's rate, and how much of its latency was a queue.
//!
//! tlslab's client and the lab server share one machine: when their CPU together fills the
//! cores, the busier side is the limit (the client is also the limit when it alone fills
//! them). Queueing is what the server's response took beyond the network's round trip and
//! the server's own compute per handshake: time a ClientHello waited for a busy server. A
//! server that makes most of the latency a queue while it is the busier side is the limit
//! too, even when other processes hold the cores it could have used.
//!
//! An emulated link is the limit when its forwarder dropped packets at its full bandwidth
//! queue, or carried nearly its bandwidth's worth of bytes in one direction over the trial
//! time: the handshakes then waited for the link, not for a CPU, and its queue is the queue
//! in their latency.

use serde::Serialize;

/// The limit of one Config's rate, and the queue in its latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bottleneck {
    /// `server` (the lab server's CPU), `client` (tlslab's own), `link` (the emulated
    /// link's bandwidth), or `none`.
    pub limit: String,
    /// The lab server's and the client's CPU over trial time and all cores.
    pub server_utilization: f64,
    /// See `server_utilization`: near 1, the load generator limited the rate, not the server.
    pub client_utilization: f64,
    /// The emulated link's busier direction: bytes carried over what its bandwidth carries
    /// in the trial time; `None` without a counted link or a bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_utilization: Option<f64>,
    /// Packets the emulated link dropped at its full bandwidth queue; `None` without a
    /// counted link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_queue_drops: Option<u64>,
    /// Share of the median handshake that was waiting in the server's queue (0 to 1).
    pub queueing_share: Option<f64>,
}

/// Utilization together above this fills the machine.
const SATURATED: f64 = 0.85;

/// What an emulated link carried over a Config's trials (see [`diagnose`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Its busier direction's bytes over its bandwidth's worth in the trial time; `None`
    /// without a bandwidth.
    pub utilization: Option<f64>,
    /// Packets dropped at its full bandwidth queue: a link that drops is a link that limits.
    pub queue_drops: u64,
}

/// `server_utilization` and `client_utilization` are CPU over trial time and cores;
/// `server_response_ms` the median ClientHello → ServerHello, `rtt_ms` the emulated round
/// trip (0 on loopback), `server_cpu_ms` the server's CPU per handshake, `link` what the
/// emulated link carried (`None` without a counted one).
pub fn diagnose(
    server_utilization: f64,
    client_utilization: f64,
    handshake_median_ms: Option<f64>,
    server_response_ms: Option<f64>,
    rtt_ms: f64,
    server_cpu_ms: f64,
    link: Option<Link>,
) -> Bottleneck {
    let queueing_share = match (handshake_median_ms, server_response_ms) {
        (Some(handshake), Some(response)) if handshake > 0.0 => {
            Some(((response - rtt_ms - server_cpu_ms).max(0.0) / handshake).min(1.0))
        }
        _ => None,
    };
    let full = server_utilization + client_utilization > SATURATED;
    let queued = queueing_share.is_some_and(|share| share > 0.5);
    let link_full = link.is_some_and(|link| {
        link.queue_drops > 0 || link.utilization.is_some_and(|used| used > SATURATED)
    });
    // A saturated client makes every other reading doubtful: it is named first. A full link
    // comes before the server: a server waiting for the link has idle CPU, and one that is
    // also busy would be the limit only once the link is widened.
    let limit = if client_utilization > 0.9 || (full && client_utilization >= server_utilization) {
        "client"
    } else if link_full {
        "link"
    } else if (full || queued) && server_utilization >= client_utilization {
        "server"
    } else {
        "none"
    };
    Bottleneck {
        limit: limit.to_string(),
        server_utilization,
        client_utilization,
        link_utilization: link.and_then(|link| link.utilization),
        link_queue_drops: link.map(|link| link.queue_drops),
        queueing_share,
    }
}

impl Bottleneck {
    /// One line for the summary.
    pub fn describe(&self) -> String {
        let what = match self.limit.as_str() {
            "server" => format!(
                "the lab server (its CPU {:.0}% of all cores, the client's {:.0}%)",
                self.server_utilization * 100.0,
                self.client_utilization * 100.0
            ),
            "client" => format!(
                "the client (its CPU {:.0}% of all cores): the load generator, not the server",
                self.client_utilization * 100.0
            ),
            "link" => format!("the emulated link ({})", self.link_load()),
            _ => format!(
                "none (server CPU {:.0}%, client {:.0}% of all cores)",
                self.server_utilization * 100.0,
                self.client_utilization * 100.0
            ),
        };
        match self.queueing_share {
            Some(share) if share >= 0.05 => {
                format!("{what}; {:.0}% of the median was queueing", share * 100.0)
            }
            _ => what,
        }
    }

    /// How full the emulated link was: `92% of its bandwidth, 14 packets dropped at its
    /// full queue`.
    pub fn link_load(&self) -> String {
        let mut parts = Vec::new();
        if let Some(used) = self.link_utilization {
            parts.push(format!("{:.0}% of its bandwidth used", used * 100.0));
        }
        match self.link_queue_drops {
            Some(0) | None => {}
            Some(1) => parts.push("1 packet dropped at its full queue".into()),
            Some(drops) => parts.push(format!("{drops} packets dropped at its full queue")),
        }
        parts.join(", ")
    }

    /// Where the queue in the latency was, for the warnings: the link's or the server's.
    pub fn queue_place(&self) -> &'static str {
        match self.limit.as_str() {
            "link" => "in the emulated link (its bandwidth was the limit)",
            "server" => "at the lab server (its CPU was the limit)",
            _ => "at the lab server (a saturated side)",
        }
    }

    /// Whether the latency mostly measures a queue.
    pub fn mostly_queue(&self) -> bool {
        self.queueing_share.is_some_and(|share| share > 0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busier_side_of_a_full_machine_is_the_limit() {
        let server = diagnose(0.80, 0.15, Some(20.0), Some(19.0), 0.0, 1.4, None);
        assert_eq!(server.limit, "server");
        assert!(server.mostly_queue());
        assert!((server.queueing_share.unwrap() - 0.88).abs() < 1e-9);
        assert_eq!(
            diagnose(0.30, 0.65, None, None, 0.0, 0.1, None).limit,
            "client"
        );
        assert_eq!(
            diagnose(0.05, 0.95, None, None, 0.0, 0.1, None).limit,
            "client"
        );
        // Other processes held half the cores: the queue still names the server.
        assert_eq!(
            diagnose(0.45, 0.10, Some(16.0), Some(15.0), 0.0, 1.4, None).limit,
            "server"
        );
        let idle = diagnose(0.10, 0.10, Some(1.0), Some(0.3), 0.0, 0.2, None);
        assert_eq!(idle.limit, "none");
        assert!(!idle.mostly_queue());
        // An emulated round trip is not a queue.
        let far = diagnose(0.1, 0.1, Some(60.0), Some(50.5), 50.0, 0.4, None);
        assert!(far.queueing_share.unwrap() < 0.01);
    }

    #[test]
    fn a_full_link_is_the_limit_before_the_server_and_after_the_client() {
        let full = |utilization, queue_drops| {
            Some(Link {
                utilization: Some(utilization),
                queue_drops,
            })
        };
        // Drops at the full queue, or nearly all the bandwidth used: the link.
        let dropped = diagnose(0.05, 0.05, Some(80.0), Some(70.0), 10.0, 0.3, full(0.6, 12));
        assert_eq!(dropped.limit, "link");
        assert!(dropped
            .describe()
            .contains("12 packets dropped at its full queue"));
        assert!(dropped.mostly_queue());
        assert!(dropped.queue_place().contains("emulated link"));
        assert_eq!(
            diagnose(0.05, 0.05, Some(80.0), Some(70.0), 10.0, 0.3, full(0.93, 0)).limit,
            "link"
        );
        // A busy server behind a full link waits for the link.
        assert_eq!(
            diagnose(0.80, 0.10, Some(20.0), Some(19.0), 0.0, 1.4, full(0.95, 3)).limit,
            "link"
        );
        // A saturated client still comes first.
        assert_eq!(
            diagnose(0.05, 0.95, None, None, 0.0, 0.1, full(0.95, 3)).limit,
            "client"
        );
        // A link with room is no limit.
        let room = diagnose(0.05, 0.05, Some(21.0), Some(10.5), 10.0, 0.3, full(0.2, 0));
        assert_eq!(room.limit, "none");
        assert_eq!(room.link_utilization, Some(0.2));
    }
}
