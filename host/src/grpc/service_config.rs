//! The retry part of a gRPC service config, as users write it (gRFC A6 "Configuration
//! Language" and "Integration with Service Config"): `methodConfig` entries naming methods
//! (`name: [{service, method}]`) with a `retryPolicy` or a `hedgingPolicy`, and
//! `retryThrottling`. Validated by A6's rules ("Validation of retryPolicy", "Validation of
//! hedgingPolicy", "Validation of retryThrottling"); an error names the field's path and what
//! was expected. Fields unrelated to retries (`timeout`,
//! `waitForReady`, `loadBalancingConfig`, ...) are accepted and not read.

use std::time::Duration;

use serde_json::{Map, Value};

use super::proto_json;
use super::status::GrpcCode;

/// The client-side cap on `maxAttempts` (gRFC A6 "Limits on Retries and Hedges": 5 unless
/// the client changes it).
pub const DEFAULT_MAX_ATTEMPTS_LIMIT: u32 = 5;

/// Retries whose nominal delay is worked out when the service config is read; later ones
/// (only a client cap above it allows them) are worked out when asked, so nothing read from a
/// service config is sized by its numbers.
const NOMINAL_TABLE_LEN: u32 = 64;

/// A service config that gRPC would refuse: the field's path
/// (`methodConfig[0].retryPolicy.maxAttempts`) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ServiceConfigError {
    /// The field, as a JSON path from the service config's root.
    pub path: String,
    /// What is wrong and what was expected.
    pub message: String,
}

fn error(path: impl Into<String>, message: impl Into<String>) -> ServiceConfigError {
    ServiceConfigError {
        path: path.into(),
        message: message.into(),
    }
}

/// A method config's `retryPolicy` (gRFC A6 "Retry Policy Capabilities").
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts, the original one included, at most the client's cap.
    pub max_attempts: u32,
    /// The first retry's nominal delay.
    pub initial_backoff: Duration,
    /// The largest nominal delay.
    pub max_backoff: Duration,
    /// How the nominal delay grows from one retry to the next.
    pub backoff_multiplier: f64,
    /// The statuses retried.
    pub retryable_status_codes: Vec<GrpcCode>,
    /// The nominal delay of the first retries counted from the last pushback (at most
    /// [`NOMINAL_TABLE_LEN`]), in nanoseconds, worked out once:
    /// `min(initialBackoff × backoffMultiplier^n, maxBackoff)`.
    nominal_nanos: Vec<f64>,
}

impl RetryPolicy {
    /// gRFC A6 "Exponential Backoff": the nominal delay (before jitter) of a retry after
    /// `since_pushback` retries made since the last pushback (0 for the first), in nanoseconds.
    pub fn nominal_backoff_nanos(&self, since_pushback: u32) -> f64 {
        match self.nominal_nanos.get(since_pushback as usize) {
            Some(nanos) => *nanos,
            None => {
                let max = self.max_backoff.as_secs_f64() * 1e9;
                let exponent = i32::try_from(since_pushback).unwrap_or(i32::MAX);
                let nanos = self.initial_backoff.as_secs_f64()
                    * 1e9
                    * self.backoff_multiplier.powi(exponent);
                if nanos.is_finite() {
                    nanos.min(max)
                } else {
                    max
                }
            }
        }
    }
}

/// `min(initial × multiplier^n, max)` in nanoseconds for each n below `attempts` and
/// [`NOMINAL_TABLE_LEN`].
fn nominal_table(initial: Duration, max: Duration, multiplier: f64, attempts: u32) -> Vec<f64> {
    let max = max.as_secs_f64() * 1e9;
    let mut nanos = initial.as_secs_f64() * 1e9;
    (0..attempts.min(NOMINAL_TABLE_LEN))
        .map(|_| {
            let this = if nanos.is_finite() {
                nanos.min(max)
            } else {
                max
            };
            nanos *= multiplier;
            this
        })
        .collect()
}

