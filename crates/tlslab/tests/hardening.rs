//! End-to-end: what a user, a file or a server can do never panics, aborts or loses results.
//! One test (at least) per class of the hardening work: values out of range, writing to a
//! closed or full stdout, outputs that would destroy their input, a lab server that dies,
//! stopping a run against a silent server, killed runs, a full disk, sample files, exports
//! that a spreadsheet or a browser would run, a damaged store.

mod support;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// A small stored run to read back.
fn stored_run(dir: &Path) -> PathBuf {
    Run::new(dir, "stored")
        .args("--tls 1.2,1.3 -n 20 --warmup 0")
        .succeeds()
        .db
}

#[test]
fn values_out_of_range_are_usage_errors_not_panics() {
    for (arguments, mentions) in [
        // A bare number is more likely milliseconds than seconds: ask.
        (vec!["run", "--rtt", "30"], "add one"),
        (
            vec!["run", "--timeout", "99999999999999999999s"],
            "longer than a day",
        ),
        (vec!["run", "--jitter", "100000m"], "longer than a day"),
        (vec!["run", "--rtt", "2m"], "longer than the emulator"),
        (vec!["run", "-c", "4000000000"], "more agents"),
        (vec!["run", "-n", "18446744073709551615"], "more handshakes"),
        (vec!["run", "-n", "100000000000", "--block", "1"], "blocks"),
        (
            vec!["run", "--rate", "99999999999999999999gbit"],
            "faster than any link",
        ),
        (
            vec!["serve", "--body", "999999999999"],
            "above the lab server's limit",
        ),
    ] {
        let output = tlslab(&arguments);
        assert_user_error(&output, 2, mentions);
    }
}

#[test]
fn compare_options_out_of_range_are_usage_errors() {
    let dir = scratch("hardening-compare");
    let db = stored_run(&dir);
    let db = db.to_str().unwrap();
    let output = tlslab(&["compare", db, "--resamples", "18446744073709551615"]);
    assert_user_error(&output, 2, "--resamples");
}

/// Starts `tlslab arguments` with stdout piped, for a test that closes or fills it.
fn spawn(arguments: &[&str], stdout: Stdio) -> Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(arguments)
        .env("TLSLAB_PKI_DIR", pki_dir())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_closed_pipe_ends_quietly_and_a_full_disk_is_an_environment_error() {
    let dir = scratch("hardening-stdout");
    let db = stored_run(&dir);
    let db = db.to_str().unwrap();
    for arguments in [
        vec!["compare", db],
        vec!["export", db],
        vec!["export", db, "--format", "jsonl"],
    ] {
        // `tlslab … | head -0`: the reader is gone before the first byte.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let child = spawn(&arguments, Stdio::from(writer));
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{arguments:?}: {stderr}");
        assert!(stderr.is_empty(), "{arguments:?}: {stderr}");

        // `tlslab … > /dev/full`.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let output = spawn(&arguments, Stdio::from(full))
            .wait_with_output()
            .unwrap();
        assert_user_error(&output, 3, "No space left on device");
    }
}

