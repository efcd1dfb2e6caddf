//! Bindings of `rebound:policy@0.3.0`, the current version (`wit/policy.wit`): 0.2.0 and
//! `failure.server-delay-ms`, the server's pushback on the failure. Its `types` are the ones
//! 0.2.0 shares (`v0_2` maps its `types` onto these), so both versions read one call state.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit, best_effort = BestEffort);
