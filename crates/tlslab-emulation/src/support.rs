//! The emulator kinds, what this machine supports, and choosing among them.

use crate::namespace::{self, Namespace};
use crate::{tool, tun, EmulationError};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// How the network is emulated, from highest fidelity to lowest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmulatorKind {
    /// The kernel's netem qdisc on a veth pair between two namespaces.
    Netem,
    /// TUN devices in two namespaces and a userspace packet forwarder between them.
    Tun,
    /// A userspace TCP relay on 127.0.0.1: unprivileged, delay only, lower fidelity.
    Relay,
}

impl EmulatorKind {
    /// In order of preference.
    pub const ALL: [EmulatorKind; 3] =
        [EmulatorKind::Netem, EmulatorKind::Tun, EmulatorKind::Relay];

    /// The emulator's spelling in `--emulator` and in the run's record.
    pub fn as_str(self) -> &'static str {
        match self {
            EmulatorKind::Netem => "netem",
            EmulatorKind::Tun => "tun",
            EmulatorKind::Relay => "relay",
        }
    }
}

impl fmt::Display for EmulatorKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for EmulatorKind {
    type Err = EmulationError;

    fn from_str(text: &str) -> Result<EmulatorKind, EmulationError> {
        EmulatorKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| {
                EmulationError::new(
                    format!("unknown emulator '{text}'"),
                    "use one of: netem, tun, relay",
                )
            })
    }
}

/// What the user asked for: a specific emulator, or the best one this machine runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EmulatorChoice {
    #[default]
    /// The best emulator this machine supports, in the order of [`EmulatorKind::ALL`].
    Auto,
    /// This emulator, or an error saying why it cannot run here.
    Kind(EmulatorKind),
}

impl FromStr for EmulatorChoice {
    type Err = EmulationError;

    /// "auto" or an emulator kind.
    fn from_str(text: &str) -> Result<EmulatorChoice, EmulationError> {
        if text == "auto" {
            return Ok(EmulatorChoice::Auto);
        }
        text.parse().map(EmulatorChoice::Kind).map_err(|_| {
            EmulationError::new(
                format!("unknown emulator '{text}'"),
                "use one of: auto, netem, tun, relay",
            )
        })
    }
}

/// Why an emulator cannot run: the reason, and the fix specific to it.
#[derive(Clone, Debug)]
struct Missing {
    reason: String,
    fix: String,
}

struct Support {
    netem: Result<(), Missing>,
    tun: Result<(), Missing>,
}

/// Probed once per process: the probe creates a namespace, and the answer cannot change.
fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe)
}

/// Bits of CapEff in /proc/self/status.
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

fn effective_capabilities() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0)
}

/// Whether this process holds what namespaces and TUN devices need (root normally does).
pub(crate) fn has_network_privileges() -> bool {
    let capabilities = effective_capabilities();
    capabilities & (1 << CAP_NET_ADMIN) != 0 && capabilities & (1 << CAP_SYS_ADMIN) != 0
}

fn probe() -> Support {
    let both = |missing: Missing| Support {
        netem: Err(missing.clone()),
        tun: Err(missing),
    };
    if !has_network_privileges() {
        return both(Missing {
            reason: "this process lacks CAP_NET_ADMIN and CAP_SYS_ADMIN".into(),
            fix: "run as root (CAP_NET_ADMIN and CAP_SYS_ADMIN are needed)".into(),
        });
    }
    // A throwaway namespace answers for everything at once: whether namespaces can be made,
    // whether a TUN device can be made in one, and whether the kernel has netem (tried on the
    // namespace's own loopback, which exists even without the dummy or veth modules).
    static PROBES: AtomicU32 = AtomicU32::new(0);
    let run_id = format!("probe{}", PROBES.fetch_add(1, Ordering::Relaxed));
    let name = namespace::name(std::process::id(), &run_id, "probe");
    let mut probe = match Namespace::create(name) {
        Ok(probe) => probe,
        Err(error) => {
            return both(Missing {
                reason: format!("network namespaces are unavailable ({error})"),
                fix: error.hint,
            })
        }
    };
    let tun = match probe.run_inside(|| tun::open_device("tlprobe").map(drop)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) | Err(error) => Err(Missing {
            reason: format!("a TUN device cannot be created ({error})"),
            fix: "load the tun module (modprobe tun) so /dev/net/tun works".into(),
        }),
    };
    let netem = tool::run(
        "tc",
        &[
            "-n",
            probe.name(),
            "qdisc",
            "add",
            "dev",
            "lo",
            "root",
            "netem",
            "delay",
            "1ms",
        ],
    )
    .map(drop)
    .map_err(|error| {
        let reason = if error.message.contains("qdisc kind is unknown") {
            "the kernel has no netem qdisc (module sch_netem)".to_string()
        } else {
            format!("a netem qdisc cannot be added ({error})")
        };
        Missing {
            reason,
            fix: "load sch_netem (modprobe sch_netem; some distributions ship it in \
                  linux-modules-extra)"
                .into(),
        }
    });
    let _ = probe.remove();
    Support { netem, tun }
}

fn missing(kind: EmulatorKind) -> Option<&'static Missing> {
    let support = support();
    match kind {
        EmulatorKind::Netem => support.netem.as_ref().err(),
        EmulatorKind::Tun => support.tun.as_ref().err(),
        EmulatorKind::Relay => None,
    }
}

/// Whether `kind` can run on this machine, and if not, why and what to do. The first call
/// probes (with a throwaway namespace); later calls answer from memory.
pub fn available(kind: EmulatorKind) -> Result<(), EmulationError> {
    let Some(missing) = missing(kind) else {
        return Ok(());
    };
    let alternatives: Vec<String> = EmulatorKind::ALL
        .into_iter()
        .filter(|&other| other != kind && self::missing(other).is_none())
        .map(|other| format!("--emulator {other}"))
        .collect();
    let fix = &missing.fix;
    Err(EmulationError::new(
        format!("the {kind} emulator cannot run here: {}", missing.reason),
        format!("{fix}; or use {} (can run here)", alternatives.join(" or ")),
    ))
}

/// Picks the emulator: `Auto` takes the best that runs here (netem, then tun, then relay); an
/// explicit kind is checked, and the error's hint names the alternatives that can run.
pub fn choose(choice: EmulatorChoice) -> Result<EmulatorKind, EmulationError> {
    match choice {
        EmulatorChoice::Kind(kind) => available(kind).map(|()| kind),
        EmulatorChoice::Auto => Ok(EmulatorKind::ALL
            .into_iter()
            .find(|&kind| missing(kind).is_none())
            .unwrap_or(EmulatorKind::Relay)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_text() {
        for kind in EmulatorKind::ALL {
            assert_eq!(kind.as_str().parse::<EmulatorKind>(), Ok(kind));
            assert_eq!(
                kind.as_str().parse::<EmulatorChoice>(),
                Ok(EmulatorChoice::Kind(kind))
            );
        }
        assert_eq!("auto".parse::<EmulatorChoice>(), Ok(EmulatorChoice::Auto));
        assert!("wire".parse::<EmulatorKind>().is_err());
    }

    #[test]
    fn relay_always_runs() {
        assert_eq!(
            choose(EmulatorChoice::Kind(EmulatorKind::Relay)),
            Ok(EmulatorKind::Relay)
        );
    }
}
