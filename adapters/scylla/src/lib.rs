//! Rebound's policies as the retry policy of the [`scylla`] driver (Cassandra and ScyllaDB):
//! the driver asks [`ReboundRetryPolicy`]'s sessions what to do with a failed request, and a
//! [`PolicyRegistry`](rebound::registry::PolicyRegistry) decides — policies named, routed,
//! hot-swapped, counted and logged exactly as in `rebound serve` (docs/adapters.md).
//!
//! ```no_run
//! use std::sync::Arc;
//! use rebound::registry::PolicyRegistry;
//! use rebound_scylla::ReboundRetryPolicy;
//! use scylla::client::execution_profile::ExecutionProfile;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Arc::new(PolicyRegistry::from_file("rebound.toml".as_ref())?);
//! let policy = ReboundRetryPolicy::new(registry)?.policy("cassandra")?;
//! let profile = ExecutionProfile::builder()
//!     .retry_policy(Arc::new(policy))
//!     .build();
//! # let _ = profile;
//! # Ok(())
//! # }
//! ```
//!
//! - [`errors`]: the driver's errors as Rebound's reasons (reference 003), and what no policy
//!   is asked about.
//! - [`consistency`]: the driver's consistency levels and Rebound's.
//! - [`ReboundRetryPolicy`], [`ReboundRetrySession`]: the driver's retry hooks on a registry.
//! - [`ReboundSpeculativeExecution`]: the driver's speculative executions as a registry
//!   policy's `speculative_execution` says.

#![deny(missing_docs)]
// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

pub mod consistency;
pub mod errors;
mod session;
mod speculative;

pub use session::{AdapterError, ReboundRetryPolicy, ReboundRetrySession};
pub use speculative::ReboundSpeculativeExecution;

/// The adapters guide's examples, compiled as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct AdaptersGuide;

/// The library this adapter was built with: its registry and the request's vocabulary,
/// without adding a dependency (and its default features) of one's own.
pub use rebound;
