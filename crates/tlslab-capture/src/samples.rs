//! A captured connection as a [`Sample`] of the phase model, and the Config it belongs to:
//! what was negotiated.

use std::borrow::Cow;
use std::net::SocketAddr;

use tlslab_core::{
    names, ErrorClass, Event, Negotiated, Observed, Outcome, Sample, Timeline, Vantage,
};

use crate::flows::{Connection, Ending, Unseen};

/// What groups connections into one Config: what was negotiated and with whom.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigKey {
    pub transport: &'static str,
    /// `None` for handshakes that failed before the ServerHello.
    pub version: Option<String>,
    pub suite: Option<String>,
    pub group: Option<String>,
    pub signature_scheme: Option<String>,
    pub server_name: Option<String>,
    /// How the session was resumed: `off`, `tickets` (TLS 1.3's pre-shared keys too) or
    /// `session-id`.
    pub resumption: &'static str,
    /// Whether the ClientHello offered Encrypted ClientHello.
    pub ech: bool,
    /// Whether the server asked for another key share (a HelloRetryRequest).
    pub hello_retry: bool,
    /// Whether the capture shows a ClientHello and nothing of the server's answer: a
    /// handshake that neither negotiated nor failed as far as it tells.
    pub unanswered: bool,
}

impl ConfigKey {
    /// `tls1.3 TLS13_AES_128_GCM_SHA256 x25519 sni=example.com resumed`.
    pub fn label(&self) -> String {
        let mut words = Vec::new();
        match &self.version {
            Some(version) => words.push(format!("tls{version}")),
            None if self.unanswered => words.push("unanswered".to_string()),
            None => words.push("failed".to_string()),
        }
        words.extend(self.suite.clone());
        words.extend(self.group.clone());
        words.extend(self.signature_scheme.clone());
        if self.transport != "tcp" {
            words.push(self.transport.to_string());
        }
        if let Some(name) = &self.server_name {
            words.push(format!("sni={name}"));
        }
        if self.resumption != "off" {
            words.push("resumed".into());
        }
        if self.ech {
            words.push("ech".into());
        }
        if self.hello_retry {
            words.push("hrr".into());
        }
        words.join(" ")
    }
}

/// Whether both ends are this machine: loopback, or one address talking to itself.
fn local(client: SocketAddr, server: SocketAddr) -> bool {
    client.ip().is_loopback() || client.ip() == server.ip()
}

/// The capture point, from the TCP handshake's gaps: a client waits a round trip for the
/// SYN-ACK and acknowledges at once; a server answers at once and waits a round trip for
/// the ACK. A gap ten times the other decides; otherwise the point is in between. Without
/// the SYN exchange (QUIC, a capture begun mid-flow) the handshake's own gaps decide
/// ([`vantage_from_handshake`], where five times suffices: the peers' work is in them).
fn vantage(connection: &Connection) -> (Vantage, Option<u64>) {
    let (Some(syn), Some(syn_ack), Some(ack)) =
        (connection.syn, connection.syn_ack, connection.ack)
    else {
        let vantage = if local(connection.client, connection.server) {
            Vantage::Local
        } else {
            vantage_from_handshake(&connection.handshake.times)
        };
        let rtt = match (connection.syn, connection.syn_ack) {
            (Some(syn), Some(syn_ack)) => Some(syn_ack.saturating_sub(syn)),
            _ => None,
        };
        return (vantage, rtt);
    };
    let outbound = syn_ack.saturating_sub(syn);
    let inbound = ack.saturating_sub(syn_ack);
    if local(connection.client, connection.server) {
        (Vantage::Local, Some(outbound))
    } else {
        // A kernel answers a SYN and a SYN-ACK in microseconds: a tenfold gap is certain.
        match from_gaps(outbound, inbound, 10) {
            Vantage::Client => (Vantage::Client, Some(outbound)),
            Vantage::Server => (Vantage::Server, Some(inbound)),
            vantage => (vantage, Some(outbound + inbound)),
        }
    }
}

/// `client` when the wait for the other side's answer (`outbound`) is at least `ratio` times
/// the wait before this side's reply (`inbound`), `server` the other way round, `middle`
/// in between.
fn from_gaps(outbound: u64, inbound: u64, ratio: u64) -> Vantage {
    if outbound > 0 && inbound.saturating_mul(ratio) <= outbound {
        Vantage::Client
    } else if inbound > 0 && outbound.saturating_mul(ratio) <= inbound {
        Vantage::Server
    } else {
        Vantage::Middle
    }
}

