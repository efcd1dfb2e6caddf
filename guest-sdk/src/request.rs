//! The failed request a decision is about, read from the host on demand: each accessor asks
//! the host for one fact (one call out of the sandbox, about the price of the decision's own
//! arithmetic many times over), and the whole record (`request.facts()`, or a field through
//! `Deref`, e.g. `request.idempotent`) is fetched in one call on first use and kept for the
//! call. A policy that reads nothing pays nothing.

use std::ops::{Deref, DerefMut};

use crate::{ConsistencyLevel, HttpMethod, RequestFacts, RequestType, RetryReason, Service};

/// The failed request a decision is about, read from the host on demand: each accessor
/// (`request.retry_attempts()`) asks the host for one fact, and [`facts`](Self::facts) (or a
/// field through `Deref`, `request.idempotent`) fetches the whole record once. A call out of
/// the sandbox costs more than a decision's arithmetic: read only what the decision needs.
#[derive(Debug)]
pub struct Request {
    #[cfg(target_arch = "wasm32")]
    facts: std::cell::OnceCell<RequestFacts>,
    #[cfg(not(target_arch = "wasm32"))]
    facts: RequestFacts,
    #[cfg(not(target_arch = "wasm32"))]
    route: RouteFacts,
}

/// Natively, the facts beyond the record a test gives a request.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Default)]
struct RouteFacts {
    method: Option<HttpMethod>,
    authority: Option<String>,
    route: Option<String>,
    retries_since_pushback: Option<u32>,
}

impl Request {
    /// The request of the call in progress, nothing read yet.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn of_call() -> Self {
        Request {
            facts: std::cell::OnceCell::new(),
        }
    }

    /// A request with these facts (natively: what a test hands a policy).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_facts(facts: RequestFacts) -> Self {
        Request {
            facts,
            route: RouteFacts::default(),
        }
    }

    /// Natively: the request's HTTP method, as a test sets it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_method(mut self, method: HttpMethod) -> Self {
        self.route.method = Some(method);
        self
    }

    /// Natively: the request's authority (an HTTP host, a gRPC server name).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_authority(mut self, authority: &str) -> Self {
        self.route.authority = Some(authority.to_owned());
        self
    }

    /// Natively: the request's route (an HTTP path or route name, a gRPC full method name).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_route(mut self, route: &str) -> Self {
        self.route.route = Some(route.to_owned());
        self
    }

    /// Natively: the retries made since the server's last pushback (by default, all of them).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_retries_since_pushback(mut self, retries: u32) -> Self {
        self.route.retries_since_pushback = Some(retries);
        self
    }

    /// The host's guard, from the host library itself: whether the host would send this
    /// request again after a failure for `reason` at all. An idempotent request always; any
    /// other only for a reason that allows it and, for plain HTTP requests and gRPC calls, only
    /// if it was never written. The host refuses an unsafe retry whatever a policy answers;
    /// `rebound check` reports a policy that asks for one (its `safe_retries` rule).
    pub fn may_be_sent_again(&self, reason: &RetryReason) -> bool {
        use crate::convert::{reason_to_host, service_to_host};
        service_to_host(self.service()).may_send_again(
            self.idempotent(),
            self.dispatched(),
            &reason_to_host(reason),
        )
    }

    /// The HTTP method of a plain HTTP request; `None` for other requests (one host call).
    pub fn method(&self) -> Option<HttpMethod> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::rebound::policy::failure::method();
        #[cfg(not(target_arch = "wasm32"))]
        self.route.method
    }

    /// Where the request goes: an HTTP request's host (and port), a gRPC call's server name;
    /// `None` when the caller gave none (one host call).
    pub fn authority(&self) -> Option<String> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::rebound::policy::failure::authority();
        #[cfg(not(target_arch = "wasm32"))]
        self.route.authority.clone()
    }

    /// Which operation it is: an HTTP request's path or route name, a gRPC call's full method
    /// name (`/package.Service/Method`); `None` when the caller gave none (one host call).
    pub fn route(&self) -> Option<String> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::rebound::policy::failure::route();
        #[cfg(not(target_arch = "wasm32"))]
        self.route.route.clone()
    }

    /// Retries made since the server's last pushback: gRFC A6 restarts its backoff after one
    /// (equal to [`retry_attempts`](Self::retry_attempts) when there was none; one host call).
    pub fn retries_since_pushback(&self) -> u32 {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::rebound::policy::failure::retries_since_pushback();
        #[cfg(not(target_arch = "wasm32"))]
        self.route
            .retries_since_pushback
            .unwrap_or(self.facts.retry_attempts)
    }

    /// Every fact of the request, fetched in one call the first time.
    pub fn facts(&self) -> &RequestFacts {
        #[cfg(target_arch = "wasm32")]
        return self
            .facts
            .get_or_init(crate::bindings::rebound::policy::failure::request);
        #[cfg(not(target_arch = "wasm32"))]
        &self.facts
    }
}

impl Deref for Request {
    type Target = RequestFacts;

    fn deref(&self) -> &RequestFacts {
        self.facts()
    }
}

impl DerefMut for Request {
    /// The facts, to change (a test's variation of a request); fetched first if need be.
    fn deref_mut(&mut self) -> &mut RequestFacts {
        #[cfg(target_arch = "wasm32")]
        {
            self.facts();
            match self.facts.get_mut() {
                Some(facts) => facts,
                None => unreachable!("facts() has just filled the cell"),
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        &mut self.facts
    }
}

macro_rules! accessors {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {
        impl Request {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> $ty {
                    #[cfg(target_arch = "wasm32")]
                    return match self.facts.get() {
                        Some(facts) => facts.$name,
                        None => crate::bindings::rebound::policy::failure::$name(),
                    };
                    #[cfg(not(target_arch = "wasm32"))]
                    self.facts.$name
                }
            )*
        }
    };
}

accessors! {
    /// The request id.
    id: u64;
    /// What the request does.
    request_type: RequestType;
    /// The service it goes to.
    service: Service;
    /// Whether it may be retried for any reason (reference 001 "Idempotent Operation List").
    idempotent: bool;
    /// Whether it is a read-only query or analytics request (the only requests this flag is
    /// set on; tell reads from writes by the request type).
    readonly: bool;
    /// Retries already made.
    retry_attempts: u32;
    /// Milliseconds since the request started, at the decision's moment.
    elapsed_ms: u64;
    /// The request's timeout in milliseconds.
    timeout_ms: u64;
    /// Whether it was written to the network (it may have had an effect).
    dispatched: bool;
    /// Its consistency level (CQL).
    consistency: Option<ConsistencyLevel>;
}
