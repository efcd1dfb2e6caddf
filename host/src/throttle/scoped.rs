//! A throttle kept per scope (`[throttles.NAME] per = …`): one for every request of the
//! policies that name it (`policy`), or one per node the request was last sent to (`node`),
//! per authority (`authority`, gRFC A6's "per server name") or per value of a client-context
//! entry (`client_context.KEY`, e.g. a tenant). Requests without the scope's value, values
//! longer than 256 bytes and values past
//! `max_scopes` share the common throttle, so a client naming many scopes cannot grow the
//! host's memory; the scopes are read without a lock.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use super::{RetryThrottle, ThrottleConfig, ThrottleConfigError};
use crate::bounded_map::BoundedMap;
use crate::request::Request;

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
            ThrottleScope::Authority => request.authority_name(),
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
    scopes: BoundedMap<RetryThrottle>,
}

impl ScopedThrottle {
    /// Throttles as `config` says, one per value of `scope` up to `max_scopes`.
    pub fn new(
        config: ThrottleConfig,
        scope: ThrottleScope,
        max_scopes: usize,
        now: Instant,
    ) -> Result<Self, ThrottleConfigError> {
        Ok(ScopedThrottle {
            config,
            scope,
            common: Arc::new(RetryThrottle::new(config, now)?),
            scopes: BoundedMap::new(max_scopes),
        })
    }

    /// What it was made with: a new configuration keeps the counts while these stay.
    pub fn made_with(&self) -> (ThrottleConfig, &ThrottleScope, usize) {
        (self.config, &self.scope, self.scopes.capacity())
    }

    /// The throttle `request` counts in at `now`.
    pub fn for_request(&self, request: &Request, now: Instant) -> Arc<RetryThrottle> {
        self.for_value(self.scope.of(request), now)
    }

    /// The throttle of the scope's `value` (`None` or empty: the common one) at `now`.
    pub fn for_value(&self, value: Option<&str>, now: Instant) -> Arc<RetryThrottle> {
        let config = self.config;
        value
            .and_then(|value| {
                self.scopes.get_or_add(value, || {
                    RetryThrottle::new(config, now).expect("validated when the common one was made")
                })
            })
            .unwrap_or_else(|| Arc::clone(&self.common))
    }

    /// The common throttle and each scope's, by value (`""` for the common one).
    pub fn each(&self) -> Vec<(String, Arc<RetryThrottle>)> {
        let mut each = vec![(String::new(), Arc::clone(&self.common))];
        each.extend(self.scopes.each());
        each
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

    /// Values past `max_scopes` share the common throttle: memory stays bounded.
    #[test]
    fn values_past_the_limit_share_the_common_throttle() {
        let throttles = scoped("client_context.tenant", 4);
        let now = Instant::now();
        for n in 0..10 {
            let r = request().context("tenant", format!("t{n}"));
            throttles
                .for_request(&r, now)
                .failed_at(FailureClass::Other, now);
        }
        let each = throttles.each();
        assert_eq!(each.len(), 5, "the common one and four tenants");
        assert_eq!(
            each[0].1.level_at(now),
            crate::throttle::ThrottleLevel::Tokens(0.0),
            "six tenants' failures in the common throttle"
        );
    }
}
