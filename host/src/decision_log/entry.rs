//! One logged decision: what the deciding path hands the writer (owned values, cheap to take),
//! and the JSON line the writer makes of it — the decision request as `rebound eval` reads it,
//! the answer, who decided, the shadow candidate's answer, the time and the decision's ID —
//! with the configured fields masked.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{Map, Value};

use crate::action::RetryAction;
use crate::decision::Decision;
use crate::decision_id::DecisionId;
use crate::decision_json;
use crate::errormap::RetrySpec;
use crate::progress::Progress;
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::DecisionContext;

/// What a log line says of the policy version that decided: its name and version. The
/// registry's `PolicyVersion` is one; the log needs nothing else of it.
pub(crate) trait LoggedVersion: std::fmt::Debug + Send + Sync {
    /// The policy's configured name.
    fn name(&self) -> &str;
    /// The version (a component's content hash prefix, or `builtin:NAME`).
    fn version(&self) -> &str;
}

/// What decided a logged decision.
#[derive(Debug)]
pub(crate) enum DecidedBy {
    /// A configured policy's version.
    Version(Arc<dyn LoggedVersion>),
    /// A strategy the caller chose for the request, by its name.
    Strategy(String),
}

/// A decision to log, taken on the deciding path.
#[derive(Debug)]
pub(crate) struct Entry {
    /// When it was decided (the line's `timestamp`).
    pub time: SystemTime,
    /// Its ID.
    pub decision_id: DecisionId,
    /// What decided.
    pub decided_by: DecidedBy,
    /// The request as the policy saw it, before the decision changed it.
    pub request: Request,
    /// The decision's moment.
    pub at: Instant,
    /// Why the request failed.
    pub reason: RetryReason,
    /// The failure's error-map retry spec.
    pub spec: Option<RetrySpec>,
    /// The server's pushback.
    pub pushback: Option<Pushback>,
    /// How far the failed attempt got.
    pub progress: Progress,
    /// The attempt timeout that cut the failed attempt, if one did.
    pub attempt_timeout: Option<std::time::Duration>,
    /// The orchestrator's decision.
    pub decision: Decision,
    /// Retries made once decided (the answer's `retry_attempts`).
    pub attempts: u32,
    /// A shadow trial's answers on this decision, if it was compared.
    pub shadow: Option<ShadowAnswers>,
}

/// The active version's and the shadow candidate's own answers on one decision.
#[derive(Debug, Clone)]
pub(crate) struct ShadowAnswers {
    /// The candidate.
    pub candidate: Arc<dyn LoggedVersion>,
    /// The active version's answer, before the orchestrator.
    pub active: RetryAction,
    /// The candidate's answer, before the orchestrator.
    pub answer: RetryAction,
}

impl Entry {
    /// The entry's JSON line (ending with a newline), without the fields `mask` names.
    pub(crate) fn line(&self, mask: &[String]) -> Vec<u8> {
        let context = DecisionContext::new(&self.reason)
            .with_error_map_spec(self.spec)
            .with_pushback(self.pushback)
            .with_progress(self.progress)
            .with_attempt_timeout(self.attempt_timeout);
        let mut line = Map::new();
        let timestamp = humantime::format_rfc3339_millis(self.time).to_string();
        line.insert("timestamp".into(), timestamp.into());
        line.insert("decision_id".into(), self.decision_id.to_string().into());
        line.insert("request_id".into(), self.request.id().into());
        match &self.decided_by {
            DecidedBy::Version(version) => {
                line.insert("policy".into(), version.name().into());
                line.insert("version".into(), version.version().into());
            }
            DecidedBy::Strategy(name) => {
                line.insert("policy".into(), name.as_str().into());
            }
        }
        let input = decision_json::input(&self.request, &context, self.at);
        line.insert("input".into(), input);
        let answer = decision_json::decision(&self.decision, &self.reason, self.attempts);
        line.insert("answer".into(), answer);
        if let Some(shadow) = &self.shadow {
            let mut trial = Map::new();
            trial.insert("version".into(), shadow.candidate.version().into());
            let active = decision_json::action(&Ok(shadow.active));
            trial.insert("active_answer".into(), active);
            let answer = decision_json::action(&Ok(shadow.answer));
            trial.insert("answer".into(), answer);
            line.insert("shadow".into(), Value::Object(trial));
        }
        let mut line = Value::Object(line);
        for entry in mask {
            masked(&mut line, entry);
        }
        let mut bytes = serde_json::to_vec(&line).expect("a JSON value serialises");
        bytes.push(b'\n');
        bytes
    }
}

/// Removes what `entry` (`request.FIELD` or `client_context.KEY`) names from `line`: from the
/// input, and from the answer's error context where it repeats it.
fn masked(line: &mut Value, entry: &str) {
    match entry.split_once('.') {
        Some(("request", field)) => {
            remove(line, "/input/request", field);
            // The error context's names for the request fields it repeats.
            let repeated = match field {
                "client_context" => Some("clientContext"),
                "last_dispatched_to" => Some("lastDispatchedTo"),
                _ => None,
            };
            if let Some(key) = repeated {
                remove(line, "/answer/error_context", key);
            }
        }
        Some(("client_context", key)) => {
            remove(line, "/input/request/client_context", key);
            remove(line, "/answer/error_context/clientContext", key);
        }
        _ => {}
    }
}

/// Removes `key` from the object at `pointer` in `value`, if both are there.
fn remove(value: &mut Value, pointer: &str, key: &str) {
    if let Some(object) = value.pointer_mut(pointer).and_then(Value::as_object_mut) {
        object.remove(key);
    }
}
