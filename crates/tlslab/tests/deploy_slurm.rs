//! The Slurm job-array script (`deploy/slurm/tlslab-agents.sbatch`) on a real single-node
//! Slurm the test starts ([`support::slurm::Slurm`]): every array task becomes one agent with
//! a shard of its own, and (with the agent command) 4 agents measure one run together.
//!
//! Needs root and Debian's `slurm-wlm` and `munge`; without them the Slurm tests print why and
//! pass, unless `TLSLAB_REQUIRE_SLURM` is set (CI).

mod support;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::slurm::Slurm;
use support::*;

/// The script, from this crate's directory.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/slurm/tlslab-agents.sbatch")
        .canonicalize()
        .expect("deploy/slurm/tlslab-agents.sbatch exists")
}

/// A stand-in for tlslab in `directory` that records, for each call, its arguments (one a
/// line) and the TLSLAB_ variables it was given, in `calls/<array task>.txt`.
fn stand_in(directory: &Path) -> PathBuf {
    let calls = directory.join("calls");
    std::fs::create_dir_all(&calls).unwrap();
    let program = directory.join("tlslab-stand-in");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\n\
             record='{calls}'/\"${{SLURM_ARRAY_TASK_ID:-direct}}.txt\"\n\
             printf '%s\\n' \"$@\" > \"$record\"\n\
             printf 'store=%s\\n' \"${{TLSLAB_STORE:-}}\" >> \"$record\"\n",
            calls = calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    program
}

/// What the stand-in recorded, by array task id.
fn calls(directory: &Path) -> Vec<(String, Vec<String>)> {
    let mut calls: Vec<(String, Vec<String>)> = std::fs::read_dir(directory.join("calls"))
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let task = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            (task, text.lines().map(String::from).collect())
        })
        .collect();
    calls.sort();
    calls
}

/// The value after `option`.
fn option_value<'a>(arguments: &'a [String], option: &str) -> &'a str {
    let at = arguments
        .iter()
        .position(|argument| argument == option)
        .unwrap_or_else(|| panic!("no {option} in {arguments:?}"));
    &arguments[at + 1]
}

#[test]
fn a_job_array_of_four_tasks_starts_four_agents_with_distinct_shards() {
    let Some(slurm) = Slurm::start() else { return };
    let store = "postgres://lab:password-not-on-a-command-line@db.example/tlslab";
    // Counted from 0 as the script's own default, then from 1: the shards are the tasks'
    // places in the array either way.
    for (array, first) in [("0-3", 0), ("1-4", 1)] {
        let dir = scratch(&format!("slurm-array-{first}"));
        let program = stand_in(&dir);
        let job = slurm.run_array(
            &script(),
            array,
            &[
                ("TLSLAB_PROGRAM", program.to_str().unwrap()),
                ("TLSLAB_STORE", store),
                ("TLSLAB_RUN", "42"),
            ],
            Duration::from_secs(120),
        );
        let tasks: Vec<u32> = job.tasks.iter().map(|(task, _, _)| *task).collect();
        assert_eq!(tasks, (first..first + 4).collect::<Vec<_>>(), "{array}");
        for (task, state, exit) in &job.tasks {
            assert_eq!(
                (state.as_str(), exit.as_str()),
                ("COMPLETED", "0:0"),
                "task {task}: {}\n{}",
                slurm.output_of(&job.id, *task),
                slurm.diagnostics()
            );
        }

        let calls = calls(&dir);
        assert_eq!(calls.len(), 4, "{calls:?}");
        let mut shards = BTreeSet::new();
        for (task, arguments) in &calls {
            assert_eq!(arguments[0], "agent", "task {task}: {arguments:?}");
            assert_eq!(option_value(arguments, "--run"), "42");
            shards.insert(option_value(arguments, "--shard").to_string());
            // The URL reaches the agent in its environment, not on its command line.
            assert!(
                arguments.contains(&format!("store={store}")),
                "{arguments:?}"
            );
            assert!(
                !arguments.iter().any(|a| a.starts_with("postgres://")),
                "{arguments:?}"
            );
        }
        let expected: BTreeSet<String> = (0..4).map(|shard| format!("{shard}/4")).collect();
        assert_eq!(shards, expected, "--array={array}");
    }
}

/// The script run outside Slurm with `variables` only: its exit code and stderr.
fn script_alone(variables: &[(&str, &str)]) -> (Option<i32>, String) {
    let output = Command::new("bash")
        .arg(script())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(variables.iter().copied())
        .output()
        .expect("bash runs");
    (output.status.code(), stderr(&output))
}

