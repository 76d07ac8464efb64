//! Named network namespaces (`ip netns`), and moving threads and children into them.
//!
//! Names are `tlslab-<pid>-<run id>-<role>`: the owning process id lets
//! [`remove_leftovers`](crate::remove_leftovers) tell a dead run's namespaces from a live one's,
//! since namespaces outlive a process killed with -9 while its TUN devices do not.

use crate::{tool, EmulationError};
use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

pub(crate) const PREFIX: &str = "tlslab-";
/// Where `ip netns add` bind-mounts namespaces.
pub(crate) const DIRECTORY: &str = "/run/netns";

pub(crate) fn name(pid: u32, run_id: &str, role: &str) -> String {
    format!("{PREFIX}{pid}-{run_id}-{role}")
}

/// The owning process id of one of our namespace names, `None` for anyone else's.
pub(crate) fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, run) = rest.split_once('-')?;
    if run.is_empty() {
        return None;
    }
    pid.parse().ok()
}

/// Run ids go into namespace names and command lines: only characters that need no quoting.
pub(crate) fn check_run_id(run_id: &str) -> Result<(), EmulationError> {
    let valid = !run_id.is_empty()
        && run_id.len() <= 64
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if valid {
        Ok(())
    } else {
        Err(EmulationError::new(
            format!("run id '{run_id}' cannot be part of a namespace name"),
            "use 1 to 64 letters, digits, '-', '_' or '.'",
        ))
    }
}

/// Names of all namespaces `ip netns` knows, ours or not.
pub(crate) fn list() -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(DIRECTORY) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut names = Vec::new();
    for entry in entries {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

pub(crate) fn exists(name: &str) -> bool {
    Path::new(DIRECTORY).join(name).exists()
}

pub(crate) fn delete(name: &str) -> Result<(), EmulationError> {
    match tool::run("ip", &["netns", "delete", name]) {
        Ok(_) => Ok(()),
        // Someone (remove_leftovers in another process) got there first: the goal is reached.
        Err(_) if !exists(name) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Moves the calling thread into the network namespace `namespace` refers to (`setns`).
pub(crate) fn enter(namespace: BorrowedFd<'_>) -> io::Result<()> {
    Ok(move_into_link_name_space(
        namespace,
        Some(LinkNameSpaceType::Network),
    )?)
}

/// A namespace this process created; deleted on [`remove`](Namespace::remove) or drop.
pub(crate) struct Namespace {
    name: String,
    /// Kept open so threads and children can `setns` into it without a path lookup, and so
    /// pre-exec code (which must not allocate) has a ready descriptor.
    file: Arc<OwnedFd>,
    removed: bool,
}

impl Namespace {
    pub(crate) fn create(name: String) -> Result<Namespace, EmulationError> {
        if exists(&name) {
            return Err(EmulationError::new(
                format!("network namespace {name} already exists"),
                format!(
                    "give each live network of a process its own run id, or remove the \
                     namespace with `ip netns delete {name}`"
                ),
            ));
        }
        tool::run("ip", &["netns", "add", &name])?;
        // From here on, dropping `namespace` deletes it again if a later step fails.
        let open = File::open(Path::new(DIRECTORY).join(&name));
        let file = match open {
            Ok(file) => Arc::new(OwnedFd::from(file)),
            Err(error) => {
                let _ = delete(&name);
                return Err(EmulationError::io(
                    format!("could not open namespace {name}"),
                    error,
                ));
            }
        };
        let namespace = Namespace {
            name,
            file,
            removed: false,
        };
        // A new namespace has only a down `lo`: servers bound to 127.0.0.1 inside would fail.
        tool::run("ip", &["-n", &namespace.name, "link", "set", "lo", "up"])?;
        Ok(namespace)
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn file(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.file)
    }

    /// Moves the calling thread into this namespace; threads it spawns afterwards start there.
    pub(crate) fn enter(&self) -> io::Result<()> {
        enter(self.file.as_fd())
    }

    /// Runs `work` on a short-lived thread inside this namespace, so the caller's thread never
    /// changes namespace (and needs no way back if something fails halfway).
    pub(crate) fn run_inside<T: Send>(&self, work: impl FnOnce() -> T + Send) -> io::Result<T> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    self.enter()?;
                    Ok(work())
                })
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("namespace worker thread panicked")))
        })
    }

    pub(crate) fn remove(&mut self) -> Result<(), EmulationError> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        delete(&self.name)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The two ends of an emulated link, `…-client` and `…-server`.
pub(crate) struct NamespacePair {
    pub(crate) client: Namespace,
    pub(crate) server: Namespace,
}

impl NamespacePair {
    pub(crate) fn create(run_id: &str) -> Result<NamespacePair, EmulationError> {
        check_run_id(run_id)?;
        let pid = std::process::id();
        let client = Namespace::create(name(pid, run_id, "client"))?;
        let server = Namespace::create(name(pid, run_id, "server"))?;
        Ok(NamespacePair { client, server })
    }

    pub(crate) fn remove(&mut self) -> Result<(), EmulationError> {
        let client = self.client.remove();
        let server = self.server.remove();
        client.and(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner() {
        let name = name(4242, "run-7", "client");
        assert_eq!(name, "tlslab-4242-run-7-client");
        assert_eq!(owner(&name), Some(4242));
        assert_eq!(owner("tlslab-x-run-client"), None);
        assert_eq!(owner("other-4242-run-client"), None);
        assert_eq!(owner("tlslab-4242"), None);
        assert!(check_run_id("a.b_c-1").is_ok());
        assert!(check_run_id("with space").is_err());
        assert!(check_run_id("").is_err());
    }
}
