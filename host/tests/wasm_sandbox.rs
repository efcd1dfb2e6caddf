//! Spec: the sandbox. Each limit is shown obeyed and violated on the adversarial guest; every
//! failure yields the fail-safe and leaves the host and the next call undisturbed; repeated
//! failures quarantine the policy until a probe succeeds.

use crate::common;
use crate::wasm_support;

use std::time::{Duration, Instant};

use rebound::wasm::{FailSafe, QuarantineConfig, SandboxLimits, WasmStrategy, WasmStrategyConfig};
use rebound::SyncStrategy;
use rebound::{
    reasons, CancelReason, Decision, NodeChoice, Orchestrator, PolicyFailureKind, Request,
    RequestType, RetryAction, RetryError,
};
use rebound::{DecisionContext, FailureNote};

const OK: RetryAction = RetryAction::RetryAfter {
    delay: Duration::from_millis(7),
    node: NodeChoice::Same,
    consistency: None,
    attempt_timeout: None,
};

fn adversary(limits: SandboxLimits) -> std::sync::Arc<WasmStrategy> {
    wasm_support::strategy(
        "adversary",
        WasmStrategyConfig::default().with_limits(limits),
    )
}

/// A get whose client context asks the adversary for `key = value`.
fn asking(key: &str, value: &str) -> Request {
    Request::new(1, RequestType::Get, Duration::from_secs(5))
        .unwrap()
        .with_client_context(key, value)
}

fn plain() -> Request {
    Request::new(2, RequestType::Get, Duration::from_secs(5)).unwrap()
}

/// Checks that `obeyed` is answered, `violated` fails with `kind`, and a plain call works after.
fn pair(strategy: &WasmStrategy, obeyed: Request, violated: Request, kind: PolicyFailureKind) {
    let reason = reasons::KV_LOCKED;
    assert_eq!(
        strategy.answer(&obeyed, &DecisionContext::new(&reason)),
        OK,
        "obeyed"
    );
    assert_eq!(
        strategy.answer(&violated, &DecisionContext::new(&reason)),
        RetryAction::PolicyFailed(kind),
        "violated"
    );
    assert_eq!(
        strategy.answer(&plain(), &DecisionContext::new(&reason)),
        OK,
        "the next call is undisturbed"
    );
    let stats = strategy.stats();
    assert_eq!(stats.failures.get(kind.name()), Some(&1), "{stats:?}");
}

/// Wall-clock deadline (epoch interruption) stops a call that loops forever.
#[test]
fn deadline_stops_the_call() {
    let strategy = adversary(
        SandboxLimits::default()
            .with_deadline_ms(30)
            .with_fuel(u64::MAX / 2),
    );
    let started = Instant::now();
    pair(
        &strategy,
        asking("loop", "1000"),
        asking("spin", ""),
        PolicyFailureKind::Timeout,
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped near the deadline, not hung"
    );
}

/// The instruction budget (fuel) stops a call that runs too long.
#[test]
fn fuel_stops_the_call() {
    let strategy = adversary(
        SandboxLimits::default()
            .with_deadline_ms(60_000)
            .with_fuel(2_000_000),
    );
    pair(
        &strategy,
        asking("loop", "1000"),
        asking("loop", "100000000"),
        PolicyFailureKind::FuelExhausted,
    );
}

/// The memory cap is reported as its own failure, not a generic trap.
#[test]
fn memory_cap_is_reported_distinctly() {
    let strategy = adversary(SandboxLimits::default().with_memory_bytes(16 << 20));
    pair(
        &strategy,
        asking("alloc", "1048576"),
        asking("alloc", "67108864"),
        PolicyFailureKind::MemoryLimitExceeded,
    );
    let last = strategy.stats().last_failure.unwrap();
    assert!(last.contains("memory limit exceeded"), "{last}");
}

