//! Built-ins take parameters (in the registry's TOML), the
//! declarative `exponential` built-in; without parameters every built-in decides exactly as the
//! references' strategies do; refused parameters name file, line and field.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{decide_at, request};
use rebound::backoff::ExponentialBackoff;
use rebound::cassandra::{
    AbortKind, Cassandra, ConsistencyDowngradingRetryPolicy, ConsistencyLevel, DefaultRetryPolicy,
};
use rebound::config::{Builtin, BuiltinPolicy, ConfigError, PolicySource, RegistryConfig};
use rebound::grid::every_reason;
use rebound::{
    reasons, BestEffort, CancelReason, Decision, DecisionContext, FailFast,
    FastFailOnTerminalError, NodeChoice, Orchestrator, ReadTimeout, Request, RequestType,
    RetryAction, RetryError, RetryReason, RetryStrategy, TerminalError,
};
use serde_json::{json, Map, Value};

fn params(value: Value) -> Map<String, Value> {
    value.as_object().expect("an object").clone()
}

fn built(builtin: Builtin, value: Value) -> Arc<dyn RetryStrategy> {
    BuiltinPolicy::new(builtin, &params(value))
        .expect("valid parameters")
        .strategy()
}

/// What `strategy` answers directly for `reason` on a request of `ty` after `retries`.
fn ask(
    strategy: &dyn RetryStrategy,
    ty: RequestType,
    retries: u32,
    reason: &RetryReason,
) -> RetryAction {
    let request = request(ty, 10_000, Instant::now()).with_retry_attempts(retries);
    futures::executor::block_on(strategy.retry_after(&request, &DecisionContext::new(reason)))
}

/// docs/registry.md "Built-in parameters": without parameters a built-in is exactly its
/// reference's strategy. Each built-in without parameters answers as the reference strategy over every reason of the grid, idempotent or
/// not, at several retry counts.
#[test]
fn without_parameters_every_builtin_decides_as_the_reference_strategy() {
    let references: [(Builtin, Arc<dyn RetryStrategy>); 5] = [
        (
            Builtin::BestEffort,
            Arc::new(BestEffort::<ExponentialBackoff>::default()),
        ),
        (Builtin::FailFast, Arc::new(FailFast)),
        (
            Builtin::FastFailOnTerminalError,
            Arc::new(FastFailOnTerminalError::<ExponentialBackoff>::default()),
        ),
        (
            Builtin::CassandraDefault,
            Arc::new(Cassandra::new(DefaultRetryPolicy)),
        ),
        (
            Builtin::CassandraDowngradingConsistency,
            Arc::new(Cassandra::new(ConsistencyDowngradingRetryPolicy)),
        ),
    ];
    for (builtin, reference) in references {
        let tuned = built(builtin, json!({}));
        for reason in every_reason() {
            for ty in [RequestType::Get, RequestType::Upsert] {
                for retries in [0, 1, 2, 5] {
                    assert_eq!(
                        ask(&*tuned, ty, retries, &reason),
                        ask(&*reference, ty, retries, &reason),
                        "{builtin:?} {reason} {ty:?} after {retries} retries"
                    );
                }
            }
        }
        let version = BuiltinPolicy::new(builtin, &Map::new()).unwrap().version();
        assert_eq!(version, format!("builtin:{}", builtin.name()));
    }
}

