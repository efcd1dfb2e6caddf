//! gRPC's hedging as gRFC A6 "Hedging Policy" specifies it, configured by a service config: the
//! call's most specific method config gives `maxAttempts`, `hedgingDelay` and
//! `nonFatalStatusCodes`. A copy goes `hedgingDelay` after the last one, up to `maxAttempts`;
//! a non-fatal status sends the next copy at once (or after the server's pushback) and the
//! ones after it `hedgingDelay` apart again; any other status ends the call. A failure before
//! the call was sent is not fatal (A6 lets such a call be sent again), and a connection lost in
//! flight counts as UNAVAILABLE, as gRPC clients report it.

use std::sync::Arc;

use super::{latency_key, Asked, HedgeAction, HedgingPolicy, InFlight, QuantileDelay};
use crate::action::NodeChoice;
use crate::grpc::{GrpcCode, HedgingPolicyConfig, ServiceConfig};
use crate::pushback::Pushback;
use crate::reason::{ReasonKind, RetryReason, Stage};
use crate::request::{Request, Service};
use crate::throttle::ScopedThrottle;

/// Hedges gRPC calls as their service config's `hedgingPolicy` says (gRFC A6).
#[derive(Debug, Clone)]
pub struct GrpcHedging {
    config: Arc<ServiceConfig>,
    /// The config's `retryThrottling` counts, shared with the built-in's retries.
    throttle: Option<Arc<ScopedThrottle>>,
    /// The delay from observed latency that replaces every `hedgingDelay`, if given.
    observed: Option<QuantileDelay>,
}

impl GrpcHedging {
    /// Hedges by `config`, with no throttle of its own.
    pub fn new(config: Arc<ServiceConfig>) -> Self {
        GrpcHedging {
            config,
            throttle: None,
            observed: None,
        }
    }

    /// This hedging, each copy after the authority's observed percentile (`delay`) instead of
    /// the config's `hedgingDelay`: the ceiling while the policy records no latencies.
    pub(crate) fn with_observed_delay(mut self, delay: Option<QuantileDelay>) -> Self {
        self.observed = delay;
        self
    }

    /// This hedging, its copies asked of and counted in `throttle` (A6 "Throttling Retry
    /// Attempts and Hedged RPCs": the counts the config's retries share).
    pub(crate) fn with_throttle(mut self, throttle: Option<Arc<ScopedThrottle>>) -> Self {
        self.throttle = throttle;
        self
    }

    fn policy(&self, request: &Request) -> Option<&HedgingPolicyConfig> {
        if request.service() != Service::Grpc {
            return None;
        }
        request
            .route()
            .and_then(|method| self.config.hedging_policy(method))
    }
}

impl HedgingPolicy for GrpcHedging {
    fn name(&self) -> &str {
        "grpc"
    }

    fn next_copy(&self, request: &Request, flight: &InFlight<'_>) -> HedgeAction {
        let Some(policy) = self.policy(request) else {
            return HedgeAction::Wait;
        };
        if flight.copies >= policy.max_attempts {
            return HedgeAction::Wait;
        }
        let after = match (flight.asked, flight.pushback) {
            // A6 "Pushback": the next hedged request in the server's delay.
            (Asked::AfterFailure, Some(Pushback::After(delay))) => delay,
            (Asked::AfterFailure, Some(Pushback::Stop)) => return HedgeAction::Wait,
            // A6: a non-fatal status sends the next hedged request at once.
            (Asked::AfterFailure, None) => std::time::Duration::ZERO,
            (Asked::AfterCopy, _) => {
                let delay = match (&self.observed, flight.latencies) {
                    (Some(observed), Some(latencies)) => {
                        observed.delay(latencies, latency_key(request))
                    }
                    (Some(observed), None) => observed.max_delay(),
                    (None, _) => policy.hedging_delay,
                };
                delay.saturating_sub(flight.since_last)
            }
        };
        HedgeAction::SendAfter {
            after,
            node: NodeChoice::Same,
        }
    }

