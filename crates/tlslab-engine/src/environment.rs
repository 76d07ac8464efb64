//! The environment a run records: tool and library versions, machine, kernel.

use serde::Serialize;

/// What a reader of the results needs to know about where they were measured.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Environment {
    pub tool_version: String,
    pub commit: String,
    pub rustls_version: String,
    pub crypto_provider: String,
    /// The linked OpenSSL (`OpenSSL 4.0.3 …`), which the openssl backend measures.
    pub openssl_version: String,
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub hostname: String,
    pub network: String,
}

impl Environment {
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
            rustls_version: "0.23.46".to_string(),
            crypto_provider: "aws-lc-rs".to_string(),
            openssl_version: tlslab_openssl::openssl_version().to_string(),
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: read("/proc/sys/kernel/osrelease"),
            hostname: read("/proc/sys/kernel/hostname"),
            network: "loopback (no emulation)".to_string(),
        }
    }
}
