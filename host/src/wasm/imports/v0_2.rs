//! The imports of `rebound:policy@0.2.0`: its `failure` functions (0.3.0's, less
//! `server-delay-ms`) and its `host` functions, answered from the same call state.

use crate::wasm::bindings::v0_2;
use crate::wasm::bindings::v0_2::rebound::policy::{failure, host};
use crate::wasm::store::CallState;

impl failure::Host for CallState {
    crate::wasm::imports::failure_functions!(v0_2);
}

impl host::Host for CallState {
    crate::wasm::imports::shared_host_functions!(v0_2);
}
