//! The library's integration tests, one binary: each module checks the rules of one part (its
//! own header names the reference). The tests that install a `tracing` subscriber are binaries
//! of their own (`logging`, `failure_log`, `wasm_wasi`, `decision_ids`): tracing caches callsite
//! interest process-wide, so tests sharing their process could hide the events they check.

mod common;
mod line_servers;
mod registry_support;
mod wasm_support;

mod answered_attempt_timeouts;
mod attempt_timeouts;
mod backoff;
mod breakers;
mod builtin_params;
mod classify;
mod client_context;
mod decision_log;
mod error_context;
mod errormap;
mod executor;
mod grpc_retries;
mod hedging;
mod hot_swap;
mod http_retries;
mod isolation;
mod latency_hedging;
mod latency_hedging_peers;
mod one_line_retry;
mod orchestrator;
mod outcomes;
mod properties;
mod pushback;
mod reasons;
mod registry;
mod registry_config;
mod registry_ranges;
mod registry_routes;
mod request;
mod retry_loop;
mod strategies;
mod telemetry;
mod throttles;
mod tower_layer;
#[cfg(feature = "http")]
mod tower_layer_bodies;
#[cfg(feature = "tower-retry")]
mod tower_retry_policy;
mod traffic_budget;
mod transparent_retries;
mod wasm_loading;
mod wasm_parity;
mod wasm_policies;
mod wasm_pool;
mod wasm_sandbox;
