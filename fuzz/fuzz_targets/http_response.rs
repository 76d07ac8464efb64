//! The `http_response` check (checks/http_response.rs) under libFuzzer.
#![no_main]

#[path = "../checks/http_response.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| check::check(bytes));
