//! End-to-end: several capture points, one database. Three `tlslab capture` agents, each in
//! a network namespace of its own watching its own veth, write one PostgreSQL run while
//! active runs go through them; the run holds exactly the handshakes each active run made,
//! each labelled with the capture point that saw it, and the readers take them together or
//! per capture point.
//!
//! Needs root (network namespaces, capturing) and PostgreSQL; without either it prints why
//! and skips.

mod support;

use std::io::{BufRead, BufReader, Lines};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};

use support::namespace::VethNamespace as Point;
use support::*;

/// The capture points' subnet: `10.213.N.0/24` for point N, the host at `.1`.
const SUBNET: &str = "10.213";

/// A capture agent, stopped with SIGINT (as Ctrl-C) and waited for.
struct Agent {
    child: Child,
    stderr: Lines<BufReader<ChildStderr>>,
}

impl Agent {
    fn start(point: &Point, url: &str, name: &str, port: u16, join: Option<&str>) -> Agent {
        let filter = format!("tcp port {port}");
        let mut args = vec!["capture", "-i", &point.inside, "--filter", &filter];
        args.extend(["--store", url, "--capture-point", name]);
        // Each agent sits at the client (in its namespace): said, since a veth's round trip
        // of microseconds is too short to read the vantage from.
        args.extend(["--vantage", "client"]);
        if let Some(run) = join {
            args.extend(["--run", run]);
        }
        let mut child = point
            .tlslab(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        Agent { child, stderr }
    }

    /// Its first line, once its socket is open: `capturing TLS handshakes on … (run N) …`.
    fn started(&mut self) -> String {
        self.stderr.next().unwrap().unwrap()
    }

    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().unwrap();
        let rest: Vec<String> = self.stderr.map_while(Result::ok).collect();
        assert!(status.success(), "Ctrl-C is how a capture ends: {rest:?}");
        rest.join("\n")
    }
}

/// The run's number in `capturing … into postgres://… (run N) …`.
fn run_number(line: &str) -> String {
    let (_, after) = line
        .split_once("(run ")
        .unwrap_or_else(|| panic!("no run number in {line:?}"));
    after.split(')').next().unwrap().to_string()
}

/// What an active run's store holds: each successful handshake's version, suite and group,
/// counted.
fn negotiated_in(db: &Path) -> Vec<String> {
    rows::<(String, i64)>(
        db,
        "SELECT version || '|' || suite || '|' || \"group\", count(*) FROM samples \
         WHERE outcome = 'ok' AND warmup = 0 GROUP BY 1 ORDER BY 1",
        [],
    )
    .into_iter()
    .map(|(key, count)| format!("{key}|{count}"))
    .collect()
}

#[test]
fn three_capture_points_write_one_run_labelled_by_where_they_saw_each_handshake() {
    if let Some(reason) = emulation_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // Agents in other network namespaces reach the database by its unix socket.
    let url = cluster.socket_url();
    let dir = scratch("capture-points");
    let points: Vec<Point> = (1..=3)
        .map(|number| Point::create("cp", SUBNET, number))
        .collect();
    // One lab server on the host, answering on each point's veth.
    let server = LabServer::listening_on("0.0.0.0");
    let port = server.port;
    // The first capture point makes the run; the others join it by its number.
    let mut first = Agent::start(&points[0], &url, "edge-1", port, None);
    let line = first.started();
    assert!(line.contains("capturing TLS handshakes on"), "{line}");
    assert!(!line.contains(cluster.password()), "{line}");
    let run = run_number(&line);
    let mut agents = vec![first];
    for (index, point) in points.iter().enumerate().skip(1) {
        let name = format!("edge-{}", index + 1);
        let mut agent = Agent::start(point, &url, &name, port, Some(&run));
        let line = agent.started();
        assert_eq!(run_number(&line), run, "{line}");
        agents.push(agent);
    }
    // Through each point, an active run of its own size: 5, 10 and 15 handshakes per
    // Config, so that a handshake counted at the wrong point shows.
    let mut actives = Vec::new();
    for (index, point) in points.iter().enumerate() {
        let db = dir.join(format!("active-{}.db", index + 1));
        let target = format!("{}:{port}", point.host);
        let handshakes = (5 * (index + 1)).to_string();
        let output = point
            .tlslab(&["run", "--target", &target, "--insecure", "--tls", "1.2,1.3"])
            .args([
                "-n",
                &handshakes,
                "--warmup",
                "0",
                "--out",
                db.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_success(&output);
        actives.push(db);
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    for agent in agents {
        agent.stop();
    }
    drop(server);
    // The run holds exactly each active run's handshakes, under its capture point, with
    // what each negotiated.
    for (index, active) in actives.iter().enumerate() {
        let point = format!("edge-{}", index + 1);
        let stored = psql(
            &url,
            &format!(
                "SELECT s.version || '|' || s.suite || '|' || s.\"group\", count(*) \
                 FROM samples s JOIN configs c ON c.run_id = s.run_id AND c.id = s.config_id \
                 WHERE s.run_id = {run} AND s.outcome = 'ok' AND c.capture_point = '{point}' \
                 GROUP BY 1 ORDER BY 1"
            ),
        );
        assert_eq!(stored, negotiated_in(active), "{point}");
        assert_eq!(
            count_samples(active, "s.outcome = 'ok'"),
            10 * (index as i64 + 1)
        );
        // Every Config of the point is one it saw: the server on its own veth.
        let addresses = psql(
            &url,
            &format!(
                "SELECT DISTINCT split_part(address, ':', 1) FROM configs \
                 WHERE run_id = {run} AND capture_point = '{point}'"
            ),
        );
        assert_eq!(addresses, [points[index].host.clone()], "{point}");
    }
    let failures = psql(
        &url,
        &format!("SELECT count(*) FROM samples WHERE run_id = {run} AND outcome <> 'ok'"),
    );
    assert_eq!(failures, ["0"]);
    // The run's end is every capture point's: three writers, each point's handshakes
    // counted once.
    let end = psql(
        &url,
        &format!("SELECT writers, attempted, complete FROM runs WHERE id = {run}"),
    );
    assert_eq!(end, ["3|60|1"]);
    // Read together: one report of the run names every capture point.
    let written = dir.join("report.md");
    let written_path = written.to_str().unwrap();
    tlslab_succeeds(&["report", &url, "--run", &run, "--output", written_path]);
    let report = std::fs::read_to_string(&written).unwrap();
    for point in ["edge-1", "edge-2", "edge-3"] {
        assert!(
            report.contains(&format!("@{point}")),
            "{point} in:\n{report}"
        );
    }
    // Per capture point: compared along where they were seen.
    let compared = tlslab(&[
        "compare",
        &url,
        "--run",
        &run,
        "--by",
        "capture_point",
        "--json",
    ]);
    let printed = assert_success(&compared);
    for point in ["edge-1", "edge-2", "edge-3"] {
        assert!(
            printed.contains(point),
            "{point} in:\n{printed}\n{}",
            stderr(&compared)
        );
    }
}