/// A stack overflow is stopped and reported.
#[test]
fn stack_overflow_is_stopped() {
    let strategy = adversary(
        SandboxLimits::default()
            .with_fuel(u64::MAX / 2)
            .with_deadline_ms(5_000),
    );
    pair(
        &strategy,
        asking("recurse", "100"),
        asking("recurse", "100000000"),
        PolicyFailureKind::StackOverflow,
    );
}

/// A guest panic surfaces with the guest's own message.
#[test]
fn panic_message_surfaces() {
    let strategy = adversary(SandboxLimits::default());
    pair(
        &strategy,
        plain(),
        asking("panic", "the sky is falling"),
        PolicyFailureKind::Panic,
    );
    let last = strategy.stats().last_failure.unwrap();
    assert!(
        last.contains("adversary panicked: the sky is falling"),
        "{last}"
    );
    // The decision's context carries the message to whoever asked.
    let note = FailureNote::default();
    let reason = reasons::KV_LOCKED;
    let action = strategy.answer(
        &asking("panic", "the sky is falling"),
        &DecisionContext::new(&reason).with_failure_note(&note),
    );
    assert_eq!(action, RetryAction::PolicyFailed(PolicyFailureKind::Panic));
    let failure = note.into_inner().expect("noted");
    assert!(
        failure
            .detail
            .contains("adversary panicked: the sky is falling"),
        "{failure:?}"
    );
}

/// A trap (`unreachable`) and an invalid answer (a delay past the maximum) are failures too.
#[test]
fn trap_and_invalid_answer() {
    let strategy = adversary(SandboxLimits::default());
    pair(
        &strategy,
        plain(),
        asking("trap", ""),
        PolicyFailureKind::Trap,
    );
    pair(
        &strategy,
        plain(),
        asking("invalid", ""),
        PolicyFailureKind::InvalidAnswer,
    );
}