/// A method config's `hedgingPolicy` (gRFC A6 "Hedging Policy").
#[derive(Debug, Clone, PartialEq)]
pub struct HedgingPolicyConfig {
    /// Copies, the original one included, at most the client's cap.
    pub max_attempts: u32,
    /// The wait between one copy and the next (zero: all at once).
    pub hedging_delay: Duration,
    /// The statuses after which the other copies go on (and the next one is sent at once);
    /// any other status ends the call.
    pub non_fatal_status_codes: Vec<GrpcCode>,
}

/// What a method config does with a failed call.
#[derive(Debug, Clone, PartialEq)]
enum MethodPolicy {
    Retry(RetryPolicy),
    Hedging(HedgingPolicyConfig),
}

/// `retryThrottling` (gRFC A6 "Throttling Retry Attempts and Hedged RPCs").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryThrottling {
    /// The tokens a server name starts with, and the most it holds (1 to 1000).
    pub max_tokens: u32,
    /// The tokens a success gives back, to three decimal places, at most `max_tokens` (a
    /// larger ratio fills the count all the same).
    pub token_ratio: f64,
}

/// Which methods a method config applies to: one method, every method of a service, or (no
/// service) every method.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MethodName {
    service: String,
    method: Option<String>,
    /// What a call's full method name is compared with: `/service/method` for one method,
    /// `/service/` for a service (the name must then go on with a method), empty for all.
    matched: String,
}

impl MethodName {
    /// 0 for one method, 1 for a service, 2 for every method: the most specific name first.
    fn breadth(&self) -> u8 {
        match (&self.method, self.service.is_empty()) {
            (Some(_), _) => 0,
            (None, false) => 1,
            (None, true) => 2,
        }
    }

    /// Whether it names the call `full_method`.
    fn names(&self, full_method: &str) -> bool {
        match self.breadth() {
            0 => full_method == self.matched,
            1 => full_method
                .strip_prefix(self.matched.as_str())
                .is_some_and(|method| !method.is_empty() && !method.bytes().any(|b| b == b'/')),
            _ => split_full_method(full_method).is_some(),
        }
    }
}

/// The retry part of a service config.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceConfig {
    /// Each method config's retry or hedging policy (`None`: it retries nothing).
    policies: Vec<Option<MethodPolicy>>,
    /// Every name with the index of its method config's policy, the most specific first.
    names: Vec<(MethodName, usize)>,
    throttling: Option<RetryThrottling>,
}

impl ServiceConfig {
    /// Reads and validates `config` (a service config's JSON object), capping `maxAttempts`
    /// at `max_attempts_limit` as a client does.
    pub fn parse(config: &Value, max_attempts_limit: u32) -> Result<Self, ServiceConfigError> {
        let root = object(config, "")?;
        let mut policies = Vec::new();
        let mut seen: Vec<(MethodName, usize)> = Vec::new();
        if let Some(list) = root.get("methodConfig") {
            let list = list
                .as_array()
                .ok_or_else(|| error("methodConfig", "expected an array of method configs"))?;
            for (i, entry) in list.iter().enumerate() {
                let at = format!("methodConfig[{i}]");
                let entry = object(entry, &at)?;
                let names = names(entry, &at)?;
                for (j, name) in names.into_iter().enumerate() {
                    if seen.iter().any(|(earlier, _)| *earlier == name) {
                        return Err(error(
                            format!("{at}.name[{j}]"),
                            "this method is named by an earlier method config already",
                        ));
                    }
                    seen.push((name, i));
                }
                let policy = match (entry.get("retryPolicy"), entry.get("hedgingPolicy")) {
                    (Some(_), Some(_)) => {
                        return Err(error(
                            format!("{at}.hedgingPolicy"),
                            "only one of retryPolicy or hedgingPolicy may be set",
                        ))
                    }
                    (Some(policy), None) => Some(MethodPolicy::Retry(retry_policy(
                        policy,
                        &format!("{at}.retryPolicy"),
                        max_attempts_limit,
                    )?)),
                    (None, Some(policy)) => Some(MethodPolicy::Hedging(hedging_policy(
                        policy,
                        &format!("{at}.hedgingPolicy"),
                        max_attempts_limit,
                    )?)),
                    (None, None) => None,
                };
                policies.push(policy);
            }
        }
        seen.sort_by_key(|(name, _)| name.breadth());
        let throttling = match root.get("retryThrottling") {
            Some(value) => Some(throttling(value)?),
            None => None,
        };
        Ok(ServiceConfig {
            policies,
            names: seen,
            throttling,
        })
    }

