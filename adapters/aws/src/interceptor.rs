//! The SDK's retry loop, decided by Rebound: an interceptor follows each operation as one
//! Rebound request (its idempotence, retries, deadline and controls), and after every failed
//! attempt the SDK classifies asks the decider; its answer is written into the operation's
//! configuration as the SDK's own retry settings, so the SDK's standard retry strategy sends
//! the next attempt after exactly the decided delay, or stops.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_smithy_runtime::client::retries::TokenBucket;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextMut, BeforeTransmitInterceptorContextRef,
    FinalizerInterceptorContextMut,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::retries::RequestAttempts;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use aws_smithy_types::retry::{RetryConfig, RetrySpec};
use futures_util::FutureExt;
use rebound::{
    Cause, Decider, HttpMethod, Outcome, PolicyControls, Progress, Pushback, Request, RequestType,
    RetryLoop, RetryReason, Step,
};

use crate::verdict::{sdk_verdict, KeepDecidedDelay};
use rebound::aws_error::AwsError;

/// How long an operation may take, retries included, when the SDK's configuration sets no
/// operation timeout: what [`ReboundRetry::timeout`] sets by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The SDK interceptor that makes a Rebound decider (a policy registry or an orchestrator)
/// decide the retries of a service client; add it with the client configuration's
/// `interceptor`, and [`classifier`](Self::classifier) with its `retry_classifier`.
///
/// Each operation is one Rebound request: an HTTP request whose method the SDK chose, to the
/// endpoint's authority, on the route `Service.Operation`, idempotent when its method is (RFC
/// 9110: S3's `GetObject` is a GET) or when it is declared so with
/// [`idempotent`](Self::idempotent) (DynamoDB's operations are all POSTs). A failure the SDK's
/// classifiers call retryable reaches the decider as `AWS_THROTTLING` or `AWS_TRANSIENT`, with
/// the server's `x-amz-retry-after` as pushback; every other failure is not retried, as in
/// the SDK. The SDK's own retry quota is not spent: the policy's quota (the `aws` built-in's)
/// and controls decide.
pub struct ReboundRetry<D> {
    decider: Arc<D>,
    settings: Arc<Settings>,
    /// The next operation's request id, shared by the clones in every client.
    next_id: Arc<AtomicU64>,
}

/// What a [`ReboundRetry`] makes of each operation.
#[derive(Debug, Clone)]
struct Settings {
    policy: Option<Arc<str>>,
    timeout: Duration,
    idempotent: HashSet<String>,
}

impl<D> Clone for ReboundRetry<D> {
    fn clone(&self) -> Self {
        ReboundRetry {
            decider: Arc::clone(&self.decider),
            settings: Arc::clone(&self.settings),
            next_id: Arc::clone(&self.next_id),
        }
    }
}

