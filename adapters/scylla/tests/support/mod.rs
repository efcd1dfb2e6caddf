//! A registry for the adapter's tests: the built-in Cassandra policies and their WebAssembly
//! builds (`scripts/build-guests.sh`), each as a named policy.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::{Arc, OnceLock};

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;

#[path = "../../../test_support.rs"]
mod test_support;
#[allow(unused_imports)] // each test binary uses a different subset
pub(crate) use test_support::{guest, WatchedPolicy};

/// The registry configuration of the Cassandra policies, native and WebAssembly.
pub(crate) fn config_text() -> String {
    format!(
        "default_policy = \"cassandra-default\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.cassandra-default]\nbuiltin = \"cassandra-default\"\n\
         [policies.cassandra-downgrading]\nbuiltin = \"cassandra-downgrading-consistency\"\n\
         [policies.wasm-cassandra-default]\ncomponent = {:?}\n\
         [policies.wasm-cassandra-downgrading]\ncomponent = {:?}\n\
         [profiles.downgrading]\npolicy = \"cassandra-downgrading\"\n",
        guest("cassandra_default"),
        guest("cassandra_downgrading_consistency"),
    )
}

/// One registry for a test binary.
pub(crate) fn registry() -> Arc<PolicyRegistry> {
    static REGISTRY: OnceLock<Arc<PolicyRegistry>> = OnceLock::new();
    Arc::clone(REGISTRY.get_or_init(|| {
        let config = RegistryConfig::parse(&config_text(), "rebound.toml".as_ref(), ".".as_ref())
            .unwrap_or_else(|e| panic!("{e}"));
        Arc::new(PolicyRegistry::new(config).unwrap_or_else(|e| panic!("{e}")))
    }))
}
