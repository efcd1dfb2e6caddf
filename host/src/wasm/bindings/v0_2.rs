//! Bindings of `rebound:policy@0.2.0`, the current version (`wit/policy.wit`): the policy
//! reads the failure through the imported `failure` interface and may delegate by answering
//! `retry-action.best-effort`.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit, best_effort = BestEffort);