    /// The retry policy for the call `full_method` (`/package.Service/Method`): that of the
    /// most specific method config naming it (the method, else its service, else the
    /// default); `None` if none names it or the one that does has no retry policy.
    pub fn retry_policy(&self, full_method: &str) -> Option<&RetryPolicy> {
        match self.method_policy(full_method)? {
            MethodPolicy::Retry(policy) => Some(policy),
            MethodPolicy::Hedging(_) => None,
        }
    }

    /// The hedging policy for the call `full_method`, chosen as
    /// [`retry_policy`](Self::retry_policy) chooses: `None` if the method config naming it has
    /// none.
    pub fn hedging_policy(&self, full_method: &str) -> Option<&HedgingPolicyConfig> {
        match self.method_policy(full_method)? {
            MethodPolicy::Hedging(policy) => Some(policy),
            MethodPolicy::Retry(_) => None,
        }
    }

    /// Whether some method config has a hedging policy.
    pub fn hedges(&self) -> bool {
        (self.policies.iter()).any(|policy| matches!(policy, Some(MethodPolicy::Hedging(_))))
    }

    /// The policy of the most specific method config naming `full_method`.
    fn method_policy(&self, full_method: &str) -> Option<&MethodPolicy> {
        // The names are kept most specific first: the first that names the call decides.
        let (_, at) = self
            .names
            .iter()
            .find(|(name, _)| name.names(full_method))?;
        self.policies[*at].as_ref()
    }

    /// Its `retryThrottling`, if it has one.
    pub fn throttling(&self) -> Option<RetryThrottling> {
        self.throttling
    }
}

/// `/package.Service/Method` as its service and method; `None` if it is not of that form.
pub fn split_full_method(full_method: &str) -> Option<(&str, &str)> {
    let (service, method) = full_method.strip_prefix('/')?.split_once('/')?;
    (!service.is_empty() && !method.is_empty() && !method.contains('/'))
        .then_some((service, method))
}

/// The proto3 JSON duration at `path`.
fn duration(value: &Value, path: &str, zero: bool) -> Result<Duration, ServiceConfigError> {
    proto_json::duration(value, zero).map_err(|e| error(path, e.0))
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ServiceConfigError> {
    value.as_object().ok_or_else(|| {
        error(
            if path.is_empty() { "(root)" } else { path },
            format!("expected a JSON object, found `{value}`"),
        )
    })
}

fn names(entry: &Map<String, Value>, at: &str) -> Result<Vec<MethodName>, ServiceConfigError> {
    let list = entry
        .get("name")
        .and_then(Value::as_array)
        .filter(|list| !list.is_empty())
        .ok_or_else(|| {
            error(
                format!("{at}.name"),
                "expected a non-empty array of {\"service\": ..., \"method\": ...}",
            )
        })?;
    let text = |name: &Map<String, Value>, key: &str, path: &str| match name.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(error(
            format!("{path}.{key}"),
            format!("expected a string, found `{other}`"),
        )),
    };
    list.iter()
        .enumerate()
        .map(|(j, name)| {
            let path = format!("{at}.name[{j}]");
            let name = object(name, &path)?;
            let service = text(name, "service", &path)?;
            let method = text(name, "method", &path)?;
            if service.is_none() && method.is_some() {
                return Err(error(
                    format!("{path}.method"),
                    "a method name needs its service (`service`: \"package.Service\")",
                ));
            }
            let service = service.unwrap_or_default();
            let matched = match (&method, service.is_empty()) {
                (_, true) => String::new(),
                (Some(method), false) => format!("/{service}/{method}"),
                (None, false) => format!("/{service}/"),
            };
            Ok(MethodName {
                service,
                method,
                matched,
            })
        })
        .collect()
}

