//! The imports of `rebound:policy@0.3.0`: its `failure` functions (0.4.0's, less the route
//! facts) and its `host` functions, answered from the same call state.

use crate::wasm::bindings::v0_3;
use crate::wasm::bindings::v0_3::rebound::policy::{failure, host};
use crate::wasm::store::CallState;

impl v0_3::wit::Host for CallState {}

impl failure::Host for CallState {
    crate::wasm::imports::failure_functions!(v0_3);
    crate::wasm::imports::server_delay_function!();
}

impl host::Host for CallState {
    crate::wasm::imports::shared_host_functions!(v0_3);
}