    fn is_fatal(&self, request: &Request, reason: &RetryReason) -> bool {
        let Some(policy) = self.policy(request) else {
            return true;
        };
        match reason {
            RetryReason::GrpcStatus(code) => !policy.non_fatal_status_codes.contains(code),
            other if other.kind() == ReasonKind::SocketClosedWhileInFlight => !policy
                .non_fatal_status_codes
                .contains(&GrpcCode::Unavailable),
            other => other.stage() != Stage::PreDispatch,
        }
    }

    fn throttle(&self) -> Option<&ScopedThrottle> {
        self.throttle.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::DEFAULT_MAX_ATTEMPTS_LIMIT;
    use crate::request::{HttpMethod, RequestType};
    use serde_json::json;
    use std::time::Duration;

    fn hedging() -> GrpcHedging {
        let config = json!({"methodConfig": [{
            "name": [{"service": "shop.Inventory"}],
            "hedgingPolicy": {
                "maxAttempts": 4,
                "hedgingDelay": "0.5s",
                "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]
            }
        }]});
        GrpcHedging::new(Arc::new(
            ServiceConfig::parse(&config, DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap(),
        ))
    }

    fn call_of(method: &str) -> Request {
        Request::new(1, RequestType::Grpc, Duration::from_secs(5))
            .unwrap()
            .with_route(method)
            .with_authority("inventory:443")
            .with_idempotent(true)
    }

    fn call() -> Request {
        call_of("/shop.Inventory/Get")
    }

    fn flight(asked: Asked, copies: u32, since_last_ms: u64) -> InFlight<'static> {
        InFlight::with(asked, copies, since_last_ms)
    }

    /// gRFC A6 "Hedging Policy": the next copy `hedgingDelay` after the last, up to
    /// `maxAttempts`; a non-fatal status sends it at once; the codes it lists are the non-fatal
    /// ones.
    #[test]
    fn copies_follow_a6_s_example() {
        let h = hedging();
        let call = call();
        let after = |asked, copies, since| match h.next_copy(&call, &flight(asked, copies, since)) {
            HedgeAction::SendAfter { after, .. } => Some(after),
            HedgeAction::Wait => None,
        };
        assert_eq!(
            after(Asked::AfterCopy, 1, 0),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            after(Asked::AfterCopy, 3, 0),
            Some(Duration::from_millis(500))
        );
        assert_eq!(after(Asked::AfterCopy, 4, 0), None, "maxAttempts reached");
        assert_eq!(after(Asked::AfterFailure, 2, 200), Some(Duration::ZERO));
        assert!(!h.is_fatal(&call, &RetryReason::GrpcStatus(GrpcCode::Unavailable)));
        assert!(h.is_fatal(&call, &RetryReason::GrpcStatus(GrpcCode::InvalidArgument)));
        assert!(!h.is_fatal(&call, &crate::reason::reasons::SOCKET_NOT_AVAILABLE));
        let mut pushed = flight(Asked::AfterFailure, 2, 0);
        pushed.pushback = Some(Pushback::After(Duration::from_millis(800)));
        assert_eq!(
            h.next_copy(&call, &pushed),
            HedgeAction::SendAfter {
                after: Duration::from_millis(800),
                node: NodeChoice::Same
            }
        );
        // A call the policy does not name, or an HTTP request, is never hedged.
        let other = call_of("/shop.Cart/Add");
        assert_eq!(
            h.next_copy(&other, &flight(Asked::AfterCopy, 1, 0)),
            HedgeAction::Wait
        );
        let http = Request::new(1, RequestType::Http, Duration::from_secs(5))
            .unwrap()
            .with_method(HttpMethod::Get)
            .with_route("/shop.Inventory/Get");
        assert_eq!(
            h.next_copy(&http, &flight(Asked::AfterCopy, 1, 0)),
            HedgeAction::Wait
        );
    }
}
