//! What decides for the executor: the orchestrator alone, or a policy registry.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use crate::orchestrator::{Decision, Orchestrator};
use crate::reason::RetryReason;
use crate::request::Request;

/// Nothing could decide for the request (an unknown policy or profile name).
#[derive(Debug, thiserror::Error)]
#[error("cannot decide: {0}")]
pub struct DecideError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Decides what happens to a failed request: [`Orchestrator`] (the request's own strategy or
/// the default) or `PolicyRegistry` (the request's policy by name, profile or route).
pub trait Decider: Send + Sync {
    /// The decision for `request`, which failed for `reason`, at `now` (tokio's clock, so
    /// that paused time in tests moves the deadline too).
    fn decide<'a>(
        &'a self,
        request: &'a mut Request,
        reason: &'a RetryReason,
        now: Instant,
    ) -> impl Future<Output = Result<Decision, DecideError>> + Send + 'a;
}

impl Decider for Orchestrator {
    async fn decide(
        &self,
        request: &mut Request,
        reason: &RetryReason,
        now: Instant,
    ) -> Result<Decision, DecideError> {
        Ok(self.maybe_retry_at(request, reason, now).await)
    }
}

#[cfg(feature = "registry")]
impl Decider for crate::registry::PolicyRegistry {
    async fn decide(
        &self,
        request: &mut Request,
        reason: &RetryReason,
        now: Instant,
    ) -> Result<Decision, DecideError> {
        match self.maybe_retry_at(request, reason, now).await {
            Ok(decided) => Ok(decided.decision),
            Err(error) => Err(DecideError(Box::new(error))),
        }
    }
}

impl<D: Decider> Decider for Arc<D> {
    fn decide<'a>(
        &'a self,
        request: &'a mut Request,
        reason: &'a RetryReason,
        now: Instant,
    ) -> impl Future<Output = Result<Decision, DecideError>> + Send + 'a {
        (**self).decide(request, reason, now)
    }
}
