//! The scylla driver's own retry-policy tests (`scylla/src/policies/retry/default.rs` and
//! `downgrading_consistency.rs`, scylla 1.9.0), run against the adapter deciding with
//! Rebound's built-in Cassandra policies and with their WebAssembly builds: the same errors,
//! idempotence and consistency levels, the same expected decisions, in the same order within a
//! session (reference 003 "Retries": DefaultRetryPolicy and ConsistencyDowngradingRetryPolicy).

use crate::support;

use bytes::Bytes;
use rebound_scylla::{ReboundRetryPolicy, ReboundRetrySession};
use scylla::errors::{BrokenConnectionErrorKind, DbError, RequestAttemptError, WriteType};
use scylla::policies::retry::RetryDecision;
use scylla::statement::Consistency;

const DEFAULT: [&str; 2] = ["cassandra-default", "wasm-cassandra-default"];
const DOWNGRADING: [&str; 2] = ["cassandra-downgrading", "wasm-cassandra-downgrading"];

/// The driver tests' consistency levels (serial ones aside).
const CONSISTENCY_LEVELS: &[Consistency] = &[
    Consistency::All,
    Consistency::Any,
    Consistency::EachQuorum,
    Consistency::LocalOne,
    Consistency::LocalQuorum,
    Consistency::One,
    Consistency::Quorum,
    Consistency::Three,
    Consistency::Two,
];

fn session(policy: &str) -> ReboundRetrySession {
    ReboundRetryPolicy::new(support::registry())
        .unwrap()
        .policy(policy)
        .unwrap()
        .session()
}

/// A new session of `policy` answers `expected`, in order, to `error` asked again and again.
fn expect(
    policy: &str,
    error: &RequestAttemptError,
    idempotent: bool,
    cl: Consistency,
    expected: &[RetryDecision],
) {
    let mut session = session(policy);
    for (n, want) in expected.iter().enumerate() {
        let got = session.decide(error, idempotent, cl);
        assert_eq!(
            &got, want,
            "{policy}, question {n}: {error:?} idempotent={idempotent} at {cl:?}"
        );
    }
}

fn db(error: DbError) -> RequestAttemptError {
    RequestAttemptError::DbError(error, String::new())
}

fn never_retried_db_errors() -> Vec<DbError> {
    vec![
        DbError::SyntaxError,
        DbError::Invalid,
        DbError::AlreadyExists {
            keyspace: String::new(),
            table: String::new(),
        },
        DbError::FunctionFailure {
            keyspace: String::new(),
            function: String::new(),
            arg_types: vec![],
        },
        DbError::AuthenticationError,
        DbError::Unauthorized,
        DbError::ConfigError,
        DbError::ReadFailure {
            consistency: Consistency::Two,
            received: 2,
            required: 1,
            numfailures: 1,
            data_present: false,
        },
        DbError::WriteFailure {
            consistency: Consistency::Two,
            received: 1,
            required: 2,
            numfailures: 1,
            write_type: WriteType::BatchLog,
        },
        DbError::Unprepared {
            statement_id: Bytes::from_static(b"deadbeef"),
        },
        DbError::ProtocolError,
        DbError::Other(0x124816),
    ]
}

fn never_retried_driver_errors() -> Vec<RequestAttemptError> {
    vec![
        RequestAttemptError::RepreparedIdMissingInBatch,
        RequestAttemptError::RepreparedIdChanged {
            statement: String::new(),
            expected_id: vec![],
            reprepared_id: vec![],
        },
    ]
}

fn idempotent_next_errors() -> Vec<RequestAttemptError> {
    vec![
        db(DbError::Overloaded),
        db(DbError::TruncateError),
        db(DbError::ServerError),
        RequestAttemptError::BrokenConnectionError(
            BrokenConnectionErrorKind::TooManyOrphanedStreamIds(5).into(),
        ),
    ]
}

/// `max_likely_to_work_cl` of the driver's downgrading tests.
fn max_likely_to_work_cl(known_ok: i32, current: Consistency) -> RetryDecision {
    if known_ok >= 3 {
        RetryDecision::RetrySameTarget(Some(Consistency::Three))
    } else if known_ok == 2 {
        RetryDecision::RetrySameTarget(Some(Consistency::Two))
    } else if known_ok == 1 || current == Consistency::EachQuorum {
        RetryDecision::RetrySameTarget(Some(Consistency::One))
    } else {
        RetryDecision::DontRetry
    }
}

use RetryDecision::{DontRetry, IgnoreWriteError, RetryNextTarget, RetrySameTarget};

#[test]
fn default_never_retries() {
    for policy in DEFAULT {
        let errors = never_retried_db_errors().into_iter().map(db);
        for error in errors.chain(never_retried_driver_errors()) {
            for idempotent in [false, true] {
                expect(policy, &error, idempotent, Consistency::One, &[DontRetry]);
            }
        }
    }
}

#[test]
fn default_idempotent_next_retries() {
    for policy in DEFAULT {
        for error in idempotent_next_errors() {
            expect(policy, &error, false, Consistency::One, &[DontRetry]);
            expect(
                policy,
                &error,
                true,
                Consistency::One,
                &[RetryNextTarget(None)],
            );
        }
    }
}

#[test]
fn default_bootstrapping() {
    let error = db(DbError::IsBootstrapping);
    for policy in DEFAULT {
        for idempotent in [false, true] {
            expect(
                policy,
                &error,
                idempotent,
                Consistency::One,
                &[RetryNextTarget(None)],
            );
        }
    }
}

