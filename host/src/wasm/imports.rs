//! What a policy instance can reach: the current version's `rebound:policy/failure` and
//! `rebound:policy/host` imports, answered from the call state in the instance's store
//! (`store`), and the helpers every version's imports share (`bindings::v0_1` answers the
//! 0.1.0 `host` with them).

use std::time::{Duration, Instant};

use super::bindings::v0_2::rebound::policy::failure;
use super::bindings::v0_2::rebound::policy::host::{self, LogLevel};
use super::bindings::v0_2::{self as b, wit};
use super::store::CallState;
use crate::backoff::{controlled_backoff, lenient_exponential_ms};
use crate::errormap::RetrySpec;
use crate::BestEffort;

/// Why a call failed inside a host import or the limiter (recovered from the trap's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostTrap {
    /// The guest called `abort` (its panic hook).
    #[error("policy panicked: {0}")]
    Panic(String),
    /// The guest used a WASI function the sandbox denies (exit, sleeping, files, sockets).
    #[error("denied: {0}")]
    Denied(String),
    /// The guest read the failure outside a `retry-after` call (while configuring).
    #[error("no failure is being decided: `failure.{0}` is answered only during retry-after")]
    NoFailure(&'static str),
    /// The guest tried to grow memory past the cap.
    #[error("memory limit exceeded: the policy asked for {desired} bytes, the cap is {cap}")]
    MemoryLimitExceeded {
        /// Bytes requested.
        desired: usize,
        /// The cap.
        cap: usize,
    },
}

impl wit::Host for CallState {}

impl CallState {
    /// The request of the decision in progress, for the `failure` function `function`.
    fn failed_request(&self, function: &'static str) -> wasmtime::Result<&wit::Request> {
        self.request
            .as_ref()
            .ok_or_else(|| HostTrap::NoFailure(function).into())
    }

    /// `host.log`: into the host's tracing, tagged with the policy's name and version.
    pub(super) fn log_message(&self, level: tracing::Level, message: &str) {
        let (name, version) = (&*self.label.name, &*self.label.version);
        match level {
            tracing::Level::TRACE => tracing::trace!(policy = name, version, "{message}"),
            tracing::Level::DEBUG => tracing::debug!(policy = name, version, "{message}"),
            tracing::Level::INFO => tracing::info!(policy = name, version, "{message}"),
            tracing::Level::WARN => tracing::warn!(policy = name, version, "{message}"),
            tracing::Level::ERROR => tracing::error!(policy = name, version, "{message}"),
        }
    }

    /// `host.abort`: the trap that fails the call with the policy's panic message.
    pub(super) fn panicked(&self, message: String) -> wasmtime::Error {
        HostTrap::Panic(message).into()
    }

    /// `host.controlled-backoff`, in ms.
    pub(super) fn controlled_backoff_ms(attempt: u32) -> u64 {
        controlled_backoff(attempt).as_millis() as u64
    }

    /// `host.spec-delay`, in ms (saturating).
    pub(super) fn spec_delay_ms(spec: &RetrySpec, attempt: u32, elapsed_ms: u64) -> Option<u64> {
        spec.next_delay(attempt, Duration::from_millis(elapsed_ms))
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// `host.retry-budget`: one token from the host-kept bucket `name`, refilled by the
    /// decision's moment when the caller fixed it.
    pub(super) fn take_budget_token(&self, name: &str, per_second: u32, burst: u32) -> bool {
        let now = self.decision_time.unwrap_or_else(Instant::now);
        self.budgets.try_acquire_at(name, per_second, burst, now)
    }
}

impl failure::Host for CallState {
    fn request(&mut self) -> wasmtime::Result<wit::Request> {
        self.failed_request("request").copied()
    }

    fn id(&mut self) -> wasmtime::Result<u64> {
        Ok(self.failed_request("id")?.id)
    }

    fn request_type(&mut self) -> wasmtime::Result<wit::RequestType> {
        Ok(self.failed_request("request-type")?.request_type)
    }

    fn service(&mut self) -> wasmtime::Result<wit::Service> {
        Ok(self.failed_request("service")?.service)
    }

    fn idempotent(&mut self) -> wasmtime::Result<bool> {
        Ok(self.failed_request("idempotent")?.idempotent)
    }

    fn readonly(&mut self) -> wasmtime::Result<bool> {
        Ok(self.failed_request("readonly")?.readonly)
    }

    fn retry_attempts(&mut self) -> wasmtime::Result<u32> {
        Ok(self.failed_request("retry-attempts")?.retry_attempts)
    }

    fn elapsed_ms(&mut self) -> wasmtime::Result<u64> {
        Ok(self.failed_request("elapsed-ms")?.elapsed_ms)
    }

    fn timeout_ms(&mut self) -> wasmtime::Result<u64> {
        Ok(self.failed_request("timeout-ms")?.timeout_ms)
    }

    fn dispatched(&mut self) -> wasmtime::Result<bool> {
        Ok(self.failed_request("dispatched")?.dispatched)
    }

    fn consistency(&mut self) -> wasmtime::Result<Option<wit::ConsistencyLevel>> {
        Ok(self.failed_request("consistency")?.consistency)
    }

    fn client_context(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        self.failed_request("client-context")?;
        Ok(self.client_context.get(&key).cloned())
    }

    fn error_map_spec(&mut self) -> wasmtime::Result<Option<wit::RetrySpec>> {
        self.failed_request("error-map-spec")?;
        Ok(self.error_map_spec.as_ref().map(b::spec_to_wit))
    }
}

impl host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        let level = match level {
            LogLevel::Trace => tracing::Level::TRACE,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Error => tracing::Level::ERROR,
        };
        self.log_message(level, &message);
        Ok(())
    }

    fn abort(&mut self, message: String) -> wasmtime::Result<()> {
        Err(self.panicked(message))
    }

    fn best_effort(
        &mut self,
        request: wit::Request,
        reason: wit::RetryReason,
    ) -> wasmtime::Result<wit::RetryAction> {
        let now = Instant::now();
        let action = BestEffort::default_decision(
            &b::request_to_host(&request, now),
            &b::reason_to_host(&reason),
        );
        Ok(b::action_to_wit(&action))
    }

    fn controlled_backoff(&mut self, attempt: u32) -> wasmtime::Result<u64> {
        Ok(CallState::controlled_backoff_ms(attempt))
    }

    fn exponential_backoff(
        &mut self,
        attempt: u32,
        min_ms: u64,
        max_ms: u64,
        factor: f64,
    ) -> wasmtime::Result<u64> {
        Ok(lenient_exponential_ms(attempt, min_ms, max_ms, factor))
    }

    fn spec_delay(
        &mut self,
        spec: wit::RetrySpec,
        attempt: u32,
        elapsed_ms: u64,
    ) -> wasmtime::Result<Option<u64>> {
        Ok(CallState::spec_delay_ms(
            &b::spec_to_host(&spec),
            attempt,
            elapsed_ms,
        ))
    }

    fn retry_budget(
        &mut self,
        name: String,
        per_second: u32,
        burst: u32,
    ) -> wasmtime::Result<bool> {
        Ok(self.take_budget_token(&name, per_second, burst))
    }
}
