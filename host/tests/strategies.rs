//! Spec: the built-in strategies (reference 001 "Best Effort", "Fail Fast (Strict)",
//! "Fail Fast (Terminal Errors)"; reference 003 "Behavior" and "Hard-coded rules").

use crate::common;

use std::time::{Duration, Instant};

use common::request;
use rebound::backoff::{BackoffCalculator, ExponentialBackoff};
use rebound::cassandra::{AbortKind, ConsistencyLevel as CL, ServerErrorKind, WriteType};
use rebound::cassandra::{Cassandra, ConsistencyDowngradingRetryPolicy, DefaultRetryPolicy};
use rebound::DecisionContext;
use rebound::{
    reasons, BestEffort, FailFast, FastFailOnTerminalError, NodeChoice, RequestType, RetryAction,
    RetryReason, SyncStrategy, TerminalError,
};
use rebound::{ReadTimeout, Unavailable, WriteTimeout};

const SAME: RetryAction = RetryAction::now_on(NodeChoice::Same, None);
const NEXT: RetryAction = RetryAction::now_on(NodeChoice::Next, None);

fn same_at(cl: CL) -> RetryAction {
    RetryAction::now_on(NodeChoice::Same, Some(cl))
}

/// Reference 001 "Best Effort": retry if idempotent or the reason allows it, with the
/// calculator's delay for the current attempt; otherwise no retry.
#[test]
fn best_effort_retries_when_safe() {
    let strategy = BestEffort::<ExponentialBackoff>::default();
    let start = Instant::now();
    let get = request(RequestType::Get, 2500, start).with_retry_attempts(3);
    let upsert = request(RequestType::Upsert, 2500, start).with_retry_attempts(3);
    let closed = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
    assert_eq!(
        strategy.answer(&get, &DecisionContext::new(&closed)),
        RetryAction::after(Duration::from_millis(8))
    );
    assert_eq!(
        strategy.answer(&upsert, &DecisionContext::new(&closed)),
        RetryAction::NoRetry
    );
    assert_eq!(
        strategy.answer(&upsert, &DecisionContext::new(&reasons::KV_LOCKED)),
        RetryAction::after(Duration::from_millis(8))
    );
}

/// Reference 001 "Best Effort": a custom backoff calculator can be passed in.
#[test]
fn best_effort_takes_a_custom_calculator() {
    #[derive(Debug)]
    struct Fixed;
    impl BackoffCalculator for Fixed {
        fn backoff(&self, attempt: u32) -> Duration {
            Duration::from_millis(100 + u64::from(attempt))
        }
    }
    let strategy = BestEffort::with_calculator(Fixed);
    let get = request(RequestType::Get, 2500, Instant::now()).with_retry_attempts(2);
    assert_eq!(
        strategy.answer(&get, &DecisionContext::new(&reasons::KV_LOCKED)),
        RetryAction::after(Duration::from_millis(102))
    );
}

/// Reference 001 "Fail Fast (Strict)": never retries.
#[test]
fn fail_fast_never_retries() {
    let get = request(RequestType::Get, 2500, Instant::now());
    for kind in rebound::ReasonKind::ALL {
        if let Some(reason) = RetryReason::simple(*kind) {
            assert_eq!(
                FailFast.answer(&get, &DecisionContext::new(&reason)),
                RetryAction::NoRetry,
                "{reason}"
            );
        }
    }
}

/// Reference 001 "Fail Fast (Terminal Errors)": the table, and best effort for any other.
#[test]
fn fast_fail_on_terminal_error_table() {
    let strategy = FastFailOnTerminalError::<ExponentialBackoff>::default();
    let get = request(RequestType::Get, 2500, Instant::now());
    let table = [
        (
            reasons::AUTHENTICATION_ERROR,
            TerminalError::AuthenticationFailureException,
        ),
        (reasons::TLS_ERROR, TerminalError::CouchbaseException),
        (
            reasons::BUCKET_ACCESS_ERROR,
            TerminalError::CouchbaseException,
        ),
        (
            reasons::SCOPE_NOT_FOUND,
            TerminalError::ScopeNotFoundException,
        ),
        (
            reasons::COLLECTION_NOT_FOUND,
            TerminalError::CollectionNotFoundException,
        ),
    ];
    for (reason, error) in table {
        assert_eq!(
            strategy.answer(&get, &DecisionContext::new(&reason)),
            RetryAction::Fail(error),
            "{reason}"
        );
    }
    let best_effort = BestEffort::<ExponentialBackoff>::default();
    let upsert = request(RequestType::Upsert, 2500, Instant::now());
    for reason in [
        reasons::KV_LOCKED,
        reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        reasons::NODE_NOT_AVAILABLE,
    ] {
        for req in [&get, &upsert] {
            assert_eq!(
                strategy.answer(req, &DecisionContext::new(&reason)),
                best_effort.answer(req, &DecisionContext::new(&reason)),
                "{reason}"
            );
        }
    }
}

