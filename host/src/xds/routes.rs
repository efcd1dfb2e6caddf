//! A route configuration's routes as Rebound's: each route that forwards to a cluster becomes
//! a policy (the `grpc` built-in with the route's converted retry policy, its attempt timeout
//! and hedging) and `[[routes]]` entries matching the calls the route matches, in the order
//! Envoy picks them: virtual hosts with exact domains before the one for any domain (`*`),
//! routes in their order, the first that matches deciding. A header matcher becomes a condition
//! on the client-context entry named as the header in lower case, where adapters put the
//! headers and metadata they map. What Rebound's routes cannot express (wildcard domains other
//! than `*`, regular expressions and ranges, pseudo-headers and binary headers, prefixes that
//! are not a whole service, case-insensitive paths) is left out and reported, not guessed.

use std::collections::BTreeMap;

use serde_json::json;
use toml::{Table, Value};

use super::envoy::{HeaderMatcher, HeaderRule, PathMatch, Route, RouteConfiguration, VirtualHost};
use super::retry::convert;
use crate::config::ConfigOverlay;
use crate::field_error::FieldError;

/// The longest attempt timeout a policy takes, in milliseconds.
const MAX_ATTEMPT_TIMEOUT_MS: u128 = 86_400_000;

/// The call a route's path rule matches: a service, and a method of it; `None` when the rule
/// cannot be expressed, with why.
fn call_of(route: &Route) -> Result<(Option<String>, Option<String>), String> {
    let m = &route.matcher;
    let whole = |s: &str| !s.is_empty() && !s.contains('/');
    match &m.path {
        PathMatch::Prefix(p) if p.is_empty() || p == "/" => Ok((None, None)),
        _ if !m.case_sensitive => Err("case-insensitive paths are not read".into()),
        PathMatch::Prefix(p) => match p.strip_prefix('/').and_then(|s| s.strip_suffix('/')) {
            Some(service) if whole(service) => Ok((Some(service.to_owned()), None)),
            _ => Err(format!(
                "prefix `{p}` is not `/` or a whole service (`/package.Service/`)"
            )),
        },
        PathMatch::Path(p) => match p.strip_prefix('/').and_then(|s| s.split_once('/')) {
            Some((service, method)) if whole(service) && whole(method) => {
                Ok((Some(service.to_owned()), Some(method.to_owned())))
            }
            _ => Err(format!(
                "path `{p}` is not a method (`/package.Service/Method`)"
            )),
        },
        PathMatch::Other(kind) => Err(format!("`{kind}` is not read")),
    }
}

/// A `[[routes]]` entry's `client_context` condition of `header`; why not, when it cannot be
/// expressed.
fn condition(header: &HeaderMatcher) -> Result<Value, String> {
    let name = header.name.to_ascii_lowercase();
    if name.starts_with(':') {
        return Err(format!("pseudo-header `{name}` is not read"));
    }
    if name.ends_with("-bin") {
        return Err(format!("binary header `{name}` is not read"));
    }
    let (rule, value): (&str, Value) = match &header.rule {
        HeaderRule::Exact(v) => ("exact", v.as_str().into()),
        HeaderRule::Prefix(v) => ("prefix", v.as_str().into()),
        HeaderRule::Suffix(v) => ("suffix", v.as_str().into()),
        HeaderRule::Contains(v) => ("contains", v.as_str().into()),
        HeaderRule::Present(present) => ("present", (*present).into()),
        HeaderRule::Other(kind) => return Err(format!("header `{name}`: `{kind}` is not read")),
    };
    let mut table = Table::new();
    table.insert("key".into(), name.into());
    table.insert(rule.into(), value);
    if header.invert {
        table.insert("invert".into(), true.into());
    }
    Ok(table.into())
}

/// A virtual host's rank in Envoy's choice: exact domains first, `*` last; `None` when one of
/// its domains is a wildcard Rebound's routes cannot express.
fn rank(host: &VirtualHost) -> Option<u8> {
    let any = host.domains.iter().any(|d| d == "*");
    let wildcard = host.domains.iter().any(|d| d != "*" && d.contains('*'));
    match (wildcard, any) {
        (true, _) => None,
        (false, true) => Some(1),
        (false, false) => Some(0),
    }
}

/// A route configuration's policies and routes, and the cluster each policy forwards to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MappedRoutes {
    /// The policies and `[[routes]]`.
    pub overlay: ConfigOverlay,
    /// The cluster of each policy, by policy name (`clusters::attach`).
    pub clusters: BTreeMap<String, String>,
}

/// Maps `config` as the module says.
pub fn map(config: &RouteConfiguration) -> Result<MappedRoutes, FieldError> {
    let mut all = MappedRoutes::default();
    let mut hosts: Vec<(usize, &VirtualHost, u8)> = Vec::new();
    for (v, host) in config.virtual_hosts.iter().enumerate() {
        match rank(host) {
            Some(rank) => hosts.push((v, host, rank)),
            None => all.overlay.ignored.push(format!(
                "virtual_hosts[{v}].domains: wildcard domains other than `*` are not read; its routes are left out"
            )),
        }
    }
    hosts.sort_by_key(|(v, _, rank)| (*rank, *v));
    for (v, host, _) in hosts {
        for (r, route) in host.routes.iter().enumerate() {
            if let Some((policy, Some(cluster))) =
                map_route(&mut all.overlay, (v, host), (r, route))?
            {
                all.clusters.insert(policy, cluster);
            }
        }
    }
    Ok(all)
}

