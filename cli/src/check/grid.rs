//! The inputs `rebound check` asks a policy about: every reason variant, for requests of every
//! service (Couchbase, Cassandra, plain HTTP, gRPC) — idempotent and not, dispatched and not —
//! after several retries, early in their life, just before their deadline and past it, with an
//! empty client context and with each context the author names; an attempt cut by its timeout
//! says which timeout cut it. The grid is asked in a mixed order, so that a check stopped early
//! (`--max-failures`) has still asked about every part of it. The requests a policy may hedge
//! are kept for the hedging questions (`hedging`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rebound::cassandra::ConsistencyLevel;
use rebound::hedge::Hedging;
use rebound::HttpMethod;
use rebound::{DecisionContext, ReasonKind, Request, RequestType, RetryReason};
use serde_json::{json, Value};

use crate::wire::input::{default_timeout_ms, DecideInput};

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
    /// Where an HTTP request or gRPC call goes: its authority and route.
    route: Option<(&'static str, &'static str)>,
}

impl Shape {
    const fn of(request_type: RequestType) -> Self {
        Shape {
            request_type,
            readonly: false,
            method: None,
            idempotent: None,
            consistency: None,
            route: None,
        }
    }
}

/// Requests of every service, each idempotency rule on both sides: an HTTP request by its
/// method (RFC 9110 §9.2.2), a gRPC call by its declaration (gRFC A6).
const SHAPES: [Shape; 16] = [
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
    Shape {
        method: Some(HttpMethod::Get),
        route: Some(("api.example", "/items/{id}")),
        ..Shape::of(RequestType::Http)
    },
    Shape {
        method: Some(HttpMethod::Post),
        route: Some(("api.example", "/orders")),
        ..Shape::of(RequestType::Http)
    },
    Shape {
        idempotent: Some(true),
        route: Some(("inventory", "/shop.Inventory/Get")),
        ..Shape::of(RequestType::Grpc)
    },
    Shape {
        route: Some(("orders", "/shop.Orders/Create")),
        ..Shape::of(RequestType::Grpc)
    },
];

/// How many request shapes the grid asks about for each reason.
pub const REQUESTS: usize = SHAPES.len();

