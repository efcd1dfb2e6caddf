//! From the configuration as written to the model, one function per section, each error
//! naming the file, the line and column where the value is written, the field's dotted path,
//! and what was expected.

use std::collections::BTreeMap;
use std::path::Path;

use toml::Spanned;

use super::breakers;
use super::errors::Errors;
use super::raw::{RawBudget, RawCacheDir, RawConfig, RawPolicy, RawRoute};
use super::route::Route;
use super::throttles;
use super::{BudgetScope, CacheDir, ConfigError, PolicyDefinition, RegistryConfig};
use crate::decision_log::DecisionLogConfig;
use crate::request::{RequestType, Service};
use crate::traffic_budget::BudgetConfig;
use crate::wasm::DEFAULT_CACHE_MAX_BYTES;

/// The largest `cache_max_mb`: 1 TiB.
const MAX_CACHE_MB: u64 = 1 << 20;

/// The whole configuration, section by section.
pub(super) fn validate(
    raw: RawConfig,
    errors: &Errors<'_>,
    base: &Path,
) -> Result<RegistryConfig, ConfigError> {
    let policy_dir = match &raw.policy_dir {
        Some(dir) => base.join(dir),
        None => base.to_owned(),
    };
    let names = PolicyNames {
        policies: &raw.policies,
        errors,
    };
    let default_policy = names.known(&raw.default_policy, "default_policy".into())?;
    let mut policies = super::policies::policies(&raw.policies, &policy_dir, errors)?;
    let controls = ControlTables::validate(&raw, errors)?;
    let decision_log = decision_log(raw.decision_log.as_ref(), base, errors)?;
    trust(raw.trust.as_ref(), &mut policies, base, errors)?;
    #[cfg(feature = "otlp")]
    let telemetry = telemetry(raw.telemetry, errors)?;
    #[cfg(not(feature = "otlp"))]
    telemetry(raw.telemetry, errors)?;
    let cache_max_bytes = cache_max_bytes(raw.cache_max_mb.as_ref(), errors)?;
    let profiles = (raw.profiles.iter())
        .map(|(name, profile)| {
            let policy = (profile.policy.as_ref())
                .map(|policy| names.known(policy, format!("profiles.{name}.policy")))
                .transpose()?;
            Ok((name.clone(), policy))
        })
        .collect::<Result<_, ConfigError>>()?;
    let services = routes(&raw.services, "services", Service::name, &names)?;
    let request_types = routes(
        &raw.request_types,
        "request_types",
        RequestType::name,
        &names,
    )?;
    let routes = raw
        .routes
        .iter()
        .enumerate()
        .map(|(i, route)| request_route(route, i, &names))
        .collect::<Result<_, _>>()?;
    Ok(RegistryConfig {
        file: None,
        default_policy,
        policy_dir,
        cache_dir: cache_dir(raw.cache_dir, base),
        cache_max_bytes,
        watch: raw.watch,
        engine: raw.engine,
        policies,
        profiles,
        services,
        request_types,
        routes,
        strict_start: raw.strict_start,
        budgets: controls.budgets,
        budget_scopes: controls.budget_scopes,
        policy_budgets: controls.policy_budgets,
        throttles: controls.throttles,
        policy_throttles: controls.policy_throttles,
        breakers: controls.breakers,
        policy_breakers: controls.policy_breakers,
        decision_log,
        #[cfg(feature = "otlp")]
        telemetry,
    })
}

/// `cache_max_mb` in bytes: 1 MiB to 1 TiB.
fn cache_max_bytes(
    written: Option<&Spanned<u64>>,
    errors: &Errors<'_>,
) -> Result<u64, ConfigError> {
    match written {
        None => Ok(DEFAULT_CACHE_MAX_BYTES),
        Some(mb) if *mb.get_ref() == 0 => Err(errors.at(
            mb.span(),
            "cache_max_mb",
            "expected at least 1 (megabytes); `cache_dir = false` keeps no cache",
        )),
        Some(mb) if *mb.get_ref() > MAX_CACHE_MB => Err(errors.at(
            mb.span(),
            "cache_max_mb",
            format!(
                "{} is out of range; expected 1 to {MAX_CACHE_MB} (1 TiB)",
                mb.get_ref()
            ),
        )),
        Some(mb) => Ok(mb.get_ref().saturating_mul(1 << 20)),
    }
}