/// Best effort's parameters: `min_ms × factor^retries` clamped to
/// `[min_ms, max_ms]`; a tuned version is told apart from the default in answers.
#[test]
fn best_effort_parameters_shape_its_delays() {
    let tuned = json!({"min_ms": 10, "max_ms": 100, "factor": 3});
    let strategy = built(Builtin::BestEffort, tuned.clone());
    let delays: Vec<RetryAction> = (0..4)
        .map(|n| ask(&*strategy, RequestType::Get, n, &reasons::KV_LOCKED))
        .collect();
    let expected: Vec<RetryAction> = [10, 30, 90, 100]
        .map(|ms| RetryAction::after(Duration::from_millis(ms)))
        .to_vec();
    assert_eq!(delays, expected);
    let version = BuiltinPolicy::new(Builtin::BestEffort, &params(tuned))
        .unwrap()
        .version();
    assert!(version.starts_with("builtin:best-effort+"), "{version}");
    // Jitter takes at most its fraction off, never below min_ms.
    let jittered = built(
        Builtin::BestEffort,
        json!({"min_ms": 100, "max_ms": 1000, "factor": 2, "jitter": 0.5}),
    );
    for _ in 0..200 {
        let RetryAction::RetryAfter { delay, .. } =
            ask(&*jittered, RequestType::Get, 2, &reasons::KV_LOCKED)
        else {
            panic!("best effort retries an idempotent request")
        };
        assert!(
            (Duration::from_millis(200)..=Duration::from_millis(400)).contains(&delay),
            "{delay:?}"
        );
    }
}

/// Fast fail's `terminal`: only the listed terminal reasons fail at once
/// (with reference 001's named error); the others are treated as best effort treats them.
#[test]
fn fast_fail_fails_only_the_terminal_reasons_it_lists() {
    let strategy = built(
        Builtin::FastFailOnTerminalError,
        json!({"terminal": ["SCOPE_NOT_FOUND"], "min_ms": 5}),
    );
    assert_eq!(
        ask(&*strategy, RequestType::Get, 0, &reasons::SCOPE_NOT_FOUND),
        RetryAction::Fail(TerminalError::ScopeNotFoundException)
    );
    assert_eq!(
        ask(
            &*strategy,
            RequestType::Get,
            0,
            &reasons::AUTHENTICATION_ERROR
        ),
        RetryAction::after(Duration::from_millis(5))
    );
    // The others are answered as best effort (with these parameters) answers them.
    let best_effort = built(Builtin::BestEffort, json!({"min_ms": 5}));
    for reason in every_reason() {
        if reason.kind() == rebound::ReasonKind::ScopeNotFound {
            continue;
        }
        for ty in [RequestType::Get, RequestType::Upsert] {
            assert_eq!(
                ask(&*strategy, ty, 1, &reason),
                ask(&*best_effort, ty, 1, &reason),
                "{reason} {ty:?}"
            );
        }
    }
}

/// The Cassandra policies' `max_retries` (reference 003 "Behavior": the
/// driver's is one): the counted verdicts (read timeout, write timeout, unavailable) are granted
/// while fewer retries were made, as for the first retry; aborts are not counted, as in the
/// driver.
#[test]
fn cassandra_max_retries_bounds_the_counted_verdicts() {
    let read_timeout: RetryReason = ReadTimeout {
        consistency: ConsistencyLevel::Quorum,
        block_for: 2,
        received: 2,
        data_present: false,
    }
    .into();
    let same = RetryAction::now_on(NodeChoice::Same, None);
    let three = built(Builtin::CassandraDefault, json!({"max_retries": 3}));
    let answers: Vec<RetryAction> = (0..5)
        .map(|n| ask(&*three, RequestType::Get, n, &read_timeout))
        .collect();
    assert_eq!(
        answers,
        [same, same, same, RetryAction::Rethrow, RetryAction::Rethrow]
    );
    let none = built(
        Builtin::CassandraDowngradingConsistency,
        json!({"max_retries": 0}),
    );
    assert_eq!(
        ask(&*none, RequestType::Get, 0, &read_timeout),
        RetryAction::Rethrow
    );
    // A closed connection is retried on the next node whatever the count, as the driver does.
    let aborted = RetryReason::RequestAborted(AbortKind::ClosedConnection);
    assert_eq!(
        ask(&*none, RequestType::Get, 7, &aborted),
        RetryAction::now_on(NodeChoice::Next, None)
    );
}

