//! Spec: reference 001 "Retry Orchestration" requires logging every retry and every refusal
//! with its reason. Alone in its binary: tracing caches callsite interest process-wide, so a
//! test running first without a subscriber would hide these events.

mod common;

use std::time::{Duration, Instant};

use common::{always_retry, decide_at, logged_at, paused_runtime, request};
use rebound::{reasons, Orchestrator, Request, RequestType};

/// Reference 001 "Retry Orchestration": retries and refusals are logged with the reason as a
/// structured field.
#[test]
fn retries_and_refusals_are_logged_with_reason() {
    let log = logged_at(tracing::Level::DEBUG, || {
        let orchestrator = always_retry(5);
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

/// The executor runs each request in a `rebound.request` span carrying its
/// `request_id`, and each attempt in a `rebound.attempt` span inside it, so what the operation
/// and the orchestrator log is tied to the request and the attempt.
#[test]
fn the_executor_logs_inside_request_and_attempt_spans() {
    use rebound::executor::{Executor, Failure};
    let log = logged_at(tracing::Level::DEBUG, || {
        paused_runtime().block_on(async {
            let executor = Executor::new(Orchestrator::default());
            let request = Request::new(7, RequestType::Get, Duration::from_secs(1))
                .unwrap()
                .with_start(tokio::time::Instant::now().into_std());
            let value = executor
                .run(request, |attempt| async move {
                    tracing::info!("calling the server");
                    if attempt.number() == 0 {
                        Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE))
                    } else {
                        Ok(42)
                    }
                })
                .await
                .unwrap();
            assert_eq!(value, 42);
        });
    });
    let attempts = [
        "attempt=0 rebound.request_type=get}",
        // OpenTelemetry's `http.request.resend_count`: on resent attempts only.
        "attempt=1 rebound.request_type=get http.request.resend_count=1}",
    ];
    for attempt in attempts {
        let spans = format!(
            "rebound.request{{request_id=7 request_type=get}}:rebound.attempt{{{attempt}: "
        );
        assert!(
            log.lines()
                .any(|line| line.contains(&spans) && line.ends_with("calling the server")),
            "{spans} in:\n{log}"
        );
    }
    assert!(
        log.lines().any(|line| line.contains(
            "rebound.request{request_id=7 request_type=get}:rebound.attempt{attempt=0 rebound.request_type=get error.type=\"SOCKET_NOT_AVAILABLE\"}: "
        ) && line.contains("reason=SOCKET_NOT_AVAILABLE")),
        "the retry decision is logged in the span of the attempt whose failure it decides:\n{log}"
    );
}
