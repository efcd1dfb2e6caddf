//! Running an operation under retry handling in a tokio application: the [`Executor`] calls
//! the operation, turns each failure into a reason (or classifies the raw response), asks the
//! orchestrator (or a policy registry) what to do, sleeps on tokio's timer, dispatches again,
//! and stops exactly at the request's deadline with the outcome error of reference 002.
//!
//! - [`Executor`]: the retry loop.
//! - [`Attempt`]: what one call of the operation is told (attempt number, node, consistency,
//!   deadline) and how it reports that the request went out.
//! - [`Failure`]: how the operation reports a failure: its own error plus a reason, a raw
//!   response to classify, or "final".
//! - [`ExecuteError`]: how a request ends without a value.
//! - [`ExecutorListener`]: callbacks for a retry, a give-up, a success after retries.
//!
//! Each request runs in a `tracing` span `rebound.request` (fields `request_id`,
//! `request_type`), each attempt in a span `rebound.attempt` (field `attempt`) inside it, both
//! at debug level.
//!
//! What decides is a [`Decider`](crate::Decider): an [`Orchestrator`](crate::Orchestrator) or a
//! `PolicyRegistry` (per-request policy names, profiles, hot reload). The loop itself is
//! [`RetryLoop`](crate::RetryLoop), which the executor drives on tokio's clock and timer. It
//! spawns nothing and never blocks: dropping its future stops the request at once, the attempt
//! in flight included.

mod attempt;
mod error;
mod failure;
mod hedged;
mod listener;
mod retrying;
mod run;
mod settle;

pub use attempt::Attempt;
pub use error::ExecuteError;
pub use failure::Failure;
pub use listener::ExecutorListener;
pub use retrying::{ReasonOf, Retrying};
pub use run::Executor;
