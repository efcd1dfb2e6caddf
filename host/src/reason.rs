//! Retry reasons: why a request is being considered for a retry.
//!
//! One enum covers every reason of reference 001 "RetryReason" (the RFC table, including the
//! five terminal reasons of revision 16), every user-visible reason of reference 002
//! "RetryReasons" (where the two name the same thing differently the RFC name is canonical and
//! the other is accepted as an alias), and the Cassandra error kinds of reference 003
//! "Behavior" with their data, and a plain HTTP response's status and a gRPC call's status
//! code. Each reason carries the two flags of reference 001:
//! `allows_non_idempotent_retry` and `always_retry`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::aws_error::{AwsError, AwsErrorKind};
use crate::cassandra_types::{AbortKind, ConsistencyLevel, ServerErrorKind, WriteType};
use crate::grpc::GrpcCode;

/// Where in the request lifecycle (reference 001 "Introduction") a reason arises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Before the request was written to the network: nothing can have changed on the server.
    PreDispatch,
    /// While the request was on the wire: the server may or may not have applied it.
    InFlight,
    /// A complete response was received.
    Response,
    /// Not known (unknown or unrecognised reasons).
    Unknown,
}

macro_rules! reason_kinds {
    ($( $(#[doc = $doc:literal])* $kind:ident = $name:literal [$($alias:literal),*] ($non_idem:literal, $always:literal, $stage:ident); )*) => {
        /// The kind of a [`RetryReason`], without its data: what the reason table is keyed by.
        ///
        /// `#[non_exhaustive]`: the table is the references' and grows with them (revision 16
        /// of reference 001 added five reasons), so a later minor version may add a kind; match
        /// with a wildcard arm, or ask the flags ([`allows_non_idempotent_retry`],
        /// [`always_retry`]) rather than listing kinds.
        ///
        /// [`allows_non_idempotent_retry`]: ReasonKind::allows_non_idempotent_retry
        /// [`always_retry`]: ReasonKind::always_retry
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ReasonKind {
            $( $(#[doc = $doc])* $kind, )*
        }

        impl ReasonKind {
            /// Every kind, in table order.
            pub const ALL: &'static [ReasonKind] = &[$(ReasonKind::$kind,)*];

            /// The canonical SCREAMING_SNAKE name.
            pub const fn name(self) -> &'static str {
                match self { $(ReasonKind::$kind => $name,)* }
            }

            /// Other names (reference 002 spellings) accepted for this kind.
            pub const fn aliases(self) -> &'static [&'static str] {
                match self { $(ReasonKind::$kind => &[$($alias),*],)* }
            }

            /// Whether a non-idempotent request may be retried for this reason.
            pub const fn allows_non_idempotent_retry(self) -> bool {
                match self { $(ReasonKind::$kind => $non_idem,)* }
            }

            /// Whether the orchestrator retries this reason itself, without asking the strategy.
            pub const fn always_retry(self) -> bool {
                match self { $(ReasonKind::$kind => $always,)* }
            }

            /// The lifecycle stage the reason belongs to.
            pub const fn stage(self) -> Stage {
                match self { $(ReasonKind::$kind => Stage::$stage,)* }
            }

            /// What the reason means, in one or two sentences (its doc comment, as `rebound
            /// reasons` prints it).
            pub fn meaning(self) -> &'static str {
                match self { $(ReasonKind::$kind => concat!($($doc),*).trim_start(),)* }
            }
        }
    };
}

reason_kinds! {
    /// An unexpected failure the client could not classify (reference 001 "RetryReason").
    Unknown = "UNKNOWN" [] (false, false, Unknown);
    /// No connected socket to write the request into; nothing was sent.
    SocketNotAvailable = "SOCKET_NOT_AVAILABLE" ["ENDPOINT_NOT_AVAILABLE"] (true, false, PreDispatch);
    /// The service (kv, query, ...) is not running on the chosen node; nothing was sent.
    ServiceNotAvailable = "SERVICE_NOT_AVAILABLE" [] (true, false, PreDispatch);
    /// The node the request should go to is not in the cluster map or not reachable; nothing was
    /// sent.
    NodeNotAvailable = "NODE_NOT_AVAILABLE" [] (true, false, PreDispatch);
    /// The endpoint is connected but cannot take a write now; nothing was sent.
    EndpointNotWritable = "ENDPOINT_NOT_WRITABLE" [] (true, false, PreDispatch);
    /// KV status 0x07: the node no longer owns the document's vbucket (a rebalance moved it).
    KvNotMyVbucket = "KV_NOT_MY_VBUCKET" [] (true, true, Response);
    /// KV status 0x88: the client's collection map is out of date.
    KvCollectionOutdated = "KV_COLLECTION_OUTDATED" [] (true, true, Response);
    /// An unknown KV status whose error-map entry has a retry attribute; `failure.error-map-spec`
    /// gives its retry specification (reference 004).
    KvErrorMapRetryIndicated = "KV_ERROR_MAP_RETRY_INDICATED" ["KV_ERROR_MAP_INDICATED"] (true, false, Response);
    /// KV status 0x09: the document is locked by a get-and-lock; a later try may find it unlocked.
    KvLocked = "KV_LOCKED" [] (true, false, Response);
    /// KV status 0x86: the server is temporarily unable to serve (out of memory, warming up).
    KvTemporaryFailure = "KV_TEMPORARY_FAILURE" [] (true, false, Response);
    /// KV status 0xa2: a durable write to the same document is still in progress.
    KvSyncWriteInProgress = "KV_SYNC_WRITE_IN_PROGRESS" [] (true, false, Response);
    /// KV status 0xa4: a durable write to the same document is being re-committed.
    KvSyncWriteReCommitInProgress = "KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS" ["KV_SYNC_RE_COMMIT_IN_PROGRESS"] (true, false, Response);
    /// An HTTP service (query, analytics, search, views, management) answered with a code its retry
    /// list marks retryable (reference 001 "Response Code Retry List").
    ServiceResponseCodeIndicated = "SERVICE_RESPONSE_CODE_INDICATED" [] (true, false, Response);
    /// The connection closed after the request was written and before its answer: the server may or
    /// may not have applied it.
    SocketClosedWhileInFlight = "SOCKET_CLOSED_WHILE_IN_FLIGHT" ["CHANNEL_CLOSED_WHILE_IN_FLIGHT"] (false, false, InFlight);
    /// The endpoint's circuit breaker is open; nothing was sent.
    CircuitBreakerOpen = "CIRCUIT_BREAKER_OPEN" ["ENDPOINT_CIRCUIT_OPEN"] (true, false, PreDispatch);
    /// Query codes 4040, 4050 or 4070: the prepared statement must be prepared again.
    QueryPreparedStatementFailure = "QUERY_PREPARED_STATEMENT_FAILURE" [] (true, false, Response);
    /// Query code 5000 with `queryport.indexNotFound`: the index is not (yet) available.
    QueryIndexNotFound = "QUERY_INDEX_NOT_FOUND" [] (true, false, Response);
    /// Analytics codes 23000, 23003 or 23007: a temporary failure.
    AnalyticsTemporaryFailure = "ANALYTICS_TEMPORARY_FAILURE" [] (true, false, Response);
    /// Search answered HTTP 429: too many requests.
    SearchTooManyRequests = "SEARCH_TOO_MANY_REQUESTS" [] (true, false, Response);
    /// Views answered a temporary failure.
    ViewsTemporaryFailure = "VIEWS_TEMPORARY_FAILURE" [] (true, false, Response);
    /// Views answered HTTP 302: no active partition.
    ViewsNoActivePartition = "VIEWS_NO_ACTIVE_PARTITION" [] (true, true, Response);
    /// The bucket is not open in the client yet; nothing was sent.
    BucketNotAvailable = "BUCKET_NOT_AVAILABLE" [] (true, false, PreDispatch);
    /// The bucket is being opened; nothing was sent.
    BucketOpenInProgress = "BUCKET_OPEN_IN_PROGRESS" [] (true, false, PreDispatch);
    /// The cluster configuration is being loaded; nothing was sent.
    GlobalConfigLoadInProgress = "GLOBAL_CONFIG_LOAD_IN_PROGRESS" [] (true, false, PreDispatch);
    /// The collection map is being refreshed; nothing was sent.
    CollectionMapRefreshInProgress = "COLLECTION_MAP_REFRESH_IN_PROGRESS" [] (true, false, PreDispatch);
    /// A topology connection got an explicit SASL authentication failure (KV 0x20); terminal for
    /// `fast-fail-on-terminal-error`.
    AuthenticationError = "AUTHENTICATION_ERROR" [] (true, false, PreDispatch);
    /// A topology connection got an explicit TLS failure; terminal for
    /// `fast-fail-on-terminal-error`.
    TlsError = "TLS_ERROR" [] (true, false, PreDispatch);
    /// SELECT BUCKET answered NO_ACCESS; terminal for `fast-fail-on-terminal-error`.
    BucketAccessError = "BUCKET_ACCESS_ERROR" [] (true, false, PreDispatch);
    /// The fetched collection map lacks the scope; terminal for `fast-fail-on-terminal-error`.
    ScopeNotFound = "SCOPE_NOT_FOUND" [] (true, false, PreDispatch);
    /// The fetched collection map lacks the collection; terminal for `fast-fail-on-terminal-error`.
    CollectionNotFound = "COLLECTION_NOT_FOUND" [] (true, false, PreDispatch);
    /// Cassandra READ_TIMEOUT from the coordinator, with its data (reference 003
    /// `onReadTimeoutVerdict`).
    ReadTimeout = "READ_TIMEOUT" [] (true, false, Response);
    /// Cassandra WRITE_TIMEOUT from the coordinator, with its data: the write may have been applied
    /// (reference 003 `onWriteTimeoutVerdict`).
    WriteTimeout = "WRITE_TIMEOUT" [] (false, false, Response);
    /// Cassandra UNAVAILABLE: the coordinator knew too few replicas alive to try; nothing was
    /// written (reference 003 `onUnavailableVerdict`).
    Unavailable = "UNAVAILABLE" [] (true, false, Response);
    /// Cassandra: the request was aborted before a response (connection closed, heartbeat failed);
    /// it may have been applied (reference 003 `onRequestAbortedVerdict`).
    RequestAborted = "REQUEST_ABORTED" [] (false, false, InFlight);
    /// Cassandra: another coordinator error (reference 003 `onErrorResponseVerdict`).
    ErrorResponse = "ERROR_RESPONSE" [] (false, false, Response);
    /// Cassandra: the node is bootstrapping and did not execute the query (reference 003
    /// "Hard-coded rules": tried on the next node).
    Bootstrapping = "BOOTSTRAPPING" [] (true, false, Response);
    /// Cassandra: the coordinator does not know the prepared statement (reference 003 "Hard-coded
    /// rules": prepared again, then retried).
    Unprepared = "UNPREPARED" [] (true, false, Response);
    /// A plain HTTP request was answered with an error status (RFC 9110 §15); its data is the
    /// status. The request was sent, so one that is not idempotent is not retried.
    HttpStatus = "HTTP_STATUS" [] (false, false, Response);
    /// A gRPC call ended with a status other than OK; its data is the code. The call was sent,
    /// so one not declared idempotent is not retried.
    GrpcStatus = "GRPC_STATUS" [] (false, false, Response);
    /// The attempt ran past its attempt timeout and was cut (dropped); the request's own deadline
    /// had not passed. If it was written, the server may or may not have applied it.
    AttemptTimeout = "ATTEMPT_TIMEOUT" [] (false, false, InFlight);
    /// The AWS SDK's classifiers found a throttling error: the service refused the request
    /// without processing it. Its data is the [`AwsError`](crate::aws_error::AwsError).
    AwsThrottling = "AWS_THROTTLING" [] (true, false, Response);
    /// The AWS SDK's classifiers found a transient error (a timeout, a lost connection, a 5xx
    /// status, a transient or modeled-retryable code): the service may have processed it. Its
    /// data is the [`AwsError`](crate::aws_error::AwsError).
    AwsTransient = "AWS_TRANSIENT" [] (false, false, InFlight);
    /// A reason this host does not know, by its name (a newer client's): never retried.
    Other = "OTHER" [] (false, false, Unknown);
}

impl ReasonKind {
    /// Looks a kind up by canonical name or alias (case-sensitive SCREAMING_SNAKE).
    pub fn from_name(name: &str) -> Option<ReasonKind> {
        ReasonKind::ALL
            .iter()
            .copied()
            .find(|k| *k != ReasonKind::Other && (k.name() == name || k.aliases().contains(&name)))
    }

    /// Whether the kind needs data (the Cassandra kinds) and so cannot be built from a name alone.
    pub const fn has_data(self) -> bool {
        matches!(
            self,
            ReasonKind::ReadTimeout
                | ReasonKind::WriteTimeout
                | ReasonKind::Unavailable
                | ReasonKind::RequestAborted
                | ReasonKind::ErrorResponse
                | ReasonKind::HttpStatus
                | ReasonKind::GrpcStatus
                | ReasonKind::AwsThrottling
                | ReasonKind::AwsTransient
                | ReasonKind::Other
        )
    }
}

/// Data of a Cassandra READ_TIMEOUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadTimeout {
    /// The consistency level the read was executed at.
    pub consistency: ConsistencyLevel,
    /// Replies the coordinator needed.
    pub block_for: u32,
    /// Replies it received.
    pub received: u32,
    /// Whether the data replica answered (rather than only digests).
    pub data_present: bool,
}

