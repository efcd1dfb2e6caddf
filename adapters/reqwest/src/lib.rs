//! Rebound's policies as a [`reqwest_middleware`] middleware for the Couchbase services' HTTP
//! APIs (query, analytics, search, views, management): each request says which service it
//! targets, each failure is classified as Rebound classifies it (reference 001 "Response Code
//! Classification"), a [`PolicyRegistry`](rebound::registry::PolicyRegistry) decides, and the
//! middleware waits and sends the request again (docs/adapters.md).
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

mod classify;
mod middleware;

pub use middleware::{Idempotent, NotAnHttpService, ReboundMiddleware};
