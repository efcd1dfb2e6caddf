//! The `aws` built-in's parameters, read and checked: the AWS SDKs' standard retry mode with
//! the settings the SDKs take (`max_attempts`, the backoffs, the retry behaviour version and the
//! quota), each defaulting to the SDKs' value.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::params::read;
use crate::field_error::FieldError;
use crate::strategy::{AwsRetry, AwsRetryBehavior};

/// The `aws` built-in's parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AwsParams {
    #[serde(default)]
    behavior: AwsRetryBehavior,
    #[serde(
        default = "max_attempts",
        deserialize_with = "crate::ranges::within::<_, _, 1, 100>"
    )]
    max_attempts: u32,
    #[serde(
        default = "initial_backoff_ms",
        deserialize_with = "crate::ranges::within::<_, _, 0, 86_400_000>"
    )]
    initial_backoff_ms: u64,
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 0, 86_400_000>"
    )]
    non_throttling_initial_backoff_ms: Option<u64>,
    #[serde(
        default = "max_backoff_ms",
        deserialize_with = "crate::ranges::within::<_, _, 0, 86_400_000>"
    )]
    max_backoff_ms: u64,
    #[serde(
        default = "quota",
        deserialize_with = "crate::ranges::within::<_, _, 0, 500_000_000>"
    )]
    quota: u32,
}

fn max_attempts() -> u32 {
    3
}

fn initial_backoff_ms() -> u64 {
    1000
}

fn max_backoff_ms() -> u64 {
    20_000
}

fn quota() -> u32 {
    AwsRetry::DEFAULT_QUOTA
}

/// The `aws` built-in from its parameters.
pub(super) fn aws_policy(params: &Map<String, Value>) -> Result<AwsRetry, FieldError> {
    let p: AwsParams = read(params)?;
    let behavior = p.behavior;
    let defaults = AwsRetry::new(behavior);
    // Without its own value: 2.0 backs off every error from `initial_backoff_ms`, 2.1 other
    // errors than throttling from 50 ms (smithy-rs `RetrySpec`).
    let other = match (p.non_throttling_initial_backoff_ms, behavior) {
        (Some(ms), _) => Duration::from_millis(ms),
        (None, AwsRetryBehavior::V2_1) => Duration::from_millis(50),
        (None, _) => Duration::from_millis(p.initial_backoff_ms),
    };
    Ok(defaults
        .max_attempts(p.max_attempts)
        .backoff(
            Duration::from_millis(p.initial_backoff_ms),
            other,
            Duration::from_millis(p.max_backoff_ms),
        )
        .quota(p.quota))
}
