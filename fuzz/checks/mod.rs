//! What each fuzz target checks, as plain functions of the input bytes, so that the same
//! checks run under `cargo fuzz` (fuzz_targets/) and, on stable Rust, over the inputs that
//! once found a bug (`regressions/<target>/`, read by crates/tlslab/tests/fuzz_regressions.rs).
//! `bfe.rs` is not listed here: crates/tlslab does not depend on tlslab-bfe, so that crate's
//! own test (crates/tlslab-bfe/tests/fuzz_check.rs) runs it and its regressions.

pub mod capture;
pub mod experiment;
pub mod http_request;
pub mod http_response;
pub mod report;
pub mod sample_file;
pub mod scan_answer;
pub mod store;
pub mod values;
