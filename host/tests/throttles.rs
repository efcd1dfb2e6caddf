//! Spec: retry throttles that look at failures (docs/throttling.md): gRFC A6's token count and
//! the SRE book's adaptive throttling, through the executor on tokio's paused clock and
//! through the registry's configuration (`[throttles.NAME]`, `[policies.X] throttle`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::config::RegistryConfig;
use rebound::executor::{ExecuteError, Executor, Failure};
use rebound::registry::PolicyRegistry;
use rebound::throttle::{ScopedThrottle, ThrottleConfig, ThrottleKind};
use rebound::{
    reasons, CancelReason, Decision, DecisionContext, NodeChoice, Orchestrator, Outcome, Request,
    RequestType, RetryAction, RetryError, RetryReason, SyncStrategy,
};

/// Retries every failure after 10 ms.
#[derive(Debug)]
struct Always;

impl rebound::Strategy for Always {
    fn name(&self) -> &str {
        "always"
    }
}

impl SyncStrategy for Always {
    fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        RetryAction::RetryAfter {
            delay: Duration::from_millis(10),
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout: None,
        }
    }
}

fn tokens(max_tokens: f64, token_ratio: f64) -> ThrottleConfig {
    ThrottleConfig::new(ThrottleKind::Tokens {
        max_tokens,
        token_ratio,
    })
}

/// gRFC A6 "Throttling Retry Attempts and Hedged RPCs", end to end through the executor: while
/// the server fails, each failed attempt takes a token until the count reaches half of
/// `maxTokens`, and from then on a failure is not retried (`RETRY_THROTTLED`); successes give
/// tokens back, and once the count is above half again a failure is retried.
#[tokio::test(start_paused = true)]
async fn a_failing_server_engages_the_throttle_and_successes_release_it() {
    let throttle = ScopedThrottle::new(
        tokens(4.0, 1.0),
        "policy".parse().unwrap(),
        16,
        Instant::now(),
    )
    .unwrap();
    let executor =
        Executor::new(Orchestrator::new(Arc::new(Always)).with_throttle(Arc::new(throttle)));
    let failing = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicU32::new(0));
    let run = || {
        let failing = Arc::clone(&failing);
        let calls = Arc::clone(&calls);
        let request = Request::new(1, RequestType::Get, Duration::from_secs(10))
            .unwrap()
            .with_start(tokio::time::Instant::now().into_std());
        let executor = &executor;
        async move {
            calls.store(0, Ordering::Relaxed);
            let result = executor
                .run(request, |attempt| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    let failing = failing.load(Ordering::Relaxed);
                    async move {
                        attempt.dispatched("node-1:8080");
                        if failing {
                            Err(Failure::reason("busy", RetryReason::HttpStatus(503)))
                        } else {
                            Ok(())
                        }
                    }
                })
                .await;
            (result, calls.load(Ordering::Relaxed))
        }
    };
    let throttled = |result: Result<(), ExecuteError<&str>>| match result {
        Err(ExecuteError::Ended {
            error:
                RetryError::RequestCanceled {
                    reason: CancelReason::RetryThrottled(_),
                    ..
                },
            ..
        }) => true,
        other => panic!("expected RETRY_THROTTLED, got {other:?}"),
    };
    // 4 tokens; the first failure leaves 3 (retried), the second 2: at half, throttled.
    let (result, attempts) = run().await;
    assert!(throttled(result));
    assert_eq!(attempts, 2);
    // Already at the threshold: the next request's first failure is not retried.
    let (result, attempts) = run().await;
    assert!(throttled(result));
    assert_eq!(attempts, 1);
    // The server recovers: three successes give three tokens back (1 → 4).
    failing.store(false, Ordering::Relaxed);
    for _ in 0..3 {
        let (result, attempts) = run().await;
        assert!(result.is_ok());
        assert_eq!(attempts, 1);
    }
    // Failing again, a failure is retried: the throttle has released.
    failing.store(true, Ordering::Relaxed);
    let (result, attempts) = run().await;
    assert!(throttled(result));
    assert_eq!(attempts, 2, "retried once, then throttled at 2 tokens");
}

/// The safety guard comes before the throttle: a throttle with tokens to spare never lets a
/// non-idempotent request be retried for a reason that does not allow it, and counts the
/// failure all the same.
#[test]
fn a_throttle_never_lets_an_unsafe_retry_go() {
    let throttle = Arc::new(
        ScopedThrottle::new(
            tokens(100.0, 1.0),
            "policy".parse().unwrap(),
            16,
            Instant::now(),
        )
        .unwrap(),
    );
    let orchestrator = Orchestrator::new(Arc::new(Always)).with_throttle(Arc::clone(&throttle));
    let mut request = Request::new(1, RequestType::Upsert, Duration::from_secs(10)).unwrap();
    request.mark_dispatched("node-1:11210");
    let decision = futures::executor::block_on(orchestrator.decide(
        &mut request,
        &DecisionContext::new(&reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT),
    ));
    assert!(
        matches!(
            decision,
            Decision::Fail(RetryError::RequestCanceled {
                reason: CancelReason::UnsafeRetryRefused(_),
                ..
            })
        ),
        "{decision:?}"
    );
    let (_, scope) = &throttle.each()[0];
    assert_eq!(
        scope.level_at(Instant::now()),
        rebound::throttle::ThrottleLevel::Tokens(99.0)
    );
}

