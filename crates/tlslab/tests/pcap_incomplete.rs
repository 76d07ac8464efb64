//! End-to-end: `tlslab pcap` stores every handshake a capture shows, however little of it:
//! a capture cut in the middle of a run, captures filtered down to the TLS handshake
//! records, and ClientHellos nothing answers (TCP and QUIC). What the capture lacks is
//! NULL, the outcome is `incomplete` (neither a success nor a failure), and tshark's count
//! of ServerHellos per connection is what tlslab stores.
//!
//! Real parts: the lab server (`tlslab serve`), `tlslab run` as the client, tcpdump making
//! the captures at run time, editcap cutting one and tshark counting. Needs root (or
//! CAP_NET_RAW) and tcpdump, editcap and tshark; without them the tests print why and skip.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use support::*;

/// Captures serialise: each is of a port of its own, but the load of one run changes the
/// other's timing, and these tests judge what the packets show.
static CAPTURING: Mutex<()> = Mutex::new(());

fn capturing() -> std::sync::MutexGuard<'static, ()> {
    CAPTURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether `tool` runs here; prints why not.
fn runs(tool: &str, package: &str) -> bool {
    match Command::new(tool).arg("--version").output() {
        Ok(output) if output.status.success() => true,
        _ => {
            println!("skipped: {tool} does not run here (Debian's {package})");
            false
        }
    }
}

/// `tlslab pcap CAPTURE --json --out DB`: the `capture` part of its summary.
fn pcap(capture: &Path, db: &Path) -> serde_json::Value {
    let printed = tlslab_succeeds(&[
        "pcap",
        capture.to_str().unwrap(),
        "--json",
        "--out",
        db.to_str().unwrap(),
    ]);
    let summary: serde_json::Value = serde_json::from_str(&printed).unwrap();
    summary["capture"].clone()
}

/// tshark's fields `fields` of the packets of `capture` that `display` (its display
/// filter) passes, a line each.
fn tshark(capture: &Path, display: &str, fields: &[&str]) -> Vec<String> {
    let mut command = Command::new("tshark");
    command.arg("-r").arg(capture).args(["-Y", display]);
    command.args(["-T", "fields", "-E", "separator=,"]);
    for field in fields {
        command.args(["-e", field]);
    }
    let output = command.output().expect("tshark runs");
    assert!(
        output.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.is_empty())
        .map(String::from)
        .collect()
}

/// The client ports of the connections in which tshark finds a ServerHello in `capture`
/// (of the lab server on `port`), with how many it finds in each: tshark decodes the TLS
/// of any port given with `-d`.
fn tshark_server_hellos(capture: &Path, port: u16) -> BTreeMap<String, u64> {
    let mut command = Command::new("tshark");
    command
        .arg("-r")
        .arg(capture)
        .args(["-d", &format!("tcp.port=={port},tls")])
        .args(["-Y", "tls.handshake.type == 2"])
        .args(["-T", "fields", "-e", "tcp.dstport"]);
    let output = command.output().expect("tshark runs");
    assert!(output.status.success());
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        // A segment can hold several messages of type 2 only across connections.
        *counts.entry(line.trim().to_string()).or_insert(0) += 1;
    }
    counts
}

/// The client port of each stored sample, with (outcome, version, suite, group).
fn by_client(db: &Path) -> BTreeMap<String, (String, String, String, String)> {
    rows::<(
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    )>(
        db,
        "SELECT client, outcome, version, suite, \"group\" FROM samples",
        [],
    )
    .into_iter()
    .map(|(client, outcome, version, suite, group)| {
        let port = client.rsplit_once(':').unwrap().1.to_string();
        let text = |value: Option<String>| value.unwrap_or_else(|| "-".into());
        (port, (outcome, text(version), text(suite), text(group)))
    })
    .collect()
}

/// What the active run negotiated on each client port: (version, suite, group).
fn active_by_client(db: &Path) -> BTreeMap<String, (String, String, String)> {
    by_client(db)
        .into_iter()
        .map(|(port, (outcome, version, suite, group))| {
            assert_eq!(outcome, "ok", "the active run succeeded on {port}");
            (port, (version, suite, group))
        })
        .collect()
}

