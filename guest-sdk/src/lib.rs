//! # rebound-guest
//!
//! Write a Rebound retry policy in Rust. A policy implements [`Policy`]: it is built once per
//! instance from the host configuration's parameters, then answers
//! [`retry_after`](Policy::retry_after) for each failure. The default answer is the host's
//! built-in best effort, so a policy overrides only the cases it cares about and delegates the
//! rest ("call super", Couchbase SDK "Customizing the RetryStrategy").
//!
//! ```ignore
//! use rebound_guest::{export_policy, host, Params, Policy, Request, RetryAction, RetryReason};
//!
//! struct NoRetryForRobots;
//!
//! impl Policy for NoRetryForRobots {
//!     fn configure(_: &Params) -> Result<Self, String> { Ok(NoRetryForRobots) }
//!     fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
//!         if host::client_context("isRobotRequest").is_some() {
//!             return RetryAction::NoRetry;
//!         }
//!         host::best_effort(request, reason)
//!     }
//! }
//!
//! export_policy!(NoRetryForRobots);
//! ```
//!
//! Built for `wasm32`, [`host`] calls go to the Rebound host. Built natively (`cargo test`),
//! they are answered by the host library's own implementation, and [`testing::Call`] sets the
//! client context and error-map spec a test call sees — so policy logic is tested without wasm.
//!
//! Policies keep no state between calls: the host pools and discards instances and swaps
//! versions while serving. Use [`host::retry_budget`] for state that must last.

mod params;

pub use params::Params;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "retry-policy",
        pub_export_macro: true,
        export_macro_name: "export_bindings",
        default_bindings_module: "rebound_guest::bindings",
    });
}

pub use bindings::rebound::policy::types::{
    AbortKind, ConsistencyLevel, NodeChoice, ReadTimeout, Request, RequestType, Retry, RetryAction,
    RetryReason, RetrySpec, ServerErrorKind, Service, SpecStrategy, TerminalError, Unavailable,
    WriteTimeout, WriteType,
};

#[cfg(not(target_arch = "wasm32"))]
mod native;
#[cfg(not(target_arch = "wasm32"))]
pub use native::testing;

/// What the host offers a policy.
pub mod host {
    pub use crate::bindings::rebound::policy::host::LogLevel;
    use crate::{Request, RetryAction, RetryReason, RetrySpec};

    #[cfg(target_arch = "wasm32")]
    use crate::bindings::rebound::policy::host as imp;
    #[cfg(not(target_arch = "wasm32"))]
    use crate::native as imp;

    /// Logs into the host's tracing, tagged with the policy's name and version.
    pub fn log(level: LogLevel, message: &str) {
        imp::log(level, message)
    }

    /// The host's built-in best-effort decision ("call super").
    pub fn best_effort(request: &Request, reason: &RetryReason) -> RetryAction {
        imp::best_effort(*request, reason)
    }

    /// The controlled backoff in ms: 1, 10, 50, 100, 500, then 1000.
    pub fn controlled_backoff(attempt: u32) -> u64 {
        imp::controlled_backoff(attempt)
    }

    /// `min_ms × factor^attempt` clamped to `[min_ms, max_ms]`.
    pub fn exponential_backoff(attempt: u32, min_ms: u64, max_ms: u64, factor: f64) -> u64 {
        imp::exponential_backoff(attempt, min_ms, max_ms, factor)
    }

    /// The delay `spec` asks for after `attempt` retries, `elapsed_ms` after the first failure
    /// with its code; `None` once its max-duration is used up.
    pub fn spec_delay(spec: RetrySpec, attempt: u32, elapsed_ms: u64) -> Option<u64> {
        imp::spec_delay(spec, attempt, elapsed_ms)
    }

    /// The error-map retry spec of the current failure, if any.
    pub fn error_map_spec() -> Option<RetrySpec> {
        imp::error_map_spec()
    }

    /// A client-context entry of the current request.
    pub fn client_context(key: &str) -> Option<String> {
        imp::client_context(key)
    }

    /// Takes a token from the host's token bucket `name`; false when it is empty.
    pub fn retry_budget(name: &str, per_second: u32, burst: u32) -> bool {
        imp::retry_budget(name, per_second, burst)
    }

    /// Fails the current call with `message` (the host applies its fail-safe action).
    pub fn abort(message: &str) -> ! {
        imp::abort(message);
        unreachable!("host abort returned")
    }
}

/// A retry policy.
pub trait Policy: Sized + Send + Sync + 'static {
    /// Builds the policy from the host configuration's parameters. An error rejects the policy
    /// when it is loaded.
    fn configure(params: &Params) -> Result<Self, String>;

    /// Decides for `request`, which failed for `reason`. Defaults to the host's best effort.
    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        host::best_effort(request, reason)
    }
}

#[doc(hidden)]
pub mod export {
    use std::sync::{Once, OnceLock};

    use crate::{Params, Policy, Request, RetryAction, RetryReason};

    fn install_panic_hook() {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            std::panic::set_hook(Box::new(|info| crate::host::abort(&info.to_string())));
        });
    }

    /// `configure` of the export: builds and keeps the instance's policy.
    pub fn configure<P: Policy>(
        slot: &OnceLock<P>,
        params: Vec<(String, String)>,
    ) -> Result<(), String> {
        install_panic_hook();
        let policy = P::configure(&Params::new(params))?;
        slot.set(policy)
            .map_err(|_| "configure called twice on one instance".to_owned())
    }

    /// `retry-after` of the export.
    pub fn retry_after<P: Policy>(
        slot: &OnceLock<P>,
        request: Request,
        reason: RetryReason,
    ) -> RetryAction {
        install_panic_hook();
        let policy = slot.get_or_init(|| match P::configure(&Params::new(Vec::new())) {
            Ok(policy) => policy,
            Err(e) => crate::host::abort(&format!(
                "policy used before configure and cannot be built without parameters: {e}"
            )),
        });
        policy.retry_after(&request, &reason)
    }
}

/// Exports `$policy` (a [`Policy`]) as the component's `strategy` interface.
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        static __REBOUND_POLICY: ::std::sync::OnceLock<$policy> = ::std::sync::OnceLock::new();
        struct __ReboundExport;
        impl $crate::bindings::exports::rebound::policy::strategy::Guest for __ReboundExport {
            fn configure(params: ::std::vec::Vec<(::std::string::String, ::std::string::String)>) -> ::std::result::Result<(), ::std::string::String> {
                $crate::export::configure::<$policy>(&__REBOUND_POLICY, params)
            }
            fn retry_after(request: $crate::Request, reason: $crate::RetryReason) -> $crate::RetryAction {
                $crate::export::retry_after::<$policy>(&__REBOUND_POLICY, request, reason)
            }
        }
        $crate::bindings::export_bindings!(__ReboundExport with_types_in $crate::bindings);
    };
}
