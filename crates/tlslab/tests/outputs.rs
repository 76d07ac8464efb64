//! End-to-end: every option that writes a file follows one rule (never over an input, never
//! over a results store, over an existing file only of the same kind or with `--force`), and
//! a key log, a capture or a store that cannot be written (a full disk) stops the run or
//! says so, with the count of what was written.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// A small stored run, and its sample count.
fn stored_run(dir: &Path) -> (PathBuf, i64) {
    let db = Run::new(dir, "stored")
        .args("-n 5 --warmup 0")
        .succeeds()
        .db;
    let samples = count(&db, "SELECT COUNT(*) FROM samples");
    (db, samples)
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 scratch path")
}

/// Whether this process may open packet sockets (root); prints why not.
fn can_capture() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        println!("SKIPPED: live capture needs root or CAP_NET_RAW");
    }
    root
}

#[test]
fn a_capture_never_overwrites_a_store_or_a_file_of_another_kind() {
    let dir = scratch("outputs-capture");
    let (db, samples) = stored_run(&dir);
    let fresh = dir.join("fresh.db");
    // `run --capture` over a store: refused before the run (it had overwritten it).
    let output = tlslab(&[
        "run",
        "--out",
        text(&fresh),
        "-n",
        "5",
        "--capture",
        text(&db),
    ]);
    assert_user_error(
        &output,
        2,
        "is a tlslab results store, and tlslab never overwrites one",
    );
    assert!(!fresh.exists(), "refused before anything was written");
    // `--force` does not make a store replaceable.
    let output = tlslab(&[
        "run",
        "--out",
        text(&fresh),
        "--capture",
        text(&db),
        "--force",
    ]);
    assert_user_error(&output, 2, "never overwrites");
    // `capture --write` over a store, and a rotated file that is one: refused before the
    // capture opens (so without the right to capture, too).
    let output = tlslab(&[
        "capture",
        "--duration",
        "1s",
        "--out",
        text(&fresh),
        "--write",
        text(&db),
    ]);
    assert_user_error(&output, 2, "--write");
    assert!(stderr(&output).contains("never overwrites"));
    std::fs::copy(&db, dir.join("rotated-000001.pcap")).unwrap();
    let output = tlslab(&[
        "capture",
        "--duration",
        "1s",
        "--out",
        text(&fresh),
        "--write",
        text(&dir.join("rotated.pcap")),
        "--rotate",
        "1MB",
    ]);
    assert_user_error(&output, 2, "rotated-000001.pcap is a tlslab results store");
    assert_eq!(count(&db, "SELECT COUNT(*) FROM samples"), samples);
    assert!(!fresh.exists());

    // A file of another kind is kept unless --force says otherwise.
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    let output = tlslab(&["run", "--out", text(&fresh), "--capture", text(&notes)]);
    assert_user_error(&output, 2, "is not a packet capture (pcap or pcapng)");
    assert!(stderr(&output).contains("--force"), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
    // Nor is an input written over, nor one output over another.
    let experiment = dir.join("experiment.toml");
    std::fs::write(&experiment, "handshakes = 5\nwarmup = 0\n").unwrap();
    let output = tlslab(&[
        "run",
        text(&experiment),
        "--out",
        text(&fresh),
        "--capture",
        text(&experiment),
        "--force",
    ]);
    assert_user_error(&output, 2, "would destroy it");
    let same = dir.join("same.out");
    let output = tlslab(&[
        "run",
        "--out",
        text(&fresh),
        "--capture",
        text(&same),
        "--keylog",
        text(&same),
    ]);
    assert_user_error(&output, 2, "are the same file");
    assert!(!fresh.exists() && !same.exists());

    // A capture over an earlier capture is what the option is for.
    if can_capture() {
        let capture = dir.join("run.pcap");
        for name in ["first", "second"] {
            Run::new(&dir, name)
                .args("-n 5 --warmup 0")
                .option("--capture", text(&capture))
                .succeeds();
        }
        assert!(pcap_records(&capture).0 > 0);
        // --force replaces a file of another kind.
        Run::new(&dir, "forced")
            .args("-n 5 --warmup 0 --force")
            .option("--capture", text(&notes))
            .succeeds();
        assert!(pcap_records(&notes).0 > 0);
    }
}

#[test]
fn a_key_log_is_appended_to_and_reports_exports_charts_and_pages_replace_only_their_kind() {
    let dir = scratch("outputs-kinds");
    let (db, _) = stored_run(&dir);
    // A key log is appended to, as SSLKEYLOGFILE is by every program that writes one.
    let keys = dir.join("keys.log");
    std::fs::write(&keys, "# written by a browser\n").unwrap();
    Run::new(&dir, "keyed-1")
        .args("-n 3 --warmup 0")
        .option("--keylog", text(&keys))
        .succeeds();
    let first = std::fs::read_to_string(&keys).unwrap();
    assert!(first.starts_with("# written by a browser\n"));
    Run::new(&dir, "keyed-2")
        .args("-n 3 --warmup 0")
        .option("--keylog", text(&keys))
        .succeeds();
    let second = std::fs::read_to_string(&keys).unwrap();
    assert!(second.starts_with(&first) && second.len() > first.len());
    assert_eq!(
        second.matches("CLIENT_TRAFFIC_SECRET_0").count(),
        6,
        "three handshakes a run"
    );

    // Over a file of another kind: refused, the file kept; --force replaces it.
    let notes = dir.join("notes.txt");
    let mine = "my notes\n";
    std::fs::write(&notes, mine).unwrap();
    for (arguments, mentions) in [
        (
            vec!["report", text(&db), "-o", text(&notes)],
            "is not a tlslab report",
        ),
        (
            vec!["export", text(&db), "-o", text(&notes)],
            "is not a tlslab export",
        ),
        (
            vec![
                "run",
                "--out",
                text(&dir.join("k.db")),
                "--keylog",
                text(&notes),
            ],
            "is not a key log",
        ),
        (
            vec!["run", "--out", text(&notes)],
            "is not a tlslab results store",
        ),
        (vec!["scan", "127.0.0.1:1", "--out", text(&notes)], "--out"),
    ] {
        let output = tlslab(&arguments);
        assert_user_error(&output, 2, mentions);
        assert!(stderr(&output).contains("--force"), "{}", stderr(&output));
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), mine);
    }
    tlslab_succeeds(&["export", text(&db), "-o", text(&notes), "--force"]);
    assert!(std::fs::read_to_string(&notes)
        .unwrap()
        .starts_with("config,round,"));
    // An export over an export, a report over a report: the next one in the same place.
    tlslab_succeeds(&["export", text(&db), "--format", "jsonl", "-o", text(&notes)]);
    let report = dir.join("report.md");
    tlslab_succeeds(&["report", text(&db), "-o", text(&report)]);
    tlslab_succeeds(&["report", text(&db), "-o", text(&report)]);
    // An empty file holds nothing to lose: a store goes into one (as into `mktemp`'s).
    let empty = dir.join("empty.db");
    std::fs::write(&empty, "").unwrap();
    tlslab_succeeds(&[
        "run",
        "--quiet",
        "--out",
        text(&empty),
        "-n",
        "3",
        "--warmup",
        "0",
    ]);
    assert_eq!(count(&empty, "SELECT COUNT(*) FROM samples"), 3);

    // Charts and man pages, file by file, all checked before any is written.
    let charts = dir.join("charts");
    tlslab_succeeds(&[
        "report",
        text(&db),
        "-o",
        text(&report),
        "--png",
        text(&charts),
    ]);
    let chart = std::fs::read_dir(&charts)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&chart, mine).unwrap();
    std::fs::remove_file(&report).unwrap();
    let output = tlslab(&[
        "report",
        text(&db),
        "-o",
        text(&report),
        "--png",
        text(&charts),
    ]);
    assert_user_error(&output, 2, "is not a PNG image");
    assert!(stderr(&output).contains("give --png another directory"));
    assert_eq!(std::fs::read_to_string(&chart).unwrap(), mine);
    assert!(!report.exists(), "refused before anything was written");
    let pages = dir.join("man");
    tlslab_succeeds(&["man", "--out", text(&pages)]);
    tlslab_succeeds(&["man", "--out", text(&pages)]);
    std::fs::write(pages.join("tlslab-run.1"), mine).unwrap();
    assert_user_error(
        &tlslab(&["man", "--out", text(&pages)]),
        2,
        "is not a man page",
    );
    tlslab_succeeds(&["man", "--out", text(&pages), "--force"]);
}

