//! Plain HTTP requests: idempotency from the method (RFC 9110 §9.2.2) unless declared, the
//! `http` built-in's status table, `Retry-After` (§10.2.3), its backoff and attempts, and the
//! safety guard: a request that is not idempotent is retried only if it was never sent
//! (docs/decisions.md "Retries of HTTP requests and gRPC calls").

use crate::common;

use std::time::{Duration, SystemTime};

use rebound::config::{Builtin, BuiltinPolicy};
use rebound::{
    reasons, Decision, DecisionContext, HttpMethod, Orchestrator, Pushback, Request, RequestType,
    RetryReason,
};
use serde_json::json;

fn http(method: HttpMethod) -> Request {
    Request::new(1, RequestType::Http, Duration::from_secs(30))
        .unwrap()
        .with_method(method)
        .with_authority("api.example.com")
        .with_route("/v1/items")
}

fn sent(method: HttpMethod) -> Request {
    let mut request = http(method);
    request.mark_dispatched("api-1");
    request
}

fn builtin(params: serde_json::Value) -> Orchestrator {
    let policy = BuiltinPolicy::new(Builtin::Http, params.as_object().unwrap()).unwrap();
    Orchestrator::new(policy.strategy())
}

fn decide(
    orchestrator: &Orchestrator,
    request: &mut Request,
    reason: &RetryReason,
    pushback: Option<Pushback>,
) -> Option<Duration> {
    let context = DecisionContext::new(reason)
        .with_pushback(pushback)
        .at(request.start());
    match futures::executor::block_on(orchestrator.decide(request, &context)) {
        Decision::Retry(plan) => Some(plan.delay),
        _ => None,
    }
}

/// RFC 9110 §9.2.2: GET, HEAD, OPTIONS, TRACE, PUT and DELETE are idempotent; POST, PATCH
/// and CONNECT are not; a request without a method is not; a declaration overrides.
#[test]
fn idempotency_follows_the_method_unless_declared() {
    use HttpMethod::*;
    for (method, idempotent) in [
        (Get, true),
        (Head, true),
        (Options, true),
        (Trace, true),
        (Put, true),
        (Delete, true),
        (Post, false),
        (Patch, false),
        (Connect, false),
    ] {
        assert_eq!(http(method).is_idempotent(), idempotent, "{method:?}");
    }
    let no_method = Request::new(1, RequestType::Http, Duration::from_secs(1)).unwrap();
    assert!(!no_method.is_idempotent());
    assert!(http(Post).with_idempotent(true).is_idempotent());
    assert!(!http(Get).with_idempotent(false).is_idempotent());
}

/// The `http` built-in retries 408, 429, 500, 502, 503 and 504 by default and no other
/// status; `statuses` replaces the table.
#[test]
fn the_status_table_decides_which_responses_are_retried() {
    let default = builtin(json!({}));
    for status in [
        400, 401, 403, 404, 408, 409, 422, 429, 500, 501, 502, 503, 504, 505,
    ] {
        let retried = decide(
            &default,
            &mut sent(HttpMethod::Get),
            &RetryReason::HttpStatus(status),
            None,
        )
        .is_some();
        let listed = [408, 429, 500, 502, 503, 504].contains(&status);
        assert_eq!(retried, listed, "{status}");
    }
    let only_503 = builtin(json!({"statuses": [503]}));
    let reason = RetryReason::HttpStatus(502);
    assert!(decide(&only_503, &mut sent(HttpMethod::Get), &reason, None).is_none());
    let refused = BuiltinPolicy::new(
        Builtin::Http,
        json!({"statuses": [200]}).as_object().unwrap(),
    )
    .unwrap_err();
    assert_eq!(refused.field, "statuses");
}

