//! Removing what runs that died left behind.
//!
//! A run killed with -9 cannot clean up. Its TUN devices close with its descriptors, and veth
//! pairs and qdiscs live inside its namespaces, so the namespaces are all that remains; their
//! names carry the owning process id.

use crate::namespace;
use crate::EmulationError;
use std::path::Path;

/// Deletes every namespace named by this crate (`tlslab-<pid>-…`) whose owning process no
/// longer exists, and returns their names. Namespaces of live runs, including this process's,
/// are left alone. (A pid reused by an unrelated process keeps its leftovers until that process
/// exits too: a miss, never a wrong deletion.)
pub fn remove_leftovers() -> Result<Vec<String>, EmulationError> {
    let names = namespace::list().map_err(|error| {
        EmulationError::io(format!("could not list {}", namespace::DIRECTORY), error)
    })?;
    let mut removed = Vec::new();
    for name in names {
        let Some(pid) = namespace::owner(&name) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        namespace::delete(&name)?;
        removed.push(name);
    }
    Ok(removed)
}
