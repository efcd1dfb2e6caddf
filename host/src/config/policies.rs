//! The `[policies]` tables, from the configuration as written to policy definitions: a
//! component's source (a file, a pinned file or an OCI reference) or a built-in with its
//! parameters, each error naming where the value is written and what was expected. Apart from
//! the other sections because a policy is the one table whose shape depends on its kind.

use crate::field_error::FieldError;
use crate::hedge::{
    ConstantSpeculativeExecution, QuantileDelay, SpeculativeConfigError, MAX_COPIES,
};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use toml::Spanned;

use super::builtin::{Builtin, BuiltinPolicy};
use super::errors::Errors;
use super::raw::{
    param_text, parse_sha256, valid_oci_reference, RawComponent, RawPinnedComponent, RawPolicy,
};
use super::{ConfigError, PolicyDefinition, PolicySource, SpeculativeExecution};

/// The `[policies]` tables.
pub(super) fn policies(
    raw: &BTreeMap<String, Spanned<RawPolicy>>,
    policy_dir: &Path,
    errors: &Errors<'_>,
) -> Result<BTreeMap<String, PolicyDefinition>, ConfigError> {
    let mut policies = BTreeMap::new();
    for (name, spanned) in raw {
        policies.insert(name.clone(), policy(name, spanned, policy_dir, errors)?);
    }
    Ok(policies)
}

/// One `[policies.NAME]` table.
fn policy(
    name: &str,
    spanned: &Spanned<RawPolicy>,
    policy_dir: &Path,
    errors: &Errors<'_>,
) -> Result<PolicyDefinition, ConfigError> {
    let field = format!("policies.{name}");
    let raw = spanned.get_ref();
    let source = source(spanned, policy_dir, errors, &field)?;
    let (pinned_sha256, precompiled_sha256) = pins(raw, errors, &field)?;
    // A built-in's parameters are in its source; a component's are text for `configure`.
    let params = raw
        .params
        .as_ref()
        .filter(|_| !matches!(source, PolicySource::Builtin(_)));
    Ok(PolicyDefinition {
        speculative_execution: speculative_execution(raw, errors, &field)?,
        attempt_timeout: raw.attempt_timeout_ms.map(Duration::from_millis),
        hedge_on_attempt_timeout: hedge_on_attempt_timeout(raw, errors, &field)?,
        // The `grpc` built-in hedging after a percentile reads what its attempts record.
        record_latencies: raw.record_latencies || source.hedges_by_observed_latency(),
        source,
        params: param_texts(params, errors, &field)?,
        limits: raw.limits,
        fail_safe: raw.fail_safe,
        quarantine: raw.quarantine,
        wasi: raw.wasi,
        guard_exempt: raw.guard_exempt,
        pinned_sha256,
        precompiled_sha256,
        #[cfg(feature = "oci")]
        trusted_keys: None,
        params_location: params.map(|p| errors.location(p.span().start)),
    })
}

/// A policy's source: its `builtin` with its parameters, or its `component`.
fn source(
    spanned: &Spanned<RawPolicy>,
    policy_dir: &Path,
    errors: &Errors<'_>,
    field: &str,
) -> Result<PolicySource, ConfigError> {
    let raw = spanned.get_ref();
    match (&raw.builtin, &raw.component) {
        (Some(builtin), None) => Ok(PolicySource::Builtin(builtin_policy(
            *builtin,
            raw.params.as_ref(),
            spanned.span(),
            errors,
            field,
        )?)),
        (None, Some(component)) => component_source(component, policy_dir, errors, field),
        (Some(_), Some(path)) => Err(errors.at(
            path.span(),
            format!("{field}.component"),
            "a policy is either `builtin` or `component`, not both",
        )),
        (None, None) => Err(errors.at(
            spanned.span(),
            field,
            "expected `builtin = \"best-effort\"` (or another built-in) or `component = \"FILE.wasm\"`",
        )),
    }
}

/// The digests written in a policy's `component`: its `sha256` pin and its `precompiled` one.
type Pins = (Option<[u8; 32]>, Option<[u8; 32]>);

