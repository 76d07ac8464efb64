//! Reading the environment a run records (core's [`Environment`]): machine, kernel, and the
//! versions of the libraries that measure.

use tlslab_core::Environment;

/// The version of aws-lc-rs (rustls' crypto provider here) this build links, read from
/// Cargo.lock by `build.rs` ("unknown" outside the workspace).
pub const AWS_LC_RS_VERSION: &str = env!("TLSLAB_AWS_LC_RS_VERSION");

/// The version of aws-lc-sys, the crate that builds AWS-LC under aws-lc-rs, read the same way.
pub const AWS_LC_SYS_VERSION: &str = env!("TLSLAB_AWS_LC_SYS_VERSION");

/// The environment of this process, for a run of `tool_version` built from `commit`. The
/// rustls version is the one this build links (read from Cargo.lock by `build.rs`); the
/// OpenSSL version is the linked library's own.
pub fn capture(tool_version: &str, commit: &str) -> Environment {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    Environment {
        tool_version: tool_version.to_string(),
        commit: commit.to_string(),
        rustls_version: env!("TLSLAB_RUSTLS_VERSION").to_string(),
        crypto_provider: "aws-lc-rs".to_string(),
        openssl_version: Some(tlslab_openssl::openssl_version().to_string()),
        cpu_model,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: read("/proc/sys/kernel/osrelease"),
        hostname: read("/proc/sys/kernel/hostname"),
        network: "loopback (no emulation)".to_string(),
        // Filled by the run, once it has resolved its targets.
        name_resolution: Vec::new(),
        // Asking also keeps the kernel's receive timestamps on for the run's sockets.
        wire_clock: Some(tlslab_backend::wire::describe_clock()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_the_build_not_typed_in() {
        let environment = capture("1.2.3", "abc");
        assert!(
            environment.rustls_version.starts_with("0.23."),
            "{}",
            environment.rustls_version
        );
        assert!(environment
            .openssl_version
            .is_some_and(|version| version.starts_with("OpenSSL 4.")));
        assert!(environment.cores >= 1);
        assert!(AWS_LC_RS_VERSION.starts_with("1."), "{AWS_LC_RS_VERSION}");
        assert!(AWS_LC_SYS_VERSION.starts_with("0."), "{AWS_LC_SYS_VERSION}");
        assert_eq!(environment.tool_version, "1.2.3");
    }
}
