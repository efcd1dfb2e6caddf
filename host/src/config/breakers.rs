//! The `[breakers.NAME]` tables: per-node circuit breakers with Couchbase core-io's parameters
//! (every one optional, its default core-io's) and the most nodes they keep. Policies name them
//! with `breaker` (`controls::ControlTables`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::errors::Errors;
use super::ConfigError;
use crate::breaker::{BreakerConfig, NodeBreakers};

/// A breaker table as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerDefinition {
    /// The breakers' parameters.
    pub config: BreakerConfig,
    /// The most nodes with a breaker (`max_nodes`); attempts to later ones are never refused.
    pub max_nodes: usize,
}

impl BreakerDefinition {
    /// The largest `max_nodes`.
    pub const MOST_NODES: usize = 100_000;
}

/// A `[breakers.NAME]` table as written: durations in milliseconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBreaker {
    #[serde(default)]
    volume_threshold: Option<u32>,
    #[serde(default)]
    error_percentage: Option<u32>,
    #[serde(default)]
    sleep_window_ms: Option<u64>,
    #[serde(default)]
    rolling_window_ms: Option<u64>,
    #[serde(default)]
    max_nodes: Option<usize>,
}

/// The `[breakers]` tables.
pub(super) fn breakers(
    raw: &BTreeMap<String, Spanned<RawBreaker>>,
    errors: &Errors<'_>,
) -> Result<BTreeMap<String, BreakerDefinition>, ConfigError> {
    let mut breakers = BTreeMap::new();
    for (name, spanned) in raw {
        let raw = spanned.get_ref();
        let at = |field: &str, message: String| {
            errors.at(spanned.span(), format!("breakers.{name}.{field}"), message)
        };
        let default = BreakerConfig::default();
        let config = BreakerConfig {
            volume_threshold: raw.volume_threshold.unwrap_or(default.volume_threshold),
            error_percentage: raw.error_percentage.unwrap_or(default.error_percentage),
            sleep_window: raw
                .sleep_window_ms
                .map_or(default.sleep_window, Duration::from_millis),
            rolling_window: raw
                .rolling_window_ms
                .map_or(default.rolling_window, Duration::from_millis),
        };
        config.validate().map_err(|e| at(&e.field, e.message))?;
        let max_nodes = raw.max_nodes.unwrap_or(NodeBreakers::DEFAULT_MAX_NODES);
        if !(1..=BreakerDefinition::MOST_NODES).contains(&max_nodes) {
            return Err(at(
                "max_nodes",
                format!(
                    "{max_nodes} is out of range; expected 1 to {}",
                    BreakerDefinition::MOST_NODES
                ),
            ));
        }
        breakers.insert(name.clone(), BreakerDefinition { config, max_nodes });
    }
    Ok(breakers)
}
