//! A throttle kept per scope (`[throttles.NAME] per = …`): one for every request of the
//! policies that name it (`policy`), or one per node the request was last sent to (`node`),
//! per authority (`authority`, gRFC A6's "per server name") or per value of a client-context
//! entry (`client_context.KEY`, e.g. a tenant). The scopes are named by what requests carry,
//! so they live in a bounded store that evicts the scopes least in use rather than growing
//! (`scope_store`), and they are kept per caller when the request names one
//! ([`Request::caller`]): with authenticated callers, one caller's failures never throttle
//! another's scope. Requests without the scope's value, and values longer than 256 bytes,
//! count in the common throttle.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use super::{RetryThrottle, ThrottleConfig};
use crate::field_error::FieldError;
use crate::request::Request;
use crate::scope_store::ScopeStore;

/// What a throttle is kept per.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThrottleScope {
    /// One for every request.
    Policy,
    /// Per node the request was last sent to.
    Node,
    /// Per authority (server name).
    Authority,
    /// Per value of this client-context entry.
    ClientContext(String),
}

/// A `per` value that names no scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected `policy`, `node`, `authority` or `client_context.KEY`")]
pub struct ThrottleScopeError(pub String);

impl FromStr for ThrottleScope {
    type Err = ThrottleScopeError;

    fn from_str(per: &str) -> Result<Self, Self::Err> {
        match per {
            "policy" => Ok(ThrottleScope::Policy),
            "node" => Ok(ThrottleScope::Node),
            "authority" => Ok(ThrottleScope::Authority),
            _ => match per.strip_prefix("client_context.") {
                Some(key) if !key.is_empty() => Ok(ThrottleScope::ClientContext(key.to_owned())),
                _ => Err(ThrottleScopeError(per.to_owned())),
            },
        }
    }
}

impl std::fmt::Display for ThrottleScope {
    /// As `per` writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThrottleScope::Policy => f.write_str("policy"),
            ThrottleScope::Node => f.write_str("node"),
            ThrottleScope::Authority => f.write_str("authority"),
            ThrottleScope::ClientContext(key) => write!(f, "client_context.{key}"),
        }
    }
}

impl ThrottleScope {
    /// `request`'s value of this scope; `None` for the common throttle.
    fn of<'r>(&self, request: &'r Request) -> Option<&'r str> {
        match self {
            ThrottleScope::Policy => None,
            ThrottleScope::Node => request.last_dispatched_to(),
            ThrottleScope::Authority => request.authority(),
            ThrottleScope::ClientContext(key) => {
                request.client_context().get(key).map(String::as_str)
            }
        }
    }
}

/// The throttles of one `[throttles.NAME]` table.
#[derive(Debug)]
pub struct ScopedThrottle {
    config: ThrottleConfig,
    scope: ThrottleScope,
    common: Arc<RetryThrottle>,
    scopes: ScopeStore<RetryThrottle>,
}

impl ScopedThrottle {
    /// Throttles as `config` says, one per value of `scope` (and caller), about `max_scopes`
    /// of them at most.
    pub fn new(
        config: ThrottleConfig,
        scope: ThrottleScope,
        max_scopes: usize,
        now: Instant,
    ) -> Result<Self, FieldError> {
        Ok(ScopedThrottle {
            config,
            scope,
            common: Arc::new(RetryThrottle::new(config, now)?),
            scopes: ScopeStore::new(max_scopes, RetryThrottle::refusals),
        })
    }

    /// What it was made with: a new configuration keeps the counts while these stay.
    pub fn made_with(&self) -> (ThrottleConfig, &ThrottleScope, usize) {
        (self.config, &self.scope, self.scopes.capacity())
    }

    /// The throttle `request` counts in at `now`.
    pub fn for_request(&self, request: &Request, now: Instant) -> Arc<RetryThrottle> {
        let caller = request.caller().unwrap_or_default();
        self.for_value(caller, self.scope.of(request), now)
    }

    /// The throttle of the scope's `value` for `caller` (`""`: none) at `now`; `value` `None`
    /// or empty: the common one.
    pub fn for_value(&self, caller: &str, value: Option<&str>, now: Instant) -> Arc<RetryThrottle> {
        let config = self.config;
        value
            .and_then(|value| {
                self.scopes.get_or_add(caller, value, || {
                    RetryThrottle::new(config, now).expect("validated when the common one was made")
                })
            })
            .unwrap_or_else(|| Arc::clone(&self.common))
    }