#[test]
fn the_script_says_what_is_missing_before_starting_an_agent() {
    let dir = scratch("slurm-missing");
    let program = stand_in(&dir);
    let program = program.to_str().unwrap();
    let task = [
        ("TLSLAB_PROGRAM", program),
        ("SLURM_ARRAY_TASK_ID", "0"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ];
    let store = ("TLSLAB_STORE", "postgres://lab@db/tlslab");
    let run = ("TLSLAB_RUN", "12");
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![("TLSLAB_PROGRAM", program), store, run],
            "not a Slurm job-array task",
        ),
        ([&task[..], &[run][..]].concat(), "TLSLAB_STORE is not set"),
        ([&task[..], &[store][..]].concat(), "TLSLAB_RUN is not set"),
        (
            [&task[..], &[store, ("TLSLAB_RUN", "latest")][..]].concat(),
            "not a run number",
        ),
        (
            vec![
                ("TLSLAB_PROGRAM", program),
                ("SLURM_ARRAY_TASK_ID", "6"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
                store,
                run,
            ],
            "is not one of 4 tasks",
        ),
    ];
    for (variables, mentions) in cases {
        let (code, text) = script_alone(&variables);
        assert_eq!(code, Some(2), "{variables:?}: {text}");
        assert!(text.starts_with("error: "), "{text}");
        assert!(text.contains("\nhint: "), "{text}");
        assert!(text.contains(mentions), "'{mentions}' not in: {text}");
    }
    assert!(
        calls(&dir).is_empty(),
        "an agent started: {:?}",
        calls(&dir)
    );

    // With everything given, the agent starts, with the shard of its task.
    let (code, text) = script_alone(&[&task[..], &[store, run][..]].concat());
    assert_eq!(code, Some(0), "{text}");
    let calls = calls(&dir);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(option_value(&calls[0].1, "--shard"), "0/4");
}

/// The number of the run `tlslab run … --detach` printed: its one line of stdout.
fn run_number(printed: &str) -> String {
    let line = printed.trim();
    assert!(
        !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()),
        "--detach printed more than a run number: {printed:?}"
    );
    line.to_string()
}

#[test]
fn four_slurm_agents_measure_one_run_to_the_planned_count() {
    let Some(slurm) = Slurm::start() else { return };
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let lab = LabServer::start();
    let target = format!("127.0.0.1:{}", lab.port);
    let planned = 200;

    let coordinator = tlslab(&[
        "run",
        "--target",
        &target,
        "--insecure",
        "--tls",
        "1.3",
        "--agents",
        "4",
        "--store",
        &url,
        "--detach",
        // A gang of four, a client each: every agent makes a quarter of every trial.
        "--gang",
        "-c",
        "4",
        "-n",
        &planned.to_string(),
        "--warmup",
        "0",
    ]);
    let run = run_number(&assert_success(&coordinator));

    let pki = pki_dir();
    let job = slurm.run_array(
        &script(),
        "0-3",
        &[
            ("TLSLAB_PROGRAM", env!("CARGO_BIN_EXE_tlslab")),
            ("TLSLAB_STORE", &url),
            ("TLSLAB_RUN", &run),
            ("TLSLAB_PKI_DIR", pki.to_str().unwrap()),
            ("NO_COLOR", "1"),
        ],
        Duration::from_secs(600),
    );
    assert_eq!(job.tasks.len(), 4, "{}", slurm.diagnostics());
    for (task, state, exit) in &job.tasks {
        assert_eq!(
            (state.as_str(), exit.as_str()),
            ("COMPLETED", "0:0"),
            "agent {task}: {}",
            slurm.output_of(&job.id, *task)
        );
    }

    // The merged run: every planned handshake stored once, a quarter by each agent.
    let exported = tlslab_succeeds(&[
        "export", "--store", &url, "--run", &run, "--format", "jsonl",
    ]);
    assert_eq!(
        exported.lines().count(),
        planned,
        "stored = attempted = planned"
    );
    let report = scratch("slurm-agents").join("report.md");
    tlslab_succeeds(&[
        "report",
        "--store",
        &url,
        "--run",
        &run,
        "--format",
        "md",
        "--output",
        report.to_str().unwrap(),
    ]);
    let report = std::fs::read_to_string(&report).unwrap();
    let section = report
        .split_once("## Agents")
        .unwrap_or_else(|| panic!("no agents in:\n{report}"))
        .1;
    let shards: BTreeSet<&str> = section
        .lines()
        .filter_map(|line| line.split('|').nth(2).map(str::trim))
        .filter(|shard| shard.ends_with("/4"))
        .collect();
    assert_eq!(shards.len(), 4, "{section}");
    let quarter = format!("| {} |", planned / 4);
    assert_eq!(
        section
            .lines()
            .filter(|line| line.contains(&quarter))
            .count(),
        4,
        "each agent a quarter: {section}"
    );
}
