//! What a policy instance can reach: the `rebound:policy/failure` and `rebound:policy/host`
//! imports, answered from the call state in the instance's store (`store`). The functions
//! several released versions share are macros each version's bindings expand
//! (`failure_functions!` and `server_delay_function!` for 0.2.0 on, `shared_host_functions!`
//! for every `host`); the current version's are implemented here, the earlier versions' in
//! `v0_1`, `v0_2` and `v0_3`.

use super::bindings::v0_6::rebound::policy::failure;
use super::bindings::v0_6::rebound::policy::host;
use super::bindings::v0_6::{self, wit};
use super::host_trap::HostTrap;
use super::store::CallState;

mod v0_1;
mod v0_2;
mod v0_3;
mod v0_4;
mod v0_5;

impl wit::Host for CallState {}

impl CallState {
    /// The request of the decision in progress, for the `failure` function `function`.
    pub(crate) fn failed_request(&self, function: &'static str) -> wasmtime::Result<&wit::Request> {
        self.request
            .as_ref()
            .ok_or_else(|| HostTrap::NoFailure(function).into())
    }
}

/// The `failure` functions of 0.2.0, which every later version keeps, for the version whose
/// bindings module is `$b` (its `wit` types and its `from_current` view of the call state's
/// request record), expanded inside that version's `impl failure::Host for CallState`.
macro_rules! failure_functions {
    ($b:ident) => {
        fn request(&mut self) -> wasmtime::Result<$b::wit::Request> {
            Ok($b::from_current(self.failed_request("request")?))
        }

        fn id(&mut self) -> wasmtime::Result<u64> {
            Ok(self.failed_request("id")?.id)
        }

        fn request_type(&mut self) -> wasmtime::Result<$b::wit::RequestType> {
            Ok($b::from_current(self.failed_request("request-type")?).request_type)
        }

        fn service(&mut self) -> wasmtime::Result<$b::wit::Service> {
            Ok($b::from_current(self.failed_request("service")?).service)
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

        fn consistency(&mut self) -> wasmtime::Result<Option<$b::wit::ConsistencyLevel>> {
            Ok($b::from_current(self.failed_request("consistency")?).consistency)
        }

        fn client_context(&mut self, key: String) -> wasmtime::Result<Option<String>> {
            self.failed_request("client-context")?;
            Ok(self.client_context_entry(&key))
        }

        fn error_map_spec(&mut self) -> wasmtime::Result<Option<$b::wit::RetrySpec>> {
            self.failed_request("error-map-spec")?;
            Ok(self.error_map_spec.as_ref().map($b::spec_to_wit))
        }
    };
}
pub(crate) use failure_functions;

/// `failure.server-delay-ms`, which 0.3.0 added and every later version keeps.
macro_rules! server_delay_function {
    () => {
        fn server_delay_ms(&mut self) -> wasmtime::Result<Option<i64>> {
            self.failed_request("server-delay-ms")?;
            Ok(self.pushback.map(|pushback| match pushback {
                $crate::Pushback::After(delay) => {
                    i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)
                }
                $crate::Pushback::Stop => -1,
            }))
        }
    };
}
pub(crate) use server_delay_function;

/// The `failure` functions 0.4.0 added (requests of any protocol) and every later version
/// keeps, for the version whose bindings module is `$b`.
macro_rules! protocol_functions {
    ($b:ident) => {
        fn retries_since_pushback(&mut self) -> wasmtime::Result<u32> {
            self.failed_request("retries-since-pushback")?;
            Ok(self.route.retries_since_pushback)
        }

        fn method(&mut self) -> wasmtime::Result<Option<$b::wit::HttpMethod>> {
            self.failed_request("method")?;
            Ok(self.route.method.map($b::http_method_to_wit))
        }

        fn authority(&mut self) -> wasmtime::Result<Option<String>> {
            self.failed_request("authority")?;
            Ok(self.route.authority.as_deref().map(str::to_owned))
        }

        fn route(&mut self) -> wasmtime::Result<Option<String>> {
            self.failed_request("route")?;
            Ok(self.route.route.as_deref().map(str::to_owned))
        }
    };
}
pub(crate) use protocol_functions;

impl failure::Host for CallState {
    failure_functions!(v0_6);
    server_delay_function!();
    protocol_functions!(v0_6);