/// The named controls (`[budgets]`, `[throttles]`, `[breakers]`) and which of them each
/// policy names.
struct ControlTables {
    budgets: BTreeMap<String, BudgetConfig>,
    budget_scopes: BTreeMap<String, BudgetScope>,
    policy_budgets: BTreeMap<String, String>,
    throttles: BTreeMap<String, super::ThrottleDefinition>,
    policy_throttles: BTreeMap<String, String>,
    breakers: BTreeMap<String, super::BreakerDefinition>,
    policy_breakers: BTreeMap<String, String>,
}

impl ControlTables {
    /// The tables of `raw`, each policy's reference to one checked against them.
    fn validate(raw: &RawConfig, errors: &Errors<'_>) -> Result<Self, ConfigError> {
        let policies = &raw.policies;
        let (budgets, budget_scopes) = budgets(&raw.budgets, errors)?;
        let policy_budgets = policy_references(
            policies,
            ("budget", "budgets"),
            |policy| policy.budget.as_ref(),
            &budgets,
            errors,
        )?;
        let throttles = throttles::throttles(&raw.throttles, errors)?;
        let policy_throttles = policy_references(
            policies,
            ("throttle", "throttles"),
            |policy| policy.throttle.as_ref(),
            &throttles,
            errors,
        )?;
        let breakers = breakers::breakers(&raw.breakers, errors)?;
        let policy_breakers = policy_references(
            policies,
            ("breaker", "breakers"),
            |policy| policy.breaker.as_ref(),
            &breakers,
            errors,
        )?;
        Ok(ControlTables {
            budgets,
            budget_scopes,
            policy_budgets,
            throttles,
            policy_throttles,
            breakers,
            policy_breakers,
        })
    }
}

/// The configured policy names, for the fields that name one.
struct PolicyNames<'a> {
    policies: &'a BTreeMap<String, Spanned<RawPolicy>>,
    errors: &'a Errors<'a>,
}

impl PolicyNames<'_> {
    /// `name`, if a `[policies]` table has it.
    fn known(&self, name: &Spanned<String>, field: String) -> Result<String, ConfigError> {
        if self.policies.contains_key(name.get_ref()) {
            return Ok(name.get_ref().clone());
        }
        Err(self.errors.at(
            name.span(),
            field,
            format!(
                "no policy named `{}`; expected one of the [policies] tables: {}",
                name.get_ref(),
                self.policies.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        ))
    }
}

/// The `[budgets]` tables.
#[allow(clippy::type_complexity)]
fn budgets(
    raw: &BTreeMap<String, Spanned<RawBudget>>,
    errors: &Errors<'_>,
) -> Result<
    (
        BTreeMap<String, BudgetConfig>,
        BTreeMap<String, BudgetScope>,
    ),
    ConfigError,
> {
    let mut budgets = BTreeMap::new();
    let mut scopes = BTreeMap::new();
    for (name, budget) in raw {
        let at = |field: &str, message: String| {
            errors.at(budget.span(), format!("budgets.{name}.{field}"), message)
        };
        let config = budget.get_ref().config();
        config.validate().map_err(|e| at(&e.field, e.message))?;
        budgets.insert(name.clone(), config);
        let raw = budget.get_ref();
        match &raw.per {
            Some(per) => {
                let key = per
                    .strip_prefix("client_context.")
                    .filter(|key| !key.is_empty())
                    .ok_or_else(|| {
                        at(
                            "per",
                            format!("`{per}`: expected `client_context.KEY`, the client-context entry naming the client"),
                        )
                    })?;
                let max_clients = raw.max_clients.unwrap_or(BudgetScope::DEFAULT_MAX_CLIENTS);
                if !(1..=BudgetScope::MOST_CLIENTS).contains(&max_clients) {
                    return Err(at(
                        "max_clients",
                        format!(
                            "{max_clients} is out of range; expected 1 to {}",
                            BudgetScope::MOST_CLIENTS
                        ),
                    ));
                }
                scopes.insert(
                    name.clone(),
                    BudgetScope {
                        key: key.to_owned(),
                        max_clients,
                    },
                );
            }
            None if raw.max_clients.is_some() => {
                return Err(at(
                    "max_clients",
                    "applies to a budget kept per client; add `per = \"client_context.KEY\"`"
                        .into(),
                ))
            }
            None => {}
        }
    }
    Ok((budgets, scopes))
}

