//! The parts of Envoy's route configuration (`envoy.config.route.v3`) that decide retries, as
//! Rebound reads them: a `RouteConfiguration`'s virtual hosts, their routes' matches and
//! actions, and the `RetryPolicy` and `HedgePolicy` of an action or a virtual host. Read from
//! proto3 JSON here (as a control plane would send it, field names in either spelling, durations
//! as `"0.025s"`); the rest of a resource is left unread, as Envoy and gRPC leave what they do
//! not use.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::field_error::FieldError;
use crate::grpc::proto_json;

/// A route configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteConfiguration {
    /// Its name.
    pub name: String,
    /// Its virtual hosts.
    pub virtual_hosts: Vec<VirtualHost>,
}

/// A virtual host: the domains it serves and its routes, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VirtualHost {
    /// Its name.
    pub name: String,
    /// The `:authority` values it serves (`*` for any).
    pub domains: Vec<String>,
    /// Its routes; the first that matches a call is its route.
    pub routes: Vec<Route>,
    /// The retry policy of its routes that have none.
    pub retry_policy: Option<RetryPolicy>,
    /// The hedge policy of its routes that have none.
    pub hedge_policy: Option<HedgePolicy>,
}

/// A route: what it matches, and its action.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Route {
    /// Its name (may be empty).
    pub name: String,
    /// What it matches.
    pub matcher: RouteMatch,
    /// Its action when it forwards to a cluster; none for a redirect or a direct response.
    pub action: Option<RouteAction>,
}

/// What a route matches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteMatch {
    /// The path rule.
    pub path: PathMatch,
    /// Its header matchers, every one to be met.
    pub headers: Vec<HeaderMatcher>,
    /// Whether the path compares case-sensitively (the default).
    pub case_sensitive: bool,
}

/// A header matcher of a route (`envoy.config.route.v3.HeaderMatcher`).
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderMatcher {
    /// The header's name.
    pub name: String,
    /// How its value must read.
    pub rule: HeaderRule,
    /// `invert_match`.
    pub invert: bool,
}

/// How a header's value must read; `Other` names a rule Rebound does not read.
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderRule {
    /// `exact_match`, `string_match.exact`.
    Exact(String),
    /// `prefix_match`, `string_match.prefix`.
    Prefix(String),
    /// `suffix_match`, `string_match.suffix`.
    Suffix(String),
    /// `contains_match`, `string_match.contains`.
    Contains(String),
    /// `present_match`, and a matcher with no rule (Envoy matches it by presence).
    Present(bool),
    /// Another rule (a regular expression, a range, a case-insensitive string, a missing
    /// header read as empty), by its field.
    Other(String),
}

/// A route's path rule.
#[derive(Debug, Clone, PartialEq)]
pub enum PathMatch {
    /// Paths starting with this.
    Prefix(String),
    /// This path exactly.
    Path(String),
    /// A rule Rebound's routes cannot express (`safe_regex`, `path_separated_prefix`, a path
    /// template): its field name.
    Other(String),
}

impl Default for PathMatch {
    fn default() -> Self {
        PathMatch::Prefix(String::new())
    }
}

/// A route's action, the parts retries depend on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteAction {
    /// The cluster it forwards to, when it names one.
    pub cluster: Option<String>,
    /// Its retry policy.
    pub retry_policy: Option<RetryPolicy>,
    /// Its hedge policy.
    pub hedge_policy: Option<HedgePolicy>,
}

/// An Envoy `RetryPolicy`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryPolicy {
    /// The conditions, comma-separated (`"unavailable,cancelled"`).
    pub retry_on: String,
    /// `num_retries`, when set.
    pub num_retries: Option<u32>,
    /// `per_try_timeout`, when set.
    pub per_try_timeout: Option<Duration>,
    /// `retry_back_off`, when set.
    pub retry_back_off: Option<RetryBackOff>,
    /// The names of its `retry_host_predicate` entries.
    pub retry_host_predicates: Vec<String>,
}

/// An Envoy `RetryPolicy.RetryBackOff`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryBackOff {
    /// `base_interval`, when set.
    pub base_interval: Option<Duration>,
    /// `max_interval`, when set.
    pub max_interval: Option<Duration>,
}

/// An Envoy `HedgePolicy`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HedgePolicy {
    /// `initial_requests` (1 when unset).
    pub initial_requests: Option<u32>,
    /// `hedge_on_per_try_timeout`.
    pub hedge_on_per_try_timeout: bool,
}

/// The field path of `name` inside `at` (`name` alone at the top).
fn path(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}.{name}")
    }
}

