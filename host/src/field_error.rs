//! One shape for a refused value. A user writes configuration in many places (a registry file,
//! a built-in's parameters, a gRPC service config, a budget, throttle, breaker or decision-log
//! table, a component's parameter schema, a key file); each is refused the same way — where
//! the value is and what was expected — so a caller matches, prints and converts one type.

/// A value that was refused: where it is (a field's dotted path, a parameter's name, a JSON
/// path, a file) and what is wrong with it and what was expected.
///
/// ```
/// let error = rebound::BudgetConfig::new(120.0, 10, 10_000)
///     .validate()
///     .unwrap_err();
/// assert_eq!(error.field, "percent");
/// assert_eq!(error.to_string(), "percent: 120 is out of range; expected 0 to 100");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
#[non_exhaustive]
pub struct FieldError {
    /// Where the value is; empty when the error is about the whole input.
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl FieldError {
    /// A refusal of the value at `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same refusal, its field inside `parent` (`parent.field`, or `parent` alone for an
    /// error about the whole input).
    #[must_use]
    pub fn within(self, parent: &str) -> Self {
        let field = match self.field.is_empty() {
            true => parent.to_owned(),
            false => format!("{parent}.{}", self.field),
        };
        FieldError { field, ..self }
    }
}
