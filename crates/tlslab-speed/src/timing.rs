//! Timing one operation: on each of N threads, its own worker (keys, contexts, buffers made
//! before the clock starts), one warm-up call, then calls in batches until the time is up.
//! Each thread's own CPU time is read at its start and end too: the time per operation is
//! CPU time, as `openssl speed` counts user time, so that other work on a shared machine
//! does not lengthen it; the rate is operations per wall-clock second, what the machine
//! delivers with N threads busy. The clock is read once per batch, and a batch doubles while it takes under a millisecond,
//! so that reading it costs nothing next to a 200-nanosecond AEAD record or a
//! 100-millisecond RSA signature alike.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::{Factory, SpeedError};

/// A batch grows until it takes this long.
const BATCH: Duration = Duration::from_millis(1);

/// What the threads counted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counted {
    /// Operations, all threads.
    pub operations: u64,
    /// The longest thread's measured time.
    pub seconds: f64,
    /// Each thread's rate, summed: the machine's rate with that many threads busy.
    pub per_second: f64,
    /// One operation's wall-clock time on one thread, the threads' mean.
    pub seconds_per_operation: f64,
    /// One operation's CPU time on the thread that ran it, the threads' mean.
    pub cpu_seconds_per_operation: f64,
}

/// This thread's CPU time so far.
fn thread_cpu() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Runs `make`'s operation on `threads` threads at once for `duration`; the first error a
/// worker meets ends the measurement.
pub(crate) fn run(make: &Factory, threads: u32, duration: Duration) -> Result<Counted, SpeedError> {
    let threads = threads.max(1) as usize;
    let barrier = Barrier::new(threads);
    let results: Vec<Result<(u64, Duration, Duration), SpeedError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let barrier = &barrier;
                scope.spawn(move || {
                    // Every thread reaches the barrier, a failed one too, so none waits forever.
                    let worker = make().and_then(|mut worker| worker().map(|()| worker));
                    barrier.wait();
                    let mut worker = worker?;
                    let cpu = thread_cpu();
                    let start = Instant::now();
                    let mut operations = 0u64;
                    let mut batch = 1u64;
                    loop {
                        let before = Instant::now();
                        for _ in 0..batch {
                            worker()?;
                        }
                        operations += batch;
                        let now = Instant::now();
                        if now - start >= duration {
                            return Ok((operations, now - start, thread_cpu().saturating_sub(cpu)));
                        }
                        if now - before < BATCH {
                            batch = batch.saturating_mul(2);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or(Err(SpeedError::Panicked)))
            .collect()
    });
    let mut counted = Counted {
        operations: 0,
        seconds: 0.0,
        per_second: 0.0,
        seconds_per_operation: 0.0,
        cpu_seconds_per_operation: 0.0,
    };
    for result in &results {
        let (operations, elapsed, cpu) = result.clone()?;
        let seconds = elapsed.as_secs_f64();
        counted.operations += operations;
        counted.seconds = counted.seconds.max(seconds);
        counted.per_second += operations as f64 / seconds;
        counted.seconds_per_operation += seconds / operations as f64 / results.len() as f64;
        counted.cpu_seconds_per_operation +=
            cpu.as_secs_f64() / operations as f64 / results.len() as f64;
    }
    Ok(counted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_each_count_and_their_rates_add_up() {
        let make: Factory = std::sync::Arc::new(|| {
            Ok(Box::new(|| {
                std::hint::black_box((0..100u64).sum::<u64>());
                Ok(())
            }) as crate::Worker)
        });
        let counted = run(&make, 2, Duration::from_millis(5)).unwrap();
        assert!(counted.operations >= 2, "{counted:?}");
        assert!(counted.seconds >= 0.005, "{counted:?}");
        // Two threads: the aggregate rate is each thread's, summed.
        let one_thread = 1.0 / counted.seconds_per_operation;
        assert!(counted.per_second > one_thread, "{counted:?}");
        // A thread's CPU time is never more than the wall-clock time it ran.
        assert!(counted.cpu_seconds_per_operation > 0.0, "{counted:?}");
        assert!(
            counted.cpu_seconds_per_operation <= counted.seconds_per_operation * 1.01,
            "{counted:?}"
        );
    }

    #[test]
    fn a_failing_operation_is_an_error_not_a_rate() {
        let make: Factory =
            std::sync::Arc::new(|| Ok(Box::new(|| Err("refused".into())) as crate::Worker));
        assert_eq!(
            run(&make, 2, Duration::from_millis(1))
                .unwrap_err()
                .to_string(),
            "refused"
        );
    }
}
