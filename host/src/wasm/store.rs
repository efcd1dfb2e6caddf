//! The store data of one policy instance: who it is (for logs), the state of the call in
//! progress (the failed request, its route, client context, error-map spec and pushback, the
//! decision's moment), the deadline's grace, its WASI state, and the memory limiter enforcing its cap.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::ResourceLimiter;

use super::bindings::v0_6::wit;
use super::deadline::DeadlineGrace;
use super::host_trap::HostTrap;
use super::policy_label::PolicyLabel;
use super::settings::WasiConfig;
use super::wasi::{WasiState, WasiView};
use crate::token_buckets::TokenBuckets;
use crate::errormap::RetrySpec;
use crate::pushback::Pushback;

/// The facts of a request beyond the `request` record: which HTTP method, authority and route.
#[derive(Default)]
pub(crate) struct RouteFacts {
    pub method: Option<crate::request::HttpMethod>,
    pub authority: Option<Arc<str>>,
    pub route: Option<Arc<str>>,
    pub retries_since_pushback: u32,
}

impl RouteFacts {
    /// Holds `request`'s facts (a request that has none clears them without a clone).
    pub(crate) fn hold(&mut self, request: &crate::request::Request) {
        self.method = request.method();
        self.retries_since_pushback = request.retries_since_pushback();
        hold_name(&mut self.authority, request.shared_authority());
        hold_name(&mut self.route, request.shared_route());
    }
}

/// Sets `held` to `name`, keeping it when it is the same allocation.
fn hold_name(held: &mut Option<Arc<str>>, name: Option<&Arc<str>>) {
    match (held.as_ref(), name) {
        (Some(old), Some(new)) if Arc::ptr_eq(old, new) => {}
        _ => *held = name.cloned(),
    }
}

/// The store data of one policy instance.
pub(crate) struct CallState {
    pub label: PolicyLabel,
    pub buckets: Arc<TokenBuckets>,
    /// The request of the decision in progress; `None` before the instance's first decision.
    pub request: Option<wit::Request>,
    /// Where the request of the decision in progress goes: its HTTP method, authority and
    /// route, and its retries since the last pushback (`failure` of 0.4.0 reads them).
    pub route: RouteFacts,
    /// The client context of the decision in progress (`None`: empty).
    pub client_context: Option<Arc<BTreeMap<String, String>>>,
    pub error_map_spec: Option<RetrySpec>,
    /// The server's pushback on the failure being decided.
    pub pushback: Option<Pushback>,
    /// How far the failed attempt got (`failure.progress` of 0.6.0 reads it).
    pub progress: crate::progress::Progress,
    /// The attempt timeout that cut the failed attempt (`failure.attempt-timeout-ms`).
    pub attempt_timeout: Option<std::time::Duration>,
    /// The latencies the request's policy records, while a hedge is decided
    /// (`host.observed-latency-ms`).
    pub latencies: Option<Arc<crate::latency::LatencySketches>>,
    /// The decision's moment when the caller fixed it (token buckets refill by it).
    pub decision_time: Option<Instant>,
    pub memory_cap: usize,
    pub deadline: DeadlineGrace,
    pub wasi: WasiState,
}

impl CallState {
    /// Holds `request` (its facts at `now`, its route and client context) and its failure's
    /// `pushback` for the `failure` functions of the call about to run.
    pub(crate) fn hold_request(
        &mut self,
        request: &crate::request::Request,
        now: Instant,
        pushback: Option<Pushback>,
    ) {
        let shared = request.shared_client_context();
        let same = match (&self.client_context, shared) {
            (None, None) => true,
            (Some(held), Some(shared)) => Arc::ptr_eq(held, shared),
            _ => false,
        };
        if !same {
            self.client_context = shared.cloned();
        }
        self.pushback = pushback;
        self.request = Some(super::bindings::v0_6::request_to_wit(request, now));
        self.route.hold(request);
    }

    /// The client context's entry `key` of the decision in progress.
    pub(crate) fn client_context_entry(&self, key: &str) -> Option<String> {
        self.client_context.as_deref()?.get(key).cloned()
    }

    pub(crate) fn new(
        label: PolicyLabel,
        buckets: Arc<TokenBuckets>,
        memory_cap: usize,
        wasi: WasiConfig,
    ) -> Self {
        CallState {
            wasi: WasiState::new(wasi, label.clone(), memory_cap),
            label,
            buckets,
            request: None,
            route: RouteFacts::default(),
            client_context: None,
            error_map_spec: None,
            pushback: None,
            progress: crate::progress::Progress::Processed,
            attempt_timeout: None,
            latencies: None,
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
