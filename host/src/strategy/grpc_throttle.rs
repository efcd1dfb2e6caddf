//! gRFC A6 "Throttling Retry Attempts and Hedged RPCs" for the `grpc` built-in: a service
//! config's `retryThrottling` is a token throttle ([`crate::throttle`]) kept per server name
//! (the request's authority). The built-in says which failures count (A6: the retryable
//! statuses and a pushback that says stop); each takes one token.

use std::sync::Arc;
use std::time::Instant;

use crate::grpc::RetryThrottling;
use crate::request::Request;
use crate::throttle::{
    FailureClass, FailureCosts, ScopedThrottle, ThrottleConfig, ThrottleKind, ThrottleScope,
};

/// About the most server names counted apart; past them, the names least in use are
/// forgotten.
const MAX_THROTTLED_SERVERS: usize = 1024;

/// The token counts of one service config's `retryThrottling`, shared by its retries and its
/// hedged copies.
#[derive(Debug)]
pub(crate) struct Throttle(Arc<ScopedThrottle>);

impl Throttle {
    /// Counts as `config` says (validated with its service config).
    pub(crate) fn new(config: RetryThrottling) -> Self {
        let config = ThrottleConfig {
            kind: ThrottleKind::Tokens {
                max_tokens: f64::from(config.max_tokens),
                token_ratio: config.token_ratio,
            },
            costs: FailureCosts::default(),
        };
        let now = Instant::now();
        let scope = ThrottleScope::Authority;
        Throttle(Arc::new(
            ScopedThrottle::new(config, scope, MAX_THROTTLED_SERVERS, now)
                .expect("retryThrottling is validated with its service config"),
        ))
    }

    /// A failed attempt of `request` (to its authority, for its caller): one token taken.
    /// Whether retries are throttled now (the count at or below half of `maxTokens`).
    pub(crate) fn failed(&self, request: &Request) -> bool {
        let now = Instant::now();
        let throttle = self.0.for_request(request, now);
        throttle.failed_at(FailureClass::Other, now);
        !throttle.allows_retry_at(now)
    }

    /// A successful call of `request`: `tokenRatio` given back.
    pub(crate) fn succeeded(&self, request: &Request) {
        let now = Instant::now();
        self.0.for_request(request, now).succeeded_at(now);
    }

    /// The throttle, kept per authority.
    pub(crate) fn scoped(&self) -> &ScopedThrottle {
        &self.0
    }

    /// The throttle, for the hedged copies that count in it too.
    pub(crate) fn shared(&self) -> Arc<ScopedThrottle> {
        Arc::clone(&self.0)
    }

    /// `server`'s count now, in tokens.
    #[cfg(test)]
    fn tokens(&self, server: &str) -> f64 {
        let now = Instant::now();
        match self.0.for_value("", Some(server), now).level_at(now) {
            crate::throttle::ThrottleLevel::Tokens(tokens) => tokens,
            other => unreachable!("a token throttle, not {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle(max_tokens: u32, token_ratio: f64) -> Throttle {
        Throttle::new(RetryThrottling {
            max_tokens,
            token_ratio,
        })
    }

    fn call(server: &str) -> Request {
        Request::new(
            1,
            crate::request::RequestType::Grpc,
            std::time::Duration::from_secs(1),
        )
        .unwrap()
        .with_authority(server)
    }

    /// gRFC A6 "Throttling Retry Attempts and Hedged RPCs" with its example (`maxTokens` 10,
    /// `tokenRatio` 0.1), a failure counted before the threshold is looked at (as grpc-go
    /// does): the fifth failure leaves 5 tokens, at the threshold, and throttles; another
    /// server name has its own count; from 4 tokens, 20 successes (6.0) leave the next failure
    /// at the threshold, 21 (6.1) let it be retried; the count never passes `maxTokens`.
    #[test]
    fn throttling_engages_at_half_and_releases_above_it() {
        let t = throttle(10, 0.1);
        let a = call("a:443");
        let throttled: Vec<bool> = (0..6).map(|_| t.failed(&a)).collect();
        assert_eq!(throttled, [false, false, false, false, true, true]);
        assert_eq!(t.tokens("a:443"), 4.0);
        assert!(!t.failed(&call("b:443")), "another server name");
        for (successes, still_throttled) in [(20, true), (21, false)] {
            let t = throttle(10, 0.1);
            (0..6).for_each(|_| {
                t.failed(&a);
            });
            (0..successes).for_each(|_| t.succeeded(&a));
            assert_eq!(t.failed(&a), still_throttled, "{successes} successes");
        }
        for _ in 0..1000 {
            t.succeeded(&a);
        }
        assert_eq!(t.tokens("a:443"), 10.0, "never above maxTokens");
    }

    /// docs/decisions.md "Throttle scopes": past `MAX_THROTTLED_SERVERS` names a new name
    /// still has a count of its own (the names least in use forgotten): junk names cannot
    /// drain the count of every later server; memory stays bounded.
    #[test]
    fn server_names_past_the_limit_keep_counts_of_their_own() {
        let t = throttle(4, 1.0);
        for n in 0..MAX_THROTTLED_SERVERS + 100 {
            for _ in 0..3 {
                t.failed(&call(&format!("server-{n}")));
            }
        }
        assert!(!t.failed(&call("fresh:443")), "a new server starts full");
        let held = t.0.each().len() - 1;
        assert!(held <= MAX_THROTTLED_SERVERS * 11 / 10, "{held}");
    }

    /// gRFC A6 throttles per server name; with a named caller (SECURITY.md "Clients of
    /// `rebound serve`") the count is that caller's: another caller's failures to the same
    /// server do not throttle it.
    #[test]
    fn a_caller_s_failures_do_not_throttle_another_caller() {
        let t = throttle(10, 0.1);
        let attacker = call("a:443").with_caller("attacker");
        for _ in 0..10 {
            t.failed(&attacker);
        }
        assert!(t.failed(&attacker));
        assert!(!t.failed(&call("a:443").with_caller("victim")));
    }
}
