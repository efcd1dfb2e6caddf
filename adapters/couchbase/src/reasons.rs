//! The SDK's retry reasons as Rebound's: the same names (reference 001 "RetryReason"), and for
//! the SDK's own additions the reason of the RFC that means the same. A reason of a later SDK
//! version this adapter does not know is `UNKNOWN`.

use couchbase_core::retry::RetryReason as SdkReason;
use rebound::{reasons, RequestType, RetryReason};

/// Rebound's reason for the SDK's `reason`.
///
/// The SDK's own additions: `KvInvalidVbucketMap` is a not-my-vbucket (both are always
/// retried, by the SDK itself, before any strategy is asked); `QueryErrorRetryable` is
/// `SERVICE_RESPONSE_CODE_INDICATED` (the query service's answer says retry);
/// `HttpConnectFailed` and `HttpSendRequestFailed` are `SOCKET_NOT_AVAILABLE` (the request did
/// not reach the service, as the SDK's `allows_non_idempotent_retry` says too); `NotReady` is
/// `GLOBAL_CONFIG_LOAD_IN_PROGRESS` (the SDK has not bootstrapped yet).
pub fn to_rebound(reason: SdkReason) -> RetryReason {
    match reason {
        SdkReason::KvNotMyVbucket | SdkReason::KvInvalidVbucketMap => reasons::KV_NOT_MY_VBUCKET,
        SdkReason::KvTemporaryFailure => reasons::KV_TEMPORARY_FAILURE,
        SdkReason::KvCollectionOutdated => reasons::KV_COLLECTION_OUTDATED,
        SdkReason::KvErrorMapRetryIndicated => reasons::KV_ERROR_MAP_RETRY_INDICATED,
        SdkReason::KvLocked => reasons::KV_LOCKED,
        SdkReason::KvSyncWriteInProgress => reasons::KV_SYNC_WRITE_IN_PROGRESS,
        SdkReason::KvSyncWriteRecommitInProgress => reasons::KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS,
        SdkReason::ServiceNotAvailable => reasons::SERVICE_NOT_AVAILABLE,
        SdkReason::SocketClosedWhileInFlight => reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        SdkReason::SocketNotAvailable
        | SdkReason::HttpConnectFailed
        | SdkReason::HttpSendRequestFailed => reasons::SOCKET_NOT_AVAILABLE,
        SdkReason::QueryPreparedStatementFailure => reasons::QUERY_PREPARED_STATEMENT_FAILURE,
        SdkReason::QueryIndexNotFound => reasons::QUERY_INDEX_NOT_FOUND,
        SdkReason::QueryErrorRetryable => reasons::SERVICE_RESPONSE_CODE_INDICATED,
        SdkReason::SearchTooManyRequests => reasons::SEARCH_TOO_MANY_REQUESTS,
        SdkReason::NotReady => reasons::GLOBAL_CONFIG_LOAD_IN_PROGRESS,
        _ => reasons::UNKNOWN,
    }
}

/// The request type a failure for `reason` stands for when the strategy is not told one: the
/// query and search reasons their service's, any other a KV read (the SDK does not tell a
/// strategy which operation failed).
pub fn request_type_of(reason: SdkReason) -> RequestType {
    match reason {
        SdkReason::QueryPreparedStatementFailure
        | SdkReason::QueryIndexNotFound
        | SdkReason::QueryErrorRetryable => RequestType::Query,
        SdkReason::SearchTooManyRequests => RequestType::Search,
        _ => RequestType::Get,
    }
}
