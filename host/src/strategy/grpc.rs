//! gRPC's retry policy as gRFC A6 specifies it, configured by a service config: the call's
//! most specific method config gives the policy; a status it lists is retried while fewer than
//! `maxAttempts` attempts were made, after A6's backoff (its text since the 2024 revision: the
//! first retry after `initialBackoff × random(0.8, 1.2)`, the n-th after
//! `min(initialBackoff × backoffMultiplier^(n−1), maxBackoff) × random(0.8, 1.2)`, counted from
//! the last pushback), or after exactly the server's pushback. A pushback that says stop ends
//! retries. A failure before the call was sent is retried under the same policy (as A6 does
//! for a load-balancing pick that failed transiently); a connection lost while the call was in
//! flight counts as UNAVAILABLE, as gRPC clients report it. An attempt cut by the policy's
//! `perAttemptRecvTimeout` is retried under it, whatever its codes list (as gRPC clients do); one
//! cut by another attempt timeout counts as DEADLINE_EXCEEDED. Anything that is not a gRPC call, a
//! status the policy does not list, or a call not declared idempotent that was sent, is not
//! retried.

use std::sync::Arc;
use std::time::Duration;

use crate::action::{NodeChoice, RetryAction};
use crate::grpc::{GrpcCode, ServiceConfig};
use crate::hedge::{GrpcHedging, HedgingPolicy, QuantileDelay};
use crate::pushback::Pushback;
use crate::reason::{ReasonKind, RetryReason, Stage};
use crate::request::{Request, Service};
use crate::request_outcome::Outcome;
use crate::strategy::DecisionContext;
use crate::throttle::ScopedThrottle;

use super::grpc_throttle::Throttle;
use super::{Strategy, SyncStrategy};

/// Retries gRPC calls as their service config's `retryPolicy` says (gRFC A6), throttled per
/// server name as its `retryThrottling` says.
#[derive(Debug, Clone)]
pub struct GrpcRetry {
    config: Arc<ServiceConfig>,
    /// The token counts, if the config throttles: shared by the clones of one built-in.
    throttle: Option<Arc<Throttle>>,
    /// Its hedging, if some method config has a `hedgingPolicy`: made once, handed out per
    /// request without allocating.
    hedging: Option<Arc<dyn HedgingPolicy>>,
    /// The delay from observed latency its hedging waits instead of `hedgingDelay`, if given.
    observed_hedging_delay: Option<QuantileDelay>,
    /// Where its retries go: the same node (A6) or the next (Envoy's previous-hosts
    /// predicate, from an xDS route).
    node: NodeChoice,
}

/// Two are equal when their service configs and nodes are (their token counts aside).
impl PartialEq for GrpcRetry {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config && self.node == other.node
    }
}

impl GrpcRetry {
    /// Decides by `config`.
    pub fn new(config: ServiceConfig) -> Self {
        Self::hedging_after(config, None)
    }

    /// Decides by `config`, its `hedgingPolicy` copies going after `delay`, a percentile of
    /// the latencies observed for the call's authority, instead of `hedgingDelay` (the
    /// built-in's `hedging_delay` parameter; docs/hedging.md "Delays from observed latency").
    pub fn with_observed_hedging_delay(config: ServiceConfig, delay: QuantileDelay) -> Self {
        Self::hedging_after(config, Some(delay))
    }

    fn hedging_after(config: ServiceConfig, observed: Option<QuantileDelay>) -> Self {
        let throttle = config.throttling().map(|t| Arc::new(Throttle::new(t)));
        let config = Arc::new(config);
        let hedging = config.hedges().then(|| {
            let hedging = GrpcHedging::new(Arc::clone(&config))
                .with_throttle(throttle.as_deref().map(Throttle::shared))
                .with_observed_delay(observed);
            Arc::new(hedging) as Arc<dyn HedgingPolicy>
        });
        GrpcRetry {
            config,
            throttle,
            hedging,
            observed_hedging_delay: observed,
            node: NodeChoice::Same,
        }
    }

    /// The same built-in, its retries going to `node` (the built-in's `node` parameter).
    #[must_use]
    pub fn retrying_on(mut self, node: NodeChoice) -> Self {
        self.node = node;
        self
    }

    /// Whether its hedging waits a percentile of observed latencies: its policy records them.
    pub fn hedges_by_observed_latency(&self) -> bool {
        self.observed_hedging_delay.is_some() && self.hedging.is_some()
    }