/// The safety guard, for the built-in and for a policy that always asks for a retry: a POST
/// or PATCH that was sent is never retried (an error status, a connection lost in flight); one
/// that was never sent is; an idempotent request is retried either way.
#[test]
fn a_request_that_is_not_idempotent_is_retried_only_if_never_sent() {
    let orchestrators = [builtin(json!({})), common::always_retry(5)];
    for orchestrator in &orchestrators {
        for method in [HttpMethod::Post, HttpMethod::Patch] {
            for reason in [
                RetryReason::HttpStatus(503),
                reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
            ] {
                assert!(decide(orchestrator, &mut sent(method), &reason, None).is_none());
            }
            let never_sent = reasons::SOCKET_NOT_AVAILABLE;
            assert!(decide(orchestrator, &mut http(method), &never_sent, None).is_some());
        }
        let lost = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
        assert!(decide(orchestrator, &mut sent(HttpMethod::Put), &lost, None).is_some());
    }
}

/// RFC 9110 §10.2.3: a retry waits at least the `Retry-After` given (seconds or an
/// HTTP-date); one that cannot be read ends retries, as urllib3 refuses an invalid header.
#[test]
fn retry_after_is_waited_and_an_unreadable_one_ends_retries() {
    let orchestrator = builtin(json!({}));
    let now = SystemTime::now();
    let reason = RetryReason::HttpStatus(429);
    let after = Pushback::from_retry_after("3", now);
    let waited = decide(
        &orchestrator,
        &mut sent(HttpMethod::Get),
        &reason,
        Some(after),
    );
    assert_eq!(waited, Some(Duration::from_secs(3)));
    let date = httpdate::fmt_http_date(now + Duration::from_secs(20));
    let by_date = Pushback::from_retry_after(&date, now);
    let waited = decide(
        &orchestrator,
        &mut sent(HttpMethod::Get),
        &reason,
        Some(by_date),
    );
    assert!(waited.unwrap() > Duration::from_secs(18));
    let unreadable = Pushback::from_retry_after("soon", now);
    assert!(decide(
        &orchestrator,
        &mut sent(HttpMethod::Get),
        &reason,
        Some(unreadable)
    )
    .is_none());
}

/// urllib3's `Retry.is_retry` with `respect_retry_after_header` (docs/decisions.md "A
/// `Retry-After` on a status outside the table"): a 413, 429 or 503 whose `Retry-After` can be
/// read is retried though the table lacks it, no sooner than asked; without the header, with
/// one that cannot be read, or for another status it is not; a POST that was sent still never
/// is. The classification makes such an answer a failure to decide about whatever its table.
#[test]
fn a_retry_after_status_outside_the_table_is_retried_as_urllib3_does() {
    use rebound::classify::{classify_http_answer, DEFAULT_HTTP_RETRY_STATUSES};
    let only_500 = builtin(json!({"statuses": [500]}));
    let now = SystemTime::now();
    let after = Some(Pushback::from_retry_after("1", now));
    let unreadable = Some(Pushback::from_retry_after("soon", now));
    for status in [413, 429, 503] {
        let reason = RetryReason::HttpStatus(status);
        let waited = decide(&only_500, &mut sent(HttpMethod::Get), &reason, after);
        assert_eq!(waited, Some(Duration::from_secs(1)), "{status}");
        for pushback in [None, unreadable] {
            let get = &mut sent(HttpMethod::Get);
            assert_eq!(decide(&only_500, get, &reason, pushback), None, "{status}");
        }
        let post = &mut sent(HttpMethod::Post);
        assert_eq!(decide(&only_500, post, &reason, after), None, "{status}");
        let answered = classify_http_answer(status, &[500], true);
        assert_eq!(answered.reason(), Some(&reason), "{status}");
        assert_eq!(classify_http_answer(status, &[500], false).reason(), None);
    }
    for status in [400, 404, 502, 504] {
        let reason = RetryReason::HttpStatus(status);
        let get = &mut sent(HttpMethod::Get);
        assert_eq!(decide(&only_500, get, &reason, after), None, "{status}");
        assert_eq!(classify_http_answer(status, &[500], true).reason(), None);
    }
    let table = &DEFAULT_HTTP_RETRY_STATUSES;
    assert_eq!(classify_http_answer(413, table, false).reason(), None);
    assert!(classify_http_answer(200, table, true).reason().is_none());
}

