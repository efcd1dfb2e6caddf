//! A hedging question as JSON (`rebound eval` lines with a `hedge`): a request in flight — the
//! copies sent and still out, the time since the first and the last, the failures answered so
//! far, the last pushback and whether the call is committed — and the answer: when the next copy goes and where, or why none
//! does (docs/decision-json.md "Hedging").

use std::time::{Duration, Instant};

use rebound::hedge::{Asked, HedgeAction, Hedging, InFlight, MAX_COPIES};
use rebound::registry::PolicyRegistry;
use rebound::throttle::FailureClass;
use rebound::{NodeChoice, Pushback, Request, RetryReason};
use serde::Deserialize;
use serde_json::{json, Value};

use super::input::{parse_reason, DecideInput, InputError, PushbackText, RequestSpec};

/// Why the policy is asked, as written.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum AskedSpec {
    #[default]
    AfterCopy,
    AfterFailure,
}

/// The last failure's pushback: milliseconds, or gRPC's header as received (its text, or its
/// texts when it came more than once: `"stop"`, like any text that is not a number, says stop).
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "milliseconds, or the grpc-retry-pushback-ms header's text or list of texts"
)]
enum PushbackSpec {
    Ms(u64),
    Text(PushbackText),
}

/// The request in flight, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlightSpec {
    #[serde(default)]
    asked: AskedSpec,
    #[serde(default = "one")]
    copies: u32,
    #[serde(default)]
    outstanding: Option<u32>,
    #[serde(default)]
    since_first_ms: u64,
    #[serde(default)]
    since_last_ms: u64,
    #[serde(default)]
    failures: Vec<Value>,
    #[serde(default)]
    pushback: Option<PushbackSpec>,
    /// Whether a copy has had response headers or a message: the call is committed.
    #[serde(default)]
    committed: bool,
}

fn one() -> u32 {
    1
}

/// One hedging question as given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgeInput {
    hedge: FlightSpec,
    #[serde(default)]
    policy: Option<String>,
    #[serde(default)]
    request: RequestSpec,
}

impl HedgeInput {
    /// Whether `text` is a hedging question: an object with a `hedge` field.
    pub fn is_question(text: &str) -> bool {
        serde_json::from_str::<serde_json::Map<String, Value>>(text)
            .is_ok_and(|object| object.contains_key("hedge"))
    }

    /// The question in `text`; an error names the field.
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| InputError::new("", format!("not JSON: {e}")))?;
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            InputError::new(
                if path == "." { "" } else { &path },
                e.into_inner().to_string(),
            )
        })
    }

    /// The request in flight, as it is at `now`.
    pub fn request(&self, now: Instant) -> Result<Request, InputError> {
        let input = DecideInput {
            request: self.request.clone(),
            ..DecideInput::default()
        };
        input.request(now, 0)
    }

    /// The answer of `registry`'s policy for the request, within the host's rules.
    pub fn answer(&self, registry: &PolicyRegistry, now: Instant) -> Result<Value, InputError> {
        let request = self.request(now)?;
        let request = match &self.policy {
            Some(name) => {
                registry
                    .active(name)
                    .map_err(|e| InputError::new("policy", e.to_string()))?;
                request.with_policy(name.clone())
            }
            None => request,
        };
        let hedging = registry.controls(&request).hedging(&request, now);
        self.answer_with(&request, hedging, now)
    }

    /// The answer of `hedging`'s policy for `request` (none: it does not hedge), within the
    /// host's rules.
    pub fn answer_with(
        &self,
        request: &Request,
        hedging: Option<Hedging>,
        now: Instant,
    ) -> Result<Value, InputError> {
        let flight = &self.hedge;
        let (failures, pushback, asked) = flight.read()?;
        let none = |why: &str| json!({ "hedge": { "next": "none", "why": why } });
        if !Hedging::may_hedge(request) {
            return Ok(none("the request is not idempotent: it is never hedged"));
        }
        if flight.committed {
            // gRFC A6 "When Retries are Valid": a committed call starts no other attempt.
            return Ok(none("the call is committed: no copy starts"));
        }
        let Some(hedging) = hedging else {
            return Ok(none("its policy does not hedge"));
        };
        let policy = hedging.policy();
        if let (Asked::AfterFailure, Some(last)) = (asked, failures.last()) {
            if policy.is_fatal(request, last) {
                return Ok(none("the failure is fatal: the other copies are cancelled"));
            }
            // A copy's failure that does not end the request counts in the throttle as it
            // happens (gRFC A6 "Throttling Retry Attempts and Hedged RPCs").
            if let Some(throttle) = hedging.throttle() {
                throttle.failed_at(FailureClass::of(last, pushback), now);
            }
        }
        if pushback == Some(Pushback::Stop) {
            return Ok(none("the pushback says stop: no more copies"));
        }
        if flight.copies >= MAX_COPIES {
            return Ok(none("the host's limit of 5 copies is reached"));
        }
        let in_flight = InFlight {
            asked,
            copies: flight.copies,
            outstanding: flight.outstanding.unwrap_or(flight.copies),
            since_first: Duration::from_millis(flight.since_first_ms),
            since_last: Duration::from_millis(flight.since_last_ms),
            failures: &failures,
            pushback,
            latencies: hedging.latencies(),
        };
        Ok(match policy.next_copy(request, &in_flight) {
            HedgeAction::Wait => json!({ "hedge": { "next": "wait" } }),
            // A6: a hedged copy goes only while the throttle is above its threshold; the budget
            // pays for it as for a retry.
            HedgeAction::SendAfter { .. } if !hedging.pay_for_copy(now) => {
                none("the throttle or the retry budget refuses another copy")
            }
            HedgeAction::SendAfter { after, node } => json!({ "hedge": {
                "next": "send",
                "after_ms": after.as_millis() as u64,
                "node": match node {
                    NodeChoice::Same => "same",
                    NodeChoice::Next => "next",
                },
            } }),
        })
    }
}

impl FlightSpec {
    /// The failures, the pushback and what the host asks about, as read; an error names the
    /// field.
    fn read(&self) -> Result<(Vec<RetryReason>, Option<Pushback>, Asked), InputError> {
        let failures = (self.failures.iter().enumerate())
            .map(|(i, value)| {
                parse_reason(value).map_err(|e| {
                    InputError::new(
                        e.field
                            .replacen("reason", &format!("hedge.failures[{i}]"), 1),
                        e.message,
                    )
                })
            })
            .collect::<Result<Vec<RetryReason>, _>>()?;
        let pushback = match &self.pushback {
            None => None,
            Some(PushbackSpec::Ms(ms)) => Some(Pushback::After(Duration::from_millis(*ms))),
            Some(PushbackSpec::Text(text)) => text.read(),
        };
        if self.copies == 0 {
            return Err(InputError::new(
                "hedge.copies",
                "expected at least 1 (the first copy counts)",
            ));
        }
        let asked = match self.asked {
            AskedSpec::AfterCopy => Asked::AfterCopy,
            AskedSpec::AfterFailure if failures.is_empty() => {
                return Err(InputError::new(
                    "hedge.failures",
                    "`after_failure` needs the failure: at least one entry",
                ))
            }
            AskedSpec::AfterFailure => Asked::AfterFailure,
        };
        Ok((failures, pushback, asked))
    }
}
