//! Name resolution as a run records it: `--resolve HOST:PORT:ADDR` pins (curl's syntax),
//! and what a resolution found ([`NameResolution`], kept in the run's environment). Parsed
//! here, where every value a user gives is checked; the engine resolves.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dimension::InvalidValue;

/// `--resolve HOST:PORT:ADDR`: connections to HOST on PORT go to ADDR, and no DNS query is
/// made for that name and port. ADDR is IPv4, or IPv6 in brackets; several addresses are
/// separated by commas, as curl takes them: the first is preferred, the others are where an
/// attempt goes when it refuses (the engine's `connect_first`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PinnedAddress {
    /// The name, as the target gives it.
    pub host: String,
    /// The target's port.
    pub port: u16,
    /// Where it goes instead: the first preferred, the others when it refuses.
    pub addresses: Vec<IpAddr>,
}

impl PinnedAddress {
    /// Whether this pin answers for the target `host:port` (names compare as DNS does,
    /// without regard to case or a trailing dot).
    pub fn answers(&self, host: &str, port: u16) -> bool {
        let plain = |name: &str| name.trim_end_matches('.').to_ascii_lowercase();
        self.port == port && plain(&self.host) == plain(host)
    }

    /// The addresses to connect to, with the pinned port.
    pub fn socket_addresses(&self) -> Vec<SocketAddr> {
        self.addresses
            .iter()
            .map(|address| SocketAddr::new(*address, self.port))
            .collect()
    }
}

/// One address of a pin: `192.0.2.1`, or `[2001:db8::1]` (brackets required, so the colons
/// of an IPv6 address are never mistaken for separators; curl writes them so too).
fn address(text: &str) -> Result<IpAddr, InvalidValue> {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix('[') {
        return inner
            .strip_suffix(']')
            .and_then(|inner| inner.parse::<std::net::Ipv6Addr>().ok())
            .map(IpAddr::V6)
            .ok_or_else(|| {
                InvalidValue::new(format!("'{text}' is not an IPv6 address in brackets"))
            });
    }
    match text.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => Ok(IpAddr::V4(v4)),
        Ok(IpAddr::V6(_)) => Err(InvalidValue::new(format!(
            "write the IPv6 address '{text}' in brackets: [{text}]"
        ))),
        Err(_) => Err(InvalidValue::new(format!("'{text}' is not an IP address"))),
    }
}

impl FromStr for PinnedAddress {
    type Err = InvalidValue;

    fn from_str(text: &str) -> Result<Self, InvalidValue> {
        let invalid = |why: String| InvalidValue::new(format!("--resolve '{text}': {why}"));
        let mut parts = text.trim().splitn(3, ':');
        let (Some(host), Some(port), Some(addresses)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid("not HOST:PORT:ADDRESS".into()));
        };
        if host.is_empty() {
            return Err(invalid("the host is empty".into()));
        }
        // A host with brackets, a wildcard or curl's `+` (lazy) and `-` (remove) prefixes
        // would be silently misread; reject rather than pin something else.
        if host.contains(['[', ']', '*', '+', '/', ' ']) || host.starts_with('-') {
            return Err(invalid(format!("'{host}' is not a host name")));
        }
        let port = match port.parse::<u16>() {
            Ok(0) | Err(_) => return Err(invalid(format!("'{port}' is not a port (1 to 65535)"))),
            Ok(port) => port,
        };
        let addresses = addresses
            .split(',')
            .map(address)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|problem| invalid(problem.message))?;
        Ok(PinnedAddress {
            host: host.to_string(),
            port,
            addresses,
        })
    }
}

impl fmt::Display for PinnedAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:", self.host, self.port)?;
        for (index, address) in self.addresses.iter().enumerate() {
            let separator = if index == 0 { "" } else { "," };
            match address {
                IpAddr::V4(v4) => write!(f, "{separator}{v4}")?,
                IpAddr::V6(v6) => write!(f, "{separator}[{v6}]")?,
            }
        }
        Ok(())
    }
}