/// The lab server, a run of `runs` handshakes against it (`options` added), and what
/// tcpdump made of it through each of `filters` (tcpdump's syntax, after `port PORT and`):
/// the active store and the captures, in the order of `filters`.
fn captured(
    dir: &Path,
    options: &str,
    filters: &[(&str, &str)],
) -> Option<(LabServer, PathBuf, Vec<PathBuf>)> {
    let server = LabServer::start();
    let port = server.port;
    let mut captures = Vec::new();
    for (name, filter) in filters {
        let expression = match filter {
            &"" => format!("tcp port {port}"),
            filter => format!("tcp port {port} and ( {filter} )"),
        };
        captures.push(tcpdump_in(None, "lo", dir, name, &expression)?);
    }
    let active = Run::new(dir, "active")
        .args(&format!(
            "--target 127.0.0.1:{port} --insecure --warmup 0 {options}"
        ))
        .succeeds()
        .db;
    let files = captures.into_iter().map(|capture| capture.stop()).collect();
    Some((server, active, files))
}

/// Keeps the first `frames` packets of `capture` (editcap), as a capture stopped there.
fn cut(capture: &Path, frames: u64, into: &Path) {
    let output = Command::new("editcap")
        .args(["-r"])
        .arg(capture)
        .arg(into)
        .arg(format!("1-{frames}"))
        .output()
        .unwrap();
    assert_success(&output);
}

#[test]
fn a_capture_cut_mid_run_stores_its_last_handshakes_as_incomplete() {
    let dir = scratch("incomplete-cut");
    if !(runs("tshark", "tshark") && runs("editcap", "wireshark-common")) {
        return;
    }
    let _capturing = capturing();
    let Some((server, active, files)) = captured(&dir, "--tls 1.2,1.3 -n 6", &[("full", "")])
    else {
        return;
    };
    let full = &files[0];
    let negotiated = active_by_client(&active);
    assert_eq!(negotiated.len(), 12);
    // Cut right after the seventh ServerHello's packet, and right after the ninth
    // ClientHello's: the capture ends inside two handshakes, one answered and one not.
    let hellos = |kind: u8| -> Vec<(u64, String)> {
        tshark(
            full,
            &format!("tls.handshake.type == {kind}"),
            &["frame.number", "tcp.srcport", "tcp.dstport"],
        )
        .iter()
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let client = if kind == 1 { fields[1] } else { fields[2] };
            (fields[0].parse().unwrap(), client.to_string())
        })
        .collect()
    };
    let (answered_frame, answered_client) = hellos(2)[6].clone();
    let (asked_frame, asked_client) = hellos(1)[8].clone();

    let after_server_hello = dir.join("after-server-hello.pcap");
    cut(full, answered_frame, &after_server_hello);
    let db = dir.join("after-server-hello.db");
    let counts = pcap(&after_server_hello, &db);
    let stored = by_client(&db);
    // Every connection whose ServerHello the cut capture holds is stored, once, as
    // tshark counts them: six complete, the seventh incomplete with what its ServerHello
    // said.
    let tshark_counts = tshark_server_hellos(&after_server_hello, server.port);
    assert_eq!(tshark_counts.len(), 7, "{tshark_counts:?}");
    assert!(tshark_counts.values().all(|&count| count == 1));
    let answered: BTreeSet<&String> = stored
        .iter()
        .filter(|(_, (_, version, _, _))| version != "-")
        .map(|(port, _)| port)
        .collect();
    assert_eq!(answered, tshark_counts.keys().collect(), "{counts}");
    assert_eq!(
        (
            &counts["handshakes"],
            &counts["failed"],
            &counts["incomplete"]
        ),
        (&7.into(), &0.into(), &1.into()),
        "{counts}"
    );
    let (outcome, version, suite, group) = &stored[&answered_client];
    assert_eq!(outcome, "incomplete");
    assert_eq!(
        (version, suite, group),
        (
            &negotiated[&answered_client].0,
            &negotiated[&answered_client].1,
            &negotiated[&answered_client].2
        )
    );
    for (port, (outcome, version, suite, group)) in &stored {
        if port != &answered_client {
            assert_eq!(outcome, "ok");
            assert_eq!((version, suite, group), {
                let (v, s, g) = &negotiated[port];
                (v, s, g)
            });
        }
    }
    // The phases the capture shows, and NULL after them; the reason in words.
    assert_eq!(
        count_samples(
            &db,
            "s.outcome = 'incomplete' AND s.error = 'incomplete' \
             AND s.tcp_connected IS NOT NULL AND s.client_hello_sent IS NOT NULL \
             AND s.server_hello_received >= s.client_hello_sent \
             AND s.server_response IS NOT NULL \
             AND s.client_finished_sent IS NULL AND s.handshake_done IS NULL \
             AND s.handshake IS NULL \
             AND s.error_detail LIKE 'the capture shows nothing more of the handshake%'"
        ),
        1
    );

    // Cut after a ClientHello: the unanswered one is stored as such, in a Config of its
    // own that says so; the summary counts it apart from the failures.
    let after_client_hello = dir.join("after-client-hello.pcap");
    cut(full, asked_frame, &after_client_hello);
    let db = dir.join("after-client-hello.db");
    let printed = tlslab_succeeds(&[
        "pcap",
        after_client_hello.to_str().unwrap(),
        "--out",
        db.to_str().unwrap(),
    ]);
    assert!(
        printed.contains("9 TLS handshakes stored (0 failed, 1 incomplete"),
        "{printed}"
    );
    assert!(
        printed.contains("incomplete (the capture shows only their start"),
        "{printed}"
    );
    assert!(printed.contains("0 errors (and 1 incomplete"), "{printed}");
    assert_eq!(by_client(&db)[&asked_client].0, "incomplete");
    assert_eq!(
        count_samples(
            &db,
            "s.outcome = 'incomplete' AND c.label LIKE 'unanswered%' \
             AND s.client_hello_sent IS NOT NULL AND s.server_hello_received IS NULL \
             AND s.version IS NULL AND s.offered_versions IS NOT NULL \
             AND s.error_detail LIKE 'the capture shows no answer to the ClientHello%'"
        ),
        1
    );
    assert_eq!(count_samples(&db, "s.outcome = 'ok'"), 8);
}

