//! A real, throw-away single-node Slurm cluster for tests: Debian's `munge` and `slurm-wlm`,
//! configured in a fresh temporary directory and started by the test: `munged` on a socket of
//! its own with a key made for it, then `slurmctld` and `slurmd` (both in the foreground, as
//! the test's children) with a generated `slurm.conf` on free ports, and everything stopped and
//! removed when the [`Slurm`] is dropped.
//!
//! It needs root (slurmd starts each job as its user, and runs as root to do so) and the
//! packages; [`Slurm::start`] returns `None`, printing why, when either is missing, unless
//! `TLSLAB_REQUIRE_SLURM` is set (CI), where that fails the test instead. Process tracking is
//! `proctrack/linuxproc` and tasks `task/none`: they need neither systemd nor a cgroup of
//! their own, which a container running the tests rarely gives.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Directories this harness makes start with this, followed by the test process's id.
const DIRECTORY_PREFIX: &str = "tlslab-slurm-";
/// How many CPUs the node says it has (`SlurmdParameters=config_overrides` lets it say more
/// than the machine has): enough for every task of a test's job array to run at once, as
/// agents do, whatever the machine's count.
const NODE_CPUS: u32 = 16;
/// How long the daemons get to come up, and a job to finish.
const STARTUP: Duration = Duration::from_secs(60);

/// One cluster at a time in a test process: the node takes the machine's host name, and two
/// clusters' nodes would be one name on two controllers.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The programs the harness runs, all from the packages' places on PATH or in /usr/sbin.
const PROGRAMS: [&str; 8] = [
    "mungekey",
    "munged",
    "munge",
    "slurmctld",
    "slurmd",
    "sbatch",
    "scontrol",
    "sinfo",
];

/// A running single-node Slurm cluster of the test's own.
pub struct Slurm {
    /// The temporary directory: configuration, munge's key and socket, state, spool and logs.
    directory: PathBuf,
    /// The daemons, stopped in reverse order on drop.
    daemons: Vec<(&'static str, Child)>,
    _one_at_a_time: MutexGuard<'static, ()>,
}

/// A job that ended: its id and each array task's line of `scontrol show job`.
pub struct FinishedJob {
    pub id: String,
    /// `(array task id, JobState, ExitCode)` of every task.
    pub tasks: Vec<(u32, String, String)>,
}

impl Slurm {
    /// Starts munge, slurmctld and slurmd, and waits until the node takes jobs.
    pub fn start() -> Option<Slurm> {
        if let Some(why) = unavailable() {
            assert!(
                std::env::var_os("TLSLAB_REQUIRE_SLURM").is_none(),
                "TLSLAB_REQUIRE_SLURM is set but {why}"
            );
            eprintln!("skipped: {why}");
            return None;
        }
        let guard = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        remove_abandoned_clusters();
        let mut slurm = Slurm {
            directory: make_directory(),
            daemons: Vec::new(),
            _one_at_a_time: guard,
        };
        slurm.start_munge();
        slurm.write_configuration();
        slurm.start_daemon("slurmctld", &["-D", "-i"]);
        slurm.start_daemon("slurmd", &["-D"]);
        slurm.wait_for_idle_node();
        Some(slurm)
    }

    /// A Slurm client program (`sbatch`, `squeue`, ...) talking to this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .env("SLURM_CONF", self.configuration())
            .current_dir(&self.directory);
        command
    }

