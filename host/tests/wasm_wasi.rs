//! Spec: a Python policy's WASI imports are inert and grant nothing
//! (no environment, no files, no sockets, empty stdin, stdout/stderr into the host's log,
//! clocks and randomness as configured, exit and sleeping end the call), and the sandbox holds
//! for Python and JavaScript runtimes (SpiderMonkey and QuickJS): an infinite loop is stopped at
//! the deadline and a memory bomb hits the cap. docs/wasi.md lists what each import does.

mod wasm_support;

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rebound::wasm::{
    QuarantineConfig, SandboxLimits, WasiClocks, WasiConfig, WasiRandom, WasmStrategy,
    WasmStrategyConfig,
};
use rebound::PolicyFailureKind;
use rebound::{reasons, Request, RequestType, RetryAction, SyncStrategy};
use rebound::{DecisionContext, FailureNote};

/// Everything logged in this test binary (every test installs the same subscriber first, so
/// callsite interest is the same for all of them).
fn logs() -> &'static Mutex<Vec<u8>> {
    static LOGS: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Mutex<Vec<u8>> = Box::leak(Box::default());
        struct Sink(&'static Mutex<Vec<u8>>);
        impl Write for Sink {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || Sink(logs))
            .init();
        logs
    })
}

fn strategy(
    guest: &str,
    params: &[(&str, &str)],
    limits: SandboxLimits,
    wasi: WasiConfig,
) -> WasmStrategy {
    logs();
    let config = WasmStrategyConfig::default()
        .with_limits(limits)
        .with_wasi(wasi)
        .with_params(params.iter().copied());
    let component = wasm_support::load(guest).unwrap_or_else(|e| panic!("{e}"));
    WasmStrategy::new(component, config).unwrap_or_else(|e| panic!("{e}"))
}

/// Limits that let a probe report any number (as its delay).
fn roomy() -> SandboxLimits {
    SandboxLimits::default()
        .with_max_delay_ms(u64::MAX)
        .with_deadline_ms(1_000)
        .with_fuel(u64::MAX / 4)
}

fn request() -> Request {
    Request::new(1, RequestType::Get, Duration::from_secs(2)).unwrap()
}

/// What the Python probe saw, reported as its retry delay.
fn observe(probe: &str, wasi: WasiConfig) -> u64 {
    let policy = strategy("python_wasi_probe", &[("probe", probe)], roomy(), wasi);
    match policy.answer(&request(), &DecisionContext::new(&reasons::KV_LOCKED)) {
        RetryAction::RetryAfter { delay, .. } => delay.as_millis() as u64,
        other => panic!("probe {probe}: {other:?} {:?}", policy.stats()),
    }
}

/// How a call that must not complete ended: the failure's kind and message, and how long the
/// call took.
fn failure(
    guest: &str,
    params: &[(&str, &str)],
    limits: SandboxLimits,
) -> (PolicyFailureKind, String, Duration) {
    let policy = strategy(guest, params, limits, WasiConfig::default());
    let started = Instant::now();
    let action = policy.answer(&request(), &DecisionContext::new(&reasons::KV_LOCKED));
    let took = started.elapsed();
    let stats = policy.stats();
    let kind = match action {
        RetryAction::PolicyFailed(kind) => kind,
        other => panic!("{guest} {params:?}: expected the fail-safe, got {other:?}"),
    };
    (kind, stats.last_failure.unwrap_or_default(), took)
}

#[test]
fn no_environment_and_no_arguments() {
    assert_eq!(observe("environment", WasiConfig::default()), 0);
}

#[test]
fn stdin_is_empty() {
    assert_eq!(observe("stdin", WasiConfig::default()), 0);
}

#[test]
fn clocks_are_frozen_by_default_and_real_when_configured() {
    assert_eq!(observe("wall_clock", WasiConfig::default()), 0);
    // Standing still at 1 ns: Go's runtime refuses a monotonic clock that reads 0.
    assert_eq!(observe("monotonic_clock", WasiConfig::default()), 1);
    let real = WasiConfig::default().with_clocks(WasiClocks::Real);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(observe("wall_clock", real).abs_diff(now) <= 60);
    assert!(observe("monotonic_clock", real) > 0);
}

