//! The policy registry: named policies from a TOML configuration, each an atomically
//! replaceable version, with hot reload, rollback, shadow trials and status. Built-ins need
//! nothing more; policies that are components need the `wasm` feature too (without it a
//! configuration naming one is refused, naming the feature).
//!
//! - [`RegistryConfig`]: the configuration file and its validation (errors name file, line,
//!   field).
//! - [`PolicyVersion`]: one loaded build of a policy (hash, source, load time).
//! - [`PolicyRegistry`]: resolving a request to its policy, deciding lock-free, reloading,
//!   rolling back, shadowing and promoting.
//! - [`RegistryWatcher`]: file watching with debounce; reloads run off the deciding path.
//! - [`Shadow`]: a candidate answering beside the active version, its answers never used.

/// Items that run components: built with the `wasm` feature only.
macro_rules! components {
    ($($item:item)*) => { $(#[cfg(feature = "wasm")] $item)* };
}

components! {
    mod answer_wait;
    mod call_room;
    mod compile_ahead;
    mod components;
    mod isolation;
    mod time_share;
    mod trust;
}

mod build;
#[cfg(all(test, not(feature = "wasm")))]
mod built_ins_only_tests;
mod builtin;
mod client_budgets;
mod config;
mod error;
mod kept;
mod mutex;
#[cfg(feature = "oci")]
pub mod oci;
#[cfg(feature = "oci")]
mod oci_credentials;
#[cfg(feature = "oci")]
mod oci_signature;
#[cfg(feature = "oci")]
mod oci_store;
mod policy_registry;
mod reload_path;
mod route;
mod shadow;
mod slot;
mod stand_in;
mod status;
mod table;
mod version;
mod watch;

pub use builtin::{Builtin, BuiltinPolicy, MAX_ATTEMPTS_LIMIT};
pub use client_budgets::MAX_CLIENT_BYTES;
pub use config::{
    line_column, BreakerDefinition, BudgetScope, CacheDir, ConfigError, EngineConfig,
    IsolationConfig, Location, PolicyDefinition, PolicySource, RegistryConfig, ThrottleDefinition,
    WatchConfig,
};
pub use error::{BuildError, RegistryError};
#[cfg(feature = "oci")]
pub use oci_credentials::{
    Credential, CredentialsError, RegistryCredentials, PASSWORD_VARIABLE, REGISTRY_VARIABLE,
    TOKEN_VARIABLE, USERNAME_VARIABLE,
};
#[cfg(feature = "oci")]
pub use oci_signature::{ComponentSigner, TrustedKey};
pub use policy_registry::{Decided, PolicyRegistry};
pub use reload_path::Watching;
pub use route::Route;
pub use shadow::{Shadow, ShadowStatus};
pub use slot::ReloadOutcome;
pub use status::{
    BreakerStatus, BudgetStatus, NodeBreakerStatus, PolicyStatus, RegistryStatus, ThrottleStatus,
    VersionStatus,
};
pub use version::PolicyVersion;
pub use watch::{RegistryWatcher, WatchError};