/// A filter on the TLS record type, as tcpdump takes it: the first byte of the TCP payload
/// is 22, a handshake record.
const HANDSHAKE_RECORDS: &str = "tcp[((tcp[12:1] & 0xf0) >> 2):1] = 0x16";

#[test]
fn captures_filtered_to_handshake_records_give_every_connections_negotiation() {
    let dir = scratch("incomplete-filtered");
    if !runs("tshark", "tshark") {
        return;
    }
    let _capturing = capturing();
    let with_flags =
        format!("tcp[tcpflags] & (tcp-syn|tcp-fin|tcp-rst) != 0 or {HANDSHAKE_RECORDS}");
    let Some((server, active, files)) = captured(
        &dir,
        "--tls 1.2,1.3 -n 5",
        &[
            ("records", HANDSHAKE_RECORDS),
            ("records-and-flags", &with_flags),
        ],
    ) else {
        return;
    };
    let negotiated = active_by_client(&active);
    assert_eq!(negotiated.len(), 10);
    for file in &files {
        let name = file.file_stem().unwrap().to_str().unwrap().to_string();
        let db = dir.join(format!("{name}.db"));
        let counts = pcap(file, &db);
        let stored = by_client(&db);
        // Every connection, with what its ServerHello negotiated, as tshark sees one
        // ServerHello in each.
        let tshark_counts = tshark_server_hellos(file, server.port);
        assert_eq!(
            tshark_counts.keys().collect::<Vec<_>>(),
            negotiated.keys().collect::<Vec<_>>(),
            "{name}"
        );
        assert!(tshark_counts.values().all(|&count| count == 1), "{name}");
        assert_eq!(
            stored.keys().collect::<Vec<_>>(),
            negotiated.keys().collect::<Vec<_>>(),
            "{name}: {counts}"
        );
        for (port, (outcome, version, suite, group)) in &stored {
            let (v, s, g) = &negotiated[port];
            assert_eq!((version, suite, group), (v, s, g), "{name}: {port}");
            // None failed: what the filter left out says nothing of how they went.
            assert_ne!(outcome, "error", "{name}: {port}");
        }
        assert_eq!(counts["failed"], 0, "{name}: {counts}");
        // TLS 1.3's encrypted flight and Finished are application-data records: the
        // handshake is incomplete there, with its server response timed.
        assert_eq!(
            count_samples(
                &db,
                "s.version = '1.3' AND s.outcome = 'incomplete' \
                 AND s.server_response IS NOT NULL AND s.handshake IS NULL"
            ),
            5,
            "{name}: {counts}"
        );
        assert_eq!(counts["handshakes"], 10, "{name}: {counts}");
        // Where the capture shows the connection went on past what it holds (a FIN after
        // the client's left-out Finished), it says so.
        if name == "records-and-flags" {
            assert_eq!(
                count_samples(
                    &db,
                    "s.version = '1.3' AND s.error_detail LIKE 'the capture lacks the rest%'"
                ),
                5
            );
        }
    }

    // compare leaves the incomplete ones out of its statistics unless told to take them in,
    // each in the phases it has: every TLS 1.3 handshake is incomplete here, so by default
    // its Config has no values to compare.
    let db = dir.join("records-and-flags.db");
    let db = db.to_str().unwrap();
    let arguments = ["compare", db, "--metric", "server_response", "--json"];
    assert_user_error(&tlslab(&arguments), 2, "has 0 values");
    let taken_in = tlslab_succeeds(&[&arguments[..], &["--include-incomplete"]].concat());
    let taken_in: serde_json::Value = serde_json::from_str(&taken_in).unwrap();
    let compared = &taken_in["comparisons"][0];
    assert_eq!(
        (&compared["n_baseline"], &compared["n_other"]),
        (&5.into(), &5.into()),
        "{taken_in}"
    );
}