    /// The common throttle and each scope's, by value (`""` for the common one, `caller/value`
    /// for a caller's).
    pub fn each(&self) -> Vec<(String, Arc<RetryThrottle>)> {
        let mut each = vec![(String::new(), Arc::clone(&self.common))];
        each.extend(self.scopes.each());
        each
    }

    /// Scopes evicted to make room for others, and the retries their throttles had refused.
    pub fn forgotten(&self) -> (u64, u64) {
        self.scopes.forgotten()
    }
}

impl PartialEq for ScopedThrottle {
    /// The same throttles: two tables with the same parameters count apart.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Request, RequestType};
    use crate::throttle::{FailureClass, FailureCosts, ThrottleKind};
    use std::time::Duration;

    fn scoped(scope: &str, max_scopes: usize) -> ScopedThrottle {
        let config = ThrottleConfig {
            kind: ThrottleKind::Tokens {
                max_tokens: 2.0,
                token_ratio: 1.0,
            },
            costs: FailureCosts::default(),
        };
        ScopedThrottle::new(config, scope.parse().unwrap(), max_scopes, Instant::now()).unwrap()
    }

    fn request() -> Request {
        Request::new(1, RequestType::Get, Duration::from_secs(1)).unwrap()
    }

    /// docs/decisions.md "Throttle scopes": `per` names the valid scopes when it names none.
    #[test]
    fn an_unknown_scope_is_refused_naming_the_valid_ones() {
        let error = "tenant".parse::<ThrottleScope>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "`tenant`: expected `policy`, `node`, `authority` or `client_context.KEY`"
        );
        assert!("client_context.".parse::<ThrottleScope>().is_err());
        assert_eq!(
            "client_context.tenant".parse::<ThrottleScope>().unwrap(),
            ThrottleScope::ClientContext("tenant".into())
        );
    }

    /// docs/decisions.md "Throttle scopes": one node's failures throttle retries to it only;
    /// a request not yet sent anywhere counts in the common throttle.
    #[test]
    fn a_node_s_failures_throttle_only_that_node() {
        let throttles = scoped("node", 16);
        let now = Instant::now();
        let mut a = request();
        a.mark_dispatched("a:11210");
        let mut b = request();
        b.mark_dispatched("b:11210");
        throttles
            .for_request(&a, now)
            .failed_at(FailureClass::Other, now);
        assert!(!throttles.for_request(&a, now).allows_retry_at(now));
        assert!(throttles.for_request(&b, now).allows_retry_at(now));
        assert!(throttles.for_request(&request(), now).allows_retry_at(now));
    }

    /// docs/decisions.md "Throttle scopes": past `max_scopes`, a new value still gets a
    /// throttle of its own (the scopes least in use are evicted), so junk values cannot make
    /// every later one share a drained throttle; memory stays bounded.
    #[test]
    fn values_past_the_limit_get_their_own_throttle_and_memory_stays_bounded() {
        let throttles = scoped("client_context.tenant", 64);
        let now = Instant::now();
        for n in 0..1_100 {
            let r = request().with_client_context("tenant", format!("junk{n}"));
            for _ in 0..2 {
                throttles
                    .for_request(&r, now)
                    .failed_at(FailureClass::Other, now);
            }
        }
        let fresh = request().with_client_context("tenant", "real");
        assert!(throttles.for_request(&fresh, now).allows_retry_at(now));
        assert!(
            throttles.for_request(&request(), now).allows_retry_at(now),
            "the common one"
        );
        let held = throttles.each().len() - 1;
        assert!(held <= 64 + 64 / 10, "{held} scopes held");
        let (evicted, _) = throttles.forgotten();
        assert!(evicted > 1_000, "{evicted} evicted");
    }

    /// SECURITY.md "Clients of `rebound serve`": a caller's failures throttle its own scope
    /// only; the same authority under another caller is untouched.
    #[test]
    fn one_caller_cannot_throttle_another_s_scope() {
        let throttles = scoped("authority", 16);
        let now = Instant::now();
        let attacker = request()
            .with_authority("victim.example")
            .with_caller("attacker");
        let victim = request()
            .with_authority("victim.example")
            .with_caller("victim");
        for _ in 0..6 {
            throttles
                .for_request(&attacker, now)
                .failed_at(FailureClass::Other, now);
        }
        assert!(!throttles.for_request(&attacker, now).allows_retry_at(now));
        assert!(throttles.for_request(&victim, now).allows_retry_at(now));
    }
}
