// Reads the versions of the TLS libraries this build links from the workspace's Cargo.lock,
// so each run's environment record names what measured instead of a version typed in by
// hand that could go stale. Where no lock file is found (a packaged crate), "unknown".

use std::path::Path;

fn main() {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let packages = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|table| table.get("package").and_then(|p| p.as_array()).cloned())
        .unwrap_or_default();
    for (crate_name, variable) in [
        ("rustls", "TLSLAB_RUSTLS_VERSION"),
        ("aws-lc-rs", "TLSLAB_AWS_LC_RS_VERSION"),
        ("aws-lc-sys", "TLSLAB_AWS_LC_SYS_VERSION"),
        ("quinn", "TLSLAB_QUINN_VERSION"),
    ] {
        let version = packages
            .iter()
            .find(|package| package.get("name").and_then(|n| n.as_str()) == Some(crate_name))
            .and_then(|package| package.get("version").and_then(|v| v.as_str()))
            .unwrap_or("unknown");
        println!("cargo:rustc-env={variable}={version}");
    }
}
