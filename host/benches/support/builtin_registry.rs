//! The registry the adapters' benches decide with: one built-in policy, the default, with no
//! file watching and no artifact cache, so that only deciding is measured.

use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;

/// A registry whose only policy, `bench`, is the built-in `builtin`.
pub(crate) fn builtin_registry(builtin: &str) -> Arc<PolicyRegistry> {
    builtin_registry_with(builtin, "")
}

/// [`builtin_registry`], the policy's table given `lines` more (such as
/// `attempt_timeout_ms = 1000`).
pub(crate) fn builtin_registry_with(builtin: &str, lines: &str) -> Arc<PolicyRegistry> {
    let text = format!(
        "default_policy = \"bench\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.bench]\nbuiltin = \"{builtin}\"\n{lines}\n"
    );
    let config = RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref())
        .expect("a valid one-policy configuration");
    Arc::new(PolicyRegistry::new(config).expect("a registry of one built-in policy"))
}