/// The capture point when there is no SYN exchange to read, from the handshake's gaps: a
/// client waits a round trip between its ClientHello and the ServerHello, and answers the
/// end of the server's flight at once with its Finished; a server answers the ClientHello
/// at once and waits a round trip for that Finished (also a QUIC server that its
/// amplification limit made wait inside its flight: the Finished still comes a round trip
/// after the flight's last packet). `unknown` when the handshake did not get that far.
/// Both gaps include the peers' own work, so they give the vantage but no network round
/// trip.
fn vantage_from_handshake(times: &crate::tls::Times) -> Vantage {
    let (Some(hello), Some(answer), Some(flight_end), Some(finished)) = (
        times.client_hello,
        times.server_hello,
        times.server_flight_end,
        times.client_finished,
    ) else {
        return Vantage::Unknown;
    };
    // A peer's handshake work (a signature, a certificate check) takes milliseconds on a
    // busy machine, so a fivefold gap decides here: at a 50 ms round trip, work up to 10 ms.
    from_gaps(
        answer.saturating_sub(hello),
        finished.saturating_sub(flight_end),
        5,
    )
}

fn suite_name(code_point: u16) -> Cow<'static, str> {
    tls_parser::TlsCipherSuite::from_id(code_point).map_or_else(
        || Cow::Owned(format!("0x{code_point:04x}")),
        |suite| names::suite_static(suite.name),
    )
}

/// Whether a capture at `vantage` sees the events of the phase model. Every event is the
/// client's (bytes handed to its kernel, or read from it), so a packet's time is the event's
/// time only where the client's packets are captured:
///
/// | vantage | start … first_byte (every event a packet marks) | cert_verify_* | network RTT |
/// | --- | --- | --- | --- |
/// | `client` | yes | NULL | SYN → SYN-ACK |
/// | `local` (loopback, one host) | yes | NULL | SYN → SYN-ACK |
/// | `server` | NULL | NULL | SYN-ACK → ACK |
/// | `middle` | NULL | NULL | SYN → SYN-ACK → ACK |
/// | `unknown` (no SYN exchange and no complete handshake to tell by) | NULL | NULL | SYN → SYN-ACK when seen |
///
/// At the server, a packet from the client arrives a one-way delay after the client sent it,
/// and one to the client leaves a one-way delay before the client reads it; the delays are
/// not known per packet (jitter, queues, the rate), so no event, and no phase between two
/// of them, is the client's. Those stay NULL rather than a guess; the sample still carries
/// its vantage, what was negotiated, and the network round trip. The middle is the same
/// with part of each delay on either side. Certificate verification happens inside the
/// client and never shows in packets. Without a SYN exchange (QUIC, a capture begun
/// mid-flow) the vantage comes from the handshake's gaps and the network RTT is NULL.
pub fn sees_client_events(vantage: Vantage) -> bool {
    match vantage {
        Vantage::Client | Vantage::Local => true,
        // Not knowing where the packets were seen, no time is the client's for certain.
        Vantage::Server | Vantage::Middle | Vantage::Unknown => false,
    }
}

/// The Config key and the Sample of `connection`; `run_start` is the capture's first packet
/// (Samples' `started_at` counts from it), `source` the file or interface, `known` the
/// capture point when the user said where it was (`--vantage`).
pub fn sample(
    connection: &Connection,
    run_start: u64,
    source: &str,
    known: Option<Vantage>,
) -> (ConfigKey, Sample) {
    let handshake = &connection.handshake;
    let start = connection.syn.unwrap_or(connection.first_packet);
    let (detected, network_rtt_ns) = vantage(connection);
    let vantage = known.unwrap_or(detected);
    let timeline = client_timeline(connection, vantage, start);

    let no_hello = crate::tls::ClientHello::default();
    let hello = handshake.client_hello.as_ref().unwrap_or(&no_hello);
    let resumed = handshake.resumed();
    let negotiated = negotiated(handshake, hello);

    let (outcome, error, error_detail) = outcome(connection);

    let key = ConfigKey {
        transport: connection.transport,
        version: negotiated.version.clone(),
        suite: negotiated.suite.clone(),
        group: negotiated.group.clone(),
        signature_scheme: negotiated.signature_scheme.clone(),
        server_name: hello.server_name.clone(),
        resumption: match (resumed, handshake.version()) {
            (false, _) => "off",
            (true, Some(0x0304)) => "tickets",
            (true, _) if hello.offers_session => "tickets",
            (true, _) => "session-id",
        },
        ech: hello.offers_ech,
        hello_retry: handshake.hello_retry,
        unanswered: outcome == Outcome::Incomplete && negotiated.version.is_none(),
    };
    let sample = Sample {
        config: 0,
        trial: 0,
        round: 1,
        agent: 0,
        warmup: false,
        started_at: start.saturating_sub(run_start),
        timeline,
        outcome,
        error,
        error_detail,
        negotiated,
        bytes_sent: handshake.bytes_to_server,
        bytes_received: handshake.bytes_to_client,
        client_hello_bytes: (handshake.client_hello_bytes > 0)
            .then_some(handshake.client_hello_bytes),
        server_flight_bytes: handshake.server_flight_bytes,
        client_certificate_bytes: None,
        response: None,
        quic: None,
        insecure: false,
        client_address: Some(connection.client),
        server_address: None,
        connection: None,
        response_wire_bytes: None,
        server_software: None,
        wire_clock: None,
        observed: Some(Box::new(Observed {
            source: source.to_string(),
            vantage,
            server: connection.server,
            first_packet_unix_ns: start,
            network_rtt_ns,
            retransmissions: connection.retransmissions,
            missing_bytes: connection.missing_bytes,
            offered: offered(hello),
        })),
    };
    (key, sample)
}

