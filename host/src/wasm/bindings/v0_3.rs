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

super::released_request_view!();
