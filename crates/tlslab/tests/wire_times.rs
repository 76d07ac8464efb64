//! End-to-end: a run's wire events come from the kernel (measurement rule 12). Run with
//! `--capture`, every sample says the kernel's socket timestamps timed it, and each event
//! falls on the side of its packet that physics puts it: a write's packet is stamped as it
//! leaves the client's stack, before the capture sees it arrive on loopback; a read's packet
//! is stamped as it arrives, which is when the capture sees it (on loopback both read the
//! same stamp). The user-space clock, read after each call returned, puts every event after
//! its packet, sends included.
//!
//! Needs root (the run's own capture); without it the test prints why and skips.

mod support;

use std::collections::HashMap;
use std::path::Path;

use support::*;

/// What may separate two readings of one instant across the run's placement on the wall
/// clock (an `Instant` and a `SystemTime` read together, at the run's start and at each
/// attempt's): tens of nanoseconds; the capture file keeps nanoseconds.
const GRAIN_NS: i64 = 1_000;

/// The events compared, as the samples table names them, and whether the client sends the
/// packet that marks it (the event must come before the packet's capture) or receives it
/// (after). `handshake_done` is the client's Finished in TLS 1.3, a send, and the server's
/// in TLS 1.2, a receive.
const EVENTS: [(&str, Option<bool>); 5] = [
    ("tcp_connected", Some(true)),
    ("client_hello_sent", Some(true)),
    ("server_hello_received", Some(false)),
    ("client_finished_sent", Some(true)),
    ("handshake_done", None),
];

/// One handshake: client address, version, start and events on the wall clock.
type Handshake = (String, String, i64, Vec<Option<i64>>);

/// Each successful sample's client address, version, start on the wall clock (ns since the
/// Unix epoch) and its events' wall-clock times (`None` where it has none).
fn wall_clock_events(db: &Path, start_of: &str) -> Vec<Handshake> {
    let columns: Vec<String> = EVENTS
        .iter()
        .map(|(event, _)| format!("s.{event}"))
        .collect();
    let sql = format!(
        "SELECT s.client, s.version, {start_of}, {} FROM samples s \
         WHERE s.outcome = 'ok' AND s.client IS NOT NULL",
        columns.join(", ")
    );
    let connection = open(db);
    let mut statement = connection.prepare(&sql).unwrap();
    statement
        .query_map([], |row| {
            let start: i64 = row.get(2)?;
            let events = (0..EVENTS.len())
                .map(|index| {
                    row.get::<_, Option<i64>>(index + 3)
                        .map(|at| at.map(|at| start + at))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((row.get(0)?, row.get(1)?, start, events))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn wire_events_are_the_kernels_and_fall_where_their_packets_do() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: the run's capture needs root");
        return;
    }
    let dir = scratch("wire-times");
    let capture = dir.join("run.pcap");
    let finished = Run::new(&dir, "kernel")
        .args("--tls 1.2,1.3 --backend rustls,openssl -n 10 --warmup 0")
        .option("--capture", capture.to_str().unwrap())
        .succeeds();
    let summary = &finished.summary;
    // Every sample, both libraries, both versions: the kernel timed it, and the run says so.
    assert_eq!(
        count_samples(&finished.db, "s.wire_clock = 'kernel'"),
        40,
        "{summary}"
    );
    assert!(
        summary.contains("timed by: the kernel's socket timestamps in 40"),
        "{summary}"
    );
    let environment: String = value(&finished.db, "SELECT environment FROM runs");
    assert!(
        environment.contains("kernel socket timestamps"),
        "{environment}"
    );

    // The same handshakes in the packets, matched by client address and start.
    let passive = dir.join("passive.db");
    // Each library's lab server has a port of its own.
    let ports: Vec<String> =
        column::<String>(&finished.db, "SELECT DISTINCT address FROM configs", [])
            .iter()
            .map(|address| format!("port {}", address.rsplit_once(':').unwrap().1))
            .collect();
    tlslab_succeeds(&[
        "pcap",
        capture.to_str().unwrap(),
        "--filter",
        &ports.join(" or "),
        "--out",
        passive.to_str().unwrap(),
    ]);
    let run_start: i64 = value(&finished.db, "SELECT started_at_unix_ns FROM runs");
    let active = wall_clock_events(&finished.db, &format!("{run_start} + s.started_at_ns"));
    let wire = wall_clock_events(&passive, "s.captured_at_unix_ns");
    let mut by_client: HashMap<&str, Vec<&Handshake>> = HashMap::new();
    for connection in &wire {
        by_client.entry(&connection.0).or_default().push(connection);
    }
    let mut compared = 0;
    for (client, version, start, events) in &active {
        let packets = by_client
            .get(client.as_str())
            .and_then(|connections| {
                connections
                    .iter()
                    .min_by_key(|connection| connection.2.abs_diff(*start))
            })
            .unwrap_or_else(|| panic!("{client}: no connection in the capture"));
        assert_eq!(&packets.1, version, "{client}");
        for (index, (event, sent)) in EVENTS.iter().enumerate() {
            let (Some(run), Some(packet)) = (events[index], packets.3[index]) else {
                continue;
            };
            compared += 1;
            if sent.unwrap_or(version == "1.3") {
                assert!(
                    run <= packet + GRAIN_NS,
                    "{client} {event}: the run's {run} is {} ns after its packet",
                    run - packet
                );
            } else {
                assert!(
                    run >= packet - GRAIN_NS,
                    "{client} {event}: the run's {run} is {} ns before its packet",
                    packet - run
                );
            }
        }
    }
    assert_eq!(
        compared,
        40 * EVENTS.len(),
        "every event of every handshake"
    );
}
