//! One case of a `tests.jsonl` file: a decision-JSON input (docs/decision-json.md) without
//! `policy`, plus `expect` (required), `params` for the policy's `configure` and a `name`.
//! Lines that are blank or start with `#` or `//` are skipped. A relative `error_map` path is
//! read from the cases file's directory, so a project's tests run from anywhere.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::wire::hedge::HedgeInput;
use crate::wire::input::{DecideInput, InputError};

/// A case as read.
#[derive(Debug, Clone)]
pub struct Case {
    /// The line of the file it is on (from 1).
    pub line: usize,
    /// Its name, or `line N`.
    pub name: String,
    /// The decision input as written (without `expect`, `params`, `name`).
    pub input: Value,
    /// What the answer must hold.
    pub expect: Map<String, Value>,
    /// The policy's parameters for this case.
    pub params: BTreeMap<String, String>,
    /// For a hedging question: the latencies the request's authority answered in before it.
    pub observed: Vec<Observed>,
}

/// Latencies observed before a hedging question: `count` answers of `latency_ms` each.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observed {
    /// How long each answer took.
    pub latency_ms: u64,
    /// How many answers (at most [`MAX_OBSERVED`]).
    pub count: u32,
}

/// The most answers one `observed` entry may give: more change nothing, since a sketch's counts
/// halve every 1024 answers (docs/hedging.md "Delays from observed latency").
pub const MAX_OBSERVED: u32 = 10_000;

impl Case {
    /// The case on `line` of a file in directory `base`, `None` for a blank or comment line.
    /// The error names the field.
    pub fn parse(text: &str, line: usize, base: &Path) -> Option<Result<Case, InputError>> {
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("//") {
            return None;
        }
        Some(Self::read(trimmed, line, base))
    }

    fn read(text: &str, line: usize, base: &Path) -> Result<Case, InputError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| InputError::new("", format!("not a JSON object: {e}")))?;
        let Value::Object(mut object) = value else {
            return Err(InputError::new("", "a case is a JSON object"));
        };
        if object.contains_key("policy") {
            return Err(InputError::new(
                "policy",
                "a case tests the policy given on the command line; give its parameters in `params`",
            ));
        }
        let expect = match object.remove("expect") {
            Some(Value::Object(expect)) => expect,
            Some(other) => {
                return Err(InputError::new(
                    "expect",
                    format!("an object of answer fields, e.g. {{\"decision\": \"retry\"}}, not {other}"),
                ))
            }
            None => {
                return Err(InputError::new(
                    "expect",
                    "missing: what the answer must hold, e.g. {\"decision\": \"retry\", \"delay_ms\": {\"max\": 50}}",
                ))
            }
        };
        let name = match object.remove("name") {
            None => format!("line {line}"),
            Some(Value::String(name)) => name,
            Some(other) => return Err(InputError::new("name", format!("a string, not {other}"))),
        };
        let params = read_params(object.remove("params"))?;
        if let Some(Value::String(map)) = object.get_mut("error_map") {
            if Path::new(map.as_str()).is_relative() {
                *map = base.join(map.as_str()).display().to_string();
            }
        }
        let observed = object.remove("observed");
        let states_observed = observed.is_some();
        let observed = read_observed(observed)?;
        let input = Value::Object(object);
        // Read now, so a malformed input is reported as such, not as a wrong answer.
        let now = std::time::Instant::now();
        if HedgeInput::is_question(&input.to_string()) {
            HedgeInput::parse(&input.to_string())?.request(now)?;
        } else if states_observed {
            return Err(InputError::new(
                "observed",
                "only a hedging question (a case with `hedge`) reads observed latencies",
            ));
        } else {
            let parsed = DecideInput::parse(&input.to_string())?;
            let request = parsed.request(now, line as u64)?;
            parsed.failure(request.request_type())?;
        }
        Ok(Case {
            line,
            name,
            input,
            expect,
            params,
            observed,
        })
    }

    /// Whether the case is a hedging question (it has `hedge`).
    pub fn is_hedge(&self) -> bool {
        self.input.get("hedge").is_some()
    }

    /// The decision input to ask with the component at `policy`.
    pub fn input_for(&self, policy: &str) -> Value {
        let mut input = self.input.clone();
        input["policy"] = serde_json::json!({"name": policy, "params": self.params});
        input
    }
}

