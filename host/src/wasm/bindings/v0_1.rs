//! Bindings of `rebound:policy@0.1.0` (`wit/released/0.1.0/policy.wit`), kept so components
//! built for it keep loading: `retry-after` receives the whole request record, and the client
//! context and error-map spec are read through `host`. Its imports are answered by the same
//! call state and helpers as the current version's (`imports.rs`).

use std::time::Instant;

use self::rebound::policy::host::{self, LogLevel};
use super::super::store::CallState;
use crate::BestEffort;

wasmtime::component::bindgen!({
    path: "../wit/released/0.1.0",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit);

impl wit::Host for CallState {}

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
        let action = BestEffort::default_decision(
            &request_to_host(&request, Instant::now()),
            &reason_to_host(&reason),
        );
        Ok(action_to_wit(&action))
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
        Ok(crate::backoff::lenient_exponential_ms(
            attempt, min_ms, max_ms, factor,
        ))
    }

    fn spec_delay(
        &mut self,
        spec: wit::RetrySpec,
        attempt: u32,
        elapsed_ms: u64,
    ) -> wasmtime::Result<Option<u64>> {
        Ok(CallState::spec_delay_ms(
            &spec_to_host(&spec),
            attempt,
            elapsed_ms,
        ))
    }

    // 0.1.0 answered these outside a decision too (none, while configuring); so do we.
    fn error_map_spec(&mut self) -> wasmtime::Result<Option<wit::RetrySpec>> {
        Ok(self.error_map_spec.as_ref().map(spec_to_wit))
    }

    fn client_context(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.client_context.get(&key).cloned())
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
