//! Shadow mode: a candidate version answers beside the active one on live decisions (all of
//! them or a sample); its answers are never used. Each disagreement is counted and logged with
//! both answers and the inputs, so a team can trial a policy on real traffic first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use super::version::PolicyVersion;
use crate::action::RetryAction;
use crate::decision_log::{LoggedVersion, ShadowAnswers};
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::DecisionContext;
use crate::strategy::{RetryStrategy, Strategy, StrategyFuture};

/// A candidate version running in the shadow of a policy's active version.
#[derive(Debug)]
pub struct Shadow {
    candidate: Arc<PolicyVersion>,
    sample: f64,
    compared: AtomicU64,
    disagreements: AtomicU64,
}

/// A snapshot of a shadow trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ShadowStatus {
    /// The candidate's version label.
    pub version: String,
    /// The candidate's content hash.
    pub hash: String,
    /// The share of decisions the candidate is asked about (1.0: all).
    pub sample: f64,
    /// Decisions both answered.
    pub compared: u64,
    /// Decisions where the answers differed.
    pub disagreements: u64,
    /// `disagreements / compared` (0 before any comparison).
    pub disagreement_rate: f64,
}

impl Shadow {
    /// Runs `candidate` on a `sample` share of decisions (clamped to 0..=1).
    pub fn new(candidate: Arc<PolicyVersion>, sample: f64) -> Self {
        Shadow {
            candidate,
            sample: if sample.is_nan() {
                0.0
            } else {
                sample.clamp(0.0, 1.0)
            },
            compared: AtomicU64::new(0),
            disagreements: AtomicU64::new(0),
        }
    }

    /// The candidate.
    pub fn candidate(&self) -> &Arc<PolicyVersion> {
        &self.candidate
    }

    /// The trial's counters.
    pub fn status(&self) -> ShadowStatus {
        let compared = self.compared.load(Ordering::Relaxed);
        let disagreements = self.disagreements.load(Ordering::Relaxed);
        ShadowStatus {
            version: self.candidate.version().to_owned(),
            hash: self.candidate.hash().to_owned(),
            sample: self.sample,
            compared,
            disagreements,
            disagreement_rate: if compared == 0 {
                0.0
            } else {
                disagreements as f64 / compared as f64
            },
        }
    }

    fn sampled(&self) -> bool {
        crate::sampling::sampled(self.sample)
    }

    fn compare(
        &self,
        active: &PolicyVersion,
        request: &Request,
        reason: &RetryReason,
        used: RetryAction,
        shadow: RetryAction,
    ) {
        self.compared.fetch_add(1, Ordering::Relaxed);
        if used != shadow {
            self.disagreements.fetch_add(1, Ordering::Relaxed);
            tracing::info!(policy = active.name(), active_version = active.version(),
                candidate_version = self.candidate.version(), request_id = request.id(),
                request_type = %request.request_type(), idempotent = request.is_idempotent(),
                retry_attempts = request.retry_attempts(), reason = %reason,
                active = ?used, candidate = ?shadow, "shadow candidate disagrees");
        }
    }
}

/// The active version's strategy with a shadow beside it: answers what the active version
/// answers, and compares the candidate's answer when the decision is sampled.
pub(crate) struct Shadowed<'a> {
    pub active: &'a PolicyVersion,
    pub shadow: &'a Shadow,
    /// Where both answers are kept when the decision log wants them.
    pub answers: Option<&'a OnceLock<ShadowAnswers>>,
}

impl std::fmt::Debug for Shadowed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadowed")
            .field("active", &self.active)
            .field("shadow", &self.shadow)
            .finish()
    }
}

impl Strategy for Shadowed<'_> {
    fn name(&self) -> &str {
        self.active.strategy().name()
    }
}

impl RetryStrategy for Shadowed<'_> {
    fn retry_after<'a>(
        &'a self,
        request: &'a Request,
        context: &'a DecisionContext<'a>,
    ) -> StrategyFuture<'a> {
        let active = self.active.strategy().retry_after(request, context);
        if !self.shadow.sampled() {
            return active;
        }
        StrategyFuture::pending(async move {
            let used = active.await;
            let shadow = self
                .shadow
                .candidate
                .strategy()
                .retry_after(request, &context.without_failure_note())
                .await;
            if let Some(answers) = self.answers {
                let _ = answers.set(ShadowAnswers {
                    candidate: Arc::clone(&self.shadow.candidate) as Arc<dyn LoggedVersion>,
                    active: used,
                    answer: shadow,
                });
            }
            self.shadow
                .compare(self.active, request, context.reason(), used, shadow);
            used
        })
    }
}
