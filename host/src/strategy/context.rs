//! What one decision is about besides the request's own facts: the failure's reason, the
//! error-map retry spec its classification attached, the server's pushback, how far the
//! attempt got and the attempt timeout that cut it, the decision's moment, and the strategy the caller chose for the request, if it
//! chose one; the retry budget it draws from and the throttle it counts in; and where a sandboxed policy that fails
//! leaves its account of the failure. A context is built for every failure and dropped with
//! its decision, so nothing of one failure can reach the decision for the next.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::RetryStrategy;
use crate::action::PolicyFailure;
use crate::errormap::RetrySpec;
use crate::progress::Progress;
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::throttle::ScopedThrottle;
use crate::traffic_budget::TrafficBudget;

/// One failure to decide: what a strategy is told besides the [`Request`](crate::Request).
///
/// ```
/// use std::time::Instant;
/// use rebound::{reasons, DecisionContext};
///
/// let context = DecisionContext::new(&reasons::KV_LOCKED).at(Instant::now());
/// assert_eq!(context.reason(), &reasons::KV_LOCKED);
/// assert!(context.error_map_spec().is_none());
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct DecisionContext<'r> {
    reason: &'r RetryReason,
    error_map_spec: Option<RetrySpec>,
    pushback: Option<Pushback>,
    progress: Progress,
    attempt_timeout: Option<Duration>,
    upstream_attempts: u32,
    at: Option<Instant>,
    strategy: Option<&'r dyn RetryStrategy>,
    failure_note: Option<&'r FailureNote>,
    budget: Option<&'r TrafficBudget>,
    throttle: Option<&'r ScopedThrottle>,
}

/// Where a policy that failed to answer leaves what happened (a Rust panic's message, a Python
/// exception's last line, the trap or limit the sandbox saw) for the decision in progress: its
/// answer, [`RetryAction::PolicyFailed`](crate::RetryAction::PolicyFailed), carries only the
/// kind. The first failure noted is kept.
#[derive(Debug, Default)]
pub struct FailureNote(OnceLock<PolicyFailure>);

impl FailureNote {
    /// The failure noted, if any.
    pub fn get(&self) -> Option<&PolicyFailure> {
        self.0.get()
    }

    /// The failure noted, if any, taken out.
    pub fn into_inner(self) -> Option<PolicyFailure> {
        self.0.into_inner()
    }
}

impl PartialEq for FailureNote {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl<'r> DecisionContext<'r> {
    /// A failure for `reason`, decided when the strategy has answered (the clock is read
    /// then), with no error-map spec and no server pushback.
    pub const fn new(reason: &'r RetryReason) -> Self {
        DecisionContext {
            reason,
            error_map_spec: None,
            pushback: None,
            progress: Progress::Processed,
            attempt_timeout: None,
            upstream_attempts: 1,
            at: None,
            strategy: None,
            failure_note: None,
            budget: None,
            throttle: None,
        }
    }

    /// The error-map retry spec of this failure (reference 001 "KV Error Map Handling"), for
    /// strategies that opt in to its timings.
    pub const fn with_error_map_spec(mut self, spec: Option<RetrySpec>) -> Self {
        self.error_map_spec = spec;
        self
    }

    /// What the server said about retrying (its pushback: a delay, or stop), if anything.
    pub const fn with_pushback(mut self, pushback: Option<Pushback>) -> Self {
        self.pushback = pushback;
        self
    }

    /// How far the failed attempt got (gRFC A6): one that never reached the server's
    /// application is retried transparently, one that was committed is never retried, before
    /// any strategy is asked. [`Progress::Processed`] unless said.
    pub const fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// How far the failed attempt got.
    pub const fn progress(&self) -> Progress {
        self.progress
    }

    /// The attempt timeout that cut the failed attempt (an `ATTEMPT_TIMEOUT` failure), for a
    /// caller that cut it with a timeout of its own. Unless said, a retry loop's decider tells
    /// the one the request's controls gave it
    /// ([`PolicyControls::attempt_timeout`](crate::PolicyControls::attempt_timeout)).
    pub const fn with_attempt_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// How many attempts the callee says it made for this one (a proxy's or a service's own
    /// retries behind it, such as Envoy's `x-envoy-attempt-count` on an answer): the request's
    /// throttle counts the failure that many times (docs/throttling.md "What a failure
    /// costs"). 1 unless said; 0 is taken as 1.
    pub const fn with_upstream_attempts(mut self, attempts: u32) -> Self {
        self.upstream_attempts = if attempts == 0 { 1 } else { attempts };
        self
    }