/// A JSON object's field, by its proto name or its lowerCamelCase JSON name.
fn get<'v>(object: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    object.get(name).or_else(|| {
        let mut camel = String::new();
        let mut upper = false;
        for c in name.chars() {
            match (c, upper) {
                ('_', _) => upper = true,
                (c, true) => {
                    camel.extend(c.to_uppercase());
                    upper = false;
                }
                (c, false) => camel.push(c),
            }
        }
        object.get(&camel)
    })
}

/// `value` as an object, or the refusal at `field`.
fn object<'v>(value: &'v Value, field: &str) -> Result<&'v Map<String, Value>, FieldError> {
    value
        .as_object()
        .ok_or_else(|| FieldError::new(field, format!("expected an object, found `{value}`")))
}

/// The string at `name` of `object` (empty when absent).
fn string(object: &Map<String, Value>, name: &str, at: &str) -> Result<String, FieldError> {
    match get(object, name) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(FieldError::new(
            path(at, name),
            format!("expected a string, found `{other}`"),
        )),
    }
}

/// The array at `name` of `object`, each entry read by `read` with its field path.
fn array<T>(
    object: &Map<String, Value>,
    name: &str,
    at: &str,
    read: impl Fn(&Value, &str) -> Result<T, FieldError>,
) -> Result<Vec<T>, FieldError> {
    match get(object, name) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => (items.iter().enumerate())
            .map(|(i, item)| read(item, &format!("{}[{i}]", path(at, name))))
            .collect(),
        Some(other) => Err(FieldError::new(
            path(at, name),
            format!("expected an array, found `{other}`"),
        )),
    }
}

/// The duration at `name` of `object`, zero allowed.
fn duration(
    object: &Map<String, Value>,
    name: &str,
    at: &str,
) -> Result<Option<Duration>, FieldError> {
    get(object, name)
        .map(|v| proto_json::duration(v, true).map_err(|e| FieldError::new(path(at, name), e.0)))
        .transpose()
}

impl RouteConfiguration {
    /// Reads a `RouteConfiguration` from its proto3 JSON.
    pub fn from_json(value: &Value) -> Result<Self, FieldError> {
        let o = object(value, "")?;
        Ok(RouteConfiguration {
            name: string(o, "name", "")?,
            virtual_hosts: array(o, "virtual_hosts", "", VirtualHost::from_json)?,
        })
    }
}

impl VirtualHost {
    fn from_json(value: &Value, at: &str) -> Result<Self, FieldError> {
        let o = object(value, at)?;
        Ok(VirtualHost {
            name: string(o, "name", at)?,
            domains: array(o, "domains", at, |v, field| {
                (v.as_str().map(str::to_owned)).ok_or_else(|| {
                    FieldError::new(field, format!("expected a string, found `{v}`"))
                })
            })?,
            routes: array(o, "routes", at, Route::from_json)?,
            retry_policy: (get(o, "retry_policy"))
                .map(|v| RetryPolicy::from_json(v, &path(at, "retry_policy")))
                .transpose()?,
            hedge_policy: (get(o, "hedge_policy"))
                .map(|v| HedgePolicy::from_json(v, &path(at, "hedge_policy")))
                .transpose()?,
        })
    }
}

impl Route {
    fn from_json(value: &Value, at: &str) -> Result<Self, FieldError> {
        let o = object(value, at)?;
        let matcher = match get(o, "match") {
            Some(m) => RouteMatch::from_json(m, &path(at, "match"))?,
            None => RouteMatch {
                case_sensitive: true,
                ..RouteMatch::default()
            },
        };
        let action = (get(o, "route"))
            .map(|v| RouteAction::from_json(v, &path(at, "route")))
            .transpose()?;
        Ok(Route {
            name: string(o, "name", at)?,
            matcher,
            action,
        })
    }
}

impl RouteMatch {
    fn from_json(value: &Value, at: &str) -> Result<Self, FieldError> {
        let o = object(value, at)?;
        let path = if get(o, "prefix").is_some() {
            PathMatch::Prefix(string(o, "prefix", at)?)
        } else if get(o, "path").is_some() {
            PathMatch::Path(string(o, "path", at)?)
        } else if let Some(other) = [
            "safe_regex",
            "path_separated_prefix",
            "path_match_policy",
            "connect_matcher",
        ]
        .into_iter()
        .find(|name| get(o, name).is_some())
        {
            PathMatch::Other(other.to_owned())
        } else {
            PathMatch::Prefix(String::new())
        };
        let case_sensitive = match get(o, "case_sensitive") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => other
                .as_object()
                .and_then(|w| w.get("value"))
                .and_then(Value::as_bool)
                .unwrap_or(true),
        };
        let headers = array(o, "headers", at, HeaderMatcher::from_json)?;
        Ok(RouteMatch {
            path,
            headers,
            case_sensitive,
        })
    }
}

