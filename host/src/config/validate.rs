//! From the configuration as written to the model, one function per section, each error
//! naming the file, the line and column where the value is written, the field's dotted path,
//! and what was expected.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use toml::Spanned;

use super::controls::ControlTables;
use super::errors::Errors;
use super::raw::{RawCacheDir, RawConfig, RawPolicy, RawRoute};
use super::route::Route;
use super::{CacheDir, ConfigError, PolicyDefinition, RegistryConfig};
use crate::decision_log::DecisionLogConfig;
use crate::request::{RequestType, Service};
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
    let xds = xds_source(raw.source.as_ref(), base, errors)?;
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
        throttles: controls.throttles,
        breakers: controls.breakers,
        policy_controls: controls.policy_controls,
        decision_log,
        #[cfg(feature = "otlp")]
        telemetry,
        xds,
    })
}

/// The `[source.xds]` table, checked.
fn xds_source(
    source: Option<&toml::Spanned<super::raw::RawSource>>,
    base: &Path,
    errors: &Errors<'_>,
) -> Result<Option<super::XdsSourceConfig>, ConfigError> {
    let Some(source) = source else {
        return Ok(None);
    };
    let mut xds = source.get_ref().xds.clone();
    if let Some(xds) = &mut xds {
        (xds.validate())
            .and_then(|()| xds.resolve_files(base))
            .map_err(|e| errors.at(source.span(), format!("source.xds.{}", e.field), e.message))?;
    }
    Ok(xds)
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
    let mut client_context = Vec::new();
    for (i, raw) in route.client_context.iter().enumerate() {
        match raw.condition() {
            Ok(condition) => client_context.push(condition),
            Err((name, message)) => return refuse(&format!("client_context[{i}].{name}"), message),
        }
    }
    if route.protocol.is_none()
        && route.authority.is_none()
        && !grpc
        && route.path.is_none()
        && client_context.is_empty()
    {
        return refuse(
            "policy",
            "a route matches nothing: give at least one of protocol, authority, grpc_service, grpc_method, path, client_context".into(),
        );
    }
    Ok(Route {
        protocol: route.protocol,
        authority: route.authority.clone(),
        grpc_service: route.grpc_service.clone(),
        grpc_method: route.grpc_method.clone(),
        path: route.path.clone(),
        client_context,
        policy: names.known(&route.policy, field("policy"))?,
        attempt_timeout: route.attempt_timeout_ms.map(Duration::from_millis),
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
