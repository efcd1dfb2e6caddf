//! `rebound::retry_policy::ReboundPolicy` inside a `tower::retry::Retry` stack, against a real
//! server on loopback the test starts: a call answered `busy` (an HTTP 503) is sent again after
//! the policy's delay when it is idempotent (RFC 9110 §9.2.2: a GET), and never when it is not
//! (a POST, sent: the orchestrator's guard, reference 001 "RetryReason"); a call that keeps
//! failing stops at its deadline; the calls' outcomes reach the policy's retry budget.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound::retry_policy::{AttemptOutcomes, ReboundPolicy};
use rebound::{reasons, Cause, HttpMethod, Orchestrator, Request, RequestType, RetryReason};
use tower::retry::Retry;
use tower::{service_fn, ServiceExt};

use crate::line_servers::{exchange, LineServer};

/// A call: its method.
#[derive(Clone, Copy)]
struct Call(HttpMethod);

/// Why a call failed.
#[derive(Debug, PartialEq)]
enum LineError {
    Busy,
    Unreachable,
}

#[derive(Clone)]
struct Outcomes {
    timeout: Duration,
}

impl AttemptOutcomes<Call, String, LineError> for Outcomes {
    fn request(&self, call: &Call) -> Request {
        Request::new(1, RequestType::Http, self.timeout)
            .unwrap()
            .with_method(call.0)
            .with_authority("lines.example")
    }
    fn failure(&self, result: &Result<String, LineError>) -> Option<Cause> {
        match result {
            Ok(_) => None,
            Err(LineError::Busy) => Some(Cause::Reason(RetryReason::HttpStatus(503))),
            Err(LineError::Unreachable) => Some(Cause::Reason(reasons::SOCKET_NOT_AVAILABLE)),
        }
    }
    fn clone_request(&self, call: &Call) -> Option<Call> {
        Some(*call)
    }
}

/// The service: one line to `addr` per call, `busy` a failure.
fn lines(
    addr: SocketAddr,
) -> impl tower::Service<Call, Response = String, Error = LineError, Future: Send> + Clone {
    service_fn(move |_: Call| async move {
        match exchange(addr, || {}).await {
            Ok(answer) if answer == "busy" => Err(LineError::Busy),
            Ok(answer) => Ok(answer),
            Err(_) => Err(LineError::Unreachable),
        }
    })
}

fn outcomes(timeout_ms: u64) -> Outcomes {
    Outcomes {
        timeout: Duration::from_millis(timeout_ms),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_get_is_sent_again_and_a_busy_post_is_not() {
    let policy = ReboundPolicy::new(Arc::new(Orchestrator::default()), outcomes(30_000));
    for (method, answer, lines_read) in [
        (HttpMethod::Get, Ok("ok".to_owned()), 2),
        (HttpMethod::Post, Err(LineError::Busy), 1),
    ] {
        let server = LineServer::start(|n| Some(if n == 0 { "busy" } else { "ok" })).await;
        let service = Retry::new(policy.clone(), lines(server.addr));
        assert_eq!(service.oneshot(Call(method)).await, answer, "{method:?}");
        assert_eq!(server.lines(), lines_read, "{method:?}");
    }
}

/// Reference 001 "Capping the Retry Duration": a call that keeps failing is sent again until
/// its deadline, and then handed back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_keeps_failing_stops_at_its_deadline() {
    let server = LineServer::start(|_| Some("busy")).await;
    let policy = ReboundPolicy::new(Arc::new(Orchestrator::default()), outcomes(300));
    let service = Retry::new(policy, lines(server.addr));
    let ended = tokio::time::timeout(
        Duration::from_secs(30),
        service.oneshot(Call(HttpMethod::Get)),
    )
    .await
    .expect("ended by its 300 ms deadline");
    assert_eq!(ended, Err(LineError::Busy));
    assert!(server.lines() >= 2, "{} lines", server.lines());
}

/// docs/registry.md "Retry budgets": a call that succeeds at once deposits through its
/// outcome, so with a budget of half a retry per call and no floor, a busy GET after a
/// successful one is sent again, and the same busy GET alone is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_that_succeed_at_once_count_in_the_policy_s_retry_budget() {
    for (calls_before, answer, lines_read) in
        [(1, Ok("ok".to_owned()), 3), (0, Err(LineError::Busy), 1)]
    {
        let config = "default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = false\n\
                      [budgets.half]\npercent = 50\nmin_per_second = 0\nttl_ms = 60000\n\
                      [policies.p]\nbuiltin = \"best-effort\"\nbudget = \"half\"\n";
        let config = RegistryConfig::parse(config, "rebound.toml".as_ref(), ".".as_ref()).unwrap();
        let policy = ReboundPolicy::new(
            Arc::new(PolicyRegistry::new(config).unwrap()),
            outcomes(30_000),
        );
        // Line `calls_before` is the busy one; the others are answered.
        let server =
            LineServer::start(move |n| Some(if n == calls_before { "busy" } else { "ok" })).await;
        for _ in 0..calls_before {
            let service = Retry::new(policy.clone(), lines(server.addr));
            assert_eq!(
                service.oneshot(Call(HttpMethod::Get)).await,
                Ok("ok".to_owned())
            );
        }
        let service = Retry::new(policy, lines(server.addr));
        assert_eq!(
            service.oneshot(Call(HttpMethod::Get)).await,
            answer,
            "after {calls_before}"
        );
        assert_eq!(server.lines(), lines_read, "after {calls_before}");
    }
}
