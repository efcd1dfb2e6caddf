//! Spec: the orchestrator (reference 001 "Retry Orchestration", "Controlled Backoff for Always
//! Retry", "Capping the Retry Duration") and the safety guard.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{always_retry, decide_at, fail_name, request, retry_delay_ms};
use rebound::DecisionContext;
use rebound::StrategyFuture;
use rebound::{
    reasons, CancelReason, Decision, DelaySource, FailFast, Orchestrator, Request, RequestType,
    RetryAction, RetryError, RetryStrategy,
};

/// Reference 001 "Retry Orchestration": a completed request is left alone.
#[test]
fn completed_requests_are_left_alone() {
    let orchestrator = Orchestrator::default();
    let mut req = request(RequestType::Get, 2500, Instant::now());
    req.complete();
    let decision = decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 0);
    assert_eq!(decision, Decision::AlreadyDone);
    assert_eq!(req.retry_attempts(), 0);
}

/// Reference 001 "Controlled Backoff for Always Retry": 1, 10, 50, 100, 500, then 1000 ms,
/// without consulting the strategy (FailFast would refuse everything).
#[test]
fn always_retry_uses_controlled_backoff_without_the_strategy() {
    let orchestrator = Orchestrator::new(Arc::new(FailFast));
    let mut req = request(RequestType::Upsert, 60_000, Instant::now());
    let expected = [1, 10, 50, 100, 500, 1000, 1000, 1000];
    for (i, want) in expected.iter().enumerate() {
        let decision = decide_at(&orchestrator, &mut req, &reasons::KV_NOT_MY_VBUCKET, 0);
        assert_eq!(retry_delay_ms(&decision), *want, "attempt {i}");
        match decision {
            Decision::Retry(plan) => assert_eq!(plan.source, DelaySource::ControlledBackoff),
            _ => unreachable!(),
        }
    }
    assert_eq!(req.retry_attempts(), expected.len() as u32);
}

/// Reference 001 "RetryReason": KV_COLLECTION_OUTDATED is always-retry (the RFC stands over the
/// SDK that deviates), and so is VIEWS_NO_ACTIVE_PARTITION.
#[test]
fn collection_outdated_and_no_active_partition_always_retry() {
    let orchestrator = Orchestrator::new(Arc::new(FailFast));
    for reason in [
        reasons::KV_COLLECTION_OUTDATED,
        reasons::VIEWS_NO_ACTIVE_PARTITION,
    ] {
        let mut req = request(RequestType::Replace, 2500, Instant::now());
        assert_eq!(
            retry_delay_ms(&decide_at(&orchestrator, &mut req, &reason, 0)),
            1,
            "{reason}"
        );
    }
}

/// Reference 001 "Retry Orchestration": a delay increments the attempts and records the reason.
#[test]
fn a_retry_increments_attempts_and_records_reason() {
    let orchestrator = Orchestrator::default();
    let mut req = request(RequestType::Get, 2500, Instant::now());
    let _ = decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 0);
    let _ = decide_at(&orchestrator, &mut req, &reasons::KV_TEMPORARY_FAILURE, 5);
    let _ = decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 10);
    assert_eq!(req.retry_attempts(), 3);
    assert_eq!(
        req.retry_reasons(),
        &[reasons::KV_LOCKED, reasons::KV_TEMPORARY_FAILURE]
    );
}

/// Answers a 1 ms retry to every failure.
#[derive(Debug)]
struct RetryEverything;

impl rebound::Strategy for RetryEverything {
    fn name(&self) -> &str {
        "retry-everything"
    }
}

impl rebound::SyncStrategy for RetryEverything {
    fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        RetryAction::after(Duration::from_millis(1))
    }
}

