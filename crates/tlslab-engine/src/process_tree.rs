//! Everything a `--server-cmd` started, daemons included, and stopping all of it.
//!
//! A server that daemonises (nginx without `daemon off;`) forks, calls `setsid` and lets its
//! parent exit: it leaves the process group tlslab started it in, and, orphaned, would be
//! adopted by init, out of reach. So the command runs under a shell that is a child
//! subreaper (`PR_SET_CHILD_SUBREAPER`): every orphan below it is adopted by it instead, so
//! the processes the command left are always the shell's descendants, found by walking
//! `/proc`'s parent links. Hand-written: the walk is twenty lines, and the crates that read
//! `/proc` (procfs) bring far more than a parent pid.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The shell script around the user's command (`$1`): it runs the command; a command that
/// fails ends the script with its status (the server did not start), one that succeeds (a
/// daemon's parent, or a foreground server that returned) leaves the script waiting as the
/// reaper of whatever it left, until tlslab stops it. `sleep` takes a whole number of seconds
/// everywhere (GNU, busybox); this one is 68 years.
const WRAPPER: &str = "sh -c \"$1\" || exit; exec sleep 2147483647";

/// The name of the waiting script once the command returned (`/proc/PID/comm`).
const WAITING: &str = "sleep";

/// `sh -c command`, wrapped so that everything it starts stays below the returned command's
/// process, which is a child subreaper.
pub fn command(command: &str) -> Command {
    let mut shell = Command::new("sh");
    shell.args(["-c", WRAPPER, "tlslab-server-cmd", command]);
    // SAFETY: the closure makes one system call (prctl) and allocates nothing: it is
    // async-signal-safe, as a closure run between fork and exec must be. The attribute
    // survives the exec of sh (and of `sleep`), and is not inherited by children.
    unsafe {
        shell.pre_exec(|| {
            // rustix's spelling: any pid turns the attribute on; `None` turns it off.
            rustix::process::set_child_subreaper(Some(rustix::process::Pid::INIT))?;
            Ok(())
        });
    }
    shell
}

/// Whether the command returned successfully and the script now only waits: a daemonised
/// server runs on below it, or nothing does.
pub fn returned(root: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{root}/comm"))
        .is_ok_and(|name| name.trim_end() == WAITING)
}

/// One process as `/proc/PID/stat` gives it.
struct Process {
    parent: u32,
    /// Exited and not yet reaped: nothing left to stop.
    zombie: bool,
}

fn process(pid: u32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so the fields
    // after it start after the last ')'.
    let (_, after) = stat.rsplit_once(')')?;
    let mut fields = after.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Process {
        parent,
        zombie: state == "Z" || state == "X",
    })
}

/// The live (not zombie) descendants of `root`, at any depth.
pub fn descendants(root: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<u32, Vec<(u32, bool)>> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        if let Some(process) = process(pid) {
            children
                .entry(process.parent)
                .or_default()
                .push((pid, process.zombie));
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for &(pid, zombie) in children.get(&parent).into_iter().flatten() {
            // A zombie's own children were already handed to the subreaper.
            if !zombie {
                found.push(pid);
                next.push(pid);
            }
        }
    }
    found
}

/// Sends `signal` to each process in `pids` (gone ones are skipped).
pub fn signal(pids: &[u32], signal: rustix::process::Signal) {
    for &pid in pids {
        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    fn wait_for(mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_daemon_that_left_the_group_and_its_parent_stays_a_descendant() {
        // The double fork and setsid of a daemon, in shell: the subshell exits at once, so
        // its `sleep` is orphaned in a session of its own.
        let mut child = command("(setsid sleep 1000 >/dev/null 2>&1 &); exit 0")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let root = child.id();
        wait_for(|| returned(root) && !descendants(root).is_empty());
        let left = descendants(root);
        assert_eq!(left.len(), 1, "{left:?}");
        signal(&left, rustix::process::Signal::KILL);
        wait_for(|| descendants(root).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_failing_command_ends_the_wrapper_with_its_status() {
        let status = command("exit 7").status().unwrap();
        assert_eq!(status.code(), Some(7));
    }
}
