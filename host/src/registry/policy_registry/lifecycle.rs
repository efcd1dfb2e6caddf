//! The registry's lifecycle: reading a policy's active version, reloading, rolling back,
//! promoting or abandoning a shadow trial (started in `component_lifecycle`), applying or
//! reloading the configuration, and status. Changes
//! are serialised by the registry's writer lock, built off the deciding path and published
//! with one atomic swap.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::{ControlNames, PolicySource, RegistryConfig};
use crate::mutex::lock;
#[cfg(not(feature = "wasm"))]
use crate::registry::error::BuildError;
use crate::registry::error::RegistryError;
use crate::registry::shadow::{Shadow, ShadowStatus};
use crate::registry::slot::{ReloadOutcome, Slot};
use crate::registry::status::{
    BreakerStatus, BudgetStatus, PolicyStatus, RegistryStatus, ThrottleStatus,
};
use crate::registry::table::{build_table, Failed};
use crate::registry::version::PolicyVersion;

use super::PolicyRegistry;

impl PolicyRegistry {
    /// The active version of policy `name`.
    pub fn active(&self, name: &str) -> Result<Arc<PolicyVersion>, RegistryError> {
        Ok(self.table.load().slot(name)?.active.load_full())
    }

    pub(super) fn slot(&self, name: &str) -> Result<Arc<Slot>, RegistryError> {
        self.table.load().slot(name).cloned()
    }

    /// Reloads policy `name` from its file: compiles (or fetches from the cache), configures
    /// and smoke-calls the new content off the deciding path, then swaps it in. A file whose
    /// content is already active changes nothing. On failure the active version keeps serving
    /// and the error is logged and kept in the policy's status. A built-in has no file.
    pub fn reload(&self, name: &str) -> Result<ReloadOutcome, RegistryError> {
        let _writer = lock(&self.writer);
        let slot = self.slot(name)?;
        if matches!(slot.definition.source, PolicySource::Builtin(_)) {
            return Err(RegistryError::Builtin(name.to_owned()));
        }
        #[cfg(feature = "wasm")]
        return self.reload_component(name, &slot);
        #[cfg(not(feature = "wasm"))]
        Err(RegistryError::Build(BuildError::ComponentsNeedWasm {
            policy: name.to_owned(),
        }))
    }

    /// Makes the previous version of `name` active again (the current one becomes the
    /// previous: a second rollback undoes the first). It stays active until the policy's file
    /// changes again.
    pub fn rollback(&self, name: &str) -> Result<ReloadOutcome, RegistryError> {
        let _writer = lock(&self.writer);
        let slot = self.slot(name)?;
        let previous = slot
            .previous
            .load_full()
            .ok_or_else(|| RegistryError::NoPrevious(name.to_owned()))?;
        Ok(self.install(&slot, previous, "rollback"))
    }

    /// Makes the shadow candidate of `name` the active version and ends the trial.
    pub fn promote(&self, name: &str) -> Result<ReloadOutcome, RegistryError> {
        let _writer = lock(&self.writer);
        let (slot, shadow) = self.end_trial(name, "promoted")?;
        Ok(self.install(&slot, Arc::clone(shadow.candidate()), "promote"))
    }

    /// Makes `version` the active one of `slot` (see [`Slot::install`]), the table told first
    /// whether it hedges.
    pub(super) fn install(
        &self,
        slot: &Slot,
        version: Arc<PolicyVersion>,
        why: &str,
    ) -> ReloadOutcome {
        self.table.load().installing(&version);
        slot.install(version, why)
    }

    /// Ends the shadow trial of `name` without using the candidate.
    pub fn abandon(&self, name: &str) -> Result<ShadowStatus, RegistryError> {
        let _writer = lock(&self.writer);
        Ok(self.end_trial(name, "abandoned")?.1.status())
    }

    /// Removes the shadow trial of `name` (the caller holds the writer lock) and logs its tally.
    fn end_trial(
        &self,
        name: &str,
        ending: &str,
    ) -> Result<(Arc<Slot>, Arc<Shadow>), RegistryError> {
        let slot = self.slot(name)?;
        let shadow = slot
            .shadow
            .swap(None)
            .ok_or_else(|| RegistryError::NoShadow(name.to_owned()))?;
        let status = shadow.status();
        tracing::info!(
            policy = name,
            compared = status.compared,
            disagreements = status.disagreements,
            ending,
            "shadow trial ended"
        );
        Ok((slot, shadow))
    }

    /// Replaces the configuration. Policies whose definition is unchanged keep their versions,
    /// counters and trials; new and changed ones are loaded first. If any fails, the running
    /// configuration stays and the error is returned (and kept in the status).
    pub fn apply(&self, mut config: RegistryConfig) -> Result<(), RegistryError> {
        let _writer = lock(&self.writer);
        let old = self.table.load_full();
        if needs_restart(&mut config, &old.config) {
            tracing::warn!("cache_dir or [engine] changed: they take effect after a restart");
        }
        match build_table(&self.build_context(), config, Some(&old), Failed::Refuse) {
            Ok(table) => {
                self.table.store(Arc::new(table));
                *lock(&self.config_error) = None;
                tracing::info!("configuration applied");
                Ok(())
            }
            Err(error) => {
                tracing::error!(error = %error, "new configuration refused; the running one stays");
                self.config_reload_failed(error.to_string());
                Err(error)
            }
        }
    }

