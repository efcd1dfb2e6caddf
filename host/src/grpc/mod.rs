//! gRPC's side of retrying (gRFC A6): its status codes and the retry part of a service config
//! (retry throttling itself is a `throttle::ScopedThrottle` the `grpc` built-in keeps).

pub(crate) mod proto_json;
mod service_config;
mod status;

pub use proto_json::MAX_DURATION_SECONDS;
pub use service_config::{
    split_full_method, HedgingPolicyConfig, RetryPolicy, RetryThrottling, ServiceConfig,
    DEFAULT_MAX_ATTEMPTS_LIMIT,
};
pub use status::GrpcCode;
