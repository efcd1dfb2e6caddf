//! The hedging questions of `rebound check`: a policy that hedges plans its copies from what it
//! reads, the latency its host observed included, and a copy planned past the request's
//! timeout is never sent. So for a component that exports `hedging`, every request the host
//! may hedge is asked `next-copy` after a copy and after a failure, early and halfway through
//! its timeout, with one or three copies out, while the host has observed no latency, fast
//! answers (5–50 ms) and answers slower than any request's timeout (100–200 s), each twice in
//! opposite orders.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::hedge::{latency_key, Asked, HedgeAction, InFlight};
use rebound::latency::LatencySketches;
use rebound::wasm::WasmStrategy;
use rebound::{PolicyFailure, RetryReason};
use serde_json::{json, Value};

use super::grid::Input;
use super::invariants::{summary, Question, Rule, Violation};

/// What the host observed of the request's authority before the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// No answered attempt: the policy's percentile reads answer none.
    Nothing,
    /// Answers within 5–50 ms.
    Fast,
    /// Answers within 100–200 s, slower than any request's timeout.
    Slow,
}

impl Observed {
    const ALL: [Observed; 3] = [Observed::Nothing, Observed::Fast, Observed::Slow];

    const fn name(self) -> &'static str {
        match self {
            Observed::Nothing => "nothing",
            Observed::Fast => "fast",
            Observed::Slow => "slow",
        }
    }

    /// Sketches holding 200 answers per authority the grid names, spread evenly over the
    /// range (none for `Nothing`).
    fn sketches(self, authorities: &[&str]) -> Arc<LatencySketches> {
        let sketches = LatencySketches::new(authorities.len());
        let range_ms = match self {
            Observed::Nothing => return Arc::new(sketches),
            Observed::Fast => 5..=50u64,
            Observed::Slow => 100_000..=200_000,
        };
        let span = range_ms.end() - range_ms.start();
        for authority in authorities {
            for n in 0..200 {
                let ms = range_ms.start() + span * n / 199;
                sketches.record(authority, Duration::from_millis(ms));
            }
        }
        Arc::new(sketches)
    }
}

/// One hedging question: a request in flight and what the host observed.
#[derive(Debug, Clone)]
pub struct HedgeInput {
    request: Input,
    asked: Asked,
    copies: u32,
    since_first_ms: u64,
    observed: Observed,
}

impl HedgeInput {
    /// The request's timeout.
    fn timeout_ms(&self) -> u64 {
        self.request.timeout_ms
    }

    /// The question as a `rebound eval` hedging line (the observed latencies are outcome
    /// reports of their own there).
    pub fn to_json(&self) -> Value {
        let mut hedge = json!({
            "asked": match self.asked {
                Asked::AfterCopy => "after_copy",
                Asked::AfterFailure => "after_failure",
            },
            "copies": self.copies,
            "since_first_ms": self.since_first_ms,
        });
        if self.asked == Asked::AfterFailure {
            hedge["failures"] = json!([rebound::decision_json::reason(&self.request.reason)]);
        }
        json!({
            "request": self.request.request_json(),
            "hedge": hedge,
            "observed_latency": self.observed.name(),
        })
    }

    /// A one-line description for the human report.
    pub fn describe(&self) -> String {
        let asked = match self.asked {
            Asked::AfterCopy => "after a copy".to_owned(),
            Asked::AfterFailure => format!("after a failure ({})", self.request.reason),
        };
        format!(
            "hedge {asked}, {} copies sent, {} ms since the first, {} latency observed: {}",
            self.copies,
            self.since_first_ms,
            self.observed.name(),
            self.request.describe_request()
        )
    }
}

/// The policy's answer to one hedging question.
pub type HedgeAnswer = Result<Option<HedgeAction>, PolicyFailure>;

/// The hedging questions asked and the policy's answers.
pub struct Hedged {
    /// The questions.
    pub questions: Vec<HedgeInput>,
    /// The first pass's answers.
    pub first: Vec<HedgeAnswer>,
    /// The second pass's answers.
    pub second: Vec<HedgeAnswer>,
}

impl Hedged {
    /// The first pass's answers by kind.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for answer in &self.first {
            let kind = match answer {
                Err(_) => "failed",
                Ok(Some(HedgeAction::SendAfter { .. })) => "send",
                Ok(_) => "wait",
            };
            *counts.entry(kind).or_default() += 1;
        }
        counts
    }
}

/// The human report's line on hedging: what was asked and answered, or that the component
/// does not hedge.
pub fn write_summary(out: &mut impl Write, hedges: Option<&Hedged>) -> std::io::Result<()> {
    let Some(hedges) = hedges else {
        return writeln!(
            out,
            "  hedging    none: the component does not export `hedging`"
        );
    };
    let counts: Vec<String> = (hedges.counts().iter())
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    writeln!(
        out,
        "  hedging    {} questions (each request it may hedge × after a copy or a failure × 1 or 3 out × early or halfway × no, fast or slow observed latency), answered {}",
        hedges.questions.len(),
        counts.join(", ")
    )
}