/// One question to the policy. Its request is read from a decision-JSON line (the request
/// and the reason), so it is built exactly as `rebound eval` builds it and a reported input
/// replays there. The line and the description are written again only for the inputs a
/// report shows, to keep the 40 000 inputs small.
#[derive(Debug, Clone)]
pub struct Input {
    /// Why the request failed.
    pub reason: RetryReason,
    /// Whether the request is idempotent (its type's rule, refined by the shape).
    pub idempotent: bool,
    /// Whether the host would send it again after its reason at all (`Request::may_be_sent_again`).
    pub may_be_sent_again: bool,
    /// Time since the request started.
    pub elapsed_ms: u64,
    /// The request's timeout.
    pub timeout_ms: u64,
    /// The attempt timeout that cut the failed attempt (an `ATTEMPT_TIMEOUT` failure): a quarter
    /// of the request's timeout.
    pub fired_timeout_ms: Option<u64>,
    shape: Shape,
    dispatched: bool,
    attempts: u32,
    context: BTreeMap<String, String>,
    decide: DecideInput,
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
        let fired_timeout_ms =
            (reason.kind() == ReasonKind::AttemptTimeout).then_some(timeout_ms / 4);
        let mut input = Input {
            reason,
            idempotent: false,
            may_be_sent_again: false,
            elapsed_ms,
            timeout_ms,
            fired_timeout_ms,
            shape,
            dispatched,
            attempts,
            context: context.clone(),
            decide: DecideInput::default(),
        };
        input.decide = DecideInput::parse(&input.line(None).to_string())
            .expect("the grid writes valid decision JSON");
        let request = input.request(Instant::now());
        input.idempotent = request.is_idempotent();
        input.may_be_sent_again = request.may_be_sent_again(&input.reason);
        input
    }

    /// The decision-JSON line, stating `idempotent` when given.
    fn line(&self, idempotent: Option<bool>) -> Value {
        let shape = &self.shape;
        let mut request = json!({
            "type": shape.request_type,
            "readonly": shape.readonly,
            "dispatched": self.dispatched,
            "retry_attempts": self.attempts,
            "elapsed_ms": self.elapsed_ms,
            "timeout_ms": self.timeout_ms,
            "client_context": self.context,
        });
        for (field, value) in [
            ("method", shape.method.map(|m| json!(m))),
            (
                "idempotent",
                shape.idempotent.or(idempotent).map(Value::from),
            ),
            ("consistency", shape.consistency.map(|c| json!(c))),
            (
                "authority",
                shape.route.map(|(authority, _)| json!(authority)),
            ),
            ("route", shape.route.map(|(_, route)| json!(route))),
        ] {
            if let Some(value) = value {
                request[field] = value;
            }
        }
        let mut line =
            json!({"request": request, "reason": rebound::decision_json::reason(&self.reason)});
        if let Some(fired) = self.fired_timeout_ms {
            line["attempt_timeout_ms"] = fired.into();
        }
        line
    }

    /// The request part of the input's line, as a hedging question's `request`.
    pub fn request_json(&self) -> Value {
        self.line(Some(self.idempotent))["request"].take()
    }

    /// The request, as decided at `now` (it started `elapsed_ms` before).
    pub fn request(&self, now: Instant) -> Request {
        self.decide
            .request(now, 1)
            .expect("the grid's requests are valid")
    }

    /// What the policy is told of the failure besides its reason: the attempt timeout that
    /// fired, for an attempt cut by one.
    pub fn context(&self, now: Instant) -> DecisionContext<'_> {
        let fired = self.fired_timeout_ms.map(Duration::from_millis);
        DecisionContext::new(&self.reason)
            .at(now)
            .with_attempt_timeout(fired)
    }

    /// The input as a `rebound eval` line, its idempotency stated so a reader of the report
    /// need not know the rules.
    pub fn to_json(&self) -> Value {
        self.line(Some(self.idempotent))
    }

    /// A one-line description for the human report.
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}", self.reason, self.describe_request());
        if let Some(fired) = self.fired_timeout_ms {
            text.push_str(&format!(" attempt_timeout={fired}ms"));
        }
        if !matches!(self.reason, RetryReason::Simple(_) | RetryReason::Other(_)) {
            text.push_str(&format!(
                " data={}",
                rebound::decision_json::reason(&self.reason)
            ));
        }
        text
    }

    /// The request alone in words: its type, how it is sent, its idempotency, its history and
    /// its client context.
    pub fn describe_request(&self) -> String {
        let shape = &self.shape;
        let mut text = shape.request_type.to_string();
        if shape.readonly {
            text.push_str(" readonly");
        }
        if let Some(method) = shape.method {
            text.push_str(&format!(" {method:?}").to_uppercase());
        }
        if let Some((authority, route)) = shape.route {
            text.push_str(&format!(" {authority}{route}"));
        }
        text.push_str(if self.idempotent {
            " idempotent"
        } else {
            " non-idempotent"
        });
        if !self.dispatched {
            text.push_str(" not-dispatched");
        }
        text.push_str(&format!(
            " attempts={} elapsed={}ms timeout={}ms",
            self.attempts, self.elapsed_ms, self.timeout_ms
        ));
        for (key, value) in &self.context {
            text.push_str(&format!(" {key}={value}"));
        }
        text
    }
}

/// The grid, with each of `contexts` beside the empty context, in [`mixed`] order.
pub fn inputs(contexts: &[BTreeMap<String, String>]) -> Vec<Input> {
    let mut all_contexts = vec![BTreeMap::new()];
    all_contexts.extend(contexts.iter().cloned());
    let reasons = rebound::grid::every_reason();
    // The grid's dimensions, outermost first: reason, request shape, dispatched or not,
    // attempts, moment (early, just before the deadline, past it), context.
    let sizes = [
        reasons.len(),
        SHAPES.len(),
        2,
        ATTEMPTS.len(),
        3,
        all_contexts.len(),
    ];
    mixed(sizes.iter().product())
        .map(|index| {
            let mut digits = [0; 6];
            let mut rest = index;
            for (digit, size) in digits.iter_mut().zip(sizes).rev() {
                *digit = rest % size;
                rest /= size;
            }
            let [reason, shape, dispatched, attempts, moment, context] = digits;
            let shape = SHAPES[shape];
            let timeout_ms = default_timeout_ms(shape.request_type.service());
            let elapsed_ms = [0, timeout_ms - 1, timeout_ms + 10][moment];
            Input::new(
                reasons[reason].clone(),
                shape,
                dispatched == 0,
                ATTEMPTS[attempts],
                (elapsed_ms, timeout_ms),
                &all_contexts[context],
            )
        })
        .collect()
}