#[test]
fn default_unavailable() {
    let error = db(DbError::Unavailable {
        consistency: Consistency::Two,
        required: 2,
        alive: 1,
    });
    for policy in DEFAULT {
        for idempotent in [false, true] {
            let answers = [RetryNextTarget(None), DontRetry];
            expect(policy, &error, idempotent, Consistency::One, &answers);
        }
    }
}

fn read_timeout(received: i32, required: i32, data_present: bool) -> RequestAttemptError {
    db(DbError::ReadTimeout {
        consistency: Consistency::Two,
        received,
        required,
        data_present,
    })
}

fn write_timeout(received: i32, required: i32, write_type: WriteType) -> RequestAttemptError {
    db(DbError::WriteTimeout {
        consistency: Consistency::Two,
        received,
        required,
        write_type,
    })
}

#[test]
fn default_read_timeout() {
    for policy in DEFAULT {
        for idempotent in [false, true] {
            let one = Consistency::One;
            let enough_no_data = read_timeout(2, 2, false);
            expect(
                policy,
                &enough_no_data,
                idempotent,
                one,
                &[RetrySameTarget(None), DontRetry],
            );
            expect(
                policy,
                &read_timeout(2, 2, true),
                idempotent,
                one,
                &[DontRetry],
            );
            expect(
                policy,
                &read_timeout(1, 2, true),
                idempotent,
                one,
                &[DontRetry],
            );
        }
    }
}

#[test]
fn default_write_timeout() {
    for policy in DEFAULT {
        let one = Consistency::One;
        let batch_log = write_timeout(1, 2, WriteType::BatchLog);
        expect(policy, &batch_log, false, one, &[DontRetry]);
        expect(
            policy,
            &batch_log,
            true,
            one,
            &[RetrySameTarget(None), DontRetry],
        );
        let simple = write_timeout(4, 2, WriteType::Simple);
        expect(policy, &simple, false, one, &[DontRetry]);
        expect(policy, &simple, true, one, &[DontRetry]);
    }
}

#[test]
fn downgrading_consistency_never_retries() {
    for policy in DOWNGRADING {
        for &cl in CONSISTENCY_LEVELS {
            let errors = never_retried_db_errors().into_iter().map(db);
            for error in errors.chain(never_retried_driver_errors()) {
                for idempotent in [false, true] {
                    expect(policy, &error, idempotent, cl, &[DontRetry]);
                }
            }
        }
    }
}

#[test]
fn downgrading_consistency_idempotent_next_retries() {
    for policy in DOWNGRADING {
        for &cl in CONSISTENCY_LEVELS {
            for error in idempotent_next_errors() {
                expect(policy, &error, false, cl, &[DontRetry]);
                expect(policy, &error, true, cl, &[RetryNextTarget(None)]);
            }
        }
    }
}

#[test]
fn downgrading_consistency_bootstrapping() {
    let error = db(DbError::IsBootstrapping);
    for policy in DOWNGRADING {
        for &cl in CONSISTENCY_LEVELS {
            for idempotent in [false, true] {
                expect(policy, &error, idempotent, cl, &[RetryNextTarget(None)]);
            }
        }
    }
}

#[test]
fn downgrading_consistency_unavailable() {
    let alive = 1;
    let error = db(DbError::Unavailable {
        consistency: Consistency::Two,
        required: 2,
        alive,
    });
    for policy in DOWNGRADING {
        for &cl in CONSISTENCY_LEVELS {
            for idempotent in [false, true] {
                let answers = [max_likely_to_work_cl(alive, cl), DontRetry];
                expect(policy, &error, idempotent, cl, &answers);
            }
        }
    }
}

#[test]
fn downgrading_consistency_read_timeout() {
    for policy in DOWNGRADING {
        for &cl in CONSISTENCY_LEVELS {
            for idempotent in [false, true] {
                let enough_no_data = read_timeout(2, 2, false);
                let answers = [RetrySameTarget(None), DontRetry];
                expect(policy, &enough_no_data, idempotent, cl, &answers);
                expect(
                    policy,
                    &read_timeout(2, 2, true),
                    idempotent,
                    cl,
                    &[DontRetry],
                );
                // Not enough responses: the policy lowers the consistency to what answered;
                // asked again at that level, it does not retry a second time.
                let received = 1;
                let not_enough = read_timeout(received, 2, true);
                let expected = max_likely_to_work_cl(received, cl);
                let mut session = session(policy);
                assert_eq!(session.decide(&not_enough, idempotent, cl), expected);
                if let RetrySameTarget(new_cl) = expected {
                    let again = session.decide(&not_enough, idempotent, new_cl.unwrap_or(cl));
                    assert_eq!(again, DontRetry, "{policy} at {cl:?}");
                }
            }
        }
    }
}

#[test]
fn downgrading_consistency_write_timeout() {
    for policy in DOWNGRADING {
        for (received, required) in (1..=5).zip(2..=6) {
            let batch_log = write_timeout(received, required, WriteType::BatchLog);
            let unlogged = write_timeout(received, required, WriteType::UnloggedBatch);
            let simple = write_timeout(received, required, WriteType::Simple);
            for &cl in CONSISTENCY_LEVELS {
                expect(policy, &batch_log, false, cl, &[DontRetry]);
                expect(
                    policy,
                    &batch_log,
                    true,
                    cl,
                    &[RetrySameTarget(None), DontRetry],
                );
                expect(policy, &unlogged, false, cl, &[DontRetry]);
                let answers = [max_likely_to_work_cl(received, cl), DontRetry];
                expect(policy, &unlogged, true, cl, &answers);
                expect(policy, &simple, false, cl, &[DontRetry]);
                expect(policy, &simple, true, cl, &[IgnoreWriteError, DontRetry]);
            }
        }
    }
}
