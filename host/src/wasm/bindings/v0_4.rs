//! Bindings of `rebound:policy@0.4.0` (`wit/released/0.4.0/policy.wit`), kept so components
//! built for it keep loading: 0.3.0 with requests of any protocol — plain HTTP requests and
//! gRPC calls (their service and request type, `failure.method`, `failure.authority`,
//! `failure.route`), the responses' status as reasons (`http-status`, `grpc-status`), and
//! `failure.retries-since-pushback`. 0.5.0 only added the `hedging` export, so this version's
//! `types` are 0.5.0's Rust types (the component model checks them by structure) and its
//! imports are 0.5.0's.

pub(crate) use super::v0_5::{
    action_to_host, action_to_wit, from_current, http_method_to_wit, reason_to_host, reason_to_wit,
    request_to_host, spec_to_host, spec_to_wit, wit,
};

wasmtime::component::bindgen!({
    path: "wit/released/0.4.0",
    world: "retry-policy",
    imports: { default: trappable },
    with: { "rebound:policy/types": super::v0_5::rebound::policy::types },
});
