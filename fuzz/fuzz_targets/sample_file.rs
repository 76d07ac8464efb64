//! The `sample_file` check (checks/sample_file.rs) under libFuzzer.
#![no_main]

#[path = "../checks/sample_file.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
