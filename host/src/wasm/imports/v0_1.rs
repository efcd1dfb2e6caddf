//! The imports of `rebound:policy@0.1.0`: its `host` functions shared with later versions
//! (`shared_host_functions!`), and the two it alone has, answered from the same call state.

use crate::wasm::bindings::v0_1::rebound::policy::host;
use crate::wasm::bindings::v0_1::{self, spec_to_wit, wit};
use crate::wasm::store::CallState;

impl wit::Host for CallState {}

impl host::Host for CallState {
    crate::wasm::imports::shared_host_functions!(v0_1);

    // 0.1.0 answered these outside a decision too (none, while configuring); so do we.
    fn error_map_spec(&mut self) -> wasmtime::Result<Option<wit::RetrySpec>> {
        Ok(self.error_map_spec.as_ref().map(spec_to_wit))
    }

    fn client_context(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.client_context_entry(&key))
    }
}
