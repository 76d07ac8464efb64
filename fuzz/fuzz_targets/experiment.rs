//! The `experiment` check (checks/experiment.rs) under libFuzzer.
#![no_main]

#[path = "../checks/experiment.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
