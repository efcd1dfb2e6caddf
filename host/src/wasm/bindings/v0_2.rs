//! Bindings of `rebound:policy@0.2.0` (`wit/released/0.2.0/policy.wit`), kept so components
//! built for it keep loading: the policy reads the failure through the imported `failure`
//! interface and may delegate by answering `retry-action.best-effort`. 0.3.0 only added a
//! `failure` function, so this version's `types` are 0.3.0's Rust types (the component model
//! checks them by structure) and its imports are 0.3.0's, less `failure.server-delay-ms`.

pub(crate) use super::v0_3::{
    action_to_host, action_to_wit, from_current, reason_to_host, reason_to_wit, request_to_host,
    spec_to_host, spec_to_wit, wit,
};

wasmtime::component::bindgen!({
    path: "wit/released/0.2.0",
    world: "retry-policy",
    imports: { default: trappable },
    with: { "rebound:policy/types": super::v0_3::rebound::policy::types },
});
