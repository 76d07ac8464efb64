//! `speed`: what each cryptographic primitive of a handshake costs this machine, per backend
//! ([`tlslab_speed`] measures), with the machine and the build it was measured on, added to a
//! results store when asked (`--out`, like a scan: the store keeps its runs and scans).

use std::path::PathBuf;
use std::time::Duration;

pub use tlslab_speed::{Backend, Kind, Measurement, PRIMITIVES};

use crate::{files, Control, Invocation, WorkflowError};

/// The longest `--seconds` taken: the whole price list is about 150 operations per thread
/// count and backend, so a minute each would take hours.
pub const MAX_SECONDS: f64 = 60.0;

/// The most threads one measurement runs at once.
pub const MAX_THREADS: u32 = 1024;

/// What to measure, and where to store it.
#[derive(Debug, Clone)]
pub struct SpeedRequest {
    /// The backends, in the order to measure and print them.
    pub backends: Vec<Backend>,
    /// Thread counts, each measured apart.
    pub threads: Vec<u32>,
    /// Seconds each operation runs at each thread count.
    pub seconds: f64,
    /// Primitives, families or kinds to measure (`rsa2048`, `ecdsa`, `aead`); all when empty.
    pub primitives: Vec<String>,
    /// The results store the rows are added to: a file (made if missing), or a PostgreSQL
    /// database.
    pub out: Option<tlslab_store::Location>,
    /// Whether `out` may replace a file that is not a store (never a store).
    pub force: bool,
    /// Who measures: the version and the command line stored with the rows.
    pub invocation: Invocation,
}

/// The machine measured on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Machine {
    /// The CPU's model, from /proc/cpuinfo.
    pub cpu_model: String,
    /// The cores this process may run on.
    pub cores: usize,
}

/// What was measured.
#[derive(Debug, Clone)]
pub struct SpeedOutcome {
    /// Every row, in the order measured: per backend, per thread count, per primitive.
    pub rows: Vec<Measurement>,
    /// The machine.
    pub machine: Machine,
    /// The build: tlslab and every library's version, as stored.
    pub build: String,
    /// The store the rows were added to.
    pub stored: Option<tlslab_store::Location>,
    /// Whether a stop request cut the measurement short.
    pub stopped: bool,
}

/// Checks `request`, measures it (handing each row to `each` as it is done) and stores the
/// rows when asked. A stop request ends it after the operation in flight; what was measured
/// is returned and stored.
pub fn speed(
    request: &SpeedRequest,
    control: &Control,
    each: &mut dyn FnMut(&Measurement),
) -> Result<SpeedOutcome, WorkflowError> {
    let plan = plan(request)?;
    // Checked before measuring: minutes of measurement are not made to be thrown away.
    if let Some(location) = &request.out {
        if let Some(path) = location.path() {
            let output = files::Output::new("--out", path, files::Kind::Scans);
            let write = files::claim(&output, &[], request.force)?;
            files::make_room(path, write)?;
        }
        tlslab_store::check_scan_store(location).map_err(|source| WorkflowError::StoreCreate {
            path: PathBuf::from(location.to_string()),
            source,
        })?;
    }
    let slow: Vec<&str> = plan
        .primitives
        .iter()
        .map(|primitive| primitive.name)
        .filter(|name| ["rsa7680", "rsa15360", "dsa2048"].contains(name))
        .collect();
    if !slow.is_empty() {
        // Nothing is printed while OpenSSL searches for the primes.
        let longest = if slow.contains(&"rsa15360") {
            "a minute or more for rsa15360"
        } else {
            "seconds each"
        };
        control.notice(crate::Notice::Warning(format!(
            "the keys of {} are made first, once per process: {longest}",
            slow.join(", ")
        )));
    }
    let started_unix_ns = crate::now_unix_ns();
    let environment = tlslab_engine::environment::capture(
        &request.invocation.version,
        &request.invocation.commit,
    );
    let library = |backend: Backend| match backend {
        Backend::Rustls => format!(
            "aws-lc-rs {} (aws-lc-sys {}) under rustls {}",
            tlslab_engine::environment::AWS_LC_RS_VERSION,
            tlslab_engine::environment::AWS_LC_SYS_VERSION,
            environment.rustls_version
        ),
        Backend::Openssl => backend.library(),
    };
    let mut rows = tlslab_speed::measure(&plan, &|| control.stop.is_requested(), &mut |row| {
        let mut row = row.clone();
        row.library = library(row.backend);
        each(&row);
    });
    for row in &mut rows {
        row.library = library(row.backend);
    }
    let machine = Machine {
        cpu_model: environment.cpu_model.clone(),
        cores: environment.cores,
    };
    let build = format!(
        "tlslab {} (commit {}); rustls {}; aws-lc-rs {} (aws-lc-sys {}); {}",
        request.invocation.version,
        request.invocation.commit,
        environment.rustls_version,
        tlslab_engine::environment::AWS_LC_RS_VERSION,
        tlslab_engine::environment::AWS_LC_SYS_VERSION,
        environment
            .openssl_version
            .as_deref()
            .unwrap_or("OpenSSL: not linked")
    );
    if let Some(location) = &request.out {
        store(
            location,
            &rows,
            started_unix_ns,
            &machine,
            &build,
            &request.invocation,
        )?;
    }
    Ok(SpeedOutcome {
        rows,
        machine,
        build,
        stored: request.out.clone(),
        stopped: control.stop.is_requested(),
    })
}

