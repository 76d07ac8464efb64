//! The inputs that made a fuzz target fail once, run through the same checks on stable Rust
//! (fuzz/checks/), so a regression shows in `scripts/test` without nightly or sanitizers.

#[path = "../../../fuzz/checks/mod.rs"]
#[allow(dead_code)]
mod checks;

use std::path::Path;

type Check = fn(&[u8]);

const TARGETS: &[(&str, Check)] = &[
    ("experiment", checks::experiment::check),
    ("values", checks::values::check),
    ("http_response", checks::http_response::check),
    ("http_request", checks::http_request::check),
    ("sample_file", checks::sample_file::check),
    ("store", checks::store::check),
    ("report", checks::report::check),
    ("capture", checks::capture::check),
    ("scan_answer", checks::scan_answer::check),
];

#[test]
fn every_input_that_once_failed_now_passes_its_check() {
    let regressions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut checked = 0;
    for (target, check) in TARGETS {
        let Ok(entries) = std::fs::read_dir(regressions.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a readable directory entry").path();
            let bytes = std::fs::read(&path).expect("a readable regression input");
            println!("{target}: {}", path.display());
            check(&bytes);
            checked += 1;
        }
    }
    assert!(
        checked >= 2,
        "the kept regression inputs are found ({checked})"
    );
}

#[test]
fn every_check_accepts_trivial_inputs() {
    for (_, check) in TARGETS {
        for bytes in [&b""[..], b"\0", b"\xff\xff", b"[run]\nhandshakes = 1\n"] {
            check(bytes);
        }
    }
}
