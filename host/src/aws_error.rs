//! An AWS error as the AWS SDK's retry classifiers see it, so that it reaches a policy as the
//! SDK sees it: the reasons `AWS_THROTTLING` and `AWS_TRANSIENT` carry an [`AwsError`], whose
//! [`AwsErrorKind`] is the SDK's error kind, with the error code (read as the SDK reads it,
//! [`bare_code`]) and the status that came with it.

use serde::{Deserialize, Serialize};

/// The error codes the AWS SDKs classify as transient (smithy-rs `TRANSIENT_ERRORS`).
pub const TRANSIENT_ERROR_CODES: [&str; 2] = ["RequestTimeout", "RequestTimeoutException"];

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

    /// awsJson's `__type` carries a namespace, restJson's `x-amzn-errortype` a suffix; the SDK
    /// reads the code without either.
    #[test]
    fn codes_are_read_without_namespace_or_suffix() {
        let code = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException";
        assert_eq!(bare_code(code), "ProvisionedThroughputExceededException");
        assert_eq!(
            bare_code("ThrottlingException:http://internal.amazon.com/"),
            "ThrottlingException"
        );
        assert_eq!(bare_code("RequestTimeout"), "RequestTimeout");
    }
}
