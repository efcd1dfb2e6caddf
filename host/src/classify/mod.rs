//! Response classification (reference 001 "Response Code Retry List"): which KV status,
//! query/analytics error code or HTTP status is retried, and for which reason; a plain HTTP
//! service's statuses by a table (`classify_http`). Everything not
//! on the list is not retried; unknown KV statuses are looked up in the node's error map
//! (reference 001 "KV Error Map Handling").

mod http;
mod kv;

pub use http::{
    classify_analytics, classify_http, classify_http_answer, classify_query, classify_search,
    classify_views, DEFAULT_HTTP_RETRY_STATUSES, RETRY_AFTER_STATUSES,
};
pub use kv::{classify_kv, known_status_name, KvOpcode};

use std::borrow::Cow;

use crate::errormap::{ErrorMap, RetrySpec};
use crate::reason::RetryReason;

/// A raw response to classify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response<'a> {
    /// A KV response: the request's opcode and the response status.
    Kv {
        /// The opcode of the request.
        opcode: KvOpcode,
        /// The response status.
        status: u16,
    },
    /// A query error: its code and message.
    Query {
        /// The error code.
        code: u32,
        /// The error message.
        message: &'a str,
    },
    /// An analytics error code.
    Analytics {
        /// The error code.
        code: u32,
    },
    /// A search HTTP response.
    Search {
        /// The HTTP status.
        status: u16,
    },
    /// A views HTTP response.
    Views {
        /// The HTTP status.
        status: u16,
        /// The response body.
        body: &'a str,
    },
    /// A plain HTTP service's answer, classified by the default table
    /// ([`DEFAULT_HTTP_RETRY_STATUSES`]; [`classify_http_answer`] takes another) and by whether
    /// it carried a `Retry-After`: a 413, 429 or 503 that did is a failure to decide about
    /// whatever the table ([`RETRY_AFTER_STATUSES`]).
    Http {
        /// The HTTP status.
        status: u16,
        /// Whether the answer carried a `Retry-After` header.
        retry_after: bool,
    },
    /// A gRPC call's status: OK a success, any other a `GRPC_STATUS` failure (which codes are
    /// retried is the policy's to say, as gRFC A6's `retryableStatusCodes`).
    Grpc {
        /// The status code.
        code: crate::grpc::GrpcCode,
    },
}

/// Why a response is not retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A known response that is not on the retry list.
    NotRetryable,
    /// LOCKED on an Unlock: surfaced as a CAS mismatch, never retried.
    CasMismatch,
    /// COLLECTION_OUTDATED on GetCollectionID: the collection does not exist.
    CollectionNotFound,
    /// A DCP command: excluded from the retry list.
    DcpExcluded,
    /// An unknown KV status whose error-map entry has no retry indication.
    ErrorMapNoRetry,
    /// An unknown KV status absent from the error map (or no map).
    UnknownStatus,
}

/// A response that is not retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The KV status, query/analytics code or HTTP status.
    pub code: u32,
    /// Its name, where known.
    pub name: Option<Cow<'static, str>>,
    /// Why it is not retried.
    pub kind: FailureKind,
}

/// The classification of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Classification {
    /// The response is a success.
    Success,
    /// Forward to the orchestrator with this reason. `retry_spec` is the error map's retry
    /// specification, for strategies that opt in to its timings.
    Retry {
        /// The reason.
        reason: RetryReason,
        /// The error-map retry spec, if the reason came from the map and it has one.
        retry_spec: Option<RetrySpec>,
    },
    /// Not retried.
    Fail(Failure),
}

impl Classification {
    pub(crate) fn retry(reason: RetryReason) -> Self {
        Classification::Retry {
            reason,
            retry_spec: None,
        }
    }

    pub(crate) fn fail(code: u32, name: Option<Cow<'static, str>>, kind: FailureKind) -> Self {
        Classification::Fail(Failure { code, name, kind })
    }

    /// The retry reason, if the response is to be retried.
    pub fn reason(&self) -> Option<&RetryReason> {
        match self {
            Classification::Retry { reason, .. } => Some(reason),
            _ => None,
        }
    }
}

/// Classifies `response`. `error_map` is the map of the node that answered (KV only).
pub fn classify(response: Response<'_>, error_map: Option<&ErrorMap>) -> Classification {
    match response {
        Response::Kv { opcode, status } => classify_kv(opcode, status, error_map),
        Response::Query { code, message } => classify_query(code, message),
        Response::Analytics { code } => classify_analytics(code),
        Response::Search { status } => classify_search(status),
        Response::Views { status, body } => classify_views(status, body),
        Response::Http {
            status,
            retry_after,
        } => classify_http_answer(status, &DEFAULT_HTTP_RETRY_STATUSES, retry_after),
        Response::Grpc {
            code: crate::grpc::GrpcCode::Ok,
        } => Classification::Success,
        Response::Grpc { code } => Classification::retry(RetryReason::GrpcStatus(code)),
    }
}
