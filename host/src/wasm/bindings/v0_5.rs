//! Bindings of `rebound:policy@0.5.0` (`wit/released/0.5.0/policy.wit`), kept so components
//! built for it keep loading: 0.4.0 and the optional `hedging` export. 0.6.0 added a field to
//! `retry` and a case to `retry-reason`, so this version has its own `types` (0.4.0 shares
//! them); a component built for the world `retry-policy` is bound by this module's
//! `RetryPolicy`, one built for `hedging-policy` by [`hedging`]'s.

wasmtime::component::bindgen!({
    path: "wit/released/0.5.0",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit, best_effort = BestEffort, protocols);

super::released_request_view!();

/// The world `hedging-policy`: `retry-policy` and the `hedging` export.
pub(crate) mod hedging {
    wasmtime::component::bindgen!({
        path: "wit/released/0.5.0",
        world: "hedging-policy",
        imports: { default: trappable },
        with: {
            "rebound:policy/types": super::rebound::policy::types,
            "rebound:policy/failure": super::rebound::policy::failure,
            "rebound:policy/host": super::rebound::policy::host,
        },
    });
}
