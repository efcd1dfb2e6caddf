//! Bindings of `rebound:policy@0.1.0` (`wit/released/0.1.0/policy.wit`), kept so components
//! built for it keep loading: `retry-after` receives the whole request record, and the client
//! context and error-map spec are read through `host`. What its imports answer is
//! `imports::v0_1`.

wasmtime::component::bindgen!({
    path: "wit/released/0.1.0",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit);