    fn progress(&mut self) -> wasmtime::Result<wit::Progress> {
        self.failed_request("progress")?;
        Ok(v0_6::progress_to_wit(self.progress))
    }

    fn attempt_timeout_ms(&mut self) -> wasmtime::Result<Option<u64>> {
        self.failed_request("attempt-timeout-ms")?;
        Ok(self
            .attempt_timeout
            .map(|timeout| u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)))
    }
}

/// The `host` functions every released version has, for the version whose bindings module is
/// `$b` (its generated `rebound::policy::host` and `wit` types and its conversions), expanded
/// inside that version's `impl host::Host for CallState`.
macro_rules! shared_host_functions {
    ($b:ident) => {
        fn log(
            &mut self,
            level: $b::rebound::policy::host::LogLevel,
            message: String,
        ) -> wasmtime::Result<()> {
            use $b::rebound::policy::host::LogLevel;
            let (name, version) = (&*self.label.name, &*self.label.version);
            match level {
                LogLevel::Trace => tracing::trace!(policy = name, version, "{message}"),
                LogLevel::Debug => tracing::debug!(policy = name, version, "{message}"),
                LogLevel::Info => tracing::info!(policy = name, version, "{message}"),
                LogLevel::Warn => tracing::warn!(policy = name, version, "{message}"),
                LogLevel::Error => tracing::error!(policy = name, version, "{message}"),
            }
            Ok(())
        }

        fn abort(&mut self, message: String) -> wasmtime::Result<()> {
            Err($crate::wasm::host_trap::HostTrap::Panic(message).into())
        }

        fn best_effort(
            &mut self,
            request: $b::wit::Request,
            reason: $b::wit::RetryReason,
        ) -> wasmtime::Result<$b::wit::RetryAction> {
            // Best effort as the built-in decides it: no sooner than the failure's pushback.
            let now = std::time::Instant::now();
            let action = $crate::Pushback::honour(
                self.pushback,
                $crate::BestEffort::default_decision(
                    &$b::request_to_host(&request, now),
                    &$b::reason_to_host(&reason),
                ),
            );
            Ok($b::action_to_wit(&action))
        }

        fn controlled_backoff(&mut self, attempt: u32) -> wasmtime::Result<u64> {
            Ok($crate::backoff::controlled_backoff(attempt).as_millis() as u64)
        }

        fn exponential_backoff(
            &mut self,
            attempt: u32,
            min_ms: u64,
            max_ms: u64,
            factor: f64,
        ) -> wasmtime::Result<u64> {
            Ok($crate::backoff::lenient_exponential_ms(
                attempt, min_ms, max_ms, factor,
            ))
        }

        fn spec_delay(
            &mut self,
            spec: $b::wit::RetrySpec,
            attempt: u32,
            elapsed_ms: u64,
        ) -> wasmtime::Result<Option<u64>> {
            Ok($b::spec_to_host(&spec)
                .next_delay(attempt, std::time::Duration::from_millis(elapsed_ms))
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
        }

        fn retry_budget(
            &mut self,
            name: String,
            per_second: u32,
            burst: u32,
        ) -> wasmtime::Result<bool> {
            // Budgets refill by the decision's moment when the caller fixed it.
            let now = self.decision_time.unwrap_or_else(std::time::Instant::now);
            let acquired = self.buckets.acquire_at(&name, per_second, burst, now);
            if let $crate::token_buckets::Acquired::Refused(refusal) = acquired {
                if self.buckets.first_refusal_to_report() {
                    tracing::warn!(
                        policy = &*self.label.name,
                        version = &*self.label.version,
                        "{refusal}: host.retry-budget answers no token (refused calls are \
                         counted in the policy's status as budget_refusals; this is logged once)"
                    );
                }
            }
            Ok(acquired == $crate::token_buckets::Acquired::Token)
        }
    };
}
pub(crate) use shared_host_functions;

impl host::Host for CallState {
    shared_host_functions!(v0_6);

    fn observed_latency_ms(&mut self, percentile: f64) -> wasmtime::Result<Option<u64>> {
        let Some(latencies) = &self.latencies else {
            return Ok(None);
        };
        let key = self.route.authority.as_deref();
        let key = key.unwrap_or(crate::hedge::NO_AUTHORITY);
        Ok(latencies.quantile(key, percentile).map(|latency| {
            // Whole milliseconds, rounded up: a delay of this many is never shorter.
            let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
            micros.div_ceil(1000)
        }))
    }
}
