//! The retry part of a gRPC service config, as users write it (gRFC A6 "Configuration
//! Language" and "Integration with Service Config"): `methodConfig` entries naming methods
//! (`name: [{service, method}]`) with a `retryPolicy` or a `hedgingPolicy`, and
//! `retryThrottling`. Validated by A6's rules ("Validation of retryPolicy", "Validation of
//! hedgingPolicy", "Validation of retryThrottling"); an error names the field's path and what
//! was expected. Fields unrelated to retries (`timeout`,
//! `waitForReady`, `loadBalancingConfig`, ...) are accepted and not read.

use std::time::Duration;

use serde_json::Value;

use super::status::GrpcCode;
use crate::field_error::FieldError;
use fields::{hedging_policy, names, object, retry_policy, throttling};

mod fields;

/// The client-side cap on `maxAttempts` (gRFC A6 "Limits on Retries and Hedges": 5 unless
/// the client changes it).
pub const DEFAULT_MAX_ATTEMPTS_LIMIT: u32 = 5;

/// Retries whose nominal delay is worked out when the service config is read; later ones
/// (only a client cap above it allows them) are worked out when asked, so nothing read from a
/// service config is sized by its numbers.
const NOMINAL_TABLE_LEN: u32 = 64;

fn error(path: impl Into<String>, message: impl Into<String>) -> FieldError {
    FieldError::new(path, message)
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
    /// The statuses retried (empty only with a `per_attempt_recv_timeout`, as grpc-java's
    /// `ManagedChannelServiceConfig` allows: the policy then retries attempt timeouts only).
    pub retryable_status_codes: Vec<GrpcCode>,
    /// `perAttemptRecvTimeout`: how long an attempt may wait for its response before it is
    /// cut and retried under this policy, whatever `retryable_status_codes` lists.
    pub per_attempt_recv_timeout: Option<Duration>,
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
    /// The `perAttemptRecvTimeout`s not shorter than their method config's `timeout`: they can
    /// never fire, each by its field's path.
    never_firing: Vec<String>,
}

impl ServiceConfig {
    /// Reads and validates `config` (a service config's JSON object), capping `maxAttempts`
    /// at `max_attempts_limit` as a client does.
    pub fn parse(config: &Value, max_attempts_limit: u32) -> Result<Self, FieldError> {
        let root = object(config, "")?;
        let mut policies = Vec::new();
        let mut seen: Vec<(MethodName, usize)> = Vec::new();
        let mut never_firing = Vec::new();
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
                    (Some(policy), None) => {
                        let policy =
                            retry_policy(policy, &format!("{at}.retryPolicy"), max_attempts_limit)?;
                        if never_fires(&policy, entry) {
                            never_firing.push(format!("{at}.retryPolicy.perAttemptRecvTimeout"));
                        }
                        Some(MethodPolicy::Retry(policy))
                    }
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
            never_firing,
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

    /// The paths of the `perAttemptRecvTimeout`s that can never fire: not shorter than their
    /// method config's `timeout`, the call's deadline.
    pub fn never_firing_attempt_timeouts(&self) -> &[String] {
        &self.never_firing
    }

    /// Whether some method config's retry policy has a `perAttemptRecvTimeout`.
    pub fn times_attempts(&self) -> bool {
        (self.policies.iter()).any(|policy| {
            matches!(policy, Some(MethodPolicy::Retry(retry)) if retry.per_attempt_recv_timeout.is_some())
        })
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

/// Whether `policy`'s `perAttemptRecvTimeout` is not shorter than the `timeout` of its method
/// config `entry` (a `timeout` that is not a duration is not read here, as before).
fn never_fires(policy: &RetryPolicy, entry: &serde_json::Map<String, Value>) -> bool {
    let deadline = (entry.get("timeout")).and_then(|t| super::proto_json::duration(t, false).ok());
    matches!((policy.per_attempt_recv_timeout, deadline), (Some(attempt), Some(deadline)) if attempt >= deadline)
}

/// `/package.Service/Method` as its service and method; `None` if it is not of that form.
pub fn split_full_method(full_method: &str) -> Option<(&str, &str)> {
    let (service, method) = full_method.strip_prefix('/')?.split_once('/')?;
    (!service.is_empty() && !method.is_empty() && !method.contains('/'))
        .then_some((service, method))
}

#[cfg(test)]
mod tests;