const CONFIG: &str = r#"
default_policy = "api"
[watch]
enabled = false
[throttles.backend]
kind = "tokens"
max_tokens = 4
token_ratio = 1
per = "authority"
[policies.api]
builtin = "exponential"
params = { max_attempts = 10, initial_ms = 1, max_ms = 1, multiplier = 1 }
throttle = "backend"
"#;

fn parse(text: &str) -> Result<RegistryConfig, rebound::config::ConfigError> {
    RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new("."))
}

/// docs/registry.md "Retry throttles": a throttle kept per authority refuses retries to the
/// failing server only; a reload with the same parameters keeps its counts; the status shows
/// its kind, scope, policies and refusals.
#[test]
fn a_throttle_per_authority_refuses_only_the_failing_server() {
    let registry = PolicyRegistry::new(parse(CONFIG).unwrap()).unwrap();
    let decide = |authority: &str| {
        let mut request = Request::new(1, RequestType::Get, Duration::from_secs(10))
            .unwrap()
            .with_retry_attempts(1)
            .with_authority(authority);
        let reason = RetryReason::HttpStatus(503);
        let context = DecisionContext::new(&reason);
        let decision = futures::executor::block_on(registry.decide(&mut request, &context))
            .unwrap()
            .decision;
        match decision {
            Decision::Retry(_) => true,
            Decision::Fail(RetryError::RequestCanceled {
                reason: CancelReason::RetryThrottled(_),
                ..
            }) => false,
            other => panic!("a retry or RETRY_THROTTLED, got {other:?}"),
        }
    };
    assert_eq!(
        [decide("a"), decide("a"), decide("a")],
        [true, false, false]
    );
    assert!(decide("b"), "another authority has its own count");
    registry.apply(parse(CONFIG).unwrap()).unwrap();
    assert!(
        !decide("a"),
        "kept across a reload with the same parameters"
    );
    let request = Request::new(1, RequestType::Get, Duration::from_secs(10))
        .unwrap()
        .with_authority("a");
    // From 0 tokens, four successes fill the count again.
    for _ in 0..4 {
        (registry.controls(&request)).report(
            &request,
            Outcome::Succeeded { attempts: 1 },
            Instant::now(),
        );
    }
    assert!(decide("a"), "successes released it");
    let status = registry.status();
    let backend = &status.throttles[0];
    assert_eq!(
        (backend.name.as_str(), backend.kind, backend.per.as_str()),
        ("backend", "tokens", "authority")
    );
    assert_eq!(backend.policies, ["api"]);
    assert_eq!((backend.scopes, backend.refusals), (2, 3));
}

/// gRFC A6 "Validation of retryThrottling" and docs/registry.md "Retry throttles": invalid
/// parameters are refused as gRPC refuses them, an unknown scope names the valid ones, a
/// parameter of the other kind and an unknown throttle are refused, each with its field.
#[test]
fn bad_throttles_are_refused_naming_the_field() {
    let with = |table: &str| {
        format!("default_policy = \"p\"\n[throttles.t]\n{table}\n[policies.p]\nbuiltin = \"best-effort\"\nthrottle = \"t\"\n")
    };
    let refused = |text: String| parse(&text).unwrap_err();
    let e = refused(with("kind = \"tokens\"\nmax_tokens = 0\ntoken_ratio = 0.1"));
    assert_eq!(
        (e.line, e.field.as_str()),
        (2, "throttles.t.max_tokens"),
        "{e}"
    );
    let e = refused(with("kind = \"tokens\"\nmax_tokens = 10\ntoken_ratio = 0"));
    assert_eq!(e.field, "throttles.t.token_ratio", "{e}");
    let e = refused(with("kind = \"tokens\"\nmax_tokens = 10"));
    assert!(e.message.contains("required"), "{e}");
    let e = refused(with(
        "kind = \"tokens\"\nmax_tokens = 10\ntoken_ratio = 1\nper = \"tenant\"",
    ));
    assert_eq!(e.field, "throttles.t.per", "{e}");
    assert!(
        e.message
            .contains("`policy`, `node`, `authority` or `client_context.KEY`"),
        "{e}"
    );
    let e = refused(with("kind = \"adaptive\"\nmax_tokens = 10"));
    assert_eq!(e.field, "throttles.t.max_tokens", "{e}");
    assert!(e.message.contains("kind = \"tokens\""), "{e}");
    let e = refused(with("kind = \"adaptive\"\nk = -1"));
    assert_eq!(e.field, "throttles.t.k", "{e}");
    let e = refused(with(
        "kind = \"adaptive\"\ncosts = { timeout = 2, throttled = 1 }",
    ));
    assert!(e.message.contains("throttled"), "{e}");
    let e = refused(with("kind = \"leaky\""));
    assert_eq!((e.line, e.field.as_str()), (3, "throttles.t.kind"), "{e}");
    let e = refused(
        "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\nthrottle = \"t\"\n"
            .into(),
    );
    assert_eq!(
        (e.line, e.field.as_str()),
        (4, "policies.p.throttle"),
        "{e}"
    );
    assert!(parse(&with("kind = \"adaptive\"\nk = 1.5\nwindow_ms = 60_000\nseed = 7\nper = \"client_context.tenant\"\ncosts = { timeout = 2 }")).is_ok());
}
