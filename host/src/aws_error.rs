//! The AWS SDKs' retry classification, so that an AWS error reaches a policy as the SDK sees it:
//! the reasons `AWS_THROTTLING` and `AWS_TRANSIENT` carry an [`AwsError`], whose
//! [`AwsErrorKind`] is the SDK's error kind. [`AwsError::classify`] applies the SDK's own
//! lists (smithy-rs `aws-runtime` `THROTTLING_ERRORS` and `TRANSIENT_ERRORS`, and the
//! transient statuses of `aws-smithy-runtime`'s `HttpStatusCodeClassifier`) to a response's
//! error code and status, for callers that have those and not the SDK's verdict.

use serde::{Deserialize, Serialize};

/// The error codes the AWS SDKs classify as throttling (smithy-rs `THROTTLING_ERRORS`).
pub const THROTTLING_ERROR_CODES: [&str; 14] = [
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
];

/// The error codes the AWS SDKs classify as transient (smithy-rs `TRANSIENT_ERRORS`).
pub const TRANSIENT_ERROR_CODES: [&str; 2] = ["RequestTimeout", "RequestTimeoutException"];

/// The response statuses the AWS SDKs classify as transient (smithy-rs
/// `TRANSIENT_ERROR_STATUS_CODES`).
pub const TRANSIENT_STATUSES: [u16; 4] = [500, 502, 503, 504];

/// The AWS SDK's kind of a retryable error (smithy-rs `ErrorKind`), which sets what a retry
/// costs in the SDK's retry quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AwsErrorKind {
    /// The service throttled the request: it was refused, not processed.
    Throttling,
    /// A transient error: a timeout, a lost connection, a 5xx status or a transient code.
    Transient,
    /// An error the service's model marks retryable as a server error.
    Server,
    /// An error the service's model marks retryable as a client error.
    Client,
}

/// An error the AWS SDK's retry classifiers call retryable, with what the response said.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsError {
    /// The SDK's kind of the error.
    pub kind: AwsErrorKind,
    /// The service's error code (`ThrottlingException`, `RequestTimeout`, ...), when the
    /// response named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Box<str>>,
    /// The response's HTTP status, when a response came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl AwsError {
    /// An error of `kind`, with no code and no status.
    pub const fn new(kind: AwsErrorKind) -> Self {
        AwsError {
            kind,
            code: None,
            status: None,
        }
    }

    /// With the service's error code.
    pub fn with_code(mut self, code: impl Into<Box<str>>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// With the response's HTTP status.
    pub const fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// The error as the SDK's standard classifiers see a response with this error `code` and
    /// `status`: throttling for a throttling code, transient for a transient code or status;
    /// `None` when the SDK would not retry it. The code is read as the SDK reads it: a
    /// namespace before `#` and anything after `:` are not part of it.
    pub fn classify(code: Option<&str>, status: Option<u16>) -> Option<AwsError> {
        let code = code.map(bare_code).filter(|code| !code.is_empty());
        let kind = match code {
            Some(code) if THROTTLING_ERROR_CODES.contains(&code) => AwsErrorKind::Throttling,
            Some(code) if TRANSIENT_ERROR_CODES.contains(&code) => AwsErrorKind::Transient,
            _ if status.is_some_and(|s| TRANSIENT_STATUSES.contains(&s)) => AwsErrorKind::Transient,
            _ => return None,
        };
        Some(AwsError {
            kind,
            code: code.map(Into::into),
            status,
        })
    }
}

/// An error code without the namespace (`com.amazonaws.dynamodb.v20120810#`) or the suffix
/// (`:http://internal.amazon.com/...`) some protocols wrap it in.
pub fn bare_code(code: &str) -> &str {
    let code = code.split(':').next().unwrap_or(code);
    code.rsplit('#').next().unwrap_or(code).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// smithy-rs `AwsErrorCodeClassifier`: a throttling code is a throttling error, whatever
    /// the status (DynamoDB answers 400).
    #[test]
    fn throttling_codes_are_throttling_errors_at_any_status() {
        for code in THROTTLING_ERROR_CODES {
            let error = AwsError::classify(Some(code), Some(400)).unwrap();
            assert_eq!(error.kind, AwsErrorKind::Throttling, "{code}");
            assert_eq!(error.code.as_deref(), Some(code));
        }
    }

    /// smithy-rs `AwsErrorCodeClassifier` and `HttpStatusCodeClassifier`: transient codes and
    /// the statuses 500, 502, 503 and 504 are transient; other statuses are not retried.
    #[test]
    fn transient_codes_and_statuses_are_transient_and_the_rest_is_not_retried() {
        let kind = |code, status| AwsError::classify(code, status).map(|e| e.kind);
        assert_eq!(
            kind(Some("RequestTimeout"), Some(400)),
            Some(AwsErrorKind::Transient)
        );
        for status in TRANSIENT_STATUSES {
            assert_eq!(kind(None, Some(status)), Some(AwsErrorKind::Transient));
        }
        assert_eq!(kind(None, Some(501)), None);
        assert_eq!(kind(None, Some(429)), None);
        assert_eq!(kind(Some("ValidationException"), Some(400)), None);
        assert_eq!(
            kind(Some("ConditionalCheckFailedException"), Some(400)),
            None
        );
    }

    /// awsJson's `__type` carries a namespace, restJson's `x-amzn-errortype` a suffix.
    #[test]
    fn codes_are_read_without_namespace_or_suffix() {
        let code = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException";
        let error = AwsError::classify(Some(code), Some(400)).unwrap();
        assert_eq!(
            error.code.as_deref(),
            Some("ProvisionedThroughputExceededException")
        );
        assert_eq!(
            bare_code("ThrottlingException:http://internal.amazon.com/"),
            "ThrottlingException"
        );
    }
}
