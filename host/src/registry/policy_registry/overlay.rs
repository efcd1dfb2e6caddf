//! Policies and routes a source other than the file adds to it (the xDS source, docs/xds.md):
//! kept beside the configuration so that a reload of the file keeps them, and swapped in with
//! the file's as one configuration, or not at all.

use std::path::Path;

use super::PolicyRegistry;
use crate::config::{ConfigError, RegistryConfig};
use crate::config::{ConfigOverlay, Precedence};
use crate::mutex::lock;
use crate::registry::RegistryError;

impl PolicyRegistry {
    /// The configuration file at `file` with `overlay` in place, if there is one, and which of
    /// its tables took effect.
    fn merged(
        file: &Path,
        overlay: Option<&ConfigOverlay>,
    ) -> Result<(RegistryConfig, Option<Precedence>), ConfigError> {
        match overlay {
            Some(overlay) => crate::config::merged_config(file, overlay)
                .map(|(config, precedence)| (config, Some(precedence))),
            None => RegistryConfig::load(file).map(|config| (config, None)),
        }
    }

    /// The configuration file at `file` with the overlay kept in place, if there is one.
    pub(super) fn load_with_overlay(
        &self,
        file: &Path,
    ) -> Result<(RegistryConfig, Option<Precedence>), ConfigError> {
        Self::merged(file, lock(&self.overlay).as_ref())
    }

    /// Which of the overlay's tables are in effect beside the file's (`None`: no overlay).
    pub fn overlay_precedence(&self) -> Option<Precedence> {
        lock(&self.precedence).clone()
    }

    /// Records which of the overlay's tables took effect with the configuration just applied.
    pub(super) fn set_precedence(&self, precedence: Option<Precedence>) {
        *lock(&self.precedence) = precedence;
    }

    /// Replaces the policies and routes another source adds to the configuration file's
    /// (`None`: none), and applies the file's configuration with them as one swap. If the
    /// result is refused, the running configuration and the previous overlay stay. A registry
    /// not built from a file has nothing to add them to.
    pub fn apply_overlay(&self, overlay: Option<ConfigOverlay>) -> Result<(), RegistryError> {
        let file = self.table.load().config.file.clone();
        let Some(file) = file else {
            return Err(RegistryError::Overlay(
                "policies from another source need a registry built from a configuration file"
                    .into(),
            ));
        };
        let (config, precedence) = Self::merged(&file, overlay.as_ref()).map_err(|error| {
            self.config_reload_failed(error.to_string());
            RegistryError::from(error)
        })?;
        self.apply(config)?;
        *lock(&self.overlay) = overlay;
        self.set_precedence(precedence);
        Ok(())
    }
}