/// A policy's `component` pins, each 64 hexadecimal digits.
fn pins(raw: &RawPolicy, errors: &Errors<'_>, field: &str) -> Result<Pins, ConfigError> {
    let Some(component) = raw.component.as_ref() else {
        return Ok((None, None));
    };
    let digest = |text: Option<&str>, key: &str, what: &str| {
        text.map(|text| {
            parse_sha256(text).ok_or_else(|| {
                errors.at(
                    component.span(),
                    format!("{field}.component.{key}"),
                    format!("expected {what} as 64 hexadecimal digits, got `{text}`"),
                )
            })
        })
        .transpose()
    };
    let written = component.get_ref();
    Ok((
        digest(
            written.sha256(),
            "sha256",
            "the file's sha256 (`sha256sum FILE.wasm`)",
        )?,
        digest(
            written.precompiled(),
            "precompiled",
            "the compiled layer's sha256 (`rebound push --precompile` prints it)",
        )?,
    ))
}

/// A component's parameters as the text its `configure` is handed.
fn param_texts(
    params: Option<&Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    errors: &Errors<'_>,
    field: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut texts = BTreeMap::new();
    for (key, value) in params.iter().flat_map(|p| p.get_ref()) {
        let text = param_text(value.get_ref()).ok_or_else(|| {
            errors.at(
                value.span(),
                format!("{field}.params.{key}"),
                "expected a string, a number or a boolean (a component's parameters are handed to its `configure` as text)",
            )
        })?;
        texts.insert(key.clone(), text);
    }
    Ok(texts)
}

/// A policy's `hedge_on_attempt_timeout`: refused beside a `speculative_execution`, which
/// hedges on a timer of its own.
fn hedge_on_attempt_timeout(
    raw: &RawPolicy,
    errors: &Errors<'_>,
    field: &str,
) -> Result<bool, ConfigError> {
    let Some(written) = &raw.hedge_on_attempt_timeout else {
        return Ok(false);
    };
    let hedges = *written.get_ref();
    if hedges && raw.speculative_execution.is_some() {
        return Err(errors.at(
            written.span(),
            format!("{field}.hedge_on_attempt_timeout"),
            "a policy hedges one way: speculative_execution (copies on a timer) or hedge_on_attempt_timeout (a copy when the attempt timeout passes), not both",
        ));
    }
    Ok(hedges)
}

/// A policy's `speculative_execution`, if written: on a constant timer (`delay_ms`) or after a
/// latency quantile (`percentile`, `min_delay_ms`, `max_delay_ms`), never both.
fn speculative_execution(
    raw: &RawPolicy,
    errors: &Errors<'_>,
    field: &str,
) -> Result<Option<SpeculativeExecution>, ConfigError> {
    let Some(spanned) = &raw.speculative_execution else {
        return Ok(None);
    };
    let written = spanned.get_ref();
    let field = format!("{field}.speculative_execution");
    let refuse =
        |name: &str, why: String| errors.at(spanned.span(), format!("{field}.{name}"), why);
    let max = written.max_executions;
    if !(1..=MAX_COPIES).contains(&max) {
        let why = SpeculativeConfigError(max).to_string();
        return Err(refuse(
            "max_executions",
            why.replacen("max_executions: ", "", 1),
        ));
    }
    let quantile = (written.min_delay_ms, written.max_delay_ms);
    match (written.delay_ms, written.percentile, quantile) {
        (Some(delay_ms), None, (None, None)) => Ok(Some(SpeculativeExecution::Constant(
            ConstantSpeculativeExecution::new(Duration::from_millis(delay_ms), max)
                .map_err(|e| refuse("max_executions", e.to_string()))?,
        ))),
        (None, Some(percentile), (min, Some(max_delay))) => {
            let (min, max_delay) = (Duration::from_millis(min.unwrap_or(0)), Duration::from_millis(max_delay));
            let delay = QuantileDelay::new(percentile, min, max_delay).map_err(|e| {
                let text = e.to_string();
                let (name, why) = text.split_once(": ").unwrap_or(("percentile", &text));
                refuse(name, why.to_owned())
            })?;
            Ok(Some(SpeculativeExecution::Quantile {
                delay,
                max_executions: max,
            }))
        }
        (None, Some(_), (_, None)) => Err(refuse(
            "max_delay_ms",
            "missing: a quantile delay needs its ceiling, also the delay until a node has a quantile".into(),
        )),
        (None, None, _) => Err(refuse(
            "delay_ms",
            "missing: give `delay_ms` (a constant delay) or `percentile` with `max_delay_ms` (a latency quantile)".into(),
        )),
        (Some(_), _, _) => Err(refuse(
            "delay_ms",
            "a constant delay takes no `percentile`, `min_delay_ms` or `max_delay_ms`: give one kind of delay".into(),
        )),
    }
}