/// Data of a Cassandra WRITE_TIMEOUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteTimeout {
    /// The consistency level the write was executed at.
    pub consistency: ConsistencyLevel,
    /// What kind of write timed out.
    pub write_type: WriteType,
    /// Acknowledgements the coordinator needed.
    pub block_for: u32,
    /// Acknowledgements it received.
    pub received: u32,
}

/// Data of a Cassandra UNAVAILABLE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unavailable {
    /// The consistency level requested.
    pub consistency: ConsistencyLevel,
    /// Replicas the consistency level required.
    pub required: u32,
    /// Replicas known alive.
    pub alive: u32,
}

/// Why a request is being considered for a retry: a [`ReasonKind`] plus the data some kinds carry.
///
/// `#[non_exhaustive]`, as [`ReasonKind`] is: a later minor version may add a reason the
/// references add.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryReason {
    /// A reason without data.
    Simple(SimpleReason),
    /// Cassandra READ_TIMEOUT.
    ReadTimeout(ReadTimeout),
    /// Cassandra WRITE_TIMEOUT.
    WriteTimeout(WriteTimeout),
    /// Cassandra UNAVAILABLE.
    Unavailable(Unavailable),
    /// Cassandra request aborted, with the error kind.
    RequestAborted(AbortKind),
    /// Cassandra coordinator error response, with the error kind.
    ErrorResponse(ServerErrorKind),
    /// A plain HTTP response's error status.
    HttpStatus(u16),
    /// A gRPC call's status code.
    GrpcStatus(GrpcCode),
    /// An error the AWS SDK's classifiers call retryable: `AWS_THROTTLING` when its kind is
    /// throttling, `AWS_TRANSIENT` otherwise.
    Aws(AwsError),
    /// A reason name this host does not know. Never retried.
    Other(Box<str>),
}

