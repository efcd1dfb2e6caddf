//! One policy instance: its store (the call state and the sandbox's meters) and its
//! exports, created from the pre-instantiated component and configured with the policy's
//! parameters, under the setup budgets; and what a policy's instances are made from
//! ([`InstanceRecipe`]), which its strategy and its hedging share.

use std::sync::Arc;

use wasmtime::Store;

use super::call::{arm, classify, Budgets};
use super::component::PolicyPre;
use super::config::WasmStrategyConfig;
use super::policy_label::PolicyLabel;
use super::store::CallState;
use super::world::World;
use crate::action::{PolicyFailure, PolicyFailureKind};
use crate::token_buckets::TokenBuckets;

/// Why an instance could not be set up.
#[derive(Debug)]
pub(super) enum SetupError {
    /// The policy's `configure` refused its parameters, with its message.
    Rejected(String),
    /// Instantiating or configuring failed (a trap, a limit).
    Failed(PolicyFailure),
}

impl From<PolicyFailure> for SetupError {
    fn from(failure: PolicyFailure) -> Self {
        SetupError::Failed(failure)
    }
}

impl From<SetupError> for PolicyFailure {
    /// A refusal met after load (the parameters were accepted then) is an invalid answer.
    fn from(error: SetupError) -> Self {
        match error {
            SetupError::Rejected(message) => PolicyFailure::new(
                PolicyFailureKind::InvalidAnswer,
                format!("configure: {message}"),
            ),
            SetupError::Failed(failure) => failure,
        }
    }
}

/// What a policy's instances are made from: its component, configuration, parameters, label
/// and the token buckets every instance of it shares.
pub(super) struct InstanceRecipe {
    pub component: PolicyPre,
    pub config: WasmStrategyConfig,
    pub params: Vec<(String, String)>,
    pub label: PolicyLabel,
    pub buckets: Arc<TokenBuckets>,
}

impl InstanceRecipe {
    /// A new instance, instantiated and configured.
    pub(super) fn instantiate(&self) -> Result<PolicyInstance, SetupError> {
        PolicyInstance::new(
            &self.component,
            &self.label,
            &self.config,
            &self.params,
            &self.buckets,
        )
    }
}

impl std::fmt::Debug for InstanceRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.component.name())
            .field("version", &self.component.version())
            .finish_non_exhaustive()
    }
}

/// An instantiated, configured policy instance.
pub(super) struct PolicyInstance {
    pub store: Store<CallState>,
    pub policy: World,
}

impl PolicyInstance {
    /// Instantiates `pre` and configures it with `params`, under the setup deadline and fuel.
    pub(super) fn new(
        pre: &PolicyPre,
        label: &PolicyLabel,
        config: &WasmStrategyConfig,
        params: &[(String, String)],
        buckets: &Arc<TokenBuckets>,
    ) -> Result<Self, SetupError> {
        let memory_cap = usize::try_from(config.limits.memory_bytes).unwrap_or(usize::MAX);
        let state = CallState::new(label.clone(), Arc::clone(buckets), memory_cap, config.wasi);
        let mut store = Store::new(pre.pre().engine(), state);
        store.limiter(|state| state);
        store.epoch_deadline_callback(|mut store| Ok(store.data_mut().deadline.on_deadline()));
        arm(&mut store, pre.runtime(), &config.limits, Budgets::Setup)?;
        let policy = pre.pre().instantiate(&mut store).map_err(classify)?;
        policy
            .configure(&mut store, params)
            .map_err(classify)?
            .map_err(SetupError::Rejected)?;
        Ok(PolicyInstance { store, policy })
    }
}
