//! The request under retry handling (reference 001 "Request Annotation"): its type, service,
//! idempotency (derived from reference 001 "Idempotent Operation List", RFC 9110 §9.2.2 for
//! plain HTTP requests, declared for gRPC calls), attempts, previous reasons, timing, client
//! context, dispatch history and state; for HTTP requests and gRPC calls also the authority
//! and the route (an HTTP path or route name, a gRPC call's full method name).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::cassandra_types::ConsistencyLevel;
use crate::reason::RetryReason;

/// The service a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// Key/Value (memcached binary protocol).
    Kv,
    /// SQL++ query.
    Query,
    /// Analytics.
    Analytics,
    /// Full-text search.
    Search,
    /// Views.
    Views,
    /// Cluster manager (ns-server) and management APIs.
    Management,
    /// Cassandra CQL.
    Cql,
    /// A plain HTTP service (RFC 9110).
    Http,
    /// A gRPC service.
    Grpc,
}

impl Service {
    /// The lowercase name used in error contexts.
    pub const fn name(self) -> &'static str {
        match self {
            Service::Kv => "kv",
            Service::Query => "query",
            Service::Analytics => "analytics",
            Service::Search => "search",
            Service::Views => "views",
            Service::Management => "management",
            Service::Cql => "cql",
            Service::Http => "http",
            Service::Grpc => "grpc",
        }
    }

    /// The host's guard: whether a request to this service may be sent again after a failure
    /// for `reason`, as far as its effects go. An idempotent request always; any other only
    /// for a reason that allows it (reference 001's table) and, for plain HTTP requests and
    /// gRPC calls, only if no attempt was ever written (`dispatched`; RFC 9110 §9.2.2: a
    /// client should not retry a non-idempotent request that may have been processed).
    pub fn may_send_again(self, idempotent: bool, dispatched: bool, reason: &RetryReason) -> bool {
        idempotent
            || (reason.allows_non_idempotent_retry()
                && (!matches!(self, Service::Http | Service::Grpc) || !dispatched))
    }
}

/// An HTTP method (RFC 9110 §9.3), for plain HTTP, cluster-manager and management requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// GET: safe, idempotent.
    Get,
    /// POST: not idempotent.
    Post,
    /// PUT: idempotent.
    Put,
    /// DELETE: idempotent.
    Delete,
    /// HEAD: safe, idempotent.
    Head,
    /// OPTIONS: safe, idempotent.
    Options,
    /// TRACE: safe, idempotent.
    Trace,
    /// PATCH (RFC 5789): not idempotent.
    Patch,
    /// CONNECT: not idempotent.
    Connect,
}

impl HttpMethod {
    /// The method's token as RFC 9110 writes it (`GET`, `POST`, …).
    pub const fn name(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Head => "HEAD",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Trace => "TRACE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Connect => "CONNECT",
        }
    }

    /// RFC 9110 §9.2.2: the idempotent methods are the safe ones (GET, HEAD, OPTIONS, TRACE)
    /// and PUT and DELETE.
    pub const fn is_idempotent(self) -> bool {
        matches!(
            self,
            HttpMethod::Get
                | HttpMethod::Head
                | HttpMethod::Options
                | HttpMethod::Trace
                | HttpMethod::Put
                | HttpMethod::Delete
        )
    }
}

