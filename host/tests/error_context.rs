//! Spec: outcomes and their ErrorContext (reference 002 "ErrorContext", "Request
//! Cancellations").

use crate::common;

use std::sync::Arc;
use std::time::Instant;

use common::{decide_at, request};
use rebound::cassandra::{Cassandra, ConsistencyDowngradingRetryPolicy};
use rebound::cassandra::{ConsistencyLevel, WriteType};
use rebound::{reasons, Decision, FailFast, FastFailOnTerminalError, Orchestrator, RequestType};
use rebound::{Unavailable, WriteTimeout};

/// The context serialises with the field names of reference 002.
#[test]
fn error_context_json_fields() {
    let orchestrator = Orchestrator::new(Arc::new(FailFast));
    let mut req = request(RequestType::Get, 2500, Instant::now())
        .with_client_context("isRobotRequest", "yes");
    req.mark_dispatched("10.0.0.1:11210");
    let _ = decide_at(
        &Orchestrator::default(),
        &mut req,
        &reasons::SOCKET_NOT_AVAILABLE,
        0,
    );
    let Decision::Fail(error) = decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 12) else {
        panic!("expected failure")
    };
    let json = serde_json::to_value(error.context()).unwrap();
    assert_eq!(json["requestId"], 1);
    assert_eq!(json["idempotent"], true);
    assert_eq!(json["requestType"], "get");
    assert_eq!(json["retried"], 1);
    assert_eq!(
        json["retryReasons"],
        serde_json::json!(["SOCKET_NOT_AVAILABLE"])
    );
    assert_eq!(json["completed"], true);
    assert_eq!(json["cancelled"], true);
    assert_eq!(json["timeoutMs"], 2500);
    assert_eq!(json["reason"], "NO_MORE_RETRIES (KV_LOCKED)");
    assert_eq!(json["clientContext"]["isRobotRequest"], "yes");
    assert_eq!(json["service"]["type"], "kv");
    assert_eq!(json["timings"]["totalMicros"], 12_000);
    assert_eq!(json["lastDispatchedTo"], "10.0.0.1:11210");
    assert!(
        error.to_string().contains(r#""requestId":1"#),
        "the context is printed with the error"
    );
}

/// Reference 001 "Idempotent Operation List": a request marked sent to a node its caller does
/// not name (`mark_sent`) is as dispatched as one sent to a named node — a non-idempotent one is
/// not retried for a reason that forbids it — and its context names no node.
#[test]
fn a_request_sent_to_an_unnamed_node_is_dispatched_and_names_none() {
    let mut req = request(RequestType::Upsert, 2500, Instant::now());
    req.mark_sent();
    assert!(req.was_dispatched());
    let Decision::Fail(error) = decide_at(
        &Orchestrator::default(),
        &mut req,
        &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        0,
    ) else {
        panic!("a non-idempotent request sent once is not retried after its socket closed")
    };
    let json = serde_json::to_value(error.context()).unwrap();
    assert!(json.get("lastDispatchedTo").is_none(), "{json}");
}

/// Reference 001 "Fail Fast (Terminal Errors)": the named error reaches the caller.
#[test]
fn terminal_errors_surface_by_name() {
    let orchestrator = Orchestrator::new(Arc::new(FastFailOnTerminalError::<
        rebound::backoff::ExponentialBackoff,
    >::default()));
    let mut req = request(RequestType::Get, 2500, Instant::now());
    match decide_at(&orchestrator, &mut req, &reasons::SCOPE_NOT_FOUND, 0) {
        Decision::Fail(e) => {
            assert_eq!(e.name(), "ScopeNotFoundException");
            assert_eq!(
                e.context().reason.as_deref(),
                Some("ScopeNotFoundException")
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Reference 003 verdicts through the orchestrator: IGNORE completes the request; a
/// consistency downgrade changes the request's level; RETHROW surfaces the error.
#[test]
fn cassandra_verdicts_through_the_orchestrator() {
    let orchestrator =
        Orchestrator::new(Arc::new(Cassandra::new(ConsistencyDowngradingRetryPolicy)));
    let mut read = request(RequestType::Cql, 2500, Instant::now())
        .with_idempotent(true)
        .with_consistency(ConsistencyLevel::Quorum);
    let unavailable = Unavailable {
        consistency: ConsistencyLevel::Quorum,
        required: 2,
        alive: 1,
    }
    .into();
    match decide_at(&orchestrator, &mut read, &unavailable, 0) {
        Decision::Retry(plan) => assert_eq!(plan.consistency, Some(ConsistencyLevel::One)),
        other => panic!("{other:?}"),
    }
    assert_eq!(read.consistency(), Some(ConsistencyLevel::One));
    assert_eq!(
        common::fail_name(&decide_at(&orchestrator, &mut read, &unavailable, 1)),
        "rethrow"
    );

    let mut write = request(RequestType::Cql, 2500, Instant::now()).with_idempotent(true);
    let timeout = WriteTimeout {
        consistency: ConsistencyLevel::Quorum,
        write_type: WriteType::Simple,
        block_for: 2,
        received: 1,
    }
    .into();
    assert_eq!(
        decide_at(&orchestrator, &mut write, &timeout, 0),
        Decision::Ignore
    );
    assert!(write.is_done());
}
