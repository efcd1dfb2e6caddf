//! The inputs `rebound check` asks a policy about: every reason variant, for requests of every
//! service — idempotent and not, dispatched and not — after several retries, early in their
//! life, just before their deadline and past it, with an empty client context and with each
//! context the author names.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rebound::cassandra_types::ConsistencyLevel;
use rebound::request::HttpMethod;
use rebound::{Request, RequestType, RetryReason};
use serde_json::{json, Value};

use crate::wire::input::default_timeout_ms;
use crate::wire::output;

/// Retries already made.
const ATTEMPTS: [u32; 4] = [0, 1, 3, 10];

/// A request shape: its type and what refines its idempotency.
#[derive(Debug, Clone, Copy)]
struct Shape {
    request_type: RequestType,
    readonly: bool,
    method: Option<HttpMethod>,
    idempotent: Option<bool>,
    consistency: Option<ConsistencyLevel>,
}

impl Shape {
    const fn of(request_type: RequestType) -> Self {
        Shape {
            request_type,
            readonly: false,
            method: None,
            idempotent: None,
            consistency: None,
        }
    }
}

/// Requests of every service, each idempotency rule on both sides.
const SHAPES: [Shape; 12] = [
    Shape::of(RequestType::Get),
    Shape::of(RequestType::Upsert),
    Shape::of(RequestType::Increment),
    Shape::of(RequestType::Query),
    Shape {
        readonly: true,
        ..Shape::of(RequestType::Query)
    },
    Shape::of(RequestType::Analytics),
    Shape::of(RequestType::Search),
    Shape::of(RequestType::View),
    Shape {
        method: Some(HttpMethod::Get),
        ..Shape::of(RequestType::Management)
    },
    Shape {
        method: Some(HttpMethod::Post),
        ..Shape::of(RequestType::Management)
    },
    Shape {
        idempotent: Some(true),
        consistency: Some(ConsistencyLevel::Quorum),
        ..Shape::of(RequestType::Cql)
    },
    Shape {
        idempotent: Some(false),
        consistency: Some(ConsistencyLevel::LocalQuorum),
        ..Shape::of(RequestType::Cql)
    },
];

/// One question to the policy.
#[derive(Debug, Clone)]
pub struct Input {
    /// Why the request failed.
    pub reason: RetryReason,
    shape: Shape,
    /// Whether the request is idempotent (its type's rule, refined by the shape).
    pub idempotent: bool,
    dispatched: bool,
    /// Retries already made.
    pub attempts: u32,
    /// Time since the request started.
    pub elapsed_ms: u64,
    /// The request's timeout.
    pub timeout_ms: u64,
    context: BTreeMap<String, String>,
}

impl Input {
    /// The request, started at `start`.
    pub fn request(&self, start: Instant) -> Request {
        let shape = &self.shape;
        let mut request = Request::new(
            1,
            shape.request_type,
            Duration::from_millis(self.timeout_ms),
        )
        .expect("grid timeouts are positive")
        .readonly(shape.readonly)
        .with_retry_attempts(self.attempts)
        .started_at(start);
        if let Some(method) = shape.method {
            request = request.method(method);
        }
        if let Some(idempotent) = shape.idempotent {
            request = request.idempotent(idempotent);
        }
        if let Some(level) = shape.consistency {
            request = request.consistency(level);
        }
        for (key, value) in &self.context {
            request = request.context(key.as_str(), value.as_str());
        }
        if self.dispatched {
            request.mark_dispatched("node-1");
        }
        request
    }

    /// The input as a `rebound eval` line (the decision JSON), so it can be replayed.
    pub fn to_json(&self) -> Value {
        let shape = &self.shape;
        let mut request = json!({
            "type": shape.request_type,
            "idempotent": self.idempotent,
            "readonly": shape.readonly,
            "dispatched": self.dispatched,
            "retry_attempts": self.attempts,
            "elapsed_ms": self.elapsed_ms,
            "timeout_ms": self.timeout_ms,
            "client_context": self.context,
        });
        if let Some(method) = shape.method {
            request["method"] = json!(method);
        }
        if let Some(level) = shape.consistency {
            request["consistency"] = json!(level);
        }
        json!({"request": request, "reason": output::reason(&self.reason)})
    }

    /// A one-line description for the human report.
    pub fn describe(&self) -> String {
        let shape = &self.shape;
        let mut what = format!("{} {}", self.reason, shape.request_type);
        if shape.readonly {
            what.push_str(" readonly");
        }
        if let Some(method) = shape.method {
            what.push_str(&format!(" {method:?}").to_uppercase());
        }
        what.push_str(if self.idempotent {
            " idempotent"
        } else {
            " non-idempotent"
        });
        if !self.dispatched {
            what.push_str(" not-dispatched");
        }
        what.push_str(&format!(
            " attempts={} elapsed={}ms timeout={}ms",
            self.attempts, self.elapsed_ms, self.timeout_ms
        ));
        for (key, value) in &self.context {
            what.push_str(&format!(" {key}={value}"));
        }
        match &self.reason {
            RetryReason::Simple(_) | RetryReason::Other(_) => what,
            data => format!("{what} data={}", output::reason(data)),
        }
    }
}

/// The grid, with each of `contexts` beside the empty context.
pub fn inputs(contexts: &[BTreeMap<String, String>]) -> Vec<Input> {
    let mut all_contexts = vec![BTreeMap::new()];
    all_contexts.extend(contexts.iter().cloned());
    let mut inputs = Vec::new();
    for reason in rebound::grid::every_reason() {
        for shape in SHAPES {
            let timeout_ms = default_timeout_ms(shape.request_type.service());
            for dispatched in [true, false] {
                for attempts in ATTEMPTS {
                    // Early, just before the deadline, past it.
                    for elapsed_ms in [0, timeout_ms - 1, timeout_ms + 10] {
                        for context in &all_contexts {
                            let mut input = Input {
                                reason: reason.clone(),
                                shape,
                                idempotent: false,
                                dispatched,
                                attempts,
                                elapsed_ms,
                                timeout_ms,
                                context: context.clone(),
                            };
                            input.idempotent = input.request(Instant::now()).is_idempotent();
                            inputs.push(input);
                        }
                    }
                }
            }
        }
    }
    inputs
}
