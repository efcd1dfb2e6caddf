//! The AWS SDKs' standard retry mode as a built-in, as smithy-rs's `StandardRetryStrategy`
//! implements it, so that a team on the AWS SDK keeps the SDK's behaviour while Rebound's guard,
//! budgets and throttles still apply:
//!
//! - only errors the SDK's classifiers call retryable are retried (the reasons
//!   `AWS_THROTTLING` and `AWS_TRANSIENT`, and an attempt cut by its timeout, which the SDK
//!   classifies as transient);
//! - at most `max_attempts` attempts, the first included (3);
//! - before retry `n`, `min(initial × 2^(n-1), max_backoff) × random(0, 1)`, where `initial`
//!   is 1 s for a throttling error and, for any other, 1 s in retry behaviour 2.0 and 50 ms in
//!   2.1; `max_backoff` is 20 s;
//! - a server's `x-amz-retry-after` (the request's pushback) replaces that delay: in 2.0 capped
//!   at `max_backoff`, in 2.1 held between the computed delay and 5 s more;
//! - each retry takes tokens from the retry quota of its partition (500 tokens; 2.0: 10 for a
//!   transient error, 5 for any other; 2.1: 5 for throttling, 14 for any other), and an empty
//!   quota ends retries; a success gives back what its last retry took, or one token when it
//!   needed none.

use std::sync::Arc;
use std::time::Duration;

use crate::action::{NodeChoice, RetryAction};
use crate::aws_error::{AwsError, AwsErrorKind};
use crate::pushback::Pushback;
use crate::reason::{ReasonKind, RetryReason};
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::strategy::DecisionContext;

use super::{Strategy, SyncStrategy};
use quota::{Quotas, RetryCosts};

mod quota;
#[cfg(test)]
mod tests;

/// The SDKs' retry behaviour version (smithy-rs `RetrySpec`), named as the SDKs name it
/// (`"2.0"`, `"2.1"`) in configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum AwsRetryBehavior {
    /// Retry behaviour 2.0, the SDKs' long-standing one.
    #[default]
    #[serde(rename = "2.0")]
    V2_0,
    /// Retry behaviour 2.1: a 50 ms initial backoff for errors other than throttling, costlier
    /// retries of them, and `x-amz-retry-after` held near the computed delay.
    #[serde(rename = "2.1")]
    V2_1,
}

/// The AWS SDKs' standard retry mode (see the module documentation).
#[derive(Debug, Clone)]
pub struct AwsRetry {
    settings: Settings,
    quotas: Arc<Quotas>,
}

/// What sets an [`AwsRetry`]'s answers, without its quotas' state.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Settings {
    behavior: AwsRetryBehavior,
    max_attempts: u32,
    initial_backoff: Duration,
    non_throttling_initial_backoff: Duration,
    max_backoff: Duration,
    quota: u32,
}

impl PartialEq for AwsRetry {
    /// Equal when their settings are: the quotas' state is not part of what a policy is.
    fn eq(&self, other: &Self) -> bool {
        self.settings == other.settings
    }
}

impl Default for AwsRetry {
    /// The SDKs' defaults, retry behaviour 2.0.
    fn default() -> Self {
        AwsRetry::new(AwsRetryBehavior::V2_0)
    }
}

impl AwsRetry {
    /// The SDKs' default quota, in tokens.
    pub const DEFAULT_QUOTA: u32 = 500;

    /// The SDKs' defaults for `behavior`: 3 attempts, a 1 s initial backoff (50 ms for errors
    /// other than throttling in 2.1), a 20 s maximum, a quota of 500 tokens.
    pub fn new(behavior: AwsRetryBehavior) -> Self {
        let non_throttling = match behavior {
            AwsRetryBehavior::V2_0 => Duration::from_secs(1),
            AwsRetryBehavior::V2_1 => Duration::from_millis(50),
        };
        AwsRetry::with_settings(Settings {
            behavior,
            max_attempts: 3,
            initial_backoff: Duration::from_secs(1),
            non_throttling_initial_backoff: non_throttling,
            max_backoff: Duration::from_secs(20),
            quota: AwsRetry::DEFAULT_QUOTA,
        })
    }

    fn with_settings(settings: Settings) -> Self {
        AwsRetry {
            quotas: Arc::new(Quotas::new(settings.quota)),
            settings,
        }
    }

