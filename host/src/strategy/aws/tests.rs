//! The rules of smithy-rs's standard retry strategy and its tests
//! (`aws-smithy-runtime/src/client/retries/strategy/standard.rs`, the DynamoDB retry-spec
//! integration tests), held by the `aws` built-in.

use std::time::Duration;

use super::*;
use crate::aws_error::{AwsError, AwsErrorKind};
use crate::reason::reasons;
use crate::request::RequestType;

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

fn throttled() -> RetryReason {
    RetryReason::Aws(AwsError::new(AwsErrorKind::Throttling).with_code("ThrottlingException"))
}

fn transient() -> RetryReason {
    RetryReason::Aws(AwsError::new(AwsErrorKind::Transient).with_status(503))
}

fn server() -> RetryReason {
    RetryReason::Aws(AwsError::new(AwsErrorKind::Server))
}

/// An idempotent request to `dynamodb.us-east-1.amazonaws.com` that has made `retries` retries
/// for `reason`.
fn request(retries: u32, reason: &RetryReason) -> Request {
    let mut request = Request::new(1, RequestType::Http, S(3600))
        .unwrap()
        .with_idempotent(true)
        .with_authority("dynamodb.us-east-1.amazonaws.com");
    for _ in 0..retries {
        request.record_retry(reason, false);
    }
    request
}

fn delay(action: RetryAction) -> Option<Duration> {
    match action {
        RetryAction::RetryAfter { delay, .. } => Some(delay),
        _ => None,
    }
}

/// The delays of a request failing for `reason` until the strategy stops, with jitter 1.
fn delays(strategy: &AwsRetry, reason: &RetryReason) -> Vec<Duration> {
    let mut request = request(0, reason);
    let mut delays = Vec::new();
    while let Some(d) = delay(strategy.decide(&request, reason, None, 1.0)) {
        delays.push(d);
        request.record_retry(reason, false);
    }
    delays
}

/// `calculate_exponential_backoff_where_initial_backoff_is_*`: initial × 2^(attempts-1).
#[test]
fn the_backoff_doubles_from_the_initial_backoff() {
    for (initial, expected) in [
        (1.0, [1.0, 2.0, 4.0]),
        (3.0, [3.0, 6.0, 12.0]),
        (0.03, [0.03, 0.06, 0.12]),
    ] {
        let initial = Duration::from_secs_f64(initial);
        let aws = AwsRetry::default().backoff(initial, initial, S(20));
        for (attempts, expected) in (1..).zip(expected) {
            let got = aws.backoff_before(AwsErrorKind::Throttling, attempts, 1.0);
            assert_eq!(got, Duration::from_secs_f64(expected), "attempt {attempts}");
        }
    }
}

/// `calculate_backoff_overflow_should_gracefully_fallback_to_max_backoff`, and the 20 s cap.
#[test]
fn the_backoff_is_capped_at_max_backoff_even_when_the_power_overflows() {
    let aws = AwsRetry::default().backoff(S(10), S(10), S(20));
    assert_eq!(
        aws.backoff_before(AwsErrorKind::Throttling, 100_000, 1.0),
        S(20)
    );
    let aws = AwsRetry::default().max_attempts(8);
    let expected = [1, 2, 4, 8, 16, 20, 20].map(S);
    assert_eq!(delays(&aws, &throttled()), expected);
}

/// The jitter scales the capped delay: `base × min(…, max_backoff)`.
#[test]
fn jitter_scales_the_capped_delay() {
    let aws = AwsRetry::default();
    assert_eq!(aws.backoff_before(AwsErrorKind::Throttling, 2, 0.5), S(1));
    assert_eq!(
        aws.backoff_before(AwsErrorKind::Throttling, 2, 0.0),
        Duration::ZERO
    );
}

/// `max_attempts` counts the first attempt: 3 attempts are 2 retries (`no_more_attempts`).
#[test]
fn max_attempts_counts_the_first_attempt() {
    assert_eq!(delays(&AwsRetry::default(), &server()), [S(1), S(2)]);
    assert_eq!(delays(&AwsRetry::default().max_attempts(1), &server()), []);
}

/// `v2_1_non_throttling_uses_50ms_backoff` and its throttling twin: 2.1 backs off errors other
/// than throttling from 50 ms, throttling errors from 1 s; 2.0 backs off both from 1 s.
#[test]
fn behaviour_2_1_backs_off_other_errors_from_50_ms() {
    let v2_1 = AwsRetry::new(AwsRetryBehavior::V2_1);
    assert_eq!(delays(&v2_1, &server()), [MS(50), MS(100)]);
    assert_eq!(delays(&v2_1, &transient()), [MS(50), MS(100)]);
    assert_eq!(delays(&v2_1, &throttled()), [S(1), S(2)]);
    assert_eq!(delays(&AwsRetry::default(), &transient()), [S(1), S(2)]);
}

/// `dynamodb_v2_1_uses_25ms_backoff_and_4_max_attempts`: DynamoDB's own retry spec under 2.1,
/// 4 attempts from 25 ms: 25 + 50 + 100 = 175 ms in all.
#[test]
fn dynamodb_under_2_1_waits_175_ms_over_4_attempts() {
    let dynamodb = AwsRetry::new(AwsRetryBehavior::V2_1)
        .max_attempts(4)
        .backoff(S(1), MS(25), S(20));
    let waits = delays(&dynamodb, &transient());
    assert_eq!(waits, [MS(25), MS(50), MS(100)]);
    assert_eq!(waits.iter().sum::<Duration>(), MS(175));
}

