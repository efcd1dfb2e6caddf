//! The registries the middleware's test binaries decide with, written once for both.

use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;

/// A registry whose default policy, `web`, is the built-in `builtin` with `params` (a TOML
/// inline table).
pub(crate) fn builtin_registry(builtin: &str, params: &str) -> Arc<PolicyRegistry> {
    let text = format!(
        "default_policy = \"web\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.web]\nbuiltin = \"{builtin}\"\nparams = {params}\n"
    );
    let config = RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref()).unwrap();
    Arc::new(PolicyRegistry::new(config).unwrap())
}

/// A registry deciding with the `http` built-in (docs/http-and-grpc.md), backing off 1 to 5 ms.
pub(crate) fn http_registry() -> Arc<PolicyRegistry> {
    builtin_registry("http", "{ initial_ms = 1, max_ms = 5 }")
}
