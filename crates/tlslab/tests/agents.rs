//! End-to-end: distributed runs (issue 33). A coordinator (`tlslab run --agents N`) stores a
//! plan in a throw-away PostgreSQL cluster; agent processes (`tlslab agent`) claim its trials
//! against one lab server; the merged run holds exactly the planned attempts, each under the
//! agent that made it, and the coordinator's summary lists every agent. An agent killed
//! mid-run loses nothing: its samples stay and its unfinished trial is taken over.
//!
//! Needs PostgreSQL; the eight-namespace test needs root too. Without them it prints why and
//! skips.

mod support;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::namespace::VethNamespace;
use support::*;

/// The agents' subnet: `10.214.N.0/24` for agent N, the host at `.1`.
const SUBNET: &str = "10.214";

/// `tlslab run --agents N --detach` for `target`: the run's number, printed alone.
fn detached_run(url: &str, target: &str, agents: u32, plan: &[&str]) -> String {
    let agents = agents.to_string();
    let mut args = vec!["run", "--target", target, "--insecure", "--store", url];
    args.extend(["--agents", &agents, "--detach"]);
    args.extend(plan);
    let printed = tlslab_succeeds(&args);
    let run = printed.trim().to_string();
    assert!(
        run.parse::<i64>().is_ok(),
        "the run's number alone: {printed:?}"
    );
    run
}

/// An agent process of run `run`, as `command` starts it.
fn spawn_agent(mut command: Command, url: &str, run: &str, shard: &str) -> Child {
    command
        .args(["--store", url, "--run", run, "--shard", shard])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn agent_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tlslab"));
    command.arg("agent").env("TLSLAB_PKI_DIR", pki_dir());
    command
}