/// The events a capture at `vantage` can place on the client's timeline, counted from
/// `start` (the SYN, or the first packet): none unless the client's own times are seen.
fn client_timeline(connection: &Connection, vantage: Vantage, start: u64) -> Timeline {
    let since = |at: u64| at.saturating_sub(start);
    let mut timeline = Timeline::default();
    if sees_client_events(vantage) {
        timeline.set(Event::Start, 0);
        if let (Some(_), Some(ack)) = (connection.syn, connection.ack) {
            timeline.set(Event::TcpConnected, since(ack));
        }
        let times = &connection.handshake.times;
        for (event, at) in [
            (Event::ClientHelloSent, times.client_hello),
            (Event::ServerHelloReceived, times.server_hello),
            (Event::ServerFlightReceived, times.server_flight_end),
            (Event::ClientFinishedSent, times.client_finished),
            (Event::HandshakeDone, times.done),
            (Event::FirstByte, times.first_response_byte),
        ] {
            if let Some(at) = at {
                timeline.set(event, since(at));
            }
        }
    }
    timeline
}

/// What the handshake settled, as far as the packets show it.
fn negotiated(handshake: &crate::tls::Handshake, hello: &crate::tls::ClientHello) -> Negotiated {
    let server = handshake.server_hello.as_ref();
    let resumed = handshake.resumed();
    Negotiated {
        version: server.map(|server| names::version(server.version)),
        suite: server.map(|server| suite_name(server.suite).into_owned()),
        group: handshake.group(),
        signature_scheme: handshake.signature_scheme.map(names::signature_scheme),
        alpn: server.and_then(|server| server.alpn.clone()),
        // Unknown when the capture holds too little of the server's flight to tell.
        resumed: ((hello.offers_session || resumed) && handshake.resumption_known())
            .then_some(resumed),
        // Whether the server took the early data is in its encrypted extensions.
        early_data: handshake.early_data(),
        // Only the absence of ECH is certain without keys; with them, the secrets that open
        // the server's flight tell which ClientHello it answered. A GREASE extension looks
        // like a real one on the wire, so it shows as rejected.
        ech: match (hello.offers_ech, handshake.ech_accepted) {
            (false, _) => Some(tlslab_core::EchStatus::NotOffered),
            (true, Some(true)) => Some(tlslab_core::EchStatus::Accepted),
            (true, Some(false)) => Some(tlslab_core::EchStatus::Rejected),
            (true, None) => None,
        },
        // Known once the server answered, with a ServerHello or a HelloRetryRequest.
        hello_retry: (server.is_some() || handshake.hello_retry).then_some(handshake.hello_retry),
        // A TLS 1.3 CertificateRequest is encrypted; not read from captures yet.
        client_certificate: None,
    }
}