    /// Records a refused configuration: the error stays in the status until one applies.
    pub(super) fn config_reload_failed(&self, error: String) {
        *lock(&self.config_error) = Some(error);
        self.config_reload_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads the configuration file again and applies it. A bad file leaves the running
    /// configuration in place; the error is returned and kept in the status.
    pub fn reload_config(&self) -> Result<(), RegistryError> {
        let file = self.table.load().config.file.clone();
        let Some(file) = file else {
            return Ok(());
        };
        match self.load_with_overlay(&file) {
            Ok((config, precedence)) => {
                self.apply(config)?;
                self.set_precedence(precedence);
                Ok(())
            }
            Err(error) => {
                tracing::error!(error = %error, "configuration reload refused; the running one stays");
                self.config_reload_failed(error.to_string());
                Err(error.into())
            }
        }
    }
    /// The policies whose component file is `path`.
    pub(crate) fn policies_at(&self, path: &Path) -> Vec<String> {
        self.table
            .load()
            .config
            .policies
            .iter()
            .filter(|(_, d)| matches!(&d.source, PolicySource::Component(p) if p == path))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The configuration file and every component file.
    pub(crate) fn watched_files(&self) -> (Option<PathBuf>, Vec<PathBuf>) {
        let table = self.table.load();
        let files = table
            .config
            .policies
            .values()
            .filter_map(|d| match &d.source {
                PolicySource::Component(path) => Some(path.clone()),
                // Builtins have no file; an OCI component changes by an explicit reload.
                PolicySource::Builtin(_) | PolicySource::Oci(_) => None,
            })
            .collect();
        (table.config.file.clone(), files)
    }

    /// The status of every policy.
    pub fn status(&self) -> RegistryStatus {
        let table = self.table.load();
        let mut policies: Vec<PolicyStatus> = table
            .slots
            .values()
            .map(|slot| table.policy_status(slot))
            .collect();
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        let (reload_panics, last_reload_panic) = self.reload_path.panics();
        RegistryStatus {
            watching: self.reload_path.watching(),
            reload_panics,
            last_reload_panic,
            config_file: table.config.file.as_ref().map(|f| f.display().to_string()),
            config_error: lock(&self.config_error).clone(),
            config_reload_failures: self.config_reload_failures.load(Ordering::Relaxed),
            overlay: self.overlay_precedence(),
            default_policy: table.config.default_policy.clone(),
            policies,
            latencies: table.latencies.stats(),
            #[cfg(feature = "wasm")]
            cache: self.cache().map(crate::wasm::ArtifactCache::stats),
            budgets: table
                .config
                .budgets
                .keys()
                .map(|name| {
                    let users = policies_naming(&table.config, |names| &names.budget, name);
                    let clients = table.client_budgets.get(name).map(|c| &**c);
                    BudgetStatus::of(&table.budgets[name], clients, users)
                })
                .collect(),
            throttles: (table.config.throttles.keys())
                .map(|name| {
                    let users = policies_naming(&table.config, |names| &names.throttle, name);
                    ThrottleStatus::of(name, &table.throttles[name], users)
                })
                .collect(),
            breakers: (table.config.breakers.keys())
                .map(|name| {
                    let users = policies_naming(&table.config, |names| &names.breaker, name);
                    BreakerStatus::of(name, &table.breakers[name], users)
                })
                .collect(),
        }
    }

    /// The status of policy `name`.
    pub fn policy_status(&self, name: &str) -> Result<PolicyStatus, RegistryError> {
        let table = self.table.load();
        Ok(table.policy_status(table.slot(name)?))
    }
}

/// The policies whose control `field` names `table`, for the status of that table.
fn policies_naming(
    config: &RegistryConfig,
    field: fn(&ControlNames) -> &Option<String>,
    table: &str,
) -> Vec<String> {
    (config.policy_controls.iter())
        .filter(|(_, names)| field(names).as_deref() == Some(table))
        .map(|(policy, _)| policy.clone())
        .collect()
}

/// Whether `config` changes what only a restart applies (`cache_dir`, `[engine]`) from `old`,
/// the running configuration. The engine settings `config` leaves unset keep what the host
/// started with first: `rebound serve` sets isolation and the ticker's priority itself when the
/// file does not, and a reload of the same file changes neither.
fn needs_restart(config: &mut RegistryConfig, old: &RegistryConfig) -> bool {
    let engine = &mut config.engine;
    if engine.isolation.is_none() {
        engine.isolation = old.engine.isolation;
    }
    if engine.ticker_priority.is_none() {
        engine.ticker_priority = old.engine.ticker_priority;
    }
    config.cache_dir != old.cache_dir || config.engine != old.engine
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IsolationConfig;
    use crate::wasm::TickerPriority;

    fn config(engine: &str) -> RegistryConfig {
        let text =
            format!("default_policy = \"p\"\n{engine}\n[policies.p]\nbuiltin = \"best-effort\"\n");
        RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref()).unwrap()
    }

    /// docs/serve.md: a server that set isolation and the ticker's priority itself, reloading
    /// the file it started from, has nothing to restart for; a file that changes the engine
    /// (or names another priority) has.
    #[test]
    fn a_reload_of_the_same_file_needs_no_restart() {
        let mut running = config("");
        running.engine.isolation = Some(IsolationConfig::default());
        running.engine.ticker_priority = Some(TickerPriority::Realtime);
        assert!(!needs_restart(&mut config(""), &running));
        assert!(needs_restart(
            &mut config("[engine]\noptimization = \"speed\""),
            &running
        ));
        assert!(needs_restart(
            &mut config("[engine]\nticker_priority = \"normal\""),
            &running
        ));
    }
}