/// Waits until run `run` has at least `samples` samples stored; fails after a minute.
fn wait_for_stored(url: &str, run: &str, samples: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stored: i64 = psql(
            url,
            &format!("SELECT count(*) FROM samples WHERE run_id = {run}"),
        )[0]
        .parse()
        .unwrap();
        if stored >= samples {
            return;
        }
        assert!(Instant::now() < deadline, "only {stored} samples stored");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The number of the run a waiting coordinator stored, once one matching `condition` is
/// there (until the coordinator made the schema, the query fails); fails after a minute.
fn stored_run(url: &str, condition: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let runs = Command::new("psql")
            .args(["--no-psqlrc", "-At", "--dbname", url, "-c"])
            .arg(format!("SELECT id FROM runs WHERE {condition}"))
            .output()
            .unwrap();
        if let Some(run) = stdout(&runs).lines().next() {
            return run.to_string();
        }
        assert!(Instant::now() < deadline, "the coordinator stored no run");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A throw-away PostgreSQL cluster and a lab server: what most tests here start with.
struct Lab {
    _cluster: Cluster,
    url: String,
    _server: LabServer,
    target: String,
}

impl Lab {
    fn start() -> Option<Lab> {
        let cluster = Cluster::start()?;
        let server = LabServer::start();
        Some(Lab {
            url: cluster.url(),
            target: format!("127.0.0.1:{}", server.port),
            _cluster: cluster,
            _server: server,
        })
    }

    /// `tlslab run --target LAB --insecure --store URL ARGS…` (ARGS with `--agents N`): a
    /// coordinator that waits for its agents.
    fn waiting_coordinator(&self, args: &[&str]) -> Child {
        let mut line = vec![
            "run",
            "--target",
            &self.target,
            "--insecure",
            "--store",
            &self.url,
        ];
        line.extend(args);
        command(line)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

fn finished(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

#[test]
fn agents_share_a_plan_and_the_coordinator_prints_the_merged_run_with_each_agent() {
    let Some(lab) = Lab::start() else {
        return;
    };
    let (url, target) = (lab.url.clone(), lab.target.clone());
    // The coordinator waits for its three agents, then summarizes.
    let coordinator = lab.waiting_coordinator(&[
        "--agents", "3", "--tls", "1.2,1.3", "-n", "60", "--warmup", "2", "--block", "10",
    ]);
    let run = stored_run(&url, "agents = 3");
    let agents: Vec<Child> = (0..3)
        .map(|index| spawn_agent(agent_command(), &url, &run, &format!("{index}/3")))
        .collect();
    for agent in agents {
        let output = finished(agent);
        let said = assert_success(&output);
        assert!(said.contains(&format!("(run {run})")), "{said}");
    }
    let output = finished(coordinator);
    let printed = assert_success(&output);
    // Two Configs, each 60 measured and 2 warm-up attempts: exactly that many stored,
    // each under one of the three agents, and the run's end says so.
    let stored = psql(
        &url,
        &format!(
            "SELECT count(*), count(agent_id), count(DISTINCT agent_id) <= 3 FROM samples WHERE run_id = {run}"
        ),
    );
    assert_eq!(stored, ["124|124|t"]);
    assert_eq!(
        psql(
            &url,
            &format!("SELECT attempted, complete, writers FROM runs WHERE id = {run}")
        ),
        ["124|1|4"]
    );
    // Every trial ran once, by one agent.
    assert_eq!(
        psql(
            &url,
            &format!("SELECT count(*), count(agent_id) FROM trials WHERE run_id = {run}")
        ),
        ["14|14"]
    );
    // The summary is the merged run's, and lists the three agents with their shards.
    assert!(printed.contains("tls1.2"), "{printed}");
    assert!(printed.contains("tls1.3"), "{printed}");
    for shard in ["0/3", "1/3", "2/3"] {
        assert!(
            printed.lines().any(|line| line.contains(shard)),
            "{shard} in:\n{printed}"
        );
    }
    // Read again later, as any run of the database.
    let compared = tlslab_succeeds(&["compare", &url, "--run", &run, "--json"]);
    assert!(compared.contains("tls1.3"), "{compared}");
    // Copied into a file, it keeps its agents: the report of the copy lists them.
    let dir = scratch("agents-copy");
    let copy = dir.join("copy.db");
    tlslab_succeeds(&["store", "copy", &url, copy.to_str().unwrap(), "--run", &run]);
    let written = dir.join("copy.md");
    tlslab_succeeds(&[
        "report",
        copy.to_str().unwrap(),
        "--output",
        written.to_str().unwrap(),
    ]);
    let report = std::fs::read_to_string(&written).unwrap();
    let section = report
        .split_once("## Agents")
        .unwrap_or_else(|| panic!("no agents in:\n{report}"))
        .1;
    for shard in ["0/3", "1/3", "2/3"] {
        assert!(
            section.contains(&format!("| {shard} |")),
            "{shard} in:\n{section}"
        );
    }
    // A run with no work left, a run that is not there, another tlslab: refused, exit 2.
    let late = agent_command()
        .args(["--store", &url, "--run", &run])
        .output()
        .unwrap();
    assert_user_error(&late, 2, "trials are all done");
    let unknown = agent_command()
        .args(["--store", &url, "--run", "999"])
        .output()
        .unwrap();
    assert_user_error(&unknown, 2, "no run of that number");
    let other = detached_run(&url, &target, 1, &["-n", "10"]);
    psql(
        &url,
        &format!("UPDATE runs SET tool_version = '0.0.1' WHERE id = {other}"),
    );
    let mismatched = agent_command()
        .args(["--store", &url, "--run", &other])
        .output()
        .unwrap();
    assert_user_error(&mismatched, 2, "planned by tlslab 0.0.1");
    // What a distributed run cannot be given.
    let no_target = tlslab(&["run", "--store", &url, "--agents", "2", "-n", "10"]);
    assert_user_error(&no_target, 2, "--agents needs --target");
    let file = scratch("agents").join("one.db");
    let to_file = tlslab(&[
        "run",
        "--target",
        &target,
        "--out",
        file.to_str().unwrap(),
        "--agents",
        "2",
    ]);
    assert_user_error(&to_file, 2, "PostgreSQL");
}

#[test]
fn eight_agents_in_their_own_namespaces_merge_exactly_and_one_killed_loses_nothing() {
    if let Some(reason) = emulation_unavailable() {
        println!("skipped: {reason}");
        return;
    }
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // Agents in other network namespaces reach the database by its unix socket.
    let url = cluster.socket_url();
    let namespaces: Vec<VethNamespace> = (1..=8)
        .map(|number| VethNamespace::create("ag", SUBNET, number))
        .collect();
    // One lab server on the host, on the host's address on the first pair: every namespace
    // routes to it through its own veth, so that one target serves all eight.
    for namespace in &namespaces {
        let status = Command::new("ip")
            .args(["-n", &namespace.namespace, "route", "add", "default", "via"])
            .arg(&namespace.host)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let server = LabServer::listening_on("0.0.0.0");
    let target = format!("{}:{}", namespaces[0].host, server.port);
    // 2 Configs × 2,000 handshakes in blocks of 100: 40 trials, long enough to kill one
    // agent in the middle of one.
    let run = detached_run(
        &url,
        &target,
        8,
        &[
            "--tls", "1.2,1.3", "-n", "2000", "--block", "100", "--warmup", "0",
        ],
    );
    let agents: Vec<Child> = namespaces
        .iter()
        .enumerate()
        .map(|(index, namespace)| {
            let mut command = tlslab_in(&namespace.namespace, &["agent"]);
            command.env("TLSLAB_PKI_DIR", pki_dir());
            spawn_agent(command, &url, &run, &format!("{index}/8"))
        })
        .collect();
    // Once the run is measuring, agent 3 (shard 2/8) dies without a word.
    wait_for_stored(&url, &run, 500);
    let mut agents = agents;
    let mut killed = agents.remove(2);
    killed.kill().unwrap();
    let _ = killed.wait();
    for agent in agents {
        let output = finished(agent);
        assert_success(&output);
    }
    // Nothing lost: the planned attempts exactly, stored = attempted, every trial once.
    assert_eq!(
        psql(
            &url,
            &format!("SELECT count(*), count(DISTINCT trial_id) FROM samples WHERE run_id = {run}")
        ),
        ["4000|40"]
    );
    assert_eq!(
        psql(
            &url,
            &format!("SELECT attempted, errors, complete FROM runs WHERE id = {run}")
        ),
        ["4000|0|1"]
    );
    // Each agent measured from its own address; the killed one is marked lost, its samples
    // kept under it.
    let rows = psql(
        &url,
        &format!("SELECT shard, address, complete, coalesce(reason, '') FROM agents WHERE run_id = {run} ORDER BY shard"),
    );
    assert_eq!(rows.len(), 8, "{rows:?}");
    for (index, row) in rows.iter().enumerate() {
        let fields: Vec<&str> = row.split('|').collect();
        assert_eq!(fields[0], format!("{index}/8"));
        assert_eq!(fields[1], format!("{SUBNET}.{}.2", index + 1), "{row}");
        if index == 2 {
            assert_eq!(fields[2], "0", "{row}");
            assert!(fields[3].starts_with("lost"), "{row}");
        } else {
            assert_eq!(fields[2], "1", "{row}");
        }
    }
    // The coordinator's view, read afterwards: the report of the merged run.
    let written = scratch("agents-eight").join("report.md");
    tlslab_succeeds(&[
        "report",
        &url,
        "--run",
        &run,
        "--output",
        written.to_str().unwrap(),
    ]);
    let report = std::fs::read_to_string(&written).unwrap();
    assert!(report.contains("tls1.3"), "{report}");
    // Each agent in the report, the killed one said to be lost.
    let section = report.split_once("## Agents").unwrap().1;
    let lines: Vec<&str> = section
        .lines()
        .filter(|line| line.contains("/8 |"))
        .collect();
    assert_eq!(lines.len(), 8, "{section}");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("| 2/8 |") && line.contains("lost")),
        "{section}"
    );
}

#[test]
fn a_gang_runs_every_trial_together_each_agent_its_share_of_the_clients() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let port = closed_port();
    let target = format!("127.0.0.1:{port}");
    // Ten clients over three agents: 4, 3 and 3, each client 5 attempts of each trial of 50.
    let run = detached_run(
        &url,
        &target,
        3,
        &[
            "--gang", "--tls", "1.3", "-c", "10", "-n", "100", "--block", "50", "--warmup", "0",
        ],
    );
    // The lab server as a host of its own would run it: reporting its CPU into the run.
    let mut server = command(["serve", "--listen", &target, "--store", &url, "--run", &run])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the lab server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let agents: Vec<Child> = (0..3)
        .map(|index| spawn_agent(agent_command(), &url, &run, &format!("{index}/3")))
        .collect();
    for agent in agents {
        assert_success(&finished(agent));
    }
    let shares = psql(
        &url,
        &format!("SELECT count(*) FROM samples WHERE run_id = {run} GROUP BY agent_id ORDER BY 1"),
    );
    assert_eq!(shares, ["30", "30", "40"]);
    // Each agent's concurrent clients are its share: 4, 3 and 3 of them.
    let clients = psql(
        &url,
        &format!(
            "SELECT count(DISTINCT agent) FROM samples WHERE run_id = {run} GROUP BY agent_id ORDER BY 1"
        ),
    );
    assert_eq!(clients, ["3", "3", "4"]);
    // Each trial's row adds the agents' parts up: the plan's trial, whole.
    assert_eq!(
        psql(
            &url,
            &format!(
                "SELECT attempted, concurrency, agent_id IS NULL FROM trials WHERE run_id = {run} ORDER BY id"
            )
        ),
        ["50|10|t", "50|10|t"]
    );
    assert_eq!(
        psql(
            &url,
            &format!("SELECT attempted, complete FROM runs WHERE id = {run}")
        ),
        ["100|1"]
    );
    // The server priced each trial from its own readings, within a few seconds of its end.
    let deadline = Instant::now() + Duration::from_secs(10);
    let priced = loop {
        let priced = psql(
            &url,
            &format!(
                "SELECT count(*) FROM trials WHERE run_id = {run} AND server_user_ns + server_system_ns > 0"
            ),
        );
        if priced == ["2"] || Instant::now() > deadline {
            break priced;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(priced, ["2"]);
    // Its work done, a fourth agent is refused.
    let fourth = agent_command()
        .args(["--store", &url, "--run", &run])
        .output()
        .unwrap();
    assert_user_error(&fourth, 2, "trials are all done");
}

#[test]
fn the_studys_design_runs_on_agent_processes_with_each_agents_figures() {
    let Some(lab) = Lab::start() else {
        return;
    };
    let url = lab.url.clone();
    // The example as its comment gives it, fewer attempts: 18 Configs, three agents.
    let coordinator = lab.waiting_coordinator(&[
        &example("tls12-vs-tls13-agents.toml"),
        "--agents",
        "3",
        "--gang",
        "-n",
        "50",
        "--warmup",
        "0",
    ]);
    let run = stored_run(&url, "agents = 3");
    let agents: Vec<Child> = (0..3)
        .map(|index| spawn_agent(agent_command(), &url, &run, &format!("{index}/3")))
        .collect();
    for agent in agents {
        assert_success(&finished(agent));
    }
    let output = finished(coordinator);
    let printed = assert_success(&output);
    // Every Config of the design, its 50 attempts whole.
    assert_eq!(
        psql(
            &url,
            &format!(
                "SELECT count(DISTINCT config_id), count(*) FROM samples WHERE run_id = {run}"
            )
        ),
        ["18|900"]
    );
    // The summary answers the study's question, and gives each agent's figures.
    assert!(printed.contains("tls 1.3 vs 1.2"), "{printed}");
    let table: Vec<&str> = printed
        .lines()
        .skip_while(|line| !line.starts_with("agent  shard"))
        .collect();
    assert_eq!(table.len(), 4, "{printed}");
    // In a gang every agent runs every trial of the plan.
    let trials = psql(
        &url,
        &format!("SELECT count(*) FROM claims WHERE run_id = {run}"),
    );
    for line in &table[1..] {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // agent, shard, host, (address), trials, samples, errors, rate, CPU, …
        assert_eq!(fields[4], trials[0], "{line}");
        assert!(fields[5].parse::<u64>().unwrap() > 0, "{line}");
        assert_eq!(fields[6], "0", "{line}");
        assert!(line.contains(" µs"), "{line}");
        assert!(line.contains(" ms"), "{line}");
    }
}

#[test]
fn an_interrupted_coordinator_ends_the_run_incomplete_and_says_why() {
    let Some(lab) = Lab::start() else {
        return;
    };
    let url = lab.url.clone();
    let coordinator = lab.waiting_coordinator(&["--agents", "2", "-n", "20"]);
    // Once it waits for its agents (none come), Ctrl-C.
    stored_run(&url, "agents = 2 AND EXISTS (SELECT 1 FROM claims)");
    let _ = Command::new("kill")
        .args(["-INT", &coordinator.id().to_string()])
        .status();
    let output = finished(coordinator);
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(said.contains("the coordinator was interrupted"), "{said}");
    assert_eq!(
        psql(
            &url,
            "SELECT complete, reason LIKE 'the coordinator was interrupted%' FROM runs"
        ),
        ["0|t"]
    );
}
