//! The imports of `rebound:policy@0.4.0`: its `failure` and `host` functions, which are 0.5.0's,
//! answered from the same call state.

use crate::wasm::bindings::v0_4;
use crate::wasm::bindings::v0_4::rebound::policy::{failure, host};
use crate::wasm::store::CallState;

impl failure::Host for CallState {
    crate::wasm::imports::failure_functions!(v0_4);
    crate::wasm::imports::server_delay_function!();
    crate::wasm::imports::protocol_functions!(v0_4);
}

impl host::Host for CallState {
    crate::wasm::imports::shared_host_functions!(v0_4);
}
