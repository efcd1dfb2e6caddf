//! The rules `rebound check` holds a policy to, and the answers it judges.

use std::time::Duration;

use rebound::PolicyFailure;
use rebound::RetryAction;
use serde_json::{json, Value};

use super::grid::Input;

/// The policy's answer to one input, and how long it took.
#[derive(Debug, Clone)]
pub struct Answer {
    /// What the policy answered, before the orchestrator's safety guard, or how the call
    /// failed.
    pub result: Result<RetryAction, PolicyFailure>,
    /// The call's duration.
    pub took: Duration,
}

/// An invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Every input is answered within the sandbox's limits, without trapping.
    WithinLimits,
    /// The same input gets the same answer, whatever was asked before.
    Deterministic,
    /// No retry of a non-idempotent request for a reason that does not allow one
    /// (reference 001 "RetryReason", the "allows non-idempotent retry" flag), nor of a
    /// non-idempotent HTTP request or gRPC call already sent (RFC 9110 §9.2.2, gRFC A6).
    SafeRetries,
    /// No retry delay as long as the request's whole timeout: such a retry is never sent.
    DelaysWithinTimeout,
    /// No attempt timeout as long as the request's whole timeout: such a timeout never fires,
    /// the deadline ends the attempt first (docs/executor.md).
    AttemptTimeoutsWithinTimeout,
    /// No copy of a request in flight planned for after its whole timeout, whatever latency
    /// was observed: such a copy is never sent (docs/hedging.md).
    CopiesWithinTimeout,
}

impl Rule {
    /// Every rule, in report order.
    pub const ALL: [Rule; 6] = [
        Rule::WithinLimits,
        Rule::Deterministic,
        Rule::SafeRetries,
        Rule::DelaysWithinTimeout,
        Rule::AttemptTimeoutsWithinTimeout,
        Rule::CopiesWithinTimeout,
    ];

    /// The rule's name in the JSON report.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::WithinLimits => "within_limits",
            Rule::Deterministic => "deterministic",
            Rule::SafeRetries => "safe_retries",
            Rule::DelaysWithinTimeout => "delays_within_timeout",
            Rule::AttemptTimeoutsWithinTimeout => "attempt_timeouts_within_timeout",
            Rule::CopiesWithinTimeout => "copies_within_timeout",
        }
    }

    /// What holds when the rule does.
    pub const fn statement(self) -> &'static str {
        match self {
            Rule::WithinLimits => {
                "answers every input within the sandbox's limits, without trapping"
            }
            Rule::Deterministic => "gives the same answer to the same input, in any order",
            Rule::SafeRetries => {
                "never asks to retry a non-idempotent request for a reason that forbids it, \
                 or an HTTP request or gRPC call already sent"
            }
            Rule::DelaysWithinTimeout => "asks for delays shorter than the request's timeout",
            Rule::AttemptTimeoutsWithinTimeout => {
                "asks for attempt timeouts shorter than the request's timeout, so they can fire"
            }
            Rule::CopiesWithinTimeout => {
                "plans copies of a request in flight before its timeout, whatever latency was \
                 observed"
            }
        }
    }

    /// Whether the rule judges hedging answers only, and so holds trivially for a policy that
    /// does not hedge.
    pub const fn hedging_only(self) -> bool {
        matches!(self, Rule::CopiesWithinTimeout)
    }
}

/// A question of the check: a decision (an index into the grid) or a hedging question (an
/// index into the requests in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// The grid's n-th input.
    Decision(usize),
    /// The n-th hedging question.
    Hedge(usize),
}

/// One input breaking one rule.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// The question answered.
    pub input: Question,
    /// What was wrong.
    pub problem: String,
}

/// A failed call in one line: its kind and what happened, its lines joined.
pub fn summary(failure: &PolicyFailure) -> String {
    let detail: Vec<&str> = failure.detail.split_whitespace().collect();
    format!("{}: {}", failure.kind, detail.join(" "))
}

