//! The registry configuration a command is given: Rebound's TOML, or an Envoy route
//! configuration (or a lone `RetryPolicy`) in proto3 JSON, which `rebound eval` and `rebound
//! simulate` read as a control plane would push it (docs/xds.md "Offline"). What the Envoy
//! resource holds and Rebound does not read is said once, on standard error.

use std::path::Path;

use anyhow::Context;
use rebound::config::RegistryConfig;

/// Whether `path` holds an Envoy resource in JSON rather than Rebound's TOML.
fn is_envoy_json(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// Loads the configuration at `path`, TOML or an Envoy resource's JSON.
pub fn load(path: &Path) -> anyhow::Result<RegistryConfig> {
    if !is_envoy_json(path) {
        return Ok(RegistryConfig::load(path)?);
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let made = rebound::xds::config_from_json(&text, path)?;
    for ignored in &made.ignored {
        tracing::warn!(file = %path.display(), "{ignored}");
    }
    Ok(made.config)
}
