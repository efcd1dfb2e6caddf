//! Bindings of `rebound:policy@0.1.0` (`wit/released/0.1.0/policy.wit`), kept so components
//! built for it keep loading: `retry-after` receives the whole request record, and the client
//! context and error-map spec are read through `host`. Its `host` functions shared with later
//! versions are `imports::shared_host_functions!`, answered from the same call state.

use self::rebound::policy::host;
use super::super::store::CallState;

wasmtime::component::bindgen!({
    path: "../wit/released/0.1.0",
    world: "retry-policy",
    imports: { default: trappable },
});

pub(crate) use self::rebound::policy::types as wit;

crate::__wit_conversions!(wit);

impl wit::Host for CallState {}

impl host::Host for CallState {
    crate::wasm::imports::shared_host_functions!(self);

    // 0.1.0 answered these outside a decision too (none, while configuring); so do we.
    fn error_map_spec(&mut self) -> wasmtime::Result<Option<wit::RetrySpec>> {
        Ok(self.error_map_spec.as_ref().map(spec_to_wit))
    }

    fn client_context(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.client_context_entry(&key))
    }
}
