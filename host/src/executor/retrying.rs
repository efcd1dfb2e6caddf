//! "Retry this async call" in one line: `executor.retry(|| call()).idempotent().await`, for an
//! operation that is not a request to a service Rebound knows. Without a [`Request`] to build,
//! the call is a plain request with no method, so it is not idempotent unless declared, and
//! every error is a failure that may have reached the server (`SOCKET_CLOSED_WHILE_IN_FLIGHT`)
//! unless [`when`](Retrying::when) or [`reason`](Retrying::reason) says otherwise: the
//! orchestrator's guard never sends again a call that was not declared idempotent.

use std::fmt::Debug;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::{ExecuteError, Executor, Failure};
use crate::decider::Decider;
use crate::reason::{reasons, RetryReason};
use crate::request::{Request, RequestType};

/// A call to retry, as [`Executor::retry`] makes it; `.await` runs it. `R` says why an error
/// happened.
#[must_use = "a call is made only when awaited"]
pub struct Retrying<'a, D, F, R> {
    executor: &'a Executor<D>,
    operation: F,
    reason: R,
    id: u64,
    timeout: Duration,
    idempotent: bool,
    policy: Option<Arc<str>>,
}

impl<D, F, R> Debug for Retrying<'_, D, F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retrying")
            .field("id", &self.id)
            .field("timeout", &self.timeout)
            .field("idempotent", &self.idempotent)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Why an error happened: its reason, or `None` when it is not retried.
pub type ReasonOf<E> = fn(&E) -> Option<RetryReason>;

/// The reason of every error by default: it may have reached the server.
fn in_flight<E>(_: &E) -> Option<RetryReason> {
    Some(reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT)
}

impl<D: Decider> Executor<D> {
    /// The call `operation` makes, retried as this executor's decider says (see
    /// [`Retrying`]): 30 s to succeed, not idempotent, every error retryable as far as the
    /// guard allows, until `.idempotent()`, `.timeout(…)`, `.when(…)` say otherwise.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use rebound::executor::Executor;
    /// use rebound::Orchestrator;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let executor = Executor::new(Arc::new(Orchestrator::default()));
    /// let mut calls = 0;
    /// let answer = executor
    ///     .retry(|| {
    ///         calls += 1;
    ///         let fails = calls < 3;
    ///         async move { if fails { Err("busy") } else { Ok(42) } }
    ///     })
    ///     .idempotent()
    ///     .timeout(Duration::from_secs(5))
    ///     .when(|error: &&str| *error == "busy")
    ///     .await;
    /// assert_eq!(answer.unwrap(), 42);
    /// # }
    /// ```
    pub fn retry<F, Fut, T, E>(&self, operation: F) -> Retrying<'_, D, F, ReasonOf<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        Retrying {
            executor: self,
            operation,
            reason: in_flight::<E>,
            id: 0,
            timeout: Retrying::<D, F, ()>::DEFAULT_TIMEOUT,
            idempotent: false,
            policy: None,
        }
    }
}

impl<'a, D, F, R> Retrying<'a, D, F, R> {
    /// The time a call has to succeed, its retries included, unless given.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// The call may be made more than once with the effect of once: its failures may be
    /// retried whatever their reason.
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// The time the call has to succeed, its retries included (zero is ignored).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.timeout = timeout;
        }
        self
    }

    /// Decides with the registry's policy `name` (a decider that routes by name).
    pub fn policy(mut self, name: impl Into<Arc<str>>) -> Self {
        self.policy = Some(name.into());
        self
    }

    /// The id the call's request has in logs and error contexts (0 unless given).
    pub fn id(mut self, id: u64) -> Self {
        self.id = id;
        self
    }

    /// Retries only the errors `retryable` accepts; the others are handed back at once.
    pub fn when<E>(
        self,
        retryable: impl Fn(&E) -> bool + Send + Sync,
    ) -> Retrying<'a, D, F, impl Fn(&E) -> Option<RetryReason> + Send + Sync> {
        self.reason(move |error: &E| {
            retryable(error).then_some(reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT)
        })
    }

    /// Says why each error happened (`None`: not retried), so the policy decides by reason: a
    /// connection refused (`SOCKET_NOT_AVAILABLE`) may be retried even for a call that is not
    /// idempotent, since nothing was sent.
    pub fn reason<E, R2>(self, reason: R2) -> Retrying<'a, D, F, R2>
    where
        R2: Fn(&E) -> Option<RetryReason>,
    {
        Retrying {
            executor: self.executor,
            operation: self.operation,
            reason,
            id: self.id,
            timeout: self.timeout,
            idempotent: self.idempotent,
            policy: self.policy,
        }
    }

    fn request(&self) -> Request {
        let request = Request::new(self.id, RequestType::Http, self.timeout)
            .expect("a timeout above zero")
            .with_idempotent(self.idempotent);
        match &self.policy {
            Some(name) => request.with_policy(Arc::clone(name)),
            None => request,
        }
    }
}

impl<'a, D, F, Fut, T, E, R> IntoFuture for Retrying<'a, D, F, R>
where
    D: Decider,
    F: FnMut() -> Fut + Send + 'a,
    Fut: Future<Output = Result<T, E>> + Send + 'a,
    T: Send + 'a,
    E: Debug + Send + 'a,
    R: Fn(&E) -> Option<RetryReason> + Send + Sync + 'a,
{
    type Output = Result<T, ExecuteError<E>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        let request = self.request();
        let Retrying {
            executor,
            mut operation,
            reason,
            ..
        } = self;
        Box::pin(async move {
            let reason = &reason;
            executor
                .run(request, |_| {
                    let call = operation();
                    async move {
                        call.await.map_err(|error| match reason(&error) {
                            Some(why) => Failure::reason(error, why),
                            None => Failure::final_error(error),
                        })
                    }
                })
                .await
        })
    }
}
