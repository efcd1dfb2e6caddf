//! The `client_context` conditions of a `[[routes]]` entry: a route may choose requests by an
//! entry of their client context (the caller's in `serve`, headers or metadata an adapter maps
//! in-process), as an Envoy route chooses calls by a header. Each condition names an entry and
//! how its value must read, as Envoy's `HeaderMatcher` does: exactly, by prefix, suffix or
//! substring, or only present (or absent); `invert` turns the answer over, and an entry the
//! request lacks matches no value rule, inverted or not, as Envoy and gRPC match headers.

use std::collections::BTreeMap;

use serde::Deserialize;

/// How an entry's value must read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueRule {
    /// Exactly this.
    Exact(String),
    /// Starting with this.
    Prefix(String),
    /// Ending with this.
    Suffix(String),
    /// Holding this.
    Contains(String),
    /// Present (`true`) or absent (`false`), whatever its value.
    Present(bool),
}

/// One condition on a request's client context.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextMatch {
    /// The entry's key.
    pub key: String,
    /// How its value must read.
    pub rule: ValueRule,
    /// Whether the answer is turned over.
    pub invert: bool,
}

impl ContextMatch {
    /// A condition on `key`.
    pub fn new(key: impl Into<String>, rule: ValueRule, invert: bool) -> Self {
        ContextMatch {
            key: key.into(),
            rule,
            invert,
        }
    }

    /// Whether `context` meets the condition.
    pub fn matches(&self, context: &BTreeMap<String, String>) -> bool {
        let value = context.get(&self.key);
        let answer = match (&self.rule, value) {
            (ValueRule::Present(present), value) => value.is_some() == *present,
            (_, None) => return false,
            (ValueRule::Exact(wanted), Some(v)) => v == wanted,
            (ValueRule::Prefix(wanted), Some(v)) => v.starts_with(wanted.as_str()),
            (ValueRule::Suffix(wanted), Some(v)) => v.ends_with(wanted.as_str()),
            (ValueRule::Contains(wanted), Some(v)) => v.contains(wanted.as_str()),
        };
        answer != self.invert
    }
}

/// A condition as written: `key` and one of the rules.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawContextMatch {
    key: String,
    #[serde(default)]
    exact: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    suffix: Option<String>,
    #[serde(default)]
    contains: Option<String>,
    #[serde(default)]
    present: Option<bool>,
    #[serde(default)]
    invert: bool,
}

impl RawContextMatch {
    /// The condition; why not, with the field at fault.
    pub(super) fn condition(&self) -> Result<ContextMatch, (&'static str, String)> {
        if self.key.is_empty() {
            return Err(("key", "is empty; expected a client-context key".into()));
        }
        let rules = [
            self.exact.clone().map(ValueRule::Exact),
            self.prefix.clone().map(ValueRule::Prefix),
            self.suffix.clone().map(ValueRule::Suffix),
            self.contains.clone().map(ValueRule::Contains),
            self.present.map(ValueRule::Present),
        ];
        let mut given = rules.into_iter().flatten();
        match (given.next(), given.next()) {
            (Some(rule), None) => Ok(ContextMatch::new(self.key.clone(), rule, self.invert)),
            _ => Err((
                "key",
                format!(
                    "`{}`: expected exactly one of exact, prefix, suffix, contains, present",
                    self.key
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        (entries.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Envoy's `HeaderMatcher` (`envoy.config.route.v3`): each rule, `invert_match` turning it
    /// over, and a missing header matching no value rule even inverted (Envoy's
    /// `HeaderUtility::matchHeaders`, grpc-go's header matchers); `present_match: false`
    /// matches a missing one.
    #[test]
    fn conditions_match_as_envoy_header_matchers_do() {
        let gold = context(&[("x-tenant", "gold-eu")]);
        let none = context(&[]);
        let rule = |rule: ValueRule, invert: bool| ContextMatch::new("x-tenant", rule, invert);
        let exact = |s: &str| ValueRule::Exact(s.into());
        assert!(rule(exact("gold-eu"), false).matches(&gold));
        assert!(!rule(exact("gold"), false).matches(&gold));
        assert!(rule(exact("gold"), true).matches(&gold));
        assert!(
            !rule(exact("gold"), true).matches(&none),
            "missing, inverted"
        );
        assert!(rule(ValueRule::Prefix("gold".into()), false).matches(&gold));
        assert!(rule(ValueRule::Suffix("-eu".into()), false).matches(&gold));
        assert!(rule(ValueRule::Contains("d-e".into()), false).matches(&gold));
        assert!(!rule(ValueRule::Contains("x".into()), false).matches(&gold));
        assert!(rule(ValueRule::Present(true), false).matches(&gold));
        assert!(!rule(ValueRule::Present(true), false).matches(&none));
        assert!(rule(ValueRule::Present(false), false).matches(&none));
        assert!(rule(ValueRule::Present(true), true).matches(&none));
    }
}
