//! The `store` check (checks/store.rs) under libFuzzer.
#![no_main]

#[path = "../checks/store.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