/// A [`ReasonKind`] known to carry no data. Built only through [`RetryReason::simple`] or
/// [`RetryReason::from`] with a kind, which check that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SimpleReason(ReasonKind);

impl SimpleReason {
    /// The kind.
    pub const fn kind(self) -> ReasonKind {
        self.0
    }
}

/// A reason name that could not be turned into a [`RetryReason`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReasonError {
    /// The kind needs data (e.g. `READ_TIMEOUT` needs consistency, block-for, ...).
    #[error("reason {0} needs data ({1}); give it as an object, not a bare name")]
    NeedsData(&'static str, &'static str),
}

impl RetryReason {
    /// A data-less reason of `kind`; `None` for kinds that carry data.
    pub const fn simple(kind: ReasonKind) -> Option<RetryReason> {
        if kind.has_data() {
            None
        } else {
            Some(RetryReason::Simple(SimpleReason(kind)))
        }
    }

    /// Parses a reason name or alias. Unknown names become [`RetryReason::Other`], which is
    /// never retried; a kind that needs data is an error.
    pub fn parse_name(name: &str) -> Result<RetryReason, ReasonError> {
        match ReasonKind::from_name(name) {
            Some(kind) => RetryReason::simple(kind).ok_or(ReasonError::NeedsData(
                kind.name(),
                match kind {
                    ReasonKind::ReadTimeout => "consistency, block_for, received, data_present",
                    ReasonKind::WriteTimeout => "consistency, write_type, block_for, received",
                    ReasonKind::Unavailable => "consistency, required, alive",
                    ReasonKind::HttpStatus => "the HTTP status",
                    ReasonKind::GrpcStatus => "the gRPC status code",
                    ReasonKind::AwsThrottling | ReasonKind::AwsTransient => "kind, code, status",
                    _ => "error",
                },
            )),
            None => Ok(RetryReason::Other(name.into())),
        }
    }

