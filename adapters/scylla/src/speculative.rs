//! The driver's speculative executions as a registry policy's `speculative_execution` says
//! (docs/hedging.md): [`ReboundSpeculativeExecution`] is the driver's
//! `SpeculativeExecutionPolicy`, reading the policy's `{ delay_ms, max_executions }` from the
//! configuration running now at every request, so a reload changes it. The driver sends the
//! executions itself, to the next nodes of its query plan, and only for statements marked
//! idempotent (as the host would); its hook has no place for the host's throttle or budget,
//! which a hedge through the executor pays.

use std::sync::Arc;
use std::time::Duration;

use rebound::hedge::ConstantSpeculativeExecution;
use rebound::registry::PolicyRegistry;
use scylla::policies::speculative_execution::{Context, SpeculativeExecutionPolicy};

use crate::AdapterError;

/// The driver's `SpeculativeExecutionPolicy` of a registry policy's `speculative_execution`:
/// none when the policy has none (or no longer exists after a reload).
#[derive(Debug, Clone)]
pub struct ReboundSpeculativeExecution {
    registry: Arc<PolicyRegistry>,
    policy: Arc<str>,
}

impl ReboundSpeculativeExecution {
    /// The speculative executions of `registry`'s policy `policy`; an error if it has no such
    /// policy.
    pub fn new(registry: Arc<PolicyRegistry>, policy: &str) -> Result<Self, AdapterError> {
        registry.speculative_execution(policy)?;
        Ok(ReboundSpeculativeExecution {
            registry,
            policy: policy.into(),
        })
    }

    /// The policy's speculative execution as the configuration running now says; `None` when
    /// it has none, or the policy is gone after a reload.
    pub fn current(&self) -> Option<ConstantSpeculativeExecution> {
        self.registry.speculative_execution(&self.policy).ok()?
    }
}

impl SpeculativeExecutionPolicy for ReboundSpeculativeExecution {
    /// The executions after the first: `max_executions − 1` (the driver counts only those).
    fn max_retry_count(&self, _: &Context) -> usize {
        self.current()
            .map_or(0, |s| s.max_executions().saturating_sub(1) as usize)
    }

    fn retry_interval(&self, _: &Context) -> Duration {
        self.current().map_or(Duration::ZERO, |s| s.delay())
    }
}
