//! The client's runtime: on an emulated network every runtime thread, blocking ones included,
//! lives in the client namespace. The thread that drives the runtime only awaits agents, so
//! it can stay where it is.

use std::sync::{Arc, Mutex};

use crate::error::RunError;
use crate::network::EmulatedNetwork;

/// Why a runtime thread could not join the client namespace, when one could not.
#[derive(Clone, Default)]
pub struct NamespaceFailure(Arc<Mutex<Option<std::io::Error>>>);

impl NamespaceFailure {
    /// The first failure, as the error that stops the run.
    pub fn take(&self) -> Option<RunError> {
        let error = self.0.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        Some(
            RunError::environment(
                "a client thread could not join the client network namespace",
                "run as root or with CAP_SYS_ADMIN and CAP_NET_ADMIN, or use --emulator relay",
            )
            .because(error),
        )
    }
}

/// A multi-threaded runtime whose threads join `emulated`'s client namespace.
pub fn client_runtime(
    emulated: Option<&EmulatedNetwork>,
) -> Result<(tokio::runtime::Runtime, NamespaceFailure), RunError> {
    let failure = NamespaceFailure::default();
    let slot = failure.0.clone();
    let namespace = emulated.map(EmulatedNetwork::client_namespace);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(move || {
            if let Some(namespace) = &namespace {
                if let Err(error) = namespace.enter_client_namespace() {
                    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
                    slot.get_or_insert(error);
                }
            }
        })
        .build()
        .map_err(|error| {
            RunError::environment(
                "cannot start the runtime",
                "check the process limits (ulimit -u)",
            )
            .because(error)
        })?;
    Ok((runtime, failure))
}