/// A policy's `component`: a file in the policy directory, or an OCI reference; refused in a
/// build that runs no components.
fn component_source(
    component: &Spanned<RawComponent>,
    policy_dir: &Path,
    errors: &Errors<'_>,
    field: &str,
) -> Result<PolicySource, ConfigError> {
    if cfg!(not(feature = "wasm")) {
        return Err(errors.at(
            component.span(),
            format!("{field}.component"),
            "policies that are components need rebound's `wasm` feature, which this build lacks: turn it on (`rebound-core = { features = [\"wasm\"] }`, or an adapter's own `wasm` feature), or name a `builtin`",
        ));
    }
    match component.get_ref() {
        RawComponent::Oci(oci) => {
            if !valid_oci_reference(&oci.oci) {
                return Err(errors.at(
                    component.span(),
                    format!("{field}.component.oci"),
                    format!("`{}` is not an OCI reference; expected registry/repository:tag, e.g. \"ghcr.io/team/policy:1.0\"", oci.oci),
                ));
            }
            Ok(PolicySource::Oci(oci.oci.clone()))
        }
        RawComponent::Path(path) | RawComponent::Pinned(RawPinnedComponent { path, .. }) => {
            let file = policy_dir.join(path);
            if !file.is_file() {
                return Err(errors.at(
                    component.span(),
                    format!("{field}.component"),
                    format!(
                        "no component file at {} (relative paths are resolved against {}); `rebound build` in a policy project makes its component",
                        file.display(),
                        policy_dir.display()
                    ),
                ));
            }
            Ok(PolicySource::Component(file))
        }
    }
}

/// `builtin` with the `params` a policy gives it; a refused parameter is reported where it is
/// written.
fn builtin_policy(
    builtin: Builtin,
    params: Option<&Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    policy: Range<usize>,
    errors: &Errors<'_>,
    field: &str,
) -> Result<BuiltinPolicy, ConfigError> {
    let Some(params) = params else {
        return BuiltinPolicy::new(builtin, &serde_json::Map::new()).map_err(|e| {
            errors.at(
                policy.clone(),
                format!("{field}.params"),
                format!(
                    "{}: {} takes parameters, some required",
                    e.message,
                    builtin.name()
                ),
            )
        });
    };
    let mut json = serde_json::Map::new();
    for (key, value) in params.get_ref() {
        let value = serde_json::to_value(value.get_ref())
            .map_err(|e| errors.at(value.span(), format!("{field}.params.{key}"), e.to_string()))?;
        json.insert(key.clone(), value);
    }
    // Where a parameter a message is about is written, or the whole table.
    let at = |e: FieldError| {
        let (span, field) = match params.get_ref().get(&e.field) {
            Some(value) => (value.span(), format!("{field}.params.{}", e.field)),
            None if e.field.is_empty() => (params.span(), format!("{field}.params")),
            None => (params.span(), format!("{field}.params.{}", e.field)),
        };
        errors.at(span, field, e.message)
    };
    let policy = BuiltinPolicy::new(builtin, &json).map_err(at)?;
    for warning in policy.warnings() {
        tracing::warn!("{}", at(warning));
    }
    Ok(policy)
}
