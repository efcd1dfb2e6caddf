//! The KV error map (reference 004): parsing v1 and v2 maps, their retry specifications and
//! schedules, and one map per node where the highest revision wins.

mod model;
mod spec;
mod store;

pub use model::{Attribute, ErrorCode, ErrorMap, ErrorMapError, ErrorMapVerdict};
pub use spec::{RetrySpec, SpecStrategy};
pub use store::{ErrorMapStore, Offer};
