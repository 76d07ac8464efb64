//! Runs that were cut off. A run killed outright (SIGKILL, an out-of-memory kill, a power
//! cut) never records its end: its samples sit in the store and its write-ahead log, and its
//! run row says nothing about how it ended. The writing process holds an exclusive advisory
//! lock on the store file for as long as it writes, which the kernel releases however the
//! process ends; a store whose run never finished and whose lock is free was cut off.
//! Opening it recovers it once: the log is folded into the file (which is then whole on its
//! own again) and the run is marked incomplete, with the attempts it holds.
//!
//! What a cut-off run loses is bounded by the batch size: samples are committed at least
//! every 1,000 samples or 200 ms, and committed samples survive the process (see
//! `docs/reliability.md`).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

/// Why a recovered run ended, as its run row says.
pub const CUT_OFF: &str = "cut off: the run ended without recording its end (killed, or the \
                           machine stopped); the samples it committed are kept";

/// A writing run's lock on its store file.
#[derive(Debug)]
pub(crate) struct RunLock(#[allow(dead_code)] File);

impl RunLock {
    /// Takes the lock, or fails at once (`WouldBlock`) when a run writes the store.
    pub(crate) fn take(path: &Path) -> io::Result<RunLock> {
        let file = File::open(path)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
        Ok(RunLock(file))
    }
}

/// The file beside a store that keeps disk space for the run's last records.
pub(crate) fn reserve_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-reserve");
    PathBuf::from(name)
}

/// Recovers the store at `path` when its run was cut off; returns whether it did. A store
/// that a run is writing, or that cannot be written, is left as it is.
pub(crate) fn recover(path: &Path) -> bool {
    if !unfinished(path) {
        return false;
    }
    let Ok(lock) = RunLock::take(path) else {
        return false;
    };
    let Ok(connection) = Connection::open(path) else {
        return false;
    };
    let recorded = connection
        .execute(
            "UPDATE runs SET complete = 0, reason = COALESCE(reason, ?1),
                 finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
                 attempted = (SELECT COUNT(*) FROM samples),
                 errors = (SELECT COUNT(*) FROM samples WHERE outcome = 'error'),
                 duration_ns = COALESCE(duration_ns, (SELECT MAX(started_at_ns) FROM samples))
             WHERE finished_at IS NULL",
            [CUT_OFF],
        )
        .is_ok()
        && connection
            .execute_batch(crate::schema::SAMPLES_INDEX)
            .is_ok();
    // Fold the log into the file: a copy of the .db alone then holds every sample.
    let _ =
        connection.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;");
    drop(connection);
    let _ = std::fs::remove_file(reserve_path(path));
    drop(lock);
    recorded
}

/// Whether the store holds a run that never recorded its end.
fn unfinished(path: &Path) -> bool {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()
    .and_then(|connection| {
        connection
            .query_row("SELECT finished_at IS NULL FROM runs LIMIT 1", [], |row| {
                row.get::<_, bool>(0)
            })
            .optional()
            .ok()
            .flatten()
    })
    .unwrap_or(false)
}
