//! Bindings of `rebound:policy@0.3.0` (`wit/released/0.3.0/policy.wit`), kept so components
//! built for it keep loading: 0.2.0 and `failure.server-delay-ms`, the server's pushback. Its
//! `types` are the ones 0.2.0 shares (`v0_2` maps its `types` onto these); 0.4.0 added cases to
//! them, so 0.4.0 has its own.

wasmtime::component::bindgen!({
    path: "wit/released/0.3.0",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit, best_effort = BestEffort);

/// The call state's request record (0.5.0's) as 0.3.0's. A 0.3.0 policy is never asked about
/// the plain HTTP requests and gRPC calls only 0.4.0 on have words for (`WitVersion::describes`),
/// so every value has its case here.
pub(crate) fn from_current(r: &super::v0_5::wit::Request) -> wit::Request {
    use super::v0_5 as current;
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
