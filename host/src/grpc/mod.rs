//! gRPC's side of retrying (gRFC A6): its status codes, the retry part of a service config,
//! and retry throttling.

mod service_config;
mod status;
mod throttle;

pub use service_config::{
    split_full_method, RetryPolicy, RetryThrottling, ServiceConfig, ServiceConfigError,
    DEFAULT_MAX_ATTEMPTS_LIMIT,
};
pub use status::GrpcCode;
pub use throttle::{Throttle, MAX_THROTTLED_SERVERS};
