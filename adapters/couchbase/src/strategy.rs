//! The SDK's `RetryStrategy` on a policy registry: each question (idempotence, retries so far,
//! the reason) becomes a Rebound request and failure, and a retry plan becomes the SDK's
//! `RetryAction` (its delay).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use couchbase_core::retry::{RetryAction, RetryReason as SdkReason, RetryRequest, RetryStrategy};
use futures_util::FutureExt;
use rebound::registry::{PolicyRegistry, RegistryError};
use rebound::{Decision, DecisionContext, Request, RequestType};

use crate::reasons::{request_type_of, to_rebound};

/// The Couchbase SDK's `RetryStrategy` on a [`PolicyRegistry`]: couchbase-core 1.1 takes one in
/// each operation's options (`retry_strategy` of the CRUD, query, search, analytics and
/// management options); it has no cluster-wide setting of its own (its default is fail-fast).
#[derive(Debug, Clone)]
pub struct ReboundRetryStrategy {
    registry: Arc<PolicyRegistry>,
    policy: Option<Arc<str>>,
    request_type: Option<RequestType>,
}

/// Request ids for the requests the strategy describes.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The timeout Rebound is told: the SDK keeps the operation's own deadline and does not tell a
/// strategy, so Rebound's capping never ends a retry before the SDK's timeout does.
const NO_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

impl ReboundRetryStrategy {
    /// Decides with `registry`'s routing (the request type's or service's route, else the
    /// default policy).
    pub fn new(registry: Arc<PolicyRegistry>) -> Self {
        ReboundRetryStrategy {
            registry,
            policy: None,
            request_type: None,
        }
    }

    /// Decides with the registry's policy `name`; an unknown name is refused.
    pub fn policy(mut self, name: &str) -> Result<Self, RegistryError> {
        self.registry.active(name)?;
        self.policy = Some(name.into());
        Ok(self)
    }

    /// The operation this strategy is set on (per-operation strategies): its request type
    /// routes the decision and names it in logs. Unset: taken from each reason's service.
    pub fn request_type(mut self, request_type: RequestType) -> Self {
        self.request_type = Some(request_type);
        self
    }

    /// The SDK's question in parts: an operation that is (or is not known to be) idempotent,
    /// retried `retry_attempts` times so far, failed for `reason`. `None`: do not retry.
    ///
    /// The SDK does not tell a strategy the operation, its timeout or its start, nor whether
    /// the request was written: the request type comes from [`request_type`](Self::request_type)
    /// or the reason's service, the SDK keeps the deadline, and what was written follows from
    /// the reason (an in-flight reason marks the request written, so the safety guard holds).
    /// A policy the registry cannot resolve, or one that does not answer at once (components
    /// on isolation threads), answers "do not retry".
    pub fn decide(
        &self,
        is_idempotent: bool,
        retry_attempts: u32,
        reason: SdkReason,
    ) -> Option<RetryAction> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let request_type = self.request_type.unwrap_or_else(|| request_type_of(reason));
        let mut request = Request::new(id, request_type, NO_DEADLINE)
            .expect("a non-zero timeout")
            .with_idempotent(is_idempotent)
            .with_retry_attempts(retry_attempts);
        if let Some(policy) = &self.policy {
            request = request.with_policy(Arc::clone(policy));
        }
        let reason = to_rebound(reason);
        if reason.stage() == rebound::Stage::InFlight {
            request.mark_sent();
        }
        let context = DecisionContext::new(&reason);
        match self.registry.decide(&mut request, &context).now_or_never() {
            Some(Ok(decided)) => match decided.decision {
                Decision::Retry(plan) => Some(RetryAction::new(plan.delay)),
                _ => None,
            },
            Some(Err(error)) => {
                tracing::warn!(%error, "no policy decides for the operation: not retried");
                None
            }
            None => {
                tracing::error!("the policy did not decide at once: not retried");
                None
            }
        }
    }
}

impl RetryStrategy for ReboundRetryStrategy {
    fn retry_after(&self, request: &RetryRequest, reason: &SdkReason) -> Option<RetryAction> {
        self.decide(request.is_idempotent, request.retry_attempts, *reason)
    }
}