/// Reference 001 "Retry Orchestration": the reasons recorded are the distinct reasons of the
/// retries, in order, reasons that carry data (Cassandra's) compared with their data.
#[test]
fn the_reasons_recorded_are_the_distinct_ones_data_included() {
    use rebound::cassandra::ConsistencyLevel;
    use rebound::{ReadTimeout, RetryReason};
    let read_timeout = |received| {
        RetryReason::ReadTimeout(ReadTimeout {
            consistency: ConsistencyLevel::Quorum,
            block_for: 2,
            received,
            data_present: false,
        })
    };
    let orchestrator = Orchestrator::new(Arc::new(RetryEverything));
    let mut req = request(RequestType::Cql, 60_000, Instant::now()).with_idempotent(true);
    let failures = [
        read_timeout(1),
        reasons::KV_LOCKED,
        read_timeout(1),
        read_timeout(0),
        reasons::KV_LOCKED,
    ];
    for (i, reason) in failures.iter().enumerate() {
        let decision = decide_at(&orchestrator, &mut req, reason, i as u64);
        assert_eq!(retry_delay_ms(&decision), 1, "{reason}");
    }
    assert_eq!(req.retry_attempts(), 5);
    assert_eq!(
        req.retry_reasons(),
        &[read_timeout(1), reasons::KV_LOCKED, read_timeout(0)]
    );
}

/// Reference 001 "Retry Orchestration": no delay cancels the request (RequestCanceled).
#[test]
fn no_retry_cancels() {
    let orchestrator = Orchestrator::new(Arc::new(FailFast));
    let mut req = request(RequestType::Get, 2500, Instant::now());
    let decision = decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 3);
    match &decision {
        Decision::Fail(RetryError::RequestCanceled { reason, context }) => {
            assert_eq!(reason, &CancelReason::NoMoreRetries(reasons::KV_LOCKED));
            assert_eq!(
                context.reason.as_deref(),
                Some("NO_MORE_RETRIES (KV_LOCKED)")
            );
            assert_eq!(context.timings.total_micros, 3000);
        }
        other => panic!("{other:?}"),
    }
    assert!(req.is_done());
    assert_eq!(req.retry_attempts(), 0);
}

/// Reference 001 "Capping the Retry Duration": 2 s into a 2.5 s request, a 1 s delay is capped
/// to 500 ms and the request then times out instead of being dispatched again.
#[test]
fn delay_reaching_the_deadline_ends_as_timeout_at_that_moment() {
    let orchestrator = always_retry(1000);
    let mut req = request(RequestType::Get, 2500, Instant::now());
    let decision = decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 2000);
    match decision {
        Decision::Timeout { after, error } => {
            assert_eq!(after, Duration::from_millis(500));
            assert_eq!(error.name(), "UnambiguousTimeout");
            assert_eq!(error.context().timings.total_micros, 2_500_000);
            assert_eq!(error.context().retried, 1);
            assert_eq!(error.context().reason.as_deref(), Some("TIMEOUT"));
        }
        other => panic!("{other:?}"),
    }
    assert!(req.is_done());
}

/// Reference 001 "Capping the Retry Duration": a delay shorter than the time left is kept.
#[test]
fn delay_shorter_than_remaining_is_not_capped() {
    let orchestrator = always_retry(499);
    let mut req = request(RequestType::Get, 2500, Instant::now());
    assert_eq!(
        retry_delay_ms(&decide_at(
            &orchestrator,
            &mut req,
            &reasons::KV_LOCKED,
            2000
        )),
        499
    );
}

/// The capping applies to the controlled backoff too (docs/decisions.md).
#[test]
fn controlled_backoff_is_capped_too() {
    let orchestrator = Orchestrator::default();
    let mut req = request(RequestType::Get, 1000, Instant::now()).with_retry_attempts(5);
    match decide_at(&orchestrator, &mut req, &reasons::KV_NOT_MY_VBUCKET, 400) {
        Decision::Timeout { after, .. } => assert_eq!(after, Duration::from_millis(600)),
        other => panic!("{other:?}"),
    }
}