/// The request as a measuring plan, or what is wrong with it.
fn plan(request: &SpeedRequest) -> Result<tlslab_speed::Plan, WorkflowError> {
    if !(request.seconds > 0.0 && request.seconds <= MAX_SECONDS) {
        return Err(WorkflowError::usage(
            format!("--seconds {}: not between 0 and {MAX_SECONDS}", request.seconds),
            "for example --seconds 1 (each operation, each thread count), or --seconds 0.05 for a quick look",
        ));
    }
    if let Some(threads) = request
        .threads
        .iter()
        .find(|&&threads| threads == 0 || threads > MAX_THREADS)
    {
        return Err(WorkflowError::usage(
            format!("--threads {threads}: not between 1 and {MAX_THREADS}"),
            "for example --threads 1,4 (one thread, then four at once)",
        ));
    }
    if request.backends.is_empty() || request.threads.is_empty() {
        return Err(WorkflowError::usage(
            "nothing to measure: no backend or no thread count",
            "give --backend rustls,openssl and --threads 1",
        ));
    }
    let primitives = tlslab_speed::select(&request.primitives).map_err(|unknown| {
        let mut names: Vec<&str> = PRIMITIVES.iter().map(|primitive| primitive.name).collect();
        names.dedup();
        WorkflowError::usage(
            unknown.to_string(),
            format!(
                "name primitives ({}), families (rsa, dsa, ecdsa, mldsa, mlkem, ffdhe, hkdf) or kinds (signature, key_exchange, kem, hybrid, aead, hkdf)",
                names.join(", ")
            ),
        )
    })?;
    let mut backends = request.backends.clone();
    backends.dedup();
    let mut threads = request.threads.clone();
    threads.dedup();
    Ok(tlslab_speed::Plan {
        backends,
        threads,
        duration: Duration::from_secs_f64(request.seconds),
        primitives,
    })
}

