//! The store data of one policy instance: who it is (for logs), the state of the call in
//! progress (the failed request, its client context, error-map spec and pushback, the decision's
//! moment), the deadline's grace, its WASI state, and the memory limiter enforcing its cap.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::ResourceLimiter;

use super::bindings::v0_3::wit;
use super::deadline::DeadlineGrace;
use super::host_trap::HostTrap;
use super::policy_label::PolicyLabel;
use super::wasi::{WasiConfig, WasiState, WasiView};
use crate::budget::RetryBudgets;
use crate::errormap::RetrySpec;
use crate::pushback::Pushback;

/// The store data of one policy instance.
pub(crate) struct CallState {
    pub label: PolicyLabel,
    pub budgets: Arc<RetryBudgets>,
    /// The request of the decision in progress; `None` before the instance's first decision.
    pub request: Option<wit::Request>,
    /// The client context of the decision in progress (`None`: empty).
    pub client_context: Option<Arc<BTreeMap<String, String>>>,
    pub error_map_spec: Option<RetrySpec>,
    /// The server's pushback on the failure being decided.
    pub pushback: Option<Pushback>,
    /// The decision's moment when the caller fixed it (retry budgets refill by it).
    pub decision_time: Option<Instant>,
    pub memory_cap: usize,
    pub deadline: DeadlineGrace,
    pub wasi: WasiState,
}

impl CallState {
    /// The client context's entry `key` of the decision in progress.
    pub(crate) fn client_context_entry(&self, key: &str) -> Option<String> {
        self.client_context.as_deref()?.get(key).cloned()
    }

    pub(crate) fn new(
        label: PolicyLabel,
        budgets: Arc<RetryBudgets>,
        memory_cap: usize,
        wasi: WasiConfig,
    ) -> Self {
        CallState {
            wasi: WasiState::new(wasi, label.clone(), memory_cap),
            label,
            budgets,
            request: None,
            client_context: None,
            error_map_spec: None,
            pushback: None,
            decision_time: None,
            memory_cap,
            deadline: DeadlineGrace::default(),
        }
    }
}

impl ResourceLimiter for CallState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_cap {
            return Err(HostTrap::MemoryLimitExceeded {
                desired,
                cap: self.memory_cap,
            }
            .into());
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

impl WasiView for CallState {
    fn wasi(&mut self) -> &mut WasiState {
        &mut self.wasi
    }
}