    /// How many attempts the callee says it made for the failed one (1 unless said).
    pub const fn upstream_attempts(&self) -> u32 {
        self.upstream_attempts
    }

    /// The attempt timeout that cut the failed attempt, if the caller or the decider said it.
    pub const fn attempt_timeout(&self) -> Option<Duration> {
        self.attempt_timeout
    }

    /// Whether the failure is an attempt cut by a timeout nobody has said yet: the decider
    /// then asks the request's controls which one it was.
    pub(crate) fn lacks_fired_timeout(&self) -> bool {
        self.attempt_timeout.is_none()
            && self.reason.kind() == crate::reason::ReasonKind::AttemptTimeout
    }

    /// Fixes the decision's moment (replays, virtual clocks, tokio's paused time): the
    /// deadline is capped against it and a WebAssembly policy's time reads it.
    pub const fn at(mut self, now: Instant) -> Self {
        self.at = Some(now);
        self
    }

    /// Decides the request with `strategy` instead of the orchestrator's default or the
    /// registry's policy for it (reference 002 "Customizing the RetryStrategy": a per-request
    /// strategy overrides the global one). The safety guard and the orchestrator's controls
    /// apply to it as to the default; a registry logs the decision by the strategy's name, with
    /// no version.
    pub const fn with_strategy(mut self, strategy: &'r dyn RetryStrategy) -> Self {
        self.strategy = Some(strategy);
        self
    }

    /// The strategy the caller chose for the request, if it chose one.
    pub const fn strategy(&self) -> Option<&'r dyn RetryStrategy> {
        self.strategy
    }

    /// Draws the retry, if one is decided, from `budget`: a request's first failure deposits
    /// in it, each retry withdraws, and a retry it cannot pay for ends the request as
    /// RequestCanceled (`RETRY_BUDGET_EXHAUSTED`).
    pub const fn with_budget(mut self, budget: Option<&'r TrafficBudget>) -> Self {
        self.budget = budget;
        self
    }

    /// The budget retries are drawn from, if any.
    pub const fn budget(&self) -> Option<&'r TrafficBudget> {
        self.budget
    }

    /// Counts the failure in `throttle` (the request's scope of it) and lets a retry go only
    /// when the throttle allows one; a retry it refuses ends the request as RequestCanceled
    /// (`RETRY_THROTTLED`). Always-retry reasons are neither counted nor throttled.
    pub const fn with_throttle(mut self, throttle: Option<&'r ScopedThrottle>) -> Self {
        self.throttle = throttle;
        self
    }

    /// The throttle failures are counted in, if any.
    pub const fn throttle(&self) -> Option<&'r ScopedThrottle> {
        self.throttle
    }

    /// Lets a policy that fails to answer leave its account of the failure in `note`.
    pub const fn with_failure_note(mut self, note: &'r FailureNote) -> Self {
        self.failure_note = Some(note);
        self
    }

    /// The same failure with nowhere to note a policy failure (a shadow candidate's call must
    /// not speak for the active policy).
    pub const fn without_failure_note(mut self) -> Self {
        self.failure_note = None;
        self
    }

    /// Notes how the policy deciding failed, where the caller asked for it; the first failure
    /// noted is kept.
    pub fn note_failure(&self, failure: PolicyFailure) {
        if let Some(note) = self.failure_note {
            let _ = note.0.set(failure);
        }
    }

    /// Why the request failed.
    pub const fn reason(&self) -> &'r RetryReason {
        self.reason
    }

    /// The error-map retry spec of this failure, if its classification attached one.
    pub const fn error_map_spec(&self) -> Option<&RetrySpec> {
        self.error_map_spec.as_ref()
    }

    /// What the server said about retrying, if anything.
    pub const fn pushback(&self) -> Option<Pushback> {
        self.pushback
    }

    /// The decision's moment when the caller fixed it; `None` when the clock decides.
    pub const fn moment(&self) -> Option<Instant> {
        self.at
    }

    /// The decision's moment, or the clock's now when the caller did not fix one.
    pub fn now(&self) -> Instant {
        self.at.unwrap_or_else(Instant::now)
    }
}
