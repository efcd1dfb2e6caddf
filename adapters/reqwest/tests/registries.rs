//! The registries the middleware's test binaries decide with, written once for both.

use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;

/// A registry deciding with the `http` built-in (docs/http-and-grpc.md), backing off 1 to 5 ms.
pub(crate) fn http_registry() -> Arc<PolicyRegistry> {
    let config = RegistryConfig::parse(
        "default_policy = \"web\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.web]\nbuiltin = \"http\"\nparams = { initial_ms = 1, max_ms = 5 }\n",
        "rebound.toml".as_ref(),
        ".".as_ref(),
    )
    .unwrap();
    Arc::new(PolicyRegistry::new(config).unwrap())
}
