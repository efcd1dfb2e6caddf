//! Classification of the HTTP services' errors (reference 001 "Response Code Retry List":
//! Query, Analytics, Search, View), and of a plain HTTP service's statuses by a table.

use crate::reason::{reasons, RetryReason};

use super::{Classification, FailureKind};

/// Query: 4040, 4050 and 4070 are prepared-statement failures; 5000 is an index-not-found
/// only if the message contains `queryport.indexNotFound`.
pub fn classify_query(code: u32, message: &str) -> Classification {
    match code {
        4040 | 4050 | 4070 => Classification::retry(reasons::QUERY_PREPARED_STATEMENT_FAILURE),
        5000 if message.contains("queryport.indexNotFound") => {
            Classification::retry(reasons::QUERY_INDEX_NOT_FOUND)
        }
        _ => Classification::fail(code, None, FailureKind::NotRetryable),
    }
}

/// Analytics: 23000, 23003 and 23007 are temporary failures.
pub fn classify_analytics(code: u32) -> Classification {
    match code {
        23000 | 23003 | 23007 => Classification::retry(reasons::ANALYTICS_TEMPORARY_FAILURE),
        _ => Classification::fail(code, None, FailureKind::NotRetryable),
    }
}

/// Search: HTTP 429 is "too many requests"; 2xx is a success.
pub fn classify_search(status: u16) -> Classification {
    match status {
        200..=299 => Classification::Success,
        429 => Classification::retry(reasons::SEARCH_TOO_MANY_REQUESTS),
        _ => Classification::fail(status.into(), None, FailureKind::NotRetryable),
    }
}

/// HTTP statuses of views retried as VIEWS_TEMPORARY_FAILURE (302 is listed there too but is
/// VIEWS_NO_ACTIVE_PARTITION, which takes precedence).
const VIEWS_TEMPORARY: [u16; 14] = [
    300, 301, 303, 307, 401, 408, 409, 412, 416, 417, 501, 502, 503, 504,
];

/// Views: 302 is "no active partition"; the listed statuses, 404 with `"reason":"missing"`,
/// and 500 unless the body names `{not_found, missing_named_view}` or `"badarg"` alongside
/// `error`, are temporary failures; 2xx is a success.
pub fn classify_views(status: u16, body: &str) -> Classification {
    let temporary = match status {
        200..=299 => return Classification::Success,
        302 => return Classification::retry(reasons::VIEWS_NO_ACTIVE_PARTITION),
        404 => body.contains(r#""reason":"missing""#),
        500 => {
            let has_error = body.contains("error");
            !(has_error
                && (body.contains("{not_found, missing_named_view}")
                    || body.contains(r#""badarg""#)))
        }
        s => VIEWS_TEMPORARY.contains(&s),
    };
    if temporary {
        Classification::retry(reasons::VIEWS_TEMPORARY_FAILURE)
    } else {
        Classification::fail(status.into(), None, FailureKind::NotRetryable)
    }
}

/// The statuses of a plain HTTP service retried by default: request timeout, too many
/// requests, and the server errors a retry may clear (500, 502, 503, 504).
pub const DEFAULT_HTTP_RETRY_STATUSES: [u16; 6] = [408, 429, 500, 502, 503, 504];

/// A plain HTTP service's answer (RFC 9110 §15): below 400 a success (a redirect is an answer
/// the client follows or hands back, not a failure); a status in `retryable` (e.g.
/// [`DEFAULT_HTTP_RETRY_STATUSES`]) an `HTTP_STATUS` failure to decide about; any other not
/// retried.
pub fn classify_http(status: u16, retryable: &[u16]) -> Classification {
    classify_http_answer(status, retryable, false)
}

/// The statuses whose `Retry-After` makes them a failure to decide about whatever the table:
/// 413 (RFC 9110 §15.5.14: a `Retry-After` says the condition is temporary), 429 (RFC 6585
/// §4) and 503 (RFC 9110 §15.6.4), as urllib3's `Retry.RETRY_AFTER_STATUS_CODES`.
pub const RETRY_AFTER_STATUSES: [u16; 3] = [413, 429, 503];

/// A plain HTTP service's answer, as [`classify_http`], when the answer carried a
/// `Retry-After` or not (`retry_after`): a status of [`RETRY_AFTER_STATUSES`] that carried one
/// is an `HTTP_STATUS` failure even outside `retryable`, so the policy decides whether the
/// server's word is waited for (the `http` built-in's `respect_retry_after`).
pub fn classify_http_answer(status: u16, retryable: &[u16], retry_after: bool) -> Classification {
    match status {
        0..=399 => Classification::Success,
        s if retryable.contains(&s) || (retry_after && RETRY_AFTER_STATUSES.contains(&s)) => {
            Classification::retry(RetryReason::HttpStatus(s))
        }
        s => Classification::fail(s.into(), None, FailureKind::NotRetryable),
    }
}