/// How the connection ended, as a Sample records it: the outcome, the error's class and
/// its detail.
fn outcome(connection: &Connection) -> (Outcome, Option<ErrorClass>, Option<String>) {
    let handshake = &connection.handshake;
    match connection.ending {
        Ending::Done => (Outcome::Ok, None, None),
        _ if handshake.alert.is_none() && connection.failure.is_some() => {
            let (class, detail) = connection
                .failure
                .clone()
                .unwrap_or((ErrorClass::Protocol, String::new()));
            (Outcome::Error, Some(class), Some(detail))
        }
        _ if handshake.server_not_tls() => (
            Outcome::Error,
            Some(ErrorClass::NotTls),
            Some("the server answered with bytes that are not TLS".to_string()),
        ),
        _ if handshake.alert.is_some() => {
            let alert = handshake.alert.unwrap_or(crate::tls::Alert {
                from_server: true,
                level: 2,
                description: 0,
            });
            (
                Outcome::Error,
                Some(ErrorClass::Alert),
                Some(format!(
                    "{} alert from the {}",
                    tls_parser::TlsAlertDescription(alert.description),
                    if alert.from_server {
                        "server"
                    } else {
                        "client"
                    }
                )),
            )
        }
        Ending::Reset { by_server } => (
            Outcome::Error,
            Some(ErrorClass::Reset),
            Some(format!("reset by the {}", side(by_server))),
        ),
        Ending::Closed { by_server } => (
            Outcome::Error,
            Some(ErrorClass::Reset),
            Some(format!("closed by the {}", side(by_server))),
        ),
        Ending::Timeout => (
            Outcome::Error,
            Some(ErrorClass::Timeout),
            Some("silent for a minute of capture time".to_string()),
        ),
        Ending::Unseen(unseen) => (
            Outcome::Incomplete,
            Some(ErrorClass::Incomplete),
            Some(unseen_detail(unseen, handshake.server_hello.is_some()).to_string()),
        ),
    }
}

/// Why the capture shows only the start of a handshake, in words: what it lacks, and the
/// likely reason.
fn unseen_detail(unseen: Unseen, answered: bool) -> &'static str {
    match (unseen, answered) {
        (Unseen::CaptureEnded, false) => {
            "the capture shows no answer to the ClientHello: it ended, or was filtered"
        }
        (Unseen::CaptureEnded, true) => {
            "the capture shows nothing more of the handshake: it ended, or was filtered"
        }
        (Unseen::RecordsAbsent, false) => {
            "the capture lacks the server's answer: it was filtered, or lost packets before \
             the capture point"
        }
        (Unseen::RecordsAbsent, true) => {
            "the capture lacks the rest of the handshake: it was filtered, or lost packets \
             before the capture point"
        }
        (Unseen::Silent, _) => {
            "the capture shows nothing of the connection for a minute after the server \
             answered: it was filtered, or lost packets before the capture point"
        }
    }
}

/// What the ClientHello offered, by name.
fn offered(hello: &crate::tls::ClientHello) -> tlslab_core::Offered {
    tlslab_core::Offered {
        versions: hello
            .versions
            .iter()
            .map(|&v| names::version_static(v))
            .collect(),
        suites: hello.suites.iter().map(|&s| suite_name(s)).collect(),
        groups: hello
            .groups
            .iter()
            .map(|&g| names::group_static(g))
            .collect(),
        key_shares: hello
            .key_shares
            .iter()
            .map(|&(group, size)| (names::group_static(group), size))
            .collect(),
        alpn: hello.alpn.clone(),
    }
}

fn side(server: bool) -> &'static str {
    if server {
        "server"
    } else {
        "client"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::Times;

    /// A handshake's times in microseconds, as `client_hello`, `server_hello`,
    /// `server_flight_end` and `client_finished`.
    fn times(hello: u64, answer: u64, flight_end: u64, finished: u64) -> Times {
        Times {
            client_hello: Some(hello * 1_000),
            server_hello: Some(answer * 1_000),
            server_flight_end: Some(flight_end * 1_000),
            client_finished: Some(finished * 1_000),
            ..Times::default()
        }
    }

    #[test]
    fn without_a_syn_exchange_the_handshakes_gaps_tell_the_vantage() {
        // At the client: 50 ms to the ServerHello, the Finished 300 µs after the flight.
        assert_eq!(
            vantage_from_handshake(&times(0, 50_000, 50_400, 50_700)),
            Vantage::Client
        );
        // At the server: the ServerHello 200 µs after the hello, the Finished a round trip
        // after the flight.
        assert_eq!(
            vantage_from_handshake(&times(0, 200, 600, 50_900)),
            Vantage::Server
        );
        // Half-way: 25 ms each way.
        assert_eq!(
            vantage_from_handshake(&times(0, 25_000, 25_400, 50_400)),
            Vantage::Middle
        );
        // A handshake that ended before the client's Finished cannot tell.
        let unfinished = Times {
            client_finished: None,
            ..times(0, 50_000, 50_400, 0)
        };
        assert_eq!(vantage_from_handshake(&unfinished), Vantage::Unknown);
        assert!(!sees_client_events(Vantage::Unknown));
    }
}