#[test]
fn randomness_is_seeded_by_default_and_from_the_system_when_configured() {
    let seeded = |seed| WasiConfig::default().with_seed(seed);
    assert_eq!(observe("random", seeded(7)), observe("random", seeded(7)));
    assert_ne!(observe("random", seeded(7)), observe("random", seeded(8)));
    let os = WasiConfig::default().with_random(WasiRandom::Os);
    assert_ne!(observe("random", os), observe("random", os));
}

/// No socket can be made: Python sees an OSError (access denied), the policy goes on.
#[test]
fn sockets_are_denied_as_errors() {
    const WASI_EACCES: u64 = 2;
    assert_eq!(observe("socket", WasiConfig::default()), 1000 + WASI_EACCES);
}

/// No directory is preopened: opening a file is an OSError, the policy goes on.
#[test]
fn files_do_not_exist() {
    assert!(observe("file", WasiConfig::default()) > 1000);
}

#[test]
fn stdout_and_stderr_go_to_the_log() {
    assert_eq!(observe("print", WasiConfig::default()), 1);
    let text = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    let line = |needle: &str| text.lines().find(|l| l.contains(needle)).map(str::to_owned);
    let out = line("probe says hello").unwrap_or_else(|| panic!("{text}"));
    assert!(
        out.contains("DEBUG") && out.contains("python_wasi_probe") && out.contains("stdout"),
        "{out}"
    );
    let err = line("probe warns").unwrap_or_else(|| panic!("{text}"));
    assert!(err.contains("WARN") && err.contains("stderr"), "{err}");
}

#[test]
fn exit_ends_the_call() {
    let (kind, message, _) = failure("python_wasi_probe", &[("probe", "exit")], roomy());
    assert_eq!(kind, PolicyFailureKind::Trap);
    assert!(
        message.contains("exit(1)") || message.contains("exit(3)"),
        "{message}"
    );
}

/// A Python exception's text is the failure's detail (docs/decision-json.md
/// `detail`: the decision says the policy's own error): the traceback's last line, written to stderr before the trap.
#[test]
fn a_python_exception_is_the_failures_detail() {
    let policy = strategy(
        "python_wasi_probe",
        &[("probe", "no-such-probe")],
        roomy(),
        WasiConfig::default(),
    );
    let note = FailureNote::default();
    let reason = reasons::KV_LOCKED;
    let action = policy.answer(
        &request(),
        &DecisionContext::new(&reason).with_failure_note(&note),
    );
    assert_eq!(action, RetryAction::PolicyFailed(PolicyFailureKind::Trap));
    let failure = note.into_inner().expect("the failure is noted");
    assert!(
        failure
            .detail
            .starts_with("ValueError: unknown probe 'no-such-probe'"),
        "{failure:?}"
    );
    // The next call of the same instance set does not inherit the line.
    let note = FailureNote::default();
    let policy_ok = strategy(
        "python_wasi_probe",
        &[("probe", "exit")],
        roomy(),
        WasiConfig::default(),
    );
    let _ = policy_ok.answer(
        &request(),
        &DecisionContext::new(&reason).with_failure_note(&note),
    );
    let exit = note.into_inner().expect("noted");
    assert!(!exit.detail.contains("ValueError"), "{exit:?}");
}