    /// Submits `script` as a job array of `array` (`0-3`) with `variables` in its
    /// environment (sbatch passes its own on), waits until every task ended, and returns
    /// each task's state. Task `N`'s output is [`Slurm::output_of`]`(job, N)`.
    pub fn run_array(
        &self,
        script: &Path,
        array: &str,
        variables: &[(&str, &str)],
        within: Duration,
    ) -> FinishedJob {
        let output_pattern = self.directory.join("job-%A_%a.out");
        let mut sbatch = self.command("sbatch");
        sbatch
            .args(["--parsable", "--wait"])
            .arg(format!("--array={array}"))
            .arg(format!("--output={}", output_pattern.display()))
            .arg(format!("--chdir={}", self.directory.display()))
            .arg(script)
            .envs(variables.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = sbatch.spawn().expect("sbatch starts");
        let deadline = Instant::now() + within;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the job array did not end within {within:?}\n{}",
                    self.diagnostics()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        // sbatch --wait exits with the highest exit code of the array's tasks: the tasks'
        // states below say which failed.
        let output = child.wait_with_output().unwrap();
        let printed = String::from_utf8_lossy(&output.stdout);
        let id = printed
            .trim()
            .split(';')
            .next()
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
            .unwrap_or_else(|| {
                panic!(
                    "sbatch printed no job id: {printed}\n{}\n{}",
                    String::from_utf8_lossy(&output.stderr),
                    self.diagnostics()
                )
            })
            .to_string();
        let tasks = self.tasks_of(&id);
        FinishedJob { id, tasks }
    }

    /// What task `task` of job `job` printed (its `--output` file).
    pub fn output_of(&self, job: &str, task: u32) -> String {
        std::fs::read_to_string(self.directory.join(format!("job-{job}_{task}.out")))
            .unwrap_or_default()
    }

    /// The daemons' logs, for a failing test's message.
    pub fn diagnostics(&self) -> String {
        let mut text = String::new();
        for name in ["munged.log", "slurmctld.log", "slurmd.log"] {
            let log = std::fs::read_to_string(self.directory.join(name)).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            text.push_str(&format!(
                "--- {name} (last lines)\n{}\n",
                lines[lines.len().saturating_sub(25)..].join("\n")
            ));
        }
        text
    }

    fn configuration(&self) -> PathBuf {
        self.directory.join("slurm.conf")
    }

    fn munge_socket(&self) -> PathBuf {
        self.directory.join("socket/munge.socket")
    }

    /// Every array task of `job`, from `scontrol show job` (which keeps finished jobs for
    /// MinJobAge, five minutes: there is no accounting database here).
    fn tasks_of(&self, job: &str) -> Vec<(u32, String, String)> {
        let output = self
            .command("scontrol")
            .args(["--oneliner", "show", "job", job])
            .output()
            .expect("scontrol runs");
        expect_success("scontrol show job", &output, self);
        let text = String::from_utf8_lossy(&output.stdout);
        let mut tasks: Vec<(u32, String, String)> = text
            .lines()
            .filter_map(|line| {
                let field = |name: &str| {
                    line.split_whitespace()
                        .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
                        .map(str::to_string)
                };
                Some((
                    field("ArrayTaskId")?.parse().ok()?,
                    field("JobState")?,
                    field("ExitCode")?,
                ))
            })
            .collect();
        tasks.sort();
        tasks
    }

    /// munged on its own socket with a key made for this cluster. Its checks: the key and
    /// its directory private to root; the socket's directory open to all (clients of every
    /// user connect).
    fn start_munge(&mut self) {
        let private = self.directory.join("munge");
        let socket = self.directory.join("socket");
        for (directory, mode) in [(&private, 0o700), (&socket, 0o755)] {
            std::fs::create_dir(directory).unwrap();
            std::fs::set_permissions(directory, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let key = private.join("munge.key");
        let output = Command::new("mungekey")
            .arg("--create")
            .arg(format!("--keyfile={}", key.display()))
            .output()
            .expect("mungekey runs");
        expect_success("mungekey --create", &output, self);
        let munged = Command::new("munged")
            .arg("--foreground")
            .arg(format!("--socket={}", self.munge_socket().display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!(
                "--pid-file={}",
                private.join("munged.pid").display()
            ))
            .arg(format!(
                "--seed-file={}",
                private.join("munged.seed").display()
            ))
            .arg(format!(
                "--log-file={}",
                self.directory.join("munged.log").display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("munged starts");
        self.daemons.push(("munged", munged));
        self.wait_until("munged answers", |slurm| {
            Command::new("munge")
                .arg(format!("--socket={}", slurm.munge_socket().display()))
                .arg("--no-input")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        });
    }

    /// slurm.conf (a controller and one node on this host, on free ports of 127.0.0.1,
    /// everything under the directory) and cgroup.conf (slurmd loads a cgroup plugin
    /// whatever the configuration; nothing here uses it).
    fn write_configuration(&self) {
        let host = short_host_name();
        let directory = self.directory.display();
        for part in ["state", "spool"] {
            std::fs::create_dir(self.directory.join(part)).unwrap();
        }
        let configuration = format!(
            "# Written by the tlslab test harness (crates/tlslab/tests/support/slurm.rs).\n\
             ClusterName=tlslabtest\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={controller}\n\
             SlurmdPort={node}\n\
             SlurmUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={directory}/state\n\
             SlurmdSpoolDir={directory}/spool\n\
             SlurmctldPidFile={directory}/slurmctld.pid\n\
             SlurmdPidFile={directory}/slurmd.pid\n\
             SlurmctldLogFile={directory}/slurmctld.log\n\
             SlurmdLogFile={directory}/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SwitchType=switch/none\n\
             MpiDefault=none\n\
             MailProg=/bin/true\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             SlurmdParameters=config_overrides\n\
             ReturnToService=2\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={NODE_CPUS} State=UNKNOWN\n\
             PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            controller = super::closed_port(),
            node = super::closed_port(),
            socket = self.munge_socket().display(),
        );
        std::fs::write(self.configuration(), configuration).unwrap();
        std::fs::write(
            self.directory.join("cgroup.conf"),
            "CgroupPlugin=autodetect\nCgroupMountpoint=/sys/fs/cgroup\n",
        )
        .unwrap();
    }

    fn start_daemon(&mut self, program: &'static str, arguments: &[&str]) {
        let printed = std::fs::File::create(self.directory.join(format!("{program}.out"))).unwrap();
        let child = Command::new(program)
            .args(arguments)
            .env("SLURM_CONF", self.configuration())
            .current_dir(&self.directory)
            .stdin(Stdio::null())
            .stdout(printed.try_clone().unwrap())
            .stderr(printed)
            .spawn()
            .unwrap_or_else(|error| panic!("{program} could not start: {error}"));
        self.daemons.push((program, child));
    }

    fn wait_for_idle_node(&mut self) {
        self.wait_until("the node is idle", |slurm| {
            slurm
                .command("sinfo")
                .args(["--noheader", "--format=%T"])
                .output()
                .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "idle")
        });
    }

    /// Polls `ready` until it holds, failing with the logs after [`STARTUP`] or when a
    /// daemon exits.
    fn wait_until(&mut self, what: &str, ready: impl Fn(&Slurm) -> bool) {
        let deadline = Instant::now() + STARTUP;
        while !ready(self) {
            let exited = self.daemons.iter_mut().find_map(|(name, child)| {
                let status = child.try_wait().unwrap()?;
                Some((*name, status))
            });
            if let Some((name, status)) = exited {
                let printed = std::fs::read_to_string(self.directory.join(format!("{name}.out")))
                    .unwrap_or_default();
                panic!(
                    "waiting until {what}: {name} exited ({status})\n{printed}\n{}",
                    self.diagnostics()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {STARTUP:?}\n{}",
                self.diagnostics()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Slurm {
    /// Stops the daemons (SIGTERM, then SIGKILL after a few seconds) and removes the
    /// directory; errors are ignored, as a panic here would abort a failing test.
    fn drop(&mut self) {
        for (_, child) in self.daemons.iter_mut().rev() {
            stop(child);
        }
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

/// SIGTERM, a few seconds to exit, then SIGKILL.
fn stop(child: &mut Child) {
    // SAFETY: kill has no memory preconditions; the pid is our own unreaped child's.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if child.try_wait().is_ok_and(|status| status.is_some()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Why this harness cannot run here, or `None` when it can.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "not root: slurmd runs as root to start each job as its user, and munged's key \
             must be root's"
                .into(),
        );
    }
    let missing: Vec<&str> = PROGRAMS
        .into_iter()
        .filter(|program| find_program(program).is_none())
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "Slurm or munge is not installed (no {}; Debian: apt-get install slurm-wlm munge)",
            missing.join(", ")
        ));
    }
    None
}

/// `program` on PATH or in /usr/sbin (where Debian puts the daemons, off a user's PATH).
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|directory| directory.join(program))
        .find(|candidate| candidate.is_file())
}

/// The machine's host name up to its first dot, which Slurm compares with SlurmctldHost and
/// NodeName.
fn short_host_name() -> String {
    let name =
        std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name is readable");
    name.trim()
        .split('.')
        .next()
        .filter(|name| !name.is_empty())
        .expect("the machine has a host name")
        .to_string()
}

/// A new directory `tlslab-slurm-PID-N` in the system's temporary directory, mode 0755:
/// munged refuses a socket whose directories are not open to all, and the socket's path must
/// stay under 108 bytes (a checkout's deep target directory may not).
fn make_directory() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    loop {
        let directory = std::env::temp_dir().join(format!(
            "{DIRECTORY_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::create_dir(&directory) {
            Ok(()) => {
                std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o755))
                    .unwrap();
                return directory;
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => panic!("creating {}: {error}", directory.display()),
        }
    }
}

/// Stops the daemons of test processes that ended without dropping their cluster (killed,
/// or interrupted), and removes their directories. A directory's process id tells whether its
/// test still runs; a daemon is one of its cluster's when its pid file is in the directory and
/// the process still names the directory in its environment (SLURM_CONF) or its arguments.
fn remove_abandoned_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIRECTORY_PREFIX)) else {
            continue;
        };
        let Some(owner) = rest.split('-').next().filter(|p| p.parse::<u32>().is_ok()) else {
            continue;
        };
        if Path::new("/proc").join(owner).exists() {
            continue;
        }
        let directory = entry.path();
        let marker = directory.display().to_string();
        for pid_file in ["slurmd.pid", "slurmctld.pid", "munge/munged.pid"] {
            let Some(pid) = std::fs::read_to_string(directory.join(pid_file))
                .ok()
                .and_then(|text| text.trim().parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            let process = Path::new("/proc").join(pid.to_string());
            let ours = ["environ", "cmdline"].iter().any(|part| {
                std::fs::read(process.join(part))
                    .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(&marker))
            });
            if ours {
                // SAFETY: kill has no memory preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let _ = std::fs::remove_dir_all(&directory);
    }
}

/// Panics with what `step` printed and the daemons' logs unless it succeeded.
fn expect_success(step: &str, output: &Output, slurm: &Slurm) {
    if output.status.success() {
        return;
    }
    panic!(
        "Slurm test cluster in {}: {step} failed ({})\nstdout:\n{}\nstderr:\n{}\n{}",
        slurm.directory.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        slurm.diagnostics()
    );
}