    /// The kind of this reason.
    pub const fn kind(&self) -> ReasonKind {
        match self {
            RetryReason::Simple(s) => s.0,
            RetryReason::ReadTimeout(_) => ReasonKind::ReadTimeout,
            RetryReason::WriteTimeout(_) => ReasonKind::WriteTimeout,
            RetryReason::Unavailable(_) => ReasonKind::Unavailable,
            RetryReason::RequestAborted(_) => ReasonKind::RequestAborted,
            RetryReason::ErrorResponse(_) => ReasonKind::ErrorResponse,
            RetryReason::HttpStatus(_) => ReasonKind::HttpStatus,
            RetryReason::GrpcStatus(_) => ReasonKind::GrpcStatus,
            RetryReason::Aws(AwsError {
                kind: AwsErrorKind::Throttling,
                ..
            }) => ReasonKind::AwsThrottling,
            RetryReason::Aws(_) => ReasonKind::AwsTransient,
            RetryReason::Other(_) => ReasonKind::Other,
        }
    }

    /// The name used in logs and error contexts: the canonical name, or the unknown name as given.
    pub fn name(&self) -> &str {
        match self {
            RetryReason::Other(name) => name,
            other => other.kind().name(),
        }
    }

    /// Reference 001 "RetryReason": may a non-idempotent request be retried for this reason?
    pub const fn allows_non_idempotent_retry(&self) -> bool {
        self.kind().allows_non_idempotent_retry()
    }

