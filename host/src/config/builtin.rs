//! The built-in native strategies a policy may name instead of a component, and their
//! parameters: read from a policy's `params` (TOML in the registry's configuration, JSON in a
//! decision request), validated (unknown names and out-of-range values are refused with the
//! parameter they concern), defaulting to exactly the references' values.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::action::NodeChoice;
use crate::backoff::{ExponentialBackoff, ExponentialBackoffConfig};
use crate::field_error::FieldError;
use crate::reason::ReasonKind;
use crate::strategy::cassandra::{
    Cassandra, ConsistencyDowngradingRetryPolicy, DefaultRetryPolicy,
};
use crate::strategy::{
    AwsRetry, BestEffort, ExponentialRetry, FailFast, FastFailOnTerminalError, GrpcRetry, HttpRetry,
};
use crate::RetryStrategy;

use super::aws_builtin::aws_policy;
use super::params::{backoff, read};
use super::protocol_builtins::{grpc_policy, http_policy};

pub use super::protocol_builtins::MAX_ATTEMPTS_LIMIT;

/// A built-in native strategy a policy may name instead of a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Builtin {
    /// [`BestEffort`](crate::BestEffort) with an exponential backoff (parameters `min_ms`,
    /// `max_ms`, `factor`, `jitter`; reference 001's 1 ms, 500 ms, 2, none by default).
    BestEffort,
    /// [`FailFast`](crate::FailFast): never retries (no parameters).
    FailFast,
    /// [`FastFailOnTerminalError`](crate::FastFailOnTerminalError): best effort's parameters
    /// and `terminal`, the terminal reasons it fails at once (all five by default).
    FastFailOnTerminalError,
    /// The Cassandra driver's `DefaultRetryPolicy` (parameter `max_retries`, the driver's 1 by
    /// default).
    CassandraDefault,
    /// The Cassandra driver's `ConsistencyDowngradingRetryPolicy` (parameter `max_retries`).
    CassandraDowngradingConsistency,
    /// [`ExponentialRetry`](crate::ExponentialRetry), declared like gRPC's `retryPolicy`:
    /// `max_attempts`, `initial_ms`, `max_ms`, `multiplier` (all four required), `jitter`,
    /// `retry_on`, `never_on` (reason names), `node` (`same` or `next`) and
    /// `attempt_timeout_ms` (none).
    Exponential,
    /// [`GrpcRetry`](crate::GrpcRetry): gRFC A6's retry policy, from `service_config` (a gRPC
    /// service config, as a JSON object or its text; required) and `max_attempts_limit` (the
    /// client's cap on `maxAttempts`, 5 by default, at most [`MAX_ATTEMPTS_LIMIT`]).
    Grpc,
    /// [`HttpRetry`](crate::HttpRetry): RFC 9110's idempotent retries, with `max_attempts` (3),
    /// `initial_ms` (100), `max_ms` (5000), `multiplier` (2), `statuses` (408, 429, 500,
    /// 502, 503, 504), `attempt_timeout_ms` (none), `respect_retry_after` (true) and
    /// `retry_after_max_ms` (21 600 000).
    Http,
    /// [`AwsRetry`](crate::AwsRetry): the AWS SDKs' standard retry mode, with `behavior`
    /// (`"2.0"`, the default, or `"2.1"`), `max_attempts` (3), `initial_backoff_ms` (1000),
    /// `non_throttling_initial_backoff_ms` (2.0: `initial_backoff_ms`; 2.1: 50),
    /// `max_backoff_ms` (20 000) and `quota` (500 tokens).
    Aws,
}

impl Builtin {
    /// Every built-in.
    pub const ALL: [Builtin; 9] = [
        Builtin::BestEffort,
        Builtin::FailFast,
        Builtin::FastFailOnTerminalError,
        Builtin::CassandraDefault,
        Builtin::CassandraDowngradingConsistency,
        Builtin::Exponential,
        Builtin::Grpc,
        Builtin::Http,
        Builtin::Aws,
    ];

