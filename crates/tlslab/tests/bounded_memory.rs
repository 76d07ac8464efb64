//! Memory that does not grow with what a user asks for: agents made only as a block needs
//! them (`-c 50000 -n 1` is one handshake, a `-c` list of 1,500 values is 1,500 of them), and
//! page bodies counted as they pass, by the client and by the lab server, never held whole.
//!
//! Peak memory is read from `/proc/PID/status` (`VmHWM`, the resident high-water mark). The
//! bound, 256 MiB, is generous: these commands take 20 to 75 MB (a test build), and took
//! 0.4 to 2 GB before (`docs/benchmarks.md`, "Memory").

mod support;

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::*;

/// Far above what any of these commands needs, far below what they took when they held
/// every agent or every body.
const BOUND_KIB: u64 = 256 * 1024;

/// A process's resident high-water mark, in KiB (`None` once it has exited).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs tlslab with `args` to its end; returns its output and the highest `VmHWM` seen while
/// it ran (read every 10 ms: the mark only rises, so the last reading is close to the peak).
fn run_watched(args: &[String]) -> (Output, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(args)
        .env("TLSLAB_PKI_DIR", pki_dir())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tlslab binary runs");
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(Ordering::Acquire) {
                if let Some(kib) = peak_kib(pid) {
                    peak = peak.max(kib);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    let output = child.wait_with_output().unwrap();
    done.store(true, Ordering::Release);
    let peak = watcher.join().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "tlslab panicked: {stderr}");
    (output, peak)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

#[test]
fn fifty_thousand_agents_planned_for_one_handshake_take_no_memory_of_their_own() {
    let dir = scratch("memory-agents");
    let db = dir.join("agents.db");
    let (output, peak) = run_watched(&strings(&[
        "run",
        "--out",
        db.to_str().unwrap(),
        "-c",
        "50000",
        "-n",
        "1",
        "--warmup",
        "0",
        "-q",
    ]));
    assert_success(&output);
    eprintln!("-c 50000 -n 1: peak {peak} KiB");
    assert_eq!(count_samples(&db, "s.outcome = 'ok'"), 1);
    assert!(
        peak < BOUND_KIB,
        "-c 50000 -n 1 took {peak} KiB for one handshake"
    );
}

#[test]
fn a_list_of_fifteen_hundred_concurrencies_stores_every_sample_in_bounded_memory() {
    let dir = scratch("memory-list");
    let db = dir.join("list.db");
    let list: Vec<String> = (1..=1500).map(|value| value.to_string()).collect();
    let mut args = strings(&["run", "--out", db.to_str().unwrap()]);
    args.extend(strings(&["-n", "1", "--warmup", "0", "-q", "-c"]));
    args.push(list.join(","));
    let (output, peak) = run_watched(&args);
    assert_success(&output);
    eprintln!("-c 1,...,1500 -n 1: peak {peak} KiB");
    assert_eq!(count(&db, "SELECT COUNT(*) FROM configs"), 1500);
    assert_eq!(count_samples(&db, "s.outcome = 'ok'"), 1500);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM (SELECT config_id FROM samples GROUP BY config_id \
             HAVING COUNT(*) = 1)"
        ),
        1500,
        "one sample for every Config"
    );
    assert!(
        peak < BOUND_KIB,
        "a -c list of 1,500 values took {peak} KiB"
    );
}

/// A page of 1.024 GB (16 resources of 64 MB, the lab server's largest) loaded from a lab
/// server of its own over `http`: the client counts every byte, and neither side holds the
/// bodies.
fn a_gigabyte_page_loads_in_bounded_memory(http: &str) {
    let dir = scratch(&format!("memory-page-{http}"));
    let db = dir.join("page.db");
    let server = LabServer::start();
    let url = format!("https://127.0.0.1:{}/", server.port);
    let (output, client_peak) = run_watched(&strings(&[
        "load",
        &url,
        "--insecure",
        "--out",
        db.to_str().unwrap(),
        "--page",
        "16:64MB",
        "--http",
        http,
        "-n",
        "1",
        "--warmup",
        "0",
        "--timeout",
        "300s",
        "-q",
    ]));
    let server_peak = peak_kib(server.child.id()).expect("the lab server is still running");
    assert_success(&output);
    eprintln!(
        "1 GB page over HTTP/{http}: client peak {client_peak} KiB, server {server_peak} KiB"
    );
    assert_eq!(
        count_samples(
            &db,
            "s.outcome = 'ok' AND s.http_status = 200 \
             AND s.response_bytes = 1024 + 16 * 64000000"
        ),
        1,
        "the page whole: the document (1,024 bytes) and 16 resources of 64 MB"
    );
    assert!(
        client_peak < BOUND_KIB,
        "the client took {client_peak} KiB for a 1 GB page over HTTP/{http}"
    );
    assert!(
        server_peak < BOUND_KIB,
        "the lab server took {server_peak} KiB for a 1 GB page over HTTP/{http}"
    );
}

#[test]
fn a_gigabyte_page_loads_in_bounded_memory_over_http1() {
    a_gigabyte_page_loads_in_bounded_memory("1.1");
}

#[test]
fn a_gigabyte_page_loads_in_bounded_memory_over_http2() {
    a_gigabyte_page_loads_in_bounded_memory("2");
}
