//! Rebound's policies as a [`reqwest_middleware`] middleware for any HTTP service: plain HTTP
//! requests (RFC 9110: idempotency by method, a table of retried statuses, `Retry-After`) and
//! the Couchbase services' HTTP APIs (query, analytics, search, views, management), which a
//! request names. Each failure is classified as Rebound classifies it (reference 001
//! "Response Code Classification" for the Couchbase services), a
//! [`PolicyRegistry`](rebound::registry::PolicyRegistry) decides, and the middleware waits and
//! sends the request again (docs/adapters.md).
//!
//! ```no_run
//! use std::sync::Arc;
//! use rebound::registry::PolicyRegistry;
//! use rebound::Service;
//! use rebound_reqwest::ReboundMiddleware;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Arc::new(PolicyRegistry::from_file("rebound.toml".as_ref())?);
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(ReboundMiddleware::new(registry))
//!     .build();
//! let response = client
//!     .get("http://127.0.0.1:8094/api/index/travel/query")
//!     .with_extension(Service::Search)
//!     .send()
//!     .await?;
//! # let _ = response;
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

mod answer;
mod classify;
mod middleware;

pub use answer::AttemptTimedOut;
pub use middleware::{Idempotent, NotAnHttpService, ReboundMiddleware, Route};
pub use rebound::replay_body::ZeroReplayLimit;

/// The library this adapter was built with: its registry and the request's vocabulary,
/// without adding a dependency (and its default features) of one's own.
pub use rebound;
