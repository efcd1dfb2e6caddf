//! Bindings of `rebound:policy@0.6.0`, the current version (`wit/policy.wit`): 0.5.0 and the
//! attempt's facts — how far it got (`failure.progress`), the attempt timeout that cut it
//! (`failure.attempt-timeout-ms`, the `attempt-timeout` reason) — and a retry's own attempt
//! timeout (`retry.attempt-timeout-ms`). A component built for the world `retry-policy` is
//! bound by this module's `RetryPolicy`; one built for `hedging-policy` by [`hedging`]'s, which
//! shares this module's types and imports.

wasmtime::component::bindgen!({
    path: "wit",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit, best_effort = BestEffort, protocols, attempt_timeouts);

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
