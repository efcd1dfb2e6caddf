//! How one policy component is run: the settings (`settings.rs`) it is given, and the
//! parameters handed to its `configure`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::settings::{FailSafe, QuarantineConfig, SandboxLimits, WasiConfig};

/// How a policy component is run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
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

// Setters: the struct is `#[non_exhaustive]`, so a program starts from `Default`.
impl WasmStrategyConfig {
    /// These settings with per-call `limits`.
    pub fn with_limits(mut self, limits: SandboxLimits) -> Self {
        self.limits = limits;
        self
    }

    /// These settings answering `fail_safe` when a call fails.
    pub fn with_fail_safe(mut self, fail_safe: FailSafe) -> Self {
        self.fail_safe = fail_safe;
        self
    }

    /// These settings quarantining as `quarantine` says.
    pub fn with_quarantine(mut self, quarantine: QuarantineConfig) -> Self {
        self.quarantine = quarantine;
        self
    }

    /// These settings handing `params` to the policy's `configure`.
    pub fn with_params<K, V>(mut self, params: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        self.params = (params.into_iter())
            .map(|(key, value)| (key.into(), value.into()))
            .collect::<BTreeMap<_, _>>();
        self
    }

    /// These settings answering the policy's WASI imports as `wasi` says.
    pub fn with_wasi(mut self, wasi: WasiConfig) -> Self {
        self.wasi = wasi;
        self
    }
}
