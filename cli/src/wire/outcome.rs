//! One outcome report as JSON (`rebound eval` lines with an `outcome`, `POST /v1/outcome`
//! bodies, one object or an array of them): how a request ended, so that the retry budgets of
//! clients in any language follow their whole traffic (docs/decision-json.md "Outcomes").

use std::time::{Duration, Instant};

use rebound::{Outcome, PolicyControls, Request};
use serde::Deserialize;

use super::input::{DecideInput, InputError, RequestSpec};

/// How the request ended, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Ended {
    Success,
    Failure,
    Timeout,
}

/// One report as given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeInput {
    outcome: Ended,
    #[serde(default = "first_attempt")]
    attempts: u32,
    #[serde(default)]
    policy: Option<String>,
    #[serde(default)]
    request: RequestSpec,
    /// How long its last attempt took to be answered, in ms: recorded for its policy's hedges
    /// after a percentile of observed latency.
    #[serde(default)]
    latency_ms: Option<f64>,
}

fn first_attempt() -> u32 {
    1
}

/// Reports as given: one object, or an array of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Reports {
    Many(Vec<serde_json::Value>),
    One(serde_json::Value),
}

impl OutcomeInput {
    /// Sets the request's client-context entry `key` to `value`, replacing what it said, and
    /// names `value` the authenticated client the report comes from.
    pub fn set_client(&mut self, key: &str, value: &str) {
        self.request.set_context(key, value);
        self.request.set_caller(value);
    }

    /// The reports in `text` (an object or an array of objects), each with where it is in
    /// `text` (`""` for a single object, `"[2]"` in an array), for [`located`]; an error names
    /// the field, and for an array the index (`[2].outcome`).
    pub fn parse_all(text: &str) -> Result<Vec<(String, OutcomeInput)>, InputError> {
        let reports: Reports = serde_json::from_str(text).map_err(|e| {
            let message = if e.is_syntax() || e.is_eof() {
                format!("not JSON: {e}")
            } else {
                "expected an outcome report (an object) or an array of them".to_owned()
            };
            InputError::new("", message)
        })?;
        let one = |value: serde_json::Value, at: String| match serde_path_to_error::deserialize::<
            _,
            OutcomeInput,
        >(value)
        {
            Ok(report) => Ok((at, report)),
            Err(e) => {
                let path = e.path().to_string();
                let path = if path == "." { "" } else { path.as_str() };
                Err(InputError::new(
                    located(&at, path),
                    e.into_inner().to_string(),
                ))
            }
        };
        match reports {
            Reports::One(value) => Ok(vec![one(value, String::new())?]),
            Reports::Many(values) => values
                .into_iter()
                .enumerate()
                .map(|(i, value)| one(value, format!("[{i}]")))
                .collect(),
        }
    }

    /// Whether `text` is an outcome report rather than a decision request: an object with an
    /// `outcome` field.
    pub fn is_report(text: &str) -> bool {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
            .is_ok_and(|object| object.contains_key("outcome"))
    }

    /// The outcome.
    pub fn outcome(&self) -> Result<Outcome, InputError> {
        let attempts = self.attempts;
        if attempts == 0 {
            return Err(InputError::new(
                "attempts",
                "expected at least 1 (the first attempt counts)",
            ));
        }
        Ok(match self.outcome {
            Ended::Success => Outcome::Succeeded { attempts },
            Ended::Failure => Outcome::Failed { attempts },
            Ended::Timeout => Outcome::TimedOut { attempts },
        })
    }

    /// The request it reports on, routed as a decision request would be.
    pub fn request(&self, now: Instant) -> Result<Request, InputError> {
        let input = DecideInput {
            request: self.request.clone(),
            ..DecideInput::default()
        };
        let request = input.request(now, 0)?;
        Ok(match &self.policy {
            Some(name) => request.with_policy(name.clone()),
            None => request,
        })
    }

    /// The policy it names, if any.
    pub fn policy(&self) -> Option<&str> {
        self.policy.as_deref()
    }

    /// How long its last attempt took to be answered, if it says: a finite number of ms, not
    /// negative.
    pub fn latency(&self) -> Result<Option<Duration>, InputError> {
        match self.latency_ms {
            None => Ok(None),
            Some(ms) => Duration::try_from_secs_f64(ms / 1000.0)
                .map(Some)
                .map_err(|_| {
                    InputError::new(
                        "latency_ms",
                        format!("expected a number of ms, 0 or more, not {ms}"),
                    )
                }),
        }
    }

    /// Tells `controls`, those of the policy deciding for `request`, how the request ended at
    /// `now` as `outcome`, and its last attempt's latency if the report gives it.
    pub fn report_to(
        &self,
        controls: &PolicyControls,
        request: &Request,
        outcome: Outcome,
        now: Instant,
    ) {
        if let Ok(Some(latency)) = self.latency() {
            controls.attempt_answered(request, latency);
        }
        controls.report(request, outcome, now);
    }
}

/// `field` of the report at `at` ([`OutcomeInput::parse_all`]): `[2].outcome`, `outcome`, `[2]`.
pub fn located(at: &str, field: &str) -> String {
    match (at, field) {
        (at, "") => at.to_owned(),
        ("", field) => field.to_owned(),
        (at, field) => format!("{at}.{field}"),
    }
}
