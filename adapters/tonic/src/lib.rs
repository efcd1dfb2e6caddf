//! Rebound's policies as a tower layer for tonic channels (docs/http-and-grpc.md "The tonic
//! layer"): each unary call is a gRPC call Rebound decides about (gRFC A6), with the policy a
//! [`PolicyRegistry`](rebound::registry::PolicyRegistry) resolves for it (the `grpc` built-in
//! is made for them), and the layer waits and sends the call again — or, for a policy that
//! hedges (a `hedgingPolicy`), sends copies of an idempotent call while it is in flight.
//!
//! ```no_run
//! use std::sync::Arc;
//! use rebound::registry::PolicyRegistry;
//! use rebound_tonic::ReboundLayer;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Arc::new(PolicyRegistry::from_file("rebound.toml".as_ref())?);
//! let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:50051").connect_lazy();
//! let layer = ReboundLayer::new(registry).idempotent(["/shop.Inventory/Get"]);
//! let channel = tower::ServiceBuilder::new().layer(layer).service(channel);
//! // Hand `channel` to a generated client: `InventoryClient::new(channel)`.
//! # let _ = channel;
//! # Ok(())
//! # }
//! ```

// No function over 80 lines (clippy.toml): the test command denies the warning.
#![warn(clippy::too_many_lines)]

mod attempt;
mod hedged;
mod layer;
mod response;
mod service;
mod shared;

pub use attempt::BoxError;
pub use layer::ReboundLayer;
pub use rebound::replay_body::ZeroReplayLimit;
pub use service::Rebound;

/// docs/http-and-grpc.md's Rust code, compiled as a reader would paste it.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct HttpAndGrpcGuide;

/// The library this adapter was built with: its registry and the request's vocabulary,
/// without adding a dependency (and its default features) of one's own.
pub use rebound;
