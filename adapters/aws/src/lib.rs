//! Rebound's policies deciding the AWS SDK for Rust's retries. The SDK decides retries with its
//! own standard strategy (a token-bucket quota, exponential backoff, its classifiers); a team
//! that runs Rebound wants one policy for every client, with the guard that keeps a write from
//! being applied twice, budgets and throttles shared with its other traffic, and policies it can
//! swap while serving. [`ReboundRetry`] makes a policy registry (or an orchestrator) decide
//! every retry of an SDK client, the SDK still classifying what failed; the `aws` built-in
//! decides as the SDK's standard mode does, and [`AwsRetrySettings`] reads the SDK's retry
//! settings (`AWS_MAX_ATTEMPTS`, `AWS_RETRY_MODE`, profiles) into that built-in's parameters.
//! docs/aws.md is the guide.

mod interceptor;
mod settings;
mod verdict;

pub use interceptor::{ReboundRetry, DEFAULT_TIMEOUT};
pub use settings::{AwsRetrySettings, SettingsError};
pub use verdict::KeepDecidedDelay;

/// docs/aws.md's Rust code, compiled as a reader would paste it.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct AwsGuide;

/// The library this adapter was built with: its registry and the request's vocabulary,
/// without adding a dependency (and its default features) of one's own.
pub use rebound;