impl<D> fmt::Debug for ReboundRetry<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReboundRetry")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<D: Decider + 'static> ReboundRetry<D> {
    /// Decides with `decider`: its route for the request, or its default policy.
    pub fn new(decider: D) -> Self {
        ReboundRetry {
            decider: Arc::new(decider),
            settings: Arc::new(Settings {
                policy: None,
                timeout: DEFAULT_TIMEOUT,
                idempotent: HashSet::new(),
            }),
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// This one, with its settings changed by `change` (a clone keeps its own).
    fn with(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        change(Arc::make_mut(&mut self.settings));
        self
    }

    /// Decides with the registry's policy `name` (the request names it).
    pub fn policy(self, name: &str) -> Self {
        let name: Arc<str> = name.into();
        self.with(|settings| settings.policy = Some(name))
    }

    /// Gives each operation `timeout` in all, retries included, when the SDK's configuration
    /// sets no operation timeout ([`DEFAULT_TIMEOUT`] by default).
    pub fn timeout(self, timeout: Duration) -> Self {
        self.with(|settings| settings.timeout = timeout.max(Duration::from_millis(1)))
    }

    /// Declares `operations` idempotent: each is an operation's name (`GetItem`) or a
    /// service's and operation's (`DynamoDB.PutItem`), as the SDK's operation metadata names
    /// them. Only a declared operation whose method is not idempotent may be retried after a
    /// failure that may have been applied (`AWS_TRANSIENT`).
    pub fn idempotent<S: Into<String>>(self, operations: impl IntoIterator<Item = S>) -> Self {
        let operations: Vec<String> = operations.into_iter().map(Into::into).collect();
        self.with(|settings| settings.idempotent.extend(operations))
    }

    /// The retry classifier to add beside the interceptor: it makes the SDK wait the delay
    /// Rebound decided, not the server's `x-amz-retry-after` (which the decision took into
    /// account already).
    pub fn classifier(&self) -> KeepDecidedDelay {
        KeepDecidedDelay
    }
}

/// One operation as Rebound follows it, kept in the operation's configuration bag.
#[derive(Debug)]
struct Call {
    started: Instant,
    attempt_started: Instant,
    retry: Option<(RetryLoop, PolicyControls)>,
}

impl Storable for Call {
    type Storer = StoreReplace<Call>;
}

impl<D: Decider> ReboundRetry<D> {
    /// The Rebound request for the operation whose first attempt `ctx` is about to send.
    fn request(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        cfg: &ConfigBag,
        started: Instant,
    ) -> Request {
        let settings = &self.settings;
        let sent = ctx.request();
        let timeout = (cfg.load::<aws_smithy_types::timeout::TimeoutConfig>())
            .and_then(|t| t.operation_timeout())
            .unwrap_or(settings.timeout);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = Request::new_at(id, RequestType::Http, timeout, started)
            .unwrap_or_else(|_| unreachable!("the timeout is at least 1 ms"));
        if let Some(method) = method(sent.method()) {
            request = request.with_method(method);
        }
        if let Some(authority) = sent
            .uri()
            .parse::<http::Uri>()
            .ok()
            .and_then(|u| u.authority().map(|a| a.to_string()))
        {
            request = request.with_authority(authority);
        }
        if let Some(metadata) = cfg.load::<Metadata>() {
            let route = format!("{}.{}", metadata.service(), metadata.name());
            if settings.idempotent.contains(metadata.name()) || settings.idempotent.contains(&route)
            {
                request = request.with_idempotent(true);
            }
            request = request.with_route(route);
        }
        match &settings.policy {
            Some(policy) => request.with_policy(Arc::clone(policy)),
            None => request,
        }
    }
}

/// Rebound's method for the SDK's.
fn method(method: &str) -> Option<HttpMethod> {
    Some(match method {
        "GET" => HttpMethod::Get,
        "HEAD" => HttpMethod::Head,
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "DELETE" => HttpMethod::Delete,
        "PATCH" => HttpMethod::Patch,
        "OPTIONS" => HttpMethod::Options,
        _ => return None,
    })
}

/// The SDK's retry settings that carry out `step` after attempt `attempts`: one more attempt
/// after exactly the decided delay, or none. The retry spec keeps the SDK's arithmetic to
/// `min(delay × 2^(attempts-1), delay) × 1`, whatever the error's kind.
fn carried_out(step: Option<Duration>, attempts: u32) -> RetryConfig {
    let Some(delay) = step else {
        return RetryConfig::standard().with_max_attempts(attempts.max(1));
    };
    RetryConfig::standard()
        .with_max_attempts(attempts.saturating_add(1))
        .with_initial_backoff(delay)
        .with_max_backoff(delay)
        .with_use_static_exponential_base(true)
        .with_retry_spec(RetrySpec::v2_0().with_non_throttling_initial_backoff(delay))
}

impl<D: Decider + 'static> Intercept for ReboundRetry<D> {
    fn name(&self) -> &'static str {
        "rebound"
    }

    fn modify_before_retry_loop(
        &self,
        _ctx: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let now = Instant::now();
        let state = cfg.interceptor_state();
        state.store_put(Call {
            started: now,
            attempt_started: now,
            retry: None,
        });
        // The SDK's own quota is not spent: the policy's controls decide what a retry costs.
        state.store_put(TokenBucket::unlimited());
        Ok(())
    }

    fn read_before_transmit(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(call) = cfg.get_mut_from_interceptor_state::<Call>() else {
            return Ok(());
        };
        call.attempt_started = Instant::now();
        if call.retry.is_none() {
            let started = call.started;
            let request = self.request(ctx, cfg, started);
            let controls = self.decider.controls(&request);
            if let Some(call) = cfg.get_mut_from_interceptor_state::<Call>() {
                call.retry = Some((RetryLoop::new(request), controls));
            }
        }
        Ok(())
    }

    fn modify_before_attempt_completion(
        &self,
        ctx: &mut FinalizerInterceptorContextMut<'_>,
        components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let attempts = cfg.load::<RequestAttempts>().map_or(1, |a| a.attempts());
        let ended = match ctx.inner().is_failed() {
            true => Ended::Failed(sdk_verdict(ctx.inner(), components)),
            false => Ended::Succeeded,
        };
        let answered = ctx.inner().response().is_some();
        let Some(call) = cfg.get_mut_from_interceptor_state::<Call>() else {
            return Ok(());
        };
        if let Some(decided) = self.settle(call, ended, answered, attempts) {
            cfg.interceptor_state()
                .store_put(carried_out(decided, attempts));
        }
        Ok(())
    }
}

