//! The `scan_answer` check (checks/scan_answer.rs) under libFuzzer.
#![no_main]

#[path = "../checks/scan_answer.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
