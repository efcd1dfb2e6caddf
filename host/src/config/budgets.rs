//! The `[budgets.NAME]` tables: a retry budget proportional to traffic, and whether it is
//! kept per client. Policies name them with `budget` (`controls::ControlTables`).

use std::collections::BTreeMap;

use toml::Spanned;

use super::errors::Errors;
use super::raw::RawBudget;
use super::{BudgetScope, ConfigError};
use crate::traffic_budget::BudgetConfig;

/// The `[budgets]` tables.
#[allow(clippy::type_complexity)]
pub(super) fn budgets(
    raw: &BTreeMap<String, Spanned<RawBudget>>,
    errors: &Errors<'_>,
) -> Result<
    (
        BTreeMap<String, BudgetConfig>,
        BTreeMap<String, BudgetScope>,
    ),
    ConfigError,
> {
    let mut budgets = BTreeMap::new();
    let mut scopes = BTreeMap::new();
    for (name, budget) in raw {
        let at = |field: &str, message: String| {
            errors.at(budget.span(), format!("budgets.{name}.{field}"), message)
        };
        let config = budget.get_ref().config();
        config.validate().map_err(|e| at(&e.field, e.message))?;
        budgets.insert(name.clone(), config);
        let raw = budget.get_ref();
        match &raw.per {
            Some(per) => {
                let key = per
                    .strip_prefix("client_context.")
                    .filter(|key| !key.is_empty())
                    .ok_or_else(|| {
                        at(
                            "per",
                            format!("`{per}`: expected `client_context.KEY`, the client-context entry naming the client"),
                        )
                    })?;
                let max_clients = raw.max_clients.unwrap_or(BudgetScope::DEFAULT_MAX_CLIENTS);
                if !(1..=BudgetScope::MOST_CLIENTS).contains(&max_clients) {
                    return Err(at(
                        "max_clients",
                        format!(
                            "{max_clients} is out of range; expected 1 to {}",
                            BudgetScope::MOST_CLIENTS
                        ),
                    ));
                }
                scopes.insert(
                    name.clone(),
                    BudgetScope {
                        key: key.to_owned(),
                        max_clients,
                    },
                );
            }
            None if raw.max_clients.is_some() => {
                return Err(at(
                    "max_clients",
                    "applies to a budget kept per client; add `per = \"client_context.KEY\"`"
                        .into(),
                ))
            }
            None => {}
        }
    }
    Ok((budgets, scopes))
}