/// urllib3's `respect_retry_after_header=False`: the server's pushback is not read: the table
/// alone says what is retried (a 413 is not), the backoff alone how long to wait (below the
/// 100 ms ceiling of the first retry, not the 3 s asked), and an unreadable header does not end
/// retries.
#[test]
fn respect_retry_after_off_reads_no_pushback() {
    let ignoring = builtin(json!({"respect_retry_after": false}));
    let now = SystemTime::now();
    let three_seconds = Some(Pushback::from_retry_after("3", now));
    let reason = RetryReason::HttpStatus(429);
    let waited = decide(
        &ignoring,
        &mut sent(HttpMethod::Get),
        &reason,
        three_seconds,
    );
    assert!(waited.unwrap() <= Duration::from_millis(100), "{waited:?}");
    let unreadable = Some(Pushback::from_retry_after("soon", now));
    assert!(decide(&ignoring, &mut sent(HttpMethod::Get), &reason, unreadable).is_some());
    let too_large = RetryReason::HttpStatus(413);
    let get = &mut sent(HttpMethod::Get);
    assert_eq!(decide(&ignoring, get, &too_large, three_seconds), None);
    let refused = BuiltinPolicy::new(
        Builtin::Http,
        json!({"respect_retry_after": "yes"}).as_object().unwrap(),
    )
    .unwrap_err();
    assert_eq!(refused.field, "respect_retry_after");
}

/// urllib3's `retry_after_max` (6 hours by default) and the AWS SDKs' standard mode (a server's
/// delay capped at the 20 s maximum backoff, smithy-rs `v2_0_retry_after_capped_at_max_backoff`):
/// a `Retry-After` longer than the cap is waited for as long as the cap, then retried
/// (docs/decisions.md "The longest server delay waited for"). A cap of 0 is refused.
#[test]
fn a_server_delay_past_the_cap_is_waited_for_as_long_as_the_cap() {
    let now = SystemTime::now();
    let reason = RetryReason::HttpStatus(503);
    let aws = builtin(json!({"retry_after_max_ms": 20_000}));
    let thirty = Some(Pushback::from_retry_after("30", now));
    let waited = decide(&aws, &mut sent(HttpMethod::Get), &reason, thirty);
    assert_eq!(waited, Some(Duration::from_secs(20)));
    let ten = Some(Pushback::from_retry_after("10", now));
    let waited = decide(&aws, &mut sent(HttpMethod::Get), &reason, ten);
    assert_eq!(waited, Some(Duration::from_secs(10)));
    let default = builtin(json!({}));
    let day = Duration::from_secs(24 * 60 * 60);
    let mut long = Request::new(1, RequestType::Http, 2 * day)
        .unwrap()
        .with_method(HttpMethod::Get);
    long.mark_dispatched("api-1");
    let a_day = Some(Pushback::from_retry_after("86400", now));
    let waited = decide(&default, &mut long, &reason, a_day);
    assert_eq!(waited, Some(Duration::from_secs(6 * 60 * 60)));
    for bad in [json!(0), json!(86_400_001), json!(-1)] {
        let refused = BuiltinPolicy::new(
            Builtin::Http,
            json!({"retry_after_max_ms": bad}).as_object().unwrap(),
        )
        .unwrap_err();
        assert_eq!(refused.field, "retry_after_max_ms", "{bad}");
    }
}

