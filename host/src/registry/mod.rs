//! Why a registry: an application names its retry policies once, in a file its operators
//! own, and changes them while it serves — a new version swapped in atomically, the last one
//! kept for rollback, a candidate tried in the shadow first — without a request ever seeing
//! half a change or waiting on one. This module is that one job: the running policies, from a
//! checked [`RegistryConfig`](crate::config::RegistryConfig) to a decision, through reloads.
//! Reading and checking the file is [`config`](crate::config)'s; fetching and verifying
//! components from OCI registries is [`distribution`](crate::distribution)'s (feature `oci`);
//! keeping a misbehaving component's calls off the deciding threads is the crate's `isolation`.
//! Built-ins need nothing more; policies that are components need the `wasm` feature too
//! (without it a configuration naming one is refused, naming the feature).
//!
//! - [`PolicyRegistry`]: resolving a request to its policy, deciding lock-free, reloading,
//!   rolling back, shadowing and promoting; [`RegistryStatus`] what it serves.
//! - [`PolicyVersion`]: one loaded build of a policy (hash, source, load time).
//! - [`RegistryWatcher`]: file watching with debounce; reloads run off the deciding path.
//! - [`Shadow`]: a candidate answering beside the active version, its answers never used.

/// Items that run components: built with the `wasm` feature only.
macro_rules! components {
    ($($item:item)*) => { $(#[cfg(feature = "wasm")] $item)* };
}

components! {
    mod compile_ahead;
    mod components;
}

mod build;
#[cfg(all(test, not(feature = "wasm")))]
mod built_ins_only_tests;
mod client_budgets;
mod error;
mod kept;
mod policy_registry;
mod reload_path;
mod shadow;
mod slot;
mod stand_in;
mod status;
mod table;
mod version;
mod watch;

pub use client_budgets::MAX_CLIENT_BYTES;
pub use error::{BuildError, RegistryError};
pub use policy_registry::{Decided, PolicyRegistry};
pub use reload_path::Watching;
pub use shadow::{Shadow, ShadowStatus};
pub use slot::ReloadOutcome;
pub use status::{
    BreakerStatus, BudgetStatus, NodeBreakerStatus, PolicyStatus, RegistryStatus, ThrottleStatus,
    VersionStatus,
};
pub use version::PolicyVersion;
pub use watch::{RegistryWatcher, WatchError};