macro_rules! request_types {
    ($( $(#[$doc:meta])* $ty:ident = $name:literal, $svc:ident, $idem:ident; )*) => {
        /// What a request does. Idempotency of KV types follows reference 001
        /// "Idempotent Operation List" and reference 002 ("Collection: get, lookupIn,
        /// getAnyReplica, getAllReplicas, exists").
        ///
        /// `#[non_exhaustive]`: a later minor version may describe requests of other protocols
        /// or operations; match with a wildcard arm, or ask [`RequestType::service`] and the
        /// request's idempotency rather than listing types.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        #[non_exhaustive]
        pub enum RequestType {
            $( $(#[$doc])* $ty, )*
        }

        impl RequestType {
            /// Every request type.
            pub const ALL: &'static [RequestType] = &[$(RequestType::$ty,)*];

            /// The snake_case name.
            pub const fn name(self) -> &'static str {
                match self { $(RequestType::$ty => $name,)* }
            }

            /// The service the type belongs to.
            pub const fn service(self) -> Service {
                match self { $(RequestType::$ty => Service::$svc,)* }
            }

            const fn idempotency_rule(self) -> IdempotencyRule {
                match self { $(RequestType::$ty => IdempotencyRule::$idem,)* }
            }
        }
    };
}

#[derive(Clone, Copy)]
enum IdempotencyRule {
    Always,
    Never,
    IfReadonly,
    IfGet,
    IfIdempotentMethod,
}

request_types! {
    /// KV get (not get-and-lock, not get-and-touch).
    Get = "get", Kv, Always;
    /// KV get and lock: mutates the lock state.
    GetAndLock = "get_and_lock", Kv, Never;
    /// KV get and touch: mutates the expiry.
    GetAndTouch = "get_and_touch", Kv, Never;
    /// KV replica get.
    GetReplica = "get_replica", Kv, Always;
    /// KV exists (reference 002).
    Exists = "exists", Kv, Always;
    /// KV sub-document lookup.
    LookupIn = "lookup_in", Kv, Always;
    /// KV get collection id.
    GetCollectionId = "get_collection_id", Kv, Always;
    /// KV get collection manifest.
    GetCollectionManifest = "get_collection_manifest", Kv, Always;
    /// KV noop.
    Noop = "noop", Kv, Always;
    /// KV observe via CAS.
    ObserveCas = "observe_cas", Kv, Always;
    /// KV observe via sequence number.
    ObserveSeqno = "observe_seqno", Kv, Always;
    /// KV carrier (bucket) config.
    CarrierConfig = "carrier_config", Kv, Always;
    /// KV global config.
    GlobalConfig = "global_config", Kv, Always;
    /// KV insert.
    Insert = "insert", Kv, Never;
    /// KV upsert.
    Upsert = "upsert", Kv, Never;
    /// KV replace.
    Replace = "replace", Kv, Never;
    /// KV remove.
    Remove = "remove", Kv, Never;
    /// KV append.
    Append = "append", Kv, Never;
    /// KV prepend.
    Prepend = "prepend", Kv, Never;
    /// KV increment.
    Increment = "increment", Kv, Never;
    /// KV decrement.
    Decrement = "decrement", Kv, Never;
    /// KV touch.
    Touch = "touch", Kv, Never;
    /// KV unlock.
    Unlock = "unlock", Kv, Never;
    /// KV sub-document mutation.
    MutateIn = "mutate_in", Kv, Never;
    /// SQL++ query: idempotent only when `readonly`.
    Query = "query", Query, IfReadonly;
    /// Analytics query: idempotent only when `readonly`.
    Analytics = "analytics", Analytics, IfReadonly;
    /// Search: read-only, always idempotent (even though it is a POST).
    Search = "search", Search, Always;
    /// View query: read-only, always idempotent.
    View = "view", Views, Always;
    /// Cluster manager request: idempotent when GET.
    ClusterManager = "cluster_manager", Management, IfGet;
    /// Management API request: idempotent when GET.
    Management = "management", Management, IfGet;
    /// A CQL statement: non-idempotent unless declared (the driver's default idempotence is false).
    Cql = "cql", Cql, Never;
    /// A plain HTTP request: idempotent when its method is (RFC 9110 §9.2.2), unless declared.
    Http = "http", Http, IfIdempotentMethod;
    /// A gRPC call: non-idempotent unless declared (gRPC does not know a method's idempotency).
    Grpc = "grpc", Grpc, Never;
}

impl RequestType {
    /// Looks a type up by its snake_case name.
    pub fn from_name(name: &str) -> Option<RequestType> {
        RequestType::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// Reference 001 "Idempotent Operation List" (RFC 9110 §9.2.2 for plain HTTP): is a
    /// request of this type idempotent, given its `readonly` flag (query, analytics) and HTTP
    /// method (cluster manager, management, plain HTTP, where no method is not idempotent)?
    pub const fn is_idempotent(self, readonly: bool, method: Option<HttpMethod>) -> bool {
        match self.idempotency_rule() {
            IdempotencyRule::Always => true,
            IdempotencyRule::Never => false,
            IdempotencyRule::IfReadonly => readonly,
            IdempotencyRule::IfGet => matches!(method, Some(HttpMethod::Get)),
            IdempotencyRule::IfIdempotentMethod => match method {
                Some(method) => method.is_idempotent(),
                None => false,
            },
        }
    }
}

impl fmt::Display for RequestType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
        })
    }

    /// Marks a query or analytics request read-only, which makes it idempotent.
    #[inline]
    pub fn readonly(mut self, readonly: bool) -> Self {
        self.readonly = readonly;
        self.idempotent = self.request_type.is_idempotent(readonly, self.method);
        self
    }

    /// Sets the HTTP method of a cluster-manager or management request (GET is idempotent).
    #[inline]
    pub fn method(mut self, method: HttpMethod) -> Self {
        self.method = Some(method);
        self.idempotent = self.request_type.is_idempotent(self.readonly, Some(method));
        self
    }

    /// Declares idempotency explicitly (e.g. a CQL statement marked idempotent).
    #[inline]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Sets when the request started (for replays and virtual clocks).
    #[inline]
    pub fn started_at(mut self, start: Instant) -> Self {
        self.start = start;
        self
    }

    /// Adds an entry to the client context (reference 001 "Accessible Context").
    pub fn context(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        Arc::make_mut(self.client_context.get_or_insert_default()).insert(key.into(), value.into());
        self
    }

    /// Sets the consistency level (CQL).
    #[inline]
    pub fn consistency(mut self, level: ConsistencyLevel) -> Self {
        self.consistency = Some(level);
        self
    }

    /// Names the registry policy that decides for this request, overriding its profile and
    /// routes (reference 002: a per-request strategy overrides the global one).
    pub fn policy(mut self, name: impl Into<Arc<str>>) -> Self {
        self.policy = Some(name.into());
        self
    }

    /// Declares the request's profile (reference 003 "Using multiple policies": the profile's
    /// dedicated policy decides, or the default one if it has none).
    pub fn profile(mut self, name: impl Into<Arc<str>>) -> Self {
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

    /// Sets the authority the request goes to: an HTTP request's host (and port), a gRPC
    /// call's server name.
    pub fn authority(mut self, authority: impl Into<Arc<str>>) -> Self {
        self.authority = Some(authority.into());
        self
    }

    /// Names the authenticated caller this request is decided for (`rebound serve
    /// --client-tokens` names the client whose token it carried). State kept per name the
    /// request carries (a throttle per authority, node or client-context value) is kept per
    /// caller too, so that one caller's failures never throttle another's scope. Only a layer
    /// that authenticated the caller should set it.
    pub fn caller(mut self, name: impl Into<Arc<str>>) -> Self {
        self.caller = Some(name.into());
        self
    }

    /// Sets the route: an HTTP request's path or route name, a gRPC call's full method name
    /// (`/package.Service/Method`).
    pub fn route(mut self, route: impl Into<Arc<str>>) -> Self {
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
    pub fn http_method(&self) -> Option<HttpMethod> {
        self.method
    }
    /// Whether the request was ever written to the network.
    #[inline]
    pub fn was_dispatched(&self) -> bool {
        self.dispatched
    }
    /// The consistency level (CQL), if any.
    #[inline]
    pub fn consistency_level(&self) -> Option<ConsistencyLevel> {
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
    pub fn policy_name(&self) -> Option<&str> {
        self.policy.as_deref()
    }
    /// The request's profile, if any.
    pub fn profile_name(&self) -> Option<&str> {
        self.profile.as_deref()
    }
    /// The authority (an HTTP host, a gRPC server name), if set.
    pub fn authority_name(&self) -> Option<&str> {
        self.authority.as_deref()
    }
    /// The authenticated caller it is decided for, if one was named
    /// ([`caller`](Self::caller)).
    pub fn caller_name(&self) -> Option<&str> {
        self.caller.as_deref()
    }
    /// The route (an HTTP path or route name, a gRPC call's full method name), if set.
    pub fn route_name(&self) -> Option<&str> {
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

    /// Counts one more retry for `reason` (reference 001 `incrementRetryAttempts`), timed by
    /// the server's pushback if `pushed_back`.
    pub(crate) fn record_retry(&mut self, reason: &RetryReason, pushed_back: bool) {
        self.retry_attempts = self.retry_attempts.saturating_add(1);
        if pushed_back {
            self.pushback_base = self.retry_attempts;
        }
        if !self.retry_reasons.contains(reason) {
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