/// How an attempt ended: with a value, or failed with the SDK's verdict.
enum Ended {
    Succeeded,
    Failed(Option<(AwsError, Option<Duration>)>),
}

impl<D: Decider> ReboundRetry<D> {
    /// What comes after attempt `attempts` of `call`, which `ended` so (`answered`: a response
    /// came): `None` after a success, else the retry's delay, or `None` inside for no retry. A
    /// failure before the first attempt was sent (an endpoint, an identity, a signature) is
    /// not retried.
    fn settle(
        &self,
        call: &mut Call,
        ended: Ended,
        answered: bool,
        attempts: u32,
    ) -> Option<Option<Duration>> {
        let attempt_started = call.attempt_started;
        let Some((retry, controls)) = call.retry.as_mut() else {
            return matches!(ended, Ended::Failed(_)).then_some(None);
        };
        let now = Instant::now();
        if answered {
            controls.attempt_answered(retry.request(), now.duration_since(attempt_started));
        }
        let decided = match ended {
            Ended::Succeeded => {
                retry.succeeded();
                controls.report(retry.request(), Outcome::Succeeded { attempts }, now);
                return None;
            }
            Ended::Failed(None) => None,
            Ended::Failed(Some((error, retry_after))) => {
                retry.sent();
                let cause = Cause::Reason(RetryReason::Aws(error));
                let pushback = retry_after.map(Pushback::After);
                let progress = Progress::Processed;
                let failed = retry.failed(self.decider.as_ref(), cause, pushback, progress, now);
                match failed.now_or_never() {
                    Some(Ok(Step::Retry { delay, .. })) => Some(delay),
                    Some(Ok(Step::End(_))) => None,
                    Some(Err(error)) => {
                        tracing::warn!(%error, "no policy decides for the operation: not retried");
                        None
                    }
                    None => {
                        tracing::error!("the policy did not decide at once (the SDK's retry loop cannot wait): not retried");
                        None
                    }
                }
            }
        };
        if decided.is_none() {
            let outcome = match retry.request().remaining_at(now).is_zero() {
                true => Outcome::TimedOut { attempts },
                false => Outcome::Failed { attempts },
            };
            controls.report(retry.request(), outcome, now);
        }
        Some(decided)
    }
}