/// What a policy's `field` names (`budget`, `throttle`, `breaker`): one of the `[SECTION]`
/// tables (`budgets`, `throttles`, `breakers`), by policy; a table no policy uses is a warning.
pub(super) fn policy_references<T>(
    policies: &BTreeMap<String, Spanned<RawPolicy>>,
    (field, section): (&str, &str),
    named: impl Fn(&RawPolicy) -> Option<&Spanned<String>>,
    tables: &BTreeMap<String, T>,
    errors: &Errors<'_>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut references = BTreeMap::new();
    for (name, spanned) in policies {
        let Some(table) = named(spanned.get_ref()) else {
            continue;
        };
        if !tables.contains_key(table.get_ref()) {
            return Err(errors.at(
                table.span(),
                format!("policies.{name}.{field}"),
                format!(
                    "no {field} named `{}`; expected one of the [{section}] tables: {}",
                    table.get_ref(),
                    tables.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        references.insert(name.clone(), table.get_ref().clone());
    }
    for name in tables.keys() {
        if !references.values().any(|used| used == name) {
            tracing::warn!(table = %format!("{section}.{name}"), file = %errors.file.display(),
                "{field} is not used by any policy (attach it with `{field} = \"{name}\"` in a [policies] table)");
        }
    }
    Ok(references)
}

/// The `[trust]` table: its keys, read from their files (resolved against `base`), are the
/// ones every OCI component of `policies` must be signed by.
#[cfg(feature = "oci")]
fn trust(
    raw: Option<&Spanned<super::raw::RawTrust>>,
    policies: &mut BTreeMap<String, PolicyDefinition>,
    base: &Path,
    errors: &Errors<'_>,
) -> Result<(), ConfigError> {
    let Some(raw) = raw else {
        return Ok(());
    };
    if raw.get_ref().keys.is_empty() {
        return Err(errors.at(
            raw.span(),
            "trust.keys",
            "expected at least one public key file (PEM, ECDSA P-256), e.g. keys = [\"release.pub\"]",
        ));
    }
    let keys = (raw.get_ref().keys.iter().enumerate())
        .map(|(i, key)| {
            crate::distribution::TrustedKey::from_pem_file(&base.join(key.get_ref()))
                .map_err(|e| errors.at(key.span(), format!("trust.keys[{i}]"), e.to_string()))
        })
        .collect::<Result<std::sync::Arc<[_]>, _>>()?;
    for policy in policies.values_mut() {
        if matches!(policy.source, super::PolicySource::Oci(_)) {
            policy.trusted_keys = Some(std::sync::Arc::clone(&keys));
        }
    }
    Ok(())
}

/// Without the `oci` feature no component comes from a registry: a `[trust]` table is refused.
#[cfg(not(feature = "oci"))]
fn trust(
    raw: Option<&Spanned<super::raw::RawTrust>>,
    _policies: &mut BTreeMap<String, PolicyDefinition>,
    _base: &Path,
    errors: &Errors<'_>,
) -> Result<(), ConfigError> {
    match raw {
        None => Ok(()),
        Some(raw) => Err(errors.at(
            raw.span(),
            "trust",
            "signed components come from OCI registries: this build lacks the `oci` feature",
        )),
    }
}

/// The `[telemetry]` table.
#[cfg(feature = "otlp")]
fn telemetry(
    raw: Option<Spanned<super::raw::RawTelemetry>>,
    errors: &Errors<'_>,
) -> Result<Option<crate::otlp::OtlpConfig>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let span = raw.span();
    let config = raw.into_inner();
    config
        .check_endpoint()
        .map_err(|e| errors.at(span, "telemetry.endpoint", e.message))?;
    Ok(Some(config))
}

/// Without the `otlp` feature nothing is exported: a `[telemetry]` table is refused.
#[cfg(not(feature = "otlp"))]
fn telemetry(
    raw: Option<Spanned<super::raw::RawTelemetry>>,
    errors: &Errors<'_>,
) -> Result<(), ConfigError> {
    match raw {
        None => Ok(()),
        Some(raw) => Err(errors.at(
            raw.span(),
            "telemetry",
            "OTLP export needs the `otlp` feature, which this build lacks",
        )),
    }
}

/// The `[decision_log]` table, its file resolved against `base`.
fn decision_log(
    raw: Option<&Spanned<DecisionLogConfig>>,
    base: &Path,
    errors: &Errors<'_>,
) -> Result<Option<DecisionLogConfig>, ConfigError> {
    let Some(log) = raw else {
        return Ok(None);
    };
    log.get_ref()
        .validate()
        .map_err(|e| errors.at(log.span(), format!("decision_log.{}", e.field), e.message))?;
    let mut log = log.get_ref().clone();
    log.file = log.file.map(|file| base.join(file));
    Ok(Some(log))
}

/// A `[[routes]]` entry (the `at`-th): at least one thing to match, each fitting its protocol,
/// and a known policy.
fn request_route(
    raw: &Spanned<RawRoute>,
    at: usize,
    names: &PolicyNames<'_>,
) -> Result<Route, ConfigError> {
    let field = |name: &str| format!("routes[{at}].{name}");
    let refuse =
        |name: &str, message: String| Err(names.errors.at(raw.span(), field(name), message));
    let route = raw.get_ref();
    if let Some(protocol) = route.protocol {
        if !matches!(protocol, Service::Http | Service::Grpc) {
            return refuse(
                "protocol",
                format!("`{}` is not routed here; expected http or grpc ([services] and [request_types] route the others)", protocol.name()),
            );
        }
    }
    let grpc = route.grpc_service.is_some() || route.grpc_method.is_some();
    if route.grpc_method.is_some() && route.grpc_service.is_none() {
        return refuse(
            "grpc_method",
            "a gRPC method needs its grpc_service (\"package.Service\")".into(),
        );
    }
    if grpc && route.protocol == Some(Service::Http)
        || route.path.is_some() && route.protocol == Some(Service::Grpc)
    {
        return refuse(
            "protocol",
            "grpc_service and grpc_method match gRPC calls, path matches HTTP requests: not both, and not the other protocol".into(),
        );
    }
    if grpc && route.path.is_some() {
        return refuse(
            "path",
            "path matches HTTP requests, grpc_service gRPC calls: a route matches one or the other"
                .into(),
        );
    }
    if let Some(path) = &route.path {
        if !path.starts_with('/') {
            return refuse("path", format!("`{path}` does not start with `/`"));
        }
    }
    if route.protocol.is_none() && route.authority.is_none() && !grpc && route.path.is_none() {
        return refuse(
            "policy",
            "a route matches nothing: give at least one of protocol, authority, grpc_service, grpc_method, path".into(),
        );
    }
    Ok(Route {
        protocol: route.protocol,
        authority: route.authority.clone(),
        grpc_service: route.grpc_service.clone(),
        grpc_method: route.grpc_method.clone(),
        path: route.path.clone(),
        policy: names.known(&route.policy, field("policy"))?,
    })
}

/// A table of routes (`[services]`, `[request_types]`) from a key to a policy name.
fn routes<K: Ord + Copy>(
    raw: &BTreeMap<K, Spanned<String>>,
    table: &str,
    key_name: impl Fn(K) -> &'static str,
    names: &PolicyNames<'_>,
) -> Result<BTreeMap<K, String>, ConfigError> {
    let mut routes = BTreeMap::new();
    for (key, policy) in raw {
        let field = format!("{table}.{}", key_name(*key));
        routes.insert(*key, names.known(policy, field)?);
    }
    Ok(routes)
}

/// `cache_dir`: the user's cache directory unless `false` or a directory is given (a build
/// without the `wasm` feature compiles nothing and keeps no cache).
fn cache_dir(raw: Option<RawCacheDir>, base: &Path) -> Option<CacheDir> {
    match raw {
        #[cfg(feature = "wasm")]
        None | Some(RawCacheDir::Enabled(true)) => {
            crate::wasm::ArtifactCache::default_dir().map(CacheDir::UserDefault)
        }
        #[cfg(not(feature = "wasm"))]
        None | Some(RawCacheDir::Enabled(true)) => None,
        Some(RawCacheDir::Enabled(false)) => None,
        Some(RawCacheDir::Dir(dir)) => Some(CacheDir::Configured(base.join(dir))),
    }
}
