//! The one retry loop (`RetryLoop`), driven by hand as `rebound simulate` drives it: what the
//! next attempt is told, how each decision ends the request, and that each failure is decided
//! with its own context. Each test names the rule it checks.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::cassandra::ConsistencyLevel as CL;
use rebound::cassandra::{Cassandra, ConsistencyDowngradingRetryPolicy};
use rebound::classify::{classify, KvOpcode, Response};
use rebound::ReadTimeout;
use rebound::{
    reasons, Cause, DecisionContext, Ending, NodeChoice, Orchestrator, Progress, Request,
    RequestType, RetryAction, RetryLoop, Step, SyncStrategy,
};

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

fn cql_read(start: Instant) -> Request {
    Request::new(1, RequestType::Cql, Duration::from_secs(2))
        .unwrap()
        .with_idempotent(true)
        .with_consistency(CL::Quorum)
        .with_start(start)
}

/// Reference 003 `ConsistencyDowngradingRetryPolicy`: a QUORUM read that timed out with 2 of 3
/// replicas answering is retried on the same node at TWO, and the next attempt is told so.
#[test]
fn the_next_attempt_carries_the_consistency_the_policy_chose() {
    let start = Instant::now();
    let orchestrator =
        Orchestrator::new(Arc::new(Cassandra::new(ConsistencyDowngradingRetryPolicy)));
    let mut retry = RetryLoop::new(cql_read(start));
    let first = retry.next_attempt();
    assert_eq!(
        (first.number, first.node, first.consistency),
        (0, NodeChoice::Same, Some(CL::Quorum))
    );
    retry.dispatched("node-1:9042");
    let timeout = ReadTimeout {
        consistency: CL::Quorum,
        block_for: 3,
        received: 2,
        data_present: false,
    };
    let step = block_on(retry.failed(
        &orchestrator,
        Cause::Reason(timeout.into()),
        None,
        Progress::Processed,
        start,
    ));
    let Ok(Step::Retry { delay, attempt }) = step else {
        panic!("{step:?}")
    };
    assert_eq!(delay, Duration::ZERO);
    assert_eq!(
        (attempt.number, attempt.node, attempt.consistency),
        (1, NodeChoice::Same, Some(CL::Two))
    );
    assert_eq!(retry.next_attempt(), attempt);
}

/// Reference 001 "KV Error Map Handling": the retry spec belongs to the failure the error map
/// classified; the next failure, for a plain reason, is decided without it.
#[test]
fn each_failure_is_decided_with_its_own_context() {
    let map = common::error_map_with_spec();
    let strategy = Arc::new(common::SeesSpec::default());
    let orchestrator = Orchestrator::new(strategy.clone());
    let start = Instant::now();
    let request = Request::new(1, RequestType::Get, Duration::from_secs(2))
        .unwrap()
        .with_start(start);
    let mut retry = RetryLoop::new(request);
    let unknown = Response::Kv {
        opcode: KvOpcode::of(RequestType::Get).unwrap(),
        status: 0x7ff0,
    };
    let classified = Cause::Classified(Box::new(classify(unknown, Some(&map))));
    let first = block_on(retry.failed(&orchestrator, classified, None, Progress::Processed, start))
        .unwrap();
    assert!(matches!(first, Step::Retry { .. }), "{first:?}");
    let locked = Cause::Reason(reasons::KV_LOCKED);
    let second =
        block_on(retry.failed(&orchestrator, locked, None, Progress::Processed, start)).unwrap();
    assert!(matches!(second, Step::Retry { .. }), "{second:?}");
    let seen = strategy.0.lock().unwrap().clone();
    assert!(seen[0].is_some(), "the classified failure carries its spec");
    assert_eq!(seen[1], None, "the KV_LOCKED failure carries none");
}

/// Reference 001 "Capping the Retry Duration": a delay that reaches the deadline ends the
/// request as a timeout after the time left, without another attempt; reference 002: the
/// deadline passing during an attempt ends it with a timeout at once.
#[test]
fn deadlines_end_the_loop_with_timeouts() {
    let start = Instant::now();
    let orchestrator = Orchestrator::new(Arc::new(common::SeesSpec::default()));
    let request = Request::new(1, RequestType::Get, Duration::from_millis(1))
        .unwrap()
        .with_start(start);
    let mut retry = RetryLoop::new(request);
    let step = block_on(retry.failed(
        &orchestrator,
        Cause::Reason(reasons::KV_LOCKED),
        None,
        Progress::Processed,
        start,
    ));
    let Ok(Step::End(Ending::Ended { error, after })) = step else {
        panic!("{step:?}")
    };
    assert_eq!(error.name(), "UnambiguousTimeout");
    assert_eq!(after, Duration::from_millis(1));

    let request = Request::new(2, RequestType::Upsert, Duration::from_millis(5))
        .unwrap()
        .with_start(start);
    let mut retry = RetryLoop::new(request);
    retry.dispatched("node-1:11210");
    let error = retry.deadline_reached(start + Duration::from_millis(5));
    assert_eq!(error.name(), "AmbiguousTimeout");
    assert!(retry.request().is_done());
}

/// Reference 001 "Response Code Classification": a response not on the retry list, or a
/// final failure, ends the loop without asking the strategy; reference 003: IGNORE ends it
/// with an empty result.
#[test]
fn unretried_and_ignored_failures_end_the_loop() {
    let start = Instant::now();
    let strategy = Arc::new(common::SeesSpec::default());
    let orchestrator = Orchestrator::new(strategy.clone());
    let get = || {
        Request::new(1, RequestType::Get, Duration::from_secs(2))
            .unwrap()
            .with_start(start)
    };
    let not_found = Response::Kv {
        opcode: KvOpcode::of(RequestType::Get).unwrap(),
        status: 0x01,
    };
    for cause in [
        Cause::Classified(Box::new(classify(not_found, None))),
        Cause::Final,
    ] {
        let step = block_on(RetryLoop::new(get()).failed(
            &orchestrator,
            cause,
            None,
            Progress::Processed,
            start,
        ));
        assert!(
            matches!(step, Ok(Step::End(Ending::NotRetried(_)))),
            "{step:?}"
        );
    }
    assert!(strategy.0.lock().unwrap().is_empty(), "never asked");

    #[derive(Debug)]
    struct Ignores;
    impl rebound::Strategy for Ignores {
        fn name(&self) -> &str {
            "ignores"
        }
    }

    impl SyncStrategy for Ignores {
        fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
            RetryAction::Ignore
        }
    }
    let orchestrator = Orchestrator::new(Arc::new(Ignores));
    let step = block_on(RetryLoop::new(get()).failed(
        &orchestrator,
        Cause::Reason(reasons::KV_LOCKED),
        None,
        Progress::Processed,
        start,
    ));
    let Ok(Step::End(Ending::Ignored(context))) = step else {
        panic!("{step:?}")
    };
    assert!(!context.cancelled);
}
