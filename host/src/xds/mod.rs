//! Retry policy where a fleet's traffic is already configured: Envoy's route configuration, as
//! an xDS control plane sends it. gRFC A44 maps an Envoy `RetryPolicy` onto gRPC's (A6) and
//! leaves out `per_try_timeout` and hedging, which Rebound has; this module reads the route
//! configuration ([`envoy`]), converts each route's retry policy as A44 says and adds what it
//! leaves out ([`retry`]), turns the routes into Rebound's policies and `[[routes]]`
//! ([`routes`]), and a cluster's retry budget and outlier detection into the budget and the
//! breaker of the policies forwarding to it ([`clusters`]). [`config_from_json`] makes a registry configuration of a `RouteConfiguration`
//! or a lone `RetryPolicy` in proto3 JSON, so that a route's policy can be tried with `rebound
//! eval` and `rebound simulate` before a control plane pushes it (docs/xds.md).

#[cfg(feature = "xds")]
mod accepted;
#[cfg(feature = "xds")]
pub mod ads;
pub mod clusters;
pub mod envoy;
#[cfg(feature = "xds")]
mod proto;
pub mod retry;
pub mod routes;

use std::path::Path;

use serde_json::Value;

use crate::config::{ConfigError, RegistryConfig};
use crate::field_error::FieldError;

/// The policy of a call no route matches: gRPC fails such a call, so it is not retried.
pub const UNROUTED_POLICY: &str = "xds/unrouted";

/// The policy a lone `RetryPolicy` becomes.
pub const RETRY_POLICY: &str = "xds/retry_policy";

/// An Envoy resource that could not be made a registry configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum XdsError {
    /// Not JSON.
    #[error("{file}: not JSON: {message}")]
    Json {
        /// The file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A field refused, with its path in the resource.
    #[error("{file}: {error}")]
    Resource {
        /// The file.
        file: String,
        /// The field and why.
        error: FieldError,
    },
    /// The configuration made of it was refused (a value past a range Rebound sets).
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// A registry configuration made of an Envoy resource, and what was left out of it.
#[derive(Debug, Clone)]
pub struct FromEnvoy {
    /// The configuration: a policy per route, `[[routes]]` in Envoy's order, and
    /// [`UNROUTED_POLICY`] (or [`RETRY_POLICY`]) as the default policy.
    pub config: RegistryConfig,
    /// What was read and not used, each with its field path and why.
    pub ignored: Vec<String>,
}

/// Where a lone `RetryPolicy` sits in the route configuration made around it.
const LONE_PREFIX: &str = "virtual_hosts[0].routes[0].route.retry_policy.";

/// The resource of `value`, without the `@type` of its `Any` form.
fn unwrap_any(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.remove("@type");
    }
    value
}

/// A registry configuration made of `text`, the proto3 JSON of an Envoy `RouteConfiguration`
/// (an object with `virtual_hosts`) or of a lone `RetryPolicy`; `file` names it in errors.
pub fn config_from_json(text: &str, file: &Path) -> Result<FromEnvoy, XdsError> {
    let name = file.display().to_string();
    let value: Value = serde_json::from_str(text).map_err(|e| XdsError::Json {
        file: name.clone(),
        message: e.to_string(),
    })?;
    let value = unwrap_any(value);
    let resource = |error| XdsError::Resource {
        file: name.clone(),
        error,
    };
    let is_routes = value
        .get("virtual_hosts")
        .or(value.get("virtualHosts"))
        .is_some();
    let (mut table, ignored, default) = if is_routes {
        let routes = envoy::RouteConfiguration::from_json(&value).map_err(resource)?;
        let mapped = routes::map(&routes).map_err(resource)?.overlay;
        let mut table = toml::Table::new();
        let mut policies = mapped.policies;
        let mut unrouted = toml::Table::new();
        unrouted.insert("builtin".into(), "fail-fast".into());
        policies.insert(UNROUTED_POLICY.into(), unrouted.into());
        table.insert("policies".into(), policies.into());
        table.insert("routes".into(), toml::Value::Array(mapped.routes));
        (table, mapped.ignored, UNROUTED_POLICY)
    } else {
        let policy = envoy::RetryPolicy::from_json(&value, "").map_err(resource)?;
        let route = envoy::Route {
            action: Some(envoy::RouteAction {
                retry_policy: Some(policy),
                ..envoy::RouteAction::default()
            }),
            ..envoy::Route::default()
        };
        let host = envoy::VirtualHost {
            domains: vec!["*".into()],
            routes: vec![route],
            ..envoy::VirtualHost::default()
        };
        let mapped = routes::map(&envoy::RouteConfiguration {
            virtual_hosts: vec![host],
            ..envoy::RouteConfiguration::default()
        })
        .map_err(|e| resource(FieldError::new(e.field.replace(LONE_PREFIX, ""), e.message)))?
        .overlay;
        let ignored = (mapped.ignored.iter())
            .map(|i| i.replace(LONE_PREFIX.trim_end_matches('.'), "retry_policy"))
            .collect();
        let mut table = toml::Table::new();
        let policy = mapped.policies.into_iter().next().map(|(_, p)| p);
        let mut policies = toml::Table::new();
        policies.extend(policy.map(|p| (RETRY_POLICY.to_owned(), p)));
        table.insert("policies".into(), policies.into());
        (table, ignored, RETRY_POLICY)
    };
    table.insert("default_policy".into(), default.into());
    let text = toml::to_string(&table).map_err(|e| XdsError::Json {
        file: name.clone(),
        message: e.to_string(),
    })?;
    let base = file.parent().unwrap_or(Path::new("."));
    let config = RegistryConfig::parse(&text, file, base)?;
    Ok(FromEnvoy { config, ignored })
}

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod tests;
