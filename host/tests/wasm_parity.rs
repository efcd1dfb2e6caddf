//! Spec: each WebAssembly policy with a native twin decides exactly as the twin, through the
//! orchestrator, on the full grid: every reason (with Cassandra data variants and an unknown
//! name) × idempotent or not × attempts 0..=10 × several elapsed/timeout pairs × with and
//! without a robot marker in the client context. The Python, JavaScript (on both
//! engines, SpiderMonkey and QuickJS), C and Zig versions of best-effort, no-retry-for-robots
//! and cassandra-default are held to the same twins as the Rust ones.
//! docs/wit-versions.md: the components built for `rebound:policy@0.1.0` are held to their
//! current twins built from today's source.

use crate::common;
use crate::wasm_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::backoff::ExponentialBackoff;
use rebound::cassandra::{Cassandra, ConsistencyDowngradingRetryPolicy, DefaultRetryPolicy};
use rebound::wasm::{SandboxLimits, WasmStrategyConfig, WitVersion};
use rebound::DecisionContext;
use rebound::{
    reasons, BestEffort, FailFast, FastFailOnTerminalError, Orchestrator, Request, RequestType,
    RetryAction, RetryReason, RetryStrategy, SyncStrategy,
};

/// (elapsed ms, timeout ms): early, near the deadline, past it.
const TIMINGS: [(u64, u64); 3] = [(0, 2_500), (2_400, 2_500), (90, 75)];

/// Runs the grid through two orchestrators and compares every decision.
fn assert_parity(
    wasm: Arc<dyn RetryStrategy>,
    native: Arc<dyn RetryStrategy>,
    ty: RequestType,
) -> usize {
    assert_parity_as_told(wasm, native, ty, WitVersion::CURRENT)
}

/// [`assert_parity`] for a `wasm` policy built for `version`: for a reason that version has no
/// case for, the policy is told `other(NAME)` (docs/wit-versions.md), so it may decide as its
/// twin decides either the reason or `other(NAME)`.
fn assert_parity_as_told(
    wasm: Arc<dyn RetryStrategy>,
    native: Arc<dyn RetryStrategy>,
    ty: RequestType,
    version: WitVersion,
) -> usize {
    let wasm_orchestrator = Orchestrator::new(wasm);
    let native_orchestrator = Orchestrator::new(native);
    let mut compared = 0;
    let start = Instant::now();
    for reason in rebound::grid::every_reason() {
        for idempotent in [false, true] {
            for (attempts, robot) in (0..=10).flat_map(|a| [(a, false), (a, true)]) {
                for (elapsed, timeout) in TIMINGS {
                    let make = || {
                        let mut r = Request::new(9, ty, Duration::from_millis(timeout))
                            .unwrap()
                            .with_idempotent(idempotent)
                            .with_retry_attempts(attempts)
                            .with_start(start);
                        if robot {
                            r = r.with_client_context("isRobotRequest", "yes");
                        }
                        r.mark_dispatched("node-1");
                        r
                    };
                    let (mut a, mut b) = (make(), make());
                    let wasm_decision =
                        common::decide_at(&wasm_orchestrator, &mut a, &reason, elapsed);
                    let native_decision =
                        common::decide_at(&native_orchestrator, &mut b, &reason, elapsed);
                    if wasm_decision != native_decision && !version.has_case_for(reason.kind()) {
                        let told = RetryReason::Other(reason.name().into());
                        let mut c = make();
                        let told_decision =
                            common::decide_at(&native_orchestrator, &mut c, &told, elapsed);
                        assert_eq!(
                            strip_reason(wasm_decision),
                            strip_reason(told_decision),
                            "{reason:?} as told to {version}: idempotent={idempotent} attempts={attempts} robot={robot} elapsed={elapsed} timeout={timeout}"
                        );
                        compared += 1;
                        continue;
                    }
                    assert_eq!(
                        wasm_decision, native_decision,
                        "{reason:?} idempotent={idempotent} attempts={attempts} robot={robot} elapsed={elapsed} timeout={timeout}"
                    );
                    compared += 1;
                }
            }
        }
    }
    compared
}

/// A policy under the default limits but a call deadline of 5 s: these tests compare decisions,
/// and the deadline (10 ms by default, held by `wasm_sandbox.rs`) would make them test the
/// machine's load instead: in a debug build sharing 2 busy cores, a Python call preempted
/// past a 10 ms deadline and needing more than 0.1 ms of CPU to finish is stopped, answering
/// `timeout` where its twin answers.
fn wasm(name: &str) -> Arc<dyn RetryStrategy> {
    let limits = SandboxLimits::default().with_deadline_ms(5_000);
    wasm_support::strategy(name, WasmStrategyConfig::default().with_limits(limits))
}

