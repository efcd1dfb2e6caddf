//! Host-side bindings generated from `wit/policy.wit`, and their conversions to the engine's
//! types.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit);