#[test]
fn outputs_never_overwrite_their_input_or_another_store() {
    let dir = scratch("hardening-outputs");
    let db = stored_run(&dir);
    let samples = count(&db, "SELECT COUNT(*) FROM samples");
    let other = Run::new(&dir, "other")
        .args("-n 5 --warmup 0")
        .succeeds()
        .db;
    let link = dir.join("link.db");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    let (db_text, link_text, other_text) = (
        db.to_str().unwrap(),
        link.to_str().unwrap(),
        other.to_str().unwrap(),
    );
    for (arguments, mentions) in [
        (vec!["export", db_text, "-o", db_text], "would destroy"),
        (vec!["export", db_text, "-o", link_text], "would destroy"),
        (vec!["report", db_text, "-o", db_text], "would destroy"),
        (vec!["report", db_text, "-o", link_text], "would destroy"),
        (
            vec!["export", db_text, "-o", other_text],
            "never overwrites",
        ),
        (
            vec!["report", db_text, "-o", other_text],
            "never overwrites",
        ),
    ] {
        assert_user_error(&tlslab(&arguments), 2, mentions);
    }
    assert_eq!(count(&db, "SELECT COUNT(*) FROM samples"), samples);
    assert_eq!(count(&other, "SELECT COUNT(*) FROM samples"), 5);

    // `run --report` puts RESULTS.html beside RESULTS: not when RESULTS is itself .html.
    let html = dir.join("results.html");
    let output = tlslab(&[
        "run",
        "--quiet",
        "--out",
        html.to_str().unwrap(),
        "--report",
    ]);
    assert_user_error(&output, 2, "over the results file");
    assert!(!html.exists(), "refused before the run");

    // A report is written whole: the previous one stays until the new one is complete.
    let report = dir.join("stored.html");
    tlslab_succeeds(&["report", db_text, "-o", report.to_str().unwrap()]);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(".tlslab-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// The pids of `parent`'s children.
fn children_of(parent: u32) -> Vec<u32> {
    let output = std::process::Command::new("pgrep")
        .args(["-P", &parent.to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

#[test]
fn a_lab_server_that_dies_stops_the_run_with_its_status_and_keeps_the_samples() {
    for tolerance in ["0", "1"] {
        let dir = scratch(&format!("hardening-server-death-{tolerance}"));
        // Even a run told to tolerate every failure must not end quietly.
        let run = Run::new(&dir, "died").args(&format!(
            "-n 100000000 --warmup 0 --max-error-rate {tolerance}"
        ));
        let mut command = run.command();
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_samples(run.db(), 1);
        let servers = children_of(child.id());
        assert_eq!(servers.len(), 1, "one lab server child: {servers:?}");
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &servers[0].to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let started = Instant::now();
        let output = child.wait_with_output().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the run noticed the death within its time limit"
        );
        assert_user_error(&output, 3, "lab server");
        assert!(stderr(&output).contains("exited during the run"));
        let (complete, reason, attempted, stored): (bool, String, i64, i64) = row(
            run.db(),
            "SELECT complete, reason, attempted, (SELECT COUNT(*) FROM samples) FROM runs",
        );
        assert!(!complete);
        assert!(reason.contains("exited during the run"), "{reason}");
        assert!(stored > 0);
        assert_eq!(stored, attempted);
    }
}

/// A server that accepts connections and never says a word.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    port
}

#[test]
fn ctrl_c_against_a_silent_server_cancels_the_attempts_in_flight_at_once() {
    let dir = scratch("hardening-silent");
    let port = silent_server();
    let run = Run::new(&dir, "silent").args(&format!(
        "--target 127.0.0.1:{port} --timeout 60s -n 100 --warmup 0 -c 4"
    ));
    let mut command = run.command();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let the four agents connect and wait on the silent server.
    std::thread::sleep(Duration::from_millis(1500));
    let interrupted = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut stderr_text = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut stderr_text);
    }
    let status = child.wait().unwrap();
    // The attempts' time limit is 60 s; stopping must not wait it out.
    assert!(
        interrupted.elapsed() < Duration::from_secs(30),
        "{:?}",
        interrupted.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{stderr_text}");
    assert_eq!(
        count(
            run.db(),
            "SELECT COUNT(*) FROM samples WHERE error = 'cancelled'"
        ),
        4
    );
    assert_eq!(count(run.db(), "SELECT complete FROM runs"), 0);
}

#[test]
fn a_killed_run_is_recovered_when_opened_and_says_it_was_cut_off() {
    let dir = scratch("hardening-killed");
    let run = Run::new(&dir, "killed").args("--tls 1.2,1.3 -n 1000000 --block 50 --warmup 0");
    let mut command = run.command();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_samples(run.db(), 1);
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(dir.join("killed.db-wal").exists(), "killed in WAL mode");

    // The .db alone, copied before anything opened it, is a store (its schema is in the
    // file itself), if one that holds only what was checkpointed.
    let copy = dir.join("copy.db");
    std::fs::copy(run.db(), &copy).unwrap();
    // A run builds the readers' index at its end, in one sort: this one has none yet.
    let index = "SELECT COUNT(*) FROM sqlite_master WHERE name = 'samples_by_config'";
    assert_eq!(count(&copy, index), 0);
    tlslab_succeeds(&["export", copy.to_str().unwrap()]);

    // The first open folds the log into the file and records how the run ended.
    let db = run.db().to_str().unwrap();
    let output = tlslab(&["export", db]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("cut off"), "{}", stderr(&output));
    let exported = stdout(&output).lines().count() as i64 - 1;
    let (complete, reason, attempted, stored): (bool, String, i64, i64) = row(
        run.db(),
        "SELECT complete, reason, attempted, (SELECT COUNT(*) FROM samples) FROM runs",
    );
    assert!(!complete);
    assert!(reason.starts_with("cut off"), "{reason}");
    assert_eq!(attempted, stored);
    assert_eq!(exported, stored);
    assert!(stored > 0);
    assert!(!dir.join("killed.db-wal").exists());
    assert!(!dir.join("killed.db-reserve").exists());
    assert_eq!(count(run.db(), index), 1, "the recovery builds the index");
    // Every reader says so.
    let compared = tlslab(&["compare", db]);
    assert_eq!(compared.status.code(), Some(0), "{}", stderr(&compared));
    assert!(stderr(&compared).contains("did not finish"));
}

/// A small file system of its own (a tmpfs), unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(path: PathBuf, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(&path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(SmallDisk(path))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_run_says_so_and_keeps_what_it_committed() {
    let dir = scratch("hardening-full");
    // A file system small enough to fill: mounting one needs root.
    let Some(disk) = SmallDisk::mount(dir.join("disk"), "1600k") else {
        eprintln!("SKIPPED: cannot mount a small tmpfs (needs root)");
        return;
    };
    let db = disk.0.join("full.db");
    let output = tlslab(&[
        "run",
        "--quiet",
        "--out",
        db.to_str().unwrap(),
        "-n",
        "100000000",
        "--warmup",
        "0",
    ]);
    assert_user_error(&output, 3, "no space left");
    assert!(stderr(&output).contains("ENOSPC"), "{}", stderr(&output));
    // SQLite's own words are the cause, on a line of their own under the sink's message.
    assert!(
        stderr(&output)
            .lines()
            .any(|line| line.starts_with("caused by: ") && line.contains("disk is full")),
        "{}",
        stderr(&output)
    );
    let (complete, reason, stored): (bool, String, i64) = row(
        &db,
        "SELECT complete, reason, (SELECT COUNT(*) FROM samples) FROM runs",
    );
    assert!(!complete);
    assert!(reason.contains("no space left"), "{reason}");
    assert!(stored > 0);
    let exported = tlslab(&["export", db.to_str().unwrap()]);
    assert_eq!(exported.status.code(), Some(0), "{}", stderr(&exported));
    assert_eq!(stdout(&exported).lines().count() as i64 - 1, stored);
    drop(disk);
}

/// The `n_baseline` and `n_other` of `compare --json` on two sample files.
fn compared_sizes(baseline: &Path, other: &Path, column: &str) -> (u64, u64) {
    let output = tlslab_succeeds(&[
        "compare",
        baseline.to_str().unwrap(),
        other.to_str().unwrap(),
        "--column",
        column,
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&output).unwrap();
    let comparison = &json["comparisons"][0];
    (
        comparison["n_baseline"].as_u64().unwrap(),
        comparison["n_other"].as_u64().unwrap(),
    )
}

#[test]
fn sample_files_are_read_as_csv_and_exports_as_their_measured_samples() {
    let dir = scratch("hardening-csv");
    // Labels with commas and quotes must not shift the columns.
    let quoted = dir.join("quoted.csv");
    std::fs::write(
        &quoted,
        "label,handshake\n\"a, b\",1.0\n\"say \"\"hi\"\", then\",2.0\nplain,3.0\n",
    )
    .unwrap();
    let other = dir.join("other.csv");
    std::fs::write(&other, "label,handshake\nx,4.0\ny,5.0\nz,6.0\n").unwrap();
    assert_eq!(compared_sizes(&quoted, &other, "handshake"), (3, 3));

    // tlslab's own export: warm-up and failed rows are not measurements.
    let db = Run::new(&dir, "exported")
        .args("--tls 1.2,1.3 -n 30 --warmup 7")
        .succeeds()
        .db;
    let csv = dir.join("exported.csv");
    tlslab_succeeds(&["export", db.to_str().unwrap(), "-o", csv.to_str().unwrap()]);
    assert_eq!(count_lines(&csv), 1 + 2 * 37);
    assert_eq!(compared_sizes(&csv, &csv, "handshake"), (60, 60));
}

fn count_lines(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

#[test]
fn labels_cannot_run_in_a_spreadsheet_or_inject_markup_into_a_report() {
    let dir = scratch("hardening-injection");
    for store in stores(&dir, "labels") {
        Run::new(&dir, "labels")
            .store(&store)
            .args("--tls 1.2,1.3 -n 5 --warmup 0")
            .option("--label", "=cmd|' /C calc'!A0,<img src=x onerror=alert(1)>")
            .succeeds();
        let db = store.location.as_str();
        let csv = tlslab_succeeds(&["export", db]);
        assert!(csv.contains("\n'=cmd|' /C calc'!A0,"), "{csv}");
        assert!(!csv.contains("\n=cmd"), "{csv}");
        let markdown = dir.join(format!("labels-{}.md", store.kind));
        tlslab_succeeds(&["report", db, "-o", markdown.to_str().unwrap()]);
        let markdown = std::fs::read_to_string(markdown).unwrap();
        assert!(markdown.contains("&lt;img src=x onerror=alert(1)&gt;"));
        // Only code blocks (the command line, the experiment) hold the label as typed:
        // Markdown shows code as text.
        let mut in_code = false;
        for line in markdown.lines() {
            if line.starts_with("```") {
                in_code = !in_code;
            } else if line.contains("<img") {
                assert!(in_code, "outside a code block: {line}\n{markdown}");
            }
        }
        assert!(
            markdown
                .lines()
                .any(|line| line.starts_with("labels = ") && line.contains("<img")),
            "{markdown}"
        );
    }
}

#[test]
fn a_lab_server_reachable_from_other_machines_says_so() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("TLSLAB_PKI_DIR", pki_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = String::new();
    let mut buffer = [0u8; 1024];
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.contains("Ctrl-C stops") && Instant::now() < deadline {
        let read = stderr.read(&mut buffer).unwrap();
        if read == 0 {
            break;
        }
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.contains("warning: the lab server listens on 0.0.0.0"),
        "{seen}"
    );
}

#[test]
fn samples_whose_config_row_is_missing_are_still_exported() {
    let dir = scratch("hardening-orphans");
    let db = stored_run(&dir);
    let connection = rusqlite::Connection::open(&db).unwrap();
    let samples: i64 = connection
        .query_row("SELECT count(*) FROM samples", [], |row| row.get(0))
        .unwrap();
    // What another program (or a damaged file) can do; tlslab itself keeps the keys.
    connection
        .execute_batch(
            "PRAGMA foreign_keys = OFF;
             DELETE FROM configs WHERE id = (SELECT max(id) FROM configs);",
        )
        .unwrap();
    drop(connection);
    let db = db.to_str().unwrap();
    let csv = tlslab_succeeds(&["export", db]);
    assert_eq!(csv.lines().count() as i64, samples + 1, "{csv}");
    let lines = tlslab_succeeds(&["export", db, "--format", "jsonl"]);
    assert_eq!(lines.lines().count() as i64, samples);
    let orphans = lines
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|sample| sample["config"].is_null())
        .count();
    assert_eq!(
        orphans, 20,
        "the second Config's samples keep every field but its own"
    );
}
