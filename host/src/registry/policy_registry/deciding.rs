//! Deciding: the request's policy resolved once from the published table, without a lock,
//! and the active version's strategy handed to the rules once (`rules::apply`), on the
//! isolation's threads for a component when the engine has them, beside a shadow trial if one
//! runs; the decision logged and counted. Outcome reports reach the budget and throttle of the
//! policy that decides for the request.

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use metrics::SharedString;

use crate::config::SpeculativeExecution;
use crate::controls::{Controls, PolicyControls};
use crate::decide_error::DecideError;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::decision_id::DecisionId;
use crate::decision_log::{
    DecidedBy, DecisionLog, DecisionLogStats, Entry, LoggedVersion, ShadowAnswers,
};
use crate::hedge::ConstantSpeculativeExecution;
#[cfg(feature = "wasm")]
use crate::isolation::Isolated;
use crate::mutex::lock;
use crate::registry::error::RegistryError;
use crate::registry::shadow::{Shadow, Shadowed};
use crate::registry::table::Table;
use crate::registry::version::PolicyVersion;
use crate::request::Request;
use crate::rules::{self, Guard};
use crate::strategy::DecisionContext;
use crate::strategy::RetryStrategy;
use crate::telemetry;
use crate::traffic_budget::TrafficBudget;

use super::PolicyRegistry;

/// A decision, its ID and the version it was resolved to.
#[derive(Debug)]
#[must_use]
pub struct Decided {
    /// The orchestrator's decision.
    pub decision: Decision,
    /// The version that decided; `None` for a strategy the caller chose for the request
    /// ([`DecisionContext::with_strategy`]).
    pub version: Option<Arc<PolicyVersion>>,
    /// This decision's unique, time-ordered ID. The decisions of one request's retries share
    /// the request's id ([`Request::id`]), its trail.
    pub decision_id: DecisionId,
}

/// What decides for one request: its own strategy, or a policy's active version (with its
/// shadow trial and its controls, if any, with the budget the request draws from).
enum Target<'s> {
    Own(&'s dyn RetryStrategy),
    Policy {
        version: Arc<PolicyVersion>,
        shadow: Option<Arc<Shadow>>,
        controls: Option<(Arc<Controls>, Option<Arc<TrafficBudget>>)>,
    },
}

