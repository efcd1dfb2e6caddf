//! What a failed attempt costs a throttle, by the class of its reason: the backend said it is
//! overloaded, the attempt timed out, the backend rejected the request itself (it would fail
//! the same way again: a malformed or unauthorised request, not a failing server), or any other
//! failure. gRFC A6 counts only server failures ("this avoids conflating server failure with
//! responses to malformed requests"), so a rejection costs nothing by default; AWS's standard
//! retry quota prices timeouts above other failures, which a configuration can do here.

use serde::Deserialize;

use crate::aws_error::{AwsError, AwsErrorKind, TRANSIENT_ERROR_CODES};
use crate::cassandra_types::ServerErrorKind;
use crate::grpc::GrpcCode;
use crate::pushback::Pushback;
use crate::reason::{ReasonKind, RetryReason};

/// The class of a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// The backend said it is overloaded or asked the client to back off: HTTP 429 and 503,
    /// gRPC `RESOURCE_EXHAUSTED`, Cassandra's overloaded coordinator, Couchbase's temporary
    /// failures and too-many-requests, an AWS throttling error or 503, and any pushback.
    Overload,
    /// The attempt timed out: HTTP 408 and 504, gRPC `DEADLINE_EXCEEDED`, Cassandra's read and
    /// write timeouts, an AWS transient error with no response (a timeout or a lost
    /// connection), a 504 or a timeout code.
    Timeout,
    /// The backend rejected the request itself: other HTTP 4xx statuses, gRPC's codes about
    /// the request (`INVALID_ARGUMENT`, `NOT_FOUND`, `ALREADY_EXISTS`, `PERMISSION_DENIED`,
    /// `FAILED_PRECONDITION`, `OUT_OF_RANGE`, `UNIMPLEMENTED`, `UNAUTHENTICATED`), Cassandra's
    /// query validation errors.
    Rejected,
    /// Any other failure.
    Other,
}

impl FailureClass {
    /// The class of an attempt that failed for `reason`, the backend's `pushback` with it.
    pub fn of(reason: &RetryReason, pushback: Option<Pushback>) -> FailureClass {
        if pushback.is_some() {
            return FailureClass::Overload;
        }
        match reason {
            RetryReason::HttpStatus(429 | 503) => FailureClass::Overload,
            RetryReason::HttpStatus(408 | 504) => FailureClass::Timeout,
            RetryReason::HttpStatus(400..=499) => FailureClass::Rejected,
            RetryReason::GrpcStatus(code) => match code {
                GrpcCode::ResourceExhausted => FailureClass::Overload,
                GrpcCode::DeadlineExceeded => FailureClass::Timeout,
                GrpcCode::InvalidArgument
                | GrpcCode::NotFound
                | GrpcCode::AlreadyExists
                | GrpcCode::PermissionDenied
                | GrpcCode::FailedPrecondition
                | GrpcCode::OutOfRange
                | GrpcCode::Unimplemented
                | GrpcCode::Unauthenticated => FailureClass::Rejected,
                _ => FailureClass::Other,
            },
            RetryReason::ErrorResponse(ServerErrorKind::Overloaded) => FailureClass::Overload,
            RetryReason::ErrorResponse(ServerErrorKind::QueryValidation) => FailureClass::Rejected,
            RetryReason::ReadTimeout(_) | RetryReason::WriteTimeout(_) => FailureClass::Timeout,
            RetryReason::Aws(error) => aws_class(error),
            _ => match reason.kind() {
                ReasonKind::KvTemporaryFailure
                | ReasonKind::SearchTooManyRequests
                | ReasonKind::ViewsTemporaryFailure
                | ReasonKind::AnalyticsTemporaryFailure => FailureClass::Overload,
                _ => FailureClass::Other,
            },
        }
    }
}

/// The class of an AWS error, by the SDK's kind and what the response said.
fn aws_class(error: &AwsError) -> FailureClass {
    let timeout_code = (error.code.as_deref()).is_some_and(|c| TRANSIENT_ERROR_CODES.contains(&c));
    match (error.kind, error.status) {
        (AwsErrorKind::Throttling, _) | (_, Some(503)) => FailureClass::Overload,
        (AwsErrorKind::Transient, None | Some(504)) => FailureClass::Timeout,
        _ if timeout_code => FailureClass::Timeout,
        _ => FailureClass::Other,
    }
}

