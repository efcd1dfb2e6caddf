//! A named policy's slot: its definition, its active version (swapped atomically), the
//! previous one kept for rollback, a shadow candidate, and its status.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::{ArcSwap, ArcSwapOption};
use serde::Serialize;

use super::shadow::Shadow;
use super::status::{PolicyStatus, VersionStatus};
use super::version::PolicyVersion;
use crate::config::PolicyDefinition;
use crate::mutex::lock;
use crate::rules::Guard;
use crate::wasm::PolicyStats;
#[cfg(feature = "wasm")]
use {super::build::BuildContext, super::error::BuildError, std::path::Path};

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReloadOutcome {
    /// The file has the active version's content: nothing changed.
    Unchanged {
        /// The active version.
        version: String,
    },
    /// A new version is active; the old one is kept for rollback.
    Swapped {
        /// The version replaced.
        from: String,
        /// The version now active.
        to: String,
    },
}

/// A named policy: its definition and its versions.
pub(super) struct Slot {
    pub name: String,
    pub definition: PolicyDefinition,
    pub active: ArcSwap<PolicyVersion>,
    pub previous: ArcSwapOption<PolicyVersion>,
    pub shadow: ArcSwapOption<Shadow>,
    pub last_error: Mutex<Option<String>>,
    swaps: AtomicU64,
    reload_failures: AtomicU64,
}

impl Slot {
    pub(super) fn new(name: &str, definition: PolicyDefinition, version: PolicyVersion) -> Self {
        Slot {
            name: name.to_owned(),
            definition,
            active: ArcSwap::from_pointee(version),
            previous: ArcSwapOption::empty(),
            shadow: ArcSwapOption::empty(),
            last_error: Mutex::new(None),
            swaps: AtomicU64::new(0),
            reload_failures: AtomicU64::new(0),
        }
    }

    /// Records that the policy failed to load at start (it is a stand-in): the error stays in
    /// the status until a reload succeeds.
    pub(super) fn load_failed(&self, error: String) {
        *lock(&self.last_error) = Some(error);
    }

    /// Records a failed reload: the error stays in the status until a reload succeeds.
    #[cfg(feature = "wasm")]
    pub(super) fn reload_failed(&self, error: String) {
        *lock(&self.last_error) = Some(error);
        self.reload_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Makes `version` active, keeping the one it replaces for rollback.
    pub(super) fn install(&self, version: Arc<PolicyVersion>, why: &str) -> ReloadOutcome {
        // Writers are serialised, so nothing replaces the active version between this load and
        // the store below. The bookkeeping comes first: whoever sees the new version also sees
        // the swap counted.
        let to = version.version().to_owned();
        let old = self.active.load_full();
        let from = old.version().to_owned();
        // A stand-in is nothing to roll back to.
        if !old.is_stand_in() {
            self.previous.store(Some(old));
        }
        self.swaps.fetch_add(1, Ordering::Relaxed);
        *lock(&self.last_error) = None;
        self.active.store(version);
        tracing::info!(
            policy = &*self.name,
            from = &*from,
            to = &*to,
            why,
            "policy version swapped"
        );
        ReloadOutcome::Swapped { from, to }
    }

    /// Builds a version of this policy from the component `bytes` read from `path`, reusing
    /// the compiled component of a version it already holds with the same content.
    #[cfg(feature = "wasm")]
    pub(super) fn build(
        &self,
        path: &Path,
        bytes: &[u8],
        ctx: &BuildContext<'_>,
    ) -> Result<PolicyVersion, BuildError> {
        PolicyVersion::from_component_bytes(
            &self.name,
            &self.definition,
            path,
            bytes,
            ctx,
            &self.versions(),
        )
    }

    pub(super) fn versions(&self) -> Vec<Arc<PolicyVersion>> {
        let mut known = vec![self.active.load_full()];
        known.extend(self.previous.load_full());
        known.extend(self.shadow.load_full().map(|s| Arc::clone(s.candidate())));
        known
    }

    pub(super) fn status(&self) -> PolicyStatus {
        let active = self.active.load_full();
        let stats = component_stats(&active);
        PolicyStatus {
            name: self.name.clone(),
            active: VersionStatus::of(&active),
            previous: self.previous.load_full().map(|v| VersionStatus::of(&v)),
            guard_exempt: active.guard() == Guard::Exempt,
            failures: stats
                .as_ref()
                .map(|s| s.failures.clone())
                .unwrap_or_default(),
            quarantined: stats.as_ref().is_some_and(|s| s.quarantined),
            quarantines: stats.as_ref().map_or(0, |s| s.quarantines),
            budget_buckets: stats.as_ref().map_or(0, |s| s.budget_buckets),
            budget_refusals: stats.as_ref().map_or(0, |s| s.budget_refusals),
            last_failure: stats.and_then(|s| s.last_failure),
            swaps: self.swaps.load(Ordering::Relaxed),
            last_error: lock(&self.last_error).clone(),
            reload_failures: self.reload_failures.load(Ordering::Relaxed),
            shadow: self.shadow.load_full().map(|s| s.status()),
            budget: None,
        }
    }
}

/// The health of `version`'s component, if it is one.
fn component_stats(version: &PolicyVersion) -> Option<PolicyStats> {
    #[cfg(feature = "wasm")]
    return version.wasm().map(|w| w.stats());
    #[cfg(not(feature = "wasm"))]
    {
        let _ = version;
        None
    }
}
