//! A retry budget kept per client (`[budgets.NAME] per = "client_context.KEY"`): each value
//! of the request's client-context entry `KEY` draws from a budget of its own, so one client's
//! storm refuses only its own retries. Requests without the entry, and clients past
//! `max_clients`, share the budget's common one.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::config::BudgetScope;
use crate::controls::PerClient;
use crate::request::Request;
use crate::traffic_budget::{BudgetConfig, TrafficBudget};

/// The longest client name, in bytes; a longer one draws from the common budget.
pub const MAX_CLIENT_BYTES: usize = 128;

/// The budgets of one `[budgets.NAME]` table kept per client.
#[derive(Debug)]
pub(crate) struct ClientBudgets {
    name: String,
    config: BudgetConfig,
    scope: BudgetScope,
    budgets: RwLock<HashMap<Box<str>, Arc<TrafficBudget>>>,
}

impl ClientBudgets {
    pub(crate) fn new(name: &str, config: BudgetConfig, scope: BudgetScope) -> Self {
        ClientBudgets {
            name: name.to_owned(),
            config,
            scope,
            budgets: RwLock::default(),
        }
    }

    /// What it was made with.
    pub(crate) fn made_with(&self) -> (BudgetConfig, &BudgetScope) {
        (self.config, &self.scope)
    }

    /// Every client's budget.
    pub(crate) fn each(&self) -> Vec<Arc<TrafficBudget>> {
        self.read().values().cloned().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Box<str>, Arc<TrafficBudget>>> {
        self.budgets.read().unwrap_or_else(|p| p.into_inner())
    }
}

impl PerClient for ClientBudgets {
    /// The budget `request`'s client draws from; `common` when it names none, a name too
    /// long, or a new one past `max_clients`.
    fn for_request(&self, request: &Request, common: &Arc<TrafficBudget>) -> Arc<TrafficBudget> {
        let Some(client) = request.client_context().get(&self.scope.key) else {
            return Arc::clone(common);
        };
        if client.len() > MAX_CLIENT_BYTES {
            return Arc::clone(common);
        }
        let known = self.read().get(client.as_str()).cloned();
        if let Some(budget) = known {
            return budget;
        }
        let mut budgets = self.budgets.write().unwrap_or_else(|p| p.into_inner());
        if budgets.len() >= self.scope.max_clients && !budgets.contains_key(client.as_str()) {
            return Arc::clone(common);
        }
        let budget = budgets.entry(client.as_str().into()).or_insert_with(|| {
            Arc::new(
                TrafficBudget::new(self.config)
                    .expect("validated with the configuration")
                    .named(format!("{}[{client}]", self.name)),
            )
        });
        Arc::clone(budget)
    }
}