    /// Reference 001 "RetryReason": does the orchestrator retry it without asking the strategy?
    pub const fn always_retry(&self) -> bool {
        self.kind().always_retry()
    }

    /// Reasons that are never retried whatever the strategy answers: unknown reasons
    /// (reference 001 "RetryReason", UNKNOWN) and the Cassandra errors the driver always
    /// rethrows (reference 003 "Hard-coded rules": validation, function failure, protocol).
    pub const fn never_retry(&self) -> bool {
        match self {
            RetryReason::ErrorResponse(kind) => kind.is_never_retried(),
            other => matches!(other.kind(), ReasonKind::Unknown | ReasonKind::Other),
        }
    }

    /// The lifecycle stage.
    pub const fn stage(&self) -> Stage {
        self.kind().stage()
    }
}

impl From<ReadTimeout> for RetryReason {
    fn from(v: ReadTimeout) -> Self {
        RetryReason::ReadTimeout(v)
    }
}
impl From<WriteTimeout> for RetryReason {
    fn from(v: WriteTimeout) -> Self {
        RetryReason::WriteTimeout(v)
    }
}
impl From<Unavailable> for RetryReason {
    fn from(v: Unavailable) -> Self {
        RetryReason::Unavailable(v)
    }
}

impl FromStr for RetryReason {
    type Err = ReasonError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RetryReason::parse_name(s)
    }
}