/// `exponential` retries what it accepts while fewer than `max_attempts`
/// attempts were made (the first counts, as gRPC's maxAttempts), after its exponential delay,
/// on its node; `never_on` wins, `retry_on` limits.
#[test]
fn exponential_follows_its_declaration() {
    let strategy = built(
        Builtin::Exponential,
        json!({
            "max_attempts": 3, "initial_ms": 20, "max_ms": 50, "multiplier": 2,
            "retry_on": ["KV_LOCKED", "SERVICE_NOT_AVAILABLE"], "never_on": ["KV_TEMPORARY_FAILURE"],
            "node": "next",
        }),
    );
    let on_next = |ms| RetryAction::RetryAfter {
        delay: Duration::from_millis(ms),
        node: NodeChoice::Next,
        consistency: None,
        attempt_timeout: None,
    };
    let answers: Vec<RetryAction> = (0..3)
        .map(|n| ask(&*strategy, RequestType::Get, n, &reasons::KV_LOCKED))
        .collect();
    assert_eq!(answers, [on_next(20), on_next(40), RetryAction::NoRetry]);
    // Not in retry_on.
    assert_eq!(
        ask(
            &*strategy,
            RequestType::Get,
            0,
            &reasons::KV_SYNC_WRITE_IN_PROGRESS
        ),
        RetryAction::NoRetry
    );
    // Every reason but never_on's when retry_on is empty.
    let open = built(
        Builtin::Exponential,
        json!({"max_attempts": 5, "initial_ms": 1, "max_ms": 8, "multiplier": 2, "never_on": ["KV_LOCKED"]}),
    );
    assert_eq!(
        ask(&*open, RequestType::Get, 0, &reasons::KV_LOCKED),
        RetryAction::NoRetry
    );
    assert_eq!(
        ask(
            &*open,
            RequestType::Get,
            3,
            &reasons::KV_SYNC_WRITE_IN_PROGRESS
        ),
        RetryAction::after(Duration::from_millis(8))
    );
}

/// The guide's rule on unsafe retries: `exponential` does not look at
/// idempotency, and the orchestrator's safety guard still refuses to retry a non-idempotent
/// request for a reason that does not allow it (reference 001 "Idempotent operations"),
/// while the same request is retried for a reason that allows it.
#[test]
fn the_guard_still_refuses_unsafe_retries_from_exponential() {
    let strategy = built(
        Builtin::Exponential,
        json!({"max_attempts": 5, "initial_ms": 10, "max_ms": 100, "multiplier": 2}),
    );
    // The strategy alone would retry it.
    assert!(ask(
        &*strategy,
        RequestType::Upsert,
        0,
        &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT
    )
    .is_retry());
    let orchestrator = Orchestrator::new(strategy);
    let start = Instant::now();
    let mut upsert = request(RequestType::Upsert, 2500, start);
    upsert.mark_dispatched("node-a:11210");
    match decide_at(
        &orchestrator,
        &mut upsert,
        &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        0,
    ) {
        Decision::Fail(RetryError::RequestCanceled { reason, .. }) => assert_eq!(
            reason,
            CancelReason::UnsafeRetryRefused(reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT)
        ),
        other => panic!("an unsafe retry must be refused, got {other:?}"),
    }
    let mut upsert: Request = request(RequestType::Upsert, 2500, start);
    assert!(matches!(
        decide_at(&orchestrator, &mut upsert, &reasons::KV_LOCKED, 0),
        Decision::Retry(_)
    ));
}

fn refused(policy: &str) -> ConfigError {
    let text = format!("default_policy = \"p\"\n[policies.p]\n{policy}\n");
    RegistryConfig::parse(&text, Path::new("rebound.toml"), Path::new("."))
        .expect_err("the parameters must be refused")
}