/// Default fail-safe: no retry, a RequestCanceled whose reason says the policy failed.
#[test]
fn fail_safe_no_retry_cancels_saying_the_policy_failed() {
    let orchestrator = Orchestrator::new(adversary(SandboxLimits::default()));
    let mut request = asking("trap", "").with_start(Instant::now());
    match common::decide_at(&orchestrator, &mut request, &reasons::KV_LOCKED, 1) {
        Decision::Fail(RetryError::RequestCanceled {
            reason: CancelReason::PolicyFailed(failure, reason),
            context,
        }) => {
            assert_eq!(failure.kind, PolicyFailureKind::Trap);
            assert_eq!(reason, reasons::KV_LOCKED);
            // The sandbox's own account of the trap travels with the decision.
            assert!(failure.detail.contains("unreachable"), "{failure:?}");
            assert_eq!(
                context.reason.as_deref(),
                Some("POLICY_FAILED (trap; KV_LOCKED)")
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Fail-safe best effort: the built-in decision replaces the failed one.
#[test]
fn fail_safe_best_effort() {
    let strategy = wasm_support::strategy(
        "adversary",
        WasmStrategyConfig::default().with_fail_safe(FailSafe::BestEffort),
    );
    let request = asking("trap", "").with_retry_attempts(3);
    assert_eq!(
        strategy.answer(&request, &DecisionContext::new(&reasons::KV_LOCKED)),
        RetryAction::after(Duration::from_millis(8))
    );
}

/// N consecutive failures quarantine the policy (it is not called while quarantined); after
/// the cooldown one call probes it, and success lifts the quarantine.
#[test]
fn quarantine_and_recovery() {
    let strategy = wasm_support::strategy(
        "adversary",
        WasmStrategyConfig::default().with_quarantine(QuarantineConfig::new(3, 200)),
    );
    let reason = reasons::KV_LOCKED;
    for _ in 0..3 {
        assert_eq!(
            strategy.answer(&asking("trap", ""), &DecisionContext::new(&reason)),
            RetryAction::PolicyFailed(PolicyFailureKind::Trap)
        );
    }
    let stats = strategy.stats();
    assert!(stats.quarantined && stats.quarantines == 1, "{stats:?}");
    // While quarantined a healthy request is not even sent to the policy.
    assert_eq!(
        strategy.answer(&plain(), &DecisionContext::new(&reason)),
        RetryAction::PolicyFailed(PolicyFailureKind::Quarantined)
    );
    assert_eq!(strategy.stats().decisions, 0);
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(
        strategy.answer(&plain(), &DecisionContext::new(&reason)),
        OK,
        "the probe after the cooldown succeeds"
    );
    let stats = strategy.stats();
    assert!(
        !stats.quarantined && stats.consecutive_failures == 0,
        "{stats:?}"
    );
    assert_eq!(
        strategy.answer(&plain(), &DecisionContext::new(&reason)),
        OK
    );
}

/// A failed probe quarantines the policy again.
#[test]
fn failed_probe_requarantines() {
    let strategy = wasm_support::strategy(
        "adversary",
        WasmStrategyConfig::default().with_quarantine(QuarantineConfig::new(1, 50)),
    );
    let _ = strategy.answer(
        &asking("trap", ""),
        &DecisionContext::new(&reasons::KV_LOCKED),
    );
    std::thread::sleep(Duration::from_millis(80));
    let _ = strategy.answer(
        &asking("trap", ""),
        &DecisionContext::new(&reasons::KV_LOCKED),
    );
    let stats = strategy.stats();
    assert!(stats.quarantined && stats.quarantines == 2, "{stats:?}");
}

/// The epoch ticker's millisecond clock (the source of `elapsed-ms`) advances and never runs
/// ahead of real time.
#[test]
fn coarse_clock_follows_real_time() {
    let runtime = wasm_support::runtime();
    let first = runtime.coarse_now();
    assert!(first <= Instant::now());
    std::thread::sleep(Duration::from_millis(50));
    let second = runtime.coarse_now();
    assert!(second > first, "the clock advanced");
    assert!(second <= Instant::now(), "never ahead of real time");
}

/// docs/decisions.md, "A long call on a tokio worker": a call still running two epoch ticks
/// after it started on a worker of a multi-threaded tokio runtime hands the runtime's I/O to
/// an idle worker, so a policy spinning to its deadline on one worker leaves the application's
/// sockets served; without the hand-off the byte sent during the call is seen only once the
/// call ends.
#[test]
fn a_spinning_call_on_a_tokio_worker_leaves_the_runtime_s_sockets_served() {
    use std::io::Write;
    use tokio::io::AsyncReadExt;

    let strategy = adversary(
        SandboxLimits::default()
            .with_deadline_ms(5_000)
            .with_fuel(u64::MAX / 2),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (seen, call_ended) = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        // One byte starts the call, sent once its task waits for it (woken by the runtime's
        // I/O driver, it runs on the worker polling the driver); the other is sent while the
        // call spins.
        let sender = std::thread::spawn(move || {
            let mut starts = std::net::TcpStream::connect(address).unwrap();
            let mut during = std::net::TcpStream::connect(address).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            starts.write_all(b"s").unwrap();
            std::thread::sleep(Duration::from_millis(300));
            during.write_all(b"d").unwrap();
            (starts, during)
        });
        let (mut starts, _) = listener.accept().await.unwrap();
        let (mut during, _) = listener.accept().await.unwrap();
        let call = tokio::spawn(async move {
            starts.read_exact(&mut [0]).await.unwrap();
            let reason = reasons::KV_LOCKED;
            let action = strategy.answer(&asking("spin", ""), &DecisionContext::new(&reason));
            (action, Instant::now())
        });
        during.read_exact(&mut [0]).await.unwrap();
        let seen = Instant::now();
        let (action, call_ended) = call.await.unwrap();
        assert_eq!(
            action,
            RetryAction::PolicyFailed(PolicyFailureKind::Timeout)
        );
        drop(sender.join().unwrap());
        (seen, call_ended)
    });
    assert!(
        seen < call_ended,
        "the byte sent during the call was seen {:?} after the call ended",
        seen - call_ended
    );
}