impl PolicyRegistry {
    /// Decides for `request`, whose failure `context` describes, with the strategy the context
    /// names for the request (reference 002: a per-request strategy overrides the global one;
    /// `Decided::version` is then `None`) or else the policy the request resolves to by name,
    /// profile or route. The active version is read without a lock and held until the
    /// decision is made, so a swap during the call does not affect it. An `ATTEMPT_TIMEOUT`
    /// failure whose context does not say which timeout cut it is told the one the request's
    /// controls give ([`PolicyRegistry::controls`]).
    pub async fn decide(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Result<Decided, DecideError> {
        let told = (context.lacks_fired_timeout())
            .then(|| context.with_attempt_timeout(self.controls(request).attempt_timeout(request)));
        let context = told.as_ref().unwrap_or(context);
        if let Some(strategy) = context.strategy() {
            let log = sampled_log(&self.table.load());
            return Ok(self
                .decide_for(request, context, log, Target::Own(strategy))
                .await);
        }
        // What deciding needs from the published table, read without a lock; the table is
        // not held across the policy's call.
        let (log, target) = {
            let table = self.table.load();
            let slot = table.resolve(request)?;
            let controls = (table.controls_of(&slot.name))
                .map(|controls| (Arc::clone(controls), controls.budget_for(request)));
            let target = Target::Policy {
                version: slot.active.load_full(),
                shadow: slot.shadow.load_full(),
                controls,
            };
            (sampled_log(&table), target)
        };
        Ok(self.decide_for(request, context, log, target).await)
    }

    /// The decision of `target` for `request`, logged in `log` if given.
    async fn decide_for(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        log: Option<Arc<DecisionLog>>,
        target: Target<'_>,
    ) -> Decided {
        // The request as the policy sees it, kept for the decision log before deciding
        // changes it, and the shadow's answers: boxed, so that the future of a decision that
        // is not logged stays small (an adapter boxes it, and moves it, per request).
        let logged = log
            .as_ref()
            .map(|_| Box::new((request.clone(), context.now(), OnceLock::new())));
        let (decision, version) = match target {
            Target::Own(strategy) => {
                let decision = rules::apply(request, context, strategy, Guard::Enforced).await;
                let labels = || [SharedString::from(strategy.name().to_owned()), "".into()];
                telemetry::record_decision(labels, &decision, context.reason());
                (decision, Err(strategy.name()))
            }
            Target::Policy {
                version,
                shadow,
                controls,
            } => {
                let context = &match &controls {
                    Some((controls, budget)) => controls.charge(context, budget.as_deref()),
                    None => *context,
                };
                let answers = logged.as_ref().map(|logged| &logged.2);
                let decision = self
                    .decide_with(&version, shadow.as_deref(), request, context, answers)
                    .await;
                (decision, Ok(version))
            }
        };
        let decision_id = DecisionId::next();
        // The attempt's span (`telemetry::attempt_span`, or any span with these fields) names
        // the decision.
        let span = tracing::Span::current();
        if !span.is_disabled() {
            span.record("rebound.decision_id", tracing::field::display(decision_id));
            span.record("rebound.decision", decision.name());
            match &version {
                Ok(version) => {
                    span.record("rebound.policy", version.name());
                    span.record("rebound.policy.version", version.version());
                }
                Err(strategy) => {
                    span.record("rebound.policy", *strategy);
                }
            }
        }
        if let (Some(log), Some(logged)) = (log, logged) {
            let (input, at, shadow_answers) = *logged;
            log.record(Entry {
                time: SystemTime::now(),
                decision_id,
                decided_by: match &version {
                    Ok(version) => {
                        DecidedBy::Version(Arc::clone(version) as Arc<dyn LoggedVersion>)
                    }
                    Err(strategy) => DecidedBy::Strategy((*strategy).to_owned()),
                },
                request: input,
                at,
                reason: context.reason().clone(),
                spec: context.error_map_spec().copied(),
                pushback: context.pushback(),
                progress: context.progress(),
                attempt_timeout: context.attempt_timeout(),
                decision: decision.clone(),
                attempts: request.retry_attempts(),
                shadow: shadow_answers.into_inner(),
            });
        }
        Decided {
            decision,
            version: version.ok(),
            decision_id,
        }
    }

    /// The decision of `version` (beside its `shadow` trial, whose answers go to `answers` if
    /// given), on the isolation threads for a component when the engine has them.
    async fn decide_with(
        &self,
        version: &Arc<PolicyVersion>,
        shadow: Option<&Shadow>,
        request: &mut Request,
        context: &DecisionContext<'_>,
        answers: Option<&OnceLock<ShadowAnswers>>,
    ) -> Decision {
        version.count_decision();
        let decision = match shadow {
            None => Self::decide_alone(self, version, request, context).await,
            Some(shadow) => {
                let strategy = Shadowed {
                    active: version,
                    shadow,
                    answers,
                };
                rules::apply(request, context, &strategy, version.guard()).await
            }
        };
        telemetry::record_decision(|| version.metric_labels(), &decision, context.reason());
        decision
    }

    /// The decision of `version` alone: on the isolation threads for a component when the
    /// engine has them (feature `wasm`), else on this thread.
    async fn decide_alone(
        &self,
        version: &Arc<PolicyVersion>,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Decision {
        #[cfg(feature = "wasm")]
        if let Some(isolation) =
            (self.components.isolation.as_ref()).filter(|_| version.wasm().is_some())
        {
            let strategy = Isolated { isolation, version };
            return rules::apply(request, context, &strategy, version.guard()).await;
        }
        rules::apply(request, context, version.strategy(), version.guard()).await
    }

    /// Installs `log` as the decision log (an application's own sink, see
    /// [`DecisionLog::to_writer`]), or removes the log with `None`. It stays until a
    /// configuration changes the `[decision_log]` table.
    pub fn set_decision_log(&self, log: Option<DecisionLog>) {
        let _writer = lock(&self.writer);
        let mut table = Table::clone(&self.table.load());
        table.decision_log = log.map(Arc::new);
        self.table.store(Arc::new(table));
    }

    /// Closes the decision log, if there is one, waiting at most `limit` for it to write the
    /// lines it holds, then removes it; returns how many lines it had not written by then
    /// (see [`DecisionLog::close_within`]).
    pub fn close_decision_log(&self, limit: std::time::Duration) -> u64 {
        let left = match &self.table.load().decision_log {
            Some(log) => log.close_within(limit),
            None => 0,
        };
        self.set_decision_log(None);
        left
    }

    /// What the decision log did so far, if there is one.
    pub fn decision_log_stats(&self) -> Option<DecisionLogStats> {
        self.table
            .load()
            .decision_log
            .as_ref()
            .map(|log| log.stats())
    }

    /// Whether some request's controls can act ([`Decider::controls`]): some policy has a
    /// retry budget, a throttle, breakers or hedging, or counts how requests ended (the `grpc`
    /// built-in's throttling). A caller that builds a request only to ask for its controls
    /// may skip both when none can.
    pub fn has_controls(&self) -> bool {
        (self.table.load().has_controls).load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The controls of the policy that decides for `request` now (its active version's
    /// strategy, its budget, throttle, breakers and hedging), for a retry loop to ask once per
    /// request ([`Decider::controls`]). The request is resolved only when some policy has
    /// controls (lock-free: the published table).
    pub fn controls(&self, request: &Request) -> PolicyControls {
        self.table.load().controls_for(request)
    }

    /// Policy `name`'s `speculative_execution` on a constant timer, as the configuration running
    /// now says (for a driver that sends its speculative executions itself, as
    /// `rebound-scylla`'s); none for one after a latency quantile, which such a driver cannot
    /// follow.
    pub fn speculative_execution(
        &self,
        name: &str,
    ) -> Result<Option<ConstantSpeculativeExecution>, RegistryError> {
        let table = self.table.load();
        Ok(match table.slot(name)?.definition.speculative_execution {
            Some(SpeculativeExecution::Constant(constant)) => Some(constant),
            _ => None,
        })
    }
}

/// The decision log of `table`, when it samples the decision being made.
fn sampled_log(table: &Table) -> Option<Arc<DecisionLog>> {
    table
        .decision_log
        .as_ref()
        .filter(|log| log.sampled())
        .cloned()
}

impl Decider for PolicyRegistry {
    async fn decide(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Result<Decision, DecideError> {
        Ok(PolicyRegistry::decide(self, request, context)
            .await?
            .decision)
    }

    fn controls(&self, request: &Request) -> PolicyControls {
        PolicyRegistry::controls(self, request)
    }
}
