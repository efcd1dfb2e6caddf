//! The request under retry handling (reference 001 "Request Annotation"): its type, service,
//! idempotency (derived from reference 001 "Idempotent Operation List", RFC 9110 §9.2.2 for
//! plain HTTP requests, declared for gRPC calls), attempts, previous reasons, timing, client
//! context, dispatch history and state; for HTTP requests and gRPC calls also the authority
//! and the route (an HTTP path or route name, a gRPC call's full method name).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use smallvec::SmallVec;

use crate::cassandra_types::ConsistencyLevel;
use crate::progress::Progress;
use crate::reason::RetryReason;

mod kind;

pub use kind::{HttpMethod, RequestType, Service};

/// Where the request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestState {
    /// Still being worked on.
    Pending,
    /// Completed (success or a final response).
    Completed,
    /// Cancelled by the orchestrator or the caller; the text says why.
    Cancelled(String),
}

/// Invalid request parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A zero timeout can never be met.
    #[error("request timeout must be greater than zero")]
    ZeroTimeout,
}

/// A request under retry handling.
#[derive(Debug, Clone)]
pub struct Request {
    id: u64,
    request_type: RequestType,
    idempotent: bool,
    readonly: bool,
    method: Option<HttpMethod>,
    retry_attempts: u32,
    /// Kept inline up to two reasons: a request's first retries allocate nothing.
    retry_reasons: SmallVec<[RetryReason; 2]>,
    /// Where in `retry_reasons` the reason of the last retry is.
    last_retry_reason: u32,
    start: Instant,
    timeout: Duration,
    /// `None` while empty: a request without client context allocates and shares nothing.
    client_context: Option<Arc<BTreeMap<String, String>>>,
    last_dispatched_to: Option<Arc<str>>,
    dispatched: bool,
    consistency: Option<ConsistencyLevel>,
    state: RequestState,
    policy: Option<Arc<str>>,
    profile: Option<Arc<str>>,
    authority: Option<Arc<str>>,
    route: Option<Arc<str>>,
    caller: Option<Arc<str>>,
    /// Retries made when the last one the server's pushback timed was recorded.
    pushback_base: u32,
    /// Transparent retries made (gRFC A6): never counted in `retry_attempts`.
    transparent_retries: u32,
    /// Whether the one transparent retry of a refused attempt was made.
    refused_retried: bool,
    /// The attempt timeout the policy's last answer set for the retry it asked for.
    answered_attempt_timeout: Option<Duration>,
}

impl Request {
    /// A new request started now. Its idempotency is derived from `request_type` (see
    /// [`RequestType::is_idempotent`]); `readonly`, `method` and `idempotent` refine it.
    #[inline]
    pub fn new(
        id: u64,
        request_type: RequestType,
        timeout: Duration,
    ) -> Result<Self, RequestError> {
        Self::new_at(id, request_type, timeout, Instant::now())
    }

    /// A new request that started at `start`, for a caller that noted the moment already (a
    /// driver's retry session, a replay, a virtual clock): [`new`](Self::new) without its
    /// clock read.
    #[inline]
    pub fn new_at(
        id: u64,
        request_type: RequestType,
        timeout: Duration,
        start: Instant,
    ) -> Result<Self, RequestError> {
        if timeout.is_zero() {
            return Err(RequestError::ZeroTimeout);
        }
        Ok(Request {
            id,
            request_type,
            idempotent: request_type.is_idempotent(false, None),
            readonly: false,
            method: None,
            retry_attempts: 0,
            retry_reasons: SmallVec::new(),
            last_retry_reason: 0,
            start,
            timeout,
            client_context: None,
            last_dispatched_to: None,
            dispatched: false,
            consistency: None,
            state: RequestState::Pending,
            policy: None,
            profile: None,
            authority: None,
            route: None,
            caller: None,
            pushback_base: 0,
            transparent_retries: 0,
            refused_retried: false,
            answered_attempt_timeout: None,
        })
    }

    /// Marks a query or analytics request read-only, which makes it idempotent.
    #[inline]
    pub fn with_readonly(mut self, readonly: bool) -> Self {
        self.readonly = readonly;
        self.idempotent = self.request_type.is_idempotent(readonly, self.method);
        self
    }

    /// Sets the HTTP method of a cluster-manager or management request (GET is idempotent).
    #[inline]
    pub fn with_method(mut self, method: HttpMethod) -> Self {
        self.method = Some(method);
        self.idempotent = self.request_type.is_idempotent(self.readonly, Some(method));
        self
    }

    /// Declares idempotency explicitly (e.g. a CQL statement marked idempotent).
    #[inline]
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Sets when the request started (for replays and virtual clocks).
    #[inline]
    pub fn with_start(mut self, start: Instant) -> Self {
        self.start = start;
        self
    }

    /// Adds an entry to the client context (reference 001 "Accessible Context").
    pub fn with_client_context(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        Arc::make_mut(self.client_context.get_or_insert_default()).insert(key.into(), value.into());
        self
    }

    /// Sets the consistency level (CQL).
    #[inline]
    pub fn with_consistency(mut self, level: ConsistencyLevel) -> Self {
        self.consistency = Some(level);
        self
    }

