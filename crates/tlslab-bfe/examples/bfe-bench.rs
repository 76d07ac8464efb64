//! Times the BFE operations at one capacity n and false-positive rate p (what
//! `bench/bfe.sh` runs, in release): key generation per key part on every core and on one,
//! encapsulation, decapsulation with the Fujisaki-Okamoto check and CPA-only, puncturing,
//! encoding and reading back the secret key, and the secret key's memory, as counted by the
//! key and as the process's resident set grew.
//!
//!   cargo run --release -p tlslab-bfe --example bfe-bench -- [N [P [ITERATIONS]]]
//!
//! Defaults: n = 50,000, p = 0.001, 200 iterations of each operation. Prints one line per
//! measure: the median of the thread's CPU time (what the operation costs; the wall clock on
//! a shared machine also counts other work), the 10th and 90th percentiles, and the median
//! wall time.

use std::time::{Duration, Instant};

use rustix::time::{clock_gettime, ClockId};

use rand_core::OsRng;
use tlslab_bfe::{generate, generate_with_threads, Parameters, SecretKey};

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let capacity: u64 = argument(&arguments, 0, 50_000);
    let rate: f64 = argument(&arguments, 1, 0.001);
    let iterations: usize = argument(&arguments, 2, 200);
    let parameters = match Parameters::for_capacity(capacity, rate) {
        Ok(parameters) => parameters,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(2);
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |threads| threads.get());
    println!(
        "n = {capacity}, p = {rate}: m = {} key parts, k = {} hashes; public key {} B, \
         ciphertext {} B, secret key {} B encoded",
        parameters.key_parts(),
        parameters.hashes(),
        parameters.public_key_size(),
        parameters.ciphertext_size(),
        parameters.secret_key_size(),
    );

    // Key generation on one thread, for a sample of key parts (the whole key would take
    // minutes more), then the whole key on every core.
    let sample = Parameters::new(parameters.key_parts().min(2_000), parameters.hashes())
        .expect("a smaller shape");
    let cpu = thread_cpu();
    let start = Instant::now();
    drop(generate_with_threads(sample, 1, &mut OsRng));
    let wall = start.elapsed() / sample.key_parts();
    let one = thread_cpu().saturating_sub(cpu) / sample.key_parts();
    println!(
        "keygen per key part, 1 thread: {:.1} µs CPU, {:.1} µs wall",
        micros(one),
        micros(wall)
    );

    let resident_before = resident_bytes();
    let process = process_cpu();
    let start = Instant::now();
    let (public_key, mut secret_key) = generate(parameters, &mut OsRng);
    let whole = start.elapsed();
    let process = process_cpu().saturating_sub(process);
    let resident_after = resident_bytes();
    println!(
        "keygen, whole key on {threads} threads: {:.2} s wall, {:.2} s CPU ({:.1} µs CPU per \
         key part)",
        whole.as_secs_f64(),
        process.as_secs_f64(),
        micros(process / parameters.key_parts())
    );
    println!(
        "secret key memory: {} bytes held ({:.1} MB); the resident set grew by {:.1} MB",
        secret_key.memory_bytes(),
        secret_key.memory_bytes() as f64 / 1e6,
        resident_after.saturating_sub(resident_before) as f64 / 1e6,
    );

    let start = Instant::now();
    let encoded = secret_key.to_bytes();
    let encoding = start.elapsed();
    let start = Instant::now();
    let reloaded = SecretKey::from_bytes(&encoded).expect("the key reads back");
    let reading = start.elapsed();
    drop((encoded, reloaded));
    println!(
        "secret key to_bytes {:.1} ms, from_bytes {:.1} ms",
        encoding.as_secs_f64() * 1e3,
        reading.as_secs_f64() * 1e3
    );

    let mut encapsulations = Times::default();
    let mut encapsulations_cpa = Times::default();
    let mut decapsulations = Times::default();
    let mut decapsulations_cpa = Times::default();
    let mut punctures = Times::default();
    for _ in 0..iterations {
        let (key, ciphertext) = encapsulations.time(|| public_key.encapsulate(&mut OsRng));
        encapsulations_cpa.time(|| public_key.encapsulate_cpa(&mut OsRng));
        let opened = decapsulations.time(|| secret_key.decapsulate(&ciphertext));
        let opened_cpa = decapsulations_cpa.time(|| secret_key.decapsulate_cpa(&ciphertext));
        assert!(
            opened == Ok(key.clone()) && opened_cpa == Ok(key),
            "decapsulation works"
        );
        punctures.time(|| secret_key.puncture(&ciphertext));
    }
    report("encapsulation (FO)", &mut encapsulations);
    report("encapsulation (CPA-only)", &mut encapsulations_cpa);
    report("decapsulation (FO check)", &mut decapsulations);
    report("decapsulation (CPA-only)", &mut decapsulations_cpa);
    report("puncture", &mut punctures);
}

fn argument<T: std::str::FromStr>(arguments: &[String], position: usize, default: T) -> T {
    match arguments.get(position) {
        None => default,
        Some(text) => text.parse().unwrap_or_else(|_| {
            eprintln!("error: cannot read argument {} ({text})", position + 1);
            eprintln!("hint: bfe-bench [N [P [ITERATIONS]]], e.g. bfe-bench 50000 0.001 200");
            std::process::exit(2);
        }),
    }
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// One operation's CPU and wall times.
#[derive(Default)]
struct Times {
    cpu: Vec<Duration>,
    wall: Vec<Duration>,
}

impl Times {
    fn time<T>(&mut self, operation: impl FnOnce() -> T) -> T {
        let cpu = thread_cpu();
        let wall = Instant::now();
        let result = operation();
        self.wall.push(wall.elapsed());
        self.cpu.push(thread_cpu().saturating_sub(cpu));
        result
    }
}

fn thread_cpu() -> Duration {
    let time = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

/// The CPU time of every thread of the process (key generation's included).
fn process_cpu() -> Duration {
    let time = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

fn report(what: &str, times: &mut Times) {
    times.cpu.sort_unstable();
    times.wall.sort_unstable();
    let at = |times: &[Duration], share: f64| {
        micros(times[((times.len() - 1) as f64 * share).round() as usize])
    };
    println!(
        "{what}: median {:.1} µs CPU (p10 {:.1}, p90 {:.1}), wall median {:.1} µs; {} runs",
        at(&times.cpu, 0.5),
        at(&times.cpu, 0.1),
        at(&times.cpu, 0.9),
        at(&times.wall, 0.5),
        times.cpu.len()
    );
}

/// The process's resident set (VmRSS), 0 where /proc is absent.
fn resident_bytes() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches(" kB").trim().parse().ok())
        })
        .map_or(0, |kilobytes: usize| kilobytes * 1024)
}
