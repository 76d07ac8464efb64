//! The `bfe` check (checks/bfe.rs) under libFuzzer.
#![no_main]

#[path = "../checks/bfe.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
