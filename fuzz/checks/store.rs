//! A results store, as any bytes: opening it (with recovery), reading its run, Configs,
//! phases, outcomes and timelines, and exporting it give results or an error with a hint,
//! never a panic. (What the reports make of a store is the `report` target's.)

use std::path::PathBuf;
use std::sync::OnceLock;

use tlslab_store::{export, ExportFormat, Store};

/// One file per fuzzing process, on a memory file system when there is one.
fn path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let directory = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        directory.join(format!("tlslab-fuzz-store-{}.db", std::process::id()))
    })
}

/// `bytes` as a store file, opened; `None` when it is not one.
pub fn open(bytes: &[u8]) -> Option<Store> {
    let path = path();
    for suffix in ["", "-wal", "-shm", "-journal", "-reserve"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
    std::fs::write(path, bytes).ok()?;
    Store::open(path).ok()
}

pub fn check(bytes: &[u8]) {
    let Some(store) = open(bytes) else {
        return;
    };
    let _ = store.run();
    let _ = store.timelines();
    if let Ok(configs) = store.configs() {
        for config in configs.iter().take(4) {
            let _ = store.phase_values(config.id, "handshake");
            let _ = store.outcome_counts(config.id);
            let _ = store.trial_totals(config.id);
        }
    }
    let _ = export(&store, ExportFormat::JsonLines, &mut std::io::sink());
}
