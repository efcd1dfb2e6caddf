//! Issue 19, point 2: with `[engine] isolation`, components' calls run on threads of their own.
//! A spinning policy takes at most `per_policy` of them (a call past that is answered its
//! fail-safe at once, as `overloaded`), a caller in a tokio runtime has its answer by the
//! call's deadline, and built-in decisions never wait on it. Outside a tokio runtime the
//! sandbox's own deadline ends the call.

mod registry_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::registry::{PolicyRegistry, RegistryConfig};
use rebound::{
    reasons, CancelReason, Decision, DecisionContext, PolicyFailureKind, RequestType, RetryError,
};
use registry_support::{request, runtime, Workspace};

/// A registry with `standard` (best effort) and `spinner` (the adversary policy: a `spin`
/// request runs until its 200 ms deadline), isolated on two threads, one call per policy.
fn registry() -> (Workspace, Arc<PolicyRegistry>) {
    let ws = Workspace::new();
    ws.install("adversary.wasm", "adversary");
    ws.config(
        "default_policy = \"standard\"\n\
         [engine.isolation]\nthreads = 2\nper_policy = 1\n\
         [policies.standard]\nbuiltin = \"best-effort\"\n\
         [policies.spinner]\ncomponent = \"adversary.wasm\"\n\
         limits = { deadline_ms = 200, fuel = 100_000_000_000 }\n\
         quarantine = { after_failures = 0 }\n",
    );
    let config = RegistryConfig {
        strict_start: true,
        ..ws.load_config()
    };
    let registry = PolicyRegistry::with_runtime(config, runtime().clone()).unwrap();
    (ws, Arc::new(registry))
}

/// The kind of policy failure `decision` reports, if any.
fn failure_kind(decision: &Decision) -> Option<PolicyFailureKind> {
    match decision {
        Decision::Fail(RetryError::RequestCanceled {
            reason: CancelReason::PolicyFailed(failure, _),
            ..
        }) => Some(failure.kind),
        _ => None,
    }
}

async fn decide_spin(registry: &PolicyRegistry) -> (Decision, Duration) {
    let mut request = request(RequestType::Get)
        .policy("spinner")
        .context("spin", "yes");
    let started = Instant::now();
    let decided = registry
        .decide(&mut request, &DecisionContext::new(&reasons::KV_LOCKED))
        .await
        .unwrap();
    (decided.decision, started.elapsed())
}

/// One call of the spinning policy at a time: a second caller waits for the place (holding no
/// thread) and its call runs when it frees, to the sandbox's deadline; a third waits its whole
/// deadline and is answered `overloaded`; a built-in decides at once all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_policy_takes_its_places_only_and_answers_by_its_deadline() {
    let (_ws, registry) = registry();
    let spin = || {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move { decide_spin(&registry).await })
    };
    let first = spin();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (second, third) = (spin(), spin());
    let mut plain = request(RequestType::Get);
    let started = Instant::now();
    let decided = registry
        .decide(&mut plain, &DecisionContext::new(&reasons::KV_LOCKED))
        .await
        .unwrap();
    assert!(
        matches!(decided.decision, Decision::Retry(_)),
        "{decided:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(50));

    let (first, took) = first.await.unwrap();
    assert_eq!(
        failure_kind(&first),
        Some(PolicyFailureKind::Timeout),
        "{first:?}"
    );
    assert!(
        took >= Duration::from_millis(190) && took < Duration::from_millis(300),
        "answered by the 200 ms deadline: {took:?}"
    );
    let mut waited: Vec<(Option<PolicyFailureKind>, Duration)> = Vec::new();
    for call in [second, third] {
        let (decision, took) = call.await.unwrap();
        waited.push((failure_kind(&decision), took));
    }
    // One took the freed place and ran its own call to the sandbox's deadline; the other never
    // had one and was answered when its deadline passed waiting.
    waited.sort_by_key(|(_, took)| *took);
    assert_eq!(
        waited[0].0,
        Some(PolicyFailureKind::Overloaded),
        "{waited:?}"
    );
    assert!(
        waited[0].1 >= Duration::from_millis(190) && waited[0].1 < Duration::from_millis(300),
        "{waited:?}"
    );
    assert_eq!(waited[1].0, Some(PolicyFailureKind::Timeout), "{waited:?}");
    assert!(
        waited[1].1 >= Duration::from_millis(300) && waited[1].1 < Duration::from_millis(600),
        "waited for the place, then ran to its own deadline: {waited:?}"
    );
}

/// Without a tokio runtime the call still runs on the policy threads and the sandbox's own
/// deadline ends it.
#[test]
fn outside_tokio_the_sandbox_deadline_ends_the_call() {
    let (_ws, registry) = registry();
    let (decision, took) = futures::executor::block_on(decide_spin(&registry));
    assert_eq!(
        failure_kind(&decision),
        Some(PolicyFailureKind::Timeout),
        "{decision:?}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
    // A healthy call of the same policy is answered as usual.
    let mut request = request(RequestType::Get).policy("spinner");
    let decided = futures::executor::block_on(
        registry.decide(&mut request, &DecisionContext::new(&reasons::KV_LOCKED)),
    )
    .unwrap();
    assert_eq!(failure_kind(&decided.decision), None, "{decided:?}");
}
