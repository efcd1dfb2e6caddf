//! The `[throttles.NAME]` tables: a retry throttle that looks at failures (`kind = "tokens"`,
//! gRFC A6's `retryThrottling`, or `kind = "adaptive"`), what a failure of each class costs,
//! and what it is kept per. Policies name them with `throttle` (`controls::ControlTables`).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::errors::Errors;
use super::ConfigError;
use crate::throttle::{AdaptiveConfig, FailureCosts, ThrottleConfig, ThrottleKind, ThrottleScope};

/// A throttle as configured: its parameters and what it is kept per.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ThrottleDefinition {
    /// Its parameters.
    pub config: ThrottleConfig,
    /// What it is kept per (`per`; `policy` when the table does not say).
    pub scope: ThrottleScope,
    /// The most scopes with a throttle of their own (`max_scopes`); later ones share the
    /// common throttle.
    pub max_scopes: usize,
}

impl ThrottleDefinition {
    /// `max_scopes` when the table does not say.
    pub const DEFAULT_MAX_SCOPES: usize = 1024;
    /// The largest `max_scopes`.
    pub const MOST_SCOPES: usize = 100_000;
}

/// A `[throttles.NAME]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawThrottle {
    kind: Spanned<String>,
    #[serde(default)]
    max_tokens: Option<f64>,
    #[serde(default)]
    token_ratio: Option<f64>,
    #[serde(default)]
    k: Option<f64>,
    #[serde(default)]
    window_ms: Option<u64>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    costs: Option<FailureCosts>,
    #[serde(default)]
    per: Option<String>,
    #[serde(default)]
    max_scopes: Option<usize>,
}

/// The `[throttles]` tables.
pub(super) fn throttles(
    raw: &BTreeMap<String, Spanned<RawThrottle>>,
    errors: &Errors<'_>,
) -> Result<BTreeMap<String, ThrottleDefinition>, ConfigError> {
    let mut throttles = BTreeMap::new();
    for (name, spanned) in raw {
        let raw = spanned.get_ref();
        let at = |field: &str, message: String| {
            errors.at(spanned.span(), format!("throttles.{name}.{field}"), message)
        };
        let only_for = |field: &str, set: bool, kind: &str| {
            if set {
                Err(at(field, format!("applies to `kind = \"{kind}\"` only")))
            } else {
                Ok(())
            }
        };
        let kind = match raw.kind.get_ref().as_str() {
            "tokens" => {
                only_for("k", raw.k.is_some(), "adaptive")?;
                only_for("window_ms", raw.window_ms.is_some(), "adaptive")?;
                only_for("seed", raw.seed.is_some(), "adaptive")?;
                let required = |field: &str, value: Option<f64>| {
                    value.ok_or_else(|| at(field, "is required for `kind = \"tokens\"` (gRFC A6 `retryThrottling`)".into()))
                };
                ThrottleKind::Tokens {
                    max_tokens: required("max_tokens", raw.max_tokens)?,
                    token_ratio: required("token_ratio", raw.token_ratio)?,
                }
            }
            "adaptive" => {
                only_for("max_tokens", raw.max_tokens.is_some(), "tokens")?;
                only_for("token_ratio", raw.token_ratio.is_some(), "tokens")?;
                let default = AdaptiveConfig::default();
                ThrottleKind::Adaptive(AdaptiveConfig {
                    k: raw.k.unwrap_or(default.k),
                    window_ms: raw.window_ms.unwrap_or(default.window_ms),
                    seed: raw.seed,
                })
            }
            other => {
                return Err(errors.at(
                    raw.kind.span(),
                    format!("throttles.{name}.kind"),
                    format!("`{other}`: expected `tokens` (gRFC A6 retryThrottling) or `adaptive` (client-side adaptive throttling)"),
                ))
            }
        };
        let config = ThrottleConfig {
            kind,
            costs: raw.costs.unwrap_or_default(),
        };
        config.validate().map_err(|e| at(&e.field, e.message))?;
        let scope = match &raw.per {
            Some(per) => per.parse().map_err(|e| at("per", format!("{e}")))?,
            None => ThrottleScope::Policy,
        };
        let max_scopes = raw
            .max_scopes
            .unwrap_or(ThrottleDefinition::DEFAULT_MAX_SCOPES);
        if !(1..=ThrottleDefinition::MOST_SCOPES).contains(&max_scopes) {
            return Err(at(
                "max_scopes",
                format!(
                    "{max_scopes} is out of range; expected 1 to {}",
                    ThrottleDefinition::MOST_SCOPES
                ),
            ));
        }
        throttles.insert(
            name.clone(),
            ThrottleDefinition {
                config,
                scope,
                max_scopes,
            },
        );
    }
    Ok(throttles)
}
