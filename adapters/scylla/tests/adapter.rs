//! The adapter's own rules: a policy file replaced while requests
//! flow is picked up with no failed request; unknown names and an isolating registry are
//! refused when the policy is built; errors that no policy is asked about are answered by the
//! driver's hard-coded rules or "do not retry"; a downgrade reaches the driver as a
//! consistency; the deadline ends retries.

mod driver_retry_policy_tests;
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_scylla::{AdapterError, ReboundRetryPolicy};
use scylla::errors::{DbError, RequestAttemptError};
use scylla::policies::retry::RetryDecision;
use scylla::statement::Consistency;

fn unavailable() -> RequestAttemptError {
    RequestAttemptError::DbError(
        DbError::Unavailable {
            consistency: Consistency::Quorum,
            required: 2,
            alive: 1,
        },
        String::new(),
    )
}

/// Reference 003 "onUnavailable": the default policy tries the next node once; the
/// downgrading policy retries the same node at the level that can still succeed (ONE). The
/// file behind the policy is replaced while four threads keep asking: every answer is one of
/// the two versions' (never "do not retry"), and both are seen.
#[test]
fn a_replaced_policy_file_decides_while_requests_flow() {
    let watched = support::WatchedPolicy::new("cassandra_default");
    let policy = ReboundRetryPolicy::new(Arc::clone(&watched.registry)).unwrap();
    let old = RetryDecision::RetryNextTarget(None);
    let new = RetryDecision::RetrySameTarget(Some(Consistency::One));
    let stop = AtomicBool::new(false);
    let seen = std::thread::scope(|scope| {
        let askers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut seen = (0u64, 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        let mut session = policy.session();
                        let answer = session.decide(&unavailable(), true, Consistency::Quorum);
                        if answer == old {
                            seen.0 += 1;
                        } else if answer == new {
                            seen.1 += 1;
                        } else {
                            panic!("a request failed: {answer:?}");
                        }
                    }
                    seen
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        watched.replace_with("cassandra_downgrading_consistency");
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        askers
            .into_iter()
            .map(|a| a.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    assert!(seen.0 > 0 && seen.1 > 0, "both versions decided: {seen:?}");
    watched.assert_both_versions_decided();
}

#[test]
fn unknown_names_and_an_isolating_registry_are_refused() {
    let policy = ReboundRetryPolicy::new(support::registry()).unwrap();
    let error = policy.clone().policy("nope").unwrap_err().to_string();
    assert!(error.contains("no policy named `nope`"), "{error}");
    assert!(error.contains("cassandra-default"), "{error}");
    let error = policy.profile("nope").unwrap_err().to_string();
    assert!(error.contains("no profile named `nope`"), "{error}");
    assert!(error.contains("downgrading"), "{error}");

    let text = format!(
        "{}[engine.isolation]\nthreads = 1\n",
        support::config_text()
    );
    let config = RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref()).unwrap();
    let isolated = Arc::new(PolicyRegistry::new(config).unwrap());
    assert!(matches!(
        ReboundRetryPolicy::new(isolated),
        Err(AdapterError::Isolated)
    ));
}

/// A profile routes to its policy: the `downgrading` profile lowers the consistency.
#[test]
fn a_profile_routes_to_its_policy() {
    let policy = ReboundRetryPolicy::new(support::registry())
        .unwrap()
        .profile("downgrading")
        .unwrap();
    let answer = policy
        .session()
        .decide(&unavailable(), false, Consistency::Quorum);
    assert_eq!(
        answer,
        RetryDecision::RetrySameTarget(Some(Consistency::One))
    );
}

/// Reference 003 "Hard-coded rules": a request that was never written (no stream id) goes to
/// the next node, whatever its idempotence.
#[test]
fn a_request_never_written_goes_to_the_next_node() {
    let policy = ReboundRetryPolicy::new(support::registry()).unwrap();
    for idempotent in [false, true] {
        let answer = policy.session().decide(
            &RequestAttemptError::UnableToAllocStreamId,
            idempotent,
            Consistency::One,
        );
        assert_eq!(answer, RetryDecision::RetryNextTarget(None));
    }
}

/// Reference 001 "Capping the Retry Duration": past the request timeout the policy's retry
/// becomes a timeout, which the driver hears as "do not retry".
#[test]
fn past_the_request_timeout_nothing_is_retried() {
    let policy = ReboundRetryPolicy::new(support::registry())
        .unwrap()
        .request_timeout(Duration::from_millis(20));
    let mut session = policy.session();
    std::thread::sleep(Duration::from_millis(40));
    let answer = session.decide(&unavailable(), true, Consistency::Quorum);
    assert_eq!(answer, RetryDecision::DontRetry);
}

/// Reference 003 "onUnavailableVerdict": the downgrading policy "also triggers a maximum of one
/// retry". The session keeps its request across the driver's questions: the second question,
/// asked at the downgraded level the first answer chose, is the request's second failure and is
/// not retried; a new session starts counting again.
#[test]
fn a_session_counts_its_retries_across_the_driver_questions() {
    let policy = ReboundRetryPolicy::new(support::registry())
        .unwrap()
        .profile("downgrading")
        .unwrap();
    let mut session = policy.session();
    let first = session.decide(&unavailable(), true, Consistency::Quorum);
    assert_eq!(
        first,
        RetryDecision::RetrySameTarget(Some(Consistency::One))
    );
    let second = session.decide(&unavailable(), true, Consistency::One);
    assert_eq!(second, RetryDecision::DontRetry);
    // The driver reports the attempt at another level than the one decided (it may have its
    // own reasons): still the same request, still its second failure.
    let mut other = policy.session();
    let _ = other.decide(&unavailable(), true, Consistency::Quorum);
    let third = other.decide(&unavailable(), false, Consistency::Quorum);
    assert_eq!(third, RetryDecision::DontRetry);
    let fresh = policy
        .session()
        .decide(&unavailable(), true, Consistency::Quorum);
    assert_eq!(fresh, first);
}

/// docs/hedging.md "Cassandra: constant speculative execution": the driver's speculative
/// executions follow the registry policy's `speculative_execution` as the configuration running
/// now says (a reload changes them, a policy without one has none); an unknown policy is
/// refused.
#[test]
fn speculative_executions_follow_the_policy_s_configuration() {
    use rebound_scylla::ReboundSpeculativeExecution;
    let config = |table: &str| {
        RegistryConfig::parse(
            &format!("default_policy = \"reads\"\n[watch]\nenabled = false\n[policies.reads]\nbuiltin = \"cassandra-default\"\n{table}\n"),
            std::path::Path::new("rebound.toml"),
            std::path::Path::new("."),
        )
        .unwrap()
    };
    let registry = Arc::new(
        PolicyRegistry::new(config(
            "speculative_execution = { delay_ms = 20, max_executions = 3 }",
        ))
        .unwrap(),
    );
    let speculative = ReboundSpeculativeExecution::new(Arc::clone(&registry), "reads").unwrap();
    let now = speculative.current().unwrap();
    assert_eq!(
        (now.delay(), now.max_executions()),
        (Duration::from_millis(20), 3)
    );
    registry.apply(config("")).unwrap();
    assert_eq!(speculative.current(), None, "the reload removed it");
    assert!(matches!(
        ReboundSpeculativeExecution::new(registry, "writes"),
        Err(AdapterError::Registry(_))
    ));
}