impl Serialize for PinnedAddress {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PinnedAddress {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What resolving one target name found, as the run's environment keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameResolution {
    /// The name and port as given (`example.com:443`, `[::1]:8443`).
    pub name: String,
    /// Every address it resolved to, in the resolver's order.
    pub addresses: Vec<SocketAddr>,
    /// The address the run connects to (with `per-attempt`, the one the first resolution
    /// chose; each sample stores its own).
    pub used: SocketAddr,
    /// Who answered: `getaddrinfo` with the nameservers of `/etc/resolv.conf`, a `--resolve`
    /// pin, or an address literal (no resolution at all).
    pub resolver: String,
    /// `once` or `per-attempt`.
    pub mode: crate::DnsMode,
}

impl fmt::Display for NameResolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addresses: Vec<String> = self.addresses.iter().map(|a| a.ip().to_string()).collect();
        write!(
            f,
            "{} -> {} (used {}; {}; {})",
            self.name,
            addresses.join(", "),
            self.used.ip(),
            self.resolver,
            self.mode
        )
    }
}

/// The address family of `address`, as the store spells it.
pub fn family(address: SocketAddr) -> &'static str {
    if address.is_ipv4() {
        "ipv4"
    } else {
        "ipv6"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_as_curl_writes_them() {
        let pin: PinnedAddress = "example.com:443:192.0.2.7".parse().unwrap();
        assert_eq!(
            (pin.host.as_str(), pin.port, pin.addresses.clone()),
            (
                "example.com",
                443,
                vec!["192.0.2.7".parse::<IpAddr>().unwrap()]
            )
        );
        assert!(pin.answers("Example.COM.", 443));
        assert!(!pin.answers("example.com", 8443));
        let six: PinnedAddress = "localhost:8443:[::1],127.0.0.1".parse().unwrap();
        assert_eq!(
            six.socket_addresses(),
            vec![
                "[::1]:8443".parse::<SocketAddr>().unwrap(),
                "127.0.0.1:8443".parse().unwrap()
            ]
        );
        // Printed as given, so an experiment file round-trips.
        assert_eq!(six.to_string(), "localhost:8443:[::1],127.0.0.1");
        assert_eq!(six.to_string().parse::<PinnedAddress>().unwrap(), six);
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        for (bad, why) in [
            ("example.com:443", "not HOST:PORT:ADDRESS"),
            ("example.com", "not HOST:PORT:ADDRESS"),
            (":443:127.0.0.1", "host is empty"),
            ("example.com:https:127.0.0.1", "not a port"),
            ("example.com:0:127.0.0.1", "not a port"),
            ("example.com:70000:127.0.0.1", "not a port"),
            ("example.com:443:", "not an IP address"),
            ("example.com:443:localhost", "not an IP address"),
            ("example.com:443:::1", "in brackets"),
            ("example.com:443:[::1", "IPv6 address in brackets"),
            ("example.com:443:[127.0.0.1]", "IPv6 address in brackets"),
            ("*:443:127.0.0.1", "not a host name"),
            ("+example.com:443:127.0.0.1", "not a host name"),
            ("-example.com:443:127.0.0.1", "not a host name"),
            ("[::1]:443:127.0.0.1", "not a host name"),
            ("example.com:443:127.0.0.1,", "not an IP address"),
        ] {
            let error = bad.parse::<PinnedAddress>().unwrap_err().to_string();
            assert!(error.contains(why), "{bad}: {error}");
            assert!(error.starts_with("--resolve '"), "{error}");
        }
    }

    #[test]
    fn families_are_named_as_stored() {
        assert_eq!(family("127.0.0.1:1".parse().unwrap()), "ipv4");
        assert_eq!(family("[::1]:1".parse().unwrap()), "ipv6");
    }
}
