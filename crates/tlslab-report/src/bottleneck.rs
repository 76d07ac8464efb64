//! Which side limited a Config's rate, and how much of its latency was a queue.
//!
//! tlslab's client and the lab server share one machine: when their CPU together fills the
//! cores, the busier side is the limit (the client is also the limit when it alone fills
//! them). Queueing is what the server's response took beyond the network's round trip and
//! the server's own compute per handshake: time a ClientHello waited for a busy server. A
//! server that makes most of the latency a queue while it is the busier side is the limit
//! too, even when other processes hold the cores it could have used.

use serde::Serialize;

/// The limit of one Config's rate, and the queue in its latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bottleneck {
    /// `server` (the lab server's CPU), `client` (tlslab's own), or `none`.
    pub limit: String,
    /// The lab server's and the client's CPU over trial time and all cores.
    pub server_utilization: f64,
    pub client_utilization: f64,
    /// Share of the median handshake that was waiting in the server's queue (0 to 1).
    pub queueing_share: Option<f64>,
}

/// Utilization together above this fills the machine.
const SATURATED: f64 = 0.85;

/// `server_utilization` and `client_utilization` are CPU over trial time and cores;
/// `server_response_ms` the median ClientHello → ServerHello, `rtt_ms` the emulated round
/// trip (0 on loopback), `server_cpu_ms` the server's CPU per handshake.
pub fn diagnose(
    server_utilization: f64,
    client_utilization: f64,
    handshake_median_ms: Option<f64>,
    server_response_ms: Option<f64>,
    rtt_ms: f64,
    server_cpu_ms: f64,
) -> Bottleneck {
    let queueing_share = match (handshake_median_ms, server_response_ms) {
        (Some(handshake), Some(response)) if handshake > 0.0 => {
            Some(((response - rtt_ms - server_cpu_ms).max(0.0) / handshake).min(1.0))
        }
        _ => None,
    };
    let full = server_utilization + client_utilization > SATURATED;
    let queued = queueing_share.is_some_and(|share| share > 0.5);
    let limit = if client_utilization > 0.9 || (full && client_utilization >= server_utilization) {
        "client"
    } else if (full || queued) && server_utilization >= client_utilization {
        "server"
    } else {
        "none"
    };
    Bottleneck {
        limit: limit.to_string(),
        server_utilization,
        client_utilization,
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
        let server = diagnose(0.80, 0.15, Some(20.0), Some(19.0), 0.0, 1.4);
        assert_eq!(server.limit, "server");
        assert!(server.mostly_queue());
        assert!((server.queueing_share.unwrap() - 0.88).abs() < 1e-9);
        assert_eq!(diagnose(0.30, 0.65, None, None, 0.0, 0.1).limit, "client");
        assert_eq!(diagnose(0.05, 0.95, None, None, 0.0, 0.1).limit, "client");
        // Other processes held half the cores: the queue still names the server.
        assert_eq!(
            diagnose(0.45, 0.10, Some(16.0), Some(15.0), 0.0, 1.4).limit,
            "server"
        );
        let idle = diagnose(0.10, 0.10, Some(1.0), Some(0.3), 0.0, 0.2);
        assert_eq!(idle.limit, "none");
        assert!(!idle.mostly_queue());
        // An emulated round trip is not a queue.
        let far = diagnose(0.1, 0.1, Some(60.0), Some(50.5), 50.0, 0.4);
        assert!(far.queueing_share.unwrap() < 0.01);
    }
}
