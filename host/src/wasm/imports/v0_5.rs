//! The imports of `rebound:policy@0.5.0`: its `failure` functions (0.6.0's, less the attempt's
//! progress and timeout) and its `host` functions, answered from the same call state.

use crate::wasm::bindings::v0_5;
use crate::wasm::bindings::v0_5::rebound::policy::{failure, host};
use crate::wasm::store::CallState;

impl v0_5::wit::Host for CallState {}

impl failure::Host for CallState {
    crate::wasm::imports::failure_functions!(v0_5);
    crate::wasm::imports::server_delay_function!();
    crate::wasm::imports::protocol_functions!(v0_5);
}

impl host::Host for CallState {
    crate::wasm::imports::shared_host_functions!(v0_5);
}
