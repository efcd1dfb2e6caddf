//! # Rebound
//!
//! Rebound decides whether, when and where a failed request is retried. The rules that must
//! never be wrong — which failures are retried at all, which are safe for a non-idempotent
//! request, how long to wait, when the deadline ends the request — live here, implemented as
//! the reference documents specify (Couchbase RFC 0049 revision 16 for retry handling, RFC 0013
//! for the KV error map, the Cassandra Java driver 4.x for its retry model). The part users
//! customise, the [`RetryStrategy`], is a trait that native strategies implement and that
//! sandboxed WebAssembly strategies implement the same way.
//!
//! ## The flow
//!
//! 1. A response is turned into a [`RetryReason`] by [`classify::classify`] (or the caller
//!    knows the reason, e.g. the socket closed while the request was in flight).
//! 2. [`Orchestrator::decide`] decides, given the failure's [`DecisionContext`]: always-retry
//!    reasons get the controlled backoff without asking the strategy; otherwise the strategy
//!    chosen for the request (or the default, [`BestEffort`]) answers; the safety guard refuses unsafe retries of non-idempotent
//!    requests; the delay is capped to the deadline.
//! 3. The caller acts on the [`Decision`]: sleep and dispatch again, or end the request with
//!    the [`RetryError`] it carries, whose [`ErrorContext`] serialises to the fields of the
//!    Couchbase SDK's error context.
//!
//! ## Example
//!
//! ```
//! use std::time::Duration;
//! use rebound::classify::{classify, KvOpcode, Response};
//! use rebound::{Decision, DecisionContext, Orchestrator, Request, RequestType};
//!
//! # futures::executor::block_on(async {
//! let orchestrator = Orchestrator::default(); // BestEffort strategy
//! let mut request = Request::new(1, RequestType::Upsert, Duration::from_millis(2500))?;
//! request.mark_dispatched("10.0.0.1:11210");
//!
//! // The server answered TMPFAIL (0x86): retryable even for a non-idempotent upsert.
//! let answer = classify(Response::Kv { opcode: KvOpcode::of(RequestType::Upsert).unwrap(), status: 0x86 }, None);
//! let reason = answer.reason().expect("TMPFAIL is on the retry list");
//! match orchestrator.decide(&mut request, &DecisionContext::new(reason)).await {
//!     Decision::Retry(plan) => assert_eq!(plan.delay, Duration::from_millis(1)),
//!     other => panic!("expected a retry, got {other:?}"),
//! }
//!
//! // The socket then closed while the upsert was in flight: never retried, it may have applied.
//! let reason = rebound::reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
//! match orchestrator.decide(&mut request, &DecisionContext::new(&reason)).await {
//!     Decision::Fail(error) => {
//!         assert_eq!(error.name(), "RequestCanceled");
//!         println!("{error}"); // request canceled: NO_MORE_RETRIES (...) {"requestId":1,...}
//!     }
//!     other => panic!("expected a cancellation, got {other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! ## In a tokio application
//!
//! The [`executor::Executor`] runs the whole loop around an async operation: it calls it,
//! classifies its failure, asks the orchestrator (or a policy registry), sleeps on tokio's timer,
//! dispatches again and stops exactly at the deadline with the outcome error and its context;
//! dropping its future stops everything. [`layer::RetryLayer`] applies it to a tower service.
//! Guide: `docs/executor.md`; end-to-end example: `examples/memcached/`.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use rebound::executor::{Executor, Failure};
//! use rebound::{reasons, Orchestrator, Request, RequestType};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let executor = Executor::new(Arc::new(Orchestrator::default()));
//! let request = Request::new(1, RequestType::Get, Duration::from_millis(2500)).unwrap();
//! let value = executor
//!     .run(request, |attempt| async move {
//!         match attempt.number() {
//!             0 => Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE)),
//!             _ => {
//!                 attempt.dispatched("10.0.0.1:11210");
//!                 Ok("document")
//!             }
//!         }
//!     })
//!     .await
//!     .unwrap();
//! assert_eq!(value, "document");
//! # }
//! ```
//!
//! ## The crate's layout
//!
//! The engine's types are at the crate root: the request ([`Request`], [`RequestType`],
//! [`Service`]), why it failed ([`RetryReason`], the [`reasons`] table, [`ReasonKind`]), what
//! a strategy answers ([`RetryAction`]) and what the orchestrator decides ([`Decision`],
//! [`RetryError`] with its [`ErrorContext`]), the strategies ([`RetryStrategy`],
//! [`SyncStrategy`], [`BestEffort`], [`FailFast`], [`FastFailOnTerminalError`]), the
//! [`Orchestrator`], one failure's [`DecisionContext`], and the retry loop ([`RetryLoop`],
//! [`Decider`]). Each area with a vocabulary of its own is a module:
//!
//! - [`backoff`]: controlled and exponential backoff.
//! - [`cassandra`]: the Cassandra driver's retry model and value types (reference 003).
//! - [`classify`]: response codes to reasons; [`errormap`]: the KV error map.
//! - [`decision_json`]: the decision JSON the decision log, `rebound eval` and `serve` write.
//! - `decision_log`: a JSON line per sampled decision, replayable (feature `registry`).
//! - [`grid`]: one of every reason variant, for checking policies over all of them.
//! - [`throttle`]: retry throttles that look at failures (gRFC A6's token count, adaptive
//!   throttling), kept per policy, node, authority or client.
//! - [`breaker`]: per-node circuit breakers that refuse an attempt before it is sent.
//! - [`hedge`]: hedged requests (gRFC A6 `hedgingPolicy`, Cassandra's speculative executions),
//!   only ever for idempotent requests; [`latency`]: observed attempt latencies per
//!   authority, for hedges that wait a quantile of them.
//! - [`executor`]: the retry loop for tokio; [`layer`]: the tower layer (features `executor`
//!   and `tower`, on by default); `retry_policy`: a `tower::retry::Policy` for stacks built on
//!   `tower::retry::Retry` (feature `tower-retry`).
//! - `wasm`: sandboxed WebAssembly strategies (feature `wasm`); `config`: a registry's
//!   configuration file, parsed and checked; `registry`: named policies with hot reload
//!   (feature `registry`; both features on by default); `distribution`: policies pushed to and
//!   pulled from OCI registries, signed and verified (feature `oci`, off by default: it brings
//!   an HTTP client).
//!
//! Every public item has one path.

