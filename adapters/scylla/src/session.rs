//! The driver's retry hooks on a policy registry: a [`ReboundRetryPolicy`] starts a
//! [`ReboundRetrySession`] per request, which keeps Rebound's view of that request (its
//! idempotence, consistency, retries so far and start) across the driver's questions.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use rebound::cassandra::ConsistencyLevel;
use rebound::registry::{PolicyRegistry, RegistryError};
use rebound::{DecideError, Decision, DecisionContext, NodeChoice, Request, RequestType};
use scylla::errors::RequestAttemptError;
use scylla::policies::retry::{RequestInfo, RetryDecision, RetryPolicy, RetrySession};
use scylla::statement::Consistency;

use crate::consistency::{to_driver, to_rebound};
use crate::errors::{map, Mapped};

/// A retry policy that cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// The registry runs components on isolation threads, which the driver's synchronous
    /// retry hook cannot wait for.
    #[error("the registry's [engine.isolation] runs components on threads of their own; the scylla driver asks its retry policy synchronously, so use a registry without isolation")]
    Isolated,
    /// The policy or profile named is not in the registry.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// The driver's `RetryPolicy` on a [`PolicyRegistry`]: each request's session asks the registry
/// (the policy named with [`policy`](Self::policy), else the profile's, else the registry's
/// route for CQL requests, else its default).
#[derive(Debug, Clone)]
pub struct ReboundRetryPolicy {
    shared: Arc<Shared>,
}

/// What every session of a policy reads.
#[derive(Debug, Clone)]
struct Shared {
    registry: Arc<PolicyRegistry>,
    policy: Option<Arc<str>>,
    profile: Option<Arc<str>>,
    request_timeout: Duration,
}

/// Request ids for the requests the sessions describe (their error contexts and logs): each
/// thread takes a block of [`ID_BLOCK`] at a time, so that ids are unique without every request
/// writing one shared counter.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How many ids a thread takes at once.
const ID_BLOCK: u64 = 1024;

thread_local! {
    /// This thread's next id and the end of its block.
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A request id no other request of this process has.
fn next_id() -> u64 {
    IDS.with(|ids| {
        let (id, end) = match ids.get() {
            (next, end) if next < end => (next, end),
            _ => {
                let start = NEXT_ID.fetch_add(ID_BLOCK, Ordering::Relaxed);
                (start, start + ID_BLOCK)
            }
        };
        ids.set((id + 1, end));
        id
    })
}

impl ReboundRetryPolicy {
    /// The driver's default request timeout, which a session counts the deadline from.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

    /// Decides with `registry`. Refused when the registry isolates components' calls.
    pub fn new(registry: Arc<PolicyRegistry>) -> Result<Self, AdapterError> {
        let isolation = registry.config().engine.isolation;
        if isolation.is_some_and(|i| i.threads > 0) {
            return Err(AdapterError::Isolated);
        }
        let shared = Shared {
            registry,
            policy: None,
            profile: None,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
        };
        Ok(ReboundRetryPolicy {
            shared: Arc::new(shared),
        })
    }

    /// The settings, to change before the policy is handed to the driver.
    fn shared_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.shared)
    }

    /// Decides with the registry's policy `name`; an unknown name is refused.
    pub fn policy(mut self, name: &str) -> Result<Self, AdapterError> {
        self.shared.registry.active(name)?;
        self.shared_mut().policy = Some(name.into());
        Ok(self)
    }

    /// Decides with the registry's profile `name` (reference 003 "Using multiple policies");
    /// an unknown profile is refused.
    pub fn profile(mut self, name: &str) -> Result<Self, AdapterError> {
        let profiles = self.shared.registry.config().profiles;
        if !profiles.contains_key(name) {
            let unknown = DecideError::UnknownProfile {
                name: name.to_owned(),
                known: profiles.keys().cloned().collect::<Vec<_>>().join(", "),
            };
            return Err(RegistryError::from(unknown).into());
        }
        self.shared_mut().profile = Some(name.into());
        Ok(self)
    }

    /// The request timeout of the execution profile this policy serves (the deadline a retry
    /// is capped by, counted from the session's start). Default: 30 s, the driver's.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.shared_mut().request_timeout = timeout;
        }
        self
    }

    /// A session for one request, started now. The request Rebound decides about is made at
    /// the first failure, so a request that succeeds costs a clock read.
    pub fn session(&self) -> ReboundRetrySession {
        ReboundRetrySession {
            shared: Arc::clone(&self.shared),
            start: Instant::now(),
            request: None,
        }
    }
}

