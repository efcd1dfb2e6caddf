//! Bindings of `rebound:policy@0.4.0`, the current version (`wit/policy.wit`): 0.3.0 with
//! requests of any protocol — plain HTTP requests and gRPC calls (their service and request
//! type, `failure.method`, `failure.authority`, `failure.route`), the responses' status as
//! reasons (`http-status`, `grpc-status`), and `failure.retries-since-pushback`.

wasmtime::component::bindgen!({
    path: "wit",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit, best_effort = BestEffort, protocols);

/// The call state's request record, which is this version's.
pub(crate) fn from_current(r: &wit::Request) -> wit::Request {
    *r
}