#[test]
fn best_effort_parity() {
    let native = Arc::new(BestEffort::<ExponentialBackoff>::default());
    for ty in [RequestType::Get, RequestType::Upsert] {
        assert!(assert_parity(wasm("best_effort"), native.clone(), ty) > 10_000);
    }
}

#[test]
fn fast_fail_on_terminal_error_parity() {
    let native = Arc::new(FastFailOnTerminalError::<ExponentialBackoff>::default());
    assert_parity(
        wasm("fast_fail_on_terminal_error"),
        native,
        RequestType::Upsert,
    );
}

#[test]
fn fail_fast_parity() {
    assert_parity(wasm("fail_fast"), Arc::new(FailFast), RequestType::Get);
}

#[test]
fn cassandra_default_parity() {
    let native = Arc::new(Cassandra::new(DefaultRetryPolicy));
    assert_parity(wasm("cassandra_default"), native, RequestType::Cql);
}

#[test]
fn cassandra_downgrading_parity() {
    let native = Arc::new(Cassandra::new(ConsistencyDowngradingRetryPolicy));
    assert_parity(
        wasm("cassandra_downgrading_consistency"),
        native,
        RequestType::Cql,
    );
}

/// Best effort, except where the rule says no retry.
#[derive(Debug)]
struct Except(fn(&Request, &RetryReason) -> bool);

impl rebound::Strategy for Except {
    fn name(&self) -> &str {
        "twin"
    }
}

impl SyncStrategy for Except {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        if (self.0)(request, context.reason()) {
            RetryAction::NoRetry
        } else {
            BestEffort::<ExponentialBackoff>::default().answer(request, context)
        }
    }
}

/// Reference 001 "Accessible Context": no retry for a robot request, best effort otherwise.
fn robots_twin() -> Arc<Except> {
    Arc::new(Except(|q, _| {
        q.client_context().contains_key("isRobotRequest")
    }))
}

/// Twins defined by their reference rule: no retry on an open circuit (reference 002 example)
/// or for a robot request (reference 001 "Accessible Context"), best effort otherwise.
#[test]
fn delegating_policies_parity() {
    let circuit = Arc::new(Except(|_, r| *r == reasons::CIRCUIT_BREAKER_OPEN));
    assert_parity(
        wasm("fail_fast_on_open_circuit"),
        circuit,
        RequestType::Upsert,
    );
    assert_parity(wasm("no_retry_for_robots"), robots_twin(), RequestType::Get);
}

/// The three example policies of one language against the twins of their Rust versions.
fn language_parity(language: &str) {
    let policy = |name: &str| wasm(&format!("{language}_{name}"));
    let best_effort = Arc::new(BestEffort::<ExponentialBackoff>::default());
    for ty in [RequestType::Get, RequestType::Upsert] {
        assert!(assert_parity(policy("best_effort"), best_effort.clone(), ty) > 10_000);
        assert_parity(policy("no_retry_for_robots"), robots_twin(), ty);
    }
    let cassandra = Arc::new(Cassandra::new(DefaultRetryPolicy));
    assert_parity(policy("cassandra_default"), cassandra, RequestType::Cql);
}

#[test]
fn python_policies_parity() {
    language_parity("python");
}

#[test]
fn javascript_policies_parity() {
    language_parity("javascript");
}

/// The same JavaScript sources built with componentize-qjs (QuickJS).
#[test]
fn quickjs_policies_parity() {
    language_parity("quickjs");
}

/// TypeScript, compiled by tsc and built on QuickJS.
#[test]
fn typescript_policies_parity() {
    language_parity("typescript");
}

#[test]
fn c_policies_parity() {
    language_parity("c");
}

#[test]
fn zig_policies_parity() {
    language_parity("zig");
}

/// C++ through wit-bindgen's C++ bindings (clang 19, libc++).
#[test]
fn cpp_policies_parity() {
    language_parity("cpp");
}

/// Go (mainline Go's wasip1 runtime, through the WASI preview-1 adapter).
#[test]
fn go_policies_parity() {
    language_parity("go");
}

/// The starting templates load in every language, refuse a bad parameter
/// naming it, and do what they say: no retry once `max_attempts` retries were made, the host's
/// best effort before.
#[test]
fn templates_load_and_cap_attempts() {
    let best_effort = BestEffort::<ExponentialBackoff>::default();
    for language in [
        "python",
        "javascript",
        "quickjs",
        "typescript",
        "c",
        "cpp",
        "go",
        "zig",
    ] {
        let name = format!("{language}_template");
        let config =
            |value: &str| WasmStrategyConfig::default().with_params([("max_attempts", value)]);
        let component = wasm_support::load(&name).unwrap_or_else(|e| panic!("{e}"));
        let refused = rebound::wasm::WasmStrategy::new(component.clone(), config("many"))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("max_attempts"), "{name}: {refused}");
        let policy = wasm_support::strategy(&name, config("2"));
        for attempts in 0..4 {
            let request = Request::new(1, RequestType::Get, Duration::from_secs(2))
                .unwrap()
                .with_retry_attempts(attempts);
            let expected = if attempts >= 2 {
                RetryAction::NoRetry
            } else {
                best_effort.answer(&request, &DecisionContext::new(&reasons::KV_LOCKED))
            };
            assert_eq!(
                policy.answer(&request, &DecisionContext::new(&reasons::KV_LOCKED)),
                expected,
                "{name} attempts={attempts}"
            );
        }
    }
}

