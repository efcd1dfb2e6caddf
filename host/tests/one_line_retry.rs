//! `Executor::retry`, "retry this async call" in one line (docs/executor.md "One call"): a call
//! is idempotent only when declared, so the orchestrator's guard (reference 001 "RetryReason":
//! `SOCKET_CLOSED_WHILE_IN_FLIGHT` does not allow a non-idempotent retry) sends a call that
//! was not declared once; an error `when` refuses is handed back at once; a reason that says
//! nothing was sent (`SOCKET_NOT_AVAILABLE`) is retried for any call; a named policy decides.
//! On tokio's paused clock.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::executor::{ExecuteError, Executor};
use rebound::registry::PolicyRegistry;
use rebound::{reasons, Orchestrator};

/// A call failing `failures` times with "busy", then answering its number; counts its calls.
fn busy_then_ok(
    failures: u32,
    calls: &AtomicU32,
) -> impl FnMut() -> std::future::Ready<Result<u32, &'static str>> + Send + '_ {
    move || {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        std::future::ready(if n <= failures { Err("busy") } else { Ok(n) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_is_retried_only_when_declared_idempotent() {
    let executor = Executor::new(Arc::new(Orchestrator::default()));
    let calls = AtomicU32::new(0);
    let answer = executor.retry(busy_then_ok(2, &calls)).idempotent().await;
    assert_eq!(answer.unwrap(), 3);
    let calls = AtomicU32::new(0);
    let answer = executor.retry(busy_then_ok(2, &calls)).await;
    match answer {
        Err(ExecuteError::Ended { error, last }) => {
            assert_eq!(error.name(), "RequestCanceled");
            assert_eq!(last, Some("busy"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn errors_when_refuses_are_handed_back_and_a_reason_decides() {
    let executor = Executor::new(Arc::new(Orchestrator::default()));
    let calls = AtomicU32::new(0);
    let answer = (executor.retry(busy_then_ok(2, &calls)).idempotent())
        .when(|error: &&str| *error != "busy")
        .await;
    assert!(
        matches!(answer, Err(ExecuteError::NotRetried { error: "busy", .. })),
        "{answer:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Nothing was sent: retried although the call is not declared idempotent.
    let calls = AtomicU32::new(0);
    let answer = executor
        .retry(busy_then_ok(2, &calls))
        .reason(|_: &&str| Some(reasons::SOCKET_NOT_AVAILABLE))
        .await;
    assert_eq!(answer.unwrap(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_named_policy_of_a_registry_decides() {
    let config = "default_policy = \"retrying\"\ncache_dir = false\n[watch]\nenabled = false\n\
                  [policies.retrying]\nbuiltin = \"best-effort\"\n\
                  [policies.never]\nbuiltin = \"fail-fast\"\n";
    let config = RegistryConfig::parse(config, Path::new("rebound.toml"), Path::new(".")).unwrap();
    let executor = Executor::new(Arc::new(PolicyRegistry::new(config).unwrap()));
    let calls = AtomicU32::new(0);
    let answer = executor.retry(busy_then_ok(1, &calls)).idempotent().await;
    assert_eq!(answer.unwrap(), 2);
    let calls = AtomicU32::new(0);
    let answer = (executor.retry(busy_then_ok(1, &calls)).idempotent())
        .policy("never")
        .await;
    assert!(answer.is_err(), "{answer:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