fn retry_policy(
    value: &Value,
    at: &str,
    max_attempts_limit: u32,
) -> Result<RetryPolicy, ServiceConfigError> {
    let policy = object(value, at)?;
    let field = |key: &str| {
        policy
            .get(key)
            .ok_or_else(|| error(format!("{at}.{key}"), "required"))
    };
    let max_attempts = max_attempts(policy, at, max_attempts_limit)?;
    let initial_backoff = duration(
        field("initialBackoff")?,
        &format!("{at}.initialBackoff"),
        false,
    )?;
    let max_backoff = duration(field("maxBackoff")?, &format!("{at}.maxBackoff"), false)?;
    let multiplier = field("backoffMultiplier")?;
    let backoff_multiplier = multiplier
        .as_f64()
        .filter(|m| *m > 0.0 && m.is_finite())
        .ok_or_else(|| {
            error(
                format!("{at}.backoffMultiplier"),
                format!("expected a number greater than 0, found `{multiplier}`"),
            )
        })?;
    let codes_at = format!("{at}.retryableStatusCodes");
    let codes = field("retryableStatusCodes")?
        .as_array()
        .filter(|codes| !codes.is_empty())
        .ok_or_else(|| error(&codes_at, "expected a non-empty array of status codes"))?;
    let retryable_status_codes = codes
        .iter()
        .enumerate()
        .map(|(i, code)| {
            GrpcCode::from_json(code).map_err(|e| error(format!("{codes_at}[{i}]"), e))
        })
        .collect::<Result<_, _>>()?;
    Ok(RetryPolicy {
        max_attempts,
        initial_backoff,
        max_backoff,
        backoff_multiplier,
        retryable_status_codes,
        nominal_nanos: nominal_table(
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            max_attempts,
        ),
    })
}

/// `maxAttempts` of a retry or hedging policy at `at`: an integer greater than 1, capped at
/// the client's limit.
fn max_attempts(
    policy: &Map<String, Value>,
    at: &str,
    max_attempts_limit: u32,
) -> Result<u32, ServiceConfigError> {
    let value = policy
        .get("maxAttempts")
        .ok_or_else(|| error(format!("{at}.maxAttempts"), "required"))?;
    let n = value.as_u64().filter(|n| *n > 1).ok_or_else(|| {
        error(
            format!("{at}.maxAttempts"),
            format!("expected an integer greater than 1, found `{value}`"),
        )
    })?;
    Ok(u32::try_from(n)
        .unwrap_or(u32::MAX)
        .min(max_attempts_limit.max(2)))
}

