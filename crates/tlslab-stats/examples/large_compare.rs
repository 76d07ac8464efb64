//! Times a full comparison of two samples of 1,000,000 handshake durations each (or the count
//! given as the argument), bootstrap included, and prints the seconds (recorded in
//! docs/benchmarks.md).
//!
//! Run with `cargo run --release -p tlslab-stats --example large_compare [COUNT]`.

use std::time::Instant;

use tlslab_stats::{compare, CompareOptions, Summary};

/// Deterministic, skewed, latency-like values in milliseconds: a log-normal-ish body and a
/// sprinkling of 200 ms retransmission timeouts.
fn durations(count: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..count)
        .map(|_| {
            let normal: f64 = (0..4).map(|_| rng.f64()).sum::<f64>() - 2.0;
            let body = scale * (0.25 * normal).exp();
            if rng.f64() < 1e-4 {
                body + 200.0
            } else {
                body
            }
        })
        .collect()
}

fn main() {
    let count = std::env::args()
        .nth(1)
        .and_then(|count| count.parse().ok())
        .unwrap_or(1_000_000);
    let baseline = durations(count, 1, 2.0);
    let other = durations(count, 2, 2.1);

    let start = Instant::now();
    let summary = Summary::of(&other).expect("non-empty");
    let summary_seconds = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let comparison = compare(
        "baseline",
        &baseline,
        "other",
        &other,
        &CompareOptions::default(),
    )
    .expect("valid samples");
    let seconds = start.elapsed().as_secs_f64();

    println!(
        "Summary::of, {count} values: {summary_seconds:.3} s (median {:.4} ms)",
        summary.median
    );
    println!(
        "compare, {count} vs {count} values, {} resamples: {seconds:.2} s",
        CompareOptions::default().resamples
    );
    println!("verdict: {}", comparison.verdict);
    println!(
        "diff_median {:.5} [{:.5}, {:.5}], diff_mean {:.5} [{:.5}, {:.5}]",
        comparison.diff_median,
        comparison.diff_median_ci[0],
        comparison.diff_median_ci[1],
        comparison.diff_mean,
        comparison.diff_mean_ci[0],
        comparison.diff_mean_ci[1]
    );
}
