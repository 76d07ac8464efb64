//! Empty on purpose: this crate exists for its dependency on `nginx-src` (see Cargo.toml and
//! scripts/nginx), and is never built.