    /// The name used in the configuration.
    pub const fn name(self) -> &'static str {
        match self {
            Builtin::BestEffort => "best-effort",
            Builtin::FailFast => "fail-fast",
            Builtin::FastFailOnTerminalError => "fast-fail-on-terminal-error",
            Builtin::CassandraDefault => "cassandra-default",
            Builtin::CassandraDowngradingConsistency => "cassandra-downgrading-consistency",
            Builtin::Exponential => "exponential",
            Builtin::Grpc => "grpc",
            Builtin::Http => "http",
            Builtin::Aws => "aws",
        }
    }

    /// The built-in called `name` in the configuration.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// A built-in with its validated parameters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BuiltinPolicy {
    /// Best effort with this backoff.
    BestEffort(ExponentialBackoff),
    /// Fail fast.
    FailFast,
    /// Fast fail on these terminal reasons, best effort with this backoff otherwise.
    FastFailOnTerminalError {
        /// The best-effort fallback's backoff.
        backoff: ExponentialBackoff,
        /// The terminal reasons failed at once.
        terminal: Vec<ReasonKind>,
    },
    /// The driver's default policy with at most this many counted retries.
    CassandraDefault {
        /// Retries its verdicts may grant.
        max_retries: u32,
    },
    /// The driver's downgrading policy with at most this many counted retries.
    CassandraDowngradingConsistency {
        /// Retries its verdicts may grant.
        max_retries: u32,
    },
    /// The declarative exponential strategy.
    Exponential(ExponentialRetry),
    /// gRFC A6's retry policy from a service config.
    Grpc(GrpcRetry),
    /// RFC 9110's idempotent retries.
    Http(HttpRetry),
    /// The AWS SDKs' standard retry mode.
    Aws(AwsRetry),
}

const TERMINAL_REASONS: [ReasonKind; 5] =
    FastFailOnTerminalError::<ExponentialBackoff>::TERMINAL_REASONS;

/// Fast fail's `terminal`: a list of some of the five terminal reasons.
fn terminal_reasons(names: Value) -> Result<Vec<ReasonKind>, FieldError> {
    let names: Vec<String> = serde_json::from_value(names).map_err(|e| {
        FieldError::new("terminal", format!("{e}; expected a list of reason names"))
    })?;
    let kinds = reasons(&names, "terminal")?;
    match kinds.iter().find(|k| !TERMINAL_REASONS.contains(k)) {
        Some(other) => Err(FieldError::new(
            "terminal",
            format!(
                "{} is not a terminal reason; expected some of {}",
                other.name(),
                TERMINAL_REASONS.map(ReasonKind::name).join(", ")
            ),
        )),
        None => Ok(kinds),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CassandraParams {
    #[serde(
        default = "driver_max_retries",
        deserialize_with = "crate::ranges::within::<_, _, 0, 100>"
    )]
    max_retries: u32,
}

/// Reference 003 "Behavior": "a maximum of one retry".
fn driver_max_retries() -> u32 {
    1
}

/// gRPC's `retryPolicy` fields, in milliseconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExponentialParams {
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 100>")]
    max_attempts: u32,
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 86_400_000>")]
    initial_ms: u64,
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 86_400_000>")]
    max_ms: u64,
    multiplier: f64,
    #[serde(default)]
    jitter: f64,
    #[serde(default)]
    retry_on: Vec<String>,
    #[serde(default)]
    never_on: Vec<String>,
    #[serde(default)]
    node: NodeChoice,
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 1, 86_400_000>"
    )]
    attempt_timeout_ms: Option<u64>,
}

/// The reason kinds named in `names`, checked against the reason table.
fn reasons(names: &[String], param: &str) -> Result<Vec<ReasonKind>, FieldError> {
    names
        .iter()
        .map(|name| {
            ReasonKind::from_name(name).ok_or_else(|| {
                FieldError::new(
                    param,
                    format!("`{name}` is not a retry reason; expected a name of the reason table, e.g. KV_LOCKED"),
                )
            })
        })
        .collect()
}

impl BuiltinPolicy {
    /// `builtin` with `params` (empty: the references' defaults).
    pub fn new(builtin: Builtin, params: &Map<String, Value>) -> Result<Self, FieldError> {
        const BACKOFF: [&str; 4] = ["min_ms", "max_ms", "factor", "jitter"];
        Ok(match builtin {
            Builtin::BestEffort => {
                let p: ExponentialBackoffConfig = read(params)?;
                BuiltinPolicy::BestEffort(backoff(
                    (p.min_ms, p.max_ms, p.factor, p.jitter),
                    BACKOFF,
                )?)
            }
            Builtin::FailFast => {
                if let Some(name) = params.keys().next() {
                    return Err(FieldError::new(
                        name.as_str(),
                        "unknown parameter; fail-fast takes none",
                    ));
                }
                BuiltinPolicy::FailFast
            }
            Builtin::FastFailOnTerminalError => {
                let mut rest = params.clone();
                let terminal = match rest.remove("terminal") {
                    None => TERMINAL_REASONS.to_vec(),
                    Some(names) => terminal_reasons(names)?,
                };
                let p: ExponentialBackoffConfig = read(&rest)?;
                BuiltinPolicy::FastFailOnTerminalError {
                    backoff: backoff((p.min_ms, p.max_ms, p.factor, p.jitter), BACKOFF)?,
                    terminal,
                }
            }
            Builtin::CassandraDefault => BuiltinPolicy::CassandraDefault {
                max_retries: read::<CassandraParams>(params)?.max_retries,
            },
            Builtin::CassandraDowngradingConsistency => {
                BuiltinPolicy::CassandraDowngradingConsistency {
                    max_retries: read::<CassandraParams>(params)?.max_retries,
                }
            }
            Builtin::Exponential => {
                let p: ExponentialParams = read(params)?;
                if p.max_attempts < 1 {
                    return Err(FieldError::new(
                        "max_attempts",
                        "expected at least 1 (the first attempt counts)",
                    ));
                }
                let backoff = backoff(
                    (p.initial_ms, p.max_ms, p.multiplier, p.jitter),
                    ["initial_ms", "max_ms", "multiplier", "jitter"],
                )?;
                let retry_on = reasons(&p.retry_on, "retry_on")?;
                let never_on = reasons(&p.never_on, "never_on")?;
                if let Some(both) = retry_on.iter().find(|k| never_on.contains(k)) {
                    return Err(FieldError::new(
                        "never_on",
                        format!("{} is in both retry_on and never_on", both.name()),
                    ));
                }
                let strategy = ExponentialRetry::new(p.max_attempts, backoff)
                    .retry_on(retry_on)
                    .never_on(never_on)
                    .on_node(p.node);
                BuiltinPolicy::Exponential(match p.attempt_timeout_ms {
                    Some(ms) => strategy.attempt_timeout(Duration::from_millis(ms)),
                    None => strategy,
                })
            }
            Builtin::Grpc => BuiltinPolicy::Grpc(grpc_policy(params)?),
            Builtin::Http => BuiltinPolicy::Http(http_policy(params)?),
            Builtin::Aws => BuiltinPolicy::Aws(aws_policy(params)?),
        })
    }