/// docs/registry.md: unknown or out-of-range parameters are configuration errors naming
/// file, line and field, and unknown reasons in `retry_on` are refused at load.
#[test]
fn bad_parameters_are_configuration_errors_naming_file_line_and_field() {
    let cases = [
        (
            "builtin = \"best-effort\"\nparams = { min_ms = 1, colour = 3 }",
            "policies.p.params.colour",
            "colour",
        ),
        (
            "builtin = \"best-effort\"\n[policies.p.params]\nmin_ms = 100\nmax_ms = 10",
            "policies.p.params.max_ms",
            "at least min_ms (100)",
        ),
        (
            "builtin = \"best-effort\"\nparams = { jitter = 1.5 }",
            "policies.p.params.jitter",
            "from 0 to 1",
        ),
        (
            "builtin = \"best-effort\"\nparams = { factor = 0.5 }",
            "policies.p.params.factor",
            "a number from 1 to 1000",
        ),
        (
            "builtin = \"fail-fast\"\nparams = { max_retries = 2 }",
            "policies.p.params.max_retries",
            "takes none",
        ),
        (
            "builtin = \"cassandra-default\"\nparams = { max_retries = -1 }",
            "policies.p.params.max_retries",
            "-1",
        ),
        (
            "builtin = \"fast-fail-on-terminal-error\"\nparams = { terminal = [\"KV_LOCKED\"] }",
            "policies.p.params.terminal",
            "not a terminal reason",
        ),
        (
            "builtin = \"exponential\"\nparams = { max_attempts = 3, initial_ms = 1, max_ms = 9, multiplier = 2, retry_on = [\"KV_LOKED\"] }",
            "policies.p.params.retry_on",
            "`KV_LOKED` is not a retry reason",
        ),
        (
            "builtin = \"exponential\"\nparams = { max_attempts = 3, initial_ms = 1, max_ms = 9 }",
            "policies.p.params",
            "multiplier",
        ),
        (
            "builtin = \"exponential\"",
            "policies.p.params",
            "max_attempts",
        ),
        (
            "builtin = \"exponential\"\nparams = { max_attempts = 3, initial_ms = 1, max_ms = 9, multiplier = 2, retry_on = [\"KV_LOCKED\"], never_on = [\"KV_LOCKED\"] }",
            "policies.p.params.never_on",
            "both",
        ),
        (
            "component = \"p.wasm\"\nparams = { list = [1, 2] }",
            "policies.p.params.list",
            "a string, a number or a boolean",
        ),
    ];
    for (policy, field, message) in cases {
        let error = if policy.starts_with("component") {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
            let text = format!("default_policy = \"p\"\n[policies.p]\n{policy}\n");
            RegistryConfig::parse(&text, Path::new("rebound.toml"), dir.path()).unwrap_err()
        } else {
            refused(policy)
        };
        assert_eq!(error.file, Path::new("rebound.toml"), "{policy}");
        assert!(error.line >= 2, "{policy}: {error}");
        assert_eq!(error.field, field, "{policy}: {error}");
        assert!(error.message.contains(message), "{policy}: {error}");
    }
}

/// Parameters given in the TOML reach the built-in: the configured source is the tuned policy.
#[test]
fn configured_parameters_reach_the_builtin() {
    let text = "default_policy = \"p\"\n[policies.p]\nbuiltin = \"exponential\"\nparams = { max_attempts = 2, initial_ms = 7, max_ms = 7, multiplier = 1, node = \"next\" }\n";
    let config = RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new(".")).unwrap();
    let PolicySource::Builtin(policy) = &config.policies["p"].source else {
        panic!("a built-in")
    };
    assert_eq!(
        ask(
            &*policy.strategy(),
            RequestType::Get,
            0,
            &reasons::KV_LOCKED
        ),
        RetryAction::RetryAfter {
            delay: Duration::from_millis(7),
            node: NodeChoice::Next,
            consistency: None,
            attempt_timeout: None,
        }
    );
}

/// The example of docs/registry.md "Built-in parameters" is a valid configuration.
#[test]
fn the_documented_example_parses() {
    let block = common::toml_block_after(
        include_str!("../../docs/registry.md"),
        "### Built-in parameters",
    );
    let text = format!("default_policy = \"search\"\n{block}");
    let config = RegistryConfig::parse(&text, Path::new("registry.md"), Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        &config.policies["search"].source,
        PolicySource::Builtin(BuiltinPolicy::Exponential(_))
    ));
}