#![deny(missing_docs)]
// docs.rs builds with every feature and `--cfg docsrs` (Cargo.toml): each item a feature gates
// is marked with it there.
#![cfg_attr(docsrs, feature(doc_cfg))]
// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

mod action;
pub mod aws_error;
pub mod backoff;
pub mod breaker;
mod cassandra_types;
pub mod classify;
mod client_context;
#[cfg(feature = "registry")]
pub mod config;
mod controls;
mod decide_error;
mod decider;
mod decision;
#[cfg(feature = "registry")]
mod decision_id;
pub mod decision_json;
#[cfg(feature = "registry")]
pub mod decision_log;
#[cfg(feature = "oci")]
pub mod distribution;
pub mod errormap;
#[cfg(feature = "executor")]
pub mod executor;
mod field_error;
pub mod grid;
pub mod grpc;
pub mod hedge;
#[cfg(all(feature = "wasm", feature = "registry"))]
mod isolation;
pub mod latency;
#[cfg(feature = "tower")]
pub mod layer;
mod log_rate_limit;
#[cfg(feature = "registry")]
mod mutex;
mod orchestrator;
#[cfg(feature = "otlp")]
pub mod otlp;
mod outcome;
mod progress;
mod pushback;
mod ranges;
mod reason;
#[cfg(feature = "registry")]
pub mod registry;
#[cfg(feature = "http")]
pub mod replay_body;
mod request;
mod request_outcome;
mod retry_loop;
#[cfg(feature = "tower-retry")]
pub mod retry_policy;
mod rules;
#[cfg(feature = "registry")]
mod sampling;
mod scope_store;
mod strategy;
mod striped;
#[cfg(any(feature = "executor", feature = "registry"))]
pub mod telemetry;
mod thread_counts;
pub mod throttle;
mod token_buckets;
mod traffic_budget;
#[cfg(any(feature = "wasm", feature = "registry"))]
pub mod wasm;
mod wit_convert;
#[cfg(feature = "registry")]
pub mod xds;