    /// Names the registry policy that decides for this request, overriding its profile and
    /// routes (reference 002: a per-request strategy overrides the global one).
    pub fn with_policy(mut self, name: impl Into<Arc<str>>) -> Self {
        self.policy = Some(name.into());
        self
    }

    /// Declares the request's profile (reference 003 "Using multiple policies": the profile's
    /// dedicated policy decides, or the default one if it has none).
    pub fn with_profile(mut self, name: impl Into<Arc<str>>) -> Self {
        self.profile = Some(name.into());
        self
    }

    /// Sets the number of retries already made (for replaying a request mid-life).
    #[inline]
    pub fn with_retry_attempts(mut self, attempts: u32) -> Self {
        self.retry_attempts = attempts;
        self.pushback_base = self.pushback_base.min(attempts);
        self
    }

    /// Sets how many of the retries already made came after the last one the server's
    /// pushback timed (for replaying a request mid-life; gRFC A6 counts its backoff from there).
    /// At most the retries made.
    pub fn with_retries_since_pushback(mut self, retries: u32) -> Self {
        self.pushback_base = self.retry_attempts - retries.min(self.retry_attempts);
        self
    }

    /// Sets the transparent retries already made, and whether one of them retried a refused
    /// attempt (for replaying a request mid-life; gRFC A6 "Transparent Retries").
    pub fn with_transparent_retries(mut self, retries: u32, refused_retried: bool) -> Self {
        self.transparent_retries = retries;
        self.refused_retried = refused_retried;
        self
    }

    /// Sets the authority the request goes to: an HTTP request's host (and port), a gRPC
    /// call's server name.
    pub fn with_authority(mut self, authority: impl Into<Arc<str>>) -> Self {
        self.authority = Some(authority.into());
        self
    }

    /// Names the authenticated caller this request is decided for (`rebound serve
    /// --client-tokens` names the client whose token it carried). State kept per name the
    /// request carries (a throttle per authority, node or client-context value) is kept per
    /// caller too, so that one caller's failures never throttle another's scope. Only a layer
    /// that authenticated the caller should set it.
    pub fn with_caller(mut self, name: impl Into<Arc<str>>) -> Self {
        self.caller = Some(name.into());
        self
    }

    /// Sets the route: an HTTP request's path or route name, a gRPC call's full method name
    /// (`/package.Service/Method`).
    pub fn with_route(mut self, route: impl Into<Arc<str>>) -> Self {
        self.route = Some(route.into());
        self
    }