/// Every hedging question about `requests`.
pub fn questions(requests: &[Input]) -> Vec<HedgeInput> {
    let mut questions = Vec::new();
    for request in requests {
        for observed in Observed::ALL {
            for asked in [Asked::AfterCopy, Asked::AfterFailure] {
                for copies in [1, 3] {
                    for since_first_ms in [0, request.timeout_ms / 2] {
                        questions.push(HedgeInput {
                            request: request.clone(),
                            asked,
                            copies,
                            since_first_ms,
                            observed,
                        });
                    }
                }
            }
        }
    }
    questions
}

/// Asks `strategy` every question, first to last when `reversed` is false.
pub fn ask(strategy: &WasmStrategy, questions: &[HedgeInput], reversed: bool) -> Vec<HedgeAnswer> {
    let now = Instant::now();
    let requests: Vec<_> = questions.iter().map(|q| q.request.request(now)).collect();
    let authorities: BTreeSet<&str> = requests.iter().map(latency_key).collect();
    let authorities: Vec<&str> = authorities.into_iter().collect();
    let sketches = Observed::ALL.map(|observed| observed.sketches(&authorities));
    let mut answers = vec![Ok(None); questions.len()];
    let mut order: Vec<usize> = (0..questions.len()).collect();
    if reversed {
        order.reverse();
    }
    for i in order {
        let question = &questions[i];
        let failures: &[RetryReason] = match question.asked {
            Asked::AfterCopy => &[],
            Asked::AfterFailure => std::slice::from_ref(&question.request.reason),
        };
        let latencies = &sketches[question.observed as usize];
        let flight = InFlight {
            asked: question.asked,
            copies: question.copies,
            outstanding: question.copies - u32::from(question.asked == Asked::AfterFailure),
            since_first: Duration::from_millis(question.since_first_ms),
            since_last: Duration::ZERO,
            failures,
            pushback: None,
            latencies: Some(latencies),
        };
        answers[i] = strategy.try_next_copy(&requests[i], &flight);
    }
    answers
}

/// An answer in words.
pub fn describe(answer: &HedgeAnswer) -> String {
    match answer {
        Err(failure) => format!("failed ({})", summary(failure)),
        Ok(None) | Ok(Some(HedgeAction::Wait)) => "wait".into(),
        Ok(Some(HedgeAction::SendAfter { after, node })) => format!(
            "send a copy after {} ms to the {node:?} node",
            after.as_millis()
        )
        .to_lowercase(),
    }
}

/// An answer as JSON.
pub fn to_json(answer: &HedgeAnswer) -> Value {
    match answer {
        Err(failure) => json!({"failed": failure.kind.name(), "detail": failure.detail}),
        Ok(None) | Ok(Some(HedgeAction::Wait)) => json!("wait"),
        Ok(Some(HedgeAction::SendAfter { after, node })) => {
            json!({"send": {"after_ms": after.as_millis() as u64, "node": node}})
        }
    }
}

/// Checks the answers of two passes over `questions` against the rules that judge hedging.
pub fn violations(
    questions: &[HedgeInput],
    first: &[HedgeAnswer],
    second: &[HedgeAnswer],
) -> Vec<Violation> {
    let mut found = Vec::new();
    for (i, question) in questions.iter().enumerate() {
        let mut violate = |rule, problem| {
            found.push(Violation {
                rule,
                input: Question::Hedge(i),
                problem,
            })
        };
        let after = match (&first[i], &second[i]) {
            (Err(failure), _) | (Ok(_), Err(failure)) => {
                violate(Rule::WithinLimits, summary(failure));
                continue;
            }
            (Ok(a), Ok(b)) if a != b => {
                violate(
                    Rule::Deterministic,
                    format!(
                        "answered {} then {}",
                        describe(&first[i]),
                        describe(&second[i])
                    ),
                );
                continue;
            }
            (Ok(Some(HedgeAction::SendAfter { after, .. })), _) => *after,
            (Ok(_), _) => continue,
        };
        let at = Duration::from_millis(question.since_first_ms) + after;
        if at >= Duration::from_millis(question.timeout_ms()) {
            violate(
                Rule::CopiesWithinTimeout,
                format!(
                    "plans a copy {} ms after the first was sent, not before the request's whole \
                     {} ms timeout, when {} latency was observed",
                    at.as_millis(),
                    question.timeout_ms(),
                    question.observed.name()
                ),
            );
        }
    }
    found
}