pub use action::{NodeChoice, PolicyFailure, PolicyFailureKind, RetryAction, TerminalError};
pub use client_context::ClientContext;
#[cfg(feature = "http")]
pub use client_context::{ContextHeaders, InvalidHeaderName};
pub use controls::PolicyControls;
pub use decide_error::DecideError;
pub use decider::Decider;
pub use decision::{Deciding, Decision, DelaySource, ReadyOrBoxed, RetryPlan};
#[cfg(feature = "registry")]
pub use decision_id::DecisionId;
pub use field_error::FieldError;
pub use log_rate_limit::LogRateLimit;
pub use orchestrator::Orchestrator;
pub use outcome::{CancelReason, ErrorContext, RetryError, ServiceContext, Timings};
pub use progress::Progress;
pub use pushback::Pushback;
pub use reason::{
    reasons, ReadTimeout, ReasonError, ReasonKind, RetryReason, SimpleReason, Stage, Unavailable,
    WriteTimeout,
};
pub use request::{HttpMethod, Request, RequestError, RequestState, RequestType, Service};
pub use request_outcome::Outcome;
pub use retry_loop::{Cause, Ending, NextAttempt, RetryLoop, Step};
pub use rules::Guard;
pub use strategy::{
    AwsRetry, AwsRetryBehavior, BestEffort, DecisionContext, ExponentialRetry, FailFast,
    FailureNote, FastFailOnTerminalError, GrpcRetry, HttpRetry, RetryStrategy, Strategy,
    StrategyFuture, SyncStrategy,
};
pub use token_buckets::{
    Acquired, BucketRefusal, TokenBuckets, MAX_BUCKETS_PER_POLICY, MAX_BUCKET_NAME_BYTES,
};
pub use traffic_budget::{BudgetConfig, BudgetStats, TrafficBudget};

/// This library's version (its crate's): the host version docs/wit-versions.md says which
/// `rebound:policy` versions it loads, and the one `rebound --version` and `/health` show.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Cassandra driver's retry model (reference 003 "Retries"): its policies, the adapter
/// that applies the driver's hard-coded rules around them, and the driver's value types.
pub mod cassandra {
    pub use crate::cassandra_types::{AbortKind, ConsistencyLevel, ServerErrorKind, WriteType};
    pub use crate::strategy::cassandra::{
        aborted_verdict, error_response_verdict, route, Cassandra, CassandraPolicy,
        ConsistencyDowngradingRetryPolicy, DefaultRetryPolicy, Route,
    };
}

/// The README's Rust snippets, compiled and run as doctests so they cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The executor guide's Rust snippets, compiled and run as doctests.
#[cfg(all(doctest, feature = "tower"))]
#[doc = include_str!("../docs/executor.md")]
struct ExecutorGuideDoctests;

/// The throttling guide's Rust snippets, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/throttling.md")]
struct ThrottlingGuideDoctests;

/// The circuit breaker guide's Rust snippets, compiled and run as doctests.
#[cfg(all(doctest, feature = "executor"))]
#[doc = include_str!("../docs/breakers.md")]
struct BreakersGuideDoctests;

/// The hedging guide's Rust snippets, compiled and run as doctests.
#[cfg(all(doctest, feature = "executor"))]
#[doc = include_str!("../docs/hedging.md")]
struct HedgingGuideDoctests;

/// The observability guide's Rust snippets, compiled as doctests.
#[cfg(all(doctest, feature = "otlp"))]
#[doc = include_str!("../docs/observability.md")]
struct ObservabilityGuideDoctests;

/// The registry guide's Rust snippets, compiled as doctests.
#[cfg(all(doctest, feature = "registry"))]
#[doc = include_str!("../docs/registry.md")]
struct RegistryGuideDoctests;
