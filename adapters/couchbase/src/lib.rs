//! Rebound's policies as the `RetryStrategy` of the Couchbase Rust SDK (`couchbase-core`): the
//! SDK asks [`ReboundRetryStrategy`] whether and when to retry a failed operation, and a
//! [`PolicyRegistry`](rebound::registry::PolicyRegistry) decides — policies named, routed,
//! hot-swapped, counted and logged as in `rebound serve` (docs/adapters.md).
//!
//! - [`reasons`]: every SDK retry reason as Rebound's (reference 001 "RetryReason").
//! - [`ReboundRetryStrategy`]: the SDK's strategy on a registry.

#![deny(missing_docs)]
// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

pub mod reasons;
mod strategy;

pub use strategy::ReboundRetryStrategy;

/// The library this adapter was built with: its registry and the request's vocabulary,
/// without adding a dependency (and its default features) of one's own.
pub use rebound;