/// The backoff: retry n+1 waits `random(0, min(initial × multiplier^n, max))` (full jitter);
/// `max_attempts` counts the first attempt.
#[test]
fn backoff_has_full_jitter_under_an_exponential_ceiling() {
    let orchestrator = builtin(json!({"max_attempts": 4, "initial_ms": 100, "max_ms": 300}));
    let ceilings = [100, 200, 300];
    let mut highest = [Duration::ZERO; 3];
    let mut lowest = [Duration::MAX; 3];
    for _ in 0..300 {
        let mut request = sent(HttpMethod::Get);
        for n in 0..3 {
            let delay = decide(
                &orchestrator,
                &mut request,
                &RetryReason::HttpStatus(503),
                None,
            )
            .expect("a retry");
            assert!(delay <= Duration::from_millis(ceilings[n]), "{delay:?}");
            highest[n] = highest[n].max(delay);
            lowest[n] = lowest[n].min(delay);
        }
        assert!(decide(
            &orchestrator,
            &mut request,
            &RetryReason::HttpStatus(503),
            None
        )
        .is_none());
    }
    for n in 0..3 {
        let ceiling = Duration::from_millis(ceilings[n]);
        assert!(
            lowest[n] < ceiling / 5 && highest[n] > ceiling * 4 / 5,
            "{n}"
        );
    }
}

/// The safety guard over the whole grid, for plain HTTP requests and gRPC calls: every
/// reason without data and the two status reasons, every method (and none), idempotency
/// declared or not, sent or not. A policy that always asks for a retry gets one only for an
/// idempotent request, or for a reason that allows it on a request never sent.
#[test]
fn the_guard_holds_over_the_whole_grid() {
    use rebound::grpc::GrpcCode;
    use rebound::ReasonKind;
    let orchestrator = common::always_retry(1);
    let mut reasons: Vec<RetryReason> = ReasonKind::ALL
        .iter()
        .filter_map(|kind| RetryReason::simple(*kind))
        .collect();
    reasons.push(RetryReason::HttpStatus(503));
    reasons.push(RetryReason::GrpcStatus(GrpcCode::Unavailable));
    let methods = [
        None,
        Some(HttpMethod::Get),
        Some(HttpMethod::Put),
        Some(HttpMethod::Post),
        Some(HttpMethod::Patch),
    ];
    let mut checked = 0;
    for ty in [RequestType::Http, RequestType::Grpc] {
        for method in methods {
            for declared in [None, Some(true), Some(false)] {
                for was_sent in [false, true] {
                    for reason in &reasons {
                        let mut request = Request::new(1, ty, Duration::from_secs(30)).unwrap();
                        if let Some(method) = method {
                            request = request.with_method(method);
                        }
                        if let Some(idempotent) = declared {
                            request = request.with_idempotent(idempotent);
                        }
                        if was_sent {
                            request.mark_dispatched("node-1");
                        }
                        let idempotent = request.is_idempotent();
                        let retried = decide(&orchestrator, &mut request, reason, None).is_some();
                        let safe =
                            idempotent || (!was_sent && reason.allows_non_idempotent_retry());
                        assert!(
                            !retried || safe,
                            "{ty} {method:?} declared {declared:?} sent {was_sent}: {reason} retried"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// RFC 9110 §15.5.14, §15.6.4 and RFC 6585 §4 as urllib3 reads them (`RETRY_AFTER_STATUS_CODES`):
/// `classify` applies the `Retry-After` rule to a plain HTTP answer as `classify_http_answer`
/// does with the default table, so every path that classifies a `Response` agrees.
#[test]
fn classify_reads_an_answer_s_retry_after_as_the_decision_json_does() {
    use rebound::classify::{
        classify, classify_http_answer, Response, DEFAULT_HTTP_RETRY_STATUSES,
    };
    for status in [200, 404, 413, 429, 500, 503] {
        for retry_after in [false, true] {
            let response = Response::Http {
                status,
                retry_after,
            };
            assert_eq!(
                classify(response, None),
                classify_http_answer(status, &DEFAULT_HTTP_RETRY_STATUSES, retry_after),
                "{status} {retry_after}"
            );
        }
    }
    let carried = Response::Http {
        status: 413,
        retry_after: true,
    };
    assert!(classify(carried, None).reason().is_some());
}