/// What a failure of each class costs, in tokens (`costs = { … }`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct FailureCosts {
    /// An overload answer: 1.
    pub overload: f64,
    /// A timeout: 1.
    pub timeout: f64,
    /// A rejection of the request itself: 0 (not a server failure).
    pub rejected: f64,
    /// Any other failure: 1.
    pub other: f64,
}

impl Default for FailureCosts {
    fn default() -> Self {
        FailureCosts {
            overload: 1.0,
            timeout: 1.0,
            rejected: 0.0,
            other: 1.0,
        }
    }
}

impl FailureCosts {
    /// What a failure of each class costs: an overload answer, a timeout, a rejection of the
    /// request itself, any other failure.
    pub fn new(overload: f64, timeout: f64, rejected: f64, other: f64) -> Self {
        FailureCosts {
            overload,
            timeout,
            rejected,
            other,
        }
    }

    /// The cost of a failure of `class`.
    pub fn of(&self, class: FailureClass) -> f64 {
        match class {
            FailureClass::Overload => self.overload,
            FailureClass::Timeout => self.timeout,
            FailureClass::Rejected => self.rejected,
            FailureClass::Other => self.other,
        }
    }

    /// Each class with its cost, for checks and messages.
    pub(crate) fn each(&self) -> [(&'static str, f64); 4] {
        [
            ("overload", self.overload),
            ("timeout", self.timeout),
            ("rejected", self.rejected),
            ("other", self.other),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// docs/decisions.md "Throttle failure classes": the classes of the HTTP, gRPC and AWS
    /// answers and of a pushback.
    #[test]
    fn statuses_fall_into_their_classes() {
        let class = |reason| FailureClass::of(&reason, None);
        assert_eq!(class(RetryReason::HttpStatus(429)), FailureClass::Overload);
        assert_eq!(class(RetryReason::HttpStatus(503)), FailureClass::Overload);
        assert_eq!(class(RetryReason::HttpStatus(504)), FailureClass::Timeout);
        assert_eq!(class(RetryReason::HttpStatus(404)), FailureClass::Rejected);
        assert_eq!(class(RetryReason::HttpStatus(500)), FailureClass::Other);
        assert_eq!(
            class(RetryReason::GrpcStatus(GrpcCode::ResourceExhausted)),
            FailureClass::Overload
        );
        assert_eq!(
            class(RetryReason::GrpcStatus(GrpcCode::InvalidArgument)),
            FailureClass::Rejected
        );
        assert_eq!(
            class(RetryReason::GrpcStatus(GrpcCode::Unavailable)),
            FailureClass::Other
        );
        assert_eq!(
            class(crate::reason::reasons::KV_TEMPORARY_FAILURE),
            FailureClass::Overload
        );
        let aws = |kind, code: Option<&str>, status: Option<u16>| {
            let mut error = AwsError::new(kind);
            error.code = code.map(Into::into);
            error.status = status;
            class(RetryReason::Aws(error))
        };
        use AwsErrorKind::{Server, Throttling, Transient};
        let throttled = aws(Throttling, Some("ThrottlingException"), Some(400));
        assert_eq!(throttled, FailureClass::Overload);
        assert_eq!(aws(Transient, None, Some(503)), FailureClass::Overload);
        assert_eq!(aws(Transient, None, None), FailureClass::Timeout);
        assert_eq!(
            aws(Transient, Some("RequestTimeout"), Some(400)),
            FailureClass::Timeout
        );
        assert_eq!(aws(Transient, None, Some(500)), FailureClass::Other);
        assert_eq!(
            aws(Server, Some("InternalError"), Some(500)),
            FailureClass::Other
        );
        assert_eq!(
            FailureClass::of(
                &RetryReason::HttpStatus(500),
                Some(Pushback::After(Duration::from_secs(1)))
            ),
            FailureClass::Overload
        );
    }
}
