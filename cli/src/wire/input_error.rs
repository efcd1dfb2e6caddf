//! Why a decision request could not be read, said as the JSON a client wrote: the field's dotted
//! path and what was expected, never this program's Rust type names or serde's positions where
//! the field already says where.

/// A decision request that could not be read: the field (dotted path; empty for the whole
/// line) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
pub struct InputError {
    /// The field, e.g. `request.retry_attempts`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl InputError {
    /// An error about `field`; a Rust type serde names in `message` is said as the JSON it
    /// expects ([`without_type_names`]).
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            field: field.into(),
            message: without_type_names(&message.into()),
        }
    }
}

/// serde_json's message without its position when the field path says where; syntax errors
/// keep their column.
pub(super) fn describe(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match error.classify() {
        Category::Syntax | Category::Eof => {
            format!("not a JSON object: {error}")
        }
        _ => {
            let message = error.to_string();
            match message.rfind(" at line ") {
                Some(at) => message[..at].to_owned(),
                None => message,
            }
        }
    }
}

/// `message` with the Rust types serde names ("expected struct DecideInput") said as the JSON
/// they expect: a client knows the API's JSON, not this program's types.
pub fn without_type_names(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("expected ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "expected ".len()..];
        let (kind, tail) = [
            ("tuple struct ", "a JSON array"),
            ("unit struct ", "null"),
            ("struct ", "a JSON object"),
            ("enum ", "one of the documented values"),
        ]
        .into_iter()
        .find_map(|(prefix, json)| after.strip_prefix(prefix).map(|tail| (json, tail)))
        .unwrap_or(("", after));
        if kind.is_empty() {
            out.push_str("expected ");
            rest = after;
            continue;
        }
        // The type's name runs to the first character that cannot be in one.
        let name_len = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push_str("expected ");
        out.push_str(kind);
        rest = &tail[name_len..];
    }
    out.push_str(rest);
    out
}