/// An answer in words.
pub fn describe(result: &Result<RetryAction, PolicyFailure>) -> String {
    match result {
        Err(failure) => format!("failed ({})", summary(failure)),
        Ok(RetryAction::RetryAfter {
            delay,
            node,
            consistency,
            attempt_timeout,
        }) => {
            let mut text = format!("retry after {} ms on the {node:?} node", delay.as_millis());
            if let Some(level) = consistency {
                text.push_str(&format!(" at {level:?}"));
            }
            if let Some(timeout) = attempt_timeout {
                text.push_str(&format!(
                    ", its attempt cut after {} ms",
                    timeout.as_millis()
                ));
            }
            text.to_lowercase()
        }
        Ok(RetryAction::NoRetry) => "no retry".into(),
        Ok(RetryAction::Ignore) => "ignore".into(),
        Ok(RetryAction::Rethrow) => "rethrow".into(),
        Ok(RetryAction::Fail(error)) => format!("fail with {error}"),
        Ok(RetryAction::PolicyFailed(kind)) => format!("policy failed ({kind})"),
        Ok(other) => format!("{other:?}").to_lowercase(),
    }
}

/// An answer as JSON.
pub fn to_json(result: &Result<RetryAction, PolicyFailure>) -> Value {
    match result {
        Err(failure) => json!({"failed": failure.kind.name(), "detail": failure.detail}),
        Ok(RetryAction::RetryAfter {
            delay,
            node,
            consistency,
            attempt_timeout,
        }) => json!({"retry": {
            "delay_ms": delay.as_millis() as u64,
            "node": node,
            "consistency": consistency,
            "attempt_timeout_ms": attempt_timeout.map(|t| t.as_millis() as u64),
        }}),
        Ok(RetryAction::NoRetry) => json!("no_retry"),
        Ok(RetryAction::Ignore) => json!("ignore"),
        Ok(RetryAction::Rethrow) => json!("rethrow"),
        Ok(RetryAction::Fail(error)) => json!({"fail": error.to_string()}),
        Ok(RetryAction::PolicyFailed(kind)) => json!({"failed": kind.name()}),
        Ok(other) => json!({"other": format!("{other:?}")}),
    }
}

/// Checks the answers of two passes over `inputs` against every rule.
pub fn violations(inputs: &[Input], first: &[Answer], second: &[Answer]) -> Vec<Violation> {
    let mut found = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let mut violate = |rule, problem| {
            found.push(Violation {
                rule,
                input: Question::Decision(i),
                problem,
            })
        };
        let (a, b) = (&first[i].result, &second[i].result);
        match (a, b) {
            (Err(failure), _) | (Ok(_), Err(failure)) => {
                violate(Rule::WithinLimits, summary(failure));
                continue;
            }
            (Ok(a), Ok(b)) if a != b => violate(
                Rule::Deterministic,
                format!("answered {} then {}", describe(&Ok(*a)), describe(&Ok(*b))),
            ),
            _ => {}
        }
        let Ok(RetryAction::RetryAfter {
            delay,
            attempt_timeout,
            ..
        }) = a
        else {
            continue;
        };
        if !input.may_be_sent_again {
            let problem = if input.reason.allows_non_idempotent_retry() {
                "asks to retry a non-idempotent request that was already sent".to_owned()
            } else {
                format!(
                    "asks to retry a non-idempotent request after {}, which does not allow it",
                    input.reason
                )
            };
            violate(Rule::SafeRetries, problem);
        }
        let timeout = Duration::from_millis(input.timeout_ms);
        if *delay >= timeout {
            violate(
                Rule::DelaysWithinTimeout,
                format!(
                    "asks to wait {} ms, not less than the request's whole {} ms timeout",
                    delay.as_millis(),
                    input.timeout_ms
                ),
            );
        }
        if let Some(attempt_timeout) = attempt_timeout.filter(|t| *t >= timeout) {
            violate(
                Rule::AttemptTimeoutsWithinTimeout,
                format!(
                    "asks for an attempt timeout of {} ms, not less than the request's whole {} ms \
                     timeout: it never fires",
                    attempt_timeout.as_millis(),
                    input.timeout_ms
                ),
            );
        }
    }
    found
}
