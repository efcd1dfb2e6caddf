//! Server pushback: the delay a server asks for before a retry, or its word not to retry —
//! HTTP's `Retry-After` (delay-seconds or an HTTP-date, RFC 9110 §10.2.3) on the services' HTTP
//! answers (search 429, query/analytics/views 503), and gRPC's pushback in milliseconds
//! (gRFC A6: a negative or unreadable pushback means do not retry). The built-in strategies
//! never retry sooner than it asks and do not retry when it says stop; the orchestrator caps
//! the delay by the deadline as any other.

use std::time::{Duration, SystemTime};

use crate::action::RetryAction;

/// What the server said about retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pushback {
    /// Retry no sooner than this.
    After(Duration),
    /// Do not retry (a negative or unreadable pushback, gRFC A6).
    Stop,
}

impl Pushback {
    /// An HTTP `Retry-After` value at `now`: delay-seconds (a non-negative integer), or an
    /// HTTP-date (a date already past asks for no delay). Anything else — a negative number,
    /// a fraction, garbage — is a pushback that cannot be read: [`Pushback::Stop`].
    pub fn from_retry_after(value: &str, now: SystemTime) -> Pushback {
        let value = value.trim();
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            // Too many seconds to hold is as long as a deadline can be: the deadline caps it.
            let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
            return Pushback::After(Duration::from_secs(seconds));
        }
        match httpdate::parse_http_date(value) {
            Ok(date) => Pushback::After(date.duration_since(now).unwrap_or(Duration::ZERO)),
            Err(_) => Pushback::Stop,
        }
    }

    /// gRPC's `grpc-retry-pushback-ms` as received, every value it was sent with (gRFC A6
    /// "Pushback": "an ASCII encoded signed 32-bit integer"; "negative or unparseable" means do
    /// not retry): none when it was not sent; one value that reads as a signed 32-bit integer
    /// (around which an HTTP field's spaces are ignored) is a delay when not negative. Anything
    /// else says do not retry: a negative value, an empty one, one that is not a number or
    /// does not fit in 32 bits, and a header sent more than once (grpc-go does not retry a
    /// call whose pushback has several values).
    pub fn from_grpc_header<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Pushback> {
        let mut values = values.into_iter();
        let first = values.next()?;
        if values.next().is_some() {
            return Some(Pushback::Stop);
        }
        Some(match first.trim().parse::<i32>() {
            Ok(millis) => Pushback::from_millis(millis.into()),
            Err(_) => Pushback::Stop,
        })
    }

    /// gRPC's pushback in milliseconds: negative means do not retry.
    pub fn from_millis(millis: i64) -> Pushback {
        match u64::try_from(millis) {
            Ok(millis) => Pushback::After(Duration::from_millis(millis)),
            Err(_) => Pushback::Stop,
        }
    }

    /// `action` as the server's word allows: a retry no sooner than asked, or none at all.
    #[inline]
    pub fn honour(pushback: Option<Pushback>, action: RetryAction) -> RetryAction {
        match (pushback, action) {
            (
                Some(Pushback::After(at_least)),
                RetryAction::RetryAfter {
                    delay,
                    node,
                    consistency,
                    attempt_timeout,
                },
            ) => RetryAction::RetryAfter {
                delay: delay.max(at_least),
                node,
                consistency,
                attempt_timeout,
            },
            (Some(Pushback::Stop), action) if action.is_retry() => RetryAction::NoRetry,
            (_, action) => action,
        }
    }
}
