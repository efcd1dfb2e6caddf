//! How a policy component is run: its sandbox limits, the fail-safe answer, quarantine, the
//! parameters handed to `configure`, and what its WASI imports answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::runtime::SandboxLimits;
use super::wasi::WasiConfig;
use crate::action::{PolicyFailure, RetryAction};
use crate::context::DecisionContext;
use crate::request::Request;
use crate::strategy::BestEffort;

/// What a failed (or quarantined) policy call answers instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailSafe {
    /// No retry: the request is cancelled with a reason saying the policy failed.
    #[default]
    NoRetry,
    /// The built-in best-effort decision.
    BestEffort,
}

impl FailSafe {
    /// The answer for a policy that failed as `failure` describes: the failure is noted in
    /// `context` (its detail reaches the decision), then no retry or best effort.
    pub(crate) fn answer(
        self,
        failure: PolicyFailure,
        request: &Request,
        context: &DecisionContext<'_>,
    ) -> RetryAction {
        let kind = failure.kind;
        context.note_failure(failure);
        match self {
            FailSafe::NoRetry => RetryAction::PolicyFailed(kind),
            FailSafe::BestEffort => BestEffort::default_decision(request, context.reason()),
        }
    }
}

/// When a failing policy is quarantined, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuarantineConfig {
    /// Consecutive failed calls that quarantine the policy (0: never; at most 1 000 000).
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 1_000_000>")]
    pub after_failures: u32,
    /// How long a quarantine lasts before one call is let through to probe recovery, in
    /// milliseconds (0 to a day).
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 86_400_000>")]
    pub cooldown_ms: u64,
}

impl Default for QuarantineConfig {
    fn default() -> Self {
        QuarantineConfig {
            after_failures: 5,
            cooldown_ms: 30_000,
        }
    }
}

/// How a policy component is run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WasmStrategyConfig {
    /// Per-call limits.
    pub limits: SandboxLimits,
    /// The answer when a call fails.
    pub fail_safe: FailSafe,
    /// Quarantine of a policy that keeps failing.
    pub quarantine: QuarantineConfig,
    /// Parameters handed to the policy's `configure`.
    pub params: BTreeMap<String, String>,
    /// What the policy's WASI imports answer, if it has any.
    pub wasi: WasiConfig,
}
