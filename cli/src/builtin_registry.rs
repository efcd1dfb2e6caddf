//! The registry `rebound eval` and `rebound test` decide with when they are given no
//! configuration: every built-in strategy, named as in registry configurations, so that a
//! decision request can name any of them without a file.

use std::path::Path;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;

/// The built-in strategies as a registry configuration: what `eval` decides with when no
/// configuration file is given.
const BUILTINS: &str = r#"
default_policy = "best-effort"
[watch]
enabled = false
[policies.best-effort]
builtin = "best-effort"
[policies.fail-fast]
builtin = "fail-fast"
[policies.fast-fail-on-terminal-error]
builtin = "fast-fail-on-terminal-error"
[policies.cassandra-default]
builtin = "cassandra-default"
[policies.cassandra-downgrading-consistency]
builtin = "cassandra-downgrading-consistency"
"#;

/// The registry of the built-in strategies, named as in registry configurations.
pub fn builtin_registry() -> anyhow::Result<PolicyRegistry> {
    let config = RegistryConfig::parse(BUILTINS, Path::new("<built-in>"), Path::new("."))?;
    Ok(PolicyRegistry::new(config)?)
}