    /// At most `max_attempts` attempts, the first included (the SDK's `max_attempts`).
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.settings.max_attempts = max_attempts;
        self
    }

    /// The initial backoff of throttling errors (the SDK's `initial_backoff`) and of the others
    /// (a retry spec's `non_throttling_initial_backoff`; a service such as DynamoDB sets its
    /// own), and the longest backoff (`max_backoff`).
    pub fn backoff(mut self, throttling: Duration, other: Duration, max: Duration) -> Self {
        self.settings.initial_backoff = throttling;
        self.settings.non_throttling_initial_backoff = other;
        self.settings.max_backoff = max;
        self
    }

    /// Quotas of `tokens` tokens (the SDK's token bucket capacity), all full.
    pub fn quota(self, tokens: u32) -> Self {
        AwsRetry::with_settings(Settings {
            quota: tokens,
            ..self.settings
        })
    }

    /// The retry behaviour.
    pub fn behavior(&self) -> AwsRetryBehavior {
        self.settings.behavior
    }

    /// The delay before retry `attempts` (the attempts made so far, 1 for the first retry) for
    /// an error of `kind`, with jitter `base` (0 to 1; the SDK draws it at random):
    /// `base × min(initial × 2^(attempts-1), max_backoff)`.
    pub fn backoff_before(&self, kind: AwsErrorKind, attempts: u32, base: f64) -> Duration {
        let s = &self.settings;
        let initial = match kind {
            AwsErrorKind::Throttling => s.initial_backoff,
            _ => s.non_throttling_initial_backoff,
        };
        let exponent = attempts.saturating_sub(1);
        let uncapped = 2_u32.checked_pow(exponent).and_then(|power| {
            Duration::try_from_secs_f64(initial.as_secs_f64() * f64::from(power)).ok()
        });
        let capped = uncapped.map_or(s.max_backoff, |d| d.min(s.max_backoff));
        capped.mul_f64(base.clamp(0.0, 1.0))
    }

    /// The delay when the server asked for `retry_after` and the backoff computed `computed`.
    fn after_pushback(&self, retry_after: Duration, computed: Duration) -> Duration {
        match self.settings.behavior {
            AwsRetryBehavior::V2_0 => retry_after.min(self.settings.max_backoff),
            AwsRetryBehavior::V2_1 => {
                retry_after.clamp(computed, computed + Duration::from_secs(5))
            }
        }
    }

    fn costs(&self) -> RetryCosts {
        match self.settings.behavior {
            AwsRetryBehavior::V2_0 => RetryCosts::V2_0,
            AwsRetryBehavior::V2_1 => RetryCosts::V2_1,
        }
    }

    /// Tokens left in the quota `request` counts in.
    pub fn quota_left(&self, request: &Request) -> u32 {
        self.quotas.of(request).left()
    }

    /// The SDK's kind of the error behind `reason`, if the SDK retries it at all.
    fn kind(reason: &RetryReason) -> Option<AwsErrorKind> {
        match reason {
            RetryReason::Aws(AwsError { kind, .. }) => Some(*kind),
            other if other.kind() == ReasonKind::AttemptTimeout => Some(AwsErrorKind::Transient),
            _ => None,
        }
    }

    /// The answer for `request`, which failed for `reason`, with the server's `pushback` and
    /// jitter `base`.
    fn decide(
        &self,
        request: &Request,
        reason: &RetryReason,
        pushback: Option<Pushback>,
        base: f64,
    ) -> RetryAction {
        let Some(kind) = AwsRetry::kind(reason) else {
            return RetryAction::NoRetry;
        };
        let attempts = request.retry_attempts().saturating_add(1);
        if !request.may_be_sent_again(reason) || attempts >= self.settings.max_attempts {
            return RetryAction::NoRetry;
        }
        let computed = self.backoff_before(kind, attempts, base);
        let delay = match pushback {
            None => computed,
            Some(Pushback::After(retry_after)) => self.after_pushback(retry_after, computed),
            Some(Pushback::Stop) => return RetryAction::NoRetry,
        };
        if !self.quotas.of(request).take(self.costs().of(kind)) {
            return RetryAction::NoRetry;
        }
        RetryAction::RetryAfter {
            delay,
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout: None,
        }
    }
}

impl Strategy for AwsRetry {
    fn name(&self) -> &str {
        "aws"
    }

    fn counts_outcomes(&self) -> bool {
        true
    }

    /// A success gives back what its last retry took from the quota, or one token when it
    /// needed no retry; a failure gives nothing back.
    fn record_outcome(&self, request: &Request, outcome: Outcome) {
        let Outcome::Succeeded { attempts } = outcome else {
            return;
        };
        let refund = match request.last_retry_reason() {
            Some(reason) if attempts > 1 => {
                AwsRetry::kind(reason).map_or(0, |kind| self.costs().of(kind))
            }
            _ => 1,
        };
        self.quotas.of(request).give(refund);
    }
}

impl SyncStrategy for AwsRetry {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        self.decide(
            request,
            context.reason(),
            context.pushback(),
            fastrand::f64(),
        )
    }
}