/// A TCP listener that accepts and never says a word, on a port of its own; its
/// connections stay open while it lives.
fn silent_tcp() -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepting = std::thread::spawn(move || {
        let mut held = Vec::new();
        // Until the test's client is done: a few connections at most.
        for stream in listener.incoming().take(4) {
            match stream {
                Ok(stream) => held.push(stream),
                Err(_) => break,
            }
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    (port, accepting)
}

#[test]
fn client_hellos_nothing_answers_are_stored_over_tcp_and_quic() {
    let dir = scratch("incomplete-unanswered");
    let _capturing = capturing();
    let (tcp_port, _accepting) = silent_tcp();
    // A UDP socket that takes the client's Initials and answers none.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let Some(capture) = tcpdump_in(
        None,
        "lo",
        &dir,
        "unanswered",
        &format!("tcp port {tcp_port} or udp port {udp_port}"),
    ) else {
        return;
    };
    let mut clients = Vec::new();
    for (port, transport) in [(tcp_port, "tcp"), (udp_port, "quic")] {
        let db = dir.join(format!("{transport}-client.db"));
        let client = command([
            "run",
            "--target",
            &format!("127.0.0.1:{port}"),
            "--insecure",
            "--transport",
            transport,
            "-n",
            "1",
            "--warmup",
            "0",
            "--timeout",
            "1m",
            "--out",
            db.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        clients.push(client);
    }
    // The capture ends while both clients still wait for an answer.
    std::thread::sleep(Duration::from_secs(3));
    let file = capture.stop();
    for mut client in clients {
        let _ = client.kill();
        let _ = client.wait();
    }
    let db = dir.join("unanswered.db");
    let counts = pcap(&file, &db);
    assert_eq!(counts["failed"], 0, "{counts}");
    for transport in ["tcp", "quic"] {
        let condition = format!(
            "c.transport = '{transport}' AND s.outcome = 'incomplete' \
             AND c.label LIKE 'unanswered%' AND s.client_hello_sent IS NOT NULL \
             AND s.server_hello_received IS NULL AND s.offered_versions LIKE '%1.3%'"
        );
        assert!(count_samples(&db, &condition) >= 1, "{transport}: {counts}");
    }
    // Nothing else: every handshake the capture shows is one of these.
    assert_eq!(
        count_samples(
            &db,
            "s.outcome = 'incomplete' AND c.label LIKE 'unanswered%'"
        ),
        count_samples(&db, "1 = 1")
    );
    drop(udp);
}
