//! The `values` check (checks/values.rs) under libFuzzer.
#![no_main]

#[path = "../checks/values.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