/// The case's `params` as given; an error names the parameter.
fn read_params(value: Option<Value>) -> Result<BTreeMap<String, String>, InputError> {
    match value {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(params)) => params
            .into_iter()
            .map(|(key, value)| match value {
                Value::String(s) => Ok((key, s)),
                Value::Number(_) | Value::Bool(_) => Ok((key, value.to_string())),
                other => Err(InputError::new(
                    format!("params.{key}"),
                    format!("a string, a number or a boolean, not {other}"),
                )),
            })
            .collect(),
        Some(other) => Err(InputError::new(
            "params",
            format!("an object of parameters, not {other}"),
        )),
    }
}

/// The `observed` latencies as given; an error names the entry and its field.
fn read_observed(value: Option<Value>) -> Result<Vec<Observed>, InputError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let observed: Vec<Observed> = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "observed".to_owned()
        } else {
            format!("observed{path}")
        };
        InputError::new(
            field,
            format!(
                "{} (expected a list of {{\"latency_ms\": N, \"count\": N}})",
                e.into_inner()
            ),
        )
    })?;
    if let Some(i) = observed.iter().position(|o| o.count > MAX_OBSERVED) {
        return Err(InputError::new(
            format!("observed[{i}].count"),
            format!("at most {MAX_OBSERVED}: a sketch's counts halve every 1024 answers, so more change nothing"),
        ));
    }
    Ok(observed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case is a decision input plus `expect`; `params` and `name` are
    /// taken out; comments and blank lines are skipped.
    #[test]
    fn a_case_is_a_decision_input_with_expect() {
        let case = Case::parse(
            r#"{"name": "robots", "params": {"max": 3}, "request": {"type": "get"}, "reason": "KV_LOCKED", "expect": {"decision": "retry"}}"#,
            4,
            Path::new("."),
        )
        .unwrap()
        .unwrap();
        assert_eq!(case.name, "robots");
        assert_eq!(case.params["max"], "3");
        assert_eq!(case.expect["decision"], "retry");
        assert!(case.input.get("expect").is_none() && case.input.get("params").is_none());
        assert_eq!(case.input_for("p.wasm")["policy"]["name"], "p.wasm");
        assert!(Case::parse("   ", 1, Path::new(".")).is_none());
        assert!(Case::parse("# a comment", 1, Path::new(".")).is_none());
    }

    /// A relative error map is the cases file's neighbour.
    #[test]
    fn a_relative_error_map_is_read_beside_the_cases_file() {
        let case = Case::parse(
            r#"{"response": {"status": "0x7ff0"}, "error_map": "map.json", "expect": {}}"#,
            1,
            Path::new("/project/tests"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(case.input["error_map"], "/project/tests/map.json");
    }

    /// Bad input names the field: a missing `expect`, a `policy`, a malformed input.
    #[test]
    fn malformed_cases_name_the_field() {
        let error = |text: &str| Case::parse(text, 1, Path::new(".")).unwrap().unwrap_err();
        assert_eq!(error(r#"{"reason": "KV_LOCKED"}"#).field, "expect");
        assert_eq!(
            error(r#"{"policy": "x", "reason": "KV_LOCKED", "expect": {}}"#).field,
            "policy"
        );
        assert_eq!(
            error(r#"{"reason": "KV_LOCKD", "expect": {}}"#).field,
            "reason"
        );
        assert_eq!(
            error(r#"{"request": {"retry_attempts": "x"}, "reason": "KV_LOCKED", "expect": {}}"#)
                .field,
            "request.retry_attempts"
        );
        assert_eq!(error("[1]").field, "");
    }
}