impl Shared {
    /// A new request started at `start`, as the policy describes it to the registry.
    fn request(&self, start: Instant, idempotent: bool, consistency: ConsistencyLevel) -> Request {
        let id = next_id();
        let mut request = Request::new_at(id, RequestType::Cql, self.request_timeout, start)
            .expect("a non-zero timeout")
            .with_idempotent(idempotent)
            .with_consistency(consistency);
        if let Some(policy) = &self.policy {
            request = request.with_policy(Arc::clone(policy));
        }
        if let Some(profile) = &self.profile {
            request = request.with_profile(Arc::clone(profile));
        }
        request.mark_sent();
        request
    }
}

impl RetryPolicy for ReboundRetryPolicy {
    fn new_session(&self) -> Box<dyn RetrySession> {
        Box::new(self.session())
    }
}

/// One request's retry decisions: the request as Rebound sees it, its retries counted.
#[derive(Debug)]
pub struct ReboundRetrySession {
    shared: Arc<Shared>,
    /// When the request started.
    start: Instant,
    /// The request, made at the first failure.
    request: Option<Request>,
}

impl ReboundRetrySession {
    /// The driver's question in parts: the request failed with `error`, the driver knows it
    /// is idempotent (`false`: not known to be), and it ran at `consistency`.
    ///
    /// The driver does not say whether the request was written before it failed: a request
    /// is treated as written (so a non-idempotent one is retried only for the reasons that
    /// allow it, reference 001's safety guard) except for the one error that says it was
    /// not (no stream id allocated). Nor does it take a delay: a plan's delay is not waited
    /// for (the Cassandra policies plan none). A policy the registry cannot resolve, or one
    /// that does not answer at once, answers "do not retry".
    pub fn decide(
        &mut self,
        error: &RequestAttemptError,
        is_idempotent: bool,
        consistency: Consistency,
    ) -> RetryDecision {
        let reason = match map(error) {
            Mapped::Fixed(decision) => return decision,
            Mapped::Ask(reason) => reason,
        };
        let consistency = to_rebound(consistency);
        let context = DecisionContext::new(&reason);
        let decided = match &mut self.request {
            Some(request) => {
                if request.is_idempotent() != is_idempotent
                    || request.consistency() != Some(consistency)
                {
                    // The driver ran this attempt otherwise than the last decision left it.
                    *request = request
                        .clone()
                        .with_idempotent(is_idempotent)
                        .with_consistency(consistency);
                }
                self.shared
                    .registry
                    .decide(request, &context)
                    .now_or_never()
            }
            None => {
                // Made where the session keeps it: no copy of the request after the decision.
                let request = self.request.insert(self.shared.request(
                    self.start,
                    is_idempotent,
                    consistency,
                ));
                self.shared
                    .registry
                    .decide(request, &context)
                    .now_or_never()
            }
        };
        match decided {
            Some(Ok(decided)) => verdict(&decided.decision),
            Some(Err(error)) => {
                tracing::warn!(%error, "no policy decides for the request: not retried");
                RetryDecision::DontRetry
            }
            None => {
                tracing::error!("the policy did not decide at once: not retried");
                RetryDecision::DontRetry
            }
        }
    }
}

/// The driver's decision for Rebound's.
fn verdict(decision: &Decision) -> RetryDecision {
    match decision {
        Decision::Retry(plan) => {
            let consistency = plan.consistency.map(to_driver);
            match plan.node {
                NodeChoice::Next => RetryDecision::RetryNextTarget(consistency),
                _ => RetryDecision::RetrySameTarget(consistency),
            }
        }
        Decision::Ignore => RetryDecision::IgnoreWriteError,
        _ => RetryDecision::DontRetry,
    }
}

impl RetrySession for ReboundRetrySession {
    fn decide_should_retry(&mut self, request_info: RequestInfo) -> RetryDecision {
        self.decide(
            request_info.error,
            request_info.is_idempotent,
            request_info.consistency,
        )
    }

    fn reset(&mut self) {
        self.start = Instant::now();
        self.request = None;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn request_ids_are_unique_across_threads_and_blocks() {
        let per_thread = 3 * ID_BLOCK as usize + 7;
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || (0..per_thread).map(|_| next_id()).collect::<Vec<_>>())
            })
            .collect();
        let mut seen = HashSet::new();
        for thread in threads {
            for id in thread.join().unwrap() {
                assert!(id > 0 && seen.insert(id), "id {id} given twice (or 0)");
            }
        }
        assert_eq!(seen.len(), 4 * per_thread);
    }
}