/// A policy writing to stderr on every call does not flood the log — at
/// most 20 of its lines a second, and the next line written says how many were left out.
#[test]
fn stderr_lines_are_limited_per_policy() {
    logs();
    // Every call fails: no quarantine, so that every one writes its traceback.
    let no_quarantine = QuarantineConfig::new(0, QuarantineConfig::default().cooldown_ms);
    let config = WasmStrategyConfig::default()
        .with_limits(roomy())
        .with_params([("probe", "flood-marker")])
        .with_quarantine(no_quarantine);
    let component = wasm_support::load("python_wasi_probe").unwrap();
    let policy = WasmStrategy::new(component, config).unwrap();
    let reason = reasons::KV_LOCKED;
    let started = Instant::now();
    for _ in 0..40 {
        let _ = policy.answer(&request(), &DecisionContext::new(&reason));
    }
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    let logged = text
        .lines()
        .filter(|l| l.contains("stderr") && l.contains("flood-marker"))
        .count();
    // Each call writes a traceback of several lines, one of them naming the probe.
    if took < Duration::from_millis(900) {
        assert!(logged <= 20, "{logged} lines in {took:?}");
    }
    std::thread::sleep(Duration::from_millis(1100));
    let _ = policy.answer(&request(), &DecisionContext::new(&reason));
    let text = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    let counted = text
        .lines()
        .filter(|l| l.contains("python_wasi_probe") && l.contains("stderr"))
        .filter_map(|l| l.split("left_out=").nth(1))
        .filter_map(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .any(|n| n > 0);
    assert!(counted, "a line says how many were left out:\n{text}");
}

/// Sleeping would block the deciding thread, where the deadline cannot reach: it ends the call
/// at once instead.
#[test]
fn sleeping_ends_the_call_at_once() {
    let (kind, message, took) = failure("python_wasi_probe", &[("probe", "sleep")], roomy());
    assert_eq!(kind, PolicyFailureKind::Trap);
    assert!(message.contains("may not sleep"), "{message}");
    assert!(
        took < Duration::from_secs(4),
        "did not wait for the 5 s sleep"
    );
}

/// docs/wasi.md "poll": a pause of at most 1 ms (a runtime's own, such as Go's on its way to
/// report a panic) returns at once, eight times per call; a ninth ends the call as a sleep
/// does. Each call has its own eight.
#[test]
fn short_pauses_return_at_once_eight_times_a_call() {
    let policy = strategy(
        "python_wasi_probe",
        &[("probe", "naps_8")],
        roomy(),
        WasiConfig::default(),
    );
    for _ in 0..2 {
        let answer = policy
            .try_answer(&request(), &DecisionContext::new(&reasons::KV_LOCKED))
            .unwrap();
        assert!(
            matches!(answer, RetryAction::RetryAfter { delay, .. } if delay == Duration::from_millis(2)),
            "{answer:?}"
        );
    }
    let (kind, message, _) = failure("python_wasi_probe", &[("probe", "naps_9")], roomy());
    assert_eq!(kind, PolicyFailureKind::Trap);
    assert!(message.contains("may not sleep"), "{message}");
}

/// The guest's infinite loop (selected by `param`) ends as a timeout near a 30 ms deadline.
fn assert_loop_stopped_at_the_deadline(guest: &str, param: (&str, &str)) {
    let limits = SandboxLimits::default()
        .with_deadline_ms(30)
        .with_fuel(u64::MAX / 4);
    let (kind, _, took) = failure(guest, &[param], limits);
    assert_eq!(kind, PolicyFailureKind::Timeout, "{guest}");
    assert!(
        took < Duration::from_secs(2),
        "{guest}: stopped at {took:?}"
    );
}

/// The guest's memory bomb (selected by `param`) ends at the memory cap, with time to reach it.
fn assert_bomb_hits_the_cap(guest: &str, param: (&str, &str)) {
    let limits = SandboxLimits::default()
        .with_deadline_ms(10_000)
        .with_fuel(u64::MAX / 4);
    let (kind, message, _) = failure(guest, &[param], limits);
    assert_eq!(
        kind,
        PolicyFailureKind::MemoryLimitExceeded,
        "{guest}: {message}"
    );
}

#[test]
fn python_infinite_loop_is_stopped_at_the_deadline() {
    assert_loop_stopped_at_the_deadline("python_wasi_probe", ("probe", "infinite_loop"));
}

#[test]
fn python_memory_bomb_hits_the_cap() {
    assert_bomb_hits_the_cap("python_wasi_probe", ("probe", "memory_bomb"));
}

#[test]
fn javascript_infinite_loop_is_stopped_at_the_deadline() {
    assert_loop_stopped_at_the_deadline("javascript_adversary", ("mode", "infinite_loop"));
}

#[test]
fn javascript_memory_bomb_hits_the_cap() {
    assert_bomb_hits_the_cap("javascript_adversary", ("mode", "memory_bomb"));
}

#[test]
fn javascript_exception_is_a_policy_failure() {
    let (kind, _, _) = failure("javascript_adversary", &[("mode", "throw")], roomy());
    assert_eq!(kind, PolicyFailureKind::Trap);
}

#[test]
fn quickjs_infinite_loop_is_stopped_at_the_deadline() {
    assert_loop_stopped_at_the_deadline("quickjs_adversary", ("mode", "infinite_loop"));
}

#[test]
fn quickjs_memory_bomb_hits_the_cap() {
    assert_bomb_hits_the_cap("quickjs_adversary", ("mode", "memory_bomb"));
}

#[test]
fn quickjs_exception_is_a_policy_failure() {
    let (kind, _, _) = failure("quickjs_adversary", &[("mode", "throw")], roomy());
    assert_eq!(kind, PolicyFailureKind::Trap);
}

/// docs/wasi.md "WASI 0.3": a component that imports WASI 0.3 interfaces (built by
/// `wasm-tools` from `tests/guests/wat/wasi_p3_probe.wat`, an async function taking a stream
/// among its imports) loads and decides when it calls none of them; a call to one (its
/// `get-random-u64` on `KV_TEMPORARY_FAILURE`, the async `wait-for` on `KV_SYNC_WRITE_IN_PROGRESS`) ends
/// the call as a trap counted among the policy's failures, as a call to an unreachable WASI 0.2
/// function does.
#[test]
fn wasi_0_3_imports_load_inertly_and_a_call_is_denied() {
    let policy = strategy("wasi_p3_probe", &[], roomy(), WasiConfig::default());
    let unused = policy.answer(&request(), &DecisionContext::new(&reasons::KV_LOCKED));
    assert!(
        matches!(unused, RetryAction::RetryAfter { .. }),
        "best effort retries KV_LOCKED: {unused:?}"
    );
    let called = policy.answer(
        &request(),
        &DecisionContext::new(&reasons::KV_TEMPORARY_FAILURE),
    );
    assert_eq!(called, RetryAction::PolicyFailed(PolicyFailureKind::Trap));
    let stats = policy.stats();
    let message = stats.last_failure.unwrap_or_default();
    assert!(
        message.contains("wasi:random/random@0.3.0#get-random-u64"),
        "{message}"
    );
    assert_eq!(
        stats.failures.values().sum::<u64>(),
        1,
        "{:?}",
        stats.failures
    );
    // An async function, called from the synchronous `retry-after`, ends the call as a trap
    // too: the component model lets no synchronous task block on one.
    let waited = DecisionContext::new(&reasons::KV_SYNC_WRITE_IN_PROGRESS);
    let called = policy.answer(&request(), &waited);
    assert_eq!(called, RetryAction::PolicyFailed(PolicyFailureKind::Trap));
    let stats = policy.stats();
    let message = stats.last_failure.unwrap_or_default();
    assert!(message.contains("cannot block"), "{message}");
    assert_eq!(stats.failures.values().sum::<u64>(), 2);
    // Such a component runs on an engine of its own; its calls keep the sandbox's deadline.
    let looping = DecisionContext::new(&reasons::KV_SYNC_WRITE_RE_COMMIT_IN_PROGRESS);
    let called = policy.answer(&request(), &looping);
    assert_eq!(
        called,
        RetryAction::PolicyFailed(PolicyFailureKind::Timeout)
    );
}

/// docs/wasi.md "WASI 0.3": a component importing WASI 0.3's async functions is called on a
/// fiber, which the host does for the world `retry-policy` only; one that hedges is refused at
/// load, saying why.
#[test]
fn a_hedging_policy_importing_wasi_0_3_async_functions_is_refused_at_load() {
    let error = wasm_support::load("wasi_p3_hedging").unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("WASI 0.3's async functions") && text.contains("retry-policy"),
        "{text}"
    );
}
