//! Matching an answer against a case's `expect` object: exact values (numbers compared as
//! numbers), `{"min", "max"}` ranges for numbers, objects matched field by field with the
//! fields `expect` leaves out ignored. Top-level fields must be ones the answer can have.

use serde_json::Value;

/// The fields an answer through the orchestrator can have (docs/decision-json.md "Out").
pub const DECISION_FIELDS: &[&str] = &[
    "decision",
    "delay_ms",
    "node",
    "consistency",
    "capped",
    "source",
    "reason",
    "retry_attempts",
    "attempt_timeout_ms",
    "error",
    "cancel_reason",
    "policy_failure",
    "error_context",
    "code",
    "name",
    "kind",
    "policy",
    "version",
];

/// The fields of a policy's own answer (`--raw`).
pub const RAW_FIELDS: &[&str] = &[
    "decision",
    "delay_ms",
    "node",
    "consistency",
    "attempt_timeout_ms",
    "error",
    "policy_failure",
    "detail",
    "code",
    "name",
    "kind",
];

/// The fields of a hedging question's answer (docs/decision-json.md "Hedging").
pub const HEDGE_FIELDS: &[&str] = &["hedge"];

/// Checks that every top-level field of `expect` is one of `known`; the error names the first
/// that is not.
pub fn check_fields(expect: &serde_json::Map<String, Value>, known: &[&str]) -> Result<(), String> {
    match expect.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(unknown) => Err(format!(
            "expect.{unknown}: an answer has no field `{unknown}`; it has {}",
            known.join(", ")
        )),
    }
}

/// Where `actual` differs from `expected`, one line per difference (empty: it matches).
pub fn differences(expected: &Value, actual: &Value) -> Vec<String> {
    let mut found = Vec::new();
    compare(expected, actual, "", &mut found);
    found
}

/// `{"min": a, "max": b}` (either may be left out): the bounds, when `value` is a range.
fn range(value: &Value) -> Option<(Option<f64>, Option<f64>)> {
    let object = value.as_object()?;
    if object.is_empty() || object.keys().any(|k| k != "min" && k != "max") {
        return None;
    }
    let bound = |key: &str| match object.get(key) {
        None => Some(None),
        Some(v) => v.as_f64().map(Some),
    };
    Some((bound("min")?, bound("max")?))
}

fn compare(expected: &Value, actual: &Value, path: &str, found: &mut Vec<String>) {
    let at = |path: &str| {
        if path.is_empty() {
            "answer".to_owned()
        } else {
            path.to_owned()
        }
    };
    if let Some((min, max)) = range(expected) {
        let Some(number) = actual.as_f64() else {
            found.push(format!(
                "{}: expected a number in {expected}, got {actual}",
                at(path)
            ));
            return;
        };
        if min.is_some_and(|min| number < min) || max.is_some_and(|max| number > max) {
            found.push(format!("{}: expected {expected}, got {actual}", at(path)));
        }
        return;
    }
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => {
            for (key, want) in expected {
                let field = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match actual.get(key) {
                    Some(got) => compare(want, got, &field, found),
                    None => found.push(format!("{field}: expected {want}, absent")),
                }
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (expected, actual) if expected == actual => {}
        (expected, actual) => {
            found.push(format!("{}: expected {expected}, got {actual}", at(path)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Exact values, numbers as numbers, absent fields ignored.
    #[test]
    fn exact_values_match_and_absent_fields_are_ignored() {
        let answer = json!({"decision": "retry", "delay_ms": 1.0, "node": "same"});
        assert!(differences(&json!({"decision": "retry", "delay_ms": 1}), &answer).is_empty());
        assert_eq!(
            differences(&json!({"decision": "cancel"}), &answer),
            ["decision: expected \"cancel\", got \"retry\""]
        );
        assert_eq!(
            differences(&json!({"error": "RequestCanceled"}), &answer),
            ["error: expected \"RequestCanceled\", absent"]
        );
    }

    /// `{"min", "max"}` bounds a number, either bound alone too.
    #[test]
    fn ranges_bound_numbers() {
        let answer = json!({"delay_ms": 37.5});
        assert!(differences(&json!({"delay_ms": {"min": 1, "max": 50}}), &answer).is_empty());
        assert!(differences(&json!({"delay_ms": {"min": 37.5}}), &answer).is_empty());
        assert_eq!(
            differences(&json!({"delay_ms": {"max": 10}}), &answer),
            ["delay_ms: expected {\"max\":10}, got 37.5"]
        );
        assert_eq!(
            differences(&json!({"delay_ms": {"min": 1}}), &json!({"delay_ms": null})).len(),
            1
        );
    }

    /// Nested objects (the error context) match field by field.
    #[test]
    fn nested_objects_match_field_by_field() {
        let answer = json!({"error_context": {"retried": 3, "requestType": "get"}});
        assert!(differences(&json!({"error_context": {"retried": 3}}), &answer).is_empty());
        assert_eq!(
            differences(&json!({"error_context": {"retried": 2}}), &answer),
            ["error_context.retried: expected 2, got 3"]
        );
    }

    /// An `expect` field no answer has is named, with the ones it has.
    #[test]
    fn unknown_expect_fields_are_named() {
        let expect = json!({"decision": "retry", "delay": 5});
        let error = check_fields(expect.as_object().unwrap(), DECISION_FIELDS).unwrap_err();
        assert!(
            error.starts_with("expect.delay: an answer has no field `delay`"),
            "{error}"
        );
        assert!(error.contains("delay_ms"), "{error}");
    }
}
