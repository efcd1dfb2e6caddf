//! The registry's lifecycle for policies that are components: reloading one from its file or
//! OCI reference, a shadow trial of a candidate component, and compiling a changed file ahead
//! of its reload (feature `wasm`).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::config::PolicySource;
use crate::mutex::lock;
use crate::registry::build::{fetch_oci, read};
use crate::registry::error::RegistryError;
use crate::registry::shadow::{Shadow, ShadowStatus};
use crate::registry::slot::{ReloadOutcome, Slot};

use super::PolicyRegistry;

impl PolicyRegistry {
    /// Reloads the component of policy `name`, its `slot` (the caller holds the writer lock).
    pub(super) fn reload_component(
        &self,
        name: &str,
        slot: &Slot,
    ) -> Result<ReloadOutcome, RegistryError> {
        let ctx = self.build_context();
        let limit = self.components.max_component_bytes;
        // An OCI tag is resolved again: an explicit reload is when an unpinned tag moves.
        let path = match &slot.definition.source {
            PolicySource::Builtin(_) => return Err(RegistryError::Builtin(name.to_owned())),
            PolicySource::Component(path) => Ok(path.clone()),
            PolicySource::Oci(reference) => fetch_oci(name, reference, &slot.definition, &ctx),
        };
        let result = path.and_then(|path| {
            let bytes = read(name, &path, limit)?;
            let active = slot.active.load_full();
            if hex_sha256(&bytes) == active.hash() {
                return Ok(None);
            }
            slot.build(&path, &bytes, &ctx).map(Some)
        });
        match result {
            Ok(None) => {
                *lock(&slot.last_error) = None;
                Ok(ReloadOutcome::Unchanged {
                    version: slot.active.load().version().to_owned(),
                })
            }
            Ok(Some(version)) => Ok(self.install(slot, Arc::new(version), "reload")),
            Err(error) => {
                tracing::error!(policy = name, error = %error,
                    active_version = slot.active.load().version(),
                    "reload failed; the active version keeps serving");
                slot.reload_failed(error.to_string());
                Err(error.into())
            }
        }
    }

    /// Starts a shadow trial for `name`: the component at `path`, built with the policy's
    /// parameters and limits, answers beside the active version on a `sample` share (0..=1)
    /// of its decisions. A trial already running is replaced.
    pub fn shadow(
        &self,
        name: &str,
        path: &Path,
        sample: f64,
    ) -> Result<ShadowStatus, RegistryError> {
        let _writer = lock(&self.writer);
        let slot = self.slot(name)?;
        if matches!(slot.definition.source, PolicySource::Builtin(_)) {
            return Err(RegistryError::Builtin(name.to_owned()));
        }
        let bytes = read(name, path, self.components.max_component_bytes)?;
        let candidate = slot.build(path, &bytes, &self.build_context())?;
        let shadow = Shadow::new(Arc::new(candidate), sample);
        let status = shadow.status();
        slot.shadow.store(Some(Arc::new(shadow)));
        tracing::info!(
            policy = name,
            candidate_version = &*status.version,
            sample = status.sample,
            "shadow trial started"
        );
        Ok(status)
    }

    /// Starts compiling the component file at `path` for the reload its change will cause,
    /// unless a version of a policy using it already has this content. Runs on the watcher's
    /// early-compile thread; any error waits for the reload to report it.
    pub(crate) fn compile_ahead(&self, path: &Path) {
        let table = self.table.load();
        let mut slots = table
            .slots
            .values()
            .filter(|s| matches!(&s.definition.source, PolicySource::Component(p) if p == path));
        let Some(first) = slots.next() else { return };
        let Ok(bytes) = read("", path, self.components.max_component_bytes) else {
            return;
        };
        let sha256: [u8; 32] = Sha256::digest(&bytes).into();
        let known = std::iter::once(first)
            .chain(slots)
            .flat_map(|s| s.versions())
            .any(|v| v.component().is_some_and(|c| c.sha256() == &sha256));
        if !known {
            let started = Instant::now();
            let components = &self.components;
            if (components.ahead).prepare(
                &components.runtime,
                &bytes,
                &sha256,
                components.cache.as_ref(),
            ) {
                tracing::debug!(path = %path.display(), compile_ms = started.elapsed().as_millis() as u64, "compiled ahead of the debounce");
            }
        }
    }
}

/// The sha256 of `bytes`, in hex.
fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