/// Adds the rows to the results store at `location`, each with the machine and the build.
fn store(
    location: &tlslab_store::Location,
    rows: &[Measurement],
    started_unix_ns: u64,
    machine: &Machine,
    build: &str,
    invocation: &Invocation,
) -> Result<(), WorkflowError> {
    let command_line = invocation.stored_command_line();
    let stored: Vec<tlslab_store::NewSpeed> = rows
        .iter()
        .map(|row| tlslab_store::NewSpeed {
            measured_at_unix_ns: started_unix_ns,
            tool_version: invocation.version.clone(),
            command_line: command_line.clone(),
            cpu_model: machine.cpu_model.clone(),
            cores: machine.cores as u64,
            build: build.to_string(),
            backend: row.backend.name().to_string(),
            library: row.library.clone(),
            kind: row.kind.name().to_string(),
            primitive: row.primitive.to_string(),
            operation: row.operation.to_string(),
            bytes: row.bytes,
            threads: u64::from(row.threads),
            operations: row.operations,
            seconds: row.seconds,
            per_second: row.per_second,
            seconds_per_operation: row.seconds_per_operation,
            cpu_seconds_per_operation: row.cpu_seconds_per_operation,
            supported: row.supported,
            note: row.note.clone(),
        })
        .collect();
    tlslab_store::add_speed_at(location, &stored)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(primitives: &[&str], out: Option<PathBuf>) -> SpeedRequest {
        SpeedRequest {
            backends: Backend::ALL.to_vec(),
            threads: vec![1, 2],
            seconds: 0.01,
            primitives: primitives.iter().map(|word| word.to_string()).collect(),
            out: out.map(tlslab_store::Location::File),
            force: false,
            invocation: Invocation::new("tlslab", "0.1.0-test"),
        }
    }

    #[test]
    fn a_price_list_is_measured_per_backend_and_thread_count_and_stored_with_machine_and_build() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("speed.db");
        let mut seen = 0;
        let outcome = speed(
            &request(&["rsa2048", "ed448"], Some(path.clone())),
            &Control::default(),
            &mut |_| seen += 1,
        )
        .unwrap();
        // Two operations of two primitives, on two backends at two thread counts.
        assert_eq!(outcome.rows.len(), 16);
        assert_eq!(seen, 16);
        let row = |backend, primitive, operation, threads| {
            outcome
                .rows
                .iter()
                .find(|row| {
                    row.backend == backend
                        && row.primitive == primitive
                        && row.operation == operation
                        && row.threads == threads
                })
                .unwrap()
        };
        for backend in Backend::ALL {
            // A public-key operation against a private one: orders of magnitude apart.
            // CPU time per operation: other work on the machine does not stretch it.
            let sign = row(backend, "rsa2048", "sign", 1)
                .cpu_seconds_per_operation
                .unwrap();
            let verify = row(backend, "rsa2048", "verify", 1)
                .cpu_seconds_per_operation
                .unwrap();
            assert!(
                sign > 3.0 * verify,
                "{backend:?}: {sign} s against {verify} s"
            );
        }
        let missing = row(Backend::Rustls, "ed448", "sign", 2);
        assert!(!missing.supported && missing.per_second.is_none());
        assert!(missing.note.as_deref().unwrap().contains("Ed448"));
        assert!(row(Backend::Rustls, "rsa2048", "sign", 1)
            .library
            .starts_with("aws-lc-rs 1."));
        assert!(row(Backend::Openssl, "rsa2048", "sign", 1)
            .library
            .starts_with("OpenSSL 4."));
        assert!(outcome.build.contains("aws-lc-rs") && outcome.build.contains("OpenSSL 4."));

        // Stored, with the machine and the build on every row; a second measurement adds.
        let store = tlslab_store::Store::open(&path).unwrap();
        let stored = store.speed().unwrap();
        assert_eq!(stored.len(), 16);
        assert!(stored.iter().all(|row| row.speed.build == outcome.build
            && row.speed.cpu_model == outcome.machine.cpu_model
            && row.speed.cores == outcome.machine.cores as u64));
        let unsupported = stored
            .iter()
            .filter(|row| !row.speed.supported)
            .map(|row| (row.speed.backend.as_str(), row.speed.primitive.as_str()))
            .collect::<Vec<_>>();
        assert_eq!(unsupported, [("rustls", "ed448"); 4]);
        drop(store);
        speed(
            &request(&["hkdf-sha256"], Some(path.clone())),
            &Control::default(),
            &mut |_| {},
        )
        .unwrap();
        let store = tlslab_store::Store::open(&path).unwrap();
        assert_eq!(store.speed().unwrap().len(), 16 + 8);
    }

    #[test]
    fn a_request_that_cannot_work_is_refused_before_measuring() {
        let refused = |request: SpeedRequest| {
            speed(&request, &Control::default(), &mut |_| panic!("measured"))
                .unwrap_err()
                .to_string()
        };
        assert!(refused(request(&["rsa2049"], None)).contains("rsa2049: no such primitive"));
        assert!(refused(SpeedRequest {
            seconds: 0.0,
            ..request(&[], None)
        })
        .contains("--seconds 0"));
        assert!(refused(SpeedRequest {
            threads: vec![1, 0],
            ..request(&[], None)
        })
        .contains("--threads 0"));
    }
}
