//! End-to-end: handshakes through tunnels that the test makes with `ip link` between two
//! network namespaces joined by a veth pair (the underlay). An active `tlslab run` in one
//! namespace measures a lab server (`tlslab serve`) in the other through the tunnel, while
//! tcpdump captures on the underlay (every packet encapsulated) and on the tunnel device
//! (the packets inside) at once; `tlslab pcap` of either capture finds the same handshakes,
//! with the same negotiated parameters, as the run itself.
//!
//! Needs root and iproute2; a tunnel type the kernel lacks (its module absent) is skipped
//! with the reason printed, as are all of them without root or tcpdump.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use support::*;

/// A child process killed (and waited for) when the test ends, however it ends.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Two network namespaces, deleted (with their devices) on drop.
struct Namespaces {
    client: String,
    server: String,
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for namespace in [&self.client, &self.server] {
            let _ = Command::new("ip")
                .args(["netns", "delete", namespace])
                .status();
        }
    }
}

/// `ip ARGS...`, failing the test with ip's own message when it fails.
fn ip(args: &[&str]) {
    let output = Command::new("ip").args(args).output().unwrap();
    assert!(
        output.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A tunnel between the namespaces: its name for the test, the `ip link add … type …`
/// arguments of each end (before `remote`/`local`), and the inner addresses' family.
struct Kind {
    name: &'static str,
    link: &'static [&'static str],
    /// The inner network is IPv6 (sit: IPv6 in IPv4).
    inner_ipv6: bool,
    /// What `tlslab pcap` calls the encapsulation on the underlay.
    shown_as: &'static str,
}

/// The client namespace's underlay and inner addresses are `.1`, the server's `.2`.
const UNDERLAY: &str = "10.203.0";
const INNER: &str = "10.204.0";
const INNER_IPV6: &str = "fd00:204::";

/// Makes the namespaces, the underlay and the tunnel; `None` (with the reason printed) when
/// the kernel has no such tunnel.
fn tunnel(kind: &Kind) -> Option<Namespaces> {
    let suffix = format!("{}{}", kind.name, std::process::id());
    let namespaces = Namespaces {
        client: format!("tlslab-tc-{suffix}"),
        server: format!("tlslab-ts-{suffix}"),
    };
    for namespace in [&namespaces.client, &namespaces.server] {
        ip(&["netns", "add", namespace]);
        ip(&["-n", namespace, "link", "set", "lo", "up"]);
    }
    ip(&[
        "link",
        "add",
        "tlslab-under",
        "netns",
        &namespaces.client,
        "type",
        "veth",
        "peer",
        "name",
        "tlslab-under",
        "netns",
        &namespaces.server,
    ]);
    for (namespace, own, other) in [
        (&namespaces.client, "1", "2"),
        (&namespaces.server, "2", "1"),
    ] {
        let local = format!("{UNDERLAY}.{own}");
        let remote = format!("{UNDERLAY}.{other}");
        ip(&[
            "-n",
            namespace,
            "addr",
            "add",
            &format!("{local}/24"),
            "dev",
            "tlslab-under",
        ]);
        ip(&["-n", namespace, "link", "set", "tlslab-under", "up"]);
        let mut add = vec![
            "-n",
            namespace.as_str(),
            "link",
            "add",
            "tlslab-tun",
            "type",
        ];
        add.extend(kind.link);
        add.extend(["remote", &remote]);
        // Geneve takes no local address.
        if kind.name != "geneve" {
            add.extend(["local", &local]);
        }
        let output = Command::new("ip").args(&add).output().unwrap();
        if !output.status.success() {
            println!(
                "skipped {}: the kernel cannot make it (ip {}: {})",
                kind.name,
                add.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            );
            return None;
        }
        // Below every underlay's MTU less the largest of these headers (Geneve over IPv4
        // with an inner Ethernet header: 50 bytes).
        ip(&[
            "-n",
            namespace,
            "link",
            "set",
            "tlslab-tun",
            "mtu",
            "1400",
            "up",
        ]);
        let inner = if kind.inner_ipv6 {
            format!("{INNER_IPV6}{own}/64")
        } else {
            format!("{INNER}.{own}/24")
        };
        let mut address = vec!["-n", namespace.as_str(), "addr", "add", &inner];
        if kind.inner_ipv6 {
            address.push("nodad");
        }
        address.extend(["dev", "tlslab-tun"]);
        ip(&address);
    }
    Some(namespaces)
}

/// Handshakes by transport, outcome and what they negotiated, for every sample of `db`
/// (a passive store) or its measured ones (an active store: warm-up excluded).
fn handshakes(db: &Path) -> Vec<(String, i64)> {
    rows::<(String, i64)>(
        db,
        "SELECT c.transport || ' ' || s.outcome || ' ' || COALESCE(s.version, '-') || ' ' \
         || COALESCE(s.suite, '-') || ' ' || COALESCE(s.\"group\", '-'), COUNT(*) \
         FROM samples s JOIN configs c ON c.id = s.config_id WHERE s.warmup = 0 \
         GROUP BY 1 ORDER BY 1",
        [],
    )
}

/// TLS 1.2 and 1.3 over TCP and QUIC through the tunnel of `kind`, captured on the underlay
/// and inside the tunnel: both captures give the run's handshakes.
fn handshakes_agree_through(kind: &Kind) {
    require_emulation!();
    let Some(namespaces) = tunnel(kind) else {
        return;
    };
    let dir = scratch(&format!("tunnel-{}", kind.name));
    let host = if kind.inner_ipv6 {
        format!("[{INNER_IPV6}2]")
    } else {
        format!("{INNER}.2")
    };
    let target = format!("{host}:8443");
    let _lab = Stopped(
        tlslab_in(&namespaces.server, &["serve", "--listen", &target])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let bash_host = host.trim_start_matches('[').trim_end_matches(']');
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !Command::new("ip")
        .args(["netns", "exec", &namespaces.client, "bash", "-c"])
        .arg(format!("exec 3<>/dev/tcp/{bash_host}/8443"))
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the lab server did not answer through the {} tunnel",
            kind.name
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let client = Some(namespaces.client.as_str());
    let Some(underlay) = tcpdump_in(client, "tlslab-under", &dir, "underlay", "") else {
        return;
    };
    let Some(inside) = tcpdump_in(client, "tlslab-tun", &dir, "inside", "") else {
        return;
    };
    let run = |options: &[&str], db: &Path| {
        let output = tlslab_in(
            &namespaces.client,
            &["run", "--target", &target, "--insecure"],
        )
        .args(options)
        .args(["-n", "5", "--warmup", "0", "--out", db.to_str().unwrap()])
        .output()
        .unwrap();
        assert_success(&output);
    };
    let (tcp, quic) = (dir.join("tcp.db"), dir.join("quic.db"));
    run(&["--tls", "1.2,1.3"], &tcp);
    run(&["--transport", "quic"], &quic);
    let (underlay, inside) = (underlay.stop(), inside.stop());
    let read = |file: &PathBuf| {
        let db = file.with_extension("db");
        let output = tlslab(&[
            "pcap",
            file.to_str().unwrap(),
            "--out",
            db.to_str().unwrap(),
        ]);
        (assert_success(&output), db)
    };
    let ((underlay_summary, underlay), (_, inside)) = (read(&underlay), read(&inside));
    let mut active = handshakes(&tcp);
    active.extend(handshakes(&quic));
    active.sort();
    let total: i64 = active.iter().map(|(_, count)| count).sum();
    assert_eq!(total, 15, "{}: {active:?}", kind.name);
    assert!(
        active.iter().all(|(key, _)| key.contains(" ok ")),
        "{}: {active:?}",
        kind.name
    );
    assert_eq!(
        handshakes(&inside),
        active,
        "{}: inside the tunnel",
        kind.name
    );
    assert!(
        underlay_summary.contains(&format!("through {}: ", kind.shown_as)),
        "{}: {underlay_summary}",
        kind.name
    );
    assert_eq!(
        handshakes(&underlay),
        active,
        "{}: on the underlay\n{underlay_summary}",
        kind.name
    );
}

#[test]
fn handshakes_through_vxlan_are_found_on_its_underlay() {
    handshakes_agree_through(&Kind {
        name: "vxlan",
        shown_as: "VXLAN",
        link: &[
            "vxlan",
            "id",
            "42",
            "dstport",
            "4789",
            "dev",
            "tlslab-under",
        ],
        inner_ipv6: false,
    });
}

#[test]
fn handshakes_through_gre_are_found_on_its_underlay() {
    handshakes_agree_through(&Kind {
        name: "gre",
        shown_as: "GRE",
        link: &["gre", "key", "7"],
        inner_ipv6: false,
    });
}

#[test]
fn handshakes_through_gretap_are_found_on_its_underlay() {
    handshakes_agree_through(&Kind {
        name: "gretap",
        shown_as: "GRE",
        link: &["gretap"],
        inner_ipv6: false,
    });
}

#[test]
fn handshakes_through_geneve_are_found_on_its_underlay() {
    handshakes_agree_through(&Kind {
        name: "geneve",
        shown_as: "Geneve",
        link: &["geneve", "id", "7"],
        inner_ipv6: false,
    });
}

#[test]
fn handshakes_through_ip_in_ip_are_found_on_its_underlay() {
    handshakes_agree_through(&Kind {
        name: "ipip",
        shown_as: "IP in IP",
        link: &["ipip"],
        inner_ipv6: false,
    });
}

#[test]
fn handshakes_through_ipv6_in_ipv4_are_found_on_its_underlay() {
    handshakes_agree_through(&Kind {
        name: "sit",
        shown_as: "IP in IP",
        link: &["sit"],
        inner_ipv6: true,
    });
}
