//! Host-side bindings, one set per released version of the WIT package `rebound:policy`, each
//! generated from that version's WIT and converted to the engine's types, so a component built
//! for any released version keeps loading (docs/wit-versions.md).

pub(crate) mod v0_1;
pub(crate) mod v0_2;
pub(crate) mod v0_3;
pub(crate) mod v0_4;
pub(crate) mod v0_5;
pub(crate) mod v0_6;

/// `from_current`, in a released version's bindings module whose `types` are its own: the call
/// state's request record (the current version's) as that version's. A version is never asked
/// about requests it has no words for (`WitVersion::describes`), so every value has its case.
macro_rules! released_request_view {
    () => {
        pub(crate) fn from_current(r: &super::v0_6::wit::Request) -> wit::Request {
            use super::v0_6 as current;
            wit::Request {
                id: r.id,
                request_type: request_type_to_wit(current::request_type_to_host(r.request_type)),
                service: service_to_wit(current::service_to_host(r.service)),
                idempotent: r.idempotent,
                readonly: r.readonly,
                retry_attempts: r.retry_attempts,
                elapsed_ms: r.elapsed_ms,
                timeout_ms: r.timeout_ms,
                dispatched: r.dispatched,
                consistency: r
                    .consistency
                    .map(|level| consistency_to_wit(current::consistency_to_host(level))),
            }
        }
    };
}
use released_request_view;
