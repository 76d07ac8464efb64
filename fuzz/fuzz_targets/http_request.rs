//! The `http_request` check (checks/http_request.rs) under libFuzzer.
#![no_main]

#[path = "../checks/http_request.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
