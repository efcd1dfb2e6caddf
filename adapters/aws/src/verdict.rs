//! What the SDK's own retry classifiers say about an attempt, as a Rebound reason: the SDK
//! keeps classifying (its lists of throttling and transient codes, its statuses, its timeouts
//! and I/O errors, the errors a service models as retryable), and Rebound decides. The reason
//! carries the response's error code and status so that a policy can tell errors apart.

use std::time::Duration;

use aws_smithy_runtime::client::retries::classifiers::run_classifiers_on_ctx;
use aws_smithy_runtime_api::client::interceptors::context::InterceptorContext;
use aws_smithy_runtime_api::client::retries::classifiers::{
    ClassifyRetry, RetryAction, RetryClassifierPriority, RetryReason as SdkReason,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::retry::ErrorKind;
use rebound::aws_error::{bare_code, AwsError, AwsErrorKind};

/// The name of [`KeepDecidedDelay`], which the verdict read for Rebound leaves out.
const KEEP_DECIDED_DELAY: &str = "rebound: keep the decided delay";

/// The SDK's verdict on the attempt `ctx` ended: the error it calls retryable, with the
/// server's `x-amz-retry-after`, or `None` when the SDK would not retry.
pub(crate) fn sdk_verdict(
    ctx: &InterceptorContext,
    components: &RuntimeComponents,
) -> Option<(AwsError, Option<Duration>)> {
    let classifiers = (components.retry_classifiers()).filter(|c| c.name() != KEEP_DECIDED_DELAY);
    match run_classifiers_on_ctx(classifiers, ctx) {
        RetryAction::RetryIndicated(SdkReason::RetryableError { kind, retry_after }) => {
            let mut error = AwsError::new(kind_of(kind));
            if let Some(response) = ctx.response() {
                error.status = Some(response.status().as_u16());
                error.code = error_code(response).map(Into::into);
            }
            Some((error, retry_after))
        }
        _ => None,
    }
}

/// Rebound's kind for the SDK's.
fn kind_of(kind: ErrorKind) -> AwsErrorKind {
    match kind {
        ErrorKind::ThrottlingError => AwsErrorKind::Throttling,
        ErrorKind::ServerError => AwsErrorKind::Server,
        ErrorKind::ClientError => AwsErrorKind::Client,
        _ => AwsErrorKind::Transient,
    }
}

/// The error code an AWS response names: the `x-amzn-errortype` header (the JSON protocols),
/// else the body's `__type` or `code` (awsJson, restJson), else its `<Code>` (the XML
/// protocols).
fn error_code(response: &Response) -> Option<String> {
    if let Some(header) = response.headers().get("x-amzn-errortype") {
        return Some(bare_code(header).to_owned());
    }
    let body = response.body().bytes()?;
    if let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice(body) {
        let code = (fields.get("__type").or_else(|| fields.get("code")))?.as_str()?;
        return Some(bare_code(code).to_owned());
    }
    let text = std::str::from_utf8(body).ok()?;
    let start = text.find("<Code>")? + "<Code>".len();
    let end = start + text[start..].find("</Code>")?;
    Some(bare_code(&text[start..end]).to_owned())
}

/// The last of the SDK's retry classifiers: it drops the server's `x-amz-retry-after` from a
/// retryable verdict, so that the SDK waits the delay Rebound decided (which already took
/// that pushback into account) rather than the server's.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepDecidedDelay;

impl ClassifyRetry for KeepDecidedDelay {
    fn classify_retry(&self, _ctx: &InterceptorContext) -> RetryAction {
        RetryAction::NoActionIndicated
    }

    fn classify_retry_v2(&self, _ctx: &InterceptorContext, previous: &RetryAction) -> RetryAction {
        match previous {
            RetryAction::RetryIndicated(SdkReason::RetryableError {
                kind,
                retry_after: Some(_),
            }) => RetryAction::retryable_error(*kind),
            _ => RetryAction::NoActionIndicated,
        }
    }

    fn name(&self) -> &'static str {
        KEEP_DECIDED_DELAY
    }

    fn priority(&self) -> RetryClassifierPriority {
        RetryClassifierPriority::run_after(RetryClassifierPriority::transient_error_classifier())
    }
}
