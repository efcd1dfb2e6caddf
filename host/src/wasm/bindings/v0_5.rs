//! Bindings of `rebound:policy@0.5.0`, the current version (`wit/policy.wit`): 0.4.0 and the
//! optional `hedging` export. A component built for the world `retry-policy` is bound by this
//! module's `RetryPolicy`; one built for `hedging-policy` by [`hedging`]'s, which shares this
//! module's types and imports.

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

/// The world `hedging-policy`: `retry-policy` and the `hedging` export.
pub(crate) mod hedging {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "hedging-policy",
        imports: { default: trappable },
        with: {
            "rebound:policy/types": super::rebound::policy::types,
            "rebound:policy/failure": super::rebound::policy::failure,
            "rebound:policy/host": super::rebound::policy::host,
        },
    });
}

/// The world `retry-policy` for a component whose imports include WASI 0.3's async functions:
/// the same types and imports, its exports called on a fiber (wasmtime requires that of a store
/// whose instance imports a concurrent function, as the host's WASI 0.3 denials are).
pub(crate) mod on_fiber {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "retry-policy",
        imports: { default: trappable },
        exports: { default: async },
        with: {
            "rebound:policy/types": super::rebound::policy::types,
            "rebound:policy/failure": super::rebound::policy::failure,
            "rebound:policy/host": super::rebound::policy::host,
        },
    });
}
