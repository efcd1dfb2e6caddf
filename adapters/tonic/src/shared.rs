//! The settings every service of one layer shares, apart from the layer that makes them and
//! the service that reads them, so that neither depends on the other.

use std::sync::Arc;
use std::time::Duration;

use rebound::registry::PolicyRegistry;
use rebound::ContextHeaders;

/// The layer's settings, shared by its services.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub(crate) registry: Arc<PolicyRegistry>,
    /// Full method names (`/package.Service/Method`) or whole services (`/package.Service/*`)
    /// declared idempotent.
    pub(crate) idempotent: Vec<String>,
    /// The most bytes of a call's request body kept to send it again.
    pub(crate) max_replay_bytes: usize,
    /// The deadline of a call that sends no `grpc-timeout`.
    pub(crate) timeout: Duration,
    /// The metadata keys read into the client context.
    pub(crate) context_metadata: ContextHeaders,
}

impl Shared {
    /// Whether the call `full_method` was declared idempotent.
    pub(crate) fn is_idempotent(&self, full_method: &str) -> bool {
        self.idempotent
            .iter()
            .any(|declared| match declared.strip_suffix('*') {
                Some(service) => full_method.starts_with(service),
                None => declared == full_method,
            })
    }
}