    /// Its token counts, kept per authority, if its service config throttles retries.
    pub fn throttle(&self) -> Option<&ScopedThrottle> {
        self.throttle.as_deref().map(Throttle::scoped)
    }

    /// Its service config.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// A6 "Throttling Retry Attempts and Hedged RPCs": the failure that ends a hedged call
    /// counts when its status is non-fatal or its pushback says stop (the copies that failed
    /// before it were counted as they failed).
    fn count_hedged_failure(&self, request: &Request, context: &DecisionContext<'_>) {
        let (Some(throttle), Some(hedging)) = (&self.throttle, &self.hedging) else {
            return;
        };
        let hedged = (request.route()).is_some_and(|m| self.config.hedging_policy(m).is_some());
        let stopped = matches!(context.pushback(), Some(Pushback::Stop));
        if hedged && (stopped || !hedging.is_fatal(request, context.reason())) {
            throttle.failed(request);
        }
    }
}

impl Strategy for GrpcRetry {
    fn name(&self) -> &str {
        "grpc"
    }

    fn counts_outcomes(&self) -> bool {
        self.throttle.is_some()
    }

    /// A6 "Hedging Policy": the methods whose config has a `hedgingPolicy` are hedged.
    fn hedging(&self) -> Option<Arc<dyn HedgingPolicy>> {
        self.hedging.clone()
    }

    fn times_attempts(&self) -> bool {
        self.config.times_attempts()
    }

    /// The `perAttemptRecvTimeout` of the call's retry policy.
    fn attempt_timeout(&self, request: &Request) -> Option<Duration> {
        let method = request.route()?;
        self.config.retry_policy(method)?.per_attempt_recv_timeout
    }

    /// A6: every successful call gives `tokenRatio` back to its server name's count.
    fn record_outcome(&self, request: &Request, outcome: Outcome) {
        if let (Some(throttle), Outcome::Succeeded { .. }) = (&self.throttle, outcome) {
            throttle.succeeded(request);
        }
    }
}

impl SyncStrategy for GrpcRetry {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        if request.service() != Service::Grpc {
            return RetryAction::NoRetry;
        }
        let Some(policy) = request.route().and_then(|m| self.config.retry_policy(m)) else {
            self.count_hedged_failure(request, context);
            return RetryAction::NoRetry;
        };
        let retryable = match context.reason() {
            RetryReason::GrpcStatus(code) => policy.retryable_status_codes.contains(code),
            // A connection lost while the call was in flight is what a gRPC client reports as
            // UNAVAILABLE.
            other if other.kind() == ReasonKind::SocketClosedWhileInFlight => policy
                .retryable_status_codes
                .contains(&GrpcCode::Unavailable),
            // An attempt cut by the policy's `perAttemptRecvTimeout` is retried under it
            // whatever the codes list, as gRPC clients do; one cut by another attempt timeout
            // is what a gRPC client reports as DEADLINE_EXCEEDED.
            other if other.kind() == ReasonKind::AttemptTimeout => {
                policy.per_attempt_recv_timeout.is_some()
                    || (policy.retryable_status_codes).contains(&GrpcCode::DeadlineExceeded)
            }
            // A failure before the call was sent (no connection, the endpoint not writable) is
            // handled by the policy as A6 handles a load-balancing pick that failed
            // transiently: counted as an attempt and backed off. Nothing else is retried.
            other => other.stage() == Stage::PreDispatch,
        };
        // A6: the failures throttling counts are the retryable ones and a pushback that
        // says stop; a failed attempt takes a token before the threshold is looked at.
        let stopped = matches!(context.pushback(), Some(Pushback::Stop));
        let throttled = match &self.throttle {
            Some(throttle) if retryable || stopped => throttle.failed(request),
            _ => false,
        };
        // Attempts made so far: the original and every retry.
        let attempts = request.retry_attempts().saturating_add(1);
        let reason = context.reason();
        if !retryable
            || throttled
            || attempts >= policy.max_attempts
            || !request.may_be_sent_again(reason)
        {
            return RetryAction::NoRetry;
        }
        let delay = match context.pushback() {
            Some(Pushback::After(exactly)) => exactly,
            Some(Pushback::Stop) => return RetryAction::NoRetry,
            None => {
                let nominal = policy.nominal_backoff_nanos(request.retries_since_pushback());
                Duration::from_nanos((nominal * (0.8 + 0.4 * fastrand::f64())) as u64)
            }
        };
        RetryAction::RetryAfter {
            delay,
            node: self.node,
            consistency: None,
            attempt_timeout: None,
        }
    }
}
