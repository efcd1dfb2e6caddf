//! Spec: reference 001 "Retry Orchestration" requires logging every retry and every refusal
//! with its reason. Alone in its binary: tracing caches callsite interest process-wide, so a
//! test running first without a subscriber would hide these events.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{decide_at, request, LogBuffer};
use rebound::DecisionContext;
use rebound::{reasons, Orchestrator, Request, RequestType, RetryAction, SyncStrategy};

#[derive(Debug)]
struct AlwaysRetry;

impl SyncStrategy for AlwaysRetry {
    fn name(&self) -> &str {
        "always"
    }
    fn decide(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        RetryAction::after(Duration::from_millis(5))
    }
}

fn always_retry() -> Orchestrator {
    Orchestrator::new(Arc::new(AlwaysRetry))
}

/// Reference 001 "Retry Orchestration": retries and refusals are logged with the reason as a
/// structured field.
#[test]
fn retries_and_refusals_are_logged_with_reason() {
    let buf = LogBuffer::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let orchestrator = always_retry();
        let mut req = request(RequestType::Get, 2500, Instant::now());
        let _ = decide_at(&orchestrator, &mut req, &reasons::KV_LOCKED, 0);
        let mut upsert = request(RequestType::Upsert, 2500, Instant::now());
        let _ = decide_at(
            &orchestrator,
            &mut upsert,
            &reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
            0,
        );
    });
    let log = buf.text();
    assert!(
        log.contains("retrying") && log.contains("reason=KV_LOCKED"),
        "{log}"
    );
    assert!(
        log.contains("safety guard refused")
            && log.contains("reason=SOCKET_CLOSED_WHILE_IN_FLIGHT"),
        "{log}"
    );
}