/// Reference 002 "The Ubiquitous TimeoutException": ambiguous unless idempotent or never
/// dispatched.
#[test]
fn timeout_ambiguity() {
    let orchestrator = always_retry(10_000);
    let cases = [
        (RequestType::Upsert, true, "AmbiguousTimeout"),
        (RequestType::Upsert, false, "UnambiguousTimeout"),
        (RequestType::Get, true, "UnambiguousTimeout"),
    ];
    for (ty, dispatched, want) in cases {
        let mut req = request(ty, 100, Instant::now());
        if dispatched {
            req.mark_dispatched("node-a:11210");
        }
        match decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 10) {
            Decision::Timeout { error, .. } => {
                assert_eq!(error.name(), want, "{ty} dispatched={dispatched}")
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Safety guard: a strategy asking to retry a non-idempotent request for a reason that does
/// not allow it (reference 001 "Network Time": "All non-idempotent operations must be failed")
/// is refused, logged and counted.
#[test]
fn safety_guard_refuses_unsafe_non_idempotent_retry() {
    let orchestrator = always_retry(5);
    let mut req = request(RequestType::Upsert, 2500, Instant::now());
    req.mark_dispatched("node-a:11210");
    let decision = decide_at(
        &orchestrator,
        &mut req,
        &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        1,
    );
    match &decision {
        Decision::Fail(RetryError::RequestCanceled { reason, .. }) => assert_eq!(
            reason,
            &CancelReason::UnsafeRetryRefused(reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT)
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        req.retry_attempts(),
        0,
        "a refused retry is not counted as an attempt"
    );
}

/// Safety guard: the same retry is allowed for an idempotent request, and for a reason that
/// allows non-idempotent retries.
#[test]
fn safety_guard_allows_safe_retries() {
    let orchestrator = always_retry(5);
    let mut get = request(RequestType::Get, 2500, Instant::now());
    assert_eq!(
        retry_delay_ms(&decide_at(
            &orchestrator,
            &mut get,
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
            1
        )),
        5
    );
    let mut upsert = request(RequestType::Upsert, 2500, Instant::now());
    assert_eq!(
        retry_delay_ms(&decide_at(
            &orchestrator,
            &mut upsert,
            &reasons::KV_LOCKED,
            1
        )),
        5
    );
}

/// Safety guard: only a strategy the configuration names explicitly is exempt.
#[test]
fn safety_guard_exemption_is_per_strategy() {
    let exempt = always_retry(5).exempt_from_guard("always");
    let other = always_retry(5).exempt_from_guard("some-other-strategy");
    for (orchestrator, retried) in [(exempt, true), (other, false)] {
        let mut req = request(RequestType::Upsert, 2500, Instant::now());
        let decision = decide_at(
            &orchestrator,
            &mut req,
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
            1,
        );
        assert_eq!(
            matches!(decision, Decision::Retry(_)),
            retried,
            "{decision:?}"
        );
    }
}

/// Reference 001 "RetryReason" (UNKNOWN): never retried, even by an exempt strategy and for
/// an idempotent request.
#[test]
fn unknown_reasons_are_refused_even_when_exempt() {
    let orchestrator = always_retry(5).exempt_from_guard("always");
    for reason in [reasons::UNKNOWN, "BRAND_NEW_REASON".parse().unwrap()] {
        let mut req = request(RequestType::Get, 2500, Instant::now());
        match decide_at(&orchestrator, &mut req, &reason, 0) {
            Decision::Fail(RetryError::RequestCanceled {
                reason: CancelReason::NeverRetried(r),
                ..
            }) => {
                assert_eq!(r, reason)
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Reference 002 "Customizing the RetryStrategy": a per-request strategy overrides the
/// default one.
#[test]
fn per_request_strategy_overrides_default() {
    let orchestrator = Orchestrator::default();
    let mut req = request(RequestType::Get, 2500, Instant::now());
    let context = DecisionContext::new(&reasons::KV_LOCKED).at(req.start());
    let decision = futures::executor::block_on(
        orchestrator.decide(&mut req, &context.with_strategy(&FailFast)),
    );
    assert_eq!(fail_name(&decision), "RequestCanceled");
}

/// Reference 001 "Retry Orchestration" (the safety guard) and reference 002: a strategy chosen
/// for one request is under the orchestrator's guard as its default is. A dispatched upsert
/// whose socket closed in flight is refused; a get is retried by the same strategy.
#[test]
fn reference_001_a_strategy_chosen_for_the_request_cannot_retry_an_unsafe_upsert() {
    let orchestrator = Orchestrator::default();
    let eager = common::AlwaysRetry(Duration::from_millis(1));
    let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
    let mut upsert = request(RequestType::Upsert, 2500, Instant::now());
    upsert.mark_dispatched("10.0.0.1:11210");
    let context = DecisionContext::new(&reason).at(upsert.start());
    let decision = futures::executor::block_on(
        orchestrator.decide(&mut upsert, &context.with_strategy(&eager)),
    );
    assert!(
        matches!(
            decision,
            Decision::Fail(RetryError::RequestCanceled {
                reason: CancelReason::UnsafeRetryRefused(_),
                ..
            })
        ),
        "{decision:?}"
    );
    let mut get = request(RequestType::Get, 2500, Instant::now());
    get.mark_dispatched("10.0.0.1:11210");
    let context = DecisionContext::new(&reason).at(get.start());
    let decision =
        futures::executor::block_on(orchestrator.decide(&mut get, &context.with_strategy(&eager)));
    assert!(matches!(decision, Decision::Retry(_)), "{decision:?}");
}

/// Answers a 7 ms retry from another thread, later.
#[derive(Debug)]
struct Later;

impl rebound::Strategy for Later {
    fn name(&self) -> &str {
        "later"
    }
}

impl RetryStrategy for Later {
    fn retry_after<'a>(&'a self, _: &'a Request, _: &'a DecisionContext<'a>) -> StrategyFuture<'a> {
        StrategyFuture::pending(async {
            let (tx, rx) = futures::channel::oneshot::channel();
            std::thread::spawn(move || tx.send(Duration::from_millis(7)).unwrap());
            RetryAction::after(rx.await.unwrap())
        })
    }
}

/// Reference 001 "Retry Strategies": the strategy returns a future; one that completes later
/// is awaited.
#[test]
fn asynchronous_strategies_are_awaited() {
    let orchestrator = Orchestrator::new(Arc::new(Later));
    let mut req = request(RequestType::Get, 2500, Instant::now());
    assert_eq!(
        retry_delay_ms(&decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 0)),
        7
    );
}

/// `Deciding`: a strategy that answers at once is asked by the call itself (the retry is on
/// the request even if the future is never polled); an asynchronous strategy, here the
/// one chosen for the request, is asked only when the future is polled, and awaited.
#[test]
fn a_decision_is_made_by_the_call_unless_its_strategy_must_be_awaited() {
    let orchestrator = Orchestrator::default();
    let mut req = request(RequestType::Get, 2500, Instant::now());
    drop(orchestrator.decide(&mut req, &DecisionContext::new(&reasons::KV_LOCKED)));
    assert_eq!(req.retry_attempts(), 1, "best effort answered at the call");

    let mut req = request(RequestType::Get, 2500, Instant::now());
    let context = DecisionContext::new(&reasons::KV_LOCKED);
    drop(orchestrator.decide(&mut req, &context.with_strategy(&Later)));
    assert_eq!(req.retry_attempts(), 0, "never polled, never asked");
    let decision =
        futures::executor::block_on(orchestrator.decide(&mut req, &context.with_strategy(&Later)));
    assert_eq!(retry_delay_ms(&decision), 7);
    assert_eq!(req.retry_attempts(), 1);
}

/// `Deciding::into_ready`: the decision a call made is taken without a poll; a decision
/// whose strategy must be awaited comes back unchanged and is still made when awaited.
#[test]
fn into_ready_takes_a_decision_made_by_the_call_and_hands_back_one_to_await() {
    let orchestrator = Orchestrator::default();
    let mut req = request(RequestType::Get, 2500, Instant::now());
    let decision = orchestrator
        .decide(&mut req, &DecisionContext::new(&reasons::KV_LOCKED))
        .into_ready()
        .expect("best effort answers at once");
    assert_eq!(
        retry_delay_ms(&decision),
        1,
        "reference 001: the first delay"
    );

    let mut req = request(RequestType::Get, 2500, Instant::now());
    let context = DecisionContext::new(&reasons::KV_LOCKED);
    let deciding = match orchestrator
        .decide(&mut req, &context.with_strategy(&Later))
        .into_ready()
    {
        Ok(decision) => panic!("an awaited strategy decided at the call: {decision:?}"),
        Err(deciding) => deciding,
    };
    assert_eq!(retry_delay_ms(&futures::executor::block_on(deciding)), 7);
    assert_eq!(req.retry_attempts(), 1);
}
