//! One policy instance: its store (the call state and the sandbox's meters) and its
//! exports, created from the pre-instantiated component and configured with the policy's
//! parameters, under the setup budgets.

use std::sync::Arc;

use wasmtime::Store;

use super::call::{arm, classify, Budgets, CallFailure};
use super::component::PolicyPre;
use super::config::WasmStrategyConfig;
use super::store::{CallState, PolicyLabel};
use super::world::World;
use crate::action::PolicyFailureKind;
use crate::budget::RetryBudgets;

/// An instantiated, configured policy instance.
pub(super) struct PolicyInstance {
    pub store: Store<CallState>,
    pub policy: World,
}

impl PolicyInstance {
    /// Instantiates `pre` and configures it with `params`, under the setup deadline and fuel.
    pub fn new(
        pre: &PolicyPre,
        label: &PolicyLabel,
        config: &WasmStrategyConfig,
        params: &[(String, String)],
        budgets: &Arc<RetryBudgets>,
    ) -> Result<Self, CallFailure> {
        let memory_cap = usize::try_from(config.limits.memory_bytes).unwrap_or(usize::MAX);
        let state = CallState::new(label.clone(), Arc::clone(budgets), memory_cap, config.wasi);
        let mut store = Store::new(pre.runtime().engine(), state);
        store.limiter(|state| state);
        store.epoch_deadline_callback(|mut store| Ok(store.data_mut().deadline.on_deadline()));
        arm(&mut store, &config.limits, Budgets::Setup)?;
        let policy = pre.pre().instantiate(&mut store).map_err(classify)?;
        policy
            .configure(&mut store, params)
            .map_err(classify)?
            .map_err(|message| {
                CallFailure::new(
                    PolicyFailureKind::InvalidAnswer,
                    format!("configure: {message}"),
                )
            })?;
        Ok(PolicyInstance { store, policy })
    }
}
