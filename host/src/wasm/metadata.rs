//! What a policy says about itself: its name, version, description and the parameters it
//! takes (name, type, default, range), carried in the component's custom section
//! `rebound:policy` as JSON. `rebound build` writes it from the project's `policy.toml`; loading
//! reads it; the registry checks a configuration's `params` against it before `configure`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::field_error::FieldError;

/// The custom section holding the metadata.
pub const METADATA_SECTION: &str = "rebound:policy";

/// A policy's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyMetadata {
    /// The policy's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its version, as its author numbers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The parameters `configure` takes, by name.
    #[serde(default)]
    pub params: BTreeMap<String, ParamSpec>,
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    /// Its type.
    #[serde(rename = "type")]
    pub kind: ParamKind,
    /// The value taken when the configuration gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// The smallest value allowed (numbers; written as an integer when it is whole).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole_as_integer"
    )]
    pub min: Option<f64>,
    /// The largest value allowed (numbers; written as an integer when it is whole).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole_as_integer"
    )]
    pub max: Option<f64>,
    /// What it sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Writes a whole bound as an integer (`0`, not `0.0`), so a schema reads as it was written.
fn whole_as_integer<S: serde::Serializer>(bound: &Option<f64>, out: S) -> Result<S::Ok, S::Error> {
    match bound {
        Some(value) if value.fract() == 0.0 && value.abs() < 9.0e15 => {
            out.serialize_some(&(*value as i64))
        }
        other => other.serialize(out),
    }
}

/// A parameter's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamKind {
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// Text.
    String,
    /// `true` or `false`.
    Boolean,
}

impl ParamKind {
    fn name(self) -> &'static str {
        match self {
            ParamKind::Integer => "an integer",
            ParamKind::Number => "a number",
            ParamKind::String => "a string",
            ParamKind::Boolean => "true or false",
        }
    }
}

