//! The `capture` check (checks/capture.rs) under libFuzzer.
#![no_main]

#[path = "../checks/capture.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
