//! Builds OpenSSL from the sources vendored in `openssl-src` and prints where it installed
//! the headers and static libraries.
//!
//! `openssl-src` is meant to run inside a build script, where cargo provides `TARGET`,
//! `HOST` and `OUT_DIR`. Running it from a plain binary instead lets `scripts/openssl` build
//! OpenSSL once per machine into a directory outside any cargo build tree, so neither
//! `cargo clean` nor a changed feature set in the workspace ever rebuilds it.
//!
//! Usage: `tlslab-openssl-build <scratch directory>` with `TARGET` and `HOST` set to the
//! Rust target triple (the `cc` crate that `openssl-src` uses reads them too).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(scratch) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: tlslab-openssl-build <scratch directory>");
        return ExitCode::from(2);
    };
    let (Ok(target), Ok(host)) = (std::env::var("TARGET"), std::env::var("HOST")) else {
        eprintln!("TARGET and HOST must name the Rust target triple");
        return ExitCode::from(2);
    };
    // openssl-src passes its output through cargo's build-script protocol on stdout; keep
    // stdout for the one line the script reads.
    let artifacts = match openssl_src::Build::new()
        .out_dir(&scratch)
        .target(&target)
        .host(&host)
        .try_build()
    {
        Ok(artifacts) => artifacts,
        Err(error) => {
            eprintln!(
                "building OpenSSL {} failed: {error}",
                openssl_src::version()
            );
            return ExitCode::FAILURE;
        }
    };
    // `install/include` and `install/lib` share a parent: that is the OPENSSL_DIR layout.
    let install = artifacts
        .include_dir()
        .parent()
        .expect("the include directory lies inside the install directory");
    println!("{}", install.display());
    ExitCode::SUCCESS
}