/// gRFC A6 "Validation of hedgingPolicy".
fn hedging_policy(
    value: &Value,
    at: &str,
    max_attempts_limit: u32,
) -> Result<HedgingPolicyConfig, ServiceConfigError> {
    let policy = object(value, at)?;
    let max_attempts = max_attempts(policy, at, max_attempts_limit)?;
    let hedging_delay = match policy.get("hedgingDelay") {
        Some(delay) => duration(delay, &format!("{at}.hedgingDelay"), true)?,
        None => Duration::ZERO,
    };
    let codes_at = format!("{at}.nonFatalStatusCodes");
    let non_fatal_status_codes = match policy.get("nonFatalStatusCodes") {
        None => Vec::new(),
        Some(codes) => codes
            .as_array()
            .ok_or_else(|| error(&codes_at, "expected an array of status codes"))?
            .iter()
            .enumerate()
            .map(|(i, code)| {
                GrpcCode::from_json(code).map_err(|e| error(format!("{codes_at}[{i}]"), e))
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(HedgingPolicyConfig {
        max_attempts,
        hedging_delay,
        non_fatal_status_codes,
    })
}

fn throttling(value: &Value) -> Result<RetryThrottling, ServiceConfigError> {
    let at = "retryThrottling";
    let throttling = object(value, at)?;
    let tokens = throttling
        .get("maxTokens")
        .ok_or_else(|| error("retryThrottling.maxTokens", "required"))?;
    let max_tokens = tokens
        .as_u64()
        .filter(|n| (1..=1000).contains(n))
        .ok_or_else(|| {
            error(
                "retryThrottling.maxTokens",
                format!("expected an integer from 1 to 1000, found `{tokens}`"),
            )
        })?;
    let ratio = throttling
        .get("tokenRatio")
        .ok_or_else(|| error("retryThrottling.tokenRatio", "required"))?;
    let token_ratio = ratio
        .as_f64()
        .filter(|r| *r > 0.0 && r.is_finite())
        .ok_or_else(|| {
            error(
                "retryThrottling.tokenRatio",
                format!("expected a number greater than 0, found `{ratio}`"),
            )
        })?;
    // Decimal places beyond three are ignored (0.5466 is 0.546). A success never gives back
    // more than the count holds, so a larger ratio is `maxTokens`: nothing is sized or summed
    // from a number past it.
    let token_ratio = (token_ratio.min(max_tokens as f64) * 1000.0).trunc() / 1000.0;
    if token_ratio == 0.0 {
        return Err(error(
            "retryThrottling.tokenRatio",
            format!("`{ratio}` is 0 once cut to three decimal places"),
        ));
    }
    Ok(RetryThrottling {
        max_tokens: max_tokens as u32,
        token_ratio,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy() -> Value {
        json!({
            "maxAttempts": 4,
            "initialBackoff": "0.1s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE", 8]
        })
    }

    fn with_policy(policy: Value) -> Value {
        json!({"methodConfig": [{"name": [{"service": "pkg.Svc"}], "retryPolicy": policy}]})
    }

    fn refused(config: Value) -> ServiceConfigError {
        ServiceConfig::parse(&config, DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap_err()
    }

    /// gRFC A6 "Retry Policy Capabilities": the example policy as written in the proposal.
    #[test]
    fn the_proposal_s_example_is_read() {
        let config = ServiceConfig::parse(&with_policy(policy()), 5).unwrap();
        let policy = config.retry_policy("/pkg.Svc/Get").unwrap();
        assert_eq!(policy.max_attempts, 4);
        assert_eq!(policy.initial_backoff, Duration::from_millis(100));
        assert_eq!(policy.max_backoff, Duration::from_secs(1));
        assert_eq!(policy.backoff_multiplier, 2.0);
        assert_eq!(
            policy.retryable_status_codes,
            [GrpcCode::Unavailable, GrpcCode::ResourceExhausted]
        );
        assert_eq!(config.retry_policy("/pkg.Other/Get"), None);
    }

    /// gRFC A6 "Validation of retryPolicy" rule 1: `maxAttempts` is required, an integer
    /// greater than 1; values above the client's cap (5) are the cap, not an error.
    #[test]
    fn max_attempts_above_five_is_five_and_below_two_is_refused() {
        let mut p = policy();
        p["maxAttempts"] = json!(9);
        let config = ServiceConfig::parse(&with_policy(p.clone()), 5).unwrap();
        assert_eq!(config.retry_policy("/pkg.Svc/M").unwrap().max_attempts, 5);
        for bad in [json!(1), json!(0), json!(2.5), json!("3")] {
            p["maxAttempts"] = bad;
            let e = refused(with_policy(p.clone()));
            assert_eq!(e.path, "methodConfig[0].retryPolicy.maxAttempts", "{e}");
        }
        p.as_object_mut().unwrap().remove("maxAttempts");
        assert_eq!(refused(with_policy(p)).message, "required");
    }

    /// Rule 2: the backoffs are proto3 JSON durations greater than zero.
    #[test]
    fn backoffs_are_positive_proto3_durations() {
        for (text, expected) in [
            ("1s", Duration::from_secs(1)),
            ("0.5s", Duration::from_millis(500)),
            ("2.000000001s", Duration::new(2, 1)),
        ] {
            let mut p = policy();
            p["initialBackoff"] = json!(text);
            let config = ServiceConfig::parse(&with_policy(p), 5).unwrap();
            let read = config.retry_policy("/pkg.Svc/M").unwrap().initial_backoff;
            assert_eq!(read, expected, "{text}");
        }
        for bad in [
            json!("0s"),
            json!("-1s"),
            json!("1"),
            json!("1.s"),
            json!("0.1000000001s"),
            json!(0.1),
        ] {
            let mut p = policy();
            p["maxBackoff"] = bad.clone();
            let e = refused(with_policy(p));
            assert_eq!(
                e.path, "methodConfig[0].retryPolicy.maxBackoff",
                "{bad}: {e}"
            );
        }
    }

    /// Rules 3 and 4: the multiplier is a number greater than zero; the codes a non-empty
    /// array of valid codes, each error at its index.
    #[test]
    fn multiplier_and_codes_are_validated() {
        let mut p = policy();
        p["backoffMultiplier"] = json!(0);
        assert!(refused(with_policy(p)).path.ends_with("backoffMultiplier"));
        let mut p = policy();
        p["retryableStatusCodes"] = json!([]);
        assert!(refused(with_policy(p))
            .path
            .ends_with("retryableStatusCodes"));
        let mut p = policy();
        p["retryableStatusCodes"] = json!(["UNAVAILABLE", "NOPE"]);
        let e = refused(with_policy(p));
        assert_eq!(
            e.path,
            "methodConfig[0].retryPolicy.retryableStatusCodes[1]"
        );
        assert!(e.message.contains("UNAVAILABLE"), "{e}");
    }

    /// The service config's method names: the most specific config applies (the method,
    /// else its service, else the default of an empty name); a method without its service
    /// and a method named twice are refused.
    #[test]
    fn the_most_specific_method_config_applies() {
        let mut short = policy();
        short["maxAttempts"] = json!(2);
        let config = json!({"methodConfig": [
            {"name": [{}], "retryPolicy": short},
            {"name": [{"service": "pkg.Svc"}], "retryPolicy": policy()},
            {"name": [{"service": "pkg.Svc", "method": "Write"}]}
        ]});
        let config = ServiceConfig::parse(&config, 5).unwrap();
        assert_eq!(
            config.retry_policy("/pkg.Svc/Read").unwrap().max_attempts,
            4
        );
        assert_eq!(config.retry_policy("/pkg.Svc/Write"), None);
        assert_eq!(
            config.retry_policy("/other.Svc/Read").unwrap().max_attempts,
            2
        );
        assert_eq!(config.retry_policy("pkg.Svc/Read"), None);

        let e = refused(json!({"methodConfig": [{"name": [{"method": "Get"}]}]}));
        assert_eq!(e.path, "methodConfig[0].name[0].method");
        let e = refused(json!({"methodConfig": [
            {"name": [{"service": "a.S"}]}, {"name": [{"service": "a.S"}]}
        ]}));
        assert_eq!(e.path, "methodConfig[1].name[0]");
    }

    /// gRFC A6 "Validation of retryThrottling": `maxTokens` an integer in (0, 1000],
    /// `tokenRatio` a number greater than 0 with decimal places beyond three ignored.
    #[test]
    fn throttling_is_validated_and_its_ratio_cut_to_three_places() {
        let config = json!({"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5466}});
        let throttling = ServiceConfig::parse(&config, 5)
            .unwrap()
            .throttling()
            .unwrap();
        assert_eq!(throttling.max_tokens, 10);
        assert_eq!(throttling.token_ratio, 0.546);
        for (bad, path) in [
            (
                json!({"maxTokens": 0, "tokenRatio": 0.1}),
                "retryThrottling.maxTokens",
            ),
            (
                json!({"maxTokens": 1001, "tokenRatio": 0.1}),
                "retryThrottling.maxTokens",
            ),
            (
                json!({"maxTokens": 10, "tokenRatio": 0}),
                "retryThrottling.tokenRatio",
            ),
            (
                json!({"maxTokens": 10, "tokenRatio": 0.0004}),
                "retryThrottling.tokenRatio",
            ),
            (json!({"maxTokens": 10}), "retryThrottling.tokenRatio"),
        ] {
            assert_eq!(refused(json!({"retryThrottling": bad})).path, path);
        }
    }

    fn with_hedging(policy: Value) -> Value {
        json!({"methodConfig": [{"name": [{"service": "pkg.Svc"}], "hedgingPolicy": policy}]})
    }

    /// gRFC A6 "Hedging Policy" and "Validation of hedgingPolicy": the proposal's example is
    /// read; `maxAttempts` above 5 is 5; `hedgingDelay` and `nonFatalStatusCodes` are optional,
    /// and `"0s"` is a valid delay; a method has a retry or a hedging policy, not both.
    #[test]
    fn hedging_policies_are_read_and_validated() {
        let example = json!({
            "maxAttempts": 4,
            "hedgingDelay": "0.5s",
            "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]
        });
        let config = ServiceConfig::parse(&with_hedging(example), 5).unwrap();
        let policy = config.hedging_policy("/pkg.Svc/Get").unwrap();
        assert_eq!(policy.max_attempts, 4);
        assert_eq!(policy.hedging_delay, Duration::from_millis(500));
        assert_eq!(
            policy.non_fatal_status_codes,
            [GrpcCode::Unavailable, GrpcCode::Internal, GrpcCode::Aborted]
        );
        assert!(config.hedges());
        assert_eq!(config.retry_policy("/pkg.Svc/Get"), None);
        let config = ServiceConfig::parse(&with_hedging(json!({"maxAttempts": 9})), 5).unwrap();
        let policy = config.hedging_policy("/pkg.Svc/Get").unwrap();
        assert_eq!(
            (policy.max_attempts, policy.hedging_delay),
            (5, Duration::ZERO)
        );
        assert!(policy.non_fatal_status_codes.is_empty());
        let zero = json!({"maxAttempts": 2, "hedgingDelay": "0s"});
        assert!(ServiceConfig::parse(&with_hedging(zero), 5).is_ok());
        for (bad, path) in [
            (
                json!({"maxAttempts": 1}),
                "methodConfig[0].hedgingPolicy.maxAttempts",
            ),
            (json!({}), "methodConfig[0].hedgingPolicy.maxAttempts"),
            (
                json!({"maxAttempts": 2, "hedgingDelay": "500ms"}),
                "methodConfig[0].hedgingPolicy.hedgingDelay",
            ),
            (
                json!({"maxAttempts": 2, "nonFatalStatusCodes": ["NOT_A_CODE"]}),
                "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]",
            ),
        ] {
            assert_eq!(refused(with_hedging(bad)).path, path);
        }
        let retry = self::policy();
        let both = json!({"methodConfig": [{
            "name": [{"service": "pkg.Svc"}],
            "retryPolicy": retry,
            "hedgingPolicy": {"maxAttempts": 2}
        }]});
        let e = refused(both);
        assert_eq!(e.path, "methodConfig[0].hedgingPolicy");
        assert!(e.message.contains("only one of"), "{e}");
    }
}