/// docs/wit-versions.md "The rule": a component built for `rebound:policy@0.1.0` (bytes kept
/// from the tree's history, `tests/fixtures/rebound-policy-0.1.0/`) keeps loading next to
/// current ones, and decides exactly as its twin built from today's source for the current
/// version, on the whole grid, through the orchestrator.
#[test]
fn released_0_1_0_components_decide_as_their_current_twins() {
    released_components_decide_as_their_current_twins(WitVersion::V0_1_0);
}

/// The same rule for `rebound:policy@0.2.0` (`tests/fixtures/rebound-policy-0.2.0/`).
#[test]
fn released_0_2_0_components_decide_as_their_current_twins() {
    released_components_decide_as_their_current_twins(WitVersion::V0_2_0);
}

/// The same rule for `rebound:policy@0.3.0` (`tests/fixtures/rebound-policy-0.3.0/`).
#[test]
fn released_0_3_0_components_decide_as_their_current_twins() {
    released_components_decide_as_their_current_twins(WitVersion::V0_3_0);
}

/// The same rule for `rebound:policy@0.4.0` (`tests/fixtures/rebound-policy-0.4.0/`).
#[test]
fn released_0_4_0_components_decide_as_their_current_twins() {
    released_components_decide_as_their_current_twins(WitVersion::V0_4_0);
}

/// The same rule for `rebound:policy@0.5.0` (`tests/fixtures/rebound-policy-0.5.0/`).
#[test]
fn released_0_5_0_components_decide_as_their_current_twins() {
    released_components_decide_as_their_current_twins(WitVersion::V0_5_0);
}

/// Every released version but the current one has its test above.
#[test]
fn every_released_version_is_held_to_its_twins() {
    assert_eq!(
        wasm_support::released_versions(),
        [
            WitVersion::V0_1_0,
            WitVersion::V0_2_0,
            WitVersion::V0_3_0,
            WitVersion::V0_4_0,
            WitVersion::V0_5_0
        ]
    );
}

/// The fixtures of `version` against their current twins (a test each, so they run side by
/// side).
fn released_components_decide_as_their_current_twins(version: WitVersion) {
    let kv = [RequestType::Get, RequestType::Upsert];
    let pairs: [(&str, &[RequestType]); 13] = [
        ("best_effort", &kv),
        ("fail_fast", &kv),
        ("fail_fast_on_open_circuit", &kv),
        ("fast_fail_on_terminal_error", &kv),
        ("no_retry_for_robots", &kv),
        ("honor_error_map_spec", &kv),
        ("retry_budget", &kv),
        ("cassandra_default", &[RequestType::Cql]),
        ("cassandra_downgrading_consistency", &[RequestType::Cql]),
        ("c_best_effort", &kv),
        ("c_no_retry_for_robots", &kv),
        ("c_cassandra_default", &[RequestType::Cql]),
        ("template", &kv),
    ];
    for (name, types) in pairs {
        // The template came after 0.1.0.
        if name == "template" && version == WitVersion::V0_1_0 {
            continue;
        }
        decides_as_its_current_twin(version, name, types);
    }
}

fn decides_as_its_current_twin(version: WitVersion, name: &str, types: &[RequestType]) {
    let released = wasm_support::released(version, name);
    let old = wasm_support::load(&released).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(old.wit_version(), version, "{released}");
    assert_eq!(
        wasm_support::load(name).unwrap().wit_version(),
        WitVersion::CURRENT,
        "{name}"
    );
    for ty in types {
        let compared = assert_parity_as_told(wasm(&released), wasm(name), *ty, version);
        assert!(
            compared > 5_000,
            "{released}: {compared} decisions compared"
        );
    }
}

/// A decision without the reason its error names: what to do, and when.
fn strip_reason(decision: rebound::Decision) -> String {
    match decision {
        rebound::Decision::Retry(plan) => format!("{plan:?}"),
        rebound::Decision::Timeout { after, .. } => format!("timeout after {after:?}"),
        rebound::Decision::Fail(_) => "fail".to_owned(),
        other => format!("{other:?}"),
    }
}
