//! `rebound eval --replay LOG --policy CANDIDATE`: an offline shadow trial. Every decision of a
//! decision log is decided again, from its logged input, by the candidate policy; each line
//! where the two disagree is printed with both answers. Answers agree when their `decision`,
//! `node`, `consistency`, `error`, `cancel_reason` and `policy_failure` are equal and their
//! delays are within a millisecond of each other (the log keeps `elapsed_ms` in whole
//! milliseconds; a policy with jitter can disagree with itself on delays).

use std::io::{BufRead, Write};

use anyhow::Context;
use serde_json::{json, Value};

use crate::json_decider::JsonDecider;
use crate::wire::output;

/// The fields that make two answers the same verdict, besides the delay.
const VERDICT: [&str; 6] = [
    "decision",
    "node",
    "consistency",
    "error",
    "cancel_reason",
    "policy_failure",
];

/// What a replay found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// Lines decided again.
    pub decided: usize,
    /// Of those, lines where the candidate disagrees.
    pub disagreements: usize,
    /// Lines that could not be replayed (each printed as an error object).
    pub refused: usize,
}

/// Replays every line of `log` with `candidate` (a policy name, a built-in or a component
/// path, as a decision's `policy` field takes it), printing disagreements to `out`.
pub fn replay(
    decider: &JsonDecider,
    log: impl BufRead,
    candidate: &str,
    out: &mut impl Write,
) -> anyhow::Result<Replayed> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let mut replayed = Replayed::default();
    for (index, line) in log.lines().enumerate() {
        let number = index + 1;
        let line = line.with_context(|| format!("cannot read line {number} of the log"))?;
        if line.trim().is_empty() {
            continue;
        }
        let refused =
            |field: &str, message: String| output::input_error(field, &message, Some(number));
        let logged: Value = match serde_json::from_str(&line) {
            Ok(logged @ Value::Object(_)) => logged,
            Ok(_) => {
                replayed.refused += 1;
                let error = refused("", "not a decision-log line: expected a JSON object".into());
                writeln!(out, "{error}")?;
                continue;
            }
            Err(e) => {
                replayed.refused += 1;
                writeln!(out, "{}", refused("", format!("not JSON: {e}")))?;
                continue;
            }
        };
        let Some(mut input) = logged.get("input").filter(|i| i.is_object()).cloned() else {
            replayed.refused += 1;
            let error = refused(
                "input",
                "missing: a decision-log line has its `input`".into(),
            );
            writeln!(out, "{error}")?;
            continue;
        };
        input["policy"] = candidate.into();
        let answer = match runtime.block_on(decider.decide_text(&input.to_string(), number as u64))
        {
            Ok(answer) => answer,
            Err(e) => {
                replayed.refused += 1;
                let field = if e.field.is_empty() {
                    "input".to_owned()
                } else {
                    format!("input.{}", e.field)
                };
                writeln!(out, "{}", refused(&field, e.message))?;
                continue;
            }
        };
        replayed.decided += 1;
        let before = &logged["answer"];
        if agree(before, &answer.json) {
            continue;
        }
        replayed.disagreements += 1;
        if let Some(input) = input.as_object_mut() {
            input.remove("policy");
        }
        let candidate_answer = json!({
            "policy": answer.json.get("policy"),
            "version": answer.json.get("version"),
            "answer": answer.json,
        });
        let disagreement = json!({
            "line": number,
            "decision_id": logged.get("decision_id"),
            "request_id": logged.get("request_id"),
            "input": input,
            "logged": {
                "policy": logged.get("policy"),
                "version": logged.get("version"),
                "answer": before,
            },
            "candidate": candidate_answer,
        });
        writeln!(out, "{disagreement}")?;
        out.flush()?;
    }
    Ok(replayed)
}

/// Whether two answers are the same verdict.
fn agree(logged: &Value, replayed: &Value) -> bool {
    let delay = |answer: &Value| answer.get("delay_ms").and_then(Value::as_f64);
    let delays_agree = match (delay(logged), delay(replayed)) {
        (Some(a), Some(b)) => (a - b).abs() <= 1.0,
        (a, b) => a == b,
    };
    delays_agree
        && VERDICT
            .iter()
            .all(|key| logged.get(key) == replayed.get(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two answers that differ only in the fields a replay cannot reproduce (IDs, error
    /// context timings, a sub-millisecond delay) agree; a different node or decision does not.
    #[test]
    fn answers_agree_on_their_verdict_only() {
        let logged = json!({"decision": "retry", "delay_ms": 10.0, "node": "same",
            "consistency": null, "decision_id": "a", "error_context": {"elapsed_us": 1}});
        let same = json!({"decision": "retry", "delay_ms": 10.6, "node": "same",
            "consistency": null, "decision_id": "b", "error_context": {"elapsed_us": 2}});
        assert!(agree(&logged, &same));
        let later =
            json!({"decision": "retry", "delay_ms": 12.0, "node": "same", "consistency": null});
        assert!(!agree(&logged, &later));
        let next =
            json!({"decision": "retry", "delay_ms": 10.0, "node": "next", "consistency": null});
        assert!(!agree(&logged, &next));
        let cancel = json!({"decision": "cancel", "error": "RequestCanceled"});
        assert!(!agree(&logged, &cancel));
    }
}
