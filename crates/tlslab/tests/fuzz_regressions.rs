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

#[test]
fn every_example_experiment_passes_the_experiment_check() {
    // The examples seed the experiment target's corpus, so a check they fail would fail the
    // first second of every fuzz round (as examples/explicit-configs.toml once did, when a
    // dump of tables without a matrix learnt to say `matrix = false`).
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(examples).expect("the examples directory") {
        let path = entry.expect("a readable directory entry").path();
        if path
            .extension()
            .is_some_and(|extension| extension == "toml")
        {
            println!("{}", path.display());
            checks::experiment::check(&std::fs::read(&path).expect("a readable example"));
            checked += 1;
        }
    }
    assert!(checked >= 5, "the examples are found ({checked})");
}
