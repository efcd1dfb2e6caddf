//! The inputs `rebound check` asks a policy about: every reason variant, for requests of every
//! service — idempotent and not, dispatched and not — after several retries, early in their
//! life, just before their deadline and past it, with an empty client context and with each
//! context the author names.

use std::collections::BTreeMap;
use std::time::Instant;

use rebound::cassandra_types::ConsistencyLevel;
use rebound::request::HttpMethod;
use rebound::{Request, RequestType, RetryReason};
use serde_json::{json, Value};

use crate::wire::input::{default_timeout_ms, DecideInput};
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

/// One question to the policy: a decision-JSON line (the request and the reason), so the
/// request is built exactly as `rebound eval` builds it and a reported input replays there.
#[derive(Debug, Clone)]
pub struct Input {
    /// Why the request failed.
    pub reason: RetryReason,
    /// Whether the request is idempotent (its type's rule, refined by the shape).
    pub idempotent: bool,
    /// Time since the request started.
    pub elapsed_ms: u64,
    /// The request's timeout.
    pub timeout_ms: u64,
    line: Value,
    decide: DecideInput,
    description: String,
}

impl Input {
    fn new(
        reason: RetryReason,
        shape: Shape,
        dispatched: bool,
        attempts: u32,
        (elapsed_ms, timeout_ms): (u64, u64),
        context: &BTreeMap<String, String>,
    ) -> Self {
        let mut request = json!({
            "type": shape.request_type,
            "readonly": shape.readonly,
            "dispatched": dispatched,
            "retry_attempts": attempts,
            "elapsed_ms": elapsed_ms,
            "timeout_ms": timeout_ms,
            "client_context": context,
        });
        for (field, value) in [
            ("method", shape.method.map(|m| json!(m))),
            ("idempotent", shape.idempotent.map(Value::from)),
            ("consistency", shape.consistency.map(|c| json!(c))),
        ] {
            if let Some(value) = value {
                request[field] = value;
            }
        }
        let mut line = json!({"request": request, "reason": output::reason(&reason)});
        let decide =
            DecideInput::parse(&line.to_string()).expect("the grid writes valid decision JSON");
        let idempotent = decide
            .request(Instant::now(), 1)
            .expect("the grid's requests are valid")
            .is_idempotent();
        // Stated in the line, so a reader of the report need not know the rules.
        line["request"]["idempotent"] = idempotent.into();
        let mut description = format!("{reason} {}", shape.request_type);
        if shape.readonly {
            description.push_str(" readonly");
        }
        if let Some(method) = shape.method {
            description.push_str(&format!(" {method:?}").to_uppercase());
        }
        description.push_str(if idempotent {
            " idempotent"
        } else {
            " non-idempotent"
        });
        if !dispatched {
            description.push_str(" not-dispatched");
        }
        description.push_str(&format!(
            " attempts={attempts} elapsed={elapsed_ms}ms timeout={timeout_ms}ms"
        ));
        for (key, value) in context {
            description.push_str(&format!(" {key}={value}"));
        }
        if !matches!(reason, RetryReason::Simple(_) | RetryReason::Other(_)) {
            description.push_str(&format!(" data={}", output::reason(&reason)));
        }
        Input {
            reason,
            idempotent,
            elapsed_ms,
            timeout_ms,
            line,
            decide,
            description,
        }
    }

    /// The request, as decided at `now` (it started `elapsed_ms` before).
    pub fn request(&self, now: Instant) -> Request {
        let mut request = self
            .decide
            .request(now, 1)
            .expect("the grid's requests are valid");
        request.set_decision_time(Some(now));
        request
    }

    /// The input as a `rebound eval` line.
    pub fn to_json(&self) -> Value {
        self.line.clone()
    }

    /// A one-line description for the human report.
    pub fn describe(&self) -> &str {
        &self.description
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
                            inputs.push(Input::new(
                                reason.clone(),
                                shape,
                                dispatched,
                                attempts,
                                (elapsed_ms, timeout_ms),
                                context,
                            ));
                        }
                    }
                }
            }
        }
    }
    inputs
}