impl HeaderMatcher {
    fn from_json(value: &Value, at: &str) -> Result<Self, FieldError> {
        let o = object(value, at)?;
        let flag = |name: &str| get(o, name).and_then(Value::as_bool).unwrap_or(false);
        let text = |name: &str| string(o, name, at);
        let rule = if flag("treat_missing_header_as_empty") {
            HeaderRule::Other("treat_missing_header_as_empty".into())
        } else if get(o, "exact_match").is_some() {
            HeaderRule::Exact(text("exact_match")?)
        } else if get(o, "prefix_match").is_some() {
            HeaderRule::Prefix(text("prefix_match")?)
        } else if get(o, "suffix_match").is_some() {
            HeaderRule::Suffix(text("suffix_match")?)
        } else if get(o, "contains_match").is_some() {
            HeaderRule::Contains(text("contains_match")?)
        } else if get(o, "present_match").is_some() {
            HeaderRule::Present(flag("present_match"))
        } else if let Some(m) = get(o, "string_match") {
            let at = path(at, "string_match");
            let m = object(m, &at)?;
            let text = |name: &str| string(m, name, &at);
            let ignore_case = get(m, "ignore_case").and_then(Value::as_bool) == Some(true);
            match ["exact", "prefix", "suffix", "contains"].map(|n| get(m, n).is_some()) {
                _ if ignore_case => HeaderRule::Other("string_match.ignore_case".into()),
                [true, ..] => HeaderRule::Exact(text("exact")?),
                [_, true, ..] => HeaderRule::Prefix(text("prefix")?),
                [_, _, true, _] => HeaderRule::Suffix(text("suffix")?),
                [.., true] => HeaderRule::Contains(text("contains")?),
                _ => HeaderRule::Other("string_match".into()),
            }
        } else if let Some(other) = ["safe_regex_match", "range_match"]
            .into_iter()
            .find(|name| get(o, name).is_some())
        {
            HeaderRule::Other(other.to_owned())
        } else {
            HeaderRule::Present(true)
        };
        Ok(HeaderMatcher {
            name: text("name")?,
            rule,
            invert: flag("invert_match"),
        })
    }
}

impl RouteAction {
    fn from_json(value: &Value, at: &str) -> Result<Self, FieldError> {
        let o = object(value, at)?;
        let cluster = string(o, "cluster", at)?;
        Ok(RouteAction {
            cluster: (!cluster.is_empty()).then_some(cluster),
            retry_policy: (get(o, "retry_policy"))
                .map(|v| RetryPolicy::from_json(v, &path(at, "retry_policy")))
                .transpose()?,
            hedge_policy: (get(o, "hedge_policy"))
                .map(|v| HedgePolicy::from_json(v, &path(at, "hedge_policy")))
                .transpose()?,
        })
    }
}

impl RetryPolicy {
    /// Reads a `RetryPolicy` from its proto3 JSON, at field path `at` (for errors).
    pub fn from_json(value: &Value, at: &str) -> Result<Self, FieldError> {
        let o = object(value, at)?;
        let num_retries = (get(o, "num_retries"))
            .map(|v| {
                proto_json::uint32(v).map_err(|e| FieldError::new(path(at, "num_retries"), e.0))
            })
            .transpose()?;
        let retry_back_off = match get(o, "retry_back_off") {
            None => None,
            Some(v) => {
                let here = path(at, "retry_back_off");
                let b = object(v, &here)?;
                Some(RetryBackOff {
                    base_interval: duration(b, "base_interval", &here)?,
                    max_interval: duration(b, "max_interval", &here)?,
                })
            }
        };
        Ok(RetryPolicy {
            retry_on: string(o, "retry_on", at)?,
            num_retries,
            per_try_timeout: duration(o, "per_try_timeout", at)?,
            retry_back_off,
            retry_host_predicates: array(o, "retry_host_predicate", at, |v, field| {
                string(object(v, field)?, "name", field)
            })?,
        })
    }
}

impl HedgePolicy {
    fn from_json(value: &Value, at: &str) -> Result<Self, FieldError> {
        let o = object(value, at)?;
        let initial_requests = (get(o, "initial_requests"))
            .map(|v| {
                proto_json::uint32(v)
                    .map_err(|e| FieldError::new(path(at, "initial_requests"), e.0))
            })
            .transpose()?;
        let hedge_on_per_try_timeout = match get(o, "hedge_on_per_try_timeout") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(FieldError::new(
                    path(at, "hedge_on_per_try_timeout"),
                    format!("expected true or false, found `{other}`"),
                ))
            }
        };
        Ok(HedgePolicy {
            initial_requests,
            hedge_on_per_try_timeout,
        })
    }
}
