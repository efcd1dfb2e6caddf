//! The adapter through the SDK's public types: every retry reason of
//! couchbase-core 1.1 maps to one of Rebound's (reference 001 "RetryReason"), its facts
//! (idempotence, retries so far) reach the policy, the answer comes back as the SDK's
//! `RetryAction`, and a policy file replaced while operations fail is picked up with no
//! failed operation.

#[path = "../../test_support.rs"]
mod test_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use couchbase_core::retry::{RetryReason as SdkReason, RetryStrategy};
use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound::ReasonKind;
use rebound_couchbase::reasons::to_rebound;
use rebound_couchbase::ReboundRetryStrategy;
use test_support::WatchedPolicy;

/// Every reason couchbase-core 1.1.0 defines.
const SDK_REASONS: [SdkReason; 18] = [
    SdkReason::KvNotMyVbucket,
    SdkReason::KvInvalidVbucketMap,
    SdkReason::KvTemporaryFailure,
    SdkReason::KvCollectionOutdated,
    SdkReason::KvErrorMapRetryIndicated,
    SdkReason::KvLocked,
    SdkReason::KvSyncWriteInProgress,
    SdkReason::KvSyncWriteRecommitInProgress,
    SdkReason::ServiceNotAvailable,
    SdkReason::SocketClosedWhileInFlight,
    SdkReason::SocketNotAvailable,
    SdkReason::QueryPreparedStatementFailure,
    SdkReason::QueryIndexNotFound,
    SdkReason::QueryErrorRetryable,
    SdkReason::SearchTooManyRequests,
    SdkReason::HttpSendRequestFailed,
    SdkReason::HttpConnectFailed,
    SdkReason::NotReady,
];

fn registry() -> Arc<PolicyRegistry> {
    let config = RegistryConfig::parse(
        "default_policy = \"standard\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.standard]\nbuiltin = \"best-effort\"\n\
         [policies.strict]\nbuiltin = \"fail-fast\"\n",
        "rebound.toml".as_ref(),
        ".".as_ref(),
    )
    .unwrap();
    Arc::new(PolicyRegistry::new(config).unwrap())
}

/// Every SDK reason is one Rebound knows, under the SDK's own name where the RFC has it, and
/// agrees with the SDK on whether a non-idempotent operation may be retried for it.
#[test]
fn every_sdk_reason_maps_to_a_known_reason() {
    // The SDK's additions, and their RFC reasons (docs/adapters.md).
    let renamed = [
        ("KV_INVALID_VBUCKET_MAP", "KV_NOT_MY_VBUCKET"),
        (
            "KV_SYNC_WRITE_RECOMMIT_IN_PROGRESS",
            "KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS",
        ),
        ("QUERY_ERROR_RETRYABLE", "SERVICE_RESPONSE_CODE_INDICATED"),
        ("HTTP_SEND_REQUEST_FAILED", "SOCKET_NOT_AVAILABLE"),
        ("HTTP_CONNECT_FAILED", "SOCKET_NOT_AVAILABLE"),
        ("NOT_READY", "GLOBAL_CONFIG_LOAD_IN_PROGRESS"),
    ];
    for sdk in SDK_REASONS {
        let ours = to_rebound(sdk);
        assert_ne!(ours.kind(), ReasonKind::Unknown, "{sdk}");
        let name = sdk.to_string();
        let expected = renamed
            .iter()
            .find(|(from, _)| *from == name)
            .map_or(name.as_str(), |(_, to)| to);
        assert_eq!(ours.name(), expected, "{sdk}");
        assert_eq!(
            ours.allows_non_idempotent_retry(),
            sdk.allows_non_idempotent_retry(),
            "{sdk}: may a non-idempotent operation be retried?"
        );
    }
}

/// Reference 001 "RetryReason" and the safety guard: KV_LOCKED may retry a non-idempotent
/// operation; SOCKET_CLOSED_WHILE_IN_FLIGHT retries it only when idempotent — the old rule,
/// held through the adapter. Best effort's delay grows with the retries the SDK counted.
#[test]
fn the_sdk_facts_reach_the_policy_and_its_delay_comes_back() {
    let strategy = ReboundRetryStrategy::new(registry());
    let first = strategy.decide(false, 0, SdkReason::KvLocked).unwrap();
    let later = strategy.decide(false, 5, SdkReason::KvLocked).unwrap();
    assert!(first.duration < later.duration, "{first:?} {later:?}");
    assert!(strategy
        .decide(false, 0, SdkReason::SocketClosedWhileInFlight)
        .is_none());
    assert!(strategy
        .decide(true, 0, SdkReason::SocketClosedWhileInFlight)
        .is_some());
    let strict = ReboundRetryStrategy::new(registry())
        .policy("strict")
        .unwrap();
    assert!(strict.decide(true, 0, SdkReason::KvLocked).is_none());
    // What the SDK is given: a strategy object.
    let _: Arc<dyn RetryStrategy> = Arc::new(strict);
}

#[test]
fn an_unknown_policy_is_refused_naming_the_known_ones() {
    let error = ReboundRetryStrategy::new(registry())
        .policy("nope")
        .unwrap_err()
        .to_string();
    assert!(error.contains("no policy named `nope`"), "{error}");
    assert!(error.contains("standard, strict"), "{error}");
}

/// The policy file (best effort from Rust, then from C) is replaced while
/// four threads ask about locked documents: every answer is a retry, and the decision log
/// shows both versions deciding.
#[test]
fn a_replaced_policy_file_decides_while_operations_fail() {
    let policy = WatchedPolicy::new("best_effort");
    let strategy = ReboundRetryStrategy::new(Arc::clone(&policy.registry));
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let action = strategy.decide(false, 1, SdkReason::KvLocked);
                    assert!(action.is_some(), "an operation failed");
                    std::thread::sleep(Duration::from_micros(200));
                }
            });
        }
        std::thread::sleep(Duration::from_millis(100));
        policy.replace_with("c_best_effort");
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
    });
    policy.assert_both_versions_decided();
}