/// The requests a policy may be asked to hedge: each request shape the host hedges (an
/// idempotent one, `Hedging::may_hedge`), sent once and not answered yet, with each of
/// `contexts` beside the empty context. Their reason is the failure of a copy cut by its
/// attempt timeout, for the questions asked after a failure.
pub fn in_flight(contexts: &[BTreeMap<String, String>]) -> Vec<Input> {
    let mut all_contexts = vec![BTreeMap::new()];
    all_contexts.extend(contexts.iter().cloned());
    let cut = RetryReason::simple(ReasonKind::AttemptTimeout).expect("a reason without data");
    let mut requests = Vec::new();
    for shape in SHAPES {
        let timeout_ms = default_timeout_ms(shape.request_type.service());
        for context in &all_contexts {
            let input = Input::new(cut.clone(), shape, true, 0, (0, timeout_ms), context);
            if Hedging::may_hedge(&input.request(Instant::now())) {
                requests.push(input);
            }
        }
    }
    requests
}

/// The order the grid's `n` inputs are asked in: by a stride coprime to `n` near its golden
/// section, the k-th input asked being the grid's `k × stride mod n`-th, so any prefix of the
/// order spreads over every reason, request shape, attempt count and moment alike.
fn mixed(n: usize) -> impl Iterator<Item = usize> {
    let mut stride = (n * 618 / 1000).max(1);
    while gcd(stride, n) > 1 {
        stride += 1;
    }
    (0..n).map(move |k| k * stride % n)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixed_order_asks_every_input_once() {
        for n in [0, 1, 2, 3, 10, 384, 55_296] {
            let mut order: Vec<usize> = mixed(n).collect();
            order.sort_unstable();
            assert_eq!(order, (0..n).collect::<Vec<_>>());
        }
    }

    /// docs/executor.md: the decision on an attempt cut by its timeout is told which timeout
    /// fired; the grid's cut attempts say so, in their line (for `rebound eval`) and in what
    /// the policy is told, and no other input does.
    #[test]
    fn attempts_cut_by_their_timeout_say_which_timeout_fired() {
        let now = Instant::now();
        let grid = inputs(&[]);
        let cut: Vec<&Input> = (grid.iter())
            .filter(|i| i.reason.kind() == ReasonKind::AttemptTimeout)
            .collect();
        assert!(!cut.is_empty());
        for input in cut {
            let fired = input.timeout_ms / 4;
            assert_eq!(input.to_json()["attempt_timeout_ms"], fired);
            let told = input.context(now).attempt_timeout();
            assert_eq!(told, Some(Duration::from_millis(fired)));
        }
        for input in grid.iter().filter(|i| i.fired_timeout_ms.is_none()) {
            assert_eq!(input.context(now).attempt_timeout(), None);
            assert!(input.to_json().get("attempt_timeout_ms").is_none());
        }
    }

    #[test]
    fn the_first_thousand_inputs_asked_cover_every_reason_and_request_shape() {
        let grid = inputs(&[]);
        let covered = |inputs: &[Input]| {
            let reasons: std::collections::BTreeSet<String> =
                inputs.iter().map(|i| format!("{:?}", i.reason)).collect();
            let shapes: std::collections::BTreeSet<String> =
                inputs.iter().map(|i| format!("{:?}", i.shape)).collect();
            (reasons.len(), shapes.len())
        };
        assert_eq!(covered(&grid[..1000]), covered(&grid));
    }
}
