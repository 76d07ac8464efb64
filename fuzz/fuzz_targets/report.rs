//! The `report` check (checks/report.rs) under libFuzzer.
#![no_main]

#[path = "../checks/report.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