impl PolicyMetadata {
    /// The metadata in the top-level custom section of `component`, if it has one. The error
    /// says why the section cannot be read.
    pub fn from_component(component: &[u8]) -> Result<Option<Self>, FieldError> {
        let mut depth = 0usize;
        for payload in wasmparser::Parser::new(0).parse_all(component) {
            match payload.map_err(|e| FieldError::new("", e.message()))? {
                wasmparser::Payload::Version { .. } => depth += 1,
                wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
                wasmparser::Payload::CustomSection(section)
                    if depth == 1 && section.name() == METADATA_SECTION =>
                {
                    return serde_json::from_slice(section.data())
                        .map(Some)
                        .map_err(|e| {
                            FieldError::new(format!("section `{METADATA_SECTION}`"), e.to_string())
                        });
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// `component` with this metadata appended as its `rebound:policy` custom section.
    pub fn append_to(&self, mut component: Vec<u8>) -> Vec<u8> {
        let data = serde_json::to_vec(self).expect("metadata serialises");
        let mut body = Vec::new();
        uleb128(&mut body, METADATA_SECTION.len());
        body.extend_from_slice(METADATA_SECTION.as_bytes());
        body.extend_from_slice(&data);
        component.push(0); // a custom section
        uleb128(&mut component, body.len());
        component.extend_from_slice(&body);
        component
    }

    /// Checks the schema itself: each parameter's bounds are numbers of its type (whole for an
    /// integer, none for text and booleans) with `min` at most `max`, and its default is a value
    /// of its type within them. The error's `param` is the field (`max_attempts.default`).
    pub fn check_schema(&self) -> Result<(), FieldError> {
        for (name, spec) in &self.params {
            let error =
                |field: &str, message: String| FieldError::new(format!("{name}.{field}"), message);
            for (field, bound) in [("min", spec.min), ("max", spec.max)] {
                let Some(bound) = bound else { continue };
                match spec.kind {
                    ParamKind::String | ParamKind::Boolean => {
                        return Err(error(
                            field,
                            format!(
                                "bounds are for numbers; the parameter is {}",
                                spec.kind.name()
                            ),
                        ));
                    }
                    ParamKind::Integer if bound.fract() != 0.0 || !bound.is_finite() => {
                        return Err(error(
                            field,
                            format!(
                                "expected a whole number for an integer parameter, got {bound}"
                            ),
                        ));
                    }
                    _ => {}
                }
            }
            if let (Some(min), Some(max)) = (spec.min, spec.max) {
                if min > max {
                    return Err(error("min", format!("{min} is above max {max}")));
                }
            }
            let Some(default) = &spec.default else {
                continue;
            };
            use serde_json::Value;
            let text = match (spec.kind, default) {
                (ParamKind::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                (ParamKind::Number, Value::Number(n)) => n.to_string(),
                (ParamKind::Boolean, Value::Bool(b)) => b.to_string(),
                (ParamKind::String, Value::String(text)) => text.clone(),
                _ => {
                    return Err(error(
                        "default",
                        format!("expected {}, got {default}", spec.kind.name()),
                    ))
                }
            };
            self.check_params(&BTreeMap::from([(name.clone(), text)]))
                .map_err(|e| error("default", e.message))?;
        }
        Ok(())
    }

    /// Checks `params` (as a configuration gives them, text) against the schema: every name
    /// declared, every value of its type and within its range. With no parameters declared,
    /// any parameters pass (the policy's `configure` judges them).
    pub fn check_params(&self, params: &BTreeMap<String, String>) -> Result<(), FieldError> {
        if self.params.is_empty() {
            return Ok(());
        }
        for (name, value) in params {
            let error = |message: String| FieldError::new(name.clone(), message);
            let Some(spec) = self.params.get(name) else {
                let known: Vec<&str> = self.params.keys().map(String::as_str).collect();
                return Err(error(format!(
                    "the policy takes no parameter `{name}`; it takes {}",
                    known.join(", ")
                )));
            };
            let number = match spec.kind {
                ParamKind::Integer => Some(value.parse::<i64>().ok().map(|n| n as f64)),
                ParamKind::Number => Some(value.parse::<f64>().ok().filter(|n| n.is_finite())),
                ParamKind::Boolean => {
                    if value != "true" && value != "false" {
                        return Err(error(format!("expected true or false, got `{value}`")));
                    }
                    None
                }
                ParamKind::String => None,
            };
            if let Some(number) = number {
                let Some(number) = number else {
                    return Err(error(format!(
                        "expected {}, got `{value}`",
                        spec.kind.name()
                    )));
                };
                if spec.min.is_some_and(|min| number < min)
                    || spec.max.is_some_and(|max| number > max)
                {
                    return Err(error(format!(
                        "{value} is out of range: expected {} to {}",
                        spec.min.map_or("-∞".into(), |m| m.to_string()),
                        spec.max.map_or("∞".into(), |m| m.to_string())
                    )));
                }
            }
        }
        Ok(())
    }
}

fn uleb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> PolicyMetadata {
        serde_json::from_str(
            r#"{"name": "capped", "version": "1.2.0", "params": {
                "max_attempts": {"type": "integer", "default": 3, "min": 0, "max": 10},
                "factor": {"type": "number"}, "strict": {"type": "boolean"},
                "key": {"type": "string"}}}"#,
        )
        .unwrap()
    }

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// The schema's own defaults and bounds are checked: a default of another type, one out
    /// of its range, fractional bounds on an integer, bounds on text, `min` above `max`.
    #[test]
    fn a_schema_whose_defaults_do_not_fit_is_refused() {
        assert_eq!(schema().check_schema(), Ok(()));
        let refused = |params: &str| {
            let meta: PolicyMetadata =
                serde_json::from_str(&format!(r#"{{"params": {{"n": {params}}}}}"#)).unwrap();
            let error = meta.check_schema().unwrap_err();
            format!("{}: {}", error.field, error.message)
        };
        assert_eq!(
            refused(r#"{"type": "integer", "default": "twenty"}"#),
            r#"n.default: expected an integer, got "twenty""#
        );
        assert_eq!(
            refused(r#"{"type": "integer", "default": 2.5}"#),
            "n.default: expected an integer, got 2.5"
        );
        assert_eq!(
            refused(r#"{"type": "integer", "default": 20, "max": 10}"#),
            "n.default: 20 is out of range: expected -∞ to 10"
        );
        assert_eq!(
            refused(r#"{"type": "integer", "min": 0.5}"#),
            "n.min: expected a whole number for an integer parameter, got 0.5"
        );
        assert_eq!(
            refused(r#"{"type": "string", "max": 3}"#),
            "n.max: bounds are for numbers; the parameter is a string"
        );
        assert_eq!(
            refused(r#"{"type": "number", "min": 5, "max": 1}"#),
            "n.min: 5 is above max 1"
        );
    }

    /// A parameter's name, type and range are checked.
    #[test]
    fn parameters_are_checked_against_the_schema() {
        let schema = schema();
        assert!(schema
            .check_params(&params(&[
                ("max_attempts", "5"),
                ("factor", "1.5"),
                ("strict", "true"),
                ("key", "x")
            ]))
            .is_ok());
        let error = |pairs| schema.check_params(&params(pairs)).unwrap_err();
        let e = error(&[("max_attemps", "5")]);
        assert_eq!(e.field, "max_attemps");
        assert!(
            e.message.contains("no parameter `max_attemps`") && e.message.contains("max_attempts"),
            "{e}"
        );
        assert!(error(&[("max_attempts", "many")])
            .message
            .contains("expected an integer, got `many`"));
        assert!(error(&[("max_attempts", "11")])
            .message
            .contains("out of range: expected 0 to 10"));
        assert!(error(&[("factor", "fast")])
            .message
            .contains("expected a number"));
        assert!(error(&[("strict", "yes")])
            .message
            .contains("expected true or false"));
        // No schema declared: the policy's configure judges.
        assert!(PolicyMetadata::default()
            .check_params(&params(&[("anything", "x")]))
            .is_ok());
    }

    /// The section written is the section read, at the component's top level only.
    #[test]
    fn the_section_round_trips() {
        let component = b"\0asm\x0d\x00\x01\x00".to_vec();
        let written = schema().append_to(component.clone());
        assert_eq!(
            PolicyMetadata::from_component(&written).unwrap(),
            Some(schema())
        );
        assert_eq!(PolicyMetadata::from_component(&component).unwrap(), None);
    }
}