fn read_timeout(consistency: CL, block_for: u32, received: u32, data_present: bool) -> RetryReason {
    ReadTimeout {
        consistency,
        block_for,
        received,
        data_present,
    }
    .into()
}
fn write_timeout(
    consistency: CL,
    write_type: WriteType,
    block_for: u32,
    received: u32,
) -> RetryReason {
    WriteTimeout {
        consistency,
        write_type,
        block_for,
        received,
    }
    .into()
}
fn unavailable(consistency: CL, required: u32, alive: u32) -> RetryReason {
    Unavailable {
        consistency,
        required,
        alive,
    }
    .into()
}

/// Checks each (reason, idempotent, retries so far) → action row against `strategy`.
fn check_rows(strategy: &dyn SyncStrategy, rows: &[(RetryReason, bool, u32, RetryAction)]) {
    for (reason, idempotent, retries, want) in rows {
        let req = request(RequestType::Cql, 2500, Instant::now())
            .with_idempotent(*idempotent)
            .with_retry_attempts(*retries);
        assert_eq!(
            &strategy.answer(&req, &DecisionContext::new(reason)),
            want,
            "{} {reason:?} idempotent={idempotent} retries={retries}",
            strategy.name()
        );
    }
}

/// Reference 003 `DefaultRetryPolicy`: read timeout retried once on the same node only if
/// enough replicas answered without data; write timeout once only for BATCH_LOG; unavailable
/// once on the next node; aborts on closed connection/heartbeat to the next node; error
/// responses to the next node except read/write failures.
#[test]
fn cassandra_default_policy_verdicts() {
    let rethrow = RetryAction::Rethrow;
    let rows = vec![
        (read_timeout(CL::Quorum, 2, 2, false), true, 0, SAME),
        (read_timeout(CL::Quorum, 2, 2, false), true, 1, rethrow),
        (read_timeout(CL::Quorum, 2, 2, true), true, 0, rethrow),
        (read_timeout(CL::Quorum, 2, 1, false), true, 0, rethrow),
        (read_timeout(CL::Quorum, 2, 2, false), false, 0, SAME),
        (
            write_timeout(CL::Quorum, WriteType::BatchLog, 2, 0),
            true,
            0,
            SAME,
        ),
        (
            write_timeout(CL::Quorum, WriteType::BatchLog, 2, 0),
            true,
            1,
            rethrow,
        ),
        (
            write_timeout(CL::Quorum, WriteType::Simple, 2, 1),
            true,
            0,
            rethrow,
        ),
        (unavailable(CL::Quorum, 2, 1), true, 0, NEXT),
        (unavailable(CL::Quorum, 2, 1), false, 0, NEXT),
        (unavailable(CL::Quorum, 2, 1), true, 1, rethrow),
        (
            RetryReason::RequestAborted(AbortKind::ClosedConnection),
            true,
            0,
            NEXT,
        ),
        (
            RetryReason::RequestAborted(AbortKind::Heartbeat),
            true,
            3,
            NEXT,
        ),
        (
            RetryReason::RequestAborted(AbortKind::Other),
            true,
            0,
            rethrow,
        ),
        (
            RetryReason::ErrorResponse(ServerErrorKind::Overloaded),
            true,
            0,
            NEXT,
        ),
        (
            RetryReason::ErrorResponse(ServerErrorKind::ServerError),
            true,
            0,
            NEXT,
        ),
        (
            RetryReason::ErrorResponse(ServerErrorKind::Truncate),
            true,
            0,
            NEXT,
        ),
        (
            RetryReason::ErrorResponse(ServerErrorKind::ReadFailure),
            true,
            0,
            rethrow,
        ),
        (
            RetryReason::ErrorResponse(ServerErrorKind::WriteFailure),
            true,
            0,
            rethrow,
        ),
    ];
    check_rows(&Cassandra::new(DefaultRetryPolicy), &rows);
}

