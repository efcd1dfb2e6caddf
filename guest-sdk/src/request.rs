//! The failed request a decision is about, read from the host on demand: each accessor asks
//! the host for one fact (one call out of the sandbox, about the price of the decision's own
//! arithmetic many times over), and the whole record (`request.facts()`, or a field through
//! `Deref`, e.g. `request.idempotent`) is fetched in one call on first use and kept for the
//! call. A policy that reads nothing pays nothing.

use std::ops::{Deref, DerefMut};

use crate::{ConsistencyLevel, RequestFacts, RequestType, Service};

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
        Request { facts }
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
