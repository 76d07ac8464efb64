//! Network namespaces joined to the test's by veth pairs: each a machine of its own, with
//! its own address, for the tests of several processes on one network (capture points,
//! agents). Needs root.

use std::process::Command;

use super::tlslab_in;

/// A network namespace joined to this one by a veth pair, removed (with its pair) when the
/// test ends however it ends.
pub struct VethNamespace {
    pub namespace: String,
    /// The veth end inside the namespace: what its capture agent watches.
    pub inside: String,
    /// The host's address on the pair.
    pub host: String,
}

impl VethNamespace {
    /// Namespace `number` of a test's set: its names begin with `prefix` (two letters) and
    /// the process id, its pair has `SUBNET.number.1` (the host) and `.2` (inside).
    pub fn create(prefix: &str, subnet: &str, number: u8) -> VethNamespace {
        let tag = format!("{}{number}", std::process::id() % 100_000);
        let point = VethNamespace {
            namespace: format!("tlslab-{prefix}{tag}"),
            inside: format!("{prefix}n{tag}"),
            host: format!("{subnet}.{number}.1"),
        };
        let outside = format!("{prefix}h{tag}");
        let inside_address = format!("{subnet}.{number}.2/24");
        let host_address = format!("{}/24", point.host);
        let steps: [&[&str]; 8] = [
            &["netns", "add", &point.namespace],
            &[
                "link",
                "add",
                &outside,
                "type",
                "veth",
                "peer",
                "name",
                &point.inside,
            ],
            &["link", "set", &point.inside, "netns", &point.namespace],
            &["addr", "add", &host_address, "dev", &outside],
            &["link", "set", &outside, "up"],
            &[
                "-n",
                &point.namespace,
                "addr",
                "add",
                &inside_address,
                "dev",
                &point.inside,
            ],
            &["-n", &point.namespace, "link", "set", &point.inside, "up"],
            &["-n", &point.namespace, "link", "set", "lo", "up"],
        ];
        for step in steps {
            let status = Command::new("ip").args(step).status().unwrap();
            assert!(status.success(), "ip {}", step.join(" "));
        }
        point
    }

    /// `ip netns exec NAMESPACE tlslab ARGS...`, on the shared PKI cache.
    pub fn tlslab(&self, args: &[&str]) -> Command {
        tlslab_in(&self.namespace, args)
    }
}

impl Drop for VethNamespace {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth end in it, and so its pair.
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.namespace])
            .status();
    }
}