/// Reference 003 `ConsistencyDowngradingRetryPolicy`.
#[test]
fn cassandra_downgrading_policy_verdicts() {
    let rethrow = RetryAction::Rethrow;
    let rows = vec![
        // Reads: downgrade to what answered; same CL if enough answered without data.
        (
            read_timeout(CL::All, 5, 4, false),
            true,
            0,
            same_at(CL::Three),
        ),
        (
            read_timeout(CL::Quorum, 3, 2, false),
            true,
            0,
            same_at(CL::Two),
        ),
        (
            read_timeout(CL::Quorum, 2, 1, true),
            true,
            0,
            same_at(CL::One),
        ),
        (read_timeout(CL::Quorum, 2, 0, false), true, 0, rethrow),
        (
            read_timeout(CL::EachQuorum, 2, 0, false),
            true,
            0,
            same_at(CL::One),
        ),
        (read_timeout(CL::Quorum, 2, 2, false), true, 0, SAME),
        (read_timeout(CL::Quorum, 2, 2, true), true, 0, rethrow),
        (read_timeout(CL::Serial, 2, 1, false), true, 0, rethrow),
        (read_timeout(CL::Quorum, 3, 2, false), true, 1, rethrow),
        // Writes (idempotent): SIMPLE/BATCH ignored once a replica acked.
        (
            write_timeout(CL::Quorum, WriteType::Simple, 2, 1),
            true,
            0,
            RetryAction::Ignore,
        ),
        (
            write_timeout(CL::Quorum, WriteType::Batch, 2, 1),
            true,
            0,
            RetryAction::Ignore,
        ),
        (
            write_timeout(CL::Quorum, WriteType::Simple, 2, 0),
            true,
            0,
            rethrow,
        ),
        (
            write_timeout(CL::Quorum, WriteType::UnloggedBatch, 3, 2),
            true,
            0,
            same_at(CL::Two),
        ),
        (
            write_timeout(CL::Quorum, WriteType::UnloggedBatch, 3, 0),
            true,
            0,
            rethrow,
        ),
        (
            write_timeout(CL::Quorum, WriteType::BatchLog, 3, 0),
            true,
            0,
            SAME,
        ),
        (
            write_timeout(CL::Quorum, WriteType::Counter, 3, 2),
            true,
            0,
            rethrow,
        ),
        (
            write_timeout(CL::Quorum, WriteType::Simple, 2, 1),
            true,
            1,
            rethrow,
        ),
        // Unavailable: serial to the next node; otherwise downgrade to the alive count.
        (unavailable(CL::Serial, 2, 1), true, 0, NEXT),
        (unavailable(CL::Quorum, 2, 1), true, 0, same_at(CL::One)),
        (unavailable(CL::All, 5, 3), true, 0, same_at(CL::Three)),
        (unavailable(CL::Quorum, 2, 0), true, 0, rethrow),
        (unavailable(CL::EachQuorum, 2, 0), true, 0, same_at(CL::One)),
        (unavailable(CL::Quorum, 2, 1), true, 1, rethrow),
        (
            RetryReason::RequestAborted(AbortKind::ClosedConnection),
            true,
            0,
            NEXT,
        ),
        (
            RetryReason::ErrorResponse(ServerErrorKind::WriteFailure),
            true,
            0,
            rethrow,
        ),
        (
            RetryReason::ErrorResponse(ServerErrorKind::Overloaded),
            true,
            0,
            NEXT,
        ),
    ];
    check_rows(&Cassandra::new(ConsistencyDowngradingRetryPolicy), &rows);
}

/// Reference 003 "Behavior" (write timeout, aborted, error response: "only invoked for
/// idempotent statements. Otherwise, the driver bypasses the retry policy and always
/// rethrows") — for both policies.
#[test]
fn cassandra_non_idempotent_bypasses_the_policy() {
    let rethrow = RetryAction::Rethrow;
    let rows = vec![
        (
            write_timeout(CL::Quorum, WriteType::BatchLog, 2, 0),
            false,
            0,
            rethrow,
        ),
        (
            write_timeout(CL::Quorum, WriteType::Simple, 2, 1),
            false,
            0,
            rethrow,
        ),
        (
            RetryReason::RequestAborted(AbortKind::ClosedConnection),
            false,
            0,
            rethrow,
        ),
        (reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT, false, 0, rethrow),
        (
            RetryReason::ErrorResponse(ServerErrorKind::Overloaded),
            false,
            0,
            rethrow,
        ),
    ];
    check_rows(&Cassandra::new(DefaultRetryPolicy), &rows);
    check_rows(&Cassandra::new(ConsistencyDowngradingRetryPolicy), &rows);
}

/// Reference 003 "Hard-coded rules": errors before the write and bootstrapping nodes move to
/// the next node; an unprepared statement is retried on the same node; validation, function
/// and protocol errors are always rethrown — whatever the request's idempotency.
#[test]
fn cassandra_hard_coded_rules() {
    let rethrow = RetryAction::Rethrow;
    let mut rows = Vec::new();
    for idempotent in [true, false] {
        rows.extend([
            (reasons::NODE_NOT_AVAILABLE, idempotent, 0, NEXT),
            (reasons::SOCKET_NOT_AVAILABLE, idempotent, 5, NEXT),
            (reasons::BOOTSTRAPPING, idempotent, 0, NEXT),
            (reasons::UNPREPARED, idempotent, 0, SAME),
            (
                RetryReason::ErrorResponse(ServerErrorKind::QueryValidation),
                idempotent,
                0,
                rethrow,
            ),
            (
                RetryReason::ErrorResponse(ServerErrorKind::FunctionFailure),
                idempotent,
                0,
                rethrow,
            ),
            (
                RetryReason::ErrorResponse(ServerErrorKind::ProtocolError),
                idempotent,
                0,
                rethrow,
            ),
            (reasons::UNKNOWN, idempotent, 0, rethrow),
        ]);
    }
    check_rows(&Cassandra::new(DefaultRetryPolicy), &rows);
    check_rows(&Cassandra::new(ConsistencyDowngradingRetryPolicy), &rows);
}