/// A small file system of its own (a tmpfs), unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(path: PathBuf, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(&path).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|status| status.success());
        if !mounted {
            println!("SKIPPED: cannot mount a small tmpfs (needs root)");
        }
        mounted.then_some(SmallDisk(path))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The number after `before` in `text`.
fn number_after(text: &str, before: &str) -> u64 {
    let start = text
        .find(before)
        .unwrap_or_else(|| panic!("'{before}' not in: {text}"))
        + before.len();
    text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no number after '{before}' in: {text}"))
}

/// The packets of a pcap file and whether it ends with a whole record.
fn pcap_records(path: &Path) -> (u64, bool) {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.len() >= 24, "no pcap header in {}", path.display());
    let mut at = 24;
    let mut packets = 0;
    while at + 16 <= bytes.len() {
        let included = u32::from_ne_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + included;
        packets += 1;
    }
    (packets, at == bytes.len())
}

/// Every line a key log holds is whole: `LABEL <hex> <hex>`.
fn assert_whole_key_log(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "a cut line: {text:?}");
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 3, "{line}");
        assert!(fields[1..]
            .iter()
            .all(|field| field.bytes().all(|b| b.is_ascii_hexdigit())));
    }
    text.lines()
        .filter(|line| line.starts_with("CLIENT_TRAFFIC_SECRET_0 "))
        .count() as u64
}