/// `x-amz-retry-after`: in 2.0 it replaces the backoff, capped at `max_backoff`; in 2.1 it is
/// held between the computed backoff and 5 s more.
#[test]
fn retry_after_is_capped_as_each_behaviour_caps_it() {
    let r = request(0, &throttled());
    let after = |aws: &AwsRetry, ms| {
        delay(aws.decide(&r, &throttled(), Some(Pushback::After(MS(ms))), 1.0))
    };
    let v2_0 = AwsRetry::default();
    assert_eq!(
        after(&v2_0, 300),
        Some(MS(300)),
        "shorter than the backoff: taken as is"
    );
    assert_eq!(after(&v2_0, 60_000), Some(S(20)), "capped at max_backoff");
    let v2_1 = AwsRetry::new(AwsRetryBehavior::V2_1);
    assert_eq!(
        after(&v2_1, 300),
        Some(S(1)),
        "never below the computed backoff"
    );
    assert_eq!(after(&v2_1, 3_000), Some(S(3)));
    assert_eq!(after(&v2_1, 60_000), Some(S(6)), "at most 5 s past it");
}

/// The retry quota (`TokenBucket`, `quota_replenishes_on_success`): each retry takes its cost,
/// an empty quota ends retries, and a success gives back what its last retry took.
#[test]
fn the_quota_ends_retries_when_empty_and_a_success_refunds_the_last_retry() {
    let aws = AwsRetry::default().quota(15).max_attempts(10);
    let first = request(0, &transient());
    assert!(delay(aws.decide(&first, &transient(), None, 1.0)).is_some());
    assert_eq!(
        aws.quota_left(&first),
        5,
        "a transient retry costs 10 in 2.0"
    );
    assert!(
        delay(aws.decide(&first, &transient(), None, 1.0)).is_none(),
        "5 < 10: refused"
    );
    assert!(
        delay(aws.decide(&first, &throttled(), None, 1.0)).is_some(),
        "throttling costs 5"
    );
    assert_eq!(aws.quota_left(&first), 0);
    let mut retried = request(0, &transient());
    retried.record_retry(&throttled(), false);
    retried.record_retry(&transient(), false);
    aws.record_outcome(&retried, Outcome::Succeeded { attempts: 3 });
    assert_eq!(
        aws.quota_left(&first),
        10,
        "the last retry's cost (transient: 10) comes back"
    );
    aws.record_outcome(&retried, Outcome::Failed { attempts: 3 });
    assert_eq!(aws.quota_left(&first), 10, "a failure gives nothing back");
}

/// `quota_replenishes_on_first_try_success`: a success without retries gives one token back,
/// never past the capacity.
#[test]
fn a_first_try_success_gives_one_token_back_up_to_the_capacity() {
    let aws = AwsRetry::default().quota(12);
    let r = request(0, &server());
    assert!(delay(aws.decide(&r, &server(), None, 1.0)).is_some());
    assert_eq!(aws.quota_left(&r), 7);
    aws.record_outcome(&r, Outcome::Succeeded { attempts: 1 });
    assert_eq!(aws.quota_left(&r), 8);
    for _ in 0..10 {
        aws.record_outcome(&r, Outcome::Succeeded { attempts: 1 });
    }
    assert_eq!(aws.quota_left(&r), 12);
}

/// 2.1's costs: 5 for throttling, 14 for any other, so a full quota of 500 pays 35 transient
/// retries; the SDK's partitions are kept apart (here, by endpoint).
#[test]
fn behaviour_2_1_charges_14_per_transient_retry_per_partition() {
    let aws = AwsRetry::new(AwsRetryBehavior::V2_1).max_attempts(100);
    let r = request(0, &transient());
    let granted = (0..100)
        .filter(|_| delay(aws.decide(&r, &transient(), None, 1.0)).is_some())
        .count();
    assert_eq!(granted, 35);
    assert_eq!(aws.quota_left(&r), 500 - 35 * 14);
    let elsewhere = request(0, &transient()).with_authority("s3.eu-west-1.amazonaws.com");
    assert_eq!(aws.quota_left(&elsewhere), 500);
}

/// Only what the SDK retries is retried: its reasons, and an attempt cut by its timeout
/// (transient); a gRPC status or an HTTP status is not an AWS verdict.
#[test]
fn only_the_sdk_s_retryable_errors_are_retried() {
    let aws = AwsRetry::default();
    let r = request(0, &transient());
    assert!(delay(aws.decide(&r, &reasons::ATTEMPT_TIMEOUT, None, 1.0)).is_some());
    assert!(delay(aws.decide(&r, &RetryReason::HttpStatus(503), None, 1.0)).is_none());
    assert!(delay(aws.decide(&r, &reasons::SOCKET_NOT_AVAILABLE, None, 1.0)).is_none());
}

/// Reference 001's safety guard: a non-idempotent request is retried after a throttling error
/// (the service refused it unprocessed), even once it was written, and never after a transient
/// one (it may have been applied); the refused retry takes no quota.
#[test]
fn a_non_idempotent_request_is_retried_only_after_throttling() {
    let aws = AwsRetry::default();
    let mut put = request(0, &transient()).with_idempotent(false);
    put.mark_sent();
    assert!(!put.may_be_sent_again(&transient()));
    assert!(!put.may_be_sent_again(&RetryReason::HttpStatus(429)));
    assert!(delay(aws.decide(&put, &transient(), None, 1.0)).is_none());
    assert_eq!(aws.quota_left(&put), 500);
    assert!(put.may_be_sent_again(&throttled()));
    assert!(delay(aws.decide(&put, &throttled(), None, 1.0)).is_some());
}
