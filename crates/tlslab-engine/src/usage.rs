//! Measuring this process's CPU time and peak memory (the data type is core's [`Usage`]).

use tlslab_core::Usage;

/// Usage of this process now.
pub fn current() -> Usage {
    // libc, not rustix: rustix 1.1 has no getrusage.
    // SAFETY: `rusage` is a C struct of integers and `timeval`s of integers, for which all
    // zero bytes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live, writable `rusage` we own, and RUSAGE_SELF is a valid
    // `who`; getrusage writes only into that struct (it can fail only on a bad pointer or
    // `who`, and then leaves the zeros).
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let nanos =
        |time: libc::timeval| time.tv_sec as u64 * 1_000_000_000 + time.tv_usec as u64 * 1_000;
    let peak_rss_bytes = high_water_mark().unwrap_or(usage.ru_maxrss as u64 * 1024);
    Usage {
        user_ns: nanos(usage.ru_utime),
        system_ns: nanos(usage.ru_stime),
        peak_rss_bytes,
    }
}

/// The peak resident set size since the last [`reset_peak`], from `/proc/self/status`.
fn high_water_mark() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kilobytes * 1024)
}

/// Resets the peak RSS so the next reading covers one trial only (Linux `clear_refs` 5).
/// Where the kernel refuses, readings stay lifetime peaks, which are still upper bounds.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work_and_peak_memory_is_positive() {
        let before = current();
        let mut sum = 0u64;
        for i in 0..20_000_000u64 {
            sum = sum.wrapping_add(i * i);
        }
        std::hint::black_box(sum);
        let spent = current().since(&before);
        assert!(spent.cpu_ns() > 0);
        assert!(spent.peak_rss_bytes > 1024 * 1024);
    }
}