#[test]
fn a_full_disk_under_the_key_log_says_what_it_holds_and_exits_3_with_every_sample_stored() {
    let dir = scratch("outputs-full-keys");
    let Some(disk) = SmallDisk::mount(dir.join("disk"), "4k") else {
        return;
    };
    let keys = disk.0.join("keys.log");
    let run = Run::new(&dir, "keyed")
        .args("-n 200 --warmup 0 --tls 1.3")
        .option("--keylog", text(&keys));
    let output = run.output();
    let errors = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{errors}");
    let warning = errors
        .lines()
        .find(|line| line.starts_with("warning: the key log"))
        .unwrap_or_else(|| panic!("no key log warning: {errors}"));
    assert!(warning.contains("No space left on device"), "{warning}");
    let written = number_after(warning, "holds the secrets of ");
    let lost = number_after(warning, "those of ");
    assert_eq!(written + lost, 200, "{warning}");
    assert!(written > 0 && lost > 0, "{warning}");
    // The file holds whole lines, and the handshakes it says.
    assert_eq!(assert_whole_key_log(&keys), written);
    // The samples are all stored (elsewhere), the run complete.
    assert_eq!(count(run.db(), "SELECT COUNT(*) FROM samples"), 200);
    assert_eq!(count(run.db(), "SELECT complete FROM runs"), 1);
    drop(disk);
}

#[test]
fn a_full_disk_under_the_capture_stops_the_run_with_exit_3_and_keeps_every_sample() {
    let dir = scratch("outputs-full-capture");
    if !can_capture() {
        return;
    }
    // The key log and the capture each on a disk of its own, both too small for the run.
    let Some(keys_disk) = SmallDisk::mount(dir.join("keys"), "4k") else {
        return;
    };
    let Some(capture_disk) = SmallDisk::mount(dir.join("capture"), "128k") else {
        return;
    };
    let keys = keys_disk.0.join("keys.log");
    let capture = capture_disk.0.join("c.pcap");
    let run = Run::new(&dir, "captured")
        .args("-n 20000 --warmup 0 --tls 1.3")
        .option("--keylog", text(&keys))
        .option("--capture", text(&capture));
    let started = Instant::now();
    let output = run.output();
    let errors = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{errors}");
    let error = errors
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {errors}"));
    assert!(
        error.contains("cannot write the capture") && error.contains("No space left on device"),
        "{error}"
    );
    assert!(error.contains("the run stopped there"), "{error}");
    let packets = number_after(error, "after ");
    assert!(packets > 0, "{error}");
    // The capture holds exactly those packets, whole.
    assert_eq!(pcap_records(&capture), (packets, true));
    // The key log filled first: said, with its counts.
    let warning = errors
        .lines()
        .find(|line| line.starts_with("warning: the key log"))
        .unwrap_or_else(|| panic!("no key log warning: {errors}"));
    assert_eq!(
        assert_whole_key_log(&keys),
        number_after(warning, "holds the secrets of ")
    );
    // The run stopped at once (20,000 handshakes were planned), its samples all stored.
    let (attempted, stored, complete, reason): (i64, i64, bool, String) = row(
        run.db(),
        "SELECT attempted, (SELECT COUNT(*) FROM samples), complete, reason FROM runs",
    );
    assert!(attempted > 0 && attempted < 20_000, "{attempted}");
    assert_eq!(stored, attempted);
    assert!(!complete);
    assert!(reason.contains("No space left on device"), "{reason}");
    println!(
        "stopped after {attempted} handshakes in {:?}",
        started.elapsed()
    );
    drop(capture_disk);
    drop(keys_disk);
}

#[test]
fn a_full_disk_under_capture_write_says_so_with_the_packets_written() {
    let dir = scratch("outputs-full-write");
    if !can_capture() {
        return;
    }
    let Some(disk) = SmallDisk::mount(dir.join("disk"), "64k") else {
        return;
    };
    let packets = disk.0.join("w.pcap");
    let store = dir.join("capture.db");
    let mut agent = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["capture", "-i", "lo", "--duration", "60s"])
        .args(["--out", text(&store), "--write", text(&packets)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(agent.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("capturing TLS handshakes on lo"), "{first}");
    // Traffic until the capture's disk is full.
    let mut traffic = Run::new(&dir, "traffic")
        .args("-n 1000000 --warmup 0 --quiet")
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = agent.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the capture never stopped");
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = Command::new("kill")
        .args(["-INT", &traffic.id().to_string()])
        .status();
    let _ = traffic.wait();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let errors = rest.join("\n");
    assert_eq!(status.code(), Some(3), "{errors}");
    let error = rest
        .iter()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {errors}"));
    // The system's reason is the error's cause, on the line after it.
    assert!(
        rest.iter()
            .any(|line| line.starts_with("caused by: ") && line.contains("No space left on device")),
        "{errors}"
    );
    assert!(!errors.contains("Error reading bytes"), "{errors}");
    let written = number_after(error, "after ");
    assert_eq!(pcap_records(&packets), (written, true));
    // The handshakes captured until then are stored, and the store says why it ended.
    let reason: String = value(&store, "SELECT reason FROM runs");
    assert!(reason.contains("No space left on device"), "{reason}");
    drop(disk);
}
