//! Which named controls each policy uses. A policy names its budget, throttle and breakers by
//! the `[budgets]`, `[throttles]` and `[breakers]` tables that define them; each reference is
//! checked here, once, against its section, so a new control is one field of
//! [`ControlNames`] and one line in each step below.

use std::collections::BTreeMap;

use toml::Spanned;

use super::errors::Errors;
use super::raw::RawConfig;
use super::{breakers, budgets, throttles};
use super::{BreakerDefinition, BudgetScope, ConfigError, ThrottleDefinition};
use crate::traffic_budget::BudgetConfig;

/// The named controls one policy uses: the tables its `[policies.NAME]` entry names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlNames {
    /// The budget it draws its retries from (`budget`, a `[budgets.NAME]` table).
    pub budget: Option<String>,
    /// The throttle it counts its failures in (`throttle`, a `[throttles.NAME]` table).
    pub throttle: Option<String>,
    /// The breakers that admit its attempts (`breaker`, a `[breakers.NAME]` table).
    pub breaker: Option<String>,
}

/// The named controls of a configuration, and which of them each policy uses.
pub(super) struct ControlTables {
    pub(super) budgets: BTreeMap<String, BudgetConfig>,
    pub(super) budget_scopes: BTreeMap<String, BudgetScope>,
    pub(super) throttles: BTreeMap<String, ThrottleDefinition>,
    pub(super) breakers: BTreeMap<String, BreakerDefinition>,
    pub(super) policy_controls: BTreeMap<String, ControlNames>,
}

impl ControlTables {
    /// The tables of `raw`, and each policy's references to them, checked.
    pub(super) fn validate(raw: &RawConfig, errors: &Errors<'_>) -> Result<Self, ConfigError> {
        let (budgets, budget_scopes) = budgets::budgets(&raw.budgets, errors)?;
        let throttles = throttles::throttles(&raw.throttles, errors)?;
        let breakers = breakers::breakers(&raw.breakers, errors)?;
        let mut policy_controls = BTreeMap::new();
        for (policy, spanned) in &raw.policies {
            let written = spanned.get_ref();
            let named = Reference { policy, errors };
            let names = ControlNames {
                budget: named.checked("budget", written.budget.as_ref(), &budgets)?,
                throttle: named.checked("throttle", written.throttle.as_ref(), &throttles)?,
                breaker: named.checked("breaker", written.breaker.as_ref(), &breakers)?,
            };
            if names != ControlNames::default() {
                policy_controls.insert(policy.clone(), names);
            }
        }
        let used = |field: fn(&ControlNames) -> &Option<String>| {
            (policy_controls.values())
                .filter_map(move |names| field(names).as_deref())
                .collect::<Vec<_>>()
        };
        warn_unused("budget", budgets.keys(), &used(|n| &n.budget), errors);
        warn_unused("throttle", throttles.keys(), &used(|n| &n.throttle), errors);
        warn_unused("breaker", breakers.keys(), &used(|n| &n.breaker), errors);
        Ok(ControlTables {
            budgets,
            budget_scopes,
            throttles,
            breakers,
            policy_controls,
        })
    }
}

/// A policy's references to named controls.
struct Reference<'a> {
    policy: &'a str,
    errors: &'a Errors<'a>,
}

impl Reference<'_> {
    /// The table its `field` (`budget`, `throttle`, `breaker`) names, if it names one: one of
    /// `tables`, the `[{field}s]` section.
    fn checked<T>(
        &self,
        field: &str,
        written: Option<&Spanned<String>>,
        tables: &BTreeMap<String, T>,
    ) -> Result<Option<String>, ConfigError> {
        let Some(table) = written else {
            return Ok(None);
        };
        if tables.contains_key(table.get_ref()) {
            return Ok(Some(table.get_ref().clone()));
        }
        Err(self.errors.at(
            table.span(),
            format!("policies.{}.{field}", self.policy),
            format!(
                "no {field} named `{}`; expected one of the [{field}s] tables: {}",
                table.get_ref(),
                tables.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        ))
    }
}

/// Warns of each of the `[{field}s]` `tables` that no policy names (`used`).
fn warn_unused<'a>(
    field: &str,
    tables: impl Iterator<Item = &'a String>,
    used: &[&str],
    errors: &Errors<'_>,
) {
    for name in tables.filter(|name| !used.contains(&name.as_str())) {
        tracing::warn!(table = %format!("{field}s.{name}"), file = %errors.file.display(),
            "{field} is not used by any policy (attach it with `{field} = \"{name}\"` in a [policies] table)");
    }
}