    /// What in its parameters is accepted but cannot act, each as the parameter's path and why:
    /// a `grpc` built-in's `perAttemptRecvTimeout` not shorter than its method's `timeout`.
    pub fn warnings(&self) -> Vec<FieldError> {
        match self {
            BuiltinPolicy::Grpc(grpc) => (grpc.config().never_firing_attempt_timeouts().iter())
                .map(|path| {
                    FieldError::new(
                        format!("service_config.{path}"),
                        "not shorter than the method config's timeout (the call's deadline): it can never fire",
                    )
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Which built-in this is.
    pub fn builtin(&self) -> Builtin {
        match self {
            BuiltinPolicy::BestEffort(_) => Builtin::BestEffort,
            BuiltinPolicy::FailFast => Builtin::FailFast,
            BuiltinPolicy::FastFailOnTerminalError { .. } => Builtin::FastFailOnTerminalError,
            BuiltinPolicy::CassandraDefault { .. } => Builtin::CassandraDefault,
            BuiltinPolicy::CassandraDowngradingConsistency { .. } => {
                Builtin::CassandraDowngradingConsistency
            }
            BuiltinPolicy::Exponential(_) => Builtin::Exponential,
            BuiltinPolicy::Grpc(_) => Builtin::Grpc,
            BuiltinPolicy::Http(_) => Builtin::Http,
            BuiltinPolicy::Aws(_) => Builtin::Aws,
        }
    }

    /// Its version as answers show it: `builtin:NAME` with the references' parameters,
    /// followed by `+` and the start of a digest of its parameters when they differ, so that
    /// answers tell tuned versions apart.
    pub fn version(&self) -> String {
        let kind = self.builtin();
        let name = kind.name();
        match BuiltinPolicy::new(kind, &Map::new()) {
            Ok(defaults) if defaults == *self => format!("builtin:{name}"),
            _ => {
                let digest = Sha256::digest(format!("{self:?}").as_bytes());
                format!("builtin:{name}+{}", hex::encode(&digest[..4]))
            }
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> Arc<dyn RetryStrategy> {
        match self {
            BuiltinPolicy::BestEffort(backoff) => Arc::new(BestEffort::with_calculator(*backoff)),
            BuiltinPolicy::FailFast => Arc::new(FailFast),
            BuiltinPolicy::FastFailOnTerminalError { backoff, terminal } => Arc::new(
                FastFailOnTerminalError::with_calculator(*backoff).only(terminal.iter().copied()),
            ),
            BuiltinPolicy::CassandraDefault { max_retries } => {
                Arc::new(Cassandra::new(DefaultRetryPolicy).with_max_retries(*max_retries))
            }
            BuiltinPolicy::CassandraDowngradingConsistency { max_retries } => Arc::new(
                Cassandra::new(ConsistencyDowngradingRetryPolicy).with_max_retries(*max_retries),
            ),
            BuiltinPolicy::Exponential(strategy) => Arc::new(strategy.clone()),
            BuiltinPolicy::Grpc(strategy) => Arc::new(strategy.clone()),
            BuiltinPolicy::Http(strategy) => Arc::new(strategy.clone()),
            BuiltinPolicy::Aws(strategy) => Arc::new(strategy.clone()),
        }
    }
}