    /// The request id.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The request type.
    #[inline]
    pub fn request_type(&self) -> RequestType {
        self.request_type
    }
    /// The service.
    pub fn service(&self) -> Service {
        self.request_type.service()
    }
    /// Whether the request is idempotent.
    #[inline]
    pub fn is_idempotent(&self) -> bool {
        self.idempotent
    }
    /// Whether the request was marked read-only.
    #[inline]
    pub fn is_readonly(&self) -> bool {
        self.readonly
    }
    /// Retries already made.
    #[inline]
    pub fn retry_attempts(&self) -> u32 {
        self.retry_attempts
    }
    /// Distinct reasons of the previous retries, first occurrence first.
    pub fn retry_reasons(&self) -> &[RetryReason] {
        &self.retry_reasons
    }
    /// The reason of the last retry, if one was made.
    pub fn last_retry_reason(&self) -> Option<&RetryReason> {
        self.retry_reasons.get(self.last_retry_reason as usize)
    }
    /// When the request started.
    #[inline]
    pub fn start(&self) -> Instant {
        self.start
    }
    /// The request timeout.
    #[inline]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
    /// The absolute deadline; `None` if the timeout is too large for the clock to represent.
    pub fn deadline(&self) -> Option<Instant> {
        self.start.checked_add(self.timeout)
    }
    /// Time elapsed at `now` (zero if `now` is before the start).
    pub fn elapsed_at(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }
    /// Time left at `now` before the deadline (zero once it has passed).
    pub fn remaining_at(&self, now: Instant) -> Duration {
        self.timeout.saturating_sub(self.elapsed_at(now))
    }
    /// The client context.
    pub fn client_context(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.client_context.as_deref().unwrap_or(&EMPTY)
    }
    /// The client context, shared (cloning it is one reference-count increment); `None` when
    /// it is empty.
    pub fn shared_client_context(&self) -> Option<&Arc<BTreeMap<String, String>>> {
        self.client_context.as_ref()
    }
    /// The node the request was last dispatched to.
    #[inline]
    pub fn last_dispatched_to(&self) -> Option<&str> {
        self.last_dispatched_to.as_deref()
    }
    /// The HTTP method of a cluster-manager or management request, if set.
    #[inline]
    pub fn method(&self) -> Option<HttpMethod> {
        self.method
    }
    /// Whether the request was ever written to the network.
    #[inline]
    pub fn was_dispatched(&self) -> bool {
        self.dispatched
    }
    /// The consistency level (CQL), if any.
    #[inline]
    pub fn consistency(&self) -> Option<ConsistencyLevel> {
        self.consistency
    }
    /// The state.
    pub fn state(&self) -> &RequestState {
        &self.state
    }
    /// Whether the request is completed or cancelled.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.state != RequestState::Pending
    }
    /// The registry policy named for this request, if any.
    pub fn policy(&self) -> Option<&str> {
        self.policy.as_deref()
    }
    /// The request's profile, if any.
    pub fn profile(&self) -> Option<&str> {
        self.profile.as_deref()
    }
    /// The authority (an HTTP host, a gRPC server name), if set.
    pub fn authority(&self) -> Option<&str> {
        self.authority.as_deref()
    }
    /// The authenticated caller it is decided for, if one was named
    /// ([`caller`](Self::caller)).
    pub fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }
    /// The route (an HTTP path or route name, a gRPC call's full method name), if set.
    pub fn route(&self) -> Option<&str> {
        self.route.as_deref()
    }
    /// The authority, shared (a WebAssembly call holds it without copying).
    #[cfg(feature = "wasm")]
    pub(crate) fn shared_authority(&self) -> Option<&Arc<str>> {
        self.authority.as_ref()
    }
    /// The route, shared (a WebAssembly call holds it without copying).
    #[cfg(feature = "wasm")]
    pub(crate) fn shared_route(&self) -> Option<&Arc<str>> {
        self.route.as_ref()
    }
    /// Retries made since the last one the server's pushback timed (all of them if none was).
    pub fn retries_since_pushback(&self) -> u32 {
        self.retry_attempts.saturating_sub(self.pushback_base)
    }

    /// Transparent retries made (gRFC A6: attempts that never reached the server's
    /// application, sent again without counting as retries).
    pub fn transparent_retries(&self) -> u32 {
        self.transparent_retries
    }

    /// Whether a refused attempt was retried transparently already (A6 allows it once).
    pub fn refused_retried(&self) -> bool {
        self.refused_retried
    }

    /// Whether the request may be sent again after a failure for `reason`, as far as its
    /// effects go ([`Service::may_send_again`]).
    pub fn may_be_sent_again(&self, reason: &RetryReason) -> bool {
        self.service()
            .may_send_again(self.idempotent, self.dispatched, reason)
    }

    /// Records that the request was written to `node` (an `Arc<str>` the caller already holds,
    /// such as the request's authority, is kept without copying).
    pub fn mark_dispatched(&mut self, node: impl Into<Arc<str>>) {
        self.dispatched = true;
        self.last_dispatched_to = Some(node.into());
    }
    /// Records that the request was written, to a node the caller does not name (no
    /// `lastDispatchedTo` in its error context).
    pub fn mark_sent(&mut self) {
        self.dispatched = true;
    }
    /// Marks the request completed.
    pub fn complete(&mut self) {
        self.state = RequestState::Completed;
    }
    /// Marks the request cancelled with a reason.
    pub fn cancel(&mut self, why: impl Into<String>) {
        self.state = RequestState::Cancelled(why.into());
    }
    /// Changes the consistency level for the next attempt (consistency downgrade).
    pub(crate) fn set_consistency(&mut self, level: ConsistencyLevel) {
        self.consistency = Some(level);
    }

    /// The attempt timeout the policy's answer set for the attempt about to be made
    /// ([`RetryAction::RetryAfter::attempt_timeout`](crate::RetryAction::RetryAfter)), if it
    /// set one; a retry it did not answer (the controlled backoff's) has none.
    pub fn answered_attempt_timeout(&self) -> Option<Duration> {
        self.answered_attempt_timeout
    }

    /// Records the attempt timeout the policy's answer set for the retry it asked for.
    pub(crate) fn set_answered_attempt_timeout(&mut self, timeout: Option<Duration>) {
        self.answered_attempt_timeout = timeout;
    }

    /// Counts one more transparent retry, of an attempt that went as far as `progress` says.
    pub(crate) fn record_transparent_retry(&mut self, progress: Progress) {
        self.transparent_retries = self.transparent_retries.saturating_add(1);
        self.refused_retried |= progress == Progress::Refused;
    }

    /// Counts one more retry for `reason` (reference 001 `incrementRetryAttempts`), timed by
    /// the server's pushback if `pushed_back`.
    pub(crate) fn record_retry(&mut self, reason: &RetryReason, pushed_back: bool) {
        self.retry_attempts = self.retry_attempts.saturating_add(1);
        if pushed_back {
            self.pushback_base = self.retry_attempts;
        }
        if let Some(at) = self.retry_reasons.iter().position(|r| r == reason) {
            self.last_retry_reason = at as u32;
        } else {
            self.last_retry_reason = self.retry_reasons.len() as u32;
            // A reason without data is built in place: cloned through `Clone` it came back
            // through memory, which the push read in wider loads than it was written with (a
            // store-forwarding stall, about 4 ns of a native decision's 50 in `perf annotate`).
            match reason {
                RetryReason::Simple(simple) => {
                    self.retry_reasons.push(RetryReason::Simple(*simple))
                }
                other => self.retry_reasons.push(other.clone()),
            }
        }
    }
}