/// Adds route `r` of virtual host `v` to `mapped`: the name of its policy and the cluster it
/// forwards to, unless it is left out.
fn map_route(
    mapped: &mut ConfigOverlay,
    (v, host): (usize, &VirtualHost),
    (r, route): (usize, &Route),
) -> Result<Option<(String, Option<String>)>, FieldError> {
    let at = format!("virtual_hosts[{v}].routes[{r}]");
    let Some(action) = &route.action else {
        mapped.ignored.push(format!(
            "{at}: no route action (a redirect or a direct response)"
        ));
        return Ok(None);
    };
    let conditions = (route.matcher.headers.iter())
        .map(condition)
        .collect::<Result<Vec<_>, _>>();
    let (service, method, conditions) =
        match call_of(route).and_then(|(s, m)| Ok((s, m, conditions?))) {
            Ok(call) => call,
            Err(why) => {
                mapped
                    .ignored
                    .push(format!("{at}.match: {why}; the route is left out"));
                return Ok(None);
            }
        };
    let (retry, retry_at) = match (&action.retry_policy, &host.retry_policy) {
        (Some(p), _) => (Some(p), format!("{at}.route.retry_policy")),
        (None, Some(p)) => (Some(p), format!("virtual_hosts[{v}].retry_policy")),
        (None, None) => (None, String::new()),
    };
    let hedge = action.hedge_policy.as_ref().or(host.hedge_policy.as_ref());
    let converted = retry.map(|p| convert(p, hedge, &retry_at)).transpose()?;
    let mut name = policy_name(host, v, route, r);
    if mapped.policies.contains_key(&name) {
        name = format!("{name}#{r}");
    }
    let mut policy = Table::new();
    policy.insert("builtin".into(), "grpc".into());
    let method_config = match converted.as_ref().and_then(|c| c.retry_policy.clone()) {
        Some(retry_policy) => {
            json!({"methodConfig": [{"name": [{}], "retryPolicy": retry_policy}]})
        }
        None => json!({"methodConfig": []}),
    };
    let mut params = Table::new();
    params.insert("service_config".into(), method_config.to_string().into());
    if converted.as_ref().is_some_and(|c| c.next_node) {
        params.insert("node".into(), "next".into());
    }
    policy.insert("params".into(), params.into());
    if let Some(c) = &converted {
        if let Some(timeout) = c.attempt_timeout {
            let ms = timeout
                .as_micros()
                .div_ceil(1000)
                .min(MAX_ATTEMPT_TIMEOUT_MS);
            policy.insert("attempt_timeout_ms".into(), Value::Integer(ms as i64));
        }
        if c.hedge_on_attempt_timeout {
            policy.insert("hedge_on_attempt_timeout".into(), true.into());
        }
        mapped.ignored.extend(
            c.ignored
                .iter()
                .map(|what| format!("{retry_at}: {what} ignored")),
        );
    }
    mapped.policies.insert(name.clone(), policy.into());
    let call = Call {
        service,
        method,
        conditions,
    };
    for domain in &host.domains {
        mapped.routes.push(call.entry(domain, &name));
    }
    Ok(Some((name, action.cluster.clone())))
}

/// The calls a route matches, as `[[routes]]` fields.
struct Call {
    service: Option<String>,
    method: Option<String>,
    conditions: Vec<Value>,
}

impl Call {
    /// The `[[routes]]` entry of these calls to `domain` (`*`: any), decided by `policy`.
    fn entry(&self, domain: &str, policy: &str) -> Value {
        let mut entry = Table::new();
        entry.insert("protocol".into(), "grpc".into());
        if domain != "*" {
            entry.insert("authority".into(), domain.into());
        }
        if let Some(service) = &self.service {
            entry.insert("grpc_service".into(), service.as_str().into());
        }
        if let Some(method) = &self.method {
            entry.insert("grpc_method".into(), method.as_str().into());
        }
        if !self.conditions.is_empty() {
            entry.insert(
                "client_context".into(),
                Value::Array(self.conditions.clone()),
            );
        }
        entry.insert("policy".into(), policy.into());
        entry.into()
    }
}

/// The policy of route `r` of virtual host `v`: `HOST/ROUTE` by their names, their indices
/// where they have none.
fn policy_name(host: &VirtualHost, v: usize, route: &Route, r: usize) -> String {
    let host = if host.name.is_empty() {
        v.to_string()
    } else {
        host.name.clone()
    };
    let route = if route.name.is_empty() {
        r.to_string()
    } else {
        route.name.clone()
    };
    format!("xds/{host}/{route}")
}
