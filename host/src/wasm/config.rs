//! How one policy component is run: the settings (`settings.rs`) it is given, and the
//! parameters handed to its `configure`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::settings::{FailSafe, QuarantineConfig, SandboxLimits, WasiConfig};

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