impl fmt::Display for RetryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for ReasonKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Shorthands for the data-less reasons, so callers write `reasons::KV_LOCKED`.
pub mod reasons {
    use super::{ReasonKind as K, RetryReason, SimpleReason};

    macro_rules! consts {
        ($($c:ident = $k:ident;)*) => {
            $(#[doc = concat!("The `", stringify!($c), "` reason.")]
              pub const $c: RetryReason = RetryReason::Simple(SimpleReason(K::$k));)*
        };
    }
    consts! {
        UNKNOWN = Unknown;
        SOCKET_NOT_AVAILABLE = SocketNotAvailable;
        SERVICE_NOT_AVAILABLE = ServiceNotAvailable;
        NODE_NOT_AVAILABLE = NodeNotAvailable;
        ENDPOINT_NOT_WRITABLE = EndpointNotWritable;
        KV_NOT_MY_VBUCKET = KvNotMyVbucket;
        KV_COLLECTION_OUTDATED = KvCollectionOutdated;
        KV_ERROR_MAP_RETRY_INDICATED = KvErrorMapRetryIndicated;
        KV_LOCKED = KvLocked;
        KV_TEMPORARY_FAILURE = KvTemporaryFailure;
        KV_SYNC_WRITE_IN_PROGRESS = KvSyncWriteInProgress;
        KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS = KvSyncWriteReCommitInProgress;
        SERVICE_RESPONSE_CODE_INDICATED = ServiceResponseCodeIndicated;
        SOCKET_CLOSED_WHILE_IN_FLIGHT = SocketClosedWhileInFlight;
        CIRCUIT_BREAKER_OPEN = CircuitBreakerOpen;
        QUERY_PREPARED_STATEMENT_FAILURE = QueryPreparedStatementFailure;
        QUERY_INDEX_NOT_FOUND = QueryIndexNotFound;
        ANALYTICS_TEMPORARY_FAILURE = AnalyticsTemporaryFailure;
        SEARCH_TOO_MANY_REQUESTS = SearchTooManyRequests;
        VIEWS_TEMPORARY_FAILURE = ViewsTemporaryFailure;
        VIEWS_NO_ACTIVE_PARTITION = ViewsNoActivePartition;
        BUCKET_NOT_AVAILABLE = BucketNotAvailable;
        BUCKET_OPEN_IN_PROGRESS = BucketOpenInProgress;
        GLOBAL_CONFIG_LOAD_IN_PROGRESS = GlobalConfigLoadInProgress;
        COLLECTION_MAP_REFRESH_IN_PROGRESS = CollectionMapRefreshInProgress;
        AUTHENTICATION_ERROR = AuthenticationError;
        TLS_ERROR = TlsError;
        BUCKET_ACCESS_ERROR = BucketAccessError;
        SCOPE_NOT_FOUND = ScopeNotFound;
        COLLECTION_NOT_FOUND = CollectionNotFound;
        BOOTSTRAPPING = Bootstrapping;
        UNPREPARED = Unprepared;
        ATTEMPT_TIMEOUT = AttemptTimeout;
    }
}
